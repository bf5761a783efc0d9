#include "extension/extension_api.h"

#include "core/device_state.h"
#include "runtime/commands.h"
#include "runtime/device.h"
#include "runtime/device_memory.h"
#include "runtime/program_cache.h"

namespace drawbridge::extension {

namespace {

runtime::Device& device_at(int index) { return core::checked_device(static_cast<c10::DeviceIndex>(index)); }

}  // namespace

const ExtensionApi& extension_api() {
  static const ExtensionApi table = {
      kExtensionApiVersion,
      [](int device, const void* address, cl_mem* mem, size_t* offset) {
        const runtime::BufferRef ref = device_at(device).memory().resolve(address);
        *mem = ref.mem;
        *offset = ref.offset;
      },
      [](int device) { return core::current_queue(static_cast<c10::DeviceIndex>(device)); },
      [](int device) { return device_at(device).context(); },
      [](int device) { return device_at(device).id(); },
      [] { return static_cast<int>(core::current_device()); },
      [](int device, const char* label, const char* source, const char* options) {
        return runtime::get_program(device_at(device), label, source, options);
      },
      [](cl_command_queue queue) {
        runtime::note_launch();
        runtime::after_enqueue(queue);
      },
  };
  return table;
}

}  // namespace drawbridge::extension
