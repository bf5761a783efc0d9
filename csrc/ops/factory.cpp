// Tensor creation on ocl: empty and empty_strided. Everything else (zeros, ones, full, *_like)
// composes these with fill_ and copy_. And autograd's zero tensors.
#include <ATen/EmptyTensor.h>
#include <ATen/native/TensorFactories.h>
#include <torch/library.h>

#include "core/device_allocator.h"
#include "core/device_state.h"
#include "kernels/kernel_library.h"

namespace drawbridge::ops {

namespace {

constexpr c10::DispatchKeySet kOclKeys(c10::DispatchKey::PrivateUse1);

c10::Device checked(std::optional<c10::Device> device_opt, std::optional<c10::Layout> layout_opt,
                    std::optional<bool> pin_memory_opt, c10::ScalarType dtype) {
  c10::Device device = c10::device_or_default(device_opt);
  TORCH_CHECK(device.type() == core::kOcl, "expected an ocl device, got ", device);
  TORCH_CHECK(c10::layout_or_default(layout_opt) == c10::Layout::Strided,
              "ocl supports only strided tensors, not ", c10::layout_or_default(layout_opt));
  TORCH_CHECK(!c10::pinned_memory_or_default(pin_memory_opt), "Only dense CPU tensors can be pinned");
  if (!device.has_index()) device = c10::Device(core::kOcl, core::current_device());
  kernels::check_dtype_supported(dtype, device.index());
  return device;
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype_opt,
                               std::optional<c10::Layout> layout_opt, std::optional<c10::Device> device_opt,
                               std::optional<bool> pin_memory_opt,
                               std::optional<c10::MemoryFormat> memory_format_opt) {
  auto dtype = c10::dtype_or_default(dtype_opt);
  c10::DeviceGuard guard(checked(device_opt, layout_opt, pin_memory_opt, dtype));
  return at::detail::empty_generic(size, &core::device_allocator(), kOclKeys, dtype, memory_format_opt);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype_opt,
                         std::optional<c10::Layout> layout_opt, std::optional<c10::Device> device_opt,
                         std::optional<bool> pin_memory_opt) {
  auto dtype = c10::dtype_or_default(dtype_opt);
  c10::DeviceGuard guard(checked(device_opt, layout_opt, pin_memory_opt, dtype));
  return at::detail::empty_strided_generic(size, stride, &core::device_allocator(), kOclKeys, dtype);
}

// A ZeroTensor, as autograd makes for a gradient known to be zero (sgn's, for one): no storage;
// the ZeroTensor dispatch key makes it read as zeros, and materializes it where an op needs one.
at::Tensor efficient_zero_tensor(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype_opt,
                                 std::optional<c10::Layout> layout_opt, std::optional<c10::Device> device_opt,
                                 std::optional<bool> pin_memory_opt) {
  auto dtype = c10::dtype_or_default(dtype_opt);
  const c10::Device device = checked(device_opt, layout_opt, pin_memory_opt, dtype);
  at::native::ZeroTensorAllocator allocator(device);
  constexpr c10::DispatchKeySet keys = kOclKeys | c10::DispatchKeySet(c10::DispatchKey::ZeroTensor);
  return at::detail::empty_generic(size, &allocator, keys, dtype, std::nullopt);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("_efficientzerotensor", TORCH_FN(efficient_zero_tensor));
}

}  // namespace drawbridge::ops
