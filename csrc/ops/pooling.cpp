// Max pooling with indices, average pooling and adaptive max/average pooling over 2 or 3 spatial
// dims (1-d goes through the 2-d ops, as PyTorch routes it) and their backward: the windows are gathered with the
// sliding-window index map shared with convolution and reduced with max (NaN wins, the first of
// equal maxima wins, as on the CPU) or a sum over the CPU's divisor; the backward scatters
// gradients back with scatter_add / index_add. max_unpool is a scatter into zeros. Fractional max
// pooling, whose window starts differ per plane, has a kernel of its own (cl/fractional_pool.cl).
#include <ATen/Dispatch.h>
#include <ATen/native/Pool.h>
#include <ATen/ops/fractional_max_pool2d.h>
#include <ATen/ops/fractional_max_pool3d.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "ops/matrix_kernels.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"
#include "ops/windows.h"
#include "runtime/commands.h"
#include "runtime/device.h"

namespace drawbridge::ops {

namespace {

// The spatial dims a pooling op reduces (2 or 3): its names and the CPU's dim checks.
struct PoolOp {
  int64_t spatial;
  const char* name;  // "max_pool2d", "avg_pool3d", ...
};

void check_pool_input(const at::Tensor& self, const PoolOp& op) {
  TORCH_CHECK(self.dim() == op.spatial + 1 || self.dim() == op.spatial + 2, "non-empty ", op.spatial + 1, "D or ",
              op.spatial + 2, "D (batch mode) tensor expected for input");
  const int64_t batch_dims = self.dim() - op.spatial - 1;
  for (int64_t d = batch_dims; d < self.dim(); ++d) {
    if (op.spatial == 2) {
      TORCH_CHECK(self.size(d) > 0, "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for ",
                  "input, but got:", self.sizes());
    } else {
      TORCH_CHECK(self.size(d) > 0, op.name, "(): Expected input's non-batch dimensions to have positive length, ",
                  "but input has a shape of ", self.sizes(), " and non-batch dimension ", d - batch_dims,
                  " has length zero!");
    }
  }
}

// The trailing `spatial` sizes of t, and their product (one plane).
std::vector<int64_t> spatial_sizes(const at::Tensor& t, int64_t spatial) {
  return {t.sizes().end() - spatial, t.sizes().end()};
}
int64_t plane_numel(const at::Tensor& t, int64_t spatial) { return c10::multiply_integers(spatial_sizes(t, spatial)); }

// t's batch dims followed by `spatial_out`.
at::DimVector pooled_shape(const at::Tensor& t, int64_t spatial, at::IntArrayRef spatial_out) {
  at::DimVector shape(t.sizes().begin(), t.sizes().end() - spatial);
  shape.append(spatial_out.begin(), spatial_out.end());
  return shape;
}

struct PoolWindows {
  std::vector<int64_t> kernel, stride, padding, dilation, out_size, padded, right_pad;
  // constant_pad_nd's list (last dim first): `left` before each dim and `right` after it.
  std::vector<int64_t> pads(const std::vector<int64_t>& left, const std::vector<int64_t>& right) const {
    std::vector<int64_t> list;
    for (int64_t d = static_cast<int64_t>(left.size()) - 1; d >= 0; --d) list.insert(list.end(), {left[d], right[d]});
    return list;
  }
};

PoolWindows pool_windows(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                         at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode, const PoolOp& op) {
  check_pool_input(self, op);
  TORCH_CHECK(kernel_size.size() == 1 || static_cast<int64_t>(kernel_size.size()) == op.spatial, op.name,
              ": kernel_size must either be a single int, or a tuple of ", op.spatial == 2 ? "two" : "three", " ints");
  PoolWindows w;
  for (int64_t d = 0; d < op.spatial; ++d) {
    auto pick = [d](at::IntArrayRef v, int64_t fallback) {
      return v.empty() ? fallback : v[v.size() == 1 ? 0 : d];
    };
    const int64_t k = pick(kernel_size, 1), s = pick(stride, k), p = pick(padding, 0), dil = pick(dilation, 1);
    TORCH_CHECK(k > 0 && s > 0 && dil > 0, op.name, ": kernel, stride and dilation must be greater than zero");
    TORCH_CHECK(p <= k / 2, "pad should be at most half of effective kernel size, but got pad=", p,
                ", kernel_size=", k, " and dilation=", dil);
    const int64_t size = self.size(self.dim() - op.spatial + d);
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

// The padded windows of every plane: (planes, prod(kernel), prod(out_size)) read through `index`.
at::Tensor gather_windows(const at::Tensor& planes, const at::Tensor& index) {
  return planes.index_select(1, index.reshape({-1})).view({planes.size(0), index.size(0), index.size(1)});
}

std::tuple<at::Tensor, at::Tensor> pool_max(const at::Tensor& self, at::IntArrayRef kernel_size,
                                            at::IntArrayRef stride, at::IntArrayRef padding,
                                            at::IntArrayRef dilation, bool ceil_mode, const PoolOp& op) {
  PoolWindows w = pool_windows(self, kernel_size, stride, padding, dilation, ceil_mode, op);
  const at::DimVector shape = pooled_shape(self, op.spatial, w.out_size);
  if (self.numel() == 0) return {at::empty(shape, self.options()), at::empty(shape, self.options().dtype(c10::kLong))};
  const std::vector<int64_t> sizes = spatial_sizes(self, op.spatial);
  const int64_t planes = self.numel() / plane_numel(self, op.spatial);
  // Padding never wins a window: the lowest value of the dtype.
  c10::Scalar lowest = -std::numeric_limits<double>::infinity();
  if (!c10::isFloatingType(self.scalar_type()))
    AT_DISPATCH_INTEGRAL_TYPES(self.scalar_type(), "max_pool_padding",
                               [&] { lowest = std::numeric_limits<scalar_t>::lowest(); });
  at::DimVector plane_shape{planes};
  plane_shape.append(sizes.begin(), sizes.end());
  at::Tensor padded = at::constant_pad_nd(self.reshape(plane_shape), w.pads(w.padding, w.right_pad), lowest);
  at::Tensor index = window_index(w.kernel, w.stride, w.dilation, w.padded, w.out_size, 1,
                                  self.options().dtype(c10::kLong));
  auto [values, which] = gather_windows(padded.reshape({planes, -1}), index).max(1);
  // The padded position the window picked, as a position in the unpadded plane.
  at::Tensor at_padded = index.unsqueeze(0).expand({planes, -1, -1}).gather(1, which.unsqueeze(1)).squeeze(1);
  at::Tensor indices = at::zeros_like(at_padded);
  int64_t padded_stride = 1, stride_in_plane = 1;
  for (int64_t d = op.spatial - 1; d >= 0; --d) {
    at::Tensor coord = at_padded.div(padded_stride, "floor").remainder_(w.padded[d]).sub_(w.padding[d]);
    indices.add_(coord.mul_(stride_in_plane));
    padded_stride *= w.padded[d];
    stride_in_plane *= sizes[d];
  }
  return {values.view(shape), indices.view(shape)};
}

// Gradients go back to the positions the indices name (flat within each plane), summed.
at::Tensor pool_max_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& indices,
                             int64_t spatial) {
  if (self.numel() == 0) return at::zeros_like(self);
  const int64_t plane = plane_numel(self, spatial), planes = self.numel() / plane;
  at::Tensor grad = at::zeros({planes, plane}, grad_output.options());
  grad.scatter_add_(1, indices.reshape({planes, -1}), grad_output.reshape({planes, -1}));
  return grad.view(self.sizes());
}

// avg_pool. The divisor of each window is itself a window sum: of ones over the input and the
// explicit padding (count_include_pad) or over the input only; the extra cells ceil_mode reads
// past the padding never count, as on the CPU.
struct AvgPool {
  PoolWindows w;
  at::Tensor index;    // window map over one padded plane
  at::Tensor divisor;  // (1, L): what each window's sum is divided by
};

AvgPool avg_pool_setup(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                       at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                       std::optional<int64_t> divisor_override, const PoolOp& op) {
  TORCH_CHECK(!divisor_override || *divisor_override != 0, "divisor must be not zero");
  AvgPool a{pool_windows(self, kernel_size, stride, padding, {}, ceil_mode, op)};
  const PoolWindows& w = a.w;
  a.index = window_index(w.kernel, w.stride, w.dilation, w.padded, w.out_size, 1, self.options().dtype(c10::kLong));
  if (divisor_override) {
    a.divisor = at::full({1, a.index.size(1)}, static_cast<double>(*divisor_override), self.options());
    return a;
  }
  at::DimVector one_plane{1};
  const std::vector<int64_t> sizes = spatial_sizes(self, op.spatial);
  one_plane.append(sizes.begin(), sizes.end());
  at::Tensor ones = at::ones(one_plane, self.options());
  std::vector<int64_t> past_padding(op.spatial);
  for (int64_t d = 0; d < op.spatial; ++d) past_padding[d] = w.right_pad[d] - w.padding[d];
  at::Tensor counted =
      count_include_pad
          ? at::constant_pad_nd(at::constant_pad_nd(ones, w.pads(w.padding, w.padding), 1),
                                w.pads(std::vector<int64_t>(op.spatial, 0), past_padding), 0)
          : at::constant_pad_nd(ones, w.pads(w.padding, w.right_pad), 0);
  a.divisor = gather_windows(counted.reshape({1, -1}), a.index).sum(1);
  return a;
}

at::Tensor pool_avg(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                    std::optional<int64_t> divisor_override, const PoolOp& op) {
  check_dtype(op.name, self.scalar_type(), Dtypes::NotBool);
  AvgPool a = avg_pool_setup(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, op);
  const PoolWindows& w = a.w;
  const at::DimVector shape = pooled_shape(self, op.spatial, w.out_size);
  if (self.numel() == 0) return at::empty(shape, self.options());
  const std::vector<int64_t> sizes = spatial_sizes(self, op.spatial);
  const int64_t planes = self.numel() / plane_numel(self, op.spatial);
  at::DimVector plane_shape{planes};
  plane_shape.append(sizes.begin(), sizes.end());
  at::Tensor padded = at::constant_pad_nd(self.reshape(plane_shape), w.pads(w.padding, w.right_pad), 0);
  at::Tensor sums = gather_windows(padded.reshape({planes, -1}), a.index)
                        .sum(1, false, kernels::compute_type(self.scalar_type()));
  // Integer averages truncate, as the CPU's integer division does.
  at::Tensor out = c10::isFloatingType(self.scalar_type()) ? sums.div(a.divisor) : sums.div(a.divisor, "trunc");
  return out.to(self.scalar_type()).view(shape);
}

at::Tensor pool_avg_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
                             at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                             std::optional<int64_t> divisor_override, const PoolOp& op) {
  if (self.numel() == 0) return at::zeros_like(self);
  AvgPool a = avg_pool_setup(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, op);
  const PoolWindows& w = a.w;
  const std::vector<int64_t> sizes = spatial_sizes(self, op.spatial);
  const int64_t planes = self.numel() / plane_numel(self, op.spatial);
  // Every element of a window receives the window's gradient over its divisor.
  at::Tensor share = grad_output.reshape({planes, 1, -1}).div(a.divisor.unsqueeze(0));
  at::Tensor spread = share.expand({planes, a.index.size(0), a.index.size(1)}).reshape({planes, -1});
  at::Tensor grad = at::zeros({planes, c10::multiply_integers(w.padded)}, grad_output.options());
  grad.index_add_(1, a.index.reshape({-1}), spread.to(grad.scalar_type()));
  at::DimVector padded_shape{planes};
  padded_shape.append(w.padded.begin(), w.padded.end());
  at::Tensor inner = grad.view(padded_shape);
  for (int64_t d = 0; d < op.spatial; ++d) inner = inner.narrow(1 + d, w.padding[d], sizes[d]);
  return inner.reshape(self.sizes());
}

// adaptive pooling: output cell i of a dim of size n -> m covers [floor(i n / m), ceil((i+1) n / m)).
// Windows have at most `span` elements per dim; positions past a cell's end are masked out.
struct AdaptiveWindows {
  at::Tensor index;  // (prod(spans), prod(out)) flat positions in one plane
  at::Tensor mask;   // same shape, true where the position belongs to the cell
  at::Tensor area;   // (prod(out))
};

AdaptiveWindows adaptive_windows(const std::vector<int64_t>& sizes, at::IntArrayRef out,
                                 const at::TensorOptions& options) {
  const int64_t spatial = static_cast<int64_t>(sizes.size());
  // Broadcast over (span_1..span_n, out_1..out_n).
  auto along = [&](int64_t d, const at::Tensor& t) {  // t: (span_d, out_d)
    std::vector<int64_t> shape(2 * spatial, 1);
    shape[d] = t.size(0);
    shape[spatial + d] = t.size(1);
    return t.view(shape);
  };
  at::Tensor index, mask, area;
  int64_t plane_stride = 1;
  for (int64_t d = spatial - 1; d >= 0; --d) {
    const int64_t n = sizes[d], m = out[d];
    at::Tensor i = at::arange(m, options);
    at::Tensor start = (i * n).div(m, "floor");
    at::Tensor end = ((i + 1) * n + m - 1).div(m, "floor");
    const int64_t span = (n + m - 1) / m + 1;
    at::Tensor pos = start.unsqueeze(0) + at::arange(span, options).unsqueeze(1);  // (span, m)
    at::Tensor here = along(d, pos.clamp_max(n - 1) * plane_stride);
    at::Tensor inside = along(d, pos < end.unsqueeze(0));
    at::Tensor length = along(d, (end - start).unsqueeze(0));
    index = index.defined() ? index + here : here;
    mask = mask.defined() ? mask.logical_and(inside) : inside;
    area = area.defined() ? area * length : length;
    plane_stride *= n;
  }
  const int64_t cells = c10::multiply_integers(out);
  return {index.reshape({-1, cells}), mask.expand(index.sizes()).reshape({-1, cells}), area.reshape({-1})};
}

at::Tensor adaptive_avg_pool(const at::Tensor& self, at::IntArrayRef output_size, const PoolOp& op) {
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == op.spatial, op.name, ": output_size must be ", op.spatial);
  TORCH_CHECK(self.dim() == op.spatial + 1 || self.dim() == op.spatial + 2, op.name, "(): Expected ", op.spatial + 1,
              "D or ", op.spatial + 2, "D tensor, but got ", self.sizes());
  check_dtype(op.name, self.scalar_type(), Dtypes::Floating);
  const at::DimVector shape = pooled_shape(self, op.spatial, output_size);
  if (self.numel() == 0 || c10::multiply_integers(output_size) == 0) return at::zeros(shape, self.options());
  const int64_t planes = self.numel() / plane_numel(self, op.spatial);
  auto [index, mask, area] = adaptive_windows(spatial_sizes(self, op.spatial), output_size,
                                              self.options().dtype(c10::kLong));
  at::Tensor x = self.reshape({planes, -1}).to(kernels::compute_type(self.scalar_type()));
  at::Tensor sums = gather_windows(x, index).mul_(mask).sum(1);
  return sums.div_(area).to(self.scalar_type()).view(shape);
}

at::Tensor adaptive_avg_pool_backward(const at::Tensor& grad_output, const at::Tensor& self, int64_t spatial) {
  if (self.numel() == 0 || grad_output.numel() == 0) return at::zeros_like(self);
  const int64_t plane = plane_numel(self, spatial), planes = self.numel() / plane;
  auto [index, mask, area] = adaptive_windows(spatial_sizes(self, spatial), spatial_sizes(grad_output, spatial),
                                              self.options().dtype(c10::kLong));
  at::Tensor share = grad_output.reshape({planes, 1, -1}).to(kernels::compute_type(self.scalar_type())).div(area);
  at::Tensor spread = (share * mask).reshape({planes, -1});
  at::Tensor grad = at::zeros({planes, plane}, spread.options());
  grad.index_add_(1, index.reshape({-1}), spread);
  return grad.to(self.scalar_type()).view(self.sizes());
}

// adaptive max pooling: the same cells; positions outside a cell read as -inf, so they never win
// (a cell's first position is always inside it, and the first of equal maxima wins).
std::tuple<at::Tensor, at::Tensor> adaptive_max_pool(const at::Tensor& self, at::IntArrayRef output_size,
                                                     const PoolOp& op) {
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == op.spatial, op.name,
              "(): internal error: output_size.size() must be ", op.spatial);
  TORCH_CHECK(self.dim() == op.spatial + 1 || self.dim() == op.spatial + 2, op.name, "(): Expected ", op.spatial + 1,
              "D or ", op.spatial + 2, "D tensor, but got: ", self.sizes());
  for (int64_t d = 1; d < self.dim(); ++d)
    TORCH_CHECK(self.size(d) > 0, op.name, "(): Expected input to have non-zero size for non-batch ",
                "dimensions, but input has sizes ", self.sizes(), " with dimension ", d, " being empty");
  check_dtype(op.name, self.scalar_type(), Dtypes::Floating);
  const at::DimVector shape = pooled_shape(self, op.spatial, output_size);
  if (self.numel() == 0 || c10::multiply_integers(output_size) == 0)
    return {at::empty(shape, self.options()), at::empty(shape, self.options().dtype(c10::kLong))};
  const int64_t planes = self.numel() / plane_numel(self, op.spatial);
  auto [index, mask, area] = adaptive_windows(spatial_sizes(self, op.spatial), output_size,
                                              self.options().dtype(c10::kLong));
  at::Tensor windows = gather_windows(self.reshape({planes, -1}), index);
  windows.masked_fill_(mask.logical_not(), -std::numeric_limits<double>::infinity());
  auto [values, which] = windows.max(1);
  at::Tensor indices = index.unsqueeze(0).expand({planes, -1, -1}).gather(1, which.unsqueeze(1)).squeeze(1);
  return {values.view(shape), indices.view(shape)};
}

