// Matrix products: mm, addmm, bmm, baddbmm, mv, addmv, dot, vdot. float32/float64 go through
// kernels::gemm (CLBlast, or the packed GEMM on CPU devices, which also takes float16/bfloat16
// as they are); float16/bfloat16 elsewhere through CLBlast in float32; other dtypes through
// cl/matmul.cl.
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "core/fallback.h"
#include "kernels/blas.h"
#include "kernels/packed_gemm.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

bool is_zero(const c10::Scalar& s) { return s.isIntegral(true) ? s.toLong() == 0 : s.toDouble() == 0.0; }

// A [batch, rows, cols] operand as CLBlast sees it, copying it only when neither of its last two
// strides is 1 (CLBlast needs one unit stride: row-major, or row-major transposed).
kernels::BlasMatrix blas_view(at::Tensor& t) {
  const int64_t rows = t.size(1), cols = t.size(2);
  int64_t s_row = rows == 1 ? std::max<int64_t>(cols, 1) : t.stride(1);
  int64_t s_col = cols == 1 ? 1 : t.stride(2);
  bool transposed = false;
  int64_t ld = 0;
  if (s_col == 1 && s_row >= std::max<int64_t>(cols, 1)) {
    ld = s_row;
  } else if (t.stride(1) == 1 && t.stride(2) >= std::max<int64_t>(rows, 1)) {
    transposed = true;
    ld = t.stride(2);
  } else {
    t = t.contiguous();
    ld = std::max<int64_t>(cols, 1);
  }
  auto ref = core::checked_device(t.device().index()).memory().resolve(t.data_ptr());
  size_t batch_stride = t.size(0) > 1 ? static_cast<size_t>(t.stride(0)) : static_cast<size_t>(rows * ld);
  return {ref.mem, ref.offset / t.element_size(), static_cast<size_t>(ld), batch_stride, transposed};
}

// out[B, M, N] = beta * out + alpha * a[B, M, K] @ b[B, K, N]; out has its final shape and dtype.
void batched_gemm(const at::Tensor& out, at::Tensor a, at::Tensor b, const c10::Scalar& alpha,
                  const c10::Scalar& beta) {
  if (out.numel() == 0) return;
  c10::DeviceGuard guard(out.device());
  const int64_t B = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  if (K == 0) {
    is_zero(beta) ? out.zero_() : out.mul_(beta);
    return;
  }
  const c10::ScalarType type = out.scalar_type();
  runtime::Device& device = core::checked_device(out.device().index());
  const bool fp64 = device.properties().fp64;
  if ((kernels::blas_supports(type) || kernels::packed_gemm_serves(device, type)) && (type != c10::kDouble || fp64)) {
    const bool row_major = out.stride(2) == 1 || N == 1;
    at::Tensor c = row_major ? out : (is_zero(beta) ? at::empty(out.sizes(), out.options()) : out.contiguous());
    at::Tensor cc = c;
    kernels::BlasMatrix mc = blas_view(cc);
    kernels::BlasMatrix ma = blas_view(a), mb = blas_view(b);
    kernels::gemm(device, core::current_queue(), type, M, N, K, alpha.toDouble(), ma, mb, is_zero(beta) ? 0.0 : beta.toDouble(),
                  mc, B);
    if (!cc.is_same(out)) out.copy_(cc);
    return;
  }
  if (type == c10::kHalf || type == c10::kBFloat16) {
    at::Tensor acc = is_zero(beta) ? at::empty(out.sizes(), out.options().dtype(c10::kFloat)) : out.to(c10::kFloat);
    batched_gemm(acc, a.to(c10::kFloat), b.to(c10::kFloat), alpha, beta);
    out.copy_(acc);
    return;
  }
  check_dtype("matmul", type, Dtypes::All);
  // Integers (and float64 without CLBlast): one work-item per output element.
  at::Tensor a_rows = a.narrow(2, 0, 1).expand({B, M, N}), b_cols = b.narrow(1, 0, 1).expand({B, M, N});
  auto iter = at::TensorIteratorConfig()
                  .check_all_same_dtype(false)
                  .resize_outputs(false)
                  .set_check_mem_overlap(false)
                  .add_output(out)
                  .add_const_input(a_rows)
                  .add_const_input(b_cols)
                  .build();
  c10::ScalarType ct = kernels::compute_type(type);
  // Each element walks K products: its operand types stay compiled in.
  kernels::launch_pointwise(iter, {"matmul.cl", "matmul_naive", ct}, cl_ulong(K),
                            cl_ulong(a.stride(2) * a.element_size()), cl_ulong(b.stride(1) * b.element_size()),
                            scalar_bits(alpha, ct), scalar_bits(beta, ct));
}

