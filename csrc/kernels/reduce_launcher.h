// The one launcher for reductions (cl/reduce.cl).
//
// The iterator comes from at::native::make_reduction: its outputs have stride 0 along the
// reduced dimensions. Those dimensions become the "inner" loop of a work-group; the others
// number the output elements. When there are few outputs and many elements to reduce, the work
// is split into chunks, so every compute unit has work; the last chunk of an output to finish
// merges the chunks' accumulators in the same launch.
#pragma once

#include <ATen/TensorIterator.h>

namespace drawbridge::kernels {

struct ReduceSpec {
  const char* name;          // REDUCTION name in reduce.cl
  c10::ScalarType compute;   // accumulate type (CT)
  size_t accumulator_bytes;  // sizeof the accumulator type, for the partials of a split reduction
};

// Runs reduction `spec` over iter (one or two outputs, then one input). `param` is the bits of a
// compute-type parameter (correction, p of a norm), 0 when unused.
void launch_reduce(at::TensorIteratorBase& iter, const ReduceSpec& spec, uint64_t param = 0);

}  // namespace drawbridge::kernels
