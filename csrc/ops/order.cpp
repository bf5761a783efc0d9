// Order statistics and searching, built on the stable sort and the indexing kernels: kthvalue,
// median, nanmedian, unique (also along a dim), unique_consecutive, searchsorted (cl/sort.cl), bucketize, isin,
// bincount, histc and repeat_interleave.
#include <algorithm>

#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "ops/indexing.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

// Copies a computed (values, indices) pair of self into the caller's outputs, dropping dim unless
// keepdim.
std::tuple<at::Tensor&, at::Tensor&> emit(at::Tensor v, at::Tensor i, int64_t dim, bool keepdim, const at::Tensor& self,
                                          at::Tensor& values, at::Tensor& indices) {
  if (!keepdim && self.dim() > 0) {
    v = v.squeeze(dim);
    i = i.squeeze(dim);
  }
  assign_out(values, v, {self});
  assign_out(indices, i, {self});
  return {values, indices};
}

// The k-th smallest (0-based `position`, a tensor broadcastable along dim) of each row.
std::pair<at::Tensor, at::Tensor> pick_sorted(const at::Tensor& self, int64_t dim, const at::Tensor& position) {
  auto [sorted, order] = self.sort(std::optional<bool>(true), dim);
  return {sorted.gather(dim, position), order.gather(dim, position)};
}


std::tuple<at::Tensor&, at::Tensor&> kthvalue_out(const at::Tensor& self, int64_t k, int64_t dim, bool keepdim,
                                                  at::Tensor& values, at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.dim() == 0 ? 1 : self.size(dim);
  TORCH_CHECK_INDEX(n > 0, "kthvalue(): Expected reduction dim ", dim, " to have non-zero size.");
  TORCH_CHECK(k >= 1 && k <= n, "kthvalue(): selected number k out of range for dimension ", dim);
  at::Tensor row = self.dim() == 0 ? self.view({1}) : self;
  int64_t d = self.dim() == 0 ? 0 : dim;
  at::DimVector kept(row.sizes().begin(), row.sizes().end());
  kept[d] = 1;
  at::Tensor position = at::full(kept, k - 1, self.options().dtype(c10::kLong));
  auto [v, i] = pick_sorted(row, d, position);
  if (self.dim() == 0) return emit(v.squeeze(0), i.squeeze(0), 0, true, self, values, indices);
  return emit(v, i, dim, keepdim, self, values, indices);
}

// median along dim: the lower middle element, or the first NaN of a row that has one. With
// ignore_nan (nanmedian), the middle of the row's non-NaN elements.
std::tuple<at::Tensor&, at::Tensor&> median_dim_impl(const at::Tensor& self, int64_t dim, bool keepdim, bool ignore_nan,
                                                     at::Tensor& values, at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  at::Tensor row = self.dim() == 0 ? self.view({1}) : self;
  int64_t d = self.dim() == 0 ? 0 : dim;
  const int64_t n = row.size(d);
  // The CPU checks the size before the dtype.
  TORCH_CHECK_INDEX(n > 0, "median(): Expected reduction dim ", dim, " to have non-zero size.");
  check_dtype("median", self.scalar_type(), Dtypes::NotBool);
  at::Tensor nans = row.isnan().sum(d, /*keepdim=*/true);
  at::Tensor position = ignore_nan ? ((n - nans - 1).clamp_min(0)).div(2, "floor")
                                   : at::where(nans > 0, n - nans, at::full({}, (n - 1) / 2, nans.options()));
  auto [v, i] = pick_sorted(row, d, position);
  if (self.dim() == 0) return emit(v.squeeze(0), i.squeeze(0), 0, true, self, values, indices);
  return emit(v, i, dim, keepdim, self, values, indices);
}