void check_same_dtype(const at::Tensor& a, const at::Tensor& b, const char* what) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected ", what, " to have the same dtype, but got: ",
              a.scalar_type(), " != ", b.scalar_type());
}

// ---- mm, addmm -----------------------------------------------------------------------------

void check_mm(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 2, "self must be a matrix");
  TORCH_CHECK(b.dim() == 2, "mat2 must be a matrix");
  TORCH_CHECK(a.size(1) == b.size(0), "mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x", a.size(1),
              " and ", b.size(0), "x", b.size(1), ")");
  check_same_dtype(a, b, "m1 and m2");
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& beta,
                      const c10::Scalar& alpha, at::Tensor& out) {
  check_mm(a, b);
  TORCH_CHECK(self.scalar_type() == a.scalar_type(), "self and mat2 must have the same dtype, but got ",
              self.scalar_type(), " and ", a.scalar_type());
  at::native::resize_output(out, {a.size(0), b.size(1)});
  if (!is_zero(beta) && !self.is_same(out)) out.copy_(self.expand({a.size(0), b.size(1)}));
  batched_gemm(out.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), alpha, beta);
  return out;
}
at::Tensor& mm_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  check_mm(a, b);
  at::native::resize_output(out, {a.size(0), b.size(1)});
  batched_gemm(out.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0), 1, 0);
  return out;
}

// ---- bmm, baddbmm --------------------------------------------------------------------------

void check_bmm(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(b.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(b.size(0) == a.size(0) && b.size(1) == a.size(2), "Expected size for first two dimensions of batch2 ",
              "tensor to be: [", a.size(0), ", ", a.size(2), "] but got: [", b.size(0), ", ", b.size(1), "].");
  check_same_dtype(a, b, "batch1 and batch2");
}

at::Tensor& baddbmm_out(const at::Tensor& self, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& beta,
                        const c10::Scalar& alpha, at::Tensor& out) {
  check_bmm(a, b);
  at::native::resize_output(out, {a.size(0), a.size(1), b.size(2)});
  if (!is_zero(beta) && !self.is_same(out)) out.copy_(self.expand({a.size(0), a.size(1), b.size(2)}));
  batched_gemm(out, a, b, alpha, beta);
  return out;
}
at::Tensor& bmm_out(const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
  check_bmm(a, b);
  at::native::resize_output(out, {a.size(0), a.size(1), b.size(2)});
  batched_gemm(out, a, b, 1, 0);
  return out;
}

// addbmm: the sum over the batch of batch1[i] @ batch2[i] is one product of the batches laid side
// by side, (n, B*m) @ (B*m, p).
at::Tensor& addbmm_out(const at::Tensor& self, const at::Tensor& batch1, const at::Tensor& batch2,
                       const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  TORCH_CHECK(batch1.dim() == 3, "batch1 must be a 3D tensor");
  TORCH_CHECK(batch2.dim() == 3, "batch2 must be a 3D tensor");
  TORCH_CHECK(batch1.size(0) == batch2.size(0), "batch1 and batch2 must have same number of batches, got ",
              batch1.size(0), " and ", batch2.size(0));
  TORCH_CHECK(batch1.size(2) == batch2.size(1), "Incompatible matrix sizes for bmm (", batch1.size(1), "x",
              batch1.size(2), " and ", batch2.size(1), "x", batch2.size(2), ")");
  at::Tensor side_by_side = batch1.permute({1, 0, 2}).reshape({batch1.size(1), -1});
  at::Tensor stacked = batch2.reshape({-1, batch2.size(2)});
  return at::addmm_out(out, self, side_by_side, stacked, beta, alpha);
}

// ---- mv, addmv, dot ------------------------------------------------------------------------

at::Tensor& addmv_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const c10::Scalar& beta,
                      const c10::Scalar& alpha, at::Tensor& out) {
  TORCH_CHECK(mat.dim() == 2 && vec.dim() == 1, "vector + matrix @ vector expected, got ", self.dim(), ", ",
              mat.dim(), ", ", vec.dim());
  TORCH_CHECK(mat.size(1) == vec.size(0), "size mismatch, got input (", self.sizes(), "), mat (", mat.size(0), "x",
              mat.size(1), "), vec (", vec.size(0), ")");
  check_same_dtype(mat, vec, "mat and vec");
  at::native::resize_output(out, {mat.size(0)});
  if (!is_zero(beta) && !self.is_same(out)) out.copy_(self.expand({mat.size(0)}));
  batched_gemm(out.view({1, mat.size(0), 1}), mat.unsqueeze(0), vec.view({1, vec.size(0), 1}), alpha, beta);
  return out;
}
at::Tensor& mv_out(const at::Tensor& mat, const at::Tensor& vec, at::Tensor& out) {
  return addmv_out(out, mat, vec, 0, 1, out);
}

