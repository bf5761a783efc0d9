// grid_sampler_2d / grid_sampler_3d (what F.grid_sample calls) and their backward, on
// cl/grid_sample.cl: bilinear, nearest and (2-d) bicubic interpolation, zeros / border /
// reflection padding, any strides, with the CPU's arithmetic and its argument checks.
//
// The input gradient is accumulated atomically in the compute type (float32 for float16 and
// bfloat16, so that the many small adds into one element do not each round to 16 bits) and
// converted once; the grid gradient is written by the work-item that owns its grid point.
#include <array>
#include <string>
#include <tuple>
#include <vector>

#include <ATen/native/GridSamplerUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "kernels/pointwise_launcher.h"
#include "kernels/tensor_operands.h"
#include "runtime/commands.h"
#include "runtime/device.h"

namespace drawbridge::ops {

namespace {

// The GridDesc of cl/grid_sample.cl: spatial dims (D, H, W), 2-d samplers with D = 1.
struct GridDesc {
  cl_long batch, channels;
  cl_long in_size[3], out_size[3];
  cl_long input_stride[5], grid_stride[5], out_stride[5], grad_input_stride[5], grad_grid_stride[5];
  cl_int interpolation, padding, align_corners, pad_;
};

// An (n, c, [d,] h, w) tensor's strides as five dims: (n, c, 0, h, w) in 2-d.
void strides5(const at::Tensor& t, cl_long* out) {
  if (t.dim() == 5) {
    for (int k = 0; k < 5; ++k) out[k] = t.stride(k);
    return;
  }
  out[0] = t.stride(0);
  out[1] = t.stride(1);
  out[2] = 0;
  out[3] = t.stride(2);
  out[4] = t.stride(3);
}

// A grid's (n, d, h, w, coordinate) strides: (n, 0, h, w, coordinate) in 2-d.
void grid_strides5(const at::Tensor& t, cl_long* out) {
  if (t.dim() == 5) {
    for (int k = 0; k < 5; ++k) out[k] = t.stride(k);
    return;
  }
  out[0] = t.stride(0);
  out[1] = 0;
  out[2] = t.stride(1);
  out[3] = t.stride(2);
  out[4] = t.stride(3);
}

GridDesc describe(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation, int64_t padding,
                  bool align_corners) {
  GridDesc d{};
  const bool three = input.dim() == 5;
  d.batch = input.size(0);
  d.channels = input.size(1);
  d.in_size[0] = three ? input.size(2) : 1;
  d.in_size[1] = input.size(three ? 3 : 2);
  d.in_size[2] = input.size(three ? 4 : 3);
  d.out_size[0] = three ? grid.size(1) : 1;
  d.out_size[1] = grid.size(three ? 2 : 1);
  d.out_size[2] = grid.size(three ? 3 : 2);
  strides5(input, d.input_stride);
  grid_strides5(grid, d.grid_stride);
  d.interpolation = static_cast<cl_int>(interpolation);
  d.padding = static_cast<cl_int>(padding);
  d.align_corners = align_corners ? 1 : 0;
  return d;
}

void check_arguments(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation, int64_t padding,
                     const char* name) {
  at::native::check_grid_sampler_common(input, grid);
  if (input.dim() == 5)
    at::native::check_grid_sampler_3d(input, grid, interpolation);
  else
    at::native::check_grid_sampler_2d(input, grid);
  // The CPU's kernels raise these from their dtype dispatch and typed data pointers.
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(input.scalar_type()) && kernels::dtype_token(input.scalar_type()),
                              "\"", name, "\" not implemented for '", c10::toString(input.scalar_type()), "'");
  TORCH_CHECK(grid.scalar_type() == input.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", grid.scalar_type());
  // The CPU leaves the output unwritten for an unknown mode; here it is an error.
  TORCH_CHECK(interpolation >= 0 && interpolation <= 2, name, ": unknown interpolation mode ", interpolation);
  TORCH_CHECK(padding >= 0 && padding <= 2, name, ": unknown padding mode ", padding);
}

// Builds the program for the input's dtype and launches `kernel` over every (n, output position).
void launch(const char* kernel, const GridDesc& d, const at::Tensor& like, std::initializer_list<at::Tensor> tensors,
            std::initializer_list<cl_int> flags) {
  const int64_t work_items = d.batch * d.out_size[0] * d.out_size[1] * d.out_size[2];
  if (work_items == 0) return;
  c10::DeviceGuard guard(like.device());
  runtime::Device& device = core::checked_device(like.device().index());
  const c10::ScalarType compute = kernels::compute_type(like.scalar_type());
  std::string options = std::string("-DNARGS=1 -DT=") + kernels::dtype_token(like.scalar_type()) +
                        " -DCT=" + kernels::dtype_token(compute);
  if (compute == c10::kDouble) options += " -DWORD64";
  runtime::Kernel& program = kernels::get_kernel(device, "grid_sample.cl", options, kernel);
  const kernels::TensorOperands operands(device, tensors);
  std::vector<runtime::KernelArg> args{{sizeof(d), &d}};
  operands.append(args);
  std::vector<cl_int> values(flags);
  for (const cl_int& v : values) args.push_back({sizeof(cl_int), &v});
  const size_t local = std::min<size_t>(64, program.max_work_group_size);
  const size_t global = (static_cast<size_t>(work_items) + local - 1) / local * local;
  runtime::launch_nd(program, core::current_queue(like.device().index()), 1, &global, &local, args.data(),
                     args.size());
}

std::vector<int64_t> output_sizes(const at::Tensor& input, const at::Tensor& grid) {
  std::vector<int64_t> sizes{input.size(0), input.size(1)};
  for (int64_t k = 1; k < grid.dim() - 1; ++k) sizes.push_back(grid.size(k));
  return sizes;
}

at::Tensor grid_sampler(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation, int64_t padding,
                        bool align_corners, const char* name) {
  check_arguments(input, grid, interpolation, padding, name);
  at::Tensor out = at::empty(output_sizes(input, grid), input.options());
  if (out.numel() == 0) return out;
  GridDesc d = describe(input, grid, interpolation, padding, align_corners);
  strides5(out, d.out_stride);
  launch(input.dim() == 5 ? "grid_sample_3d" : "grid_sample_2d", d, input, {out, input, grid}, {});
  return out;
}

at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation, int64_t padding,
                           bool align_corners) {
  return grid_sampler(input, grid, interpolation, padding, align_corners, "grid_sampler_2d");
}

at::Tensor grid_sampler_3d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation, int64_t padding,
                           bool align_corners) {
  return grid_sampler(input, grid, interpolation, padding, align_corners, "grid_sampler_3d");
}

