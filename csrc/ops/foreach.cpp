// The _foreach_* ops optimizers use (the default `foreach` steps of Adam, AdamW and SGD, and
// clip_grad_norm_'s norms and scaling), each in a few launches of cl/foreach.cl instead of one per tensor.
// Lists the multi-tensor kernels cannot take (mixed dtypes or devices, non-contiguous tensors,
// integers, complex scalars, partial overlaps) go through PyTorch's per-tensor loop, which
// dispatches to the single-tensor ops and raises their errors.
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/_foreach_add_native.h>
#include <ATen/ops/_foreach_addcdiv_native.h>
#include <ATen/ops/_foreach_addcmul_native.h>
#include <ATen/ops/_foreach_div_native.h>
#include <ATen/ops/_foreach_lerp_native.h>
#include <ATen/ops/_foreach_mul_native.h>
#include <ATen/ops/_foreach_norm_native.h>
#include <ATen/ops/_foreach_sqrt_native.h>
#include <ATen/ops/_foreach_zero_native.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "kernels/multi_tensor_launcher.h"
#include "ops/pointwise.h"

namespace drawbridge::ops {

namespace {

using kernels::ForeachOp;
using Lists = std::vector<at::TensorList>;

// Whether `lists` take the multi-tensor kernels. An in-place op writes lists[0], which must not
// partly overlap an input (the per-tensor ops raise for that).
bool fast(const Lists& lists, bool inplace, std::initializer_list<c10::Scalar> scalars = {}) {
  for (const c10::Scalar& s : scalars)
    if (s.isComplex()) return false;
  if (!kernels::multi_tensor_applies(lists)) return false;
  if (!inplace) return true;
  // A tensor written twice (the same tensor twice in the list) is updated twice in turn by the
  // per-tensor loop; the multi-tensor kernel would race.
  std::unordered_set<const void*> written;
  for (const at::Tensor& t : lists[0])
    if (t.numel() > 0 && !written.insert(t.const_data_ptr()).second) return false;
  for (size_t j = 1; j < lists.size(); ++j)
    for (size_t k = 0; k < lists[0].size(); ++k)
      if (at::get_overlap_status(lists[0][k], lists[j][k]) == at::MemOverlapStatus::Partial) return false;
  return true;
}

bool fast_scalars(const Lists& lists, bool inplace, at::ArrayRef<c10::Scalar> scalars) {
  if (scalars.size() != lists[0].size()) return false;
  for (const c10::Scalar& s : scalars)
    if (s.isComplex()) return false;
  return fast(lists, inplace);
}

c10::ScalarType compute_of(at::TensorList self) { return kernels::compute_type(self[0].scalar_type()); }

std::vector<uint64_t> one(const c10::Scalar& s, at::TensorList self) { return {scalar_bits(s, compute_of(self))}; }

std::vector<uint64_t> each(at::ArrayRef<c10::Scalar> scalars, at::TensorList self) {
  std::vector<uint64_t> bits;
  for (const c10::Scalar& s : scalars) bits.push_back(scalar_bits(s, compute_of(self)));
  return bits;
}

std::vector<at::Tensor> outputs_like(at::TensorList self) {
  std::vector<at::Tensor> out;
  out.reserve(self.size());
  for (const at::Tensor& t : self) out.push_back(at::empty_like(t));
  return out;
}

// A functional op: the outputs become list 0, before the inputs.
std::vector<at::Tensor> apply(ForeachOp op, Lists inputs, const std::vector<uint64_t>& bits,
                              const std::optional<at::Tensor>& scalar_tensor = {}) {
  std::vector<at::Tensor> out = outputs_like(inputs[0]);
  inputs.insert(inputs.begin(), out);
  kernels::launch_foreach(op, inputs, /*inplace=*/false, bits, scalar_tensor);
  return out;
}

// ---- add / mul / div with a scalar, a list of scalars or a list of tensors -------------------

#define SCALAR_VARIANTS(name, opcode)                                                              \
  void name##_scalar_(at::TensorList self, const c10::Scalar& s) {                                 \
    if (!fast({self}, true, {s})) return at::native::foreach_tensor_##name##_scalar_kernel_slow_(self, s); \
    kernels::launch_foreach(opcode, {self}, true, one(s, self));                                   \
  }                                                                                                \
  std::vector<at::Tensor> name##_scalar(at::TensorList self, const c10::Scalar& s) {               \
    if (!fast({self}, false, {s})) return at::native::foreach_tensor_##name##_scalar_kernel_slow(self, s); \
    return apply(opcode, {self}, one(s, self));                                                    \
  }                                                                                                \
  void name##_scalarlist_(at::TensorList self, at::ArrayRef<c10::Scalar> s) {                      \
    if (!fast_scalars({self}, true, s)) return at::native::foreach_tensor_##name##_scalarlist_kernel_slow_(self, s); \
    kernels::launch_foreach(opcode, {self}, true, each(s, self));                                  \
  }                                                                                                \
  std::vector<at::Tensor> name##_scalarlist(at::TensorList self, at::ArrayRef<c10::Scalar> s) {    \
    if (!fast_scalars({self}, false, s)) return at::native::foreach_tensor_##name##_scalarlist_kernel_slow(self, s); \
    return apply(opcode, {self}, each(s, self));                                                   \
  }
