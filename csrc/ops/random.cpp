// Random sampling in place (cl/random.cl) with the ocl Philox generator, and dropout.
#include <ATen/ExpandUtils.h>
#include <ATen/core/DistributionsHelper.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "core/generator.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"

namespace drawbridge::ops {

namespace {

// (seed, offset) for one launch: every element takes its own counter, so one step of 4 suffices.
std::pair<uint64_t, uint64_t> next_philox(const std::optional<at::Generator>& gen, const at::Tensor& self) {
  auto* g = at::get_generator_or_default<core::PhiloxGenerator>(gen, core::default_generator(self.device().index()));
  std::lock_guard<std::mutex> lock(g->mutex_);
  return g->philox_inputs(4);
}

// Fills self with kernel `name`, computing in the floating type of self (float for integers).
at::Tensor& sample(at::Tensor& self, const char* name, const std::optional<at::Generator>& gen, double p = 0,
                   double q = 0) {
  if (self.numel() == 0) return self;
  c10::DeviceGuard guard(self.device());
  auto iter = at::TensorIterator::borrowing_nullary_op(self);
  c10::ScalarType ct = c10::isFloatingType(self.scalar_type()) ? kernels::compute_type(self.scalar_type()) : c10::kFloat;
  auto [seed, offset] = next_philox(gen, self);
  run_pointwise(iter, "random.cl", name, ct, seed, offset, scalar_bits(p, ct), scalar_bits(q, ct));
  return self;
}

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  check_dtype("uniform_", self.scalar_type(), Dtypes::Floating);
  return sample(self, "uniform", gen, from, to);
}

at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  if (self.is_complex()) {  // as the CPU: both parts drawn with std / sqrt(2), so |z - mean|^2 has mean std^2
    at::Tensor parts = at::view_as_real(self);
    normal_(parts, mean, std / std::sqrt(2.0), gen);
    return self;
  }
  check_dtype("normal_", self.scalar_type(), Dtypes::Floating);
  return sample(self, "normal", gen, mean, std);
}

at::Tensor& log_normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std > 0.0, "log_normal_ expects std > 0.0, but found std=", std);
  check_dtype("log_normal_", self.scalar_type(), Dtypes::Floating);
  return sample(self, "log_normal", gen, mean, std);
}

at::Tensor& exponential_(at::Tensor& self, double lambd, std::optional<at::Generator> gen) {
  TORCH_CHECK(lambd > 0.0, "exponential_ expects lambda > 0.0, but found lambda=", lambd);
  check_dtype("exponential_", self.scalar_type(), Dtypes::Floating);
  return sample(self, "exponential", gen, lambd);
}

at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK(0 < p && p < 1, "geometric_ expects p to be in (0, 1), but got p=", p);
  return sample(self, "geometric", gen, p);
}

at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> gen) {
  TORCH_CHECK(sigma > 0.0, "cauchy_ expects sigma > 0.0, but found sigma=", sigma);
  check_dtype("cauchy_", self.scalar_type(), Dtypes::Floating);
  return sample(self, "cauchy", gen, median, sigma);
}

at::Tensor& bernoulli_scalar_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  TORCH_CHECK(0 <= p && p <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", p);
  return sample(self, "bernoulli", gen, p);
}

at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> gen) {
  if (self.numel() == 0) return self;
  c10::DeviceGuard guard(self.device());
  at::Tensor probability = p.to(self.device());
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .resize_outputs(false)
                  .add_output(self)
                  .add_const_input(probability)
                  .build();
  c10::ScalarType ct = c10::isFloatingType(p.scalar_type()) ? kernels::compute_type(p.scalar_type()) : c10::kFloat;
  auto [seed, offset] = next_philox(gen, self);
  run_pointwise(iter, "random.cl", "bernoulli_tensor", ct, seed, offset);
  return self;
}

at::Tensor bernoulli(const at::Tensor& self, std::optional<at::Generator> gen) {
  at::Tensor out = at::empty_like(self);
  return bernoulli_tensor_(out, self, gen);
}

