#include "core/device_state.h"

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include <c10/util/Exception.h>

#include "runtime/error.h"

namespace drawbridge::core {

namespace {
thread_local c10::DeviceIndex tls_device = 0;
// Stream index per device for this thread; grown on demand.
thread_local std::vector<int> tls_streams;

int& tls_stream_slot(c10::DeviceIndex index) {
  if (tls_streams.size() <= static_cast<size_t>(index)) tls_streams.resize(index + 1, 0);
  return tls_streams[index];
}

std::mutex deferred_mutex;
std::map<c10::DeviceIndex, std::string> deferred_errors;

std::optional<std::string> take_deferred_error(c10::DeviceIndex index) {
  std::lock_guard<std::mutex> lock(deferred_mutex);
  auto it = deferred_errors.find(index);
  if (it == deferred_errors.end()) return std::nullopt;
  std::string message = std::move(it->second);
  deferred_errors.erase(it);
  return message;
}
}  // namespace

void defer_error(c10::DeviceIndex index, std::string message) {
  if (index < 0) index = tls_device;
  std::lock_guard<std::mutex> lock(deferred_mutex);
  deferred_errors[index] = std::move(message);
}

c10::DeviceIndex device_count() noexcept {
  try {
    return static_cast<c10::DeviceIndex>(runtime::device_count());
  } catch (...) {
    return 0;
  }
}

runtime::Device& checked_device(c10::DeviceIndex index) {
  if (index < 0) index = tls_device;
  int count = runtime::device_count();
  TORCH_CHECK(count > 0, "Drawbridge found no OpenCL device for 'ocl': ", runtime::no_device_reason());
  TORCH_CHECK(index < count, "Invalid device ocl:", static_cast<int>(index), ": there ",
              count == 1 ? "is 1 ocl device" : "are " + std::to_string(count) + " ocl devices",
              " (see torch.ocl.device_count() and DRAWBRIDGE_DEVICES).");
  return runtime::device(index);
}

c10::DeviceIndex current_device() { return tls_device; }

void set_current_device(c10::DeviceIndex index) {
  checked_device(index);
  tls_device = index;
}

c10::Stream default_stream(c10::DeviceIndex index) {
  if (index < 0) index = tls_device;
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kOcl, index), 0);
}

c10::Stream current_stream(c10::DeviceIndex index) {
  if (index < 0) index = tls_device;
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kOcl, index), tls_stream_slot(index));
}

void set_current_stream(const c10::Stream& stream) {
  TORCH_CHECK(stream.device_type() == kOcl, "expected an ocl stream, got ", stream);
  TORCH_CHECK(stream.id() >= 0 && stream.id() < runtime::kStreamsPerDevice, "invalid ocl stream id ", stream.id());
  tls_stream_slot(stream.device_index()) = static_cast<int>(stream.id());
}

c10::Stream stream_from_pool(c10::DeviceIndex index) {
  if (index < 0) index = tls_device;
  checked_device(index);
  static std::atomic<unsigned> next{0};
  int id = 1 + static_cast<int>(next.fetch_add(1) % (runtime::kStreamsPerDevice - 1));
  return c10::Stream(c10::Stream::UNSAFE, c10::Device(kOcl, index), id);
}

cl_command_queue queue_of(const c10::Stream& stream) {
  return checked_device(stream.device_index()).queue(static_cast<int>(stream.id()));
}

void raise_device_errors(c10::DeviceIndex index, cl_command_queue queue) {
  if (index < 0) index = tls_device;
  if (auto deferred = take_deferred_error(index)) TORCH_CHECK(false, *deferred);
  const auto code = static_cast<DeviceAssert>(checked_device(index).take_error(queue));
  if (code != DeviceAssert::none)
    raise_device_assert(code, " (an ocl device-side assert, raised at the next synchronization; the op left those "
                              "elements unwritten. Run with DRAWBRIDGE_SYNC=1 to raise at the op itself.)");
}

void raise_device_assert(DeviceAssert code, const char* context) {
  TORCH_CHECK(code != DeviceAssert::zero_division, "ZeroDivisionError: an integer was divided by zero", context);
  TORCH_CHECK(code != DeviceAssert::missing_operation,
              "internal error: an elementwise kernel's generic program lacks the operation it was asked for "
              "(not compiled for its compute type)", context);
  TORCH_CHECK(code != DeviceAssert::index_runtime_error, "index out of bounds: an index outside its dimension",
              context);
  TORCH_CHECK_INDEX(false, "index out of range: an index outside its dimension", context);
}

void synchronize_device(c10::DeviceIndex index) {
  auto& dev = checked_device(index);
  dev.synchronize();
  raise_device_errors(index, dev.queue(0));
}

}  // namespace drawbridge::core
