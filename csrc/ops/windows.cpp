#include "ops/windows.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "ops/out_arguments.h"

namespace drawbridge::ops {

at::Tensor window_index(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& dilation, const std::vector<int64_t>& padded,
                        const std::vector<int64_t>& out_size, int64_t channels, const at::TensorOptions& options) {
  const int64_t spatial = static_cast<int64_t>(kernel.size());
  std::vector<int64_t> plane_stride(spatial, 1);
  for (int64_t d = spatial - 2; d >= 0; --d) plane_stride[d] = plane_stride[d + 1] * padded[d + 1];
  const int64_t plane = plane_stride[0] * padded[0];
  // Broadcast over (channel, k_1..k_n, o_1..o_n).
  const int64_t rank = 1 + 2 * spatial;
  auto along = [&](int64_t axis, int64_t n, int64_t step) {
    std::vector<int64_t> shape(rank, 1);
    shape[axis] = n;
    return at::arange(n, options).mul_(step).view(shape);
  };
  at::Tensor index = along(0, channels, plane);
  for (int64_t d = 0; d < spatial; ++d) {
    index = index + along(1 + d, kernel[d], dilation[d] * plane_stride[d]);
    index = index + along(1 + spatial + d, out_size[d], stride[d] * plane_stride[d]);
  }
  return index.reshape({channels * c10::multiply_integers(kernel), -1});
}

namespace {

// The adjoint of unfold (its windows along one dim): every window's gradient added back where
// the window read, one index_add over the windows' positions (overlapping windows sum).
at::Tensor unfold_adjoint(const at::Tensor& grad_in, at::IntArrayRef input_sizes, int64_t dim, int64_t size,
                           int64_t step) {
  if (input_sizes.empty()) return grad_in.sum().to(grad_in.scalar_type());  // unfold of a 0-d tensor: one window
  dim = at::maybe_wrap_dim(dim, static_cast<int64_t>(input_sizes.size()));
  at::Tensor grad = at::zeros(input_sizes, grad_in.options());
  const int64_t windows = grad_in.size(dim);
  if (grad_in.numel() == 0) return grad;
  auto opts = grad_in.options().dtype(c10::kLong);
  at::Tensor positions = (at::arange(windows, opts).mul_(step).unsqueeze(1) + at::arange(size, opts)).flatten();
  return grad.index_add_(dim, positions, grad_in.movedim(-1, dim + 1).flatten(dim, dim + 1));
}

at::Tensor& unfold_backward_out(const at::Tensor& grad_in, at::IntArrayRef input_sizes, int64_t dim, int64_t size,
                                int64_t step, at::Tensor& out) {
  return assign_out(out, unfold_adjoint(grad_in, input_sizes, dim, size, step), {grad_in});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("unfold_backward", TORCH_FN(unfold_adjoint));
  m.impl("unfold_backward.out", TORCH_FN(unfold_backward_out));
}

}  // namespace drawbridge::ops