at::Tensor dot(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 1 && b.dim() == 1, "1D tensors expected, but got ", a.dim(), "D and ", b.dim(), "D tensors");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "dot : expected both vectors to have same dtype, but found ",
              a.scalar_type(), " and ", b.scalar_type());
  TORCH_CHECK(a.numel() == b.numel(), "inconsistent tensor size, expected tensor [", a.numel(), "] and src [",
              b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ", b.numel(),
              " elements respectively");
  at::Tensor out = at::empty({}, a.options());
  batched_gemm(out.view({1, 1, 1}), a.view({1, 1, a.numel()}), b.view({1, b.numel(), 1}), 1, 0);
  return out;
}

// Cross product along dim, from native index_select, mul and sub.
at::Tensor& linalg_cross_out(const at::Tensor& a, const at::Tensor& b, int64_t dim, at::Tensor& out) {
  TORCH_CHECK(a.dim() == b.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  dim = at::maybe_wrap_dim(dim, a.dim());
  TORCH_CHECK(a.size(dim) == 3 && b.size(dim) == 3, "linalg.cross: inputs dimension ", dim, " must have length 3. ",
              "Got ", a.size(dim), " and ", b.size(dim));
  auto order = [&](std::initializer_list<int64_t> i) {
    return at::tensor(std::vector<int64_t>(i), at::TensorOptions().dtype(c10::kLong)).to(a.device());
  };
  at::Tensor i120 = order({1, 2, 0}), i201 = order({2, 0, 1});
  at::Tensor result = a.index_select(dim, i120) * b.index_select(dim, i201) - a.index_select(dim, i201) * b.index_select(dim, i120);
  return assign_out(out, result);
}
at::Tensor linalg_cross(const at::Tensor& a, const at::Tensor& b, int64_t dim) {
  at::Tensor out = at::empty({0}, a.options().dtype(at::promote_types(a.scalar_type(), b.scalar_type())));
  return linalg_cross_out(a, b, dim, out);
}

// cdist: the p-norm of every difference of rows, computed directly (no matrix-product shortcut,
// so small distances keep full precision).
at::Tensor cdist_forward(const at::Tensor& x1, const at::Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  TORCH_CHECK(c10::isFloatingType(x1.scalar_type()), "cdist only supports floating-point dtypes, X1 got: ",
              x1.scalar_type());
  at::Tensor diff = x1.unsqueeze(-2) - x2.unsqueeze(-3);
  return at::linalg_vector_norm(diff, p, {-1});
}

// d ||diff||_p / d diff times the distance's gradient (the last dim of diff is the vector's):
// sign(diff) |diff|^(p-1) / dist^(p-1), 0 where the distance is 0 (and, for p < 1, where the
// difference is), the arg-max coordinates' signs for p = inf, nothing for p = 0.
at::Tensor distance_grad(const at::Tensor& grad, const at::Tensor& diff, const at::Tensor& dist, double p) {
  at::Tensor g = grad.unsqueeze(-1), d = dist.unsqueeze(-1);
  if (p == 0) return at::zeros_like(diff);
  if (std::isinf(p)) return g * diff.sign() * (diff.abs() == d);
  at::Tensor grad_diff = p == 1 ? g * diff.sign() : g * diff.sign() * diff.abs().pow(p - 1) / d.pow(p - 1);
  at::Tensor zero = d == 0;
  if (p < 1) zero = zero.logical_or(diff == 0);
  return grad_diff.masked_fill_(zero, 0);
}

at::Tensor cdist_backward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2, double p,
                          const at::Tensor& cdist) {
  if (x1.numel() == 0 || x2.numel() == 0) return at::zeros_like(x1);
  at::Tensor diff = x1.unsqueeze(-2) - x2.unsqueeze(-3);
  return distance_grad(grad, diff, cdist, p).sum(-2);
}

