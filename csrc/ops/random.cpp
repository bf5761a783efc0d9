// Random sampling in place (cl/random.cl) with the ocl Philox generator, and dropout.
#include <ATen/core/DistributionsHelper.h>
#include <torch/library.h>

#include "core/generator.h"
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
}

}  // namespace drawbridge::ops