// --- the registered ops, 2-d and 3-d ---------------------------------------------------------

constexpr PoolOp kMaxPool2d{2, "max_pool2d"}, kMaxPool3d{3, "max_pool3d"};
constexpr PoolOp kAvgPool2d{2, "avg_pool2d"}, kAvgPool3d{3, "avg_pool3d"};
constexpr PoolOp kAdaptiveAvg2d{2, "adaptive_avg_pool2d"}, kAdaptiveAvg3d{3, "adaptive_avg_pool3d"};
constexpr PoolOp kAdaptiveMax2d{2, "adaptive_max_pool2d"}, kAdaptiveMax3d{3, "adaptive_max_pool3d"};

template <const PoolOp& Op>
std::tuple<at::Tensor, at::Tensor> max_pool_with_indices(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                         at::IntArrayRef stride, at::IntArrayRef padding,
                                                         at::IntArrayRef dilation, bool ceil_mode) {
  return pool_max(self, kernel_size, stride, padding, dilation, ceil_mode, Op);
}

template <const PoolOp& Op>
std::tuple<at::Tensor&, at::Tensor&> max_pool_with_indices_out(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                               at::IntArrayRef stride, at::IntArrayRef padding,
                                                               at::IntArrayRef dilation, bool ceil_mode,
                                                               at::Tensor& out, at::Tensor& indices) {
  return assign_outs(std::tie(out, indices), pool_max(self, kernel_size, stride, padding, dilation, ceil_mode, Op));
}