std::tuple<at::Tensor&, at::Tensor&> median_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                    at::Tensor& values, at::Tensor& indices) {
  return median_dim_impl(self, dim, keepdim, false, values, indices);
}
std::tuple<at::Tensor&, at::Tensor&> nanmedian_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                       at::Tensor& values, at::Tensor& indices) {
  return median_dim_impl(self, dim, keepdim, true, values, indices);
}
template <bool IgnoreNan>
std::tuple<at::Tensor, at::Tensor> median_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  at::Tensor values = at::empty({0}, self.options()), indices = at::empty({0}, self.options().dtype(c10::kLong));
  median_dim_impl(self, dim, keepdim, IgnoreNan, values, indices);
  return {values, indices};
}
template <bool IgnoreNan>
at::Tensor median_all(const at::Tensor& self) {
  check_dtype("median", self.scalar_type(), Dtypes::NotBool);
  if (self.numel() == 0) return at::full({}, std::numeric_limits<double>::quiet_NaN(), self.options());
  at::Tensor values = at::empty({0}, self.options()), indices = at::empty({0}, self.options().dtype(c10::kLong));
  median_dim_impl(self.reshape({-1}), 0, false, IgnoreNan, values, indices);
  return values;
}

// ---- unique ---------------------------------------------------------------------------------

// Runs of equal neighbours, given where each starts among n items (a bool per item): the run
// of each item, in the items' original order when `order` holds the original position of each
// (a sort's indices), and each run's length.
std::tuple<at::Tensor, at::Tensor> run_inverse_and_counts(const at::Tensor& starts, const at::Tensor& order,
                                                           int64_t num_runs) {
  at::Tensor group = starts.to(c10::kLong).cumsum(0).sub_(1);
  at::Tensor inverse = order.defined() ? at::empty_like(group).scatter_(0, order, group) : group;
  at::Tensor counts = at::zeros({num_runs}, group.options()).index_add_(0, group, at::ones_like(group));
  return {inverse, counts};
}

// Given a sorted (or, for unique_consecutive, original) flat sequence and the original position
// of each element, the unique values, the inverse map (in `shape`) and the counts.
std::tuple<at::Tensor, at::Tensor, at::Tensor> runs(const at::Tensor& seq, const at::Tensor& order,
                                                    at::IntArrayRef shape, bool return_inverse, bool return_counts) {
  const int64_t n = seq.numel();
  at::Tensor starts = at::ones({n}, seq.options().dtype(c10::kBool));
  if (n > 1) starts.narrow(0, 1, n - 1).copy_(seq.narrow(0, 1, n - 1) != seq.narrow(0, 0, n - 1));
  at::Tensor values = seq.masked_select(starts);
  at::Tensor inverse = at::empty({0}, seq.options().dtype(c10::kLong));
  at::Tensor counts = at::empty({0}, seq.options().dtype(c10::kLong));
  if (return_inverse || return_counts) {
    auto [all_inverse, all_counts] = run_inverse_and_counts(starts, order, values.numel());
    if (return_inverse) inverse = all_inverse.view(shape);
    if (return_counts) counts = all_counts;
  }
  return {values, inverse, counts};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool sorted, bool return_inverse,
                                                       bool return_counts) {
  check_dtype("unique", self.scalar_type(), Dtypes::All);
  // Always sorted, as on CUDA: sorted=False leaves the order unspecified.
  auto [seq, order] = self.reshape({-1}).sort(std::optional<bool>(true), 0);
  return runs(seq, order, self.sizes(), return_inverse, return_counts);
}

std::tuple<at::Tensor, at::Tensor> unique_legacy(const at::Tensor& self, bool sorted, bool return_inverse) {
  auto [values, inverse, counts] = unique2(self, sorted, return_inverse, false);
  return {values, inverse};
}

