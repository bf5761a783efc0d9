#include "kernels/packed_gemm.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <string>

#include <c10/util/Exception.h>

#include "core/device_allocator.h"
#include "kernels/kernel_library.h"
#include "runtime/commands.h"

namespace drawbridge::kernels {

namespace {

// The register tile of one work-item: MR rows of C by NV vectors of VW elements. With AVX-512's
// 32 registers, 8 x 3 accumulators leave room for the loads; AVX2's 16 hold 6 x 2.
struct Tile {
  size_t mr, nv, vw;
  size_t cols() const { return nv * vw; }
};

Tile tile_for(const runtime::Device& device, size_t element_bytes) {
  const size_t width = std::clamp<size_t>(device.properties().vector_elements(element_bytes), 2, 16);
  if (width * element_bytes >= 64) return {8, 3, width};  // AVX-512
  return {6, 2, width};
}

// The element type the product computes in: float for float32, float16 and bfloat16.
size_t real_bytes(c10::ScalarType type) { return type == c10::kDouble ? 8 : 4; }

// NARGS: common.clh, which every program starts with, sizes its iterator by it.
std::string program_options(c10::ScalarType type, const Tile& t) {
  const char* storage = type == c10::kHalf ? " -DSTORAGE_F16" : type == c10::kBFloat16 ? " -DSTORAGE_BF16" : "";
  return std::string("-DNARGS=1 -DREAL=") + (type == c10::kDouble ? "double" : "float") +
         " -DMR=" + std::to_string(t.mr) + " -DNV=" + std::to_string(t.nv) + " -DVW=" + std::to_string(t.vw) + storage;
}

// Panels in flight at once stay under this, so that a large product never needs more scratch
// memory than a fraction of the device's: past it the batch, then the depth, is taken in slices.
constexpr size_t kScratchBytes = size_t(256) << 20;
std::atomic<size_t> scratch_bytes_for_testing{0};

size_t panels(size_t rows, size_t per_panel) { return (rows + per_panel - 1) / per_panel; }

// Work-items per work-group of the packing kernels, along the depth. A fixed size, not the
// driver's choice: PoCL compiles a kernel again for every local size it runs with, and its choice
// follows the grid, so every new matrix shape cost a build (over a thousand in the test suite).
constexpr size_t kPackGroup = 64;

// An operand seen as (rows x depth): A as (m x k), B as its transpose (n x k).
struct PanelSource {
  const BlasMatrix& x;
  cl_long row_stride, depth_stride;
};

PanelSource a_source(const BlasMatrix& a) {  // op(A)[i, d]
  return a.transposed ? PanelSource{a, 1, cl_long(a.ld)} : PanelSource{a, cl_long(a.ld), 1};
}

PanelSource b_source(const BlasMatrix& b) {  // op(B)[d, j], seen as row j, depth d
  return b.transposed ? PanelSource{b, cl_long(b.ld), 1} : PanelSource{b, 1, cl_long(b.ld)};
}

// Scalars of the program's REAL type.
struct Real {
  double d;
  float f;
  bool is_double;
  runtime::KernelArg arg() const {
    return is_double ? runtime::KernelArg{sizeof(double), &d} : runtime::KernelArg{sizeof(float), &f};
  }
};

class PackedProduct {
 public:
  PackedProduct(runtime::Device& device, cl_command_queue q, c10::ScalarType type)
      : device_(device), q_(q), bytes_(real_bytes(type)), storage_bytes_(c10::elementSize(type)),
        a_always_packed_(type == c10::kHalf), a_panel_bytes_(a_always_packed_ ? bytes_ : storage_bytes_),
        tile_(tile_for(device, bytes_)), options_(program_options(type, tile_)), double_(type == c10::kDouble) {}

