// What a kernel's parameters are, as the driver reports them (clGetKernelArgInfo). Custom
// kernels check the values they are launched with against it. Needs the program to be built with
// -cl-kernel-arg-info.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/opencl.h"

namespace drawbridge::runtime {

struct KernelParam {
  enum class Space { global, constant, local, value };
  std::string name;
  std::string type;  // as written after preprocessing: "float*", "int", "real*" for a typedef
  Space space = Space::value;
  bool is_const = false;
};

// Empty when the driver does not have the information (some keep it only for programs built
// from source, not for binaries loaded from a cache).
std::optional<std::vector<KernelParam>> kernel_params(cl_kernel kernel);

}  // namespace drawbridge::runtime
