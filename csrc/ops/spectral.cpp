// The symmetric eigendecomposition and the SVD by Jacobi rotations (cl/decompositions.cl), and
// least squares through the SVD. Matrices above kJacobiMaxOrder run on the CPU's LAPACK
// (docs/ops.md says so).
#include <ATen/ops/_linalg_eigh.h>
#include <ATen/ops/_linalg_svd.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/linalg_lstsq.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/util/string_view.h>
#include <torch/library.h>

#include <limits>

#include "ops/matrix_kernels.h"
#include "ops/out_arguments.h"

namespace drawbridge::ops {

using at::Tensor;
using namespace linalg;

namespace {

std::tuple<Tensor, Tensor> linalg_eigh_impl(const Tensor& A, c10::string_view uplo, bool compute_v) {
  check_square(A, "linalg.eigh");
  auto [values_meta, vectors_meta] = at::_linalg_eigh(meta(A), uplo, compute_v);
  check_floating(A, "linalg.eigh");
  const int64_t n = A.size(-1);
  if (n > kJacobiMaxOrder)
    return on_cpu(A.device(), [&](const Tensor& a) { return at::_linalg_eigh(a, uplo, compute_v); }, A);
  // The kernel rotates the whole symmetric matrix: fill it from the triangle UPLO names.
  Tensor a = flat(A);
  const bool lower = uplo == "L" || uplo == "l";
  Tensor w = (lower ? a.tril() + a.tril(-1).mT() : a.triu() + a.triu(1).mT()).contiguous();
  Tensor values = at::empty({w.size(0), n}, A.options());
  Tensor vectors = compute_v ? at::empty_like(w) : w;
  run("symmetric_eigen", w, w.size(0), matrix(w), cl_long(n), vector(values), matrix(vectors), cl_int(compute_v));
  Tensor out_vectors = like(vectors_meta, A.device());
  if (compute_v) out_vectors.copy_(vectors.view(out_vectors.sizes()));
  return {like(values_meta, A.device()).copy_(values.view(values_meta.sizes())), out_vectors};
}

std::tuple<Tensor&, Tensor&> linalg_eigh_out(const Tensor& A, c10::string_view uplo, bool compute_v, Tensor& values,
                                             Tensor& vectors) {
  return assign_outs(std::tie(values, vectors), linalg_eigh_impl(A, uplo, compute_v), {A});
}

std::tuple<Tensor, Tensor, Tensor> linalg_svd_impl(const Tensor& A, bool full_matrices, bool compute_uv,
                                              std::optional<c10::string_view> driver) {
  auto [U_meta, S_meta, Vh_meta] = at::_linalg_svd(meta(A), full_matrices, compute_uv, driver);
  check_floating(A, "linalg.svd");
  const int64_t m = A.size(-2), n = A.size(-1);
  if (std::min(m, n) > kJacobiMaxOrder)
    return on_cpu(A.device(), [&](const Tensor& a) { return at::_linalg_svd(a, full_matrices, compute_uv, driver); },
                  A);
  Tensor U = like(U_meta, A.device()), S = like(S_meta, A.device()), Vh = like(Vh_meta, A.device());
  if (A.numel() == 0) {  // the full bases of an empty side are identities
    if (compute_uv && full_matrices) {
      U.copy_(at::eye(m, U.options()).expand(U.sizes()));
      Vh.copy_(at::eye(n, Vh.options()).expand(Vh.sizes()));
    }
    return {U, S, Vh};
  }
  // The kernel wants a tall matrix: a wide A is factored as A^T = V S U^T.
  const bool tall = m >= n;
  const int64_t rows = std::max(m, n), cols = std::min(m, n), u_cols = full_matrices ? rows : cols;
  Tensor g = work_copy(tall ? A : A.mT());
  Tensor s = at::empty({g.size(0), cols}, A.options());
  Tensor u = compute_uv ? at::empty({g.size(0), rows, u_cols}, A.options()) : g;
  Tensor v = compute_uv ? at::empty({g.size(0), cols, cols}, A.options()) : g;
  run("jacobi_svd", g, g.size(0), matrix(g), cl_long(rows), cl_long(cols), vector(s), matrix(u), cl_long(u_cols),
      matrix(v), cl_int(compute_uv));
  S.copy_(s.view(S.sizes()));
  if (compute_uv) {
    U.copy_((tall ? u : v).view(U.sizes()));
    Vh.copy_((tall ? v : u).mT().reshape(Vh.sizes()));
  }
  return {U, S, Vh};
}

std::tuple<Tensor&, Tensor&, Tensor&> linalg_svd_out(const Tensor& A, bool full_matrices, bool compute_uv,
                                                     std::optional<c10::string_view> driver, Tensor& U, Tensor& S,
                                                     Tensor& Vh) {
  return assign_outs(std::tie(U, S, Vh), linalg_svd_impl(A, full_matrices, compute_uv, driver), {A});
}

// Least squares through the SVD: the minimum-norm solution with singular values below
// rcond * the largest left out, which is what every LAPACK driver returns for a matrix of full
// rank and what gelsy / gelsd / gelss return for any. The other results follow the CPU: rank
// (not for gels), singular values (gelsd and gelss), residuals (m > n, not gelsy; gelsd and gelss
// only when every matrix has full rank).
std::tuple<Tensor, Tensor, Tensor, Tensor> linalg_lstsq_impl(const Tensor& A, const Tensor& B, std::optional<double> rcond,
                                                        std::optional<c10::string_view> driver_name) {
  TORCH_CHECK(A.dim() >= 2, "torch.linalg.lstsq: input must have at least 2 dimensions.");
  TORCH_CHECK(A.scalar_type() == B.scalar_type(), "torch.linalg.lstsq: Expected input and other to have the same dtype, ",
              "but got input's dtype ", A.scalar_type(), " and other's dtype ", B.scalar_type());
  const std::string driver(driver_name.value_or("gelsy"));
  TORCH_CHECK(driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss",
              "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  check_floating(A, "linalg.lstsq");
  const int64_t m = A.size(-2), n = A.size(-1);
  const bool vectors = B.dim() == A.dim() - 1;
  Tensor b = vectors ? B.unsqueeze(-1) : B;
  TORCH_CHECK(b.dim() >= 2 && b.size(-2) == m, "torch.linalg.lstsq: input.size(-2) should match other.size(-2)");
  if (std::min(m, n) > kJacobiMaxOrder)
    return on_cpu(A.device(), [&](const Tensor& a, const Tensor& rhs) {
      return at::linalg_lstsq(a, rhs, rcond, driver_name);
    }, A, B);
  auto [U, S, Vh] = linalg_svd_impl(A, false, true, std::nullopt);
  const double eps = A.scalar_type() == c10::kDouble ? std::numeric_limits<double>::epsilon()
                                                     : std::numeric_limits<float>::epsilon();
  const double cutoff = rcond.has_value() && *rcond >= 0 ? *rcond : eps * std::max(m, n);
  Tensor kept = S.numel() > 0 ? S > cutoff * S.amax(-1, true) : S > 0;
  Tensor inverse = at::where(kept, S.reciprocal(), at::zeros({}, S.options()));
  Tensor x = at::matmul(Vh.mT(), inverse.unsqueeze(-1) * at::matmul(U.mT(), b));
  Tensor rank = kept.sum(-1);
  Tensor residuals = at::empty({0}, A.options());
  const bool full_rank = (rank == std::min(m, n)).all().item<bool>();
  if (m > n && driver != "gelsy" && (driver == "gels" || full_rank))
    residuals = (at::matmul(A, x) - b).square().sum(-2);
  if (vectors) x = x.squeeze(-1);
  Tensor singular_values = driver == "gelsd" || driver == "gelss" ? S : at::empty({0}, A.options());
  if (driver == "gels") rank = at::empty({0}, rank.options());
  return {x, residuals, rank, singular_values};
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> linalg_lstsq_out(const Tensor& A, const Tensor& B,
                                                                std::optional<double> rcond,
                                                                std::optional<c10::string_view> driver, Tensor& x,
                                                                Tensor& residuals, Tensor& rank,
                                                                Tensor& singular_values) {
  return assign_outs(std::tie(x, residuals, rank, singular_values), linalg_lstsq_impl(A, B, rcond, driver), {A, B});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_linalg_eigh", TORCH_FN(linalg_eigh_impl));
  m.impl("_linalg_eigh.eigenvalues", TORCH_FN(linalg_eigh_out));
  m.impl("_linalg_svd", TORCH_FN(linalg_svd_impl));
  m.impl("_linalg_svd.U", TORCH_FN(linalg_svd_out));
  m.impl("linalg_lstsq", TORCH_FN(linalg_lstsq_impl));
  m.impl("linalg_lstsq.out", TORCH_FN(linalg_lstsq_out));
}

}  // namespace drawbridge::ops
