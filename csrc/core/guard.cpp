// DeviceGuardImpl for ocl: what torch's device guards, torch.Stream and torch.Event call.
// An event is an OpenCL marker (cl_event); waiting on one enqueues a barrier.
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "core/device_allocator.h"
#include "core/device_state.h"
#include "runtime/commands.h"

namespace drawbridge::core {

namespace {

struct OclGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kOcl; }

  c10::Device exchangeDevice(c10::Device d) const override {
    auto old = getDevice();
    if (d.index() != old.index()) setDevice(d);
    return old;
  }
  c10::Device getDevice() const override { return c10::Device(kOcl, current_device()); }
  void setDevice(c10::Device d) const override {
    TORCH_CHECK(d.type() == kOcl, "expected an ocl device, got ", d);
    set_current_device(d.index() < 0 ? 0 : d.index());
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    try {
      set_current_device(d.index() < 0 ? 0 : d.index());
    } catch (...) {
    }
  }

  c10::Stream getStream(c10::Device d) const override { return current_stream(d.index()); }
  c10::Stream getDefaultStream(c10::Device d) const override { return default_stream(d.index()); }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool) const override { return stream_from_pool(d.index()); }
  c10::Stream getNewStream(c10::Device d, int) const override { return stream_from_pool(d.index()); }
  c10::Stream exchangeStream(c10::Stream s) const override {
    auto old = current_stream(s.device_index());
    set_current_stream(s);
    return old;
  }

  c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    if (event) clReleaseEvent(static_cast<cl_event>(event));
  }
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(), "event of ocl:", device_index,
                " cannot be recorded on a stream of ocl:", stream.device_index());
    cl_event marker = runtime::enqueue_marker(queue_of(stream));
    if (*event) clReleaseEvent(static_cast<cl_event>(*event));
    *event = marker;
  }
  void block(void* event, const c10::Stream& stream) const override {
    if (event) runtime::enqueue_wait(queue_of(stream), static_cast<cl_event>(event));
  }
  bool queryEvent(void* event) const override {
    return !event || runtime::event_complete(static_cast<cl_event>(event));
  }
  void synchronizeEvent(void* event) const override {
    if (event) runtime::wait_for(static_cast<cl_event>(event));
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start && end, "both events must be recorded before calling elapsed_time()");
    runtime::wait_for(static_cast<cl_event>(end));
    return runtime::elapsed_ms(static_cast<cl_event>(start), static_cast<cl_event>(end));
  }

  bool queryStream(const c10::Stream& stream) const override { return runtime::queue_idle(queue_of(stream)); }
  void synchronizeStream(const c10::Stream& stream) const override {
    DB_CL_CHECK(clFinish(queue_of(stream)));
    raise_device_errors(stream.device_index(), queue_of(stream));
  }
  void synchronizeDevice(const c10::DeviceIndex index) const override { synchronize_device(index); }
  void recordDataPtrOnStream(const c10::DataPtr& ptr, const c10::Stream& stream) const override {
    device_allocator().recordStream(ptr, stream);
  }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, OclGuardImpl);

}  // namespace drawbridge::core
