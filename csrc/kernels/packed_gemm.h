// GEMM for CPU-class devices (cl/packed_gemm.cl). CLBlast's kernels are written and tuned for
// GPUs: on a CPU device (PoCL) its best parameters reached about a third of the host BLAS. Here
// B (and a transposed A) is packed into contiguous panels and each work-item keeps a tile of C in
// the vector registers, as a CPU BLAS does. GPU-class devices keep CLBlast.
#pragma once

#include <c10/core/ScalarType.h>

#include "kernels/blas.h"
#include "runtime/device_memory.h"

namespace drawbridge::kernels {

// float32, float64, float16 and bfloat16 (the last two stored in 16 bits, computed in float32)
// on CPU-class devices.
bool packed_gemm_serves(const runtime::Device& device, c10::ScalarType type);

// gemm()'s contract.
void packed_gemm(runtime::Device& device, cl_command_queue q, c10::ScalarType type, size_t m, size_t n, size_t k,
                 double alpha, const BlasMatrix& a, const BlasMatrix& b, double beta, const BlasMatrix& c,
                 size_t batch);

// The columns of one of B's panels on `device` for `type`, for callers that make B's panels
// themselves (the convolution's im2col writes them directly, saving a pass over the columns).
size_t packed_gemm_panel_columns(const runtime::Device& device, c10::ScalarType type);

// gemm()'s contract with B given as its panels: for each of the batch's matrices ceil(n / P)
// panels of k x P elements (P = packed_gemm_panel_columns), element (d, j) of B at
// ((j / P) * k + d) * P + j % P, zero past column n; b_panels.offset in bytes.
void packed_gemm_with_b_panels(runtime::Device& device, cl_command_queue q, c10::ScalarType type, size_t m, size_t n,
                               size_t k, double alpha, const BlasMatrix& a, const runtime::BufferRef& b_panels,
                               double beta, const BlasMatrix& c, size_t batch);

// Where the product reads an A that it does not pack (cl/packed_gemm.cl's ALayout, in elements):
// element (r, d) of matrix b at offset + b * batch_stride + row(r) + depth(d), with
//   row(r) = (r / row_group) * group_stride + (r % row_group / row_width) * row_y_stride
//            + (r % row_width) * row_x_stride,
//   depth(d) = (d / depth_width) * depth_y_stride + (d % depth_width) * depth_x_stride.
// A convolution's columns are such an A: row (c, k_0, k_1) and depth (o_0, o_1) of a padded image.
struct ALayout {
  cl_ulong offset;
  cl_long row_group, row_width, group_stride, row_y_stride, row_x_stride;
  cl_long depth_width, depth_y_stride, depth_x_stride;
  cl_long batch_stride;
};

// gemm()'s contract with A read from `a` where `layout` says (its depth in one slice).
void packed_gemm_with_a_layout(runtime::Device& device, cl_command_queue q, c10::ScalarType type, size_t m, size_t n,
                               size_t k, double alpha, cl_mem a, const ALayout& layout, const BlasMatrix& b,
                               double beta, const BlasMatrix& c, size_t batch);

// Caps the scratch memory of the packed panels (0: the default), so that the tests reach the
// slicing of large products by batch and by depth with small ones.
void set_packed_gemm_scratch_bytes_for_testing(size_t bytes);

}  // namespace drawbridge::kernels
