// The CPU fallback for ops with no native ocl kernel (DESIGN.md, decision 8).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/library.h>

namespace drawbridge::core {

enum class FallbackMode { Warn, Error, Silent };

FallbackMode fallback_mode();
// Accounts for an op that runs on the CPU by explicit code (not through the boxed fallback):
// raises NotImplementedError in error mode, warns once in warn mode, counts it in the report.
void note_fallback(const std::string& op);
void set_fallback_mode(FallbackMode mode);
std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();

// The boxed CPU fallback every op without an ocl kernel goes through (counted and warned).
void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack);
const c10::OperatorHandle& find_aten_op(const std::string& registered_name);  // "mul.Tensor", "abs"

// Native kernels take real dtypes. register_real_kernel registers one for an aten op so that,
// given a complex tensor or scalar, the op runs through cpu_fallback instead, as if it had no
// ocl kernel (counted, warned, forbidden by DRAWBRIDGE_FALLBACK=error).
inline bool is_complex_arg(const at::Tensor& t) { return t.defined() && t.is_complex(); }
inline bool is_complex_arg(const std::optional<at::Tensor>& t) { return t && is_complex_arg(*t); }
inline bool is_complex_arg(const c10::Scalar& s) { return s.isComplex(); }
inline bool is_complex_arg(const std::optional<c10::Scalar>& s) { return s && s->isComplex(); }
inline bool is_complex_arg(const std::optional<c10::ScalarType>& t) { return t && c10::isComplexType(*t); }
template <class T>
bool is_complex_arg(const T&) {
  return false;
}

// `Variant` tells apart the registrations of one kernel for several ops.
template <auto Kernel, int Variant, class Sig = typename c10::guts::infer_function_traits_t<decltype(Kernel)>::func_type>
struct RealKernel;

template <auto Kernel, int Variant, class Return, class... Args>
struct RealKernel<Kernel, Variant, Return(Args...)> {
  static std::string& op_name() {  // as registered: "mul.Tensor"; set during static initialization
    static std::string name;
    return name;
  }
  static Return call(Args... args) {
    if (!(is_complex_arg(args) || ...)) return Kernel(std::forward<Args>(args)...);
    auto op = find_aten_op(op_name()).typed<Return(Args...)>();
    return c10::impl::BoxedKernelWrapper<Return(Args...)>::call(c10::BoxedKernel::makeFromFunction<&cpu_fallback>(),
                                                                op, c10::DispatchKeySet(), std::forward<Args>(args)...);
  }
};

template <auto Kernel, int Variant = 0>
void register_real_kernel(torch::Library& m, const char* op_name) {
  std::string& name = RealKernel<Kernel, Variant>::op_name();
  TORCH_INTERNAL_ASSERT(name.empty() || name == op_name, "one kernel registered for two ops: ", name, ", ", op_name);
  name = op_name;
  m.impl(op_name, TORCH_FN((RealKernel<Kernel, Variant>::call)));
}

}  // namespace drawbridge::core
