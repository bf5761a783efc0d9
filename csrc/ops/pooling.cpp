// Max pooling with indices, average pooling and adaptive max/average pooling (1-d through the
// 2-d ops, as PyTorch routes them) and their backward: the windows are gathered with the
// sliding-window index map shared with convolution and reduced with max (NaN wins, the first of
// equal maxima wins, as on the CPU) or a sum over the CPU's divisor; the backward scatters
// gradients back with scatter_add / index_add. max_unpool is a scatter into zeros.
#include <ATen/Dispatch.h>
#include <ATen/native/Pool.h>
#include <torch/library.h>

#include "ops/out_arguments.h"
#include "ops/pointwise.h"
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
  at::DimVector shape(self.sizes().begin(), self.sizes().end() - 2);
  shape.append({w.out_size[0], w.out_size[1]});
  if (self.numel() == 0) return {at::empty(shape, self.options()), at::empty(shape, self.options().dtype(c10::kLong))};
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

// Gradients go back to the positions the indices name (flat within each plane), summed.
at::Tensor pool_max_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& indices) {
  if (self.numel() == 0) return at::zeros_like(self);
  const int64_t plane = self.size(-2) * self.size(-1);
  const int64_t planes = self.numel() / plane;
  at::Tensor grad = at::zeros({planes, plane}, grad_output.options());
  grad.scatter_add_(1, indices.reshape({planes, -1}), grad_output.reshape({planes, -1}));
  return grad.view(self.sizes());
}

at::Tensor pool_max_2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
                                at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                                bool ceil_mode, const at::Tensor& indices) {
  return pool_max_backward(grad_output, self, indices);
}

at::Tensor& max_pool2d_with_indices_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                                 at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                                 at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                                                 const at::Tensor& indices, at::Tensor& grad_input) {
  return assign_out(grad_input, pool_max_2d_backward(grad_output, self, kernel_size, stride, padding,
                                                                  dilation, ceil_mode, indices));
}

// avg_pool2d. The divisor of each window is itself a window sum: of ones over the input and the
// explicit padding (count_include_pad) or over the input only; the extra cells ceil_mode reads
// past the padding never count, as on the CPU.
struct AvgPool {
  PoolWindows w;
  at::Tensor index;    // window map over one padded plane
  at::Tensor divisor;  // (1, L): what each window's sum is divided by
};

AvgPool avg_pool_setup(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                       at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                       std::optional<int64_t> divisor_override) {
  TORCH_CHECK(!divisor_override || *divisor_override != 0, "divisor must be not zero");
  AvgPool a{pool_windows(self, kernel_size, stride, padding, {}, ceil_mode)};
  const PoolWindows& w = a.w;
  a.index = window_index(w.kernel, w.stride, w.dilation, w.padded, w.out_size, 1, self.options().dtype(c10::kLong));
  if (divisor_override) {
    a.divisor = at::full({1, a.index.size(1)}, static_cast<double>(*divisor_override), self.options());
    return a;
  }
  const int64_t height = self.size(-2), width = self.size(-1);
  at::Tensor ones = at::ones({1, height, width}, self.options());
  at::Tensor counted = count_include_pad
                           ? at::constant_pad_nd(at::constant_pad_nd(ones, {w.padding[1], w.padding[1], w.padding[0],
                                                                            w.padding[0]}, 1),
                                                 {0, w.right_pad[1] - w.padding[1], 0, w.right_pad[0] - w.padding[0]}, 0)
                           : at::constant_pad_nd(ones, {w.padding[1], w.right_pad[1], w.padding[0], w.right_pad[0]}, 0);
  a.divisor = counted.reshape({1, -1}).index_select(1, a.index.reshape({-1})).view(
      {1, a.index.size(0), a.index.size(1)}).sum(1);
  return a;
}

