// layer_norm and batch_norm, forward and backward: layer_norm's normalization (and its input's
// gradient) and batch_norm (forward, and backward in training) as one kernel each (ops/row.h),
// the rest composed of native kernels. Statistics are
// computed in float32 for float16/bfloat16 inputs (as the CPU and CUDA do) and the results are
// cast back; batch_norm updates the running statistics in place with the unbiased variance.
// renorm rescales slices by their norms.
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "ops/pointwise.h"
#include "ops/row.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

at::Tensor wide(const at::Tensor& t) { return t.to(kernels::compute_type(t.scalar_type())); }

bool present(const std::optional<at::Tensor>& t) { return t && t->defined(); }

// The row kernels of cl/softmax.cl serve float32, float16 and bfloat16 inputs whose weight and bias
// share their dtype (statistics in float32); the composition below serves the rest (float64 keeps
// its statistics in float64).
bool rows_kernel_serves(const at::Tensor& input, const std::optional<at::Tensor>& weight,
                        const std::optional<at::Tensor>& bias) {
  const c10::ScalarType type = input.scalar_type();
  if (type != c10::kFloat && type != c10::kHalf && type != c10::kBFloat16) return false;
  return (!present(weight) || weight->scalar_type() == type) && (!present(bias) || bias->scalar_type() == type);
}

at::Tensor flat_or_undefined(const std::optional<at::Tensor>& t) {
  return present(t) ? t->contiguous().view({-1}) : at::Tensor();
}

// ---- layer_norm -----------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(const at::Tensor& input,
                                                                 at::IntArrayRef normalized_shape,
                                                                 const std::optional<at::Tensor>& weight,
                                                                 const std::optional<at::Tensor>& bias, double eps) {
  TORCH_CHECK(!normalized_shape.empty(), "Expected normalized_shape to be at least 1-dimensional, i.e., ",
              "containing at least one element, but got normalized_shape = ", normalized_shape);
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(axis >= 0 && input.sizes().slice(axis) == normalized_shape, "Given normalized_shape=",
              normalized_shape, ", expected input with shape [*, ", normalized_shape, "], but got input of size",
              input.sizes());
  TORCH_CHECK(!present(weight) || weight->sizes() == normalized_shape, "Expected weight to be of same shape as ",
              "normalized_shape, but got weight of shape ", weight->sizes(), " and normalized_shape = ",
              normalized_shape);
  TORCH_CHECK(!present(bias) || bias->sizes() == normalized_shape, "Expected bias to be of same shape as ",
              "normalized_shape, but got bias of shape ", bias->sizes(), " and normalized_shape = ", normalized_shape);
  at::DimVector stat_shape(input.sizes().begin(), input.sizes().begin() + axis);
  stat_shape.append(normalized_shape.size(), 1);
  const int64_t rows = c10::multiply_integers(input.sizes().slice(0, axis));
  const int64_t cols = c10::multiply_integers(normalized_shape);
  if (rows == 0 || cols == 0)
    return {at::empty_like(input), at::empty(stat_shape, input.options()), at::empty(stat_shape, input.options())};
  if (rows_kernel_serves(input, weight, bias)) {
    at::Tensor out = at::empty(input.sizes(), input.options());
    at::Tensor stats = at::empty({2, rows}, input.options().dtype(c10::kFloat));
    layer_norm_rows(out.view({rows, cols}), input.contiguous().view({rows, cols}), flat_or_undefined(weight),
                    flat_or_undefined(bias), eps, stats[0], stats[1]);
    return {out, stats[0].view(stat_shape).to(input.scalar_type()), stats[1].view(stat_shape).to(input.scalar_type())};
  }
  at::Tensor x = wide(input).reshape({rows, cols});
  auto [var, mean] = at::var_mean(x, {1}, /*correction=*/0, /*keepdim=*/true);
  at::Tensor rstd = var.add_(eps).rsqrt_();
  at::Tensor out = (x - mean).mul_(rstd).view(input.sizes());
  if (present(weight)) out.mul_(*weight);
  if (present(bias)) out.add_(*bias);
  return {out.to(input.scalar_type()), mean.view(stat_shape).to(input.scalar_type()),
          rstd.view(stat_shape).to(input.scalar_type())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, at::IntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    std::array<bool, 3> output_mask) {
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  const int64_t rows = c10::multiply_integers(input.sizes().slice(0, axis));
  const int64_t cols = c10::multiply_integers(normalized_shape);
  at::Tensor m = wide(mean).reshape({rows, 1}).contiguous(), r = wide(rstd).reshape({rows, 1}).contiguous();
  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0] && rows_kernel_serves(input, weight, std::nullopt) &&
      grad_out.scalar_type() == input.scalar_type()) {
    grad_input = at::empty(input.sizes(), input.options());
    layer_norm_backward_rows(grad_input.view({rows, cols}), grad_out.contiguous().view({rows, cols}),
                             input.contiguous().view({rows, cols}), m.view({rows}), r.view({rows}),
                             flat_or_undefined(weight));
    output_mask[0] = false;
  }
  const bool weight_grad = output_mask[1] && present(weight), bias_grad = output_mask[2] && present(bias);
  if (!output_mask[0] && !weight_grad && !bias_grad) return {grad_input, grad_weight, grad_bias};
  at::Tensor x = wide(input).reshape({rows, cols}), g = wide(grad_out).reshape({rows, cols});
  at::Tensor x_hat = (x - m).mul_(r);
  if (output_mask[0]) {
    at::Tensor gw = present(weight) ? g * wide(*weight).reshape({1, -1}) : g;
    at::Tensor dx = gw - gw.mean(1, true) - x_hat * (gw * x_hat).mean(1, true);
    grad_input = dx.mul_(r).view(input.sizes()).to(input.scalar_type());
  }
  if (weight_grad) grad_weight = (g * x_hat).sum(0).view(normalized_shape).to(weight->scalar_type());
  if (bias_grad) grad_bias = g.sum(0).view(normalized_shape).to(bias->scalar_type());
  return {grad_input, grad_weight, grad_bias};
}

