// Custom kernels (drawbridge.kernel): a user's OpenCL C kernel, built per device and per set of
// -D options through the runtime's disk cache, and launched on the current ocl stream. The
// parameters the driver reports (name, type, address space) decide how each value is passed, so
// a value that does not fit its parameter is an error here, not a silent reinterpretation.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/kernel_info.h"
#include "runtime/program_cache.h"

namespace drawbridge::extension {

// How one parameter takes its value.
struct ParamKind {
  enum class Kind : uint8_t { buffer, local_bytes, integer, real, unsupported };
  Kind kind = Kind::unsupported;
  uint8_t bytes = 0;       // integer and real parameters: their width
  bool is_signed = false;  // integer parameters
};

ParamKind param_kind(const runtime::KernelParam& param);

// A launch value: a device address (buffer parameters), a byte count (local memory), an integer
// or a real, as the parameter's kind says.
struct LaunchValue {
  bool is_real = false;
  int64_t integer = 0;
  double real = 0.0;
};

class UserKernel {
 public:
  UserKernel(std::string source, std::string label, std::string options, std::string name)
      : source_(std::move(source)), label_(std::move(label)), options_(std::move(options)), name_(std::move(name)) {}

  // The kernel's parameters, building the program for the current device on first use.
  const std::vector<runtime::KernelParam>& params();

  // Launches on the current stream of the current device. `global` holds 1 to 3 sizes; `local`
  // holds as many, or none to let the driver choose.
  void launch(const std::vector<LaunchValue>& values, const std::vector<size_t>& global,
              const std::vector<size_t>& local);

 private:
  struct Built {
    runtime::Kernel* kernel = nullptr;
    std::vector<runtime::KernelParam> params;
    std::vector<ParamKind> kinds;
    size_t max_item_sizes[3] = {0, 0, 0};
  };
  Built& built(int device);
  void check_geometry(const Built& b, const std::vector<size_t>& global, const std::vector<size_t>& local) const;

  std::string source_, label_, options_, name_;
  std::mutex mutex_;
  std::map<int, Built> by_device_;
};

}  // namespace drawbridge::extension
