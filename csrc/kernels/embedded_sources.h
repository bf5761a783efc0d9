// The OpenCL C sources under csrc/kernels/cl, embedded at build time (cmake/embed_kernels.cmake).
#pragma once

#include <map>
#include <string>

namespace drawbridge::kernels {

const std::map<std::string, std::string>& embedded_sources();

}  // namespace drawbridge::kernels