template <const PoolOp& Op>
at::Tensor max_pool_with_indices_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                          at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                          at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                                          const at::Tensor& indices) {
  return pool_max_backward(grad_output, self, indices, Op.spatial);
}

template <const PoolOp& Op>
at::Tensor& max_pool_with_indices_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                               at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                               at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode,
                                               const at::Tensor& indices, at::Tensor& grad_input) {
  return assign_out(grad_input, pool_max_backward(grad_output, self, indices, Op.spatial));
}

template <const PoolOp& Op>
at::Tensor avg_pool(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                    std::optional<int64_t> divisor_override) {
  return pool_avg(self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, Op);
}

template <const PoolOp& Op>
at::Tensor& avg_pool_out(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                         at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                         std::optional<int64_t> divisor_override, at::Tensor& out) {
  return assign_out(out, pool_avg(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                  divisor_override, Op));
}

template <const PoolOp& Op>
at::Tensor avg_pool_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
                             at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                             std::optional<int64_t> divisor_override) {
  return pool_avg_backward(grad_output, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                           divisor_override, Op);
}

template <const PoolOp& Op>
at::Tensor& avg_pool_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel_size,
                                  at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode,
                                  bool count_include_pad, std::optional<int64_t> divisor_override,
                                  at::Tensor& grad_input) {
  return assign_out(grad_input, pool_avg_backward(grad_output, self, kernel_size, stride, padding, ceil_mode,
                                                  count_include_pad, divisor_override, Op));
}

