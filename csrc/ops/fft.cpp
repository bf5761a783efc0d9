// The FFT primitives every torch.fft function and stft reduce to: _fft_c2c, _fft_r2c, _fft_c2r,
// through VkFFT (kernels/fft.h). A multi-dimensional transform is one batched 1-d transform per
// dim: each dim is moved last and made dense (one copy), transformed, and moved back.
// Normalization is a multiplication afterwards, as PyTorch's enum says (0: none, 1: 1/sqrt(n),
// 2: 1/n, n the product of the signal sizes).
#include <ATen/ops/_fft_c2c.h>
#include <ATen/ops/_fft_c2r.h>
#include <ATen/ops/_fft_r2c.h>
#include <ATen/Context.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/zeros.h>
#include <c10/core/SymInt.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/device_state.h"
#include "kernels/fft.h"
#include "ops/matrix_kernels.h"
#include "ops/out_arguments.h"

namespace drawbridge::ops {

using at::Tensor;

namespace {

kernels::FftOperand operand(const Tensor& t) {
  auto ref = core::checked_device(t.device().index()).memory().resolve(t.const_data_ptr());
  return {ref.mem, ref.offset};
}

// t itself when it is dense and starts an allocation (as VkFFT's operands must), else a copy.
Tensor fresh_dense(const Tensor& t) {
  return t.is_contiguous() && t.storage_offset() == 0 ? t : t.clone(at::MemoryFormat::Contiguous);
}

runtime::Device& ocl_device(const Tensor& t) { return core::checked_device(t.device().index()); }

// The rows of a plan_rows-shaped result that belong to `like` (same row count and length), in its shape.
Tensor leading_rows(const Tensor& result, const Tensor& like) {
  const int64_t length = like.size(-1);
  return result.view({-1, length}).narrow(0, 0, like.numel() / length).view(like.sizes());
}

// `rows` (sequences of `length` elements, the last dim) as a dense operand of
// kernels::fft_plan_batch sequences: itself, or a copy, when that is its own count; else its rows
// first in a larger buffer whose other rows are zero.
Tensor plan_rows(const Tensor& rows, int64_t length) {
  const int64_t batch = rows.numel() / length, plan_batch = kernels::fft_plan_batch(length, batch);
  if (plan_batch == batch) return fresh_dense(rows);
  Tensor padded = at::empty({plan_batch, length}, rows.options());
  leading_rows(padded, rows).copy_(rows);
  padded.narrow(0, batch, plan_batch - batch).zero_();
  return padded;
}

void check_fft_dtype(const Tensor& t, c10::ScalarType real_type, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(real_type == c10::kFloat || real_type == c10::kDouble, op,
                              ": not implemented for '", t.scalar_type(), "'");
  TORCH_CHECK_TYPE(kernels::fft_supports(real_type, ocl_device(t)), op, ": ", t.scalar_type(),
                   " needs a device with fp64");
}

// x's dim `dim` transformed in place by c2c (x complex; the transform runs on a dense copy with
// the dim last unless it already is).
void c2c_along(Tensor& x, int64_t dim, bool inverse) {
  const int64_t n = x.size(dim);
  if (x.numel() == 0 || n == 1) return;  // a length-1 transform is the identity (VkFFT refuses it)
  Tensor moved = x.movedim(dim, -1);
  if (n > static_cast<int64_t>(kernels::kFftMaxLength)) {  // the CPU's pocketfft (kernels/fft.h)
    moved.copy_(at::_fft_c2c(moved.cpu(), {moved.dim() - 1}, 0, !inverse));
    return;
  }
  Tensor work = plan_rows(moved, n);
  kernels::fft_c2c(ocl_device(x), core::current_queue(x.device().index()), c10::toRealValueType(x.scalar_type()), n,
                   work.numel() / n, operand(work), inverse);
  if (!work.is_same(moved)) moved.copy_(leading_rows(work, moved));
}

// --- result layouts ---------------------------------------------------------------------------
// torch.compile checks an FFT's result against the strides PyTorch's meta functions give it for a
// non-CUDA device: those of the CPU's MKL path (or dense ones in a build without MKL). A plain
// meta tensor would get the CUDA path's, so the layout is worked out here, following the same
// rules: batch dims first in decreasing input stride, then the transformed dims in `dim` order.

std::vector<int64_t> transform_strides(at::IntArrayRef in_strides, at::IntArrayRef out_sizes,
                                       const std::vector<int64_t>& dim) {
  const int64_t ndim = static_cast<int64_t>(out_sizes.size()), signal = static_cast<int64_t>(dim.size());
  std::vector<bool> transformed(ndim, false);
  for (int64_t d : dim) transformed[d] = true;
  std::vector<int64_t> order;
  for (int64_t d = 0; d < ndim; ++d)
    if (!transformed[d]) order.push_back(d);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return in_strides[a] > in_strides[b]; });
  const int64_t batch_dims = static_cast<int64_t>(order.size());
  order.insert(order.end(), dim.begin(), dim.end());
  // A dense (batch, out_sizes[dim]...) buffer, its batch dim split back into the batch dims.
  std::vector<int64_t> signal_strides(signal, 1), strides(ndim, 0);
  for (int64_t i = signal - 2; i >= 0; --i) signal_strides[i] = signal_strides[i + 1] * out_sizes[dim[i + 1]];
  int64_t batch_stride = signal > 0 ? signal_strides[0] * out_sizes[dim[0]] : 1;
  for (int64_t i = batch_dims - 1; i >= 0; --i) {
    strides[order[i]] = batch_stride;
    batch_stride *= out_sizes[order[i]];
  }
  for (int64_t i = 0; i < signal; ++i) strides[dim[i]] = signal_strides[i];
  return strides;
}

