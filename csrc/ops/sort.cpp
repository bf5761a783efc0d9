// sort (stable), argsort and topk (cl/sort.cl): one work-item per row, merge sort.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"

namespace drawbridge::ops {

namespace {

std::tuple<at::Tensor&, at::Tensor&> sort_out(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                              bool descending, at::Tensor& values, at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_dtype("sort", self.scalar_type(), Dtypes::All);
  at::native::resize_output(values, self.sizes());
  at::native::resize_output(indices, self.sizes());
  if (self.numel() == 0) return {values, indices};
  if (self.dim() == 0) {
    values.copy_(self);
    indices.zero_();
    return {values, indices};
  }
  c10::DeviceGuard guard(self.device());
  const int64_t n = self.size(dim);
  auto head = [&](const at::Tensor& t) { return t.narrow(dim, 0, 1); };
  at::Tensor v0 = head(values), i0 = head(indices), s0 = head(self);
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .resize_outputs(false)
                  .set_check_mem_overlap(false)
                  .add_output(v0)
                  .add_output(i0)
                  .add_const_input(s0)
                  .build();
  c10::ScalarType ct = kernels::compute_type(self.scalar_type());
  const int64_t rows = self.numel() / n;
  at::Tensor keys = at::empty({2 * rows * n}, self.options().dtype(ct));
  at::Tensor pos = at::empty({2 * rows * n}, self.options().dtype(c10::kLong));
  auto& mem = core::checked_device(self.device().index()).memory();
  auto kref = mem.resolve(keys.data_ptr()), pref = mem.resolve(pos.data_ptr());
  cl_ulong values_step = values.stride(dim) * values.element_size();
  cl_ulong indices_step = indices.stride(dim) * indices.element_size();
  cl_ulong in_step = self.stride(dim) * self.element_size();
  cl_int desc = descending ? 1 : 0;
  cl_ulong keys_off = kref.offset, pos_off = pref.offset;
  run_pointwise(iter, "sort.cl", "sort_rows", ct, cl_ulong(n), values_step, indices_step, in_step, kref.mem, keys_off,
                pref.mem, pos_off, desc);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                        bool descending) {
  at::Tensor values = at::empty({0}, self.options()), indices = at::empty({0}, self.options().dtype(c10::kLong));
  sort_out(self, stable, dim, descending, values, indices);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
                                              bool sorted, at::Tensor& values, at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.dim() == 0 ? 1 : self.size(dim);
  TORCH_CHECK(k >= 0 && k <= n, "selected index k out of range");
  auto [all_values, all_indices] = sort_stable(self, true, dim, largest);
  at::Tensor v = self.dim() == 0 ? all_values : all_values.narrow(dim, 0, k);
  at::Tensor i = self.dim() == 0 ? all_indices : all_indices.narrow(dim, 0, k);
  assign_out(values, v);
  assign_out(indices, i);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  at::Tensor values = at::empty({0}, self.options()), indices = at::empty({0}, self.options().dtype(c10::kLong));
  topk_out(self, k, dim, largest, sorted, values, indices);
  return {values, indices};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sort.stable", TORCH_FN(sort_stable));
  m.impl("sort.values_stable", TORCH_FN(sort_out));
  m.impl("topk", TORCH_FN(topk));
  m.impl("topk.values", TORCH_FN(topk_out));
}

}  // namespace drawbridge::ops
