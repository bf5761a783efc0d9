#include "runtime/device.h"
#include "runtime/device_list.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "runtime/device_memory.h"
#include "runtime/error.h"
#include "runtime/idle_poll.h"

namespace drawbridge::runtime {

namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  s.resize(s.find('\0') == std::string::npos ? n : s.find('\0'));
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  s.resize(s.find('\0') == std::string::npos ? n : s.find('\0'));
  return s;
}

template <typename T>
T device_value(cl_device_id d, cl_device_info what) {
  T value{};
  DB_CL_CHECK(clGetDeviceInfo(d, what, sizeof(T), &value, nullptr));
  return value;
}

std::string type_name(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return "gpu";
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (t & CL_DEVICE_TYPE_CPU) return "cpu";
  return "other";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

DeviceClass device_class_for(const std::string& type) {
  const char* env = std::getenv("DRAWBRIDGE_DEVICE_CLASS");
  const std::string chosen = env && *env ? lower(env) : type;
  if (env && *env && chosen != "cpu" && chosen != "gpu")
    throw Error("DRAWBRIDGE_DEVICE_CLASS must be 'cpu' or 'gpu', not '" + std::string(env) + "'");
  return chosen == "cpu" ? DeviceClass::cpu : DeviceClass::gpu;
}

bool has_extension(const std::string& extensions, const std::string& name) {
  std::istringstream in(extensions);
  std::string word;
  while (in >> word)
    if (word == name) return true;
  return false;
}

struct Registry {
  std::vector<std::unique_ptr<Device>> devices;
  std::vector<ListedDevice> listed;
  std::string no_device_reason;
};

const char* kInstallHint =
    "Install an OpenCL driver for your GPU, or PoCL for the CPU (Debian/Ubuntu: "
    "apt-get install pocl-opencl-icd ocl-icd-libopencl1), then check with `clinfo -l`.";

std::atomic<bool> discovered{false};

Registry& registry() {
  static Registry* reg = [] {
    discovered = true;
    auto* r = new Registry();
    cl_uint nplatforms = 0;
    cl_int status = clGetPlatformIDs(0, nullptr, &nplatforms);
    if (status != CL_SUCCESS || nplatforms == 0) {
      r->no_device_reason = std::string("no OpenCL platform was found (clGetPlatformIDs: ") +
                            error_name(status) + "). " + kInstallHint;
      return r;
    }
    std::vector<cl_platform_id> platforms(nplatforms);
    clGetPlatformIDs(nplatforms, platforms.data(), nullptr);

    std::vector<std::pair<cl_platform_id, cl_device_id>> found;
    std::vector<DeviceCandidate> candidates;
    for (cl_platform_id p : platforms) {
      cl_uint ndev = 0;
      if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &ndev) != CL_SUCCESS) continue;
      std::vector<cl_device_id> ids(ndev);
      clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, ndev, ids.data(), nullptr);
      for (cl_device_id d : ids) {
        cl_device_type t = 0;
        clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof(t), &t, nullptr);
        found.emplace_back(p, d);
        candidates.push_back({platform_string(p, CL_PLATFORM_NAME),
                              platform_string(p, CL_PLATFORM_VENDOR),
                              device_string(d, CL_DEVICE_NAME), device_string(d, CL_DEVICE_VENDOR),
                              type_name(t)});
      }
    }
    const char* env = std::getenv("DRAWBRIDGE_DEVICES");
    std::vector<size_t> chosen = select_devices(candidates, env ? env : "");
    for (const DeviceCandidate& c : candidates) r->listed.push_back({c, -1});
    for (size_t i : chosen) {
      r->listed[i].ocl_index = static_cast<int>(r->devices.size());
      r->devices.push_back(std::make_unique<Device>(static_cast<int>(r->devices.size()),
                                                    found[i].first, found[i].second));
    }
    if (r->devices.empty()) {
      r->no_device_reason =
          found.empty() ? std::string("OpenCL platforms exist but expose no device. ") + kInstallHint
                        : std::string("no OpenCL device matches DRAWBRIDGE_DEVICES='") +
                              (env ? env : "") + "' (see `clinfo -l` for the names).";
    }
    return r;
  }();
  return *reg;
}

}  // namespace

std::vector<ListedDevice> listed_devices() { return registry().listed; }

std::vector<size_t> select_devices(const std::vector<DeviceCandidate>& candidates,
                                   const std::string& selector) {
  std::vector<size_t> out;
  auto add = [&](size_t i) {
    if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
  };
  if (selector.empty()) {
    // GPUs and accelerators first; CPU devices only when nothing else exists.
    for (size_t i = 0; i < candidates.size(); ++i)
      if (candidates[i].type == "gpu" || candidates[i].type == "accelerator") add(i);
    if (out.empty())
      for (size_t i = 0; i < candidates.size(); ++i)
        if (candidates[i].type == "cpu") add(i);
    return out;
  }
  std::istringstream in(selector);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    std::string name = item;
    long index = -1;
    auto colon = item.rfind(':');
    if (colon != std::string::npos) {
      name = item.substr(0, colon);
      char* end = nullptr;
      index = std::strtol(item.c_str() + colon + 1, &end, 10);
      if (*end != '\0' || index < 0) index = -2;  // malformed: matches nothing
    }
    name = lower(name);
    long seen = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const auto& c = candidates[i];
      bool match = name == "*" || name == c.type ||
                   lower(c.platform_name).find(name) != std::string::npos ||
                   lower(c.platform_vendor).find(name) != std::string::npos ||
                   lower(c.device_name).find(name) != std::string::npos ||
                   lower(c.device_vendor).find(name) != std::string::npos;
      if (!match) continue;
      if (index == -1 || index == seen) add(i);
      ++seen;
    }
  }
  return out;
}