// `dim` with its first (all but the last, when keep_last) dims in decreasing input stride.
std::vector<int64_t> sorted_dims(const Tensor& self, at::IntArrayRef dim, bool keep_last) {
  std::vector<int64_t> sorted(dim.begin(), dim.end());
  const auto end = sorted.end() - (keep_last ? 1 : 0);
  std::stable_sort(sorted.begin(), end, [&](int64_t a, int64_t b) { return self.stride(a) > self.stride(b); });
  return sorted;
}

void normalize(Tensor& x, int64_t normalization, double signal_numel) {
  if (normalization == 0 || x.numel() == 0) return;
  const double scale = normalization == 1 ? 1.0 / std::sqrt(signal_numel) : 1.0 / signal_numel;
  (x.is_complex() ? at::view_as_real(x) : x).mul_(scale);
}

// Direct aten::_fft_* calls may name dims from the end.
std::vector<int64_t> wrapped(at::IntArrayRef dim, int64_t ndim) {
  std::vector<int64_t> out;
  for (int64_t d : dim) out.push_back(c10::maybe_wrap_dim(d, ndim));
  return out;
}

double signal_numel(const Tensor& x, at::IntArrayRef dim) {
  double numel = 1;
  for (int64_t d : dim) numel *= static_cast<double>(x.size(d));
  return numel;
}

Tensor fft_c2c_impl(const Tensor& self, c10::SymIntArrayRef sym_dim, int64_t normalization, bool forward) {
  const std::vector<int64_t> dims = wrapped(C10_AS_INTARRAYREF_SLOW(sym_dim), self.dim());
  const at::IntArrayRef dim = dims;
  Tensor expected = at::_fft_c2c(linalg::meta(self), dim, normalization, forward);
  check_fft_dtype(self, c10::toRealValueType(self.scalar_type()), "fft_c2c");
  if (dim.empty()) return self.clone();
  Tensor out = at::empty_strided(self.sizes(), transform_strides(self.strides(), self.sizes(), sorted_dims(self, dim, false)),
                                self.options()).copy_(self);
  for (int64_t d : dim) c2c_along(out, d, !forward);
  normalize(out, normalization, signal_numel(self, dim));
  return out;
}

Tensor fft_r2c_impl(const Tensor& self, at::IntArrayRef raw_dim, int64_t normalization, bool onesided) {
  const std::vector<int64_t> dims = wrapped(raw_dim, self.dim());
  const at::IntArrayRef dim = dims;
  Tensor expected = at::_fft_r2c(linalg::meta(self), dim, normalization, onesided);
  check_fft_dtype(self, self.scalar_type(), "fft_r2c");
  const auto options = self.options().dtype(c10::toComplexType(self.scalar_type()));
  Tensor out = at::hasMKL() ? at::empty_strided(expected.sizes(), transform_strides(self.strides(), expected.sizes(),
                                                                                   sorted_dims(self, dim, true)),
                                               options)
                            : at::empty(expected.sizes(), options);
  if (out.numel() == 0) return out.zero_();
  const int64_t last = dim.back(), n = self.size(last);
  if (onesided) {
    // The halved dim first, real to complex, then the others complex to complex.
    Tensor signal = self.movedim(last, -1);
    std::vector<int64_t> sizes = signal.sizes().vec();
    sizes.back() = n / 2 + 1;
    Tensor half = at::empty(sizes, out.options());
    if (n == 1) {  // the identity, which VkFFT refuses
      half.zero_();
      at::view_as_real(half).select(-1, 0).copy_(signal);
    } else if (n > static_cast<int64_t>(kernels::kFftMaxLength)) {
      half.copy_(at::_fft_r2c(signal.cpu(), {signal.dim() - 1}, 0, true));
    } else {
      Tensor real = plan_rows(signal, n);
      const int64_t rows = real.numel() / n;
      Tensor coefficients = rows * (n / 2 + 1) == half.numel() ? half : at::empty({rows, n / 2 + 1}, half.options());
      kernels::fft_r2c(ocl_device(self), core::current_queue(self.device().index()), self.scalar_type(), n, rows,
                       operand(real), operand(coefficients));
      if (!coefficients.is_same(half)) half.copy_(leading_rows(coefficients, half));
    }
    out.copy_(half.movedim(-1, last));
    for (int64_t d : dim.slice(0, dim.size() - 1)) c2c_along(out, d, false);
  } else {
    // Both halves: the signal as complex numbers with zero imaginary parts, transformed whole.
    out.zero_();
    at::view_as_real(out).select(-1, 0).copy_(self);
    for (int64_t d : dim) c2c_along(out, d, false);
  }
  normalize(out, normalization, signal_numel(self, dim));
  return out;
}

