#include "kernels/blas.h"

#include <atomic>
#include <optional>

#include <clblast_c.h>

#include <c10/util/Exception.h>

#include "core/device_allocator.h"
#include "kernels/packed_gemm.h"
#include "runtime/commands.h"
#include "runtime/kernel_times.h"

namespace drawbridge::kernels {

namespace {

// A sub-buffer that starts where an operand starts, released when the call has been enqueued
// (OpenCL keeps it alive until the commands that use it have run).
class SubBuffer {
 public:
  SubBuffer(cl_mem parent, size_t origin_bytes, size_t bytes) {
    cl_buffer_region region{origin_bytes, bytes};
    cl_int status = CL_SUCCESS;
    mem_ = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &status);
    DB_CL_CHECK(status);
  }
  ~SubBuffer() { clReleaseMemObject(mem_); }
  SubBuffer(const SubBuffer&) = delete;
  SubBuffer& operator=(const SubBuffer&) = delete;
  cl_mem get() const { return mem_; }

 private:
  cl_mem mem_;
};

CLBlastStatusCode clblast_gemm(cl_command_queue q, c10::ScalarType type, size_t m, size_t n, size_t k, double alpha,
                               const BlasMatrix& a, const BlasMatrix& b, double beta, const BlasMatrix& c,
                               size_t batch) {
  const auto ta = a.transposed ? CLBlastTransposeYes : CLBlastTransposeNo;
  const auto tb = b.transposed ? CLBlastTransposeYes : CLBlastTransposeNo;
  const auto layout = CLBlastLayoutRowMajor;
  if (type == c10::kFloat) {
    const float fa = static_cast<float>(alpha), fb = static_cast<float>(beta);
    if (batch == 1)
      return CLBlastSgemm(layout, ta, tb, m, n, k, fa, a.buffer, a.offset, a.ld, b.buffer, b.offset, b.ld, fb,
                          c.buffer, c.offset, c.ld, &q, nullptr);
    return CLBlastSgemmStridedBatched(layout, ta, tb, m, n, k, fa, a.buffer, a.offset, a.ld, a.batch_stride, b.buffer,
                                      b.offset, b.ld, b.batch_stride, fb, c.buffer, c.offset, c.ld, c.batch_stride,
                                      batch, &q, nullptr);
  }
  TORCH_INTERNAL_ASSERT(type == c10::kDouble, "gemm: unsupported dtype ", type);
  if (batch == 1)
    return CLBlastDgemm(layout, ta, tb, m, n, k, alpha, a.buffer, a.offset, a.ld, b.buffer, b.offset, b.ld, beta,
                        c.buffer, c.offset, c.ld, &q, nullptr);
  return CLBlastDgemmStridedBatched(layout, ta, tb, m, n, k, alpha, a.buffer, a.offset, a.ld, a.batch_stride,
                                    b.buffer, b.offset, b.ld, b.batch_stride, beta, c.buffer, c.offset, c.ld,
                                    c.batch_stride, batch, &q, nullptr);
}

bool out_of_memory(CLBlastStatusCode status) {
  return status == CLBlastOpenCLOutOfResources || status == CLBlastOpenCLOutOfHostMemory ||
         status == CLBlastTempBufferAllocFailure;
}

std::atomic<int> injected_failures{0};

CLBlastStatusCode gemm_or_injected_failure(cl_command_queue q, c10::ScalarType type, size_t m, size_t n, size_t k,
                                           double alpha, const BlasMatrix& a, const BlasMatrix& b, double beta,
                                           const BlasMatrix& c, size_t batch) {
  for (int left = injected_failures.load(); left > 0;)
    if (injected_failures.compare_exchange_weak(left, left - 1)) return CLBlastTempBufferAllocFailure;
  return clblast_gemm(q, type, m, n, k, alpha, a, b, beta, c, batch);
}

// CLBlast allocates its padding buffers itself: when they do not fit, free our cached blocks
// and try once more, as a tensor allocation does.
void checked_gemm(cl_command_queue q, c10::ScalarType type, size_t m, size_t n, size_t k, double alpha,
                  const BlasMatrix& a, const BlasMatrix& b, double beta, const BlasMatrix& c, size_t batch) {
  runtime::note_launch();  // one GEMM, however many kernels CLBlast splits it into
  cl_event started = runtime::kernel_timing() ? runtime::enqueue_marker(q) : nullptr;
  CLBlastStatusCode status = gemm_or_injected_failure(q, type, m, n, k, alpha, a, b, beta, c, batch);
  if (out_of_memory(status)) {
    core::device_allocator().emptyCache();
    status = gemm_or_injected_failure(q, type, m, n, k, alpha, a, b, beta, c, batch);
  }
  if (started) {
    if (status == CLBlastSuccess)
      runtime::record_kernel_time("CLBlast GEMM", runtime::enqueue_marker(q), started);
    else
      clReleaseEvent(started);
  }
  TORCH_CHECK_WITH(OutOfMemoryError, !out_of_memory(status), "ocl out of memory in CLBlast GEMM (status ", status,
                   ", m=", m, " n=", n, " k=", k, " batch=", batch, ")");
  TORCH_CHECK(status == CLBlastSuccess, "CLBlast GEMM failed with status ", static_cast<int>(status), " (m=", m,
              " n=", n, " k=", k, " batch=", batch, ")");
}

// How an operand of a strided-batched call can be handed to CLBlast.
//
// CLBlast 1.5's strided-batched GEMM hands an operand that already has its kernel's tile shape
// (dense rows, no padding or transposition needed) straight to the kernel, which reads matrix b at
// b * rows * cols from the start of the buffer: the operand's offset and batch stride are ignored.
// The plain GEMM checks the offset; the strided-batched one does not. Which operands take that
// path depends on the device's tile sizes, so every dense operand is treated as if it did: it must
// start its buffer (a sub-buffer moves the start) and be densely batched.
enum class Placement { as_is, sub_buffer, per_matrix };

Placement placement(const BlasMatrix& x, size_t stored_rows, size_t stored_cols, size_t element_bytes, size_t align) {
  if (x.ld != stored_cols) return Placement::as_is;  // CLBlast copies it into a padded buffer
  if (x.batch_stride != stored_rows * stored_cols) return Placement::per_matrix;
  if (x.offset == 0) return Placement::as_is;
  return (x.offset * element_bytes) % align == 0 ? Placement::sub_buffer : Placement::per_matrix;
}

}  // namespace

