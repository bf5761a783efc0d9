// The one launcher for multi-tensor kernels (cl/foreach.cl): lists of tensors, the k-th tensor of
// every list taking part in the same element-wise update, in as few launches as the device's
// kernel-argument space allows (CUDA's multi_tensor_apply, for OpenCL: each tensor's buffer is an
// argument of its own).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/commands.h"

namespace drawbridge::kernels {

// The operations of cl/foreach.cl (its OP option). A, B, C are the inputs, s the scalar.
enum class ForeachOp {
  add_scalar = 0,   // A + s
  add_list = 1,     // A + s * B
  mul_scalar = 2,   // A * s
  mul_list = 3,     // A * B
  div_scalar = 4,   // A / s
  div_list = 5,     // A / B
  lerp_scalar = 6,  // lerp(A, B, s)
  addcmul = 7,      // A + s * B * C
  addcdiv = 8,      // A + s * B / C
  sqrt = 9,
  zero = 10,
};

// A kernel of cl/foreach.cl: its name, its -D options beyond the launcher's, the arguments that
// come before the slots (shared by every tensor), and the elements of one work-item (0: the
// launcher's choice for the device class, one on GPUs).
struct MultiTensorKernel {
  const char* name;
  std::string options;
  std::vector<runtime::KernelArg> shared;
  uint64_t item = 0;
};

// Whether the lists can take the multi-tensor kernels: ocl tensors on one device, contiguous,
// each list as long as the first. The first lists (all but the last `value_lists`) hold one
// floating dtype the device supports, tensor k of each with the same shape; the value lists hold
// one-element tensors (an optimizer's steps). Anything else goes through a per-tensor path.
bool multi_tensor_applies(const std::vector<at::TensorList>& lists, size_t value_lists = 0);

// Runs `kernel` over tensor k of every list, for every k, in as few launches as the device's
// argument space allows; `scalar_bits` is empty, one value, or one per tensor (each slot's).
// Work-items are numbered across the launches, in list order (empty tensors have none), so a
// kernel can write one result per work-item into one buffer.
void launch_multi_tensor(const MultiTensorKernel& kernel, const std::vector<at::TensorList>& lists, size_t value_lists,
                         const std::vector<uint64_t>& scalar_bits);

// _foreach_norm for ord 1, 2 or infinity (`ord` 1, 2 or 0) of a list the multi-tensor kernels
// take: a 1-d tensor of the list's length in the compute type, tensor k's norm at [k]. Each pass
// writes a partial norm per work-item; the next reduces each tensor's partials, until one is left.
at::Tensor launch_foreach_norm(at::TensorList self, int ord);

// The _foreach_* operations: out[k] = op(inputs...) for every k. lists[0] is written (in place
// when `inplace`, when it is also the first input). The scalar is one for all tensors or one per
// tensor (`scalar_bits`, in the compute type as ops::scalar_bits gives them), or a one-element
// device tensor (`scalar_tensor`, read by the kernel).
void launch_foreach(ForeachOp op, const std::vector<at::TensorList>& lists, bool inplace,
                    const std::vector<uint64_t>& scalar_bits, const std::optional<at::Tensor>& scalar_tensor = {});

}  // namespace drawbridge::kernels
