// One implementation, the three ATen forms of an op, as PyTorch's structured kernels derive
// theirs from one out= implementation. Two shapes of implementation:
//   register_variants<&impl>     impl(at::Tensor out, const at::Tensor& first, args...) computes
//                                into `out` (allocating the result when `out` is undefined) and
//                                returns the result;
//   register_from_out<&kernel>   kernel(const at::Tensor& first, args..., at::Tensor& out) is the
//                                out= form itself and resizes `out` (at::native::resize_output);
//                                for ops whose result has `first`'s dtype, which the functional
//                                form's empty result takes (on the op's device).
// Either registers the functional form, the in-place form (the first argument is written) and the
// out= form (out comes last) under the schemas' names, nullptr where the op has no such form. By
// default each is a real kernel (core/fallback.h: complex arguments take the CPU fallback);
// ComplexArgs::Native registers kernels that handle complex tensors themselves.
#pragma once

#include <type_traits>

#include <ATen/core/Tensor.h>
#include <c10/util/TypeList.h>
#include <torch/library.h>

#include "core/fallback.h"

namespace drawbridge::ops {

enum class ComplexArgs { Fallback, Native };

template <auto Kernel>
void register_form(torch::Library& m, const char* name, ComplexArgs complex) {
  if (!name) return;
  if (complex == ComplexArgs::Native)
    m.impl(name, TORCH_FN(Kernel));
  else
    core::register_real_kernel<Kernel>(m, name);
}

template <auto Impl>
struct Variants;

template <typename... Rest, at::Tensor (*Impl)(at::Tensor, const at::Tensor&, Rest...)>
struct Variants<Impl> {
  static at::Tensor functional(const at::Tensor& first, Rest... rest) { return Impl(at::Tensor(), first, rest...); }
  static at::Tensor& in_place(at::Tensor& self, Rest... rest) {
    Impl(self, self, rest...);
    return self;
  }
  static at::Tensor& out(const at::Tensor& first, Rest... rest, at::Tensor& result) {
    Impl(result, first, rest...);
    return result;
  }
};

template <auto Impl>
void register_variants(torch::Library& m, const char* functional, const char* in_place, const char* out,
                       ComplexArgs complex = ComplexArgs::Fallback) {
  register_form<&Variants<Impl>::functional>(m, functional, complex);
  register_form<&Variants<Impl>::in_place>(m, in_place, complex);
  register_form<&Variants<Impl>::out>(m, out, complex);
}

namespace detail {
template <auto Kernel>
using ParametersOf = typename c10::guts::infer_function_traits_t<decltype(Kernel)>::parameter_types;
// All of Kernel's parameters but the trailing out.
template <auto Kernel>
using LeadingOf = c10::guts::typelist::take_t<ParametersOf<Kernel>, c10::guts::typelist::size<ParametersOf<Kernel>>::value - 1>;

// `first`'s dtype on the op's device: the first tensor argument's that is not on the CPU (a CPU
// scalar may come first, as addmm's bias).
template <typename... Rest>
at::TensorOptions result_options(const at::Tensor& first, const Rest&... rest) {
  c10::Device device = first.device();
  auto consider = [&](const auto& arg) {
    if constexpr (std::is_same_v<std::decay_t<decltype(arg)>, at::Tensor>)
      if (device.is_cpu() && arg.defined()) device = arg.device();
  };
  (consider(rest), ...);
  return first.options().device(device);
}

template <auto Kernel, class Leading = LeadingOf<Kernel>>
struct FromOut;

template <auto Kernel, typename... Rest>
struct FromOut<Kernel, c10::guts::typelist::typelist<const at::Tensor&, Rest...>> {
  static at::Tensor functional(const at::Tensor& first, Rest... rest) {
    at::Tensor out = at::empty({0}, result_options(first, rest...));
    return Kernel(first, rest..., out);
  }
  static at::Tensor& in_place(at::Tensor& self, Rest... rest) { return Kernel(self, rest..., self); }
};
}  // namespace detail

template <auto Kernel>
void register_from_out(torch::Library& m, const char* functional, const char* in_place, const char* out,
                       ComplexArgs complex = ComplexArgs::Fallback) {
  register_form<&detail::FromOut<Kernel>::functional>(m, functional, complex);
  register_form<&detail::FromOut<Kernel>::in_place>(m, in_place, complex);
  register_form<Kernel>(m, out, complex);
}

}  // namespace drawbridge::ops
