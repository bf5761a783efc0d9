// Max pooling with indices (1-d through the 2-d op, as PyTorch routes it) and its backward: the
// windows are gathered with the sliding-window index map shared with convolution, reduced with
// max (NaN wins, the first of equal maxima wins, as on the CPU), and the backward scatters each
// gradient to the element its window picked.
#include <ATen/Dispatch.h>
#include <ATen/native/Pool.h>
#include <torch/library.h>

#include "ops/out_arguments.h"
#include "ops/windows.h"

namespace drawbridge::ops {

namespace {

struct PoolWindows {
  std::vector<int64_t> kernel, stride, padding, dilation, out_size, padded, right_pad;
};

PoolWindows pool_windows(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                         at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "non-empty 3D or 4D (batch mode) tensor expected for input");
  TORCH_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2,
              "max_pool2d: kernel_size must either be a single int, or a tuple of two ints");
  PoolWindows w;
  for (int64_t d = 0; d < 2; ++d) {
    auto pick = [d](at::IntArrayRef v, int64_t fallback) {
      return v.empty() ? fallback : v[v.size() == 1 ? 0 : d];
    };
    const int64_t k = pick(kernel_size, 1), s = pick(stride, k), p = pick(padding, 0), dil = pick(dilation, 1);
    TORCH_CHECK(k > 0 && s > 0 && dil > 0, "max_pool2d: kernel, stride and dilation must be greater than zero");
    TORCH_CHECK(p <= k / 2, "pad should be at most half of effective kernel size, but got pad=", p,
                ", kernel_size=", k, " and dilation=", dil);
    const int64_t size = self.size(self.dim() - 2 + d);
    const int64_t out = at::native::pooling_output_shape<int64_t>(size, k, p, s, dil, ceil_mode);
    TORCH_CHECK(out > 0, "Given input size ", self.sizes(), ", calculated output size is too small");
    const int64_t needed = (out - 1) * s + dil * (k - 1) + 1;  // the padded extent the windows read
    w.kernel.push_back(k);
    w.stride.push_back(s);
    w.padding.push_back(p);
    w.dilation.push_back(dil);
    w.out_size.push_back(out);
    w.right_pad.push_back(std::max<int64_t>(needed - size - p, 0));
    w.padded.push_back(size + p + w.right_pad.back());
  }
  return w;
}

std::tuple<at::Tensor, at::Tensor> pool_max_2d(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                           at::IntArrayRef stride, at::IntArrayRef padding,
                                                           at::IntArrayRef dilation, bool ceil_mode) {
  PoolWindows w = pool_windows(self, kernel_size, stride, padding, dilation, ceil_mode);
  const int64_t height = self.size(-2), width = self.size(-1);
  const int64_t planes = self.numel() / (height * width);
  // Padding never wins a window: the lowest value of the dtype.
  c10::Scalar lowest = -std::numeric_limits<double>::infinity();
  if (!c10::isFloatingType(self.scalar_type()))
    AT_DISPATCH_INTEGRAL_TYPES(self.scalar_type(), "max_pool2d_padding",
                               [&] { lowest = std::numeric_limits<scalar_t>::lowest(); });
  at::Tensor padded = at::constant_pad_nd(self.reshape({planes, height, width}),
                                          {w.padding[1], w.right_pad[1], w.padding[0], w.right_pad[0]}, lowest);
  at::Tensor index = window_index(w.kernel, w.stride, w.dilation, w.padded, w.out_size, 1,
                                  self.options().dtype(c10::kLong));
  at::Tensor windows = padded.reshape({planes, -1}).index_select(1, index.reshape({-1})).view(
      {planes, index.size(0), index.size(1)});
  auto [values, which] = windows.max(1);
  // The padded position the window picked, as a position in the unpadded plane.
  at::Tensor at_padded = index.unsqueeze(0).expand({planes, -1, -1}).gather(1, which.unsqueeze(1)).squeeze(1);
  at::Tensor row = at_padded.div(w.padded[1], "floor").sub_(w.padding[0]);
  at::Tensor col = at_padded.remainder(w.padded[1]).sub_(w.padding[1]);
  at::Tensor indices = row.mul_(width).add_(col);
  at::DimVector shape(self.sizes().begin(), self.sizes().end() - 2);
  shape.append({w.out_size[0], w.out_size[1]});
  return {values.view(shape), indices.view(shape)};
}

std::tuple<at::Tensor&, at::Tensor&> max_pool2d_with_indices_out(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                                 at::IntArrayRef stride, at::IntArrayRef padding,
                                                                 at::IntArrayRef dilation, bool ceil_mode,
                                                                 at::Tensor& out, at::Tensor& indices) {
  auto [v, i] = pool_max_2d(self, kernel_size, stride, padding, dilation, ceil_mode);
  assign_out(out, v);
  assign_out(indices, i);
  return {out, indices};
}

at::Tensor pool_max_2d_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                            at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                            at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                                            const at::Tensor& indices) {
  const int64_t plane = self.size(-2) * self.size(-1);
  const int64_t planes = self.numel() / plane;
  at::Tensor grad = at::zeros({planes, plane}, grad_output.options());
  grad.scatter_add_(1, indices.reshape({planes, -1}), grad_output.reshape({planes, -1}));
  return grad.view(self.sizes());
}

at::Tensor& max_pool2d_with_indices_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                                 at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                                 at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                                                 const at::Tensor& indices, at::Tensor& grad_input) {
  return assign_out(grad_input, pool_max_2d_backward(grad_output, self, kernel_size, stride, padding,
                                                                  dilation, ceil_mode, indices));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices", TORCH_FN(pool_max_2d));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(max_pool2d_with_indices_out));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(pool_max_2d_backward));
  m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(max_pool2d_with_indices_backward_out));
}

}  // namespace drawbridge::ops