template <const PoolOp& Op>
at::Tensor adaptive_avg(const at::Tensor& self, c10::SymIntArrayRef output_size) {
  return adaptive_avg_pool(self, C10_AS_INTARRAYREF_SLOW(output_size), Op);
}

template <const PoolOp& Op>
at::Tensor& adaptive_avg_out(const at::Tensor& self, c10::SymIntArrayRef output_size, at::Tensor& out) {
  return assign_out(out, adaptive_avg_pool(self, C10_AS_INTARRAYREF_SLOW(output_size), Op));
}

template <const PoolOp& Op>
at::Tensor adaptive_avg_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  return adaptive_avg_pool_backward(grad_output, self, Op.spatial);
}

template <const PoolOp& Op>
at::Tensor& adaptive_avg_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::Tensor& out) {
  return assign_out(out, adaptive_avg_pool_backward(grad_output, self, Op.spatial));
}

template <const PoolOp& Op>
std::tuple<at::Tensor, at::Tensor> adaptive_max(const at::Tensor& self, at::IntArrayRef output_size) {
  return adaptive_max_pool(self, output_size, Op);
}

template <const PoolOp& Op>
std::tuple<at::Tensor&, at::Tensor&> adaptive_max_out(const at::Tensor& self, at::IntArrayRef output_size,
                                                      at::Tensor& out, at::Tensor& indices) {
  return assign_outs(std::tie(out, indices), adaptive_max_pool(self, output_size, Op));
}

