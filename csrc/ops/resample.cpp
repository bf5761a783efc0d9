// Resampling the trailing (spatial) dims through per-dim source maps: reflection and replication
// padding, nearest(-exact), linear/bilinear/trilinear and bicubic upsampling, and their backward.
//
// Every such op is separable: output position o along a dim reads one source position (padding,
// nearest) or blends two (linear) or four (cubic), the same for every other coordinate. The maps
// are a few integers and weights per output position, computed on the host with the CPU's
// arithmetic and applied with index_select (the backward: index_add), one dim at a time, last dim
// first, so a bilinear result is w_h0 (w_w0 x00 + w_w1 x01) + w_h1 (...) as on the CPU.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "core/fallback.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"

namespace drawbridge::ops {

namespace {

// Output position o along one dim reads source index[0][o] or, for blending maps, sums
// index[k][o] times weight[k][o] over the taps k.
struct SourceMap {
  int64_t source_size = 0;
  std::vector<std::vector<int64_t>> index;
  std::vector<std::vector<double>> weight;
  explicit SourceMap(size_t taps = 1, bool blend = false) : index(taps), weight(blend ? taps : 0) {}
  bool linear() const { return !weight.empty(); }
};

at::Tensor device_longs(const std::vector<int64_t>& v, const at::Tensor& like) {
  return at::tensor(v, at::TensorOptions().dtype(c10::kLong)).to(like.device());
}

// Weights along `dim` of a tensor of rank `rank`, shaped to broadcast.
at::Tensor device_weights(const std::vector<double>& v, int64_t dim, int64_t rank, const at::Tensor& like) {
  std::vector<int64_t> shape(rank, 1);
  shape[dim] = static_cast<int64_t>(v.size());
  return at::tensor(v, at::TensorOptions().dtype(c10::kDouble)).to(like.device(), like.scalar_type()).view(shape);
}

at::Tensor resample_dim(const at::Tensor& x, int64_t dim, const SourceMap& map) {
  at::Tensor sum = x.index_select(dim, device_longs(map.index[0], x));
  if (!map.linear()) return sum;
  sum.mul_(device_weights(map.weight[0], dim, x.dim(), x));
  for (size_t k = 1; k < map.index.size(); ++k)
    sum.add_(x.index_select(dim, device_longs(map.index[k], x)).mul_(device_weights(map.weight[k], dim, x.dim(), x)));
  return sum;
}

at::Tensor resample_dim_backward(const at::Tensor& grad, int64_t dim, const SourceMap& map) {
  std::vector<int64_t> shape = grad.sizes().vec();
  shape[dim] = map.source_size;
  at::Tensor out = at::zeros(shape, grad.options());
  if (!map.linear()) return out.index_add_(dim, device_longs(map.index[0], grad), grad);
  for (size_t k = 0; k < map.index.size(); ++k)
    out.index_add_(dim, device_longs(map.index[k], grad), grad * device_weights(map.weight[k], dim, grad.dim(), grad));
  return out;
}

// maps[k] applies to dim (rank - maps.size() + k). Linear maps blend in the compute type and
// round once at the end.
at::Tensor resample(const at::Tensor& self, const std::vector<SourceMap>& maps) {
  const bool linear = maps.front().linear();
  at::Tensor x = linear ? self.to(kernels::compute_type(self.scalar_type())) : self;
  const int64_t first = self.dim() - static_cast<int64_t>(maps.size());
  for (int64_t k = static_cast<int64_t>(maps.size()) - 1; k >= 0; --k) x = resample_dim(x, first + k, maps[k]);
  return x.to(self.scalar_type()).contiguous();
}

at::Tensor resample_backward(const at::Tensor& grad_output, const std::vector<SourceMap>& maps) {
  at::Tensor g = grad_output.to(kernels::compute_type(grad_output.scalar_type()));
  const int64_t first = grad_output.dim() - static_cast<int64_t>(maps.size());
  for (size_t k = 0; k < maps.size(); ++k) g = resample_dim_backward(g, first + static_cast<int64_t>(k), maps[k]);
  return g.to(grad_output.scalar_type());
}

// ---- padding --------------------------------------------------------------------------------

enum class PadMode { Reflect, Replicate };

// padding lists (left, right) pairs from the last dim backwards, as F.pad takes them.
std::vector<SourceMap> pad_maps(const at::Tensor& self, c10::SymIntArrayRef padding, PadMode mode, int64_t dims) {
  const char* name = mode == PadMode::Reflect ? "reflection_pad" : "replication_pad";
  TORCH_CHECK(static_cast<int64_t>(padding.size()) == 2 * dims, name, dims, "d: padding size is expected to be ",
              2 * dims, ", but got: ", padding.size());
  TORCH_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2, "Expected ", dims + 1, "D or ", dims + 2,
              "D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: ",
              self.sizes());
  for (int64_t d = self.dim() == dims + 2 ? 1 : 0; d < self.dim(); ++d)
    TORCH_CHECK(self.size(d) > 0, name, dims, "d: Expected input to have non-zero size for non-batch dimensions, ",
                "but got ", self.sizes());
  std::vector<SourceMap> maps(dims);
  for (int64_t k = 0; k < dims; ++k) {
    const int64_t dim = self.dim() - dims + k;
    const int64_t n = self.size(dim);
    const int64_t left = padding[2 * (dims - 1 - k)].expect_int(), right = padding[2 * (dims - 1 - k) + 1].expect_int();
    if (mode == PadMode::Reflect)
      TORCH_CHECK(left < n && right < n, "Argument #4: Padding size should be less than the corresponding input ",
                  "dimension, but got: padding (", left, ", ", right, ") at dimension ", dim, " of input ",
                  self.sizes());
    const int64_t out = n + left + right;
    TORCH_CHECK(out >= 1, "input (", self.sizes(), ") is too small. Calculated output size along dimension ", dim,
                ": ", out);
    SourceMap& map = maps[k];
    map.source_size = n;
    for (int64_t o = 0; o < out; ++o) {
      int64_t i = o - left;
      if (mode == PadMode::Reflect)
        i = i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
      else
        i = std::min(std::max<int64_t>(i, 0), n - 1);
      map.index[0].push_back(i);
    }
  }
  return maps;
}

template <PadMode Mode, int Dims>
at::Tensor pad_nd(const at::Tensor& self, c10::SymIntArrayRef padding) {
  return resample(self, pad_maps(self, padding, Mode, Dims));
}

template <PadMode Mode, int Dims>
at::Tensor& pad_out(const at::Tensor& self, c10::SymIntArrayRef padding, at::Tensor& out) {
  return assign_out(out, pad_nd<Mode, Dims>(self, padding));
}

template <PadMode Mode, int Dims>
at::Tensor pad_backward(const at::Tensor& grad_output, const at::Tensor& self, c10::SymIntArrayRef padding) {
  return resample_backward(grad_output, pad_maps(self, padding, Mode, Dims));
}

template <PadMode Mode, int Dims>
at::Tensor& pad_backward_out(const at::Tensor& grad_output, const at::Tensor& self, c10::SymIntArrayRef padding,
                             at::Tensor& grad_input) {
  return assign_out(grad_input, pad_backward<Mode, Dims>(grad_output, self, padding));
}

// ---- upsampling -----------------------------------------------------------------------------

enum class Interp { Nearest, NearestExact, Linear, Cubic };

// The CPU's source scale: 1/scale when the caller gave one, else input/output (compute_scales_value).
template <typename T>
T scale_of(std::optional<double> scale, int64_t in, int64_t out) {
  return scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
}

// Keys' cubic convolution coefficients (A = -0.75) of the four taps around t in [0, 1).
template <typename T>
void cubic_coefficients(T t, T* w) {
  const T a = T(-0.75);
  auto inner = [a](T x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };  // |x| <= 1
  auto outer = [a](T x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };  // 1 < |x| < 2
  w[0] = outer(static_cast<T>(t + 1.0));
  w[1] = inner(t);
  const T u = static_cast<T>(1.0 - t);
  w[2] = inner(u);
  w[3] = outer(static_cast<T>(u + 1.0));
}

// The CPU computes float32 (and float16/bfloat16) maps in float and float64 maps in double.
// Its bicubic forward stores the weights in the input's dtype (`storage`), its backward does not.
template <typename T>
SourceMap interp_map(int64_t in, int64_t out, std::optional<double> scale, Interp mode, bool align_corners,
                     c10::ScalarType storage) {
  SourceMap map(mode == Interp::Cubic ? 4 : mode == Interp::Linear ? 2 : 1, mode >= Interp::Linear);
  map.source_size = in;
  for (int64_t o = 0; o < out; ++o) {
    if (mode == Interp::Nearest) {
      map.index[0].push_back(out == in       ? o
                           : out == 2 * in ? o >> 1
                                           : std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) *
                                                                                      scale_of<float>(scale, in, out))),
                                                      in - 1));
    } else if (mode == Interp::NearestExact) {
      const float s = scale_of<float>(scale, in, out);
      map.index[0].push_back(std::min(static_cast<int64_t>(std::floor((static_cast<float>(o) + 0.5f) * s)), in - 1));
    } else if (mode == Interp::Cubic) {
      const T s = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                                : scale_of<T>(scale, in, out);
      // Unlike linear, the source position is not clamped at 0: the taps are.
      const T source = align_corners ? s * static_cast<T>(o) : s * (static_cast<T>(o) + T(0.5)) - T(0.5);
      const int64_t i0 = static_cast<int64_t>(std::floor(static_cast<float>(source)));  // floorf, as the CPU's
      T w[4];
      cubic_coefficients<T>(source - static_cast<T>(i0), w);
      for (int64_t k = 0; k < 4; ++k) {
        map.index[k].push_back(std::min(std::max<int64_t>(i0 - 1 + k, 0), in - 1));
        double weight = static_cast<double>(w[k]);
        if (storage == c10::kHalf) weight = static_cast<float>(c10::Half(static_cast<float>(w[k])));
        if (storage == c10::kBFloat16) weight = static_cast<float>(c10::BFloat16(static_cast<float>(w[k])));
        map.weight[k].push_back(weight);
      }
    } else {
      const T s = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0))
                                : scale_of<T>(scale, in, out);
      const T source = align_corners ? s * static_cast<T>(o)
                                     : std::max(s * (static_cast<T>(o) + T(0.5)) - T(0.5), T(0));
      const int64_t i0 = std::min(static_cast<int64_t>(std::floor(source)), in - 1);
      const T lambda = std::min(std::max(source - static_cast<T>(i0), T(0)), T(1));
      map.index[0].push_back(i0);
      map.index[1].push_back(i0 < in - 1 ? i0 + 1 : i0);
      map.weight[0].push_back(static_cast<double>(T(1) - lambda));
      map.weight[1].push_back(static_cast<double>(lambda));
    }
  }
  return map;
}

