// Ops that walk rows along one dimension (cl/row.cl): cumsum, cumprod, logcumsumexp, cummax,
// cummin, mode, softmax, log_softmax and their backward.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "core/fallback.h"
#include "kernels/kernel_library.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"
#include "ops/row.h"
#include "runtime/commands.h"

namespace drawbridge::ops {

namespace {

// Launches `kernel` over every row of the given tensors along dim (outputs first). Extra arguments
// follow: the row length (that of the last tensor, an input), each operand's byte step along dim,
// then `extra`.
template <typename... Extra>
void launch_rows(std::initializer_list<at::Tensor> tensors, int64_t dim, const char* kernel, c10::ScalarType compute,
                 const Extra&... extra) {
  const at::Tensor& out = *tensors.begin();
  if (out.numel() == 0) return;
  const at::Tensor& last = *(tensors.end() - 1);
  int64_t n = last.dim() == 0 ? 1 : last.size(dim);
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(false).resize_outputs(false).set_check_mem_overlap(false);
  std::vector<at::Tensor> heads;
  for (const at::Tensor& t : tensors) heads.push_back(t.dim() == 0 ? t : t.narrow(dim, 0, 1));
  config.add_output(heads[0]);
  for (size_t k = 1; k < heads.size(); ++k) config.add_const_input(heads[k]);
  auto iter = config.build();
  c10::DeviceGuard guard(out.device());
  std::vector<runtime::KernelArg> args;
  cl_ulong length = static_cast<cl_ulong>(n);
  std::vector<cl_ulong> steps;
  for (const at::Tensor& t : tensors) steps.push_back(t.dim() == 0 ? 0 : t.stride(dim) * t.element_size());
  args.push_back({sizeof(cl_ulong), &length});
  for (const cl_ulong& s : steps) args.push_back({sizeof(cl_ulong), &s});
  (args.push_back({sizeof(Extra), &extra}), ...);
  kernels::KernelSpec spec{"row.cl", kernel, compute};
  spec.dynamic_dtypes = true;  // every row kernel touches its operands through their tokens
  // Integer scans, cummax/cummin and mode keep their accumulators in registers and wrap, compare
  // and test equality alike in int64, so small launches of every integer dtype share its program.
  spec.widen_integers = true;
  spec.row_length = static_cast<uint64_t>(n);
  kernels::launch_pointwise_impl(iter, spec, args);
}

// Whether each tensor's rows along dim are runs of contiguous elements one after another: the
// tensor is contiguous and dim is its last dim of a size above 1.
bool contiguous_rows(std::initializer_list<at::Tensor> tensors, int64_t dim) {
  for (const at::Tensor& t : tensors) {
    if (t.dim() == 0 || !t.is_contiguous()) return false;
    for (int64_t d = dim + 1; d < t.dim(); ++d)
      if (t.size(d) != 1) return false;
  }
  return true;
}

// Launches `kernel` of cl/softmax.cl over `rows` rows (outputs first): buffer and offset of each
// tensor, the row length n, the row count, then `extra`. GPUs get a work-group row of up to 256
// lanes per row, enough for its `row_elements`; CPU devices one lane per row, several rows a group.
template <typename... Extra>
void launch_row_groups(std::initializer_list<at::Tensor> tensors, cl_ulong n, cl_ulong rows, cl_ulong row_elements,
                       const char* kernel, c10::ScalarType compute, const Extra&... extra) {
  const at::Tensor& out = *tensors.begin();
  runtime::Device& device = core::checked_device(out.device().index());
  const bool cpu = device.properties().cpu_class();
  std::string options = " -DNARGS=" + std::to_string(tensors.size()) + " -DCT=" + kernels::dtype_token(compute);
  int k = 0;
  for (const at::Tensor& t : tensors) options += " -DT" + std::to_string(k++) + "=" + kernels::dtype_token(t.scalar_type());
  if (cpu) options += " -DONE_LANE=1";
  runtime::Kernel& program = kernels::get_kernel(device, "softmax.cl", options, kernel);
  size_t lanes = 1;
  while (!cpu && lanes < row_elements && lanes < std::min<size_t>(256, program.max_work_group_size)) lanes *= 2;
  // Not fewer rows per group for a short batch: PoCL compiles a kernel again for every
  // work-group shape, and the spare rows of the one group cost nothing.
  const size_t group_rows = cpu ? 8 : std::max<size_t>(1, std::min<size_t>(256, program.max_work_group_size) / lanes);
  const size_t global[2] = {lanes, (rows + group_rows - 1) / group_rows * group_rows};
  const size_t local[2] = {lanes, group_rows};
  std::vector<runtime::BufferRef> refs;
  for (const at::Tensor& t : tensors) refs.push_back(device.memory().resolve(t.const_data_ptr()));
  std::vector<runtime::KernelArg> args;
  for (const runtime::BufferRef& ref : refs) {
    args.push_back({sizeof(cl_mem), &ref.mem});
    args.push_back({sizeof(cl_ulong), &ref.offset});
  }
  args.push_back({sizeof(n), &n});
  args.push_back({sizeof(rows), &rows});
  (args.push_back({sizeof(Extra), &extra}), ...);
  c10::DeviceGuard guard(out.device());
  runtime::launch_nd(program, core::current_queue(out.device().index()), 2, global, local, args.data(), args.size());
}

// launch_row_groups over tensors with contiguous rows along dim.
template <typename... Extra>
void launch_contiguous_rows(std::initializer_list<at::Tensor> tensors, int64_t dim, const char* kernel,
                            c10::ScalarType compute, const Extra&... extra) {
  const at::Tensor& out = *tensors.begin();
  const cl_ulong n = out.size(dim);
  launch_row_groups(tensors, n, out.numel() / n, n, kernel, compute, extra...);
}

template <int Kind>  // 0 cumsum, 1 cumprod, 2 logcumsumexp
at::Tensor& scan_out(const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  static const char* names[] = {"cumsum", "cumprod", "logcumsumexp"};
  c10::ScalarType out_dtype = Kind == 2 ? self.scalar_type() : dtype ? *dtype : out.scalar_type();
  if (Kind == 2) check_dtype(names[Kind], self.scalar_type(), Dtypes::Floating);
  TORCH_CHECK(out.scalar_type() == out_dtype, names[Kind], ": expected out dtype ", out_dtype, " but got ",
              out.scalar_type());
  at::native::resize_output(out, self.sizes());
  launch_rows({out, self}, dim, names[Kind], kernels::compute_type(out_dtype));
  return out;
}

template <int Kind>
at::Tensor scan(const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype) {
  c10::ScalarType out_dtype = at::native::get_dtype_from_self(self, dtype, /*promote_integers=*/true);
  at::Tensor out = at::empty({0}, self.options().dtype(out_dtype));
  return scan_out<Kind>(self, dim, out_dtype, out);
}

template <int Kind>
at::Tensor& scan_(at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype) {
  TORCH_CHECK(!dtype || *dtype == self.scalar_type(), "provided dtype must match the dtype of self");
  at::Tensor out = at::empty_like(self);
  scan_out<Kind>(self, dim, self.scalar_type(), out);
  return self.copy_(out);
}

at::Tensor logcumsumexp(const at::Tensor& self, int64_t dim) {
  at::Tensor out = at::empty({0}, self.options());
  return scan_out<2>(self, dim, std::nullopt, out);
}
at::Tensor& logcumsumexp_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  return scan_out<2>(self, dim, std::nullopt, out);
}

// A tensor's buffer and byte offset for a kernel, or `fallback`'s buffer (never read) where it is
// undefined.
std::pair<cl_mem, cl_ulong> buffer_and_offset(const at::Tensor& t, const at::Tensor& fallback) {
  const at::Tensor& held = t.defined() ? t : fallback;
  const runtime::BufferRef ref = core::checked_device(held.device().index()).memory().resolve(held.const_data_ptr());
  return {ref.mem, ref.offset};
}

// A contiguous float32 tensor as a kernel's buffer and element index.
std::pair<cl_mem, cl_ulong> floats(const at::Tensor& t) {
  TORCH_INTERNAL_ASSERT(t.is_contiguous() && t.scalar_type() == c10::kFloat);
  const auto [mem, offset] = buffer_and_offset(t, t);
  return {mem, offset / sizeof(float)};
}

}  // namespace