// unique along `dim`: the distinct slices self.select(dim, i), sorted lexicographically unless
// `consecutive` (which only merges equal neighbours). Inverse and counts are always computed,
// as by the CPU backend.
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_slices(const at::Tensor& self, int64_t dim, bool consecutive) {
  const char* name = consecutive ? "unique_dim_consecutive" : "unique_dim";
  check_dtype(name, self.scalar_type(), Dtypes::All);
  dim = at::maybe_wrap_dim(dim, self.dim());
  const at::TensorOptions long_options = self.options().dtype(c10::kLong);
  if (self.numel() == 0) {
    TORCH_CHECK(std::count(self.sizes().begin(), self.sizes().end(), 0) == 1,
                "Number of zero sized dimensions is more than one, so unique cannot be applied ");
    TORCH_CHECK(self.size(dim) == 0, "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
    return {at::empty(self.sizes(), self.options()), at::empty({0}, long_options), at::empty({0}, long_options)};
  }
  at::Tensor moved = self.movedim(dim, 0);
  std::vector<int64_t> sizes = moved.sizes().vec();
  const int64_t n = sizes[0];
  at::Tensor rows = moved.contiguous().view({n, -1});
  at::Tensor order;  // the original position of each row of `rows`
  if (!consecutive) {
    // Lexicographic order from stable sorts by each column, the last column first.
    order = at::arange(n, long_options);
    for (int64_t column = rows.size(1) - 1; column >= 0; --column) {
      at::Tensor keys = rows.select(1, column).index_select(0, order);
      order = order.index_select(0, std::get<1>(keys.sort(std::optional<bool>(true), 0)));
    }
    rows = rows.index_select(0, order);
  }
  at::Tensor starts = at::ones({n}, self.options().dtype(c10::kBool));
  if (n > 1) starts.narrow(0, 1, n - 1).copy_((rows.narrow(0, 1, n - 1) != rows.narrow(0, 0, n - 1)).any(1));
  at::Tensor values = rows.index_select(0, starts.nonzero().squeeze(1));
  auto [inverse, counts] = run_inverse_and_counts(starts, order, values.size(0));
  sizes[0] = values.size(0);
  return {values.view(sizes).movedim(0, dim), inverse, counts};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_dim(const at::Tensor& self, int64_t dim, bool /*sorted*/,
                                                          bool /*return_inverse*/, bool /*return_counts*/) {
  return unique_slices(self, dim, /*consecutive=*/false);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_dim_consecutive(const at::Tensor& self, int64_t dim,
                                                                      bool /*return_inverse*/, bool /*return_counts*/) {
  return unique_slices(self, dim, /*consecutive=*/true);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive(const at::Tensor& self, bool return_inverse,
                                                                  bool return_counts, std::optional<int64_t> dim) {
  if (dim.has_value() && self.dim() > 1) return unique_slices(self, *dim, /*consecutive=*/true);
  check_dtype("unique_consecutive", self.scalar_type(), Dtypes::All);
  return runs(self.reshape({-1}), at::Tensor(), self.sizes(), return_inverse, return_counts);
}

// ---- searchsorted, bucketize, isin ----------------------------------------------------------

void check_searchsorted(const at::Tensor& boundaries, const at::Tensor& input, bool out_int32, bool right,
                        std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  if (side) {
    TORCH_CHECK(*side == "left" || *side == "right", "torch.searchsorted(): side can only be 'left' or 'right' but ",
                "got ", *side);
    TORCH_CHECK(!right || *side == "right", "torch.searchsorted(): side and right can't be set to opposites, got side ",
                "of ", *side, " while right was True");
  }
  TORCH_CHECK(boundaries.dim() != 0, "torch.searchsorted(): boundaries tensor should have positive dimension, but ",
              "got 0 dimension");
  TORCH_CHECK(boundaries.dim() == 1 || boundaries.sizes().slice(0, boundaries.dim() - 1) ==
                                           input.sizes().slice(0, std::max<int64_t>(input.dim() - 1, 0)),
              "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries ",
              "tensor and input value tensor must match, but we got boundaries tensor ", boundaries.sizes(),
              " and input value tensor ", input.sizes());
  if (sorter && sorter->defined()) {
    TORCH_CHECK(sorter->scalar_type() == c10::kLong, "torch.searchsorted(): sorter must be a tensor of long dtype but ",
                "got dtype ", sorter->scalar_type());
    TORCH_CHECK(sorter->sizes() == boundaries.sizes(), "torch.searchsorted(): boundary and sorter must have the same ",
                "size, but got boundary tensor ", boundaries.sizes(), "and got sorter tensor ", sorter->sizes());
  }
}

// A row-start view of `rows` (last dim searched) with input's shape: stride 0 along input's last
// dimension, and across every dimension when rows is 1-D.
at::Tensor row_starts(const at::Tensor& rows, const at::Tensor& input) {
  at::DimVector strides(input.dim(), 0);
  if (rows.dim() > 1)
    for (int64_t d = 0; d + 1 < input.dim(); ++d) strides[d] = rows.stride(d);
  return rows.as_strided(input.sizes(), strides);
}

at::Tensor& searchsorted_out(const at::Tensor& boundaries, const at::Tensor& self, bool out_int32, bool right,
                             std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter,
                             at::Tensor& out) {
  check_searchsorted(boundaries, self, out_int32, right, side, sorter);
  const bool upper = right || (side && *side == "right");
  at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  at::Tensor input = self.dim() == 0 ? self.view({1}) : self;
  c10::ScalarType common = at::promote_types(boundaries.scalar_type(), self.scalar_type());
  at::Tensor seq = boundaries.to(common).contiguous();
  const bool use_sorter = sorter && sorter->defined();
  at::Tensor result = at::empty(input.sizes(), self.options().dtype(out_int32 ? c10::kInt : c10::kLong));
  // Without a sorter the kernel reads no permutation: an int64 placeholder keeps operand 3's dtype
  // the sorter's, so the two calls share a program.
  at::Tensor order_rows = use_sorter ? row_starts(sorter->contiguous(), input)
                                     : at::empty({1}, self.options().dtype(c10::kLong)).as_strided(
                                           input.sizes(), at::DimVector(input.dim(), 0));
  at::Tensor seq_rows = row_starts(seq, input);
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .set_check_mem_overlap(false)
                  .add_output(result)
                  .add_const_input(input)
                  .add_const_input(seq_rows)
                  .add_const_input(order_rows)
                  .build();
  cl_ulong n = seq.size(-1), step = seq.element_size(), sorter_step = sizeof(int64_t);
  cl_int right_arg = upper ? 1 : 0, use_sorter_arg = use_sorter ? 1 : 0;
  c10::DeviceGuard guard(self.device());
  kernels::KernelSpec spec{"sort.cl", "searchsorted", kernels::compute_type(common)};
  spec.dynamic_dtypes = true;  // the kernel touches its operands through their tokens alone
  kernels::launch_pointwise(iter, spec, n, step, sorter_step, right_arg, use_sorter_arg);
  out.copy_(result.view(self.sizes()));
  return out;
}

at::Tensor searchsorted(const at::Tensor& boundaries, const at::Tensor& self, bool out_int32, bool right,
                        std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  at::Tensor out = at::empty({0}, self.options().dtype(out_int32 ? c10::kInt : c10::kLong));
  return searchsorted_out(boundaries, self, out_int32, right, side, sorter, out);
}
at::Tensor searchsorted_scalar(const at::Tensor& boundaries, const c10::Scalar& self, bool out_int32, bool right,
                               std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  return at::searchsorted(boundaries, at::scalar_tensor(self, boundaries.options()), out_int32, right, side, sorter);
}
at::Tensor& searchsorted_scalar_out(const at::Tensor& boundaries, const c10::Scalar& self, bool out_int32, bool right,
                                    std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter,
                                    at::Tensor& out) {
  return searchsorted_out(boundaries, at::scalar_tensor(self, boundaries.options()), out_int32, right, side, sorter,
                          out);
}

at::Tensor& bucketize_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right,
                          at::Tensor& out) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return searchsorted_out(boundaries, self, out_int32, right, std::nullopt, std::nullopt, out);
}
at::Tensor bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  at::Tensor out = at::empty({0}, self.options().dtype(out_int32 ? c10::kInt : c10::kLong));
  return bucketize_out(self, boundaries, out_int32, right, out);
}
at::Tensor bucketize_scalar(const c10::Scalar& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  return at::bucketize(at::scalar_tensor(self, boundaries.options()), boundaries, out_int32, right);
}

// isin: each element looked up in the sorted test elements.
at::Tensor& isin_out(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique, bool invert,
                     at::Tensor& out) {
  at::native::resize_output(out, elements.sizes());
  if (elements.numel() == 0) return out;
  if (test_elements.numel() == 0) return out.fill_(invert);
  c10::ScalarType common = at::promote_types(elements.scalar_type(), test_elements.scalar_type());
  at::Tensor sorted = std::get<0>(test_elements.reshape({-1}).to(common).sort(std::optional<bool>(true), 0));
  at::Tensor probe = elements.to(common);
  at::Tensor at_pos = at::searchsorted(sorted, probe.reshape({-1})).clamp_max_(sorted.numel() - 1);
  at::Tensor found = sorted.index_select(0, at_pos).view(elements.sizes()) == probe;
  return out.copy_(invert ? found.logical_not() : found);
}
at::Tensor& isin_tensor_scalar_out(const at::Tensor& elements, const c10::Scalar& test, bool assume_unique,
                                   bool invert, at::Tensor& out) {
  at::native::resize_output(out, elements.sizes());
  return out.copy_(invert ? elements.ne(test) : elements.eq(test));
}
at::Tensor& isin_scalar_tensor_out(const c10::Scalar& element, const at::Tensor& test_elements, bool assume_unique,
                                   bool invert, at::Tensor& out) {
  return isin_out(at::scalar_tensor(element, test_elements.options()), test_elements, assume_unique, invert, out);
}
at::Tensor isin(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique, bool invert) {
  at::Tensor out = at::empty({0}, elements.options().dtype(c10::kBool));
  return isin_out(elements, test_elements, assume_unique, invert, out);
}
at::Tensor isin_tensor_scalar(const at::Tensor& elements, const c10::Scalar& test, bool assume_unique, bool invert) {
  at::Tensor out = at::empty({0}, elements.options().dtype(c10::kBool));
  return isin_tensor_scalar_out(elements, test, assume_unique, invert, out);
}
at::Tensor isin_scalar_tensor(const c10::Scalar& element, const at::Tensor& test_elements, bool assume_unique,
                              bool invert) {
  at::Tensor out = at::empty({0}, test_elements.options().dtype(c10::kBool));
  return isin_scalar_tensor_out(element, test_elements, assume_unique, invert, out);
}

// ---- counting -------------------------------------------------------------------------------

at::Tensor bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights, int64_t minlength) {
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK(self.dim() == 1 && !c10::isFloatingType(self.scalar_type()) && self.scalar_type() != c10::kBool,
              "bincount only supports 1-d non-negative integral inputs.");
  const bool weighted = weights && weights->defined();
  if (weighted)
    TORCH_CHECK(weights->dim() == 1 && weights->size(0) == self.size(0),
                "weights should be 1-d and have the same length as input");
  c10::ScalarType dtype = !weighted ? c10::kLong : weights->scalar_type() == c10::kFloat ? c10::kFloat : c10::kDouble;
  int64_t bins = minlength;
  if (self.numel() > 0) {
    // The result's length depends on the data: one synchronization, as on CUDA.
    at::Tensor extremes = at::stack({self.min(), self.max()}).cpu();
    TORCH_CHECK(extremes[0].item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral inputs.");
    bins = std::max(bins, extremes[1].item<int64_t>() + 1);
  }
  at::Tensor out = at::zeros({bins}, self.options().dtype(dtype));
  if (self.numel() > 0)
    // index_add takes int32/int64 indices; the CPU's bincount counts any integral input.
    out.index_add_(0, self.scalar_type() == c10::kInt ? self : self.to(c10::kLong),
                   weighted ? weights->to(dtype) : at::ones({self.numel()}, out.options()));
  return out;
}

at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max,
                      at::Tensor& out) {
  TORCH_CHECK(bins > 0, "torch.histc(): bins must be > 0, but got ", bins, " for dimension 0");
  check_dtype("histc", self.scalar_type(), Dtypes::Floating);
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "torch.histc: input tensor and hist tensor should have the same ",
              "dtype, but got input ", self.scalar_type(), " and hist ", out.scalar_type());
  double lo = min.toDouble(), hi = max.toDouble();
  if (lo == hi && self.numel() > 0) {
    at::Tensor extremes = at::stack({self.min(), self.max()}).to(c10::kDouble).cpu();  // one synchronization
    lo = extremes[0].item<double>();
    hi = extremes[1].item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TORCH_CHECK(!(std::isinf(lo) || std::isinf(hi) || std::isnan(lo) || std::isnan(hi)), "torch.histc(): range of [", lo,
              ", ", hi, "] is not finite");
  TORCH_CHECK(lo < hi, "torch.histc(): max must be larger than min");
  at::native::resize_output(out, {bins});
  out.zero_();
  if (self.numel() == 0) return out;
  at::Tensor x = self.reshape({-1});
  at::Tensor inside = (x >= lo).logical_and_(x <= hi);
  // The CPU's bin formula, in the input's precision; the right edge belongs to the last bin.
  at::Tensor bin = x.sub(lo).mul_(bins).div_(hi - lo).to(c10::kLong).clamp_(0, bins - 1);
  out.index_add_(0, bin, inside.to(self.scalar_type()));
  return out;
}

