// The current ocl device and stream of each thread, and the mapping from c10::Stream to an
// OpenCL command queue. Everything here speaks torch's types; the runtime below does not.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <string>

#include "runtime/device.h"

namespace drawbridge::core {

constexpr c10::DeviceType kOcl = c10::DeviceType::PrivateUse1;

c10::DeviceIndex device_count() noexcept;
// The runtime device for a torch index, with a RuntimeError that says how to get a device when
// there is none, and names the valid range when the index is wrong. -1 means the current device.
runtime::Device& checked_device(c10::DeviceIndex index);

c10::DeviceIndex current_device();
void set_current_device(c10::DeviceIndex index);  // checked

c10::Stream default_stream(c10::DeviceIndex index);
c10::Stream current_stream(c10::DeviceIndex index = -1);
void set_current_stream(const c10::Stream& stream);
c10::Stream stream_from_pool(c10::DeviceIndex index);

cl_command_queue queue_of(const c10::Stream& stream);

// What a kernel writes to its device's error flag (runtime::Device::error_flag); the host raises
// the exception the CPU raises for the same input.
enum class DeviceAssert : int {
  none = 0,
  index_error = 1,          // IndexError: index_select, the index_* ops, take, put, advanced indexing
  index_runtime_error = 2,  // RuntimeError: gather, scatter, take_along_dim (and one_hot through scatter)
  zero_division = 3,        // RuntimeError "ZeroDivisionError": integer division or remainder by zero
  missing_operation = 4,    // RuntimeError: a generic program's dispatcher lacks the operation asked for
};

// Raises the exception that `code` stands for (never DeviceAssert::none), `context` appended.
[[noreturn]] void raise_device_assert(DeviceAssert code, const char* context = "");

// Raises the device-side assert of an earlier kernel (an index out of range), if one fired, or
// an error deferred to this device. Called wherever the host waits for the device: item(),
// device-to-host copies, synchronize().
void raise_device_errors(c10::DeviceIndex index, cl_command_queue queue);
// An asynchronous failure found on the host after its caller went on (a collective's transport
// after a non-blocking wait()): raised once, as a RuntimeError, at the device's next
// synchronization. A later one replaces an earlier one not yet raised.
void defer_error(c10::DeviceIndex index, std::string message);
void synchronize_device(c10::DeviceIndex index);
inline cl_command_queue current_queue(c10::DeviceIndex index = -1) { return queue_of(current_stream(index)); }

}  // namespace drawbridge::core