template <const PoolOp& Op>
at::Tensor adaptive_max_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& indices) {
  return pool_max_backward(grad_output, self, indices, Op.spatial);
}

template <const PoolOp& Op>
at::Tensor& adaptive_max_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                      const at::Tensor& indices, at::Tensor& grad_input) {
  return assign_out(grad_input, pool_max_backward(grad_output, self, indices, Op.spatial));
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

// --- fractional max pooling -----------------------------------------------------------------

// The FractionalDesc of cl/fractional_pool.cl.
struct FractionalDesc {
  cl_long planes, channels;
  cl_long in[3], out[3], pool[3];
  cl_long sample_of[3];
  cl_long samples_per_plane;
};

// The CPU's argument checks and output shape come from the op's meta function.
template <int64_t Spatial>
at::Tensor fractional_meta_output(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                                  const at::Tensor& samples) {
  if constexpr (Spatial == 2)
    return std::get<0>(at::fractional_max_pool2d(linalg::meta(self), kernel_size, output_size, linalg::meta(samples)));
  else
    return std::get<0>(at::fractional_max_pool3d(linalg::meta(self), kernel_size, output_size, linalg::meta(samples)));
}

template <int64_t Spatial>
std::tuple<at::Tensor&, at::Tensor&> fractional_max_pool_out(const at::Tensor& self, at::IntArrayRef kernel_size,
                                                             at::IntArrayRef output_size, const at::Tensor& samples,
                                                             at::Tensor& out, at::Tensor& indices) {
  TORCH_CHECK(samples.device() == self.device(), "Expected all tensors to be on the same device, but found at least ",
              "two devices, ", self.device(), " and ", samples.device(), "!");
  const at::Tensor shape = fractional_meta_output<Spatial>(self, kernel_size, output_size, samples);
  TORCH_CHECK(indices.scalar_type() == c10::kLong, "Expected out tensor to have dtype long int, but got ",
              indices.scalar_type(), " instead");
  at::native::resize_output(out, shape.sizes());
  at::native::resize_output(indices, shape.sizes());
  if (out.numel() == 0) return {out, indices};
  const at::Tensor x = self.contiguous(), u = samples.contiguous();
  at::Tensor values = out.is_contiguous() ? out : at::empty(shape.sizes(), out.options());
  at::Tensor where = indices.is_contiguous() ? indices : at::empty(shape.sizes(), indices.options());
  FractionalDesc d{};
  d.planes = x.numel() / plane_numel(x, Spatial);
  d.channels = x.size(x.dim() - Spatial - 1);
  d.samples_per_plane = Spatial;
  for (int64_t k = 0; k < 3; ++k) {
    const int64_t dim = k - (3 - Spatial);  // a spatial dim, or < 0 for the padding
    d.in[k] = dim < 0 ? 1 : x.size(x.dim() - Spatial + dim);
    d.out[k] = dim < 0 ? 1 : output_size[dim];
    d.pool[k] = dim < 0 ? 1 : kernel_size[dim];
    // The CPU's samples: 2-d (width, height), 3-d (time, height, width).
    d.sample_of[k] = dim < 0 ? 0 : Spatial == 2 ? 1 - dim : dim;
  }
  const c10::ScalarType type = x.scalar_type();
  const std::string options = std::string("-DNARGS=1 -DT=") + kernels::dtype_token(type) +
                              " -DCT=" + kernels::dtype_token(kernels::compute_type(type));
  c10::DeviceGuard guard(x.device());
  runtime::Device& device = core::checked_device(x.device().index());
  runtime::Kernel& kernel = kernels::get_kernel(device, "fractional_pool.cl", options, "fractional_max_pool");
  auto ref = [&](const at::Tensor& t) { return device.memory().resolve(t.const_data_ptr()); };
  const runtime::BufferRef o = ref(values), i = ref(where), in = ref(x), s = ref(u);
  const cl_ulong oo = o.offset, io = i.offset, ino = in.offset, so = s.offset;
  const size_t local = std::min<size_t>(64, kernel.max_work_group_size);
  runtime::launch(kernel, core::current_queue(x.device().index()), (size_t(values.numel()) + local - 1) / local, local,
                  d, o.mem, oo, i.mem, io, in.mem, ino, s.mem, so);
  if (!values.is_same(out)) out.copy_(values);
  if (!where.is_same(indices)) indices.copy_(where);
  return {out, indices};
}

template <int64_t Spatial>
at::Tensor fractional_max_pool_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                        at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                                        const at::Tensor& indices) {
  TORCH_CHECK(grad_output.sizes() == indices.sizes(), "fractional_max_pool", Spatial,
              "d_backward(): gradOutput sizes unexpected");
  return pool_max_backward(grad_output, self, indices, Spatial);
}