at::Tensor pool_avg_2d(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                      at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                      std::optional<int64_t> divisor_override) {
  check_dtype("avg_pool2d", self.scalar_type(), Dtypes::NotBool);
  AvgPool a = avg_pool_setup(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  const PoolWindows& w = a.w;
  at::DimVector shape(self.sizes().begin(), self.sizes().end() - 2);
  shape.append({w.out_size[0], w.out_size[1]});
  if (self.numel() == 0) return at::empty(shape, self.options());
  const int64_t height = self.size(-2), width = self.size(-1), planes = self.numel() / (height * width);
  at::Tensor padded = at::constant_pad_nd(self.reshape({planes, height, width}),
                                          {w.padding[1], w.right_pad[1], w.padding[0], w.right_pad[0]}, 0);
  at::Tensor sums = padded.reshape({planes, -1}).index_select(1, a.index.reshape({-1})).view(
      {planes, a.index.size(0), a.index.size(1)}).sum(1, false, kernels::compute_type(self.scalar_type()));
  // Integer averages truncate, as the CPU's integer division does.
  at::Tensor out = c10::isFloatingType(self.scalar_type()) ? sums.div(a.divisor) : sums.div(a.divisor, "trunc");
  return out.to(self.scalar_type()).view(shape);
}

at::Tensor& avg_pool2d_out(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                           at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, at::Tensor& out) {
  return assign_out(out, pool_avg_2d(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                    divisor_override));
}

at::Tensor pool_avg_2d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
                               at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                               bool count_include_pad, std::optional<int64_t> divisor_override) {
  if (self.numel() == 0) return at::zeros_like(self);
  AvgPool a = avg_pool_setup(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override);
  const PoolWindows& w = a.w;
  const int64_t height = self.size(-2), width = self.size(-1), planes = self.numel() / (height * width);
  // Every element of a window receives the window's gradient over its divisor.
  at::Tensor share = grad_output.reshape({planes, 1, -1}).div(a.divisor.unsqueeze(0));
  at::Tensor spread = share.expand({planes, a.index.size(0), a.index.size(1)}).reshape({planes, -1});
  at::Tensor grad = at::zeros({planes, w.padded[0] * w.padded[1]}, grad_output.options());
  grad.index_add_(1, a.index.reshape({-1}), spread.to(grad.scalar_type()));
  return grad.view({planes, w.padded[0], w.padded[1]})
      .narrow(1, w.padding[0], height)
      .narrow(2, w.padding[1], width)
      .reshape(self.sizes());
}

at::Tensor& avg_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                    at::IntArrayRef kernel_size, at::IntArrayRef stride, at::IntArrayRef padding,
                                    bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override,
                                    at::Tensor& grad_input) {
  return assign_out(grad_input, pool_avg_2d_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                                                    count_include_pad, divisor_override));
}

// adaptive_avg_pool2d: output cell i of a dim of size n -> m averages [floor(i n / m), ceil((i+1) n / m)).
// Windows have at most `span` elements; positions past a cell's end are masked out.
struct AdaptiveWindows {
  at::Tensor index;  // (span_h * span_w, out_h * out_w) flat positions in one plane
  at::Tensor mask;   // same shape, 1 where the position belongs to the cell
  at::Tensor area;   // (out_h * out_w)
};

AdaptiveWindows adaptive_windows(int64_t height, int64_t width, int64_t out_h, int64_t out_w,
                                 const at::TensorOptions& options) {
  auto bounds = [&](int64_t n, int64_t m) {
    at::Tensor i = at::arange(m, options);
    at::Tensor start = (i * n).div(m, "floor");
    at::Tensor end = ((i + 1) * n + m - 1).div(m, "floor");
    const int64_t span = (n + m - 1) / m + 1;
    at::Tensor offset = at::arange(span, options);
    at::Tensor pos = start.unsqueeze(0) + offset.unsqueeze(1);  // (span, m)
    at::Tensor inside = pos < end.unsqueeze(0);
    return std::make_tuple(pos.clamp_max(n - 1), inside, end - start, span);
  };
  auto [rows, row_in, row_len, span_h] = bounds(height, out_h);
  auto [cols, col_in, col_len, span_w] = bounds(width, out_w);
  // (span_h, span_w, out_h, out_w)
  at::Tensor index = rows.view({span_h, 1, out_h, 1}) * width + cols.view({1, span_w, 1, out_w});
  at::Tensor mask = row_in.view({span_h, 1, out_h, 1}).logical_and(col_in.view({1, span_w, 1, out_w}));
  at::Tensor area = row_len.view({out_h, 1}) * col_len.view({1, out_w});
  return {index.reshape({span_h * span_w, out_h * out_w}), mask.reshape({span_h * span_w, out_h * out_w}),
          area.reshape({-1})};
}