// ---- group_norm (the forward is PyTorch's composite of native ops) ----------------------------

// Per group, the layer-norm gradient over (C/group) x HxW values; the affine weight is per channel.
std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean, const at::Tensor& rstd,
    const std::optional<at::Tensor>& weight, c10::SymInt n_sym, c10::SymInt c_sym, c10::SymInt hw_sym, int64_t group,
    std::array<bool, 3> output_mask) {
  const int64_t n = n_sym.expect_int(), c = c_sym.expect_int(), hw = hw_sym.expect_int();
  TORCH_CHECK(group > 0 && c % group == 0, "Expected number of channels in input to be divisible by num_groups, but ",
              "got input of shape ", input.sizes(), " and num_groups=", group);
  TORCH_CHECK(input.numel() == n * c * hw, "Expected input to have ", n * c * hw, " elements, got ", input.sizes());
  at::Tensor grad_input, grad_weight, grad_bias;
  if (input.numel() == 0) {
    if (output_mask[0]) grad_input = at::zeros_like(input);
    if (output_mask[1] && present(weight)) grad_weight = at::zeros({c}, weight->options());
    if (output_mask[2] && present(weight)) grad_bias = at::zeros({c}, weight->options());
    return {grad_input, grad_weight, grad_bias};
  }
  at::Tensor x = wide(input).reshape({n, group, -1}), g = wide(grad_out).reshape({n, c, hw});
  at::Tensor m = wide(mean).reshape({n, group, 1}), r = wide(rstd).reshape({n, group, 1});
  at::Tensor x_hat = (x - m).mul_(r);
  if (output_mask[0]) {
    at::Tensor gw = (present(weight) ? g * wide(*weight).reshape({1, c, 1}) : g).reshape({n, group, -1});
    at::Tensor dx = gw - gw.mean(2, true) - x_hat * (gw * x_hat).mean(2, true);
    grad_input = dx.mul_(r).view(input.sizes()).to(input.scalar_type());
  }
  const c10::ScalarType affine_type = present(weight) ? weight->scalar_type() : input.scalar_type();
  if (output_mask[1]) grad_weight = (g * x_hat.view({n, c, hw})).sum({0, 2}).to(affine_type);
  if (output_mask[2]) grad_bias = g.sum({0, 2}).to(affine_type);
  return {grad_input, grad_weight, grad_bias};
}

// ---- batch_norm -----------------------------------------------------------------------------

