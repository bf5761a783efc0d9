// Ternary elementwise ops (cl/ternary.cl): where, addcmul, addcdiv, lerp.
#include <torch/library.h>

#include "core/fallback.h"
#include "ops/pointwise.h"

namespace drawbridge::ops {

namespace {

at::TensorIterator promoting(at::Tensor& out, std::initializer_list<const at::Tensor*> inputs) {
  at::TensorIteratorConfig config;
  config.add_output(out)
      .promote_inputs_to_common_dtype(true)
      .cast_common_dtype_to_outputs(true)
      .enforce_safe_casting_to_output(true)
      .allow_cpu_scalars(true);
  for (const at::Tensor* t : inputs) config.add_const_input(*t);
  return config.build();
}

at::Tensor where_impl(at::Tensor out, const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(cond.scalar_type() == c10::kBool || cond.scalar_type() == c10::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ", cond.scalar_type());
  c10::ScalarType result = at::result_type(self, other);
  if (out.defined()) {
    TORCH_CHECK(out.scalar_type() == result, "Expected out type to be ", result, " but got ", out.scalar_type());
  } else {
    out = at::empty({0}, self.options().dtype(result).device(cond.is_cpu() ? self.device() : cond.device()));
  }
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .add_output(out)
                  .add_const_input(cond)
                  .add_const_input(self)
                  .add_const_input(other)
                  .allow_cpu_scalars(true)
                  .build();
  check_dtype("where", result, Dtypes::All);
  run_pointwise(iter, "ternary.cl", "t_where", result);
  return iter.output();
}
at::Tensor where(const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other) {
  return where_impl({}, cond, self, other);
}
at::Tensor& where_out(const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  where_impl(out, cond, self, other);
  return out;
}

template <bool Divide>
at::Tensor addc_impl(at::Tensor out, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                     const c10::Scalar& value) {
  if (Divide) {
    TORCH_CHECK(!(c10::isIntegralType(t1.scalar_type(), true) && c10::isIntegralType(t2.scalar_type(), true)),
                "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
                "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
                "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
                "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  }
  auto iter = promoting(out, {&self, &t1, &t2});
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  check_dtype(Divide ? "addcdiv" : "addcmul", compute, Divide ? Dtypes::Floating : Dtypes::All);
  run_pointwise(iter, "ternary.cl", Divide ? "t_addcdiv" : "t_addcmul", compute, scalar_bits(value, compute));
  return iter.output();
}
template <bool Divide>
at::Tensor addc(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value) {
  return addc_impl<Divide>({}, self, t1, t2, value);
}
template <bool Divide>
at::Tensor& addc_(at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value) {
  addc_impl<Divide>(self, self, t1, t2, value);
  return self;
}
template <bool Divide>
at::Tensor& addc_out(const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2, const c10::Scalar& value,
                     at::Tensor& out) {
  addc_impl<Divide>(out, self, t1, t2, value);
  return out;
}

at::Tensor lerp_tensor_impl(at::Tensor out, const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
  TORCH_CHECK(self.dtype() == end.dtype(), "expected dtype ", self.dtype(), " for `end` but got dtype ", end.dtype());
  TORCH_CHECK(self.dtype() == weight.dtype(), "expected dtype ", self.dtype(), " for `weight` but got dtype ",
              weight.dtype());
  auto iter = promoting(out, {&self, &end, &weight});
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  check_dtype("lerp", compute, Dtypes::Floating);
  run_pointwise(iter, "ternary.cl", "t_lerp", compute, uint64_t(0));  // p is unused
  return iter.output();
}
at::Tensor lerp_scalar_impl(at::Tensor out, const at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight) {
  TORCH_CHECK(self.dtype() == end.dtype(), "expected dtype ", self.dtype(), " for `end` but got dtype ", end.dtype());
  auto iter = promoting(out, {&self, &end});
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  check_dtype("lerp", compute, Dtypes::Floating);
  run_pointwise(iter, "binary.cl", "b_lerp_scalar", compute, scalar_bits(weight, compute));
  return iter.output();
}
template <typename W>
at::Tensor lerp_any(at::Tensor out, const at::Tensor& self, const at::Tensor& end, const W& weight) {
  if constexpr (std::is_same_v<W, at::Tensor>) return lerp_tensor_impl(out, self, end, weight);
  else return lerp_scalar_impl(out, self, end, weight);
}
template <typename W>
at::Tensor lerp(const at::Tensor& self, const at::Tensor& end, const W& weight) {
  return lerp_any<W>({}, self, end, weight);
}
template <typename W>
at::Tensor& lerp_(at::Tensor& self, const at::Tensor& end, const W& weight) {
  lerp_any<W>(self, self, end, weight);
  return self;
}
template <typename W>
at::Tensor& lerp_out(const at::Tensor& self, const at::Tensor& end, const W& weight, at::Tensor& out) {
  lerp_any<W>(out, self, end, weight);
  return out;
}

// clamp with tensor bounds: min(max(self, lo), hi), NaN in self propagating (as the CPU).
at::Tensor clamp_tensor_impl(at::Tensor out, const at::Tensor& self, const std::optional<at::Tensor>& lo,
                             const std::optional<at::Tensor>& hi) {
  bool has_lo = lo && lo->defined(), has_hi = hi && hi->defined();
  TORCH_CHECK(has_lo || has_hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
  if (has_lo && has_hi) {
    auto iter = promoting(out, {&self, &*lo, &*hi});
    c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
    check_dtype("clamp", compute, Dtypes::NotBool);
    run_pointwise(iter, "ternary.cl", "t_clamp", compute, uint64_t(0));
    return iter.output();
  }
  auto iter = promoting(out, {&self, has_lo ? &*lo : &*hi});
  c10::ScalarType compute = kernels::compute_type(iter.common_dtype());
  check_dtype("clamp", compute, Dtypes::All);
  run_pointwise(iter, "binary.cl", has_lo ? "b_clamp_min" : "b_clamp_max", compute);
  return iter.output();
}
at::Tensor clamp_tensor(const at::Tensor& self, const std::optional<at::Tensor>& lo,
                        const std::optional<at::Tensor>& hi) {
  return clamp_tensor_impl({}, self, lo, hi);
}
at::Tensor& clamp_tensor_out(const at::Tensor& self, const std::optional<at::Tensor>& lo,
                             const std::optional<at::Tensor>& hi, at::Tensor& out) {
  clamp_tensor_impl(out, self, lo, hi);
  return out;
}
at::Tensor& clamp_tensor_(at::Tensor& self, const std::optional<at::Tensor>& lo, const std::optional<at::Tensor>& hi) {
  clamp_tensor_impl(self, self, lo, hi);
  return self;
}
at::Tensor clamp_min_tensor(const at::Tensor& self, const at::Tensor& lo) { return clamp_tensor_impl({}, self, lo, std::nullopt); }
at::Tensor& clamp_min_tensor_out(const at::Tensor& self, const at::Tensor& lo, at::Tensor& out) {
  clamp_tensor_impl(out, self, lo, std::nullopt);
  return out;
}
at::Tensor clamp_max_tensor(const at::Tensor& self, const at::Tensor& hi) { return clamp_tensor_impl({}, self, std::nullopt, hi); }
at::Tensor& clamp_max_tensor_out(const at::Tensor& self, const at::Tensor& hi, at::Tensor& out) {
  clamp_tensor_impl(out, self, std::nullopt, hi);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  core::register_real_kernel<&where>(m, "where.self");
  core::register_real_kernel<&where_out>(m, "where.self_out");
  core::register_real_kernel<&addc<false>>(m, "addcmul");
  core::register_real_kernel<&addc_<false>>(m, "addcmul_");
  core::register_real_kernel<&addc_out<false>>(m, "addcmul.out");
  core::register_real_kernel<&addc<true>>(m, "addcdiv");
  core::register_real_kernel<&addc_<true>>(m, "addcdiv_");
  core::register_real_kernel<&addc_out<true>>(m, "addcdiv.out");
  core::register_real_kernel<&lerp<c10::Scalar>>(m, "lerp.Scalar");
  core::register_real_kernel<&lerp_<c10::Scalar>>(m, "lerp_.Scalar");
  core::register_real_kernel<&lerp_out<c10::Scalar>>(m, "lerp.Scalar_out");
  core::register_real_kernel<&lerp<at::Tensor>>(m, "lerp.Tensor");
  core::register_real_kernel<&lerp_<at::Tensor>>(m, "lerp_.Tensor");
  core::register_real_kernel<&lerp_out<at::Tensor>>(m, "lerp.Tensor_out");
  core::register_real_kernel<&clamp_tensor>(m, "clamp.Tensor");
  core::register_real_kernel<&clamp_tensor_>(m, "clamp_.Tensor");
  core::register_real_kernel<&clamp_tensor_out>(m, "clamp.Tensor_out");
  core::register_real_kernel<&clamp_min_tensor>(m, "clamp_min.Tensor");
  core::register_real_kernel<&clamp_min_tensor_out>(m, "clamp_min.Tensor_out");
  core::register_real_kernel<&clamp_max_tensor>(m, "clamp_max.Tensor");
  core::register_real_kernel<&clamp_max_tensor_out>(m, "clamp_max.Tensor_out");
}

}  // namespace drawbridge::ops