std::vector<SourceMap> interp_maps(at::IntArrayRef input_size, c10::SymIntArrayRef output_size,
                                   const std::vector<std::optional<double>>& scales, Interp mode, bool align_corners,
                                   c10::ScalarType type, c10::ScalarType storage) {
  const size_t dims = scales.size();
  TORCH_CHECK(output_size.size() == dims, "It is expected output_size equals to ", dims, ", but got size ",
              output_size.size());
  TORCH_CHECK(input_size.size() == dims + 2, "It is expected input_size equals to ", dims + 2, ", but got size ",
              input_size.size());
  std::vector<SourceMap> maps;
  for (size_t k = 0; k < dims; ++k) {
    const int64_t in = input_size[2 + k], out = output_size[k].expect_int();
    TORCH_CHECK(in > 0 && out > 0, "Input and output sizes should be greater than 0, but got input ",
                input_size.slice(2), " output ", output_size);
    maps.push_back(type == c10::kDouble ? interp_map<double>(in, out, scales[k], mode, align_corners, storage)
                                        : interp_map<float>(in, out, scales[k], mode, align_corners, storage));
  }
  return maps;
}

at::Tensor upsample(const at::Tensor& self, c10::SymIntArrayRef output_size,
                    const std::vector<std::optional<double>>& scales, Interp mode, bool align_corners = false) {
  const int64_t dims = static_cast<int64_t>(scales.size());
  TORCH_CHECK(self.dim() == dims + 2, "Non-empty ", dims + 2, "D data tensor expected but got a tensor with sizes ",
              self.sizes());
  if (mode == Interp::Linear) check_dtype("upsample_linear", self.scalar_type(), Dtypes::Floating);
  if (mode == Interp::Cubic) check_dtype("compute_indices_weights_cubic", self.scalar_type(), Dtypes::Floating);
  std::vector<int64_t> shape = self.sizes().vec();
  for (int64_t k = 0; k < dims; ++k) shape[2 + k] = output_size[k].expect_int();
  auto maps = interp_maps(self.sizes(), output_size, scales, mode, align_corners, self.scalar_type(),
                          self.scalar_type());
  if (self.numel() == 0) return at::empty(shape, self.options());
  return resample(self, maps);
}