// The dimensions batch_norm reduces over (all but the channel dimension 1), and the shape that
// broadcasts a per-channel vector against the input.
std::vector<int64_t> reduce_dims(const at::Tensor& input) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  return dims;
}
at::DimVector channel_shape(const at::Tensor& input) {
  at::DimVector shape(input.dim(), 1);
  shape[1] = input.size(1);
  return shape;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_forward(const at::Tensor& input,
                                                                  const std::optional<at::Tensor>& weight,
                                                                  const std::optional<at::Tensor>& bias,
                                                                  const std::optional<at::Tensor>& running_mean,
                                                                  const std::optional<at::Tensor>& running_var,
                                                                  bool training, double momentum, double eps) {
  TORCH_CHECK(input.dim() >= 2, "batch_norm: expected an input with at least 2 dimensions, got ", input.dim());
  const int64_t channels = input.size(1);
  auto check_vector = [&](const std::optional<at::Tensor>& t, const char* name) {
    TORCH_CHECK(!present(t) || t->numel() == channels, name, " should contain ", channels, " elements not ",
                present(t) ? t->numel() : 0);
  };
  check_vector(weight, "weight");
  check_vector(bias, "bias");
  check_vector(running_mean, "running_mean");
  check_vector(running_var, "running_var");
  // As on the CPU: the saved statistics have the input's dtype (normalizing used them unrounded,
  // as CUDA does), and evaluation saves none.
  auto saved = [&](const at::Tensor& stat) {
    return training ? stat.to(input.scalar_type()) : at::empty({0}, input.options());
  };
  auto update_running_stats = [&](const at::Tensor& mean, const at::Tensor& var) {
    const int64_t n = channels == 0 ? 0 : input.numel() / channels;
    at::NoGradGuard no_grad;
    if (present(running_mean))
      running_mean->mul_(1 - momentum).add_(mean.to(running_mean->scalar_type()), momentum);
    if (present(running_var))
      running_var->mul_(1 - momentum)
          .add_((var * (static_cast<double>(n) / (n - 1))).to(running_var->scalar_type()), momentum);
  };
  if (training) {
    TORCH_CHECK(channels == 0 || input.numel() / channels > 1,
                "Expected more than 1 value per channel when training, got input size ", input.sizes());
  }
  if (rows_kernel_serves(input, weight, bias) && (training || (present(running_mean) && present(running_var)))) {
    at::Tensor x = input.contiguous(), out = at::empty(input.sizes(), input.options());
    at::Tensor stats = at::empty({3, channels}, input.options().dtype(c10::kFloat));
    if (!training) {
      stats[0].copy_(*running_mean);
      stats[1].copy_(*running_var);
    }
    batch_norm_channels(out, x, flat_or_undefined(weight), flat_or_undefined(bias), eps, stats[0], stats[1], stats[2],
                        /*given_stats=*/!training);
    if (training) update_running_stats(stats[0], stats[1]);
    return {out, saved(stats[0]), saved(stats[2])};
  }
  at::Tensor x = wide(input);
  auto shape = channel_shape(input);
  at::Tensor mean, invstd;
  if (training) {
    auto [var, batch_mean] = at::var_mean(x, reduce_dims(input), /*correction=*/0, /*keepdim=*/false);
    mean = batch_mean;
    invstd = (var + eps).rsqrt_();
    update_running_stats(mean, var);
  } else {
    TORCH_CHECK(present(running_mean) && present(running_var),
                "running_mean and running_var must be defined in evaluation mode");
    mean = wide(*running_mean);
    invstd = (wide(*running_var) + eps).rsqrt_();
  }
  at::Tensor out = (x - mean.view(shape)).mul_(invstd.view(shape));
  if (present(weight)) out.mul_(wide(*weight).view(shape));
  if (present(bias)) out.add_(wide(*bias).view(shape));
  return {out.to(input.scalar_type()), saved(mean), saved(invstd)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward_impl(
    const at::Tensor& grad_out, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd, bool train, double eps,
    std::array<bool, 3> output_mask) {
  if (train && rows_kernel_serves(input, weight, std::nullopt) && grad_out.scalar_type() == input.scalar_type()) {
    const int64_t channels = input.size(1);
    at::Tensor stats = at::empty({4, channels}, input.options().dtype(c10::kFloat));
    stats[0].copy_(*save_mean);
    stats[1].copy_(*save_invstd);
    at::Tensor grad_input = output_mask[0] ? at::empty(input.sizes(), input.options()) : at::Tensor();
    batch_norm_backward_channels(grad_input, grad_out.contiguous(), input.contiguous(), stats[0], stats[1],
                                 flat_or_undefined(weight), stats[2], stats[3]);
    const c10::ScalarType type = present(weight) ? weight->scalar_type() : c10::kFloat;
    return {grad_input, output_mask[1] ? stats[2].to(type) : at::Tensor(),
            output_mask[2] ? stats[3].to(type) : at::Tensor()};
  }
  auto shape = channel_shape(input);
  auto dims = reduce_dims(input);
  at::Tensor x = wide(input), g = wide(grad_out);
  at::Tensor mean = train ? wide(*save_mean) : wide(*running_mean);
  at::Tensor invstd = train ? wide(*save_invstd) : (wide(*running_var) + eps).rsqrt_();
  at::Tensor x_hat = (x - mean.view(shape)).mul_(invstd.view(shape));
  at::Tensor scale = present(weight) ? wide(*weight).view(shape) * invstd.view(shape) : invstd.view(shape);
  at::Tensor grad_input, grad_weight, grad_bias;
  if (output_mask[0]) {
    at::Tensor dx = train ? g - g.mean(dims, true) - x_hat * (g * x_hat).mean(dims, true) : g.clone();
    grad_input = dx.mul_(scale).to(input.scalar_type());
  }
  if (output_mask[1]) {
    grad_weight = (g * x_hat).sum(dims);
    if (present(weight)) grad_weight = grad_weight.to(weight->scalar_type());
  }
  if (output_mask[2]) {
    grad_bias = g.sum(dims);
    if (present(weight)) grad_bias = grad_bias.to(weight->scalar_type());
  }
  return {grad_input, grad_weight, grad_bias};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps) {
  return batch_norm_forward(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit(const at::Tensor& input,
                                                                const std::optional<at::Tensor>& weight,
                                                                const std::optional<at::Tensor>& bias,
                                                                at::Tensor& running_mean, at::Tensor& running_var,
                                                                bool training, double momentum, double eps) {
  return batch_norm_forward(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_legit_no_stats(const at::Tensor& input,
                                                                         const std::optional<at::Tensor>& weight,
                                                                         const std::optional<at::Tensor>& bias,
                                                                         bool training, double momentum, double eps) {
  return batch_norm_forward(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps) {
  auto [out, mean, invstd] = batch_norm_forward(input, weight, bias, running_mean, running_var, true, momentum, eps);
  return {out, mean, invstd, at::empty({0}, input.options().dtype(c10::kByte))};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const std::optional<at::Tensor>& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_invstd, bool train, double eps,
    std::array<bool, 3> output_mask) {
  return batch_norm_backward_impl(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd, train,
                                  eps, output_mask);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const at::Tensor& reserve) {
  return batch_norm_backward_impl(grad_out, input, weight, running_mean, running_var, save_mean, save_var, update, eps,
                                  output_mask);
}

// ---- renorm --------------------------------------------------------------------------------

// Each slice along `dim` whose p-norm exceeds maxnorm scaled down to it (the CPU's factor
// maxnorm / (norm + 1e-7)); norms of float16/bfloat16 slices in float32, as on the CPU.
at::Tensor& renorm_impl(const at::Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm,
                       at::Tensor& out) {
  TORCH_CHECK(!p.isComplex(), "renorm: p must be real-valued");
  TORCH_CHECK(p.toDouble() > 0.0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(!maxnorm.isComplex(), "renorm: maxnorm must be real-valued");
  TORCH_CHECK(maxnorm.toDouble() >= 0.0, "renorm: expected maxnorm to be >= 0 but got ", maxnorm.toDouble());
  const int64_t ndim = self.dim();
  TORCH_CHECK(ndim > 1, "renorm: input needs at least 2 dimensions, got ", ndim, " dimensions");
  dim = at::maybe_wrap_dim(dim, ndim);
  at::DimVector reduce;
  for (int64_t d = 0; d < ndim; ++d)
    if (d != dim) reduce.push_back(d);
  at::Tensor norm = at::linalg_vector_norm(self, p, reduce, /*keepdim=*/true, kernels::compute_type(self.scalar_type()));
  const double limit = maxnorm.toDouble();
  at::Tensor factor = at::where(norm > limit, limit / (norm + 1e-7), at::ones({}, norm.options()));
  at::Tensor result = self * factor.to(self.scalar_type());
  if (!out.is_same(self)) at::native::resize_output(out, self.sizes());
  return out.copy_(result);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  register_from_out<&renorm_impl>(m, "renorm", "renorm_", "renorm.out", ComplexArgs::Native);
  m.impl("native_layer_norm", TORCH_FN(native_layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(native_layer_norm_backward));
  m.impl("native_group_norm_backward", TORCH_FN(native_group_norm_backward));
  m.impl("native_batch_norm", TORCH_FN(native_batch_norm));
  m.impl("native_batch_norm_backward", TORCH_FN(native_batch_norm_backward));
  m.impl("_native_batch_norm_legit", TORCH_FN(batch_norm_legit));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(batch_norm_legit_no_stats));
  m.impl("_batch_norm_with_update", TORCH_FN(batch_norm_with_update));
  m.impl("batch_norm_backward", TORCH_FN(batch_norm_backward));
}

}  // namespace drawbridge::ops
