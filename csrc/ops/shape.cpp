// Shape ops built from other native ops (no kernels of their own): cat, roll, flip, tril, triu.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorShape.h>
#include <ATen/native/TypeProperties.h>
#include <torch/library.h>

#include "ops/out_arguments.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  auto list = tensors.materialize();
  TORCH_CHECK(!list.empty(), "torch.cat(): expected a non-empty list of Tensors");
  at::native::check_cat_no_zero_dim(list);
  // 1-d empty tensors are skipped, as PyTorch always has (legacy behaviour).
  const at::Tensor* first = nullptr;
  for (const at::Tensor& t : list)
    if (!at::native::cat_should_skip_tensor(t)) {
      first = &t;
      break;
    }
  c10::ScalarType dtype = at::native::result_type(tensors);
  TORCH_CHECK(c10::canCast(dtype, out.scalar_type()), "torch.cat(): input types can't be cast to the desired output type ",
              out.scalar_type());
  if (!first) {  // everything skipped: the result is empty
    at::native::resize_output(out, {0});
    return out;
  }
  dim = at::legacy_cat_wrap_dim(dim, list);
  int64_t total = 0;
  int64_t index = 0;
  for (const at::Tensor& t : list) {
    TORCH_CHECK(t.device() == out.device(), "torch.cat(): all input tensors and out must be on the same device, but "
                "got ", t.device(), " and ", out.device());
    if (!at::native::cat_should_skip_tensor(t)) {
      at::native::check_cat_shape_except_dim(*first, t, dim, index);
      total += t.size(dim);
    }
    index++;
  }
  check_out_overlap(out, std::vector<at::Tensor>(list.begin(), list.end()));
  at::DimVector shape(first->sizes().begin(), first->sizes().end());
  shape[dim] = total;
  at::native::resize_output(out, shape);
  int64_t offset = 0;
  for (const at::Tensor& t : list) {
    if (at::native::cat_should_skip_tensor(t)) continue;
    out.narrow(dim, offset, t.size(dim)).copy_(t);
    offset += t.size(dim);
  }
  return out;
}

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  auto list = tensors.materialize();
  TORCH_CHECK(!list.empty(), "torch.cat(): expected a non-empty list of Tensors");
  at::Tensor out = at::empty({0}, list[0].get().options().dtype(at::native::result_type(tensors)));
  return cat_out(tensors, dim, out);
}

at::Tensor roll_impl(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  if (self.numel() == 0) return self.clone();  // as on the CPU, before the dims are looked at
  if (dims.empty() && shifts.size() == 1) {
    const int64_t zero = 0;
    return roll_impl(self.flatten(), shifts, at::IntArrayRef(zero)).view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims:", dims.size());
  at::Tensor result = self.clone(at::MemoryFormat::Contiguous);
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t dim = at::maybe_wrap_dim(dims[k], self.dim());
    int64_t n = self.size(dim);
    if (n == 0) continue;
    int64_t s = ((shifts[k] % n) + n) % n;
    if (s == 0) continue;
    at::Tensor source = result.clone();
    result.narrow(dim, 0, s).copy_(source.narrow(dim, n - s, s));
    result.narrow(dim, s, n - s).copy_(source.narrow(dim, 0, n - s));
  }
  return result;
}

at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims) {
  at::Tensor result = self;
  std::vector<bool> mask(std::max<int64_t>(self.dim(), 1), false);  // a 0-d tensor takes dim 0 or -1
  for (int64_t d : dims) {
    d = at::maybe_wrap_dim(d, self.dim());
    TORCH_CHECK(!mask[d], "dim ", d, " appears multiple times in the list of dims");
    mask[d] = true;
  }
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!mask[d] || self.size(d) < 2) continue;
    at::Tensor reversed = at::arange(self.size(d) - 1, -1, -1, self.options().dtype(c10::kLong));
    result = result.index_select(d, reversed);
  }
  return result.is_same(self) ? self.clone() : result;
}

// tril / triu: keep the elements on one side of a diagonal, from native arange, compare and where.
template <bool Lower>
at::Tensor& tri_out(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
  TORCH_CHECK(self.dim() >= 2, Lower ? "tril" : "triu", ": input tensor must have at least 2 dimensions");
  const int64_t rows = self.size(-2), cols = self.size(-1);
  auto opts = self.options().dtype(c10::kLong);
  at::Tensor offset = at::arange(cols, opts).unsqueeze(0) - at::arange(rows, opts).unsqueeze(1);
  at::Tensor keep = Lower ? offset <= diagonal : offset >= diagonal;
  at::Tensor result = at::where(keep, self, at::zeros({}, self.options()));
  if (!out.is_same(self)) at::native::resize_output(out, self.sizes());
  return out.copy_(result);
}
// channel_shuffle: (N, g, C/g, ...) with the two channel dims swapped, a view and one copy.
at::Tensor shuffle_channels(const at::Tensor& self, int64_t groups) {
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input to have at least 3 dimensions, but got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.", " Value of groups:", groups);
  const int64_t channels = self.size(1);
  TORCH_CHECK(channels % groups == 0, "Number of channels must be divisible by groups. Got ", channels,
              " channels and ", groups, " groups.");
  if (self.numel() == 0) return self.clone();
  at::DimVector grouped{self.size(0), groups, channels / groups};
  grouped.append(self.sizes().begin() + 2, self.sizes().end());
  return self.reshape(grouped).transpose(1, 2).reshape(self.sizes());
}

at::Tensor& channel_shuffle_out(const at::Tensor& self, int64_t groups, at::Tensor& out) {
  return assign_out(out, shuffle_channels(self, groups), {self});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("channel_shuffle", TORCH_FN(shuffle_channels));
  m.impl("channel_shuffle.out", TORCH_FN(channel_shuffle_out));
  m.impl("cat", TORCH_FN(cat));
  m.impl("cat.out", TORCH_FN(cat_out));
  m.impl("roll", TORCH_FN(roll_impl));
  m.impl("flip", TORCH_FN(flip));
  register_from_out<&tri_out<true>>(m, "tril", "tril_", "tril.out", ComplexArgs::Native);
  register_from_out<&tri_out<false>>(m, "triu", "triu_", "triu.out", ComplexArgs::Native);
}

}  // namespace drawbridge::ops