void attention_probabilities_(at::Tensor& scores, const at::Tensor& lse, int64_t causal_keys) {
  TORCH_INTERNAL_ASSERT(scores.is_contiguous() && scores.scalar_type() == c10::kFloat);
  const int64_t rows = scores.size(-2);
  TORCH_INTERNAL_ASSERT(!lse.defined() || (lse.scalar_type() == c10::kFloat && lse.dim() == 2 &&
                                           lse.size(0) * rows * scores.size(-1) == scores.numel() &&
                                           lse.size(1) == rows && lse.stride(1) == 1));
  if (scores.numel() == 0) return;
  const auto [lse_mem, lse_offset] = buffer_and_offset(lse, scores);
  const cl_ulong lse_index = lse_offset / sizeof(float), lse_stride = lse.defined() ? lse.stride(0) : 0;
  launch_contiguous_rows({scores, scores}, scores.dim() - 1, "attention_softmax_rows", c10::kFloat, lse_mem,
                         lse_index, lse_stride, cl_int(lse.defined()), cl_ulong(causal_keys), cl_ulong(rows));
}

void layer_norm_rows(const at::Tensor& out, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                     double eps, const at::Tensor& mean, const at::Tensor& rstd) {
  TORCH_INTERNAL_ASSERT(x.is_contiguous() && out.is_contiguous());
  if (x.numel() == 0) return;
  const auto [w_mem, w_off] = buffer_and_offset(weight, x);
  const auto [b_mem, b_off] = buffer_and_offset(bias, x);
  const auto [m_mem, m_index] = floats(mean);
  const auto [r_mem, r_index] = floats(rstd);
  const cl_int affine = (weight.defined() ? 1 : 0) | (bias.defined() ? 2 : 0);
  launch_contiguous_rows({out, x}, x.dim() - 1, "layer_norm_rows", c10::kFloat, m_mem, m_index, r_mem, r_index, w_mem,
                         w_off, b_mem, b_off, affine, static_cast<float>(eps));
}