void fail_next_gemm_calls_for_testing(int count) { injected_failures.store(count); }

bool blas_supports(c10::ScalarType type) { return type == c10::kFloat || type == c10::kDouble; }

void gemm(runtime::Device& device, cl_command_queue q, c10::ScalarType type, size_t m, size_t n, size_t k,
          double alpha, const BlasMatrix& a, const BlasMatrix& b, double beta, const BlasMatrix& c, size_t batch) {
  if (packed_gemm_serves(device, type)) {
    packed_gemm(device, q, type, m, n, k, alpha, a, b, beta, c, batch);
    return;
  }
  runtime::OpScope scope("gemm (CLBlast)");
  if (batch == 1) {
    checked_gemm(q, type, m, n, k, alpha, a, b, beta, c, 1);
    runtime::after_enqueue(q);
    return;
  }
  const size_t bytes = c10::elementSize(type), align = device.properties().base_address_align;
  const Placement pa = a.transposed ? placement(a, k, m, bytes, align) : placement(a, m, k, bytes, align);
  const Placement pb = b.transposed ? placement(b, n, k, bytes, align) : placement(b, k, n, bytes, align);
  const Placement pc = placement(c, m, n, bytes, align);
  if (pa == Placement::per_matrix || pb == Placement::per_matrix || pc == Placement::per_matrix) {
    // A dense operand broadcast over the batch (stride 0), sliced out of a larger batch, or at an
    // unaligned offset: one plain GEMM per matrix, each of which honours offsets.
    for (size_t i = 0; i < batch; ++i) {
      BlasMatrix ai = a, bi = b, ci = c;
      ai.offset += i * a.batch_stride;
      bi.offset += i * b.batch_stride;
      ci.offset += i * c.batch_stride;
      checked_gemm(q, type, m, n, k, alpha, ai, bi, beta, ci, 1);
    }
    runtime::after_enqueue(q);
    return;
  }
  auto rebase = [&](const BlasMatrix& x, Placement p, std::optional<SubBuffer>& holder) {
    if (p != Placement::sub_buffer) return x;
    holder.emplace(x.buffer, x.offset * bytes, batch * x.batch_stride * bytes);
    BlasMatrix moved = x;
    moved.buffer = holder->get();
    moved.offset = 0;
    return moved;
  };
  std::optional<SubBuffer> sa, sb, sc;
  checked_gemm(q, type, m, n, k, alpha, rebase(a, pa, sa), rebase(b, pb, sb), beta, rebase(c, pc, sc), batch);
  runtime::after_enqueue(q);
}

}  // namespace drawbridge::kernels