// Gradients as the CPU returns them: contiguous; grad_input only when output_mask[0] asks. The
// grid gradient is computed only when output_mask[1] asks; otherwise it is left unwritten (the
// meta function still promises a tensor of the grid's shape).
std::tuple<at::Tensor, at::Tensor> grid_sampler_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                         const at::Tensor& grid, int64_t interpolation,
                                                         int64_t padding, bool align_corners,
                                                         std::array<bool, 2> output_mask, const char* name) {
  check_arguments(input, grid, interpolation, padding, name);
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", grad_output.scalar_type());
  const bool want_input = output_mask[0], want_grid = output_mask[1];
  const c10::ScalarType compute = kernels::compute_type(input.scalar_type());
  at::Tensor accumulator =
      want_input ? at::zeros(input.sizes(), input.options().dtype(compute)) : at::Tensor();
  at::Tensor grad_grid = at::empty(grid.sizes(), grid.options());
  if (input.numel() == 0) {
    // No channels (or no samples): nothing to read, and every grid gradient is a sum of nothing.
    if (want_grid) grad_grid.zero_();
  } else {
    GridDesc d = describe(input, grid, interpolation, padding, align_corners);
    strides5(grad_output, d.out_stride);
    if (want_input) strides5(accumulator, d.grad_input_stride);
    grid_strides5(grad_grid, d.grad_grid_stride);
    // An operand that is not asked for is never touched; grid stands in for its buffer.
    const at::Tensor& acc = want_input ? accumulator : grid;
    launch(input.dim() == 5 ? "grid_sample_3d_backward" : "grid_sample_2d_backward", d, input,
           {acc, grad_grid, grad_output, input, grid}, {want_input ? 1 : 0, want_grid ? 1 : 0});
  }
  at::Tensor grad_input;
  if (want_input) grad_input = compute == input.scalar_type() ? accumulator : accumulator.to(input.scalar_type());
  return {grad_input, grad_grid};
}

std::tuple<at::Tensor, at::Tensor> grid_sampler_2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                            const at::Tensor& grid, int64_t interpolation,
                                                            int64_t padding, bool align_corners,
                                                            std::array<bool, 2> output_mask) {
  return grid_sampler_backward(grad_output, input, grid, interpolation, padding, align_corners, output_mask,
                               "grid_sampler_2d_backward");
}

std::tuple<at::Tensor, at::Tensor> grid_sampler_3d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                            const at::Tensor& grid, int64_t interpolation,
                                                            int64_t padding, bool align_corners,
                                                            std::array<bool, 2> output_mask) {
  return grid_sampler_backward(grad_output, input, grid, interpolation, padding, align_corners, output_mask,
                               "grid_sampler_3d_backward");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", TORCH_FN(grid_sampler_2d));
  m.impl("grid_sampler_3d", TORCH_FN(grid_sampler_3d));
  m.impl("grid_sampler_2d_backward", TORCH_FN(grid_sampler_2d_backward));
  m.impl("grid_sampler_3d_backward", TORCH_FN(grid_sampler_3d_backward));
}

}  // namespace drawbridge::ops