  // A is `a` (its buffer only, with a_windows: A is then read where they say, in place, the
  // depth in one slice). B is `b`, or with b_packed its panels, made by the caller for the whole
  // depth.
  void run(size_t m, size_t n, size_t k, double alpha, const BlasMatrix& a, const ALayout* a_windows,
           const BlasMatrix* b, const runtime::BufferRef* b_packed, double beta, const BlasMatrix& c, size_t batch) {
    // A whose rows are contiguous is read in place; a transposed one is packed, since reading its
    // MR rows in place strides the depth by a whole row (half the speed at 2048 x 2048), and so is
    // a float16 one (cl/packed_gemm.cl: A_T).
    TORCH_INTERNAL_ASSERT(!(a_windows && a_always_packed_), "packed GEMM: float16 A is always packed");
    const bool pack_a = (a.transposed || a_always_packed_) && !a_windows;
    const size_t rows_a = pack_a ? panels(m, tile_.mr) * tile_.mr : 0, rows_b = panels(n, tile_.cols()) * tile_.cols();
    const size_t bytes_per_depth = rows_a * a_panel_bytes_ + (b_packed ? 0 : rows_b * bytes_);
    const size_t limit = scratch_bytes_for_testing.load() ? scratch_bytes_for_testing.load() : kScratchBytes;
    // Whole matrices in slices of the batch while they fit; else one matrix in slices of the depth.
    const size_t depth_slice =
        b_packed || a_windows || bytes_per_depth == 0 ? k : std::clamp<size_t>(limit / bytes_per_depth, 1, k);
    const size_t batch_slice = bytes_per_depth == 0 ? batch
                               : depth_slice < k    ? 1
                                                    : std::clamp<size_t>(limit / (bytes_per_depth * k), 1, batch);
    c10::DataPtr a_scratch = core::device_allocator().allocate(rows_a * depth_slice * batch_slice * a_panel_bytes_);
    c10::DataPtr b_scratch =
        core::device_allocator().allocate(b_packed ? 0 : rows_b * depth_slice * batch_slice * bytes_);
    const runtime::BufferRef a_panels = pack_a ? device_.memory().resolve(a_scratch.get()) : runtime::BufferRef{};
    runtime::BufferRef b_panels = b_packed ? *b_packed : device_.memory().resolve(b_scratch.get());
    for (size_t b0 = 0; b0 < batch; b0 += batch_slice) {
      const size_t batches = std::min(batch_slice, batch - b0);
      for (size_t d0 = 0; d0 < k; d0 += depth_slice) {
        const size_t depth = std::min(depth_slice, k - d0);
        if (pack_a) pack("pack_a_panels", a_source(a), b0, batches, m, d0, depth, tile_.mr, a_panels, a_panel_bytes_);
        if (!b_packed) pack("pack_b_panels", b_source(*b), b0, batches, n, d0, depth, tile_.cols(), b_panels, bytes_);
        ALayout layout = a_windows ? *a_windows
                         : pack_a  ? packed_rows(a_panels, m, depth)
                                   : rows_in_place(a, d0, depth);
        if (!pack_a) layout.offset += b0 * layout.batch_stride;
        // Later slices of the depth add to what the first wrote.
        multiply(m, n, depth, alpha, pack_a ? a_panels.mem : a.buffer, layout, b_panels, d0 == 0 ? beta : 1.0, c, b0,
                 batches);
      }
      if (b_packed) b_panels.offset += batches * rows_b * k * bytes_;
    }
  }

 private:
  Real real(double v) const { return {v, float(v), double_}; }

  void pack(const char* name, const PanelSource& src, size_t first_batch, size_t batches, size_t rows, size_t depth0,
            size_t depth, size_t per_panel, const runtime::BufferRef& dst, size_t dst_bytes) {
    runtime::Kernel& kernel = get_kernel(device_, "packed_gemm.cl", options_, name);
    const cl_ulong offset = src.x.offset + first_batch * src.x.batch_stride, dst_offset = dst.offset / dst_bytes;
    const cl_long batch_stride = cl_long(src.x.batch_stride);
    const int rows_i = int(rows), depth0_i = int(depth0), depth_i = int(depth);
    const size_t group = std::min(kPackGroup, kernel.max_work_group_size);
    const size_t global[] = {panels(depth, group) * group, panels(rows, per_panel), batches}, local[] = {group, 1, 1};
    const runtime::KernelArg args[] = {
        {sizeof(cl_mem), &src.x.buffer},   {sizeof(offset), &offset},         {sizeof(cl_long), &src.row_stride},
        {sizeof(cl_long), &src.depth_stride}, {sizeof(batch_stride), &batch_stride}, {sizeof(int), &rows_i},
        {sizeof(int), &depth0_i},          {sizeof(int), &depth_i},           {sizeof(cl_mem), &dst.mem},
        {sizeof(cl_ulong), &dst_offset}};
    runtime::launch_nd(kernel, q_, 3, global, local, args, std::size(args));
  }

  // The panels of pack_a_panels: groups of MR rows, contiguous at each depth.
  ALayout packed_rows(const runtime::BufferRef& a_panels, size_t m, size_t depth) const {
    const cl_long mr = cl_long(tile_.mr), panel = cl_long(depth) * mr;
    return {a_panels.offset / a_panel_bytes_, mr, mr, panel, 0, 1, cl_long(depth), 0, mr,
            cl_long(panels(m, tile_.mr)) * panel};
  }