at::Tensor upsample_backward(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                             c10::SymIntArrayRef input_size, const std::vector<std::optional<double>>& scales,
                             Interp mode, bool align_corners = false) {
  std::vector<int64_t> in;
  for (const c10::SymInt& s : input_size) in.push_back(s.expect_int());
  // (kDouble: the weights unrounded, as the CPU's backward takes them.)
  auto maps = interp_maps(in, output_size, scales, mode, align_corners, grad_output.scalar_type(), c10::kDouble);
  if (grad_output.numel() == 0) return at::zeros(in, grad_output.options());
  return resample_backward(grad_output, maps);
}

using Scale = std::optional<double>;

// The nearest family: (self, output_size, scales...) for 1, 2 and 3 dims.
template <Interp Mode>
at::Tensor nearest1d(const at::Tensor& self, c10::SymIntArrayRef size, Scale s) {
  return upsample(self, size, {s}, Mode);
}
template <Interp Mode>
at::Tensor nearest2d(const at::Tensor& self, c10::SymIntArrayRef size, Scale h, Scale w) {
  return upsample(self, size, {h, w}, Mode);
}
template <Interp Mode>
at::Tensor nearest3d(const at::Tensor& self, c10::SymIntArrayRef size, Scale d, Scale h, Scale w) {
  return upsample(self, size, {d, h, w}, Mode);
}
template <Interp Mode>
at::Tensor& nearest2d_out(const at::Tensor& self, c10::SymIntArrayRef size, Scale h, Scale w, at::Tensor& out) {
  return assign_out(out, nearest2d<Mode>(self, size, h, w));
}
template <Interp Mode>
at::Tensor nearest1d_backward(const at::Tensor& g, c10::SymIntArrayRef size, c10::SymIntArrayRef in, Scale s) {
  return upsample_backward(g, size, in, {s}, Mode);
}
template <Interp Mode>
at::Tensor nearest2d_backward(const at::Tensor& g, c10::SymIntArrayRef size, c10::SymIntArrayRef in, Scale h,
                              Scale w) {
  return upsample_backward(g, size, in, {h, w}, Mode);
}
template <Interp Mode>
at::Tensor nearest3d_backward(const at::Tensor& g, c10::SymIntArrayRef size, c10::SymIntArrayRef in, Scale d, Scale h,
                              Scale w) {
  return upsample_backward(g, size, in, {d, h, w}, Mode);
}