void layer_norm_backward_rows(const at::Tensor& grad_input, const at::Tensor& grad, const at::Tensor& x,
                              const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& weight) {
  TORCH_INTERNAL_ASSERT(grad_input.is_contiguous() && grad.is_contiguous() && x.is_contiguous());
  if (x.numel() == 0) return;
  const auto [w_mem, w_off] = buffer_and_offset(weight, x);
  const auto [m_mem, m_index] = floats(mean);
  const auto [r_mem, r_index] = floats(rstd);
  launch_contiguous_rows({grad_input, grad, x}, x.dim() - 1, "layer_norm_backward_rows", c10::kFloat, m_mem, m_index,
                         r_mem, r_index, w_mem, w_off, cl_int(weight.defined()));
}

// A contiguous (N, C, spatial...) tensor's channels as launch_row_groups' rows: (n, rows, segments).
struct Channels {
  cl_ulong n, rows, segments;
};
Channels channels_of(const at::Tensor& x) {
  TORCH_INTERNAL_ASSERT(x.dim() >= 2 && x.is_contiguous());
  const cl_ulong rows = x.size(1), segments = x.size(0);
  return {x.numel() / (rows * segments), rows, segments};
}

void batch_norm_channels(const at::Tensor& out, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                         double eps, const at::Tensor& mean, const at::Tensor& var, const at::Tensor& invstd,
                         bool given_stats) {
  TORCH_INTERNAL_ASSERT(out.is_contiguous() && out.sizes() == x.sizes());
  if (x.numel() == 0) return;
  const Channels ch = channels_of(x);
  const auto [w_mem, w_off] = buffer_and_offset(weight, x);
  const auto [b_mem, b_off] = buffer_and_offset(bias, x);
  const auto [m_mem, m_index] = floats(mean);
  const auto [v_mem, v_index] = floats(var);
  const auto [i_mem, i_index] = given_stats ? std::pair<cl_mem, cl_ulong>{v_mem, v_index} : floats(invstd);
  const cl_int affine = (weight.defined() ? 1 : 0) | (bias.defined() ? 2 : 0);
  launch_row_groups({out, x}, ch.n, ch.rows, ch.n * ch.segments, "batch_norm_channels", c10::kFloat, ch.segments,
                    m_mem, m_index, v_mem, v_index, i_mem, i_index, w_mem, w_off, b_mem, b_off, affine,
                    static_cast<float>(eps), cl_int(given_stats));
}

