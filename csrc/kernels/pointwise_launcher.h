// The one launcher for elementwise kernels (DESIGN.md, decision 3).
//
// at::TensorIterator does the host work (broadcasting, type promotion, output allocation,
// dimension coalescing); the launcher turns its shape and byte strides into the IterDesc of
// common.clh and runs one work-item per element. Kernels take (IterDesc, then a buffer and a
// byte offset per operand, outputs first, then any extra arguments).
#pragma once

#include <string>
#include <vector>

#include <ATen/TensorIterator.h>

#include "runtime/commands.h"

namespace drawbridge::kernels {

constexpr int kMaxDims = 10;  // matches MAX_DIMS in common.clh

void launch_pointwise_impl(at::TensorIteratorBase& iter, const std::string& file, const std::string& name,
                           const std::string& options, const std::vector<runtime::KernelArg>& extra);

// `options` selects the instantiation, e.g. "-DDST=f32 -DSRC=f16".
template <typename... Extra>
void launch_pointwise(at::TensorIteratorBase& iter, const std::string& file, const std::string& name,
                      const std::string& options, const Extra&... extra) {
  static_assert((std::is_trivially_copyable_v<Extra> && ...), "kernel arguments are passed by value");
  launch_pointwise_impl(iter, file, name, options, {runtime::KernelArg{sizeof(Extra), &extra}...});
}

}  // namespace drawbridge::kernels