Tensor fft_c2r_impl(const Tensor& self, at::IntArrayRef raw_dim, int64_t normalization, c10::SymInt last_dim_size) {
  const std::vector<int64_t> dims = wrapped(raw_dim, self.dim());
  const at::IntArrayRef dim = dims;
  Tensor expected = at::_fft_c2r_symint(linalg::meta(self), dim, normalization, last_dim_size);
  check_fft_dtype(self, c10::toRealValueType(self.scalar_type()), "fft_c2r");
  const auto options = self.options().dtype(c10::toRealValueType(self.scalar_type()));
  Tensor out;
  if (at::hasMKL()) {
    // The other dims' c2c layout first, then the last dim's transform over it.
    std::vector<int64_t> in_strides(self.strides().begin(), self.strides().end());
    if (dim.size() > 1)
      in_strides = transform_strides(self.strides(), self.sizes(), sorted_dims(self, dim.slice(0, dim.size() - 1), false));
    out = at::empty_strided(expected.sizes(), transform_strides(in_strides, expected.sizes(), {dim.back()}), options);
  } else {
    out = at::empty(expected.sizes(), options);
  }
  if (out.numel() == 0) return out;
  const int64_t last = dim.back(), n = last_dim_size.expect_int();
  // The other dims complex to complex first, on a copy (c2r overwrites its input), then the
  // halved dim complex to real.
  Tensor half = self.narrow(last, 0, n / 2 + 1).clone();
  for (int64_t d : dim.slice(0, dim.size() - 1)) c2c_along(half, d, true);
  half = fresh_dense(half.movedim(last, -1));
  // A real signal's coefficients 0 and n/2 are real: the CPU reads only their real parts, and
  // VkFFT, which transforms two sequences as one complex one, mixes their imaginary parts in.
  Tensor imag = at::view_as_real(half).select(-1, 1);
  imag.select(-1, 0).zero_();
  if (n % 2 == 0) imag.select(-1, n / 2).zero_();
  Tensor real = at::empty(expected.movedim(last, -1).sizes().vec(), out.options());
  if (n == 1)
    real.copy_(at::view_as_real(half).select(-1, 0));
  else if (n > static_cast<int64_t>(kernels::kFftMaxLength))
    real.copy_(at::_fft_c2r(half.cpu(), {half.dim() - 1}, 0, n));
  else {
    Tensor coefficients = plan_rows(half, n / 2 + 1);
    const int64_t rows = coefficients.numel() / (n / 2 + 1);
    Tensor signal = rows * n == real.numel() ? real : at::empty({rows, n}, real.options());
    kernels::fft_c2r(ocl_device(self), core::current_queue(self.device().index()), out.scalar_type(), n, rows,
                     operand(coefficients), operand(signal));
    if (!signal.is_same(real)) real.copy_(leading_rows(signal, real));
  }
  out.copy_(real.movedim(-1, last));
  double numel = static_cast<double>(n);
  for (int64_t d : dim.slice(0, dim.size() - 1)) numel *= static_cast<double>(self.size(d));
  normalize(out, normalization, numel);
  return out;
}

Tensor& fft_c2c_out(const Tensor& self, c10::SymIntArrayRef dim, int64_t normalization, bool forward, Tensor& out) {
  return assign_out(out, fft_c2c_impl(self, dim, normalization, forward), {self});
}
Tensor& fft_r2c_out(const Tensor& self, at::IntArrayRef dim, int64_t normalization, bool onesided, Tensor& out) {
  return assign_out(out, fft_r2c_impl(self, dim, normalization, onesided), {self});
}
Tensor& fft_c2r_out(const Tensor& self, at::IntArrayRef dim, int64_t normalization, c10::SymInt last_dim_size,
                    Tensor& out) {
  return assign_out(out, fft_c2r_impl(self, dim, normalization, std::move(last_dim_size)), {self});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fft_c2c", TORCH_FN(fft_c2c_impl));
  m.impl("_fft_c2c.out", TORCH_FN(fft_c2c_out));
  m.impl("_fft_r2c", TORCH_FN(fft_r2c_impl));
  m.impl("_fft_r2c.out", TORCH_FN(fft_r2c_out));
  m.impl("_fft_c2r", TORCH_FN(fft_c2r_impl));
  m.impl("_fft_c2r.out", TORCH_FN(fft_c2r_out));
}

}  // namespace drawbridge::ops
