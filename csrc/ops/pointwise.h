// Helpers shared by the elementwise op families (unary, binary, activations, ...).
#pragma once

#include <ATen/TensorIterator.h>
#include <c10/core/Scalar.h>

#include "kernels/pointwise_launcher.h"

namespace drawbridge::ops {

// Which dtypes an op accepts, as the CPU's dispatch macros do.
enum class Dtypes { All, Floating, IntegralAndBool, NotBool };

// NotImplementedError "<op>" not implemented for '<dtype>', as the CPU raises it.
void check_dtype(const char* op, c10::ScalarType type, Dtypes allowed);

// A scalar argument of a kernel, converted to the compute type and passed as 8 bytes (ulong).
uint64_t scalar_bits(const c10::Scalar& value, c10::ScalarType compute);

// Runs kernel `name` of cl/`file` over iter. The compute type defaults to that of the iterator's
// common dtype.
template <typename... Extra>
void run_pointwise(at::TensorIteratorBase& iter, const char* file, const char* name,
                   std::optional<c10::ScalarType> compute, const Extra&... extra) {
  if (iter.numel() == 0) return;
  c10::ScalarType ct = kernels::compute_type(compute ? *compute : iter.common_dtype());
  kernels::launch_pointwise(iter, {file, name, ct}, extra...);
}

}  // namespace drawbridge::ops