  // A itself, from depth depth0 on; its rows are contiguous.
  static ALayout rows_in_place(const BlasMatrix& a, size_t depth0, size_t depth) {
    return {a.offset + depth0, 1, 1, cl_long(a.ld), 0, 0, cl_long(depth), 0, 1, cl_long(a.batch_stride)};
  }

  void multiply(size_t m, size_t n, size_t depth, double alpha, cl_mem a, const ALayout& layout,
                const runtime::BufferRef& b_panels, double beta, const BlasMatrix& c, size_t first_batch,
                size_t batches) {
    runtime::Kernel& kernel = get_kernel(device_, "packed_gemm.cl", options_, "packed_gemm");
    const int m_i = int(m), n_i = int(n), depth_i = int(depth);
    const Real alpha_r = real(alpha), beta_r = real(beta);
    const cl_ulong b_offset = b_panels.offset / bytes_;
    const cl_ulong c_offset = c.offset + first_batch * c.batch_stride;
    const cl_long c_row = cl_long(c.ld), c_batch = cl_long(c.batch_stride);
    const size_t global[] = {panels(m, tile_.mr), panels(n, tile_.cols()), batches}, local[] = {1, 1, 1};
    const runtime::KernelArg args[] = {
        {sizeof(int), &m_i},           {sizeof(int), &n_i},           {sizeof(int), &depth_i},
        alpha_r.arg(),
        beta_r.arg(),
        {sizeof(cl_mem), &a},
        {sizeof(layout), &layout},
        {sizeof(cl_mem), &b_panels.mem},
        {sizeof(cl_ulong), &b_offset},
        {sizeof(cl_mem), &c.buffer},
        {sizeof(cl_ulong), &c_offset},
        {sizeof(cl_long), &c_row},
        {sizeof(cl_long), &c_batch}};
    runtime::launch_nd(kernel, q_, 3, global, local, args, std::size(args));
  }

  runtime::Device& device_;
  cl_command_queue q_;
  size_t bytes_;          // of B's panels' elements (REAL)
  size_t storage_bytes_;  // of A's, B's and C's
  bool a_always_packed_;
  size_t a_panel_bytes_;  // of A's panels' elements (A_T)
  Tile tile_;
  std::string options_;
  bool double_;
};

void check_sizes(size_t m, size_t n, size_t k) {
  TORCH_CHECK(m < INT_MAX && n < INT_MAX && k < INT_MAX, "ocl GEMM: a matrix dimension past 2^31 (m=", m, " n=", n,
              " k=", k, ")");
}

}  // namespace

size_t packed_gemm_panel_columns(const runtime::Device& device, c10::ScalarType type) {
  return tile_for(device, real_bytes(type)).cols();
}

bool packed_gemm_serves(const runtime::Device& device, c10::ScalarType type) {
  return device.properties().cpu_class() &&
         (type == c10::kFloat || type == c10::kDouble || type == c10::kHalf || type == c10::kBFloat16);
}

void packed_gemm(runtime::Device& device, cl_command_queue q, c10::ScalarType type, size_t m, size_t n, size_t k,
                 double alpha, const BlasMatrix& a, const BlasMatrix& b, double beta, const BlasMatrix& c,
                 size_t batch) {
  check_sizes(m, n, k);
  PackedProduct(device, q, type).run(m, n, k, alpha, a, nullptr, &b, nullptr, beta, c, batch);
}

void packed_gemm_with_b_panels(runtime::Device& device, cl_command_queue q, c10::ScalarType type, size_t m, size_t n,
                               size_t k, double alpha, const BlasMatrix& a, const runtime::BufferRef& b_panels,
                               double beta, const BlasMatrix& c, size_t batch) {
  check_sizes(m, n, k);
  PackedProduct(device, q, type).run(m, n, k, alpha, a, nullptr, nullptr, &b_panels, beta, c, batch);
}

void packed_gemm_with_a_layout(runtime::Device& device, cl_command_queue q, c10::ScalarType type, size_t m, size_t n,
                               size_t k, double alpha, cl_mem a, const ALayout& layout, const BlasMatrix& b,
                               double beta, const BlasMatrix& c, size_t batch) {
  check_sizes(m, n, k);
  const BlasMatrix a_buffer{a, 0, 0, 0, false};
  PackedProduct(device, q, type).run(m, n, k, alpha, a_buffer, &layout, &b, nullptr, beta, c, batch);
}

void set_packed_gemm_scratch_bytes_for_testing(size_t bytes) { scratch_bytes_for_testing.store(bytes); }

}  // namespace drawbridge::kernels