void batch_norm_backward_channels(const at::Tensor& grad_input, const at::Tensor& grad, const at::Tensor& x,
                                  const at::Tensor& mean, const at::Tensor& invstd, const at::Tensor& weight,
                                  const at::Tensor& grad_weight, const at::Tensor& grad_bias) {
  TORCH_INTERNAL_ASSERT(grad.is_contiguous() && grad.sizes() == x.sizes() &&
                        (!grad_input.defined() || (grad_input.is_contiguous() && grad_input.sizes() == x.sizes())));
  if (x.numel() == 0) return;
  const Channels ch = channels_of(x);
  const auto [w_mem, w_off] = buffer_and_offset(weight, x);
  const auto [m_mem, m_index] = floats(mean);
  const auto [i_mem, i_index] = floats(invstd);
  const auto [gw_mem, gw_index] = floats(grad_weight);
  const auto [gb_mem, gb_index] = floats(grad_bias);
  // Without an input gradient, grad stands in for it: the kernel then writes none.
  launch_row_groups({grad_input.defined() ? grad_input : grad, grad, x}, ch.n, ch.rows, ch.n * ch.segments,
                    "batch_norm_backward_channels", c10::kFloat, ch.segments, m_mem, m_index, i_mem, i_index, w_mem,
                    w_off, cl_int(weight.defined()), gw_mem, gw_index, gb_mem, gb_index, cl_int(grad_input.defined()));
}

void attention_score_gradients_(at::Tensor& d, const at::Tensor& p) {
  TORCH_INTERNAL_ASSERT(d.is_contiguous() && p.is_contiguous() && d.sizes() == p.sizes() &&
                        d.scalar_type() == c10::kFloat && p.scalar_type() == c10::kFloat);
  if (d.numel() == 0) return;
  launch_contiguous_rows({d, d, p}, d.dim() - 1, "softmax_backward_rows", c10::kFloat, cl_int(0));
}

namespace {

template <bool Log>
at::Tensor& softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_dtype(Log ? "log_softmax" : "softmax", self.scalar_type(), Dtypes::Floating);
  at::native::resize_output(out, self.sizes());
  if (out.numel() == 0) return out;
  const c10::ScalarType compute = kernels::compute_type(self.scalar_type());
  if (contiguous_rows({out, self}, dim))
    launch_contiguous_rows({out, self}, dim, "softmax_rows", compute, cl_int(Log ? 1 : 0));
  else
    launch_rows({out, self}, dim, "softmax", compute, cl_int(Log ? 1 : 0));
  return out;
}

template <bool Log>
at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  auto dtype = half_to_float && self.scalar_type() == c10::kHalf ? c10::kFloat : self.scalar_type();
  at::Tensor out = at::empty({0}, self.options().dtype(dtype));
  return softmax_out<Log>(self, dim, half_to_float, out);
}

template <bool Log>
at::Tensor& softmax_backward_out(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                 c10::ScalarType input_dtype, at::Tensor& grad_input) {
  dim = at::maybe_wrap_dim(dim, grad.dim());
  at::native::resize_output(grad_input, grad.sizes());
  if (grad_input.numel() == 0) return grad_input;
  const c10::ScalarType compute = kernels::compute_type(grad.scalar_type());
  if (contiguous_rows({grad_input, grad, output}, dim))
    launch_contiguous_rows({grad_input, grad, output}, dim, "softmax_backward_rows", compute, cl_int(Log ? 1 : 0));
  else
    launch_rows({grad_input, grad, output}, dim, "softmax_backward", compute, cl_int(Log ? 1 : 0));
  return grad_input;
}