// repeat_interleave(repeats): index i appears repeats[i] times.
at::Tensor repeat_interleave(const at::Tensor& repeats, std::optional<c10::SymInt> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK(repeats.scalar_type() == c10::kLong || repeats.scalar_type() == c10::kInt,
              "repeats has to be Long or Int tensor");
  if (repeats.numel() == 0) return at::empty({0}, repeats.options());
  at::Tensor ends = repeats.cumsum(0);
  int64_t total = 0;
  if (output_size) {
    total = output_size->expect_int();
  } else {
    at::Tensor stats = at::stack({repeats.min().to(c10::kLong), ends[-1].to(c10::kLong)}).cpu();  // one sync
    TORCH_CHECK(stats[0].item<int64_t>() >= 0, "repeats can not be negative");
    total = stats[1].item<int64_t>();
  }
  at::Tensor positions = at::arange(total, repeats.options().dtype(ends.scalar_type()));
  return at::searchsorted(ends, positions, repeats.scalar_type() == c10::kInt, /*right=*/true);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("kthvalue.values", TORCH_FN(kthvalue_out));
  m.impl("median.dim_values", TORCH_FN(median_dim_out));
  m.impl("median.dim", TORCH_FN(median_dim<false>));
  m.impl("median", TORCH_FN(median_all<false>));
  m.impl("nanmedian.dim_values", TORCH_FN(nanmedian_dim_out));
  m.impl("nanmedian.dim", TORCH_FN(median_dim<true>));
  m.impl("nanmedian", TORCH_FN(median_all<true>));
  m.impl("_unique2", TORCH_FN(unique2));
  m.impl("_unique", TORCH_FN(unique_legacy));
  m.impl("unique_dim", TORCH_FN(unique_dim));
  m.impl("unique_dim_consecutive", TORCH_FN(unique_dim_consecutive));
  m.impl("unique_consecutive", TORCH_FN(unique_consecutive));
  m.impl("searchsorted.Tensor", TORCH_FN(searchsorted));
  m.impl("searchsorted.Tensor_out", TORCH_FN(searchsorted_out));
  m.impl("searchsorted.Scalar", TORCH_FN(searchsorted_scalar));
  m.impl("searchsorted.Scalar_out", TORCH_FN(searchsorted_scalar_out));
  m.impl("bucketize.Tensor", TORCH_FN(bucketize));
  m.impl("bucketize.Tensor_out", TORCH_FN(bucketize_out));
  m.impl("bucketize.Scalar", TORCH_FN(bucketize_scalar));
  m.impl("isin.Tensor_Tensor", TORCH_FN(isin));
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(isin_out));
  m.impl("isin.Tensor_Scalar", TORCH_FN(isin_tensor_scalar));
  m.impl("isin.Tensor_Scalar_out", TORCH_FN(isin_tensor_scalar_out));
  m.impl("isin.Scalar_Tensor", TORCH_FN(isin_scalar_tensor));
  m.impl("isin.Scalar_Tensor_out", TORCH_FN(isin_scalar_tensor_out));
  m.impl("bincount", TORCH_FN(bincount));
  register_from_out<&histc_out>(m, "histc", nullptr, "histc.out", ComplexArgs::Native);
  m.impl("repeat_interleave.Tensor", TORCH_FN(repeat_interleave));
}

}  // namespace drawbridge::ops
