// torch.compile's device side: the OpenCL C that drawbridge/compiler generates for one graph is
// built as one program (one build per graph, through the runtime's disk cache) and its kernels
// are launched on the current ocl stream.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/program_cache.h"

namespace drawbridge::compiler {

class GeneratedProgram {
 public:
  GeneratedProgram(std::string source, std::string label)
      : source_(std::move(source)), label_(std::move(label)) {}

  // The kernel `name` for the current device, building the program (or loading it from the disk
  // cache) on first use for that device.
  runtime::Kernel& kernel(int device, const std::string& name);
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::string label_;
};

// One launch argument. Kinds (the generator writes one character per kernel parameter):
//   'b' a tensor, given as its device address (data_ptr()): passed as the cl_mem and the byte
//       offset of the address inside it, because OpenCL cannot take an interior pointer;
//   'l' int64, 'i' int32, 'f' float, 'd' double;
//   'e' the device's error flag (no value; bounds checks write core::DeviceAssert codes to it).
struct LaunchArg {
  char kind;
  int64_t integer = 0;
  double real = 0.0;
};

class GeneratedKernel {
 public:
  GeneratedKernel(std::shared_ptr<GeneratedProgram> program, std::string name, std::string signature)
      : program_(std::move(program)), name_(std::move(name)), signature_(std::move(signature)) {}

  const std::string& signature() const { return signature_; }
  // Launches on the current stream of the current device. `global` and `local` hold one size per
  // dimension (1 to 3); the global sizes must be multiples of the local ones.
  void launch(const std::vector<LaunchArg>& args, const std::vector<size_t>& global,
              const std::vector<size_t>& local);

 private:
  std::shared_ptr<GeneratedProgram> program_;
  std::string name_;
  std::string signature_;
  std::mutex mutex_;
  std::map<int, runtime::Kernel*> by_device_;
};

}  // namespace drawbridge::compiler