at::Tensor adaptive_avg_pool2d(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 2, "adaptive_avg_pool2d: output_size must be 2");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got ",
              self.sizes());
  check_dtype("adaptive_avg_pool2d", self.scalar_type(), Dtypes::Floating);
  const int64_t out_h = output_size[0].expect_int(), out_w = output_size[1].expect_int();
  at::DimVector shape(self.sizes().begin(), self.sizes().end() - 2);
  shape.append({out_h, out_w});
  if (self.numel() == 0 || out_h == 0 || out_w == 0) return at::zeros(shape, self.options());
  const int64_t height = self.size(-2), width = self.size(-1), planes = self.numel() / (height * width);
  auto [index, mask, area] = adaptive_windows(height, width, out_h, out_w, self.options().dtype(c10::kLong));
  at::Tensor x = self.reshape({planes, -1}).to(kernels::compute_type(self.scalar_type()));
  at::Tensor windows = x.index_select(1, index.reshape({-1})).view({planes, index.size(0), index.size(1)});
  at::Tensor sums = windows.mul_(mask).sum(1);
  return sums.div_(area).to(self.scalar_type()).view(shape);
}

at::Tensor& adaptive_avg_pool2d_out(const at::Tensor& self, c10::SymIntArrayRef output_size, at::Tensor& out) {
  return assign_out(out, adaptive_avg_pool2d(self, output_size));
}

at::Tensor adaptive_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  if (self.numel() == 0 || grad_output.numel() == 0) return at::zeros_like(self);
  const int64_t out_h = grad_output.size(-2), out_w = grad_output.size(-1);
  const int64_t height = self.size(-2), width = self.size(-1), planes = self.numel() / (height * width);
  auto [index, mask, area] = adaptive_windows(height, width, out_h, out_w, self.options().dtype(c10::kLong));
  at::Tensor share = grad_output.reshape({planes, 1, -1}).to(kernels::compute_type(self.scalar_type())).div(area);
  at::Tensor spread = (share * mask).reshape({planes, -1});
  at::Tensor grad = at::zeros({planes, height * width}, spread.options());
  grad.index_add_(1, index.reshape({-1}), spread);
  return grad.to(self.scalar_type()).view(self.sizes());
}

at::Tensor& adaptive_avg_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::Tensor& out) {
  return assign_out(out, adaptive_avg_pool2d_backward(grad_output, self));
}

// adaptive_max_pool2d: the same cells; positions outside a cell read as -inf, so they never win
// (a cell's first position is always inside it, and the first of equal maxima wins).
std::tuple<at::Tensor, at::Tensor> pool_adaptive_max_2d(const at::Tensor& self, at::IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 2, "adaptive_max_pool2d(): internal error: output_size.size() must be 2");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: ",
              self.sizes());
  for (int64_t d = 1; d < self.dim(); ++d)
    TORCH_CHECK(self.size(d) > 0, "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch ",
                "dimensions, but input has sizes ", self.sizes(), " with dimension ", d, " being empty");
  check_dtype("adaptive_max_pool2d", self.scalar_type(), Dtypes::Floating);
  const int64_t out_h = output_size[0], out_w = output_size[1];
  at::DimVector shape(self.sizes().begin(), self.sizes().end() - 2);
  shape.append({out_h, out_w});
  if (self.numel() == 0 || out_h == 0 || out_w == 0)
    return {at::empty(shape, self.options()), at::empty(shape, self.options().dtype(c10::kLong))};
  const int64_t height = self.size(-2), width = self.size(-1), planes = self.numel() / (height * width);
  auto [index, mask, area] = adaptive_windows(height, width, out_h, out_w, self.options().dtype(c10::kLong));
  at::Tensor windows = self.reshape({planes, -1}).index_select(1, index.reshape({-1})).view(
      {planes, index.size(0), index.size(1)});
  windows.masked_fill_(mask.logical_not(), -std::numeric_limits<double>::infinity());
  auto [values, which] = windows.max(1);
  at::Tensor indices = index.unsqueeze(0).expand({planes, -1, -1}).gather(1, which.unsqueeze(1)).squeeze(1);
  return {values.view(shape), indices.view(shape)};
}

std::tuple<at::Tensor&, at::Tensor&> adaptive_max_pool2d_out(const at::Tensor& self, at::IntArrayRef output_size,
                                                             at::Tensor& out, at::Tensor& indices) {
  auto [v, i] = pool_adaptive_max_2d(self, output_size);
  assign_out(out, v);
  assign_out(indices, i);
  return {out, indices};
}

at::Tensor& adaptive_max_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             const at::Tensor& indices, at::Tensor& grad_input) {
  return assign_out(grad_input, pool_max_backward(grad_output, self, indices));
}

// --- max_unpool: each value written where its index says in a zeroed output plane, a scatter
// (the backward, max_pool_double_backward, gathers back). The checks are the CPU's.