Device::Device(int index, cl_platform_id platform, cl_device_id id) : index_(index), id_(id) {
  auto& p = properties_;
  p.name = device_string(id, CL_DEVICE_NAME);
  p.vendor = device_string(id, CL_DEVICE_VENDOR);
  p.driver_version = device_string(id, CL_DRIVER_VERSION);
  p.opencl_version = device_string(id, CL_DEVICE_VERSION);
  p.platform_name = platform_string(platform, CL_PLATFORM_NAME);
  p.platform_vendor = platform_string(platform, CL_PLATFORM_VENDOR);
  p.type = type_name(device_value<cl_device_type>(id, CL_DEVICE_TYPE));
  p.device_class = device_class_for(p.type);
  p.global_mem_bytes = device_value<cl_ulong>(id, CL_DEVICE_GLOBAL_MEM_SIZE);
  p.max_alloc_bytes = device_value<cl_ulong>(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  p.local_mem_bytes = device_value<cl_ulong>(id, CL_DEVICE_LOCAL_MEM_SIZE);
  p.compute_units = device_value<cl_uint>(id, CL_DEVICE_MAX_COMPUTE_UNITS);
  p.max_work_group_size = device_value<size_t>(id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  p.max_parameter_bytes = device_value<size_t>(id, CL_DEVICE_MAX_PARAMETER_SIZE);
  p.base_address_align = std::max<cl_uint>(8, device_value<cl_uint>(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN)) / 8;
  p.native_float_vector_width = std::max<cl_uint>(1, device_value<cl_uint>(id, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT));
  std::string ext = device_string(id, CL_DEVICE_EXTENSIONS);
  p.fp16 = has_extension(ext, "cl_khr_fp16");
  p.fp64 = has_extension(ext, "cl_khr_fp64") && device_value<cl_ulong>(id, CL_DEVICE_DOUBLE_FP_CONFIG) != 0;
  // Lets tests and users exercise the no-float64 path on a device that has it.
  if (const char* env = std::getenv("DRAWBRIDGE_DISABLE_FP64"); env && std::string(env) == "1")
    p.fp64 = false;

  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(platform), 0};
  cl_int status = CL_SUCCESS;
  context_ = clCreateContext(props, 1, &id_, nullptr, nullptr, &status);
  DB_CL_CHECK(status);
  memory_ = std::make_unique<DeviceMemory>(*this);
  if (p.type == "cpu") idle_poll::arm();
}

Device::~Device() {
  // Devices live for the whole process; their OpenCL objects are reclaimed by the driver at exit.
}

cl_command_queue Device::queue(int stream_index) {
  if (stream_index < 0 || stream_index >= kStreamsPerDevice)
    throw Error("stream index " + std::to_string(stream_index) + " is out of range for ocl:" +
                std::to_string(index_));
  cl_command_queue q = queues_[stream_index].load(std::memory_order_acquire);
  if (q) return q;
  std::lock_guard<std::mutex> lock(queue_mutex_);
  q = queues_[stream_index].load(std::memory_order_relaxed);
  if (q) return q;
  cl_int status = CL_SUCCESS;
  q = clCreateCommandQueue(context_, id_, CL_QUEUE_PROFILING_ENABLE, &status);
  DB_CL_CHECK(status);
  queues_[stream_index].store(q, std::memory_order_release);
  return q;
}

int Device::stream_index_of(cl_command_queue q) const {
  for (int i = 0; i < kStreamsPerDevice; ++i)
    if (queues_[i].load(std::memory_order_acquire) == q) return i;
  return -1;
}

cl_mem Device::error_flag() {
  std::call_once(error_once_, [this] {
    cl_int status = CL_SUCCESS;
    cl_int zero = 0;
    error_flag_ = clCreateBuffer(context_, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(cl_int), &zero, &status);
    DB_CL_CHECK(status);
  });
  return error_flag_;
}

int Device::take_error(cl_command_queue q) {
  if (!error_flag_) return 0;  // no kernel that checks indices has run
  cl_int value = 0;
  DB_CL_CHECK(clEnqueueReadBuffer(q, error_flag_, CL_TRUE, 0, sizeof(value), &value, 0, nullptr, nullptr));
  if (value != 0) {
    cl_int zero = 0;
    DB_CL_CHECK(clEnqueueWriteBuffer(q, error_flag_, CL_TRUE, 0, sizeof(zero), &zero, 0, nullptr, nullptr));
  }
  return value;
}

void Device::synchronize() {
  for (auto& slot : queues_)
    if (cl_command_queue q = slot.load(std::memory_order_acquire)) DB_CL_CHECK(clFinish(q));
}

int device_count() { return static_cast<int>(registry().devices.size()); }

Device& device(int index) {
  auto& reg = registry();
  if (reg.devices.empty()) throw Error("Drawbridge found no OpenCL device: " + reg.no_device_reason);
  if (index < 0 || index >= static_cast<int>(reg.devices.size()))
    throw Error("invalid ocl device index " + std::to_string(index) + ": there " +
                (reg.devices.size() == 1 ? "is 1 device" : "are " + std::to_string(reg.devices.size()) + " devices") +
                " (ocl:0" + (reg.devices.size() > 1 ? "..ocl:" + std::to_string(reg.devices.size() - 1) : "") + ")");
  return *reg.devices[index];
}

std::string no_device_reason() { return registry().no_device_reason; }
bool devices_discovered() { return discovered.load(); }

}  // namespace drawbridge::runtime
