// Tensors as the arguments of a kernel of ours: each one's buffer and byte offset (OpenCL cannot
// pass a pointer into a buffer). The KernelArgs point into this object, so it lives until the
// launch.
#pragma once

#include <initializer_list>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/commands.h"
#include "runtime/device.h"

namespace drawbridge::kernels {

class TensorOperands {
 public:
  TensorOperands(runtime::Device& device, std::initializer_list<at::Tensor> tensors) {
    for (const at::Tensor& t : tensors) {
      const runtime::BufferRef ref = device.memory().resolve(t.const_data_ptr());
      mems_.push_back(ref.mem);
      offsets_.push_back(ref.offset);
    }
  }
  // Tensor k's two arguments, or all of them in order.
  void append(std::vector<runtime::KernelArg>& args, size_t k) const {
    args.push_back({sizeof(cl_mem), &mems_[k]});
    args.push_back({sizeof(cl_ulong), &offsets_[k]});
  }
  void append(std::vector<runtime::KernelArg>& args) const {
    for (size_t k = 0; k < mems_.size(); ++k) append(args, k);
  }

 private:
  std::vector<cl_mem> mems_;
  std::vector<cl_ulong> offsets_;
};

}  // namespace drawbridge::kernels