at::Tensor max_unpool(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size, int64_t spatial,
                      const char* name) {
  TORCH_CHECK(indices.scalar_type() == c10::kLong, "elements in indices should be type int64 but got: ",
              indices.scalar_type());
  TORCH_CHECK(self.sizes() == indices.sizes(), "Expected shape of indices to be same as that of the input tensor (",
              self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t d = 1; d < self.dim(); ++d)
    TORCH_CHECK(self.size(d) > 0, name, "_forward_out_cpu(): Expected input to have non-zero size for non-batch ",
                "dimensions, but got ", self.sizes(), " with dimension ", d, " being empty.");
  at::DimVector shape(self.sizes().begin(), self.sizes().end() - spatial);
  shape.append(output_size.begin(), output_size.end());
  at::Tensor out = at::zeros(shape, self.options());
  if (self.numel() == 0) return out;
  const int64_t planes = self.numel() / c10::multiply_integers(self.sizes().end() - spatial, self.sizes().end());
  // Indices past the plane raise at the next synchronization, as the scatter's own check does.
  out.view({planes, -1}).scatter_(1, indices.reshape({planes, -1}), self.reshape({planes, -1}));
  return out;
}

at::Tensor unpool_2d(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 2, "There should be exactly two elements (height, width) in output_size, but got ",
              output_size.size(), " elements.");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, "Input to max_unpooling2d should be a 3d or 4d Tensor, but got a ",
              "tensor with ", self.dim(), " dimensions.");
  return max_unpool(self, indices, output_size, 2, "max_unpooling2d");
}

at::Tensor unpool_3d(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size,
                        at::IntArrayRef stride, at::IntArrayRef padding) {
  TORCH_CHECK(self.dim() == 4 || self.dim() == 5, "Input to max_unpooling3d should be a 4d or 5d Tensor, but got a ",
              "tensor with ", self.dim(), " dimensions.");
  TORCH_CHECK(output_size.size() == 3, "There should be exactly three elements (depth, height, width) in ",
              "output_size, but got ", output_size.size(), " elements.");
  TORCH_CHECK(stride.size() == 3, "There should be exactly three elements (depth, height, width) in stride, but got: ",
              stride.size(), " elements.");
  TORCH_CHECK(padding.size() == 3, "There should be exactly three elements (depth, height, width) in padding, but ",
              "got: ", padding.size(), " elements.");
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0, "strides should be greater than zero, but got stride: ",
              stride);
  return max_unpool(self, indices, output_size, 3, "max_unpooling3d");
}

at::Tensor& max_unpool2d_out(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size,
                             at::Tensor& out) {
  return assign_out(out, unpool_2d(self, indices, output_size), {self, indices});
}

at::Tensor& max_unpool3d_out(const at::Tensor& self, const at::Tensor& indices, at::IntArrayRef output_size,
                             at::IntArrayRef stride, at::IntArrayRef padding, at::Tensor& out) {
  return assign_out(out, unpool_3d(self, indices, output_size, stride, padding), {self, indices});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_unpool2d", TORCH_FN(unpool_2d));
  m.impl("max_unpool2d.out", TORCH_FN(max_unpool2d_out));
  m.impl("max_unpool3d", TORCH_FN(unpool_3d));
  m.impl("max_unpool3d.out", TORCH_FN(max_unpool3d_out));
  m.impl("max_pool2d_with_indices", TORCH_FN(pool_max_2d));
  m.impl("max_pool2d_with_indices.out", TORCH_FN(max_pool2d_with_indices_out));
  m.impl("max_pool2d_with_indices_backward", TORCH_FN(pool_max_2d_backward));
  m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(max_pool2d_with_indices_backward_out));
  m.impl("avg_pool2d", TORCH_FN(pool_avg_2d));
  m.impl("avg_pool2d.out", TORCH_FN(avg_pool2d_out));
  m.impl("avg_pool2d_backward", TORCH_FN(pool_avg_2d_backward));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d));
  m.impl("_adaptive_avg_pool2d.out", TORCH_FN(adaptive_avg_pool2d_out));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool2d_backward));
  m.impl("_adaptive_avg_pool2d_backward.out", TORCH_FN(adaptive_avg_pool2d_backward_out));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(avg_pool2d_backward_out));
  m.impl("adaptive_max_pool2d", TORCH_FN(pool_adaptive_max_2d));
  m.impl("adaptive_max_pool2d.out", TORCH_FN(adaptive_max_pool2d_out));
  m.impl("adaptive_max_pool2d_backward", TORCH_FN(pool_max_backward));
  m.impl("adaptive_max_pool2d_backward.grad_input", TORCH_FN(adaptive_max_pool2d_backward_out));
}

}  // namespace drawbridge::ops