// The rows i < j of every pair, row-major: (pairs, x[i] - x[j]).
std::tuple<at::Tensor, at::Tensor> pair_differences(const at::Tensor& self) {
  const int64_t n = self.size(0);
  at::Tensor pairs = at::triu_indices(n, n, 1, self.options().dtype(c10::kLong));
  return {pairs, self.index_select(0, pairs[0]) - self.index_select(0, pairs[1])};
}

// pdist: the distances of every pair of rows i < j, in row-major order of the pairs.
at::Tensor pdist_forward(const at::Tensor& self, double p) {
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), "pdist only supports floating-point dtypes");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  const int64_t n = self.size(0);
  if (n <= 1) return at::empty({0}, self.options());
  return at::linalg_vector_norm(std::get<1>(pair_differences(self)), p, {-1});
}

at::Tensor pdist_backward(const at::Tensor& grad, const at::Tensor& self, double p, const at::Tensor& pdist) {
  const int64_t n = self.size(0);
  at::Tensor result = at::zeros_like(self, at::MemoryFormat::Contiguous);
  if (n <= 1 || self.size(1) == 0) return result;
  auto [pairs, diff] = pair_differences(self);
  at::Tensor grad_diff = distance_grad(grad, diff, pdist, p);
  return result.index_add_(0, pairs[0], grad_diff).index_add_(0, pairs[1], grad_diff.neg());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  core::register_real_kernel<&cdist_backward>(m, "_cdist_backward");
  core::register_real_kernel<&pdist_forward>(m, "_pdist_forward");
  core::register_real_kernel<&pdist_backward>(m, "_pdist_backward");
  register_from_out<&mm_out>(m, "mm", nullptr, "mm.out");
  register_from_out<&addmm_out>(m, "addmm", "addmm_", "addmm.out");
  register_from_out<&bmm_out>(m, "bmm", nullptr, "bmm.out");
  register_from_out<&baddbmm_out>(m, "baddbmm", "baddbmm_", "baddbmm.out");
  register_from_out<&addbmm_out>(m, "addbmm", "addbmm_", "addbmm.out");
  register_from_out<&mv_out>(m, "mv", nullptr, "mv.out");
  register_from_out<&addmv_out>(m, "addmv", "addmv_", "addmv.out");
  core::register_real_kernel<&dot>(m, "dot");
  core::register_real_kernel<&dot, 1>(m, "vdot");
  core::register_real_kernel<&linalg_cross>(m, "linalg_cross");
  core::register_real_kernel<&linalg_cross_out>(m, "linalg_cross.out");
  core::register_real_kernel<&cdist_forward>(m, "_cdist_forward");
}

}  // namespace drawbridge::ops