SCALAR_VARIANTS(add, ForeachOp::add_scalar)
SCALAR_VARIANTS(mul, ForeachOp::mul_scalar)
SCALAR_VARIANTS(div, ForeachOp::div_scalar)
#undef SCALAR_VARIANTS

void add_list_(at::TensorList self, at::TensorList other, const c10::Scalar& alpha) {
  if (!fast({self, other}, true, {alpha})) return at::native::foreach_tensor_add_list_kernel_slow_(self, other, alpha);
  kernels::launch_foreach(ForeachOp::add_list, {self, other}, true, one(alpha, self));
}
std::vector<at::Tensor> add_list(at::TensorList self, at::TensorList other, const c10::Scalar& alpha) {
  if (!fast({self, other}, false, {alpha})) return at::native::foreach_tensor_add_list_kernel_slow(self, other, alpha);
  return apply(ForeachOp::add_list, {self, other}, one(alpha, self));
}

#define LIST_VARIANTS(name, opcode)                                                                \
  void name##_list_(at::TensorList self, at::TensorList other) {                                   \
    if (!fast({self, other}, true)) return at::native::foreach_tensor_##name##_list_kernel_slow_(self, other); \
    kernels::launch_foreach(opcode, {self, other}, true, {});                                      \
  }                                                                                                \
  std::vector<at::Tensor> name##_list(at::TensorList self, at::TensorList other) {                 \
    if (!fast({self, other}, false)) return at::native::foreach_tensor_##name##_list_kernel_slow(self, other); \
    return apply(opcode, {self, other}, {});                                                       \
  }
LIST_VARIANTS(mul, ForeachOp::mul_list)
LIST_VARIANTS(div, ForeachOp::div_list)
#undef LIST_VARIANTS

// A 0-d tensor factor (clip_grad_norm_'s coefficient): read on the device, or from the CPU once.
bool fast_tensor(at::TensorList self, const at::Tensor& other, bool inplace) {
  return fast({self}, inplace) && other.dim() == 0 && !other.is_complex() && !other.requires_grad() &&
         (other.is_cpu() || other.device() == self[0].device());
}
std::optional<at::Tensor> on_device(const at::Tensor& other) {
  return other.is_cpu() ? std::nullopt : std::optional<at::Tensor>(other);
}
std::vector<uint64_t> cpu_value(const at::Tensor& other, at::TensorList self) {
  return other.is_cpu() ? one(other.item(), self) : std::vector<uint64_t>{};
}
void mul_tensor_(at::TensorList self, const at::Tensor& other) {
  if (!fast_tensor(self, other, true)) return at::native::foreach_tensor_mul_tensor_kernel_slow_(self, other);
  kernels::launch_foreach(ForeachOp::mul_scalar, {self}, true, cpu_value(other, self), on_device(other));
}
std::vector<at::Tensor> mul_tensor(at::TensorList self, const at::Tensor& other) {
  // A 0-d factor does not promote a floating list: the results keep the list's dtype.
  if (!fast_tensor(self, other, false)) return at::native::foreach_tensor_mul_tensor_kernel_slow(self, other);
  return apply(ForeachOp::mul_scalar, {self}, cpu_value(other, self), on_device(other));
}

