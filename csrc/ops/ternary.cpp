// Ternary elementwise ops (cl/ternary.cl): where, addcmul, addcdiv, lerp.
#include <torch/library.h>

#include "ops/pointwise.h"
#include "ops/variants.h"

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

at::Tensor clamp_min_tensor_impl(at::Tensor out, const at::Tensor& self, const at::Tensor& lo) {
  return clamp_tensor_impl(out, self, lo, std::nullopt);
}
at::Tensor clamp_max_tensor_impl(at::Tensor out, const at::Tensor& self, const at::Tensor& hi) {
  return clamp_tensor_impl(out, self, std::nullopt, hi);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  register_variants<&where_impl>(m, "where.self", nullptr, "where.self_out");
  register_variants<&addc_impl<false>>(m, "addcmul", "addcmul_", "addcmul.out");
  register_variants<&addc_impl<true>>(m, "addcdiv", "addcdiv_", "addcdiv.out");
  register_variants<&lerp_scalar_impl>(m, "lerp.Scalar", "lerp_.Scalar", "lerp.Scalar_out");
  register_variants<&lerp_tensor_impl>(m, "lerp.Tensor", "lerp_.Tensor", "lerp.Tensor_out");
  register_variants<&clamp_tensor_impl>(m, "clamp.Tensor", "clamp_.Tensor", "clamp.Tensor_out");
  register_variants<&clamp_min_tensor_impl>(m, "clamp_min.Tensor", nullptr, "clamp_min.Tensor_out");
  register_variants<&clamp_max_tensor_impl>(m, "clamp_max.Tensor", nullptr, "clamp_max.Tensor_out");
}

}  // namespace drawbridge::ops
