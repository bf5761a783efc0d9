#include "extension/user_kernel.h"

#include <c10/util/Exception.h>
#include <c10/util/Half.h>

#include <cstring>
#include <limits>

#include "core/device_state.h"
#include "runtime/commands.h"
#include "runtime/device.h"
#include "runtime/device_memory.h"
#include "runtime/error.h"

namespace drawbridge::extension {

namespace {

using Kind = ParamKind::Kind;

struct ScalarType {
  const char* name;
  Kind kind;
  uint8_t bytes;
  bool is_signed;
};

// The scalar types OpenCL C allows as kernel parameters passed by value.
constexpr ScalarType kScalars[] = {
    {"char", Kind::integer, 1, true},     {"uchar", Kind::integer, 1, false},
    {"unsigned char", Kind::integer, 1, false}, {"short", Kind::integer, 2, true},
    {"ushort", Kind::integer, 2, false},  {"unsigned short", Kind::integer, 2, false},
    {"int", Kind::integer, 4, true},      {"uint", Kind::integer, 4, false},
    {"unsigned int", Kind::integer, 4, false}, {"long", Kind::integer, 8, true},
    {"ulong", Kind::integer, 8, false},   {"unsigned long", Kind::integer, 8, false},
    {"half", Kind::real, 2, true},        {"float", Kind::real, 4, true},
    {"double", Kind::real, 8, true},
};

bool fits(int64_t v, const ParamKind& k) {
  if (k.bytes == 8) return k.is_signed || v >= 0;  // Python ints above int64 never get here
  const int bits = 8 * k.bytes;
  if (k.is_signed) return v >= -(int64_t(1) << (bits - 1)) && v < (int64_t(1) << (bits - 1));
  return v >= 0 && v < (int64_t(1) << bits);
}

// Sub-buffers for buffer parameters whose tensor does not start at its cl_mem's origin; released
// once enqueued (OpenCL keeps them alive until the kernel has run).
struct SubBuffers {
  std::vector<cl_mem> list;
  ~SubBuffers() {
    for (cl_mem m : list) clReleaseMemObject(m);
  }
};

}  // namespace

ParamKind param_kind(const runtime::KernelParam& param) {
  using Space = runtime::KernelParam::Space;
  switch (param.space) {
    case Space::global:
    case Space::constant: return {Kind::buffer};
    case Space::local: return {Kind::local_bytes};
    case Space::value:
      for (const ScalarType& s : kScalars)
        if (param.type == s.name) return {s.kind, s.bytes, s.is_signed};
      return {Kind::unsupported};
  }
  return {Kind::unsupported};
}

UserKernel::Built& UserKernel::built(int index) {
  std::lock_guard<std::mutex> lock(mutex_);
  Built& b = by_device_[index];
  if (b.kernel) return b;
  runtime::Device& device = core::checked_device(static_cast<c10::DeviceIndex>(index));
  const std::string options = options_ + " -cl-kernel-arg-info";
  runtime::Kernel* kernel = &runtime::get_kernel(device, label_, source_, options, name_);
  auto params = runtime::kernel_params(kernel->handle);
  if (!params) {  // a binary from the disk cache without argument info: build from source once
    kernel = &runtime::get_kernel(device, label_, source_, options, name_, runtime::ProgramSource::build);
    params = runtime::kernel_params(kernel->handle);
  }
  TORCH_CHECK(params, "custom kernel ", name_, ": the OpenCL driver of ocl:", index,
              " does not report kernel argument information, which custom kernels need");
  b.params = std::move(*params);
  for (const auto& p : b.params) b.kinds.push_back(param_kind(p));
  DB_CL_CHECK(clGetDeviceInfo(device.id(), CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(b.max_item_sizes),
                              b.max_item_sizes, nullptr));
  b.kernel = kernel;
  return b;
}

const std::vector<runtime::KernelParam>& UserKernel::params() {
  return built(core::current_device()).params;
}

void UserKernel::check_geometry(const Built& b, const std::vector<size_t>& global,
                                const std::vector<size_t>& local) const {
  TORCH_CHECK(!global.empty() && global.size() <= 3, "custom kernel ", name_,
              ": the global size needs 1 to 3 dimensions, got ", global.size());
  if (local.empty()) return;
  TORCH_CHECK(local.size() == global.size(), "custom kernel ", name_, ": the local size has ", local.size(),
              " dimensions and the global size ", global.size());
  size_t items = 1;
  for (size_t d = 0; d < local.size(); ++d) {
    TORCH_CHECK(local[d] > 0 && local[d] <= b.max_item_sizes[d], "custom kernel ", name_, ": local size ",
                local[d], " in dimension ", d, " is outside the device's range of 1 to ", b.max_item_sizes[d]);
    TORCH_CHECK(global[d] % local[d] == 0, "custom kernel ", name_, ": the global size ", global[d],
                " in dimension ", d, " is not a multiple of the local size ", local[d]);
    items *= local[d];
  }
  TORCH_CHECK(items <= b.kernel->max_work_group_size, "custom kernel ", name_, ": a work-group of ", items,
              " work-items is more than this kernel can run with on this device (",
              b.kernel->max_work_group_size, ", CL_KERNEL_WORK_GROUP_SIZE)");
}

void UserKernel::launch(const std::vector<LaunchValue>& values, const std::vector<size_t>& global,
                        const std::vector<size_t>& local) {
  const int index = core::current_device();
  Built& b = built(index);
  TORCH_CHECK(values.size() == b.params.size(), "custom kernel ", name_, " takes ", b.params.size(),
              " arguments, got ", values.size());
  check_geometry(b, global, local);
  for (size_t d = 0; d < global.size(); ++d)
    if (global[d] == 0) return;  // nothing to run; OpenCL rejects empty ranges
  runtime::Device& device = core::checked_device(static_cast<c10::DeviceIndex>(index));
  const size_t align = device.properties().base_address_align;

  const size_t n = values.size();
  std::vector<runtime::KernelArg> args(n);
  std::vector<cl_mem> mems(n);
  std::vector<uint64_t> scalars(n);  // each value's bytes, little end first
  SubBuffers subs;
  for (size_t i = 0; i < n; ++i) {
    const ParamKind& k = b.kinds[i];
    const LaunchValue& v = values[i];
    const runtime::KernelParam& p = b.params[i];
    switch (k.kind) {
      case Kind::buffer: {
        TORCH_CHECK(!v.is_real, "custom kernel ", name_, ": parameter '", p.name, "' (", p.type, ") needs a tensor");
        if (v.integer == 0) {  // an empty tensor has no storage: the kernel gets a null pointer
          mems[i] = nullptr;
          args[i] = {sizeof(cl_mem), &mems[i]};
          break;
        }
        runtime::BufferRef ref = device.memory().resolve(reinterpret_cast<const void*>(v.integer));
        mems[i] = ref.mem;
        if (ref.offset != 0) {
          TORCH_CHECK(ref.offset % align == 0, "custom kernel ", name_, ": the tensor for parameter '", p.name,
                      "' starts ", ref.offset, " bytes into its buffer, not a multiple of the device's ", align,
                      "-byte sub-buffer alignment");
          cl_buffer_region region{ref.offset, ref.available};
          cl_int status = CL_SUCCESS;
          mems[i] = clCreateSubBuffer(ref.mem, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &region, &status);
          DB_CL_CHECK(status);
          subs.list.push_back(mems[i]);
        }
        args[i] = {sizeof(cl_mem), &mems[i]};
        break;
      }
      case Kind::local_bytes:
        TORCH_CHECK(!v.is_real && v.integer > 0, "custom kernel ", name_, ": local parameter '", p.name,
                    "' needs a positive byte count");
        args[i] = {static_cast<size_t>(v.integer), nullptr};
        break;
      case Kind::integer:
        TORCH_CHECK(!v.is_real, "custom kernel ", name_, ": parameter '", p.name, "' (", p.type,
                    ") needs an integer, got ", v.real);
        TORCH_CHECK(fits(v.integer, k), "custom kernel ", name_, ": value ", v.integer, " does not fit parameter '",
                    p.name, "' of type ", p.type);
        std::memcpy(&scalars[i], &v.integer, k.bytes);
        args[i] = {k.bytes, &scalars[i]};
        break;
      case Kind::real: {
        const double x = v.is_real ? v.real : static_cast<double>(v.integer);
        if (k.bytes == 8) {
          std::memcpy(&scalars[i], &x, 8);
        } else if (k.bytes == 4) {
          const float f = static_cast<float>(x);
          std::memcpy(&scalars[i], &f, 4);
        } else {
          const c10::Half h(static_cast<float>(x));
          std::memcpy(&scalars[i], &h, 2);
        }
        args[i] = {k.bytes, &scalars[i]};
        break;
      }
      case Kind::unsupported:
        TORCH_CHECK(false, "custom kernel ", name_, ": parameter '", p.name, "' of type ", p.type,
                    " is passed by value; custom kernels take buffers, local memory and scalar values");
    }
  }
  cl_command_queue queue = core::current_queue(static_cast<c10::DeviceIndex>(index));
  runtime::launch_nd(*b.kernel, queue, static_cast<cl_uint>(global.size()), global.data(),
                     local.empty() ? nullptr : local.data(), args.data(), args.size());
}

}  // namespace drawbridge::extension