template <int64_t Spatial>
at::Tensor& fractional_max_pool_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                             at::IntArrayRef kernel_size, at::IntArrayRef output_size,
                                             const at::Tensor& indices, at::Tensor& grad_input) {
  return assign_out(grad_input, fractional_max_pool_backward<Spatial>(grad_output, self, kernel_size, output_size,
                                                                      indices));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fractional_max_pool2d.output", TORCH_FN(fractional_max_pool_out<2>));
  m.impl("fractional_max_pool3d.output", TORCH_FN(fractional_max_pool_out<3>));
  m.impl("fractional_max_pool2d_backward.grad_input", TORCH_FN(fractional_max_pool_backward_out<2>));
  m.impl("fractional_max_pool3d_backward", TORCH_FN(fractional_max_pool_backward<3>));
  m.impl("fractional_max_pool3d_backward.grad_input", TORCH_FN(fractional_max_pool_backward_out<3>));
  m.impl("max_unpool2d", TORCH_FN(unpool_2d));
  m.impl("max_unpool2d.out", TORCH_FN(max_unpool2d_out));
  m.impl("max_unpool3d", TORCH_FN(unpool_3d));
  m.impl("max_unpool3d.out", TORCH_FN(max_unpool3d_out));
#define DB_REGISTER_POOLING(N)                                                                                   \
  m.impl("max_pool" #N "d_with_indices", TORCH_FN(max_pool_with_indices<kMaxPool##N##d>));                     \
  m.impl("max_pool" #N "d_with_indices.out", TORCH_FN(max_pool_with_indices_out<kMaxPool##N##d>));             \
  m.impl("max_pool" #N "d_with_indices_backward", TORCH_FN(max_pool_with_indices_backward<kMaxPool##N##d>));   \
  m.impl("max_pool" #N "d_with_indices_backward.grad_input",                                                   \
         TORCH_FN(max_pool_with_indices_backward_out<kMaxPool##N##d>));                                        \
  m.impl("avg_pool" #N "d", TORCH_FN(avg_pool<kAvgPool##N##d>));                                               \
  m.impl("avg_pool" #N "d.out", TORCH_FN(avg_pool_out<kAvgPool##N##d>));                                       \
  m.impl("avg_pool" #N "d_backward", TORCH_FN(avg_pool_backward<kAvgPool##N##d>));                             \
  m.impl("avg_pool" #N "d_backward.grad_input", TORCH_FN(avg_pool_backward_out<kAvgPool##N##d>));              \
  m.impl("_adaptive_avg_pool" #N "d", TORCH_FN(adaptive_avg<kAdaptiveAvg##N##d>));                             \
  m.impl("_adaptive_avg_pool" #N "d.out", TORCH_FN(adaptive_avg_out<kAdaptiveAvg##N##d>));                     \
  m.impl("_adaptive_avg_pool" #N "d_backward", TORCH_FN(adaptive_avg_backward<kAdaptiveAvg##N##d>));           \
  m.impl("_adaptive_avg_pool" #N "d_backward.out", TORCH_FN(adaptive_avg_backward_out<kAdaptiveAvg##N##d>));   \
  m.impl("adaptive_max_pool" #N "d", TORCH_FN(adaptive_max<kAdaptiveMax##N##d>));                              \
  m.impl("adaptive_max_pool" #N "d.out", TORCH_FN(adaptive_max_out<kAdaptiveMax##N##d>));                      \
  m.impl("adaptive_max_pool" #N "d_backward", TORCH_FN(adaptive_max_backward<kAdaptiveMax##N##d>));            \
  m.impl("adaptive_max_pool" #N "d_backward.grad_input", TORCH_FN(adaptive_max_backward_out<kAdaptiveMax##N##d>));
  DB_REGISTER_POOLING(2)
  DB_REGISTER_POOLING(3)
#undef DB_REGISTER_POOLING
}

}  // namespace drawbridge::ops
