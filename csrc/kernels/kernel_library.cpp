#include "kernels/kernel_library.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <unordered_map>

#include <c10/util/Exception.h>

#include "core/device_state.h"
#include "kernels/embedded_sources.h"
#include "kernels/op_dispatch.h"

namespace drawbridge::kernels {

const char* dtype_token(c10::ScalarType type) {
  switch (type) {
    case c10::kFloat: return "f32";
    case c10::kHalf: return "f16";
    case c10::kBFloat16: return "bf16";
    case c10::kDouble: return "f64";
    case c10::kChar: return "i8";
    case c10::kShort: return "i16";
    case c10::kInt: return "i32";
    case c10::kLong: return "i64";
    case c10::kByte: return "u8";
    case c10::kBool: return "b8";
    default: return nullptr;
  }
}

const char* raw_token(size_t itemsize) {
  switch (itemsize) {
    case 1: return "r8";
    case 2: return "r16";
    case 4: return "r32";
    case 8: return "r64";
    case 16: return "r128";
    default: TORCH_CHECK(false, "ocl cannot move elements of ", itemsize, " bytes");
  }
}

uint64_t dtype_code(c10::ScalarType type) {
  switch (type) {
    case c10::kFloat: return 0;
    case c10::kHalf: return 1;
    case c10::kBFloat16: return 2;
    case c10::kDouble: return 3;
    case c10::kChar: return 4;
    case c10::kShort: return 5;
    case c10::kInt: return 6;
    case c10::kLong: return 7;
    case c10::kByte: return 8;
    case c10::kBool: return 9;
    default: TORCH_CHECK_NOT_IMPLEMENTED(false, "ocl kernels do not read dtype ", type);
  }
}

void check_dtype_supported(c10::ScalarType type, c10::DeviceIndex device) {
  if (type != c10::kDouble && type != c10::kComplexDouble) return;
  auto& dev = core::checked_device(device);
  TORCH_CHECK_TYPE(dev.properties().fp64, "ocl:", static_cast<int>(dev.index()), " (", dev.properties().name,
                   ") does not support float64: the device lacks cl_khr_fp64. Use float32 instead; "
                   "Drawbridge never converts float64 silently.");
}

const std::string& common_source() {
  const auto& sources = embedded_sources();
  auto common = sources.find("common.clh");
  TORCH_INTERNAL_ASSERT(common != sources.end(), "no embedded common.clh");
  return common->second;
}

std::string program_options(runtime::Device& device, const std::string& options) {
  std::string opts = options;
  // Every program may use double where the device has it (special functions compute in it).
  if (device.properties().fp64) opts += " -DUSE_FP64";
  // Division and sqrt correctly rounded, as on the CPU and in CUDA (OpenCL allows 2.5 ulp). CPU
  // devices divide in hardware, correctly rounded already; the option would make it a library call.
  if (!device.properties().cpu_class()) opts += " -cl-fp32-correctly-rounded-divide-sqrt";
  opts += " -w";  // kernels of other operand counts in the same file warn; drivers print warnings
  return opts;
}

namespace {

std::string program_source(const std::string& file) {
  const auto& sources = embedded_sources();
  auto body = sources.find(file);
  TORCH_CHECK(body != sources.end(), "no embedded OpenCL source ", file);
  return common_source() + "\n" + body->second + dispatch_source(file);
}

}  // namespace

void build_program(runtime::Device& device, const std::string& file, const std::string& options) {
  runtime::get_program(device, file, program_source(file), program_options(device, options));
}

void record_program(runtime::Device& device, const std::string& file, const std::string& options) {
  static const char* path = std::getenv("DRAWBRIDGE_RECORD_PROGRAMS");
  if (!path || !*path) return;
  static std::mutex mutex;
  static auto* seen = new std::set<std::string>();
  const std::string line =
      std::string(device.properties().cpu_class() ? "cpu" : "gpu") + '\t' + file + '\t' + options + '\n';
  std::lock_guard<std::mutex> lock(mutex);
  if (!seen->insert(line).second) return;
  // One write per line with O_APPEND: processes recording into one file do not interleave.
  const int fd = ::open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  const ssize_t written = ::write(fd, line.data(), line.size());
  (void)written;  // a lost line only makes the list shorter
  ::close(fd);
}

runtime::Kernel& get_kernel(runtime::Device& device, const std::string& file, const std::string& options,
                            const std::string& name) {
  // Launches look kernels up by a short key; the full source is hashed only on first use.
  // Never destroyed: launches from the autograd engine's threads may outlive static destruction.
  static auto* kernels_mutex = new std::shared_mutex();
  static auto* by_key = new std::unordered_map<std::string, runtime::Kernel*>();
  auto& mutex = *kernels_mutex;
  auto& kernels = *by_key;
  std::string key = std::to_string(device.index()) + '|' + file + '|' + name + '|' + options;
  {
    std::shared_lock<std::shared_mutex> lock(mutex);
    auto it = kernels.find(key);
    if (it != kernels.end()) return *it->second;
  }
  record_program(device, file, options);
  runtime::Kernel& kernel = runtime::get_kernel(device, file, program_source(file), program_options(device, options), name);
  std::unique_lock<std::shared_mutex> lock(mutex);
  kernels.emplace(std::move(key), &kernel);
  return kernel;
}

}  // namespace drawbridge::kernels