// ---- lerp, addcmul, addcdiv, sqrt, zero ---------------------------------------------------------

void lerp_scalar_(at::TensorList self, at::TensorList end, const c10::Scalar& weight) {
  if (!fast({self, end}, true, {weight})) return at::native::foreach_tensor_lerp_list_kernel_slow_(self, end, weight);
  kernels::launch_foreach(ForeachOp::lerp_scalar, {self, end}, true, one(weight, self));
}
std::vector<at::Tensor> lerp_scalar(at::TensorList self, at::TensorList end, const c10::Scalar& weight) {
  if (!fast({self, end}, false, {weight})) return at::native::foreach_tensor_lerp_list_kernel_slow(self, end, weight);
  return apply(ForeachOp::lerp_scalar, {self, end}, one(weight, self));
}

#define POINTWISE_VARIANTS(name, opcode)                                                           \
  void name##_scalar_(at::TensorList self, at::TensorList t1, at::TensorList t2, const c10::Scalar& v) { \
    if (!fast({self, t1, t2}, true, {v})) return at::native::foreach_tensor_##name##_scalar_slow_(self, t1, t2, v); \
    kernels::launch_foreach(opcode, {self, t1, t2}, true, one(v, self));                           \
  }                                                                                                \
  std::vector<at::Tensor> name##_scalar(at::TensorList self, at::TensorList t1, at::TensorList t2,   \
                                        const c10::Scalar& v) {                                    \
    if (!fast({self, t1, t2}, false, {v})) return at::native::foreach_tensor_##name##_scalar_slow(self, t1, t2, v); \
    return apply(opcode, {self, t1, t2}, one(v, self));                                            \
  }                                                                                                \
  void name##_scalarlist_(at::TensorList self, at::TensorList t1, at::TensorList t2,                 \
                          at::ArrayRef<c10::Scalar> s) {                                           \
    if (!fast_scalars({self, t1, t2}, true, s))                                                    \
      return at::native::foreach_tensor_##name##_scalarlist_slow_(self, t1, t2, s);                \
    kernels::launch_foreach(opcode, {self, t1, t2}, true, each(s, self));                          \
  }                                                                                                \
  std::vector<at::Tensor> name##_scalarlist(at::TensorList self, at::TensorList t1, at::TensorList t2, \
                                            at::ArrayRef<c10::Scalar> s) {                         \
    if (!fast_scalars({self, t1, t2}, false, s))                                                   \
      return at::native::foreach_tensor_##name##_scalarlist_slow(self, t1, t2, s);                 \
    return apply(opcode, {self, t1, t2}, each(s, self));                                           \
  }
POINTWISE_VARIANTS(addcmul, ForeachOp::addcmul)
POINTWISE_VARIANTS(addcdiv, ForeachOp::addcdiv)
#undef POINTWISE_VARIANTS

void sqrt_(at::TensorList self) {
  if (!fast({self}, true)) return at::native::foreach_tensor_sqrt_slow_(self);
  kernels::launch_foreach(ForeachOp::sqrt, {self}, true, {});
}
std::vector<at::Tensor> sqrt(at::TensorList self) {
  if (!fast({self}, false)) return at::native::foreach_tensor_sqrt_slow(self);
  return apply(ForeachOp::sqrt, {self}, {});
}

// ---- norms (clip_grad_norm_) -----------------------------------------------------------------