// random_: integers in [from, to), computed in int64 and converted to self's dtype.
at::Tensor& random_range_(at::Tensor& self, int64_t from, uint64_t range, const std::optional<at::Generator>& gen) {
  TORCH_CHECK(range > 0, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=",
              from + static_cast<int64_t>(range));
  if (self.numel() == 0) return self;
  c10::DeviceGuard guard(self.device());
  auto iter = at::TensorIterator::borrowing_nullary_op(self);
  auto [seed, offset] = next_philox(gen, self);
  run_pointwise(iter, "random.cl", "random_range", c10::kLong, seed, offset, from, range);
  return self;
}

// The default upper bound of random_: 2^mantissa for floating types, the type's max + 1 for integers.
uint64_t default_range(c10::ScalarType type) {
  switch (type) {
    case c10::kBool: return 2;
    case c10::kByte: return 256;
    case c10::kChar: return 128;
    case c10::kShort: return 1ull << 15;
    case c10::kInt: return 1ull << 31;
    case c10::kLong: return 1ull << 63;
    case c10::kHalf: return (1ull << 11) + 1;
    case c10::kBFloat16: return (1ull << 8) + 1;
    case c10::kFloat: return (1ull << 24) + 1;
    case c10::kDouble: return (1ull << 53) + 1;
    default: TORCH_CHECK(false, "random_ is not implemented for ", type);
  }
}

at::Tensor& random_from_(at::Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen) {
  uint64_t range = to ? static_cast<uint64_t>(*to - from) : default_range(self.scalar_type()) - static_cast<uint64_t>(from);
  return random_range_(self, from, range, gen);
}

at::Tensor& random_to_(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return random_range_(self, 0, static_cast<uint64_t>(to), gen);
}

at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen) {
  return random_range_(self, 0, default_range(self.scalar_type()), gen);
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  if (!train.value_or(true) || p == 0) return {input.clone(), at::ones_like(input, input.options().dtype(c10::kBool))};
  at::Tensor mask = at::empty_like(input, input.options().dtype(c10::kBool));
  if (p == 1) return {at::zeros_like(input), mask.zero_()};
  bernoulli_scalar_(mask, 1 - p, std::nullopt);
  return {input * mask * (1.0 / (1 - p)), mask};
}

at::Tensor native_dropout_backward(const at::Tensor& grad, const at::Tensor& mask, double scale) {
  return grad * mask * scale;
}

// randperm: the order that sorts n random 64-bit keys (stable, so ties cannot break determinism).
at::Tensor& randperm_out(int64_t n, std::optional<at::Generator> gen, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  at::native::resize_output(out, {n});
  if (n == 0) return out;
  at::Tensor keys = at::empty({n}, out.options().dtype(c10::kLong));
  random_(keys, gen);
  return out.copy_(std::get<1>(keys.sort(std::optional<bool>(true), 0)));
}

// multinomial: with replacement by inverting the cumulative distribution; without, by the
// exponential race (the categories with the largest p / Exp(1)), as PyTorch's CPU kernel draws.
at::Tensor& multinomial_out(const at::Tensor& self, int64_t n, bool replacement, std::optional<at::Generator> gen,
                            at::Tensor& out) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), "multinomial only supports floating-point dtypes for input, got: ",
              self.scalar_type());
  TORCH_CHECK(n > 0, "cannot sample n_sample <= 0 samples");
  TORCH_CHECK(out.scalar_type() == c10::kLong, "multinomial expects Long tensor out, got: ", out.scalar_type());
  const int64_t categories = self.size(-1);
  TORCH_CHECK(replacement || n <= categories, "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  at::Tensor probs = self.dim() == 1 ? self.unsqueeze(0) : self;
  at::Tensor p = probs.to(kernels::compute_type(self.scalar_type()));
  // Invalid distributions raise, as on the CPU: one synchronization for both checks.
  at::Tensor sums = p.sum(-1, /*keepdim=*/true);
  at::Tensor flags = at::stack({p.isfinite().logical_not().logical_or_(p < 0).any(), (sums <= 0).any()}).cpu();
  TORCH_CHECK(!flags[0].item<bool>(), "probability tensor contains either `inf`, `nan` or element < 0");
  TORCH_CHECK(!flags[1].item<bool>(), "invalid multinomial distribution (sum of probabilities <= 0)");
  at::Tensor result;
  if (replacement) {
    at::Tensor cdf = p.div(sums).cumsum(-1);
    at::Tensor u = at::empty({p.size(0), n}, p.options());
    uniform_(u, 0, 1, gen);
    result = at::searchsorted(cdf, u, false, /*right=*/true).clamp_max_(categories - 1);
  } else {
    at::Tensor race = at::empty_like(p);
    exponential_(race, 1, gen);
    result = std::get<1>(p.div(race).topk(n, -1));
  }
  if (self.dim() == 1) result = result.squeeze(0);
  return assign_out(out, result, {self});
}
at::Tensor multinomial(const at::Tensor& self, int64_t n, bool replacement, std::optional<at::Generator> gen) {
  at::Tensor out = at::empty({0}, self.options().dtype(c10::kLong));
  return multinomial_out(self, n, replacement, gen, out);
}

