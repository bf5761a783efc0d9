#include "kernels/blas.h"

#include <mutex>
#include <set>

#include <clblast_c.h>

#include <c10/util/Exception.h>

#include "runtime/commands.h"

namespace drawbridge::kernels {

namespace {

// CLBlast's database has no entry for CPU devices such as PoCL's, and its defaults reach ~10
// GFLOP/s there. These single-precision parameters were found by a sweep on PoCL (AVX-512, 2
// cores): ~100-120 GFLOP/s at 1024-2048. GEMMK=1 multiplies row-major operands without transposing
// them first; SA=SB=0 keeps tiles in registers (PoCL turns local memory and barriers into memory
// traffic); 48-wide tiles pad power-of-two sizes, which avoids cache aliasing of their rows; and
// the indirect kernel beats the direct one from 64 on (the direct one, a single launch without
// padding copies, stays faster for tiny products).
constexpr size_t kIndirectFrom = 64;

void tune_for_cpu_device(cl_command_queue q) {
  static std::mutex mutex;
  static std::set<cl_device_id> tuned;
  cl_device_id device = nullptr;
  if (clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof(device), &device, nullptr) != CL_SUCCESS) return;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tuned.insert(device).second) return;
  cl_device_type type = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof(type), &type, nullptr) != CL_SUCCESS ||
      !(type & CL_DEVICE_TYPE_CPU))
    return;
  const char* xgemm_names[] = {"GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB",
                               "NDIMC", "NWG",  "SA",  "SB",  "STRM",  "STRN",  "VWM", "VWN"};
  const size_t xgemm_values[] = {1, 1, 32, 4, 2, 2, 48, 6, 6, 48, 0, 0, 0, 0, 8, 1};
  const char* routine_names[] = {"XGEMM_MIN_INDIRECT_SIZE"};
  const size_t routine_values[] = {kIndirectFrom};
  // A failed override leaves CLBlast's defaults: slower, still correct.
  CLBlastOverrideParameters(device, "Xgemm", CLBlastPrecisionSingle, 16, xgemm_names, xgemm_values);
  CLBlastOverrideParameters(device, "GemmRoutine", CLBlastPrecisionSingle, 1, routine_names, routine_values);
}

}  // namespace

bool blas_supports(c10::ScalarType type) { return type == c10::kFloat || type == c10::kDouble; }

void gemm(cl_command_queue q, c10::ScalarType type, size_t m, size_t n, size_t k, double alpha, const BlasMatrix& a,
          const BlasMatrix& b, double beta, const BlasMatrix& c, size_t batch) {
  runtime::OpScope scope("gemm (CLBlast)");
  tune_for_cpu_device(q);
  auto ta = a.transposed ? CLBlastTransposeYes : CLBlastTransposeNo;
  auto tb = b.transposed ? CLBlastTransposeYes : CLBlastTransposeNo;
  CLBlastStatusCode status;
  if (type == c10::kFloat) {
    status = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, static_cast<float>(alpha), a.buffer,
                                        a.offset, a.ld, a.batch_stride, b.buffer, b.offset, b.ld, b.batch_stride,
                                        static_cast<float>(beta), c.buffer, c.offset, c.ld, c.batch_stride, batch, &q,
                                        nullptr);
  } else {
    TORCH_INTERNAL_ASSERT(type == c10::kDouble, "gemm: unsupported dtype ", type);
    status = CLBlastDgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, alpha, a.buffer, a.offset, a.ld,
                                        a.batch_stride, b.buffer, b.offset, b.ld, b.batch_stride, beta, c.buffer,
                                        c.offset, c.ld, c.batch_stride, batch, &q, nullptr);
  }
  if (status == CLBlastOpenCLOutOfResources || status == CLBlastOpenCLOutOfHostMemory ||
      status == CLBlastTempBufferAllocFailure)
    TORCH_CHECK_WITH(OutOfMemoryError, false, "ocl out of memory in CLBlast GEMM (status ", status, ")");
  TORCH_CHECK(status == CLBlastSuccess, "CLBlast GEMM failed with status ", static_cast<int>(status),
              " (m=", m, " n=", n, " k=", k, " batch=", batch, ")");
  runtime::after_enqueue(q);
}

}  // namespace drawbridge::kernels