at::Tensor linear1d(const at::Tensor& self, c10::SymIntArrayRef size, bool corners, Scale s) {
  return upsample(self, size, {s}, Interp::Linear, corners);
}
at::Tensor bilinear2d(const at::Tensor& self, c10::SymIntArrayRef size, bool corners, Scale h, Scale w) {
  return upsample(self, size, {h, w}, Interp::Linear, corners);
}
at::Tensor& bilinear2d_out(const at::Tensor& self, c10::SymIntArrayRef size, bool corners, Scale h, Scale w,
                           at::Tensor& out) {
  return assign_out(out, bilinear2d(self, size, corners, h, w));
}
at::Tensor trilinear3d(const at::Tensor& self, c10::SymIntArrayRef size, bool corners, Scale d, Scale h, Scale w) {
  return upsample(self, size, {d, h, w}, Interp::Linear, corners);
}
at::Tensor linear1d_backward(const at::Tensor& g, c10::SymIntArrayRef size, c10::SymIntArrayRef in, bool corners,
                             Scale s) {
  return upsample_backward(g, size, in, {s}, Interp::Linear, corners);
}
at::Tensor bilinear2d_backward(const at::Tensor& g, c10::SymIntArrayRef size, c10::SymIntArrayRef in, bool corners,
                               Scale h, Scale w) {
  return upsample_backward(g, size, in, {h, w}, Interp::Linear, corners);
}
at::Tensor trilinear3d_backward(const at::Tensor& g, c10::SymIntArrayRef size, c10::SymIntArrayRef in, bool corners,
                                Scale d, Scale h, Scale w) {
  return upsample_backward(g, size, in, {d, h, w}, Interp::Linear, corners);
}

