#include "ops/matrix_kernels.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/eye.h>
#include <c10/core/DeviceGuard.h>

#include "core/device_state.h"
#include "kernels/kernel_library.h"

namespace drawbridge::ops::linalg {

MatrixArg matrix(const at::Tensor& t) {
  TORCH_INTERNAL_ASSERT(t.dim() == 3);
  if (t.numel() == 0) return {nullptr, {0, 0, 0, 0}};  // no launch reads it
  auto ref = core::checked_device(t.device().index()).memory().resolve(t.const_data_ptr());
  return {ref.mem, {ref.offset, t.stride(1), t.stride(2), t.size(0) > 1 ? t.stride(0) : 0}};
}

MatrixArg transposed(MatrixArg m) {
  std::swap(m.desc.rs, m.desc.cs);
  return m;
}

VectorArg vector(const at::Tensor& t) {
  TORCH_INTERNAL_ASSERT(t.is_contiguous());
  if (t.numel() == 0) return {nullptr, 0};
  auto ref = core::checked_device(t.device().index()).memory().resolve(t.const_data_ptr());
  return {ref.mem, ref.offset};
}

void launch(const char* name, const at::Tensor& like, int64_t items, std::vector<runtime::KernelArg> args) {
  if (items <= 0) return;
  c10::DeviceGuard guard(like.device());
  runtime::Device& device = core::checked_device(like.device().index());
  runtime::Kernel& kernel = kernels::get_kernel(device, "decompositions.cl",
                                                std::string("-DNARGS=1 -DCT=") + kernels::dtype_token(like.scalar_type()), name);
  // One work-item per matrix: GPUs group them for occupancy; a CPU device runs each alone.
  const size_t local = device.properties().cpu_class() ? 1 : std::min<size_t>(64, kernel.max_work_group_size);
  const cl_ulong count = static_cast<cl_ulong>(items);
  args.push_back({sizeof(count), &count});
  runtime::launch_args(kernel, core::current_queue(like.device().index()), (items + local - 1) / local, local,
                       args.data(), args.size());
}

int64_t batch_count(const at::Tensor& a) {
  int64_t batch = 1;
  for (int64_t d = 0; d + 2 < a.dim(); ++d) batch *= a.size(d);
  return batch;
}

at::Tensor flat(const at::Tensor& a) { return a.reshape({batch_count(a), a.size(-2), a.size(-1)}); }

at::Tensor work_copy(const at::Tensor& a) {
  at::Tensor w = at::empty({batch_count(a), a.size(-2), a.size(-1)}, a.options());
  return w.copy_(flat(a));
}

at::Tensor identities(int64_t batch, int64_t rows, int64_t cols, const at::TensorOptions& options) {
  return at::eye(rows, cols, options).expand({batch, rows, cols}).contiguous();
}

at::Tensor meta(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
}

at::Tensor like(const at::Tensor& m, const at::Device& device) {
  return at::empty_strided(m.sizes(), m.strides(), m.options().device(device));
}

void check_matrix(const at::Tensor& A, const char* op, const char* arg) {
  TORCH_CHECK(A.dim() >= 2, op, ": The input tensor ", arg, " must have at least 2 dimensions.");
}

void check_square(const at::Tensor& A, const char* op, const char* arg) {
  check_matrix(A, op, arg);
  TORCH_CHECK(A.size(-1) == A.size(-2), op, ": ", arg, " must be batches of square matrices, but they are ",
              A.size(-2), " by ", A.size(-1), " matrices");
}

void check_lu_input(const at::Tensor& A, const char* op) {
  TORCH_CHECK(A.dim() >= 2, op, ": Expected tensor with 2 or more dimensions. Got size: ", A.sizes(), " instead");
}

void check_floating(const at::Tensor& t, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() == c10::kFloat || t.scalar_type() == c10::kDouble, op,
                              ": not implemented for '", t.scalar_type(), "'");
  kernels::check_dtype_supported(t.scalar_type(), t.device().index());
}

}  // namespace drawbridge::ops::linalg