std::vector<at::Tensor> norm(at::TensorList self, const c10::Scalar& ord, std::optional<c10::ScalarType> dtype) {
  const double p = ord.isComplex() ? -1 : ord.toDouble();
  const int kind = p == 1 ? 1 : p == 2 ? 2 : std::isinf(p) && p > 0 ? 0 : -1;
  // The per-tensor loop also raises the CPU's error for an infinity norm of an empty tensor.
  const bool empty_max = kind == 0 && std::any_of(self.begin(), self.end(), [](const at::Tensor& t) {
    return t.numel() == 0;
  });
  if (kind < 0 || empty_max || !fast({self}, false) || (dtype && *dtype != self[0].scalar_type()))
    return at::native::foreach_tensor_norm_slow(self, ord, dtype);
  at::Tensor norms = kernels::launch_foreach_norm(self, kind).to(self[0].scalar_type());
  std::vector<at::Tensor> out;
  out.reserve(self.size());
  for (int64_t k = 0; k < norms.numel(); ++k) out.push_back(norms[k]);  // views, as CUDA returns them
  return out;
}

void zero_(at::TensorList self) {
  if (!fast({self}, true)) return at::native::foreach_tensor_zero_slow_(self);
  kernels::launch_foreach(ForeachOp::zero, {self}, true, {});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_foreach_add_.Scalar", TORCH_FN(add_scalar_));
  m.impl("_foreach_add.Scalar", TORCH_FN(add_scalar));
  m.impl("_foreach_add_.ScalarList", TORCH_FN(add_scalarlist_));
  m.impl("_foreach_add.ScalarList", TORCH_FN(add_scalarlist));
  m.impl("_foreach_add_.List", TORCH_FN(add_list_));
  m.impl("_foreach_add.List", TORCH_FN(add_list));
  m.impl("_foreach_mul_.Scalar", TORCH_FN(mul_scalar_));
  m.impl("_foreach_mul.Scalar", TORCH_FN(mul_scalar));
  m.impl("_foreach_mul_.ScalarList", TORCH_FN(mul_scalarlist_));
  m.impl("_foreach_mul.ScalarList", TORCH_FN(mul_scalarlist));
  m.impl("_foreach_mul_.List", TORCH_FN(mul_list_));
  m.impl("_foreach_mul.List", TORCH_FN(mul_list));
  m.impl("_foreach_mul_.Tensor", TORCH_FN(mul_tensor_));
  m.impl("_foreach_mul.Tensor", TORCH_FN(mul_tensor));
  m.impl("_foreach_div_.Scalar", TORCH_FN(div_scalar_));
  m.impl("_foreach_div.Scalar", TORCH_FN(div_scalar));
  m.impl("_foreach_div_.ScalarList", TORCH_FN(div_scalarlist_));
  m.impl("_foreach_div.ScalarList", TORCH_FN(div_scalarlist));
  m.impl("_foreach_div_.List", TORCH_FN(div_list_));
  m.impl("_foreach_div.List", TORCH_FN(div_list));
  m.impl("_foreach_lerp_.Scalar", TORCH_FN(lerp_scalar_));
  m.impl("_foreach_lerp.Scalar", TORCH_FN(lerp_scalar));
  m.impl("_foreach_addcmul_.Scalar", TORCH_FN(addcmul_scalar_));
  m.impl("_foreach_addcmul.Scalar", TORCH_FN(addcmul_scalar));
  m.impl("_foreach_addcmul_.ScalarList", TORCH_FN(addcmul_scalarlist_));
  m.impl("_foreach_addcmul.ScalarList", TORCH_FN(addcmul_scalarlist));
  m.impl("_foreach_addcdiv_.Scalar", TORCH_FN(addcdiv_scalar_));
  m.impl("_foreach_addcdiv.Scalar", TORCH_FN(addcdiv_scalar));
  m.impl("_foreach_addcdiv_.ScalarList", TORCH_FN(addcdiv_scalarlist_));
  m.impl("_foreach_addcdiv.ScalarList", TORCH_FN(addcdiv_scalarlist));
  m.impl("_foreach_sqrt_", TORCH_FN(sqrt_));
  m.impl("_foreach_sqrt", TORCH_FN(sqrt));
  m.impl("_foreach_zero_", TORCH_FN(zero_));
  m.impl("_foreach_norm.Scalar", TORCH_FN(norm));
}

}  // namespace drawbridge::ops
