// Helpers shared by the elementwise op families (unary, binary, activations, ...).
#pragma once

#include <cstring>

#include <ATen/TensorIterator.h>
#include <c10/core/Scalar.h>

#include "kernels/pointwise_launcher.h"

namespace drawbridge::ops {

// Which dtypes an op accepts, as the CPU's dispatch macros do.
enum class Dtypes { All, Floating, Integral, IntegralAndBool, NotBool };

// NotImplementedError "<op>" not implemented for '<dtype>', as the CPU raises it.
void check_dtype(const char* op, c10::ScalarType type, Dtypes allowed);

// A scalar argument of a kernel, converted to the compute type and passed as 8 bytes (ulong): a
// float's bits in the low bytes, an integer widened to 64 bits, so that the widened programs of
// small integer launches (kernels/pointwise_launcher.cpp, run_in_int64) read the same value.
uint64_t scalar_bits(const c10::Scalar& value, c10::ScalarType compute);

// The bits `value` has when stored in dtype `type`, converted as the CPU's fill_ does (with its
// overflow check when `checked`); passed to kernels that store raw bits.
struct ElementBits {
  alignas(16) uint8_t bytes[16] = {};
  size_t size = 0;
  runtime::KernelArg arg() const { return {size, bytes}; }
};
ElementBits element_bits(const c10::Scalar& value, c10::ScalarType type, bool checked = true);

// Runs kernel `name` of cl/`file` over iter, a kernel that may take run-time operand dtypes
// (KernelSpec::dynamic_dtypes). The compute type defaults to that of the iterator's common dtype.
template <typename... Extra>
void run_pointwise(at::TensorIteratorBase& iter, const char* file, const char* name,
                   std::optional<c10::ScalarType> compute, const Extra&... extra) {
  if (iter.numel() == 0) return;
  c10::ScalarType ct = kernels::compute_type(compute ? *compute : iter.common_dtype());
  kernels::KernelSpec spec{file, name, ct};
  spec.dynamic_dtypes = true;
  spec.widen_integers = std::strcmp(file, "unary.cl") == 0 || std::strcmp(file, "binary.cl") == 0 ||
                        std::strcmp(file, "ternary.cl") == 0;
  kernels::launch_pointwise(iter, spec, extra...);
}

}  // namespace drawbridge::ops
