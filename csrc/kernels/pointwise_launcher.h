// The one launcher for elementwise kernels (DESIGN.md, decision 3).
//
// at::TensorIterator does the host work (broadcasting, type promotion, output allocation,
// dimension coalescing); the launcher turns its shape and byte strides into the IterDesc of
// common.clh and runs one work-item per element (on CPU devices, strided iterations run in chunks
// of consecutive elements per work-item, see CHUNK in common.clh). A kernel is instantiated per operand dtype:
// the launcher defines T0 (the output), T1.. (the inputs) and CT (the compute type) as dtype
// tokens, so mixed-dtype operands are converted as they are loaded; for kernels with
// dynamic_inputs, a mixed input's dtype is a run-time value instead (CUDA's dynamic casting), so
// one program serves every mix. An input that is a CPU scalar (a Python number) travels inside
// the IterDesc.
//
// Kernels take (IterDesc, then a buffer and a byte offset per operand, outputs first, then any
// extra arguments).
#pragma once

#include <string>
#include <vector>

#include <ATen/TensorIterator.h>

#include "runtime/commands.h"

namespace drawbridge::kernels {

constexpr int kMaxDims = 10;      // matches MAX_DIMS in common.clh
constexpr int kMaxOperands = 10;  // the most operands common.clh's element_offsets takes

struct KernelSpec {
  const char* file;            // under csrc/kernels/cl
  const char* name;            // kernel function
  c10::ScalarType compute;     // what the kernel computes in (CT); Half/BFloat16 compute in Float
  std::string options = {};    // further -D options
  bool raw = false;            // operands are raw bits (r8..r128) of their element size
  // Inputs of differing dtypes are read through a dtype given at run time (common.clh's
  // DYNAMIC_MASK), so one program serves every mix. Only for kernels that read their inputs
  // through INPUT(k) alone (not INPUT_RAW or the operand's type).
  bool dynamic_inputs = false;
};

// The type a kernel computes in for values of `type`, as PyTorch's opmath_type.
c10::ScalarType compute_type(c10::ScalarType type);

void launch_pointwise_impl(at::TensorIteratorBase& iter, const KernelSpec& spec,
                           c10::ArrayRef<runtime::KernelArg> extra);

template <typename... Extra>
void launch_pointwise(at::TensorIteratorBase& iter, const KernelSpec& spec, const Extra&... extra) {
  static_assert((std::is_trivially_copyable_v<Extra> && ...), "kernel arguments are passed by value");
  launch_pointwise_impl(iter, spec, {runtime::KernelArg{sizeof(Extra), &extra}...});
}

}  // namespace drawbridge::kernels
