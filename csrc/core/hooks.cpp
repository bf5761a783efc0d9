// The PrivateUse1 hooks: how torch asks the ocl backend about availability, generators,
// pinned memory and pointers it did not allocate itself.
#include <ATen/detail/PrivateUse1HooksInterface.h>

#include "core/device_allocator.h"
#include "core/device_state.h"
#include "core/generator.h"
#include "core/host_allocator.h"
#include "core/storage_resize.h"
#include "runtime/device_memory.h"

namespace drawbridge::core {

namespace {

struct OclHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex index) const override { return index >= 0 && index < device_count(); }
  c10::DeviceIndex deviceCount() const override { return device_count(); }
  void setCurrentDevice(c10::DeviceIndex index) const override { set_current_device(index); }
  c10::DeviceIndex getCurrentDevice() const override { return current_device(); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
    auto old = current_device();
    set_current_device(index);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override { return exchangeDevice(index); }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    return default_generator(index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    if (index < 0) index = current_device();
    checked_device(index);
    return at::make_generator<PhiloxGenerator>(index);
  }

  at::Device getDeviceFromPtr(void* data) const override {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d)
      if (runtime::device(d).memory().contains(data)) return c10::Device(kOcl, d);
    TORCH_CHECK(false, "pointer ", data, " does not belong to any ocl device");
  }
  bool isPinnedPtr(const void* data) const override { return host_allocator().is_pinned(data); }
  at::Allocator* getPinnedMemoryAllocator() const override {
    checked_device(0);
    return &host_allocator();
  }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t bytes) const override {
    resize_storage_bytes(storage, bytes);
  }
};

const bool registered = [] {
  at::RegisterPrivateUse1HooksInterface(new OclHooks());
  return true;
}();

}  // namespace

}  // namespace drawbridge::core
