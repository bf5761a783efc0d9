// copy_ in every direction (CPU->ocl, ocl->CPU, ocl->ocl), fill_, and item().
//
// Host<->device transfers move one dense span of bytes. When the two sides differ in dtype or
// layout, the conversion happens on the CPU side with PyTorch's own copy_, so results equal the
// CPU's bit for bit. Device-side copies go through the pointwise launcher.
#include <cstring>

#include <ATen/native/TensorIterator.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "core/host_allocator.h"
#include "kernels/kernel_library.h"
#include "kernels/pointwise_launcher.h"
#include "ops/pointwise.h"
#include "runtime/commands.h"

namespace drawbridge::ops {

namespace {

runtime::BufferRef buffer_of(const at::Tensor& t) {
  return core::checked_device(t.device().index()).memory().resolve(t.data_ptr());
}

size_t span_bytes(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

// A CPU tensor with the same sizes, strides and dtype as `like`, so that one span copy moves it.
at::Tensor host_twin(const at::Tensor& like, c10::ScalarType dtype) {
  return at::empty_strided(like.sizes(), like.strides(), like.options().device(c10::kCPU).dtype(dtype));
}

bool same_layout(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.strides() == b.strides() && a.scalar_type() == b.scalar_type();
}

void copy_on_device(const at::Tensor& dst, const at::Tensor& src) {
  auto iter = at::TensorIteratorConfig()
                  .add_output(dst)
                  .add_const_input(src)
                  .resize_outputs(false)
                  .check_all_same_dtype(false)
                  .build();
  if (iter.numel() == 0) return;
  c10::DeviceGuard guard(dst.device());
  const auto dst_type = dst.scalar_type(), src_type = src.scalar_type();
  if (dst_type == src_type && iter.is_contiguous()) {
    runtime::enqueue_copy(core::current_queue(), buffer_of(src), buffer_of(dst), span_bytes(dst));
    return;
  }
  if (dst_type == src_type) {
    kernels::launch_pointwise(iter, {"copy.cl", "copy", dst_type, "", /*raw=*/true});
    return;
  }
  if (!kernels::dtype_token(dst_type) || !kernels::dtype_token(src_type)) {
    // Kernels do not compute on this dtype (complex, ...): convert on the CPU.
    dst.copy_(src.cpu().to(dst_type));
    return;
  }
  kernels::KernelSpec spec{"copy.cl", "copy", kernels::compute_type(dst_type)};
  spec.dynamic_dtypes = true;
  // Between integers and bools int64 holds every value: the store's truncation gives each integer
  // dtype's conversion (run_in_int64 leaves floating sources and bool outputs to their own type).
  spec.widen_integers = true;
  kernels::launch_pointwise(iter, spec);
}

void copy_host_to_device(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  c10::DeviceGuard guard(dst.device());
  if (!dst.is_non_overlapping_and_dense()) {
    at::Tensor staged = at::empty_like(dst, at::MemoryFormat::Contiguous);
    copy_host_to_device(staged, src, non_blocking);
    copy_on_device(dst, staged);
    return;
  }
  at::Tensor host = src;
  if (!same_layout(src, dst) || !src.is_non_overlapping_and_dense()) {
    host = host_twin(dst, dst.scalar_type());
    host.copy_(src);  // conversion, broadcasting and layout, by PyTorch's CPU kernels
  }
  cl_command_queue queue = core::current_queue();
  const bool async = non_blocking && core::host_allocator().is_pinned(host.data_ptr());
  cl_event done = nullptr;
  runtime::enqueue_write(queue, buffer_of(dst), host.data_ptr(), span_bytes(dst), !async, async ? &done : nullptr);
  if (done) {
    core::host_allocator().record_event(host.data_ptr(), done);
    clReleaseEvent(done);
  }
}

void copy_device_to_host(const at::Tensor& dst, const at::Tensor& src, bool non_blocking) {
  c10::DeviceGuard guard(src.device());
  at::Tensor dense = src.is_non_overlapping_and_dense() ? src : src.contiguous();
  const bool direct = same_layout(dense, dst) && dst.is_non_overlapping_and_dense();
  at::Tensor host = direct ? dst : host_twin(dense, dense.scalar_type());
  cl_command_queue queue = core::current_queue();
  const bool async = direct && non_blocking && core::host_allocator().is_pinned(host.data_ptr());
  cl_event done = nullptr;
  runtime::enqueue_read(queue, buffer_of(dense), host.data_ptr(), span_bytes(dense), !async, async ? &done : nullptr);
  if (done) {
    core::host_allocator().record_event(host.data_ptr(), done);
    clReleaseEvent(done);
  }
  if (!async) core::raise_device_errors(src.device().index(), queue);
  if (!direct) dst.copy_(host);
}

// Copies move raw storage, as on the CPU; where the lazy conjugate/negative bits of self and src
// differ, the CPU's copy_ then conjugates or negates self in place, and so does this one.
bool lazy_bits_differ(const at::Tensor& self, const at::Tensor& src) {
  return self.is_conj() != src.is_conj() || self.is_neg() != src.is_neg();
}

void apply_lazy_bits(const at::Tensor& self, const at::Tensor& src) {
  if (!lazy_bits_differ(self, src)) return;
  at::Tensor raw = self.is_conj() ? at::_conj(self) : self;  // the same storage, without the bits
  if (raw.is_neg()) raw = at::_neg_view(raw);
  if (self.is_conj() != src.is_conj()) at::view_as_real(raw).select(-1, 1).neg_();
  if (self.is_neg() != src.is_neg()) (raw.is_complex() ? at::view_as_real(raw) : raw).neg_();
}

at::Tensor& copy_(at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  TORCH_CHECK(self.defined() && src.defined(), "copy_ needs defined tensors");
  if (self.is_same(src) || self.numel() == 0) return self;
  // Two tensors viewing the same elements the same way (load_state_dict of a model's own state):
  // nothing to do, as on the CPU. OpenCL refuses a buffer copy onto itself.
  if (self.is_alias_of(src) && self.storage_offset() == src.storage_offset() && same_layout(self, src) &&
      !lazy_bits_differ(self, src))
    return self;
  // apply_lazy_bits works on self's values: a host destination must have them first.
  if (lazy_bits_differ(self, src)) non_blocking = false;
  const bool self_ocl = self.device().type() == core::kOcl;
  const bool src_ocl = src.device().type() == core::kOcl;
  if (self_ocl && src_ocl && self.device() == src.device()) {
    copy_on_device(self, src);
  } else if (self_ocl && src_ocl) {
    copy_host_to_device(self, src.cpu(), false);  // across ocl devices, through the host
  } else if (self_ocl) {
    TORCH_CHECK(src.device().is_cpu(), "copy_ from ", src.device(), " to ", self.device(), " is not supported");
    copy_host_to_device(self, src, non_blocking);
  } else {
    TORCH_CHECK(self.device().is_cpu(), "copy_ from ", src.device(), " to ", self.device(), " is not supported");
    copy_device_to_host(self, src, non_blocking);
  }
  apply_lazy_bits(self, src);
  return self;
}

at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::Tensor out = dst;
  copy_(out, self, non_blocking);
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

at::Tensor& fill_scalar_(at::Tensor& self, const at::Scalar& value) {
  if (self.numel() == 0) return self;
  auto iter = at::TensorIteratorConfig()
                  .add_output(self)
                  .resize_outputs(false)
                  .check_all_same_dtype(false)
                  .build();
  c10::DeviceGuard guard(self.device());
  // Like the CPU, check for overflow only when filling more than one element.
  ElementBits bits = element_bits(value, self.scalar_type(), /*checked=*/self.numel() > 1);
  kernels::launch_pointwise_impl(iter, {"fill.cl", "fill", self.scalar_type(), "", /*raw=*/true}, {bits.arg()});
  return self;
}

at::Tensor& fill_tensor_(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  return fill_scalar_(self, value.item());
}

at::Tensor& zero_(at::Tensor& self) { return fill_scalar_(self, 0); }

at::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() > 0, "item() on a tensor with no elements");
  at::Tensor host = at::empty({}, self.options().device(c10::kCPU));
  c10::DeviceGuard guard(self.device());
  cl_command_queue queue = core::current_queue();
  runtime::enqueue_read(queue, buffer_of(self), host.data_ptr(), self.element_size(), true);
  core::raise_device_errors(self.device().index(), queue);
  return host.item();
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("copy_", TORCH_FN(copy_));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar_));
  m.impl("fill_.Tensor", TORCH_FN(fill_tensor_));
  m.impl("zero_", TORCH_FN(zero_));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
}

}  // namespace drawbridge::ops