// uint8 images the CPU resamples with fixed-point weights of its own: they run there, explicitly.
at::Tensor bicubic2d(const at::Tensor& self, c10::SymIntArrayRef size, bool corners, Scale h, Scale w) {
  if (self.scalar_type() == c10::kByte) {
    using Sig = at::Tensor(const at::Tensor&, c10::SymIntArrayRef, bool, Scale, Scale);
    auto op = core::find_aten_op("upsample_bicubic2d").typed<Sig>();
    return c10::impl::BoxedKernelWrapper<Sig>::call(c10::BoxedKernel::makeFromFunction<&core::cpu_fallback>(), op,
                                                    c10::DispatchKeySet(), self, size, corners, h, w);
  }
  // The CPU's checks, in its order, before upsample's own.
  TORCH_CHECK(size.size() == 2, "It is expected output_size equals to 2, but got size ", size.size());
  TORCH_CHECK(self.dim() == 4, "It is expected input_size equals to 4, but got size ", self.dim());
  TORCH_CHECK(self.numel() != 0 || c10::multiply_integers(self.sizes().begin() + 1, self.sizes().end()),
              "Non-empty 4D data tensor expected but got a tensor with sizes ", self.sizes());
  return upsample(self, size, {h, w}, Interp::Cubic, corners).contiguous(self.suggest_memory_format());
}
at::Tensor& bicubic2d_out(const at::Tensor& self, c10::SymIntArrayRef size, bool corners, Scale h, Scale w,
                          at::Tensor& out) {
  return assign_out(out, bicubic2d(self, size, corners, h, w), {self});
}
at::Tensor bicubic2d_backward(const at::Tensor& g, c10::SymIntArrayRef size, c10::SymIntArrayRef in, bool corners,
                              Scale h, Scale w) {
  TORCH_CHECK(size.size() == 2, "It is expected output_size equals to 2, but got size ", size.size());
  TORCH_CHECK(in.size() == 4, "It is expected input_size equals to 4, but got size ", in.size());
  TORCH_CHECK(g.dim() == 4, "Expected grad_output to be a tensor of dimension 4 but got: dimension ", g.dim());
  for (int64_t k = 0; k < 4; ++k) {
    const int64_t expected = k < 2 ? in[k].expect_int() : size[k - 2].expect_int();
    TORCH_CHECK(g.size(k) == expected, "Expected grad_output to have the same shape as output;", " output.size(", k,
                ") = ", expected, " but got grad_output.size(", k, ") = ", g.size(k));
  }
  return upsample_backward(g, size, in, {h, w}, Interp::Cubic, corners).contiguous(g.suggest_memory_format());
}
at::Tensor& bicubic2d_backward_out(const at::Tensor& g, c10::SymIntArrayRef size, c10::SymIntArrayRef in, bool corners,
                                   Scale h, Scale w, at::Tensor& grad_input) {
  return assign_out(grad_input, bicubic2d_backward(g, size, in, corners, h, w), {g});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  using P = PadMode;
  m.impl("reflection_pad1d", TORCH_FN((pad_nd<P::Reflect, 1>)));
  m.impl("reflection_pad1d.out", TORCH_FN((pad_out<P::Reflect, 1>)));
  m.impl("reflection_pad2d", TORCH_FN((pad_nd<P::Reflect, 2>)));
  m.impl("reflection_pad2d.out", TORCH_FN((pad_out<P::Reflect, 2>)));
  m.impl("reflection_pad3d", TORCH_FN((pad_nd<P::Reflect, 3>)));
  m.impl("reflection_pad3d.out", TORCH_FN((pad_out<P::Reflect, 3>)));
  m.impl("replication_pad1d", TORCH_FN((pad_nd<P::Replicate, 1>)));
  m.impl("replication_pad1d.out", TORCH_FN((pad_out<P::Replicate, 1>)));
  m.impl("replication_pad2d", TORCH_FN((pad_nd<P::Replicate, 2>)));
  m.impl("replication_pad2d.out", TORCH_FN((pad_out<P::Replicate, 2>)));
  m.impl("replication_pad3d", TORCH_FN((pad_nd<P::Replicate, 3>)));
  m.impl("replication_pad3d.out", TORCH_FN((pad_out<P::Replicate, 3>)));
  m.impl("reflection_pad1d_backward", TORCH_FN((pad_backward<P::Reflect, 1>)));
  m.impl("reflection_pad1d_backward.grad_input", TORCH_FN((pad_backward_out<P::Reflect, 1>)));
  m.impl("reflection_pad2d_backward", TORCH_FN((pad_backward<P::Reflect, 2>)));
  m.impl("reflection_pad2d_backward.grad_input", TORCH_FN((pad_backward_out<P::Reflect, 2>)));
  m.impl("reflection_pad3d_backward", TORCH_FN((pad_backward<P::Reflect, 3>)));
  m.impl("reflection_pad3d_backward.grad_input", TORCH_FN((pad_backward_out<P::Reflect, 3>)));
  m.impl("replication_pad1d_backward", TORCH_FN((pad_backward<P::Replicate, 1>)));
  m.impl("replication_pad1d_backward.grad_input", TORCH_FN((pad_backward_out<P::Replicate, 1>)));
  m.impl("replication_pad2d_backward", TORCH_FN((pad_backward<P::Replicate, 2>)));
  m.impl("replication_pad2d_backward.grad_input", TORCH_FN((pad_backward_out<P::Replicate, 2>)));
  m.impl("replication_pad3d_backward", TORCH_FN((pad_backward<P::Replicate, 3>)));
  m.impl("replication_pad3d_backward.grad_input", TORCH_FN((pad_backward_out<P::Replicate, 3>)));

  m.impl("upsample_nearest1d", TORCH_FN(nearest1d<Interp::Nearest>));
  m.impl("upsample_nearest2d", TORCH_FN(nearest2d<Interp::Nearest>));
  m.impl("upsample_nearest2d.out", TORCH_FN(nearest2d_out<Interp::Nearest>));
  m.impl("upsample_nearest3d", TORCH_FN(nearest3d<Interp::Nearest>));
  m.impl("_upsample_nearest_exact1d", TORCH_FN(nearest1d<Interp::NearestExact>));
  m.impl("_upsample_nearest_exact2d", TORCH_FN(nearest2d<Interp::NearestExact>));
  m.impl("_upsample_nearest_exact2d.out", TORCH_FN(nearest2d_out<Interp::NearestExact>));
  m.impl("_upsample_nearest_exact3d", TORCH_FN(nearest3d<Interp::NearestExact>));
  m.impl("upsample_nearest1d_backward", TORCH_FN(nearest1d_backward<Interp::Nearest>));
  m.impl("upsample_nearest2d_backward", TORCH_FN(nearest2d_backward<Interp::Nearest>));
  m.impl("upsample_nearest3d_backward", TORCH_FN(nearest3d_backward<Interp::Nearest>));
  m.impl("_upsample_nearest_exact1d_backward", TORCH_FN(nearest1d_backward<Interp::NearestExact>));
  m.impl("_upsample_nearest_exact2d_backward", TORCH_FN(nearest2d_backward<Interp::NearestExact>));
  m.impl("_upsample_nearest_exact3d_backward", TORCH_FN(nearest3d_backward<Interp::NearestExact>));
  m.impl("upsample_linear1d", TORCH_FN(linear1d));
  m.impl("upsample_bilinear2d", TORCH_FN(bilinear2d));
  m.impl("upsample_bilinear2d.out", TORCH_FN(bilinear2d_out));
  m.impl("upsample_trilinear3d", TORCH_FN(trilinear3d));
  m.impl("upsample_linear1d_backward", TORCH_FN(linear1d_backward));
  m.impl("upsample_bilinear2d_backward", TORCH_FN(bilinear2d_backward));
  m.impl("upsample_trilinear3d_backward", TORCH_FN(trilinear3d_backward));
  m.impl("upsample_bicubic2d", TORCH_FN(bicubic2d));
  m.impl("upsample_bicubic2d.out", TORCH_FN(bicubic2d_out));
  m.impl("upsample_bicubic2d_backward", TORCH_FN(bicubic2d_backward));
  m.impl("upsample_bicubic2d_backward.grad_input", TORCH_FN(bicubic2d_backward_out));
}

}  // namespace drawbridge::ops
