// Drawbridge's C++ API for torch.utils.cpp_extension users: the OpenCL objects behind ocl tensors
// and streams, and program builds through Drawbridge's disk cache.
//
//   #include <drawbridge/extension.h>      // include_dirs=[drawbridge.get_include()], link -lOpenCL
//
//   drawbridge::Buffer x = drawbridge::buffer(tensor);         // cl_mem + byte offset
//   cl_command_queue q = drawbridge::current_queue();           // the current ocl stream
//   cl_program p = drawbridge::program(source, "-DT=float");   // built once, cached on disk
//
// Enqueue kernels on current_queue() and call drawbridge::enqueued(q) after each (it counts the
// launch, honours DRAWBRIDGE_SYNC and keeps CPU devices responsive). Tensors allocated on ocl may be reused as soon as
// they are freed by work later in the same queue, as with CUDA's caching allocator.
//
// The functions live in drawbridge._C and are found at run time through a Python capsule, so an
// extension links against nothing of Drawbridge's; `import drawbridge` (or torch's autoload) must
// have run, and the first call needs the GIL to be takeable.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <Python.h>

#include <ATen/core/TensorBase.h>
#include <c10/util/Exception.h>

#include <cstddef>
#include <string>

namespace drawbridge {

// The table behind the functions below. Append only; `version` grows with each addition.
struct ExtensionApi {
  int version;
  // The cl_mem holding `address` on ocl:`device` and the address's byte offset inside it.
  void (*buffer)(int device, const void* address, cl_mem* mem, size_t* offset);
  cl_command_queue (*current_queue)(int device);
  cl_context (*context)(int device);
  cl_device_id (*device_id)(int device);
  int (*current_device)();
  // A program for ocl:`device`, built once per process (or loaded from the disk cache). The
  // program stays alive for the life of the process; do not release it.
  cl_program (*program)(int device, const char* label, const char* source, const char* options);
  void (*enqueued)(cl_command_queue queue);
};

constexpr int kExtensionApiVersion = 1;
constexpr const char* kExtensionApiCapsule = "drawbridge._C._extension_api";

inline const ExtensionApi& api() {
  static const ExtensionApi* table = [] {
    PyGILState_STATE gil = PyGILState_Ensure();
    auto* t = static_cast<const ExtensionApi*>(PyCapsule_Import(kExtensionApiCapsule, 0));
    if (!t) PyErr_Clear();
    PyGILState_Release(gil);
    TORCH_CHECK(t, "drawbridge's C++ API is not available: import drawbridge before using it");
    TORCH_CHECK(t->version >= kExtensionApiVersion, "this extension needs drawbridge's C++ API version ",
                kExtensionApiVersion, " or later; the installed drawbridge has ", t->version);
    return t;
  }();
  return *table;
}

struct Buffer {
  cl_mem mem;
  size_t offset;  // bytes from the start of mem to the tensor's first element
};

// The buffer of an ocl tensor. OpenCL kernels cannot take an interior pointer: pass `mem` and
// `offset` (or make a sub-buffer when the offset is a multiple of CL_DEVICE_MEM_BASE_ADDR_ALIGN).
inline Buffer buffer(const at::TensorBase& tensor) {
  TORCH_CHECK(tensor.device().type() == c10::DeviceType::PrivateUse1, "drawbridge::buffer: expected an ocl tensor, got ",
              tensor.device());
  Buffer b{nullptr, 0};
  api().buffer(tensor.device().index(), tensor.data_ptr(), &b.mem, &b.offset);
  return b;
}

inline int current_device() { return api().current_device(); }
inline cl_command_queue current_queue(int device = -1) {
  return api().current_queue(device < 0 ? current_device() : device);
}
inline cl_context context(int device = -1) { return api().context(device < 0 ? current_device() : device); }
inline cl_device_id device_id(int device = -1) { return api().device_id(device < 0 ? current_device() : device); }
inline cl_program program(const std::string& source, const std::string& options = "",
                          const std::string& label = "extension", int device = -1) {
  return api().program(device < 0 ? current_device() : device, label.c_str(), source.c_str(), options.c_str());
}
inline void enqueued(cl_command_queue queue) { api().enqueued(queue); }

}  // namespace drawbridge
