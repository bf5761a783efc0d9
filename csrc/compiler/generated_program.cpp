#include "compiler/generated_program.h"

#include <c10/util/Exception.h>

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "runtime/commands.h"
#include "runtime/device_memory.h"

namespace drawbridge::compiler {

runtime::Kernel& GeneratedProgram::kernel(int device, const std::string& name) {
  runtime::Device& d = core::checked_device(static_cast<c10::DeviceIndex>(device));
  // The kernels use common.clh's conversions and arithmetic math (float compute type). CPU-class
  // devices reduce each row in a single work-item (the launcher gives their reductions one lane):
  // the work-group combines, their local memory and barriers compile out.
  // Their loops over runs of elements vectorize at the vector unit's width (DB_VECTORIZE): left to
  // itself, LLVM takes 256-bit vectors on AVX-512 machines.
  std::string options = "-DCT=f32 -DNARGS=1";
  if (d.properties().cpu_class())
    options += " -DDB_ONE_LANE -DDB_VECTOR_WIDTH=" + std::to_string(d.properties().native_float_vector_width);
  return runtime::get_kernel(d, label_, kernels::common_source() + "\n" + source_,
                             kernels::program_options(d, options), name);
}

void GeneratedKernel::launch(const std::vector<LaunchArg>& args, const std::vector<size_t>& global,
                             const std::vector<size_t>& local) {
  TORCH_CHECK(args.size() == signature_.size(), "generated kernel ", name_, " takes ", signature_.size(),
              " arguments, got ", args.size());
  TORCH_CHECK(!global.empty() && global.size() <= 3 && local.size() == global.size(),
              "generated kernel ", name_, ": a launch needs 1 to 3 global and local sizes");
  const int index = core::current_device();
  runtime::Device& device = core::checked_device(static_cast<c10::DeviceIndex>(index));
  runtime::Kernel* kernel = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = by_device_[index];
    if (!slot) slot = &program_->kernel(index, name_);
    kernel = slot;
  }

  // A buffer takes two parameters (cl_mem, offset); scalars one.
  std::vector<runtime::BufferRef> buffers;
  buffers.reserve(args.size());
  std::vector<runtime::KernelArg> list;
  list.reserve(2 * args.size());
  std::vector<cl_ulong> offsets;
  offsets.reserve(args.size());
  std::vector<int32_t> ints;
  ints.reserve(args.size());
  std::vector<float> floats;
  floats.reserve(args.size());
  cl_mem error_flag = nullptr;
  for (size_t i = 0; i < args.size(); ++i) {
    const LaunchArg& a = args[i];
    TORCH_CHECK(a.kind == signature_[i], "generated kernel ", name_, ": argument ", i, " is of kind '", a.kind,
                "', the kernel takes '", signature_[i], "'");
    switch (a.kind) {
      case 'b': {
        buffers.push_back(device.memory().resolve(reinterpret_cast<const void*>(a.integer)));
        offsets.push_back(buffers.back().offset);
        list.push_back({sizeof(cl_mem), &buffers.back().mem});
        list.push_back({sizeof(cl_ulong), &offsets.back()});
        break;
      }
      case 'l': list.push_back({sizeof(int64_t), &a.integer}); break;
      case 'i':
        ints.push_back(static_cast<int32_t>(a.integer));
        list.push_back({sizeof(int32_t), &ints.back()});
        break;
      case 'f':
        floats.push_back(static_cast<float>(a.real));
        list.push_back({sizeof(float), &floats.back()});
        break;
      case 'd': list.push_back({sizeof(double), &a.real}); break;
      case 'e':
        error_flag = device.error_flag();
        list.push_back({sizeof(cl_mem), &error_flag});
        break;
      default: TORCH_CHECK(false, "generated kernel ", name_, ": unknown argument kind '", a.kind, "'");
    }
  }
  cl_command_queue queue = core::current_queue(static_cast<c10::DeviceIndex>(index));
  runtime::launch_nd(*kernel, queue, static_cast<cl_uint>(global.size()), global.data(), local.data(), list.data(),
                     list.size());
  if (error_flag && runtime::sync_mode()) core::raise_device_errors(static_cast<c10::DeviceIndex>(index), queue);
}

}  // namespace drawbridge::compiler