template <bool Log>
at::Tensor softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                            c10::ScalarType input_dtype) {
  at::Tensor grad_input = at::empty({0}, grad.options().dtype(input_dtype));
  return softmax_backward_out<Log>(grad, output, dim, input_dtype, grad_input);
}

// cummax / cummin write into values and indices, which the composite op allocated like self.
template <bool Max>
void cumulative_extreme(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_dtype(Max ? "cummax" : "cummin", self.scalar_type(), Dtypes::All);
  launch_rows({values, indices, self}, dim, Max ? "cummax" : "cummin", kernels::compute_type(self.scalar_type()));
}

// mode: the most frequent value of each row along dim, from a stable sort of the row.
std::tuple<at::Tensor&, at::Tensor&> mode_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& values,
                                              at::Tensor& indices) {
  dim = at::maybe_wrap_dim(dim, self.dim());
  check_dtype("mode", self.scalar_type(), Dtypes::All);
  TORCH_CHECK_INDEX(self.dim() == 0 || self.size(dim) > 0, "mode(): Expected reduction dim ", dim,
                    " to have non-zero size.");
  at::DimVector kept(self.sizes().begin(), self.sizes().end());
  if (self.dim() > 0) kept[dim] = 1;
  at::Tensor v = at::empty(kept, self.options()), i = at::empty(kept, self.options().dtype(c10::kLong));
  if (self.numel() > 0) {
    auto [sorted, positions] = self.sort(std::optional<bool>(true), dim);
    launch_rows({v, i, sorted, positions}, dim, "mode", kernels::compute_type(self.scalar_type()));
  }
  if (!keepdim && self.dim() > 0) {
    v = v.squeeze(dim);
    i = i.squeeze(dim);
  }
  assign_out(values, v);
  assign_out(indices, i);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  at::Tensor values = at::empty({0}, self.options()), indices = at::empty({0}, self.options().dtype(c10::kLong));
  mode_out(self, dim, keepdim, values, indices);
  return {values, indices};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  core::register_real_kernel<&scan<0>>(m, "cumsum");
  core::register_real_kernel<&scan_<0>>(m, "cumsum_");
  core::register_real_kernel<&scan_out<0>>(m, "cumsum.out");
  core::register_real_kernel<&scan<1>>(m, "cumprod");
  core::register_real_kernel<&scan_<1>>(m, "cumprod_");
  core::register_real_kernel<&scan_out<1>>(m, "cumprod.out");
  core::register_real_kernel<&logcumsumexp>(m, "_logcumsumexp");
  core::register_real_kernel<&logcumsumexp_out>(m, "_logcumsumexp.out");
  core::register_real_kernel<&softmax<false>>(m, "_softmax");
  core::register_real_kernel<&softmax_out<false>>(m, "_softmax.out");
  core::register_real_kernel<&softmax<true>>(m, "_log_softmax");
  core::register_real_kernel<&softmax_out<true>>(m, "_log_softmax.out");
  core::register_real_kernel<&softmax_backward<false>>(m, "_softmax_backward_data");
  core::register_real_kernel<&softmax_backward_out<false>>(m, "_softmax_backward_data.out");
  core::register_real_kernel<&softmax_backward<true>>(m, "_log_softmax_backward_data");
  core::register_real_kernel<&softmax_backward_out<true>>(m, "_log_softmax_backward_data.out");
  core::register_real_kernel<&cumulative_extreme<true>>(m, "_cummax_helper");
  core::register_real_kernel<&cumulative_extreme<false>>(m, "_cummin_helper");
  core::register_real_kernel<&mode>(m, "mode");
  core::register_real_kernel<&mode_out>(m, "mode.values");
}

}  // namespace drawbridge::ops