// normal with tensor mean and/or std: mean + std * N(0, 1), broadcast.
at::Tensor normal_tensors(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  TORCH_CHECK(!std.is_complex(), "normal expects standard deviation to be non-complex");
  TORCH_CHECK(std.numel() == 0 || !(std < 0).any().item<bool>(), "normal expects all elements of std >= 0.0");
  at::Tensor noise = at::empty(at::infer_size(mean.sizes(), std.sizes()),
                               mean.options().dtype(at::promote_types(mean.scalar_type(), std.scalar_type())));
  normal_(noise, 0, 1, gen);
  return noise.mul_(std).add_(mean);
}
at::Tensor normal_tensor_float(const at::Tensor& mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  at::Tensor noise = at::empty_like(mean, at::MemoryFormat::Contiguous);
  normal_(noise, 0, std, gen);
  return noise.add_(mean);
}
at::Tensor normal_float_tensor(double mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std.numel() == 0 || !(std < 0).any().item<bool>(), "normal expects all elements of std >= 0.0");
  at::Tensor noise = at::empty_like(std, at::MemoryFormat::Contiguous);
  normal_(noise, 0, 1, gen);
  return noise.mul_(std).add_(mean);
}
at::Tensor& normal_tensors_out(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen,
                               at::Tensor& out) {
  at::Tensor r = normal_tensors(mean, std, gen);
  return assign_out(out, r);
}
at::Tensor& normal_tensor_float_out(const at::Tensor& mean, double std, std::optional<at::Generator> gen,
                                    at::Tensor& out) {
  at::Tensor r = normal_tensor_float(mean, std, gen);
  return assign_out(out, r);
}
at::Tensor& normal_float_tensor_out(double mean, const at::Tensor& std, std::optional<at::Generator> gen,
                                    at::Tensor& out) {
  at::Tensor r = normal_float_tensor(mean, std, gen);
  return assign_out(out, r);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("uniform_", TORCH_FN(uniform_));
  m.impl("normal_", TORCH_FN(normal_));
  m.impl("log_normal_", TORCH_FN(log_normal_));
  m.impl("exponential_", TORCH_FN(exponential_));
  m.impl("geometric_", TORCH_FN(geometric_));
  m.impl("cauchy_", TORCH_FN(cauchy_));
  m.impl("bernoulli_.float", TORCH_FN(bernoulli_scalar_));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulli_tensor_));
  m.impl("bernoulli", TORCH_FN(bernoulli));
  m.impl("random_.from", TORCH_FN(random_from_));
  m.impl("random_.to", TORCH_FN(random_to_));
  m.impl("random_", TORCH_FN(random_));
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
  m.impl("randperm.generator_out", TORCH_FN(randperm_out));
  m.impl("multinomial", TORCH_FN(multinomial));
  m.impl("multinomial.out", TORCH_FN(multinomial_out));
  m.impl("normal.Tensor_Tensor", TORCH_FN(normal_tensors));
  m.impl("normal.Tensor_Tensor_out", TORCH_FN(normal_tensors_out));
  m.impl("normal.Tensor_float", TORCH_FN(normal_tensor_float));
  m.impl("normal.Tensor_float_out", TORCH_FN(normal_tensor_float_out));
  m.impl("normal.float_Tensor", TORCH_FN(normal_float_tensor));
  m.impl("normal.float_Tensor_out", TORCH_FN(normal_float_tensor_out));
}

}  // namespace drawbridge::ops
