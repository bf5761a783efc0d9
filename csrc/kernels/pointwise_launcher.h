// The one launcher for elementwise kernels (DESIGN.md, decision 3).
//
// at::TensorIterator does the host work (broadcasting, type promotion, output allocation,
// dimension coalescing); the launcher turns its shape and byte strides into the IterDesc of
// common.clh and runs one work-item per element (on CPU devices, strided iterations run in chunks
// of consecutive elements per work-item, see CHUNK in common.clh). A kernel is instantiated per operand dtype:
// the launcher defines T0 (the output), T1.. (the inputs) and CT (the compute type) as dtype
// tokens, so mixed-dtype operands are converted as they are loaded; for kernels with
// dynamic_dtypes, the dtypes of a small iteration's operands and of mixed inputs are run-time
// values instead (CUDA's dynamic casting), so one program serves them all. An input that is a CPU
// scalar (a Python number) travels inside the IterDesc.
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
// Launches of at most this many elements read and write every operand through a run-time dtype
// and find their CPU scalars at run time, where their kernels allow it (KernelSpec::dynamic_dtypes);
// small reductions of inputs not of the compute type's dtype read them through a run-time dtype.
constexpr uint64_t kSmallIteration = 2048;

struct KernelSpec {
  const char* file;            // under csrc/kernels/cl
  const char* name;            // kernel function
  c10::ScalarType compute;     // what the kernel computes in (CT); Half/BFloat16 compute in Float
  std::string options = {};    // further -D options
  bool raw = false;            // operands are raw bits (r8..r128) of their element size
  // Operands may be read and written through a dtype given at run time (token dyn<k> of
  // common.clh): every operand of a small iteration (kSmallIteration), and longer iterations'
  // inputs of differing dtypes. Only for kernels that touch operand
  // k through its token T<k> alone (INPUT, OUTPUT, LOAD/STORE with T<k>) in the kernel body,
  // never through its C type or its element size, and whose work is more than loads (a dynamic
  // load is a switch).
  bool dynamic_dtypes = false;
  // With dynamic_dtypes: a small launch whose operands are all integers or bool may compute in
  // int64 instead of a narrower integer type (pointwise_launcher.cpp, run_in_int64). Only for
  // kernels whose integer results are then the same, and which size no buffer or step by the
  // compute type (the unary, binary, ternary and row families, and dtype-converting copies).
  bool widen_integers = false;
  // Elements behind each element of the iteration (a row kernel walks a whole row), for what counts
  // as a small iteration.
  uint64_t row_length = 1;
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
