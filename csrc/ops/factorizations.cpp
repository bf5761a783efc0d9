// Cholesky, LU and QR factorizations (cl/decompositions.cl) and what is built on them: the
// triangular, LU and Cholesky solves, det / slogdet, inverse, solve, the reflector products and
// matrix_exp. Each op's meta function checks its arguments (the CPU's errors) and lays out its
// outputs; errors of singular or non-positive-definite inputs come from _linalg_check_errors as
// on the CPU. Matrices above kFactorMaxOrder run on the CPU's LAPACK (docs/ops.md says so).
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/_linalg_det.h>
#include <ATen/ops/_linalg_slogdet.h>
#include <ATen/ops/_linalg_solve_ex.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cholesky.h>
#include <ATen/ops/cholesky_inverse.h>
#include <ATen/ops/_cholesky_solve_helper.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/linalg_cholesky_ex.h>
#include <ATen/ops/linalg_householder_product.h>
#include <ATen/ops/linalg_inv_ex.h>
#include <ATen/ops/linalg_lu.h>
#include <ATen/ops/linalg_lu_factor_ex.h>
#include <ATen/ops/linalg_lu_solve.h>
#include <ATen/ops/linalg_matrix_exp.h>
#include <ATen/ops/linalg_qr.h>
#include <ATen/ops/linalg_solve_triangular.h>
#include <ATen/ops/lu_unpack.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ormqr.h>
#include <ATen/ops/triangular_solve.h>
#include <torch/library.h>

#include <cmath>

#include "core/device_state.h"
#include "ops/matrix_kernels.h"
#include "ops/out_arguments.h"

namespace drawbridge::ops {

using at::Tensor;
using namespace linalg;

namespace {

using Tensor2 = std::tuple<Tensor, Tensor>;
using Tensor3 = std::tuple<Tensor, Tensor, Tensor>;
using Tensor4 = std::tuple<Tensor, Tensor, Tensor, Tensor>;

cl_long order(const Tensor& a) { return a.size(-1); }

// --- triangular solves -----------------------------------------------------------------------

// The batch shape of `result` with a's matrix shape after it: a broadcast to the op's batch.
std::vector<int64_t> batched_like(const Tensor& a, const Tensor& result) {
  std::vector<int64_t> shape(result.sizes().begin(), result.sizes().end() - 2);
  shape.push_back(a.size(-2));
  shape.push_back(a.size(-1));
  return shape;
}

Tensor linalg_solve_triangular_impl(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  check_matrix(A, "linalg.solve_triangular");
  Tensor expected = at::linalg_solve_triangular(meta(A), meta(B), upper, left, unitriangular);
  // The CPU promotes A and B to a common dtype here (the other solvers insist they match).
  const Tensor A_ = A.to(expected.scalar_type()), B_ = B.to(expected.scalar_type());
  check_floating(A_, "linalg.solve_triangular");
  if (order(A) > kFactorMaxOrder)
    return on_cpu(A.device(), [&](const Tensor& a, const Tensor& b) {
      return at::linalg_solve_triangular(a, b, upper, left, unitriangular);
    }, A_, B_);
  Tensor a = flat(A_.expand(batched_like(A, expected)));
  Tensor x = work_copy(B_.expand(expected.sizes()));
  // X A = B is A^T X^T = B^T: the same buffers read transposed, the triangle flipped.
  MatrixArg am = left ? matrix(a) : transposed(matrix(a)), xm = left ? matrix(x) : transposed(matrix(x));
  const int64_t n = order(A), cols = left ? x.size(2) : x.size(1);
  run("triangular_solve", x, x.size(0) * cols, am, xm, cl_long(n), cl_long(cols), cl_int(left ? upper : !upper),
      cl_int(unitriangular));
  return like(expected, A.device()).copy_(x.view(expected.sizes()));
}

Tensor& linalg_solve_triangular_out(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular,
                                    Tensor& out) {
  return assign_out(out, linalg_solve_triangular_impl(A, B, upper, left, unitriangular), {A, B});
}

Tensor2 triangular_solve_impl(const Tensor& B, const Tensor& A, bool upper, bool transpose, bool unitriangular) {
  auto [expected, coefficient_meta] = at::triangular_solve(meta(B), meta(A), upper, transpose, unitriangular);
  Tensor x = linalg_solve_triangular_impl(transpose ? A.mT() : A, B, transpose ? !upper : upper, true, unitriangular);
  Tensor coefficient = like(coefficient_meta, A.device()).copy_(A.expand(coefficient_meta.sizes()));
  return {like(expected, B.device()).copy_(x), coefficient};
}

std::tuple<Tensor&, Tensor&> triangular_solve_out(const Tensor& B, const Tensor& A, bool upper, bool transpose,
                                                  bool unitriangular, Tensor& X, Tensor& M) {
  return assign_outs(std::tie(X, M), triangular_solve_impl(B, A, upper, transpose, unitriangular), {A, B});
}

// --- Cholesky --------------------------------------------------------------------------------

Tensor2 linalg_cholesky_ex_impl(const Tensor& A, bool upper, bool check_errors) {
  check_square(A, "linalg.cholesky");
  auto [L_meta, info_meta] = at::linalg_cholesky_ex(meta(A), upper, false);
  check_floating(A, "linalg.cholesky");
  if (order(A) > kFactorMaxOrder)
    return on_cpu(A.device(), [&](const Tensor& a) { return at::linalg_cholesky_ex(a, upper, check_errors); }, A);
  Tensor w = work_copy(A);
  Tensor info = like(info_meta, A.device());
  // The upper factor of A is the lower factor of A^T: the same kernel on the transposed copy.
  run("cholesky", w, w.size(0), upper ? transposed(matrix(w)) : matrix(w), order(A), vector(info));
  if (check_errors) at::_linalg_check_errors(info, "linalg.cholesky_ex", A.dim() == 2);
  return {like(L_meta, A.device()).copy_(w.view(A.sizes())), info};
}

std::tuple<Tensor&, Tensor&> linalg_cholesky_ex_out(const Tensor& A, bool upper, bool check_errors, Tensor& L,
                                                    Tensor& info) {
  return assign_outs(std::tie(L, info), linalg_cholesky_ex_impl(A, upper, check_errors), {A});
}

Tensor cholesky_impl(const Tensor& A, bool upper) {
  check_square(A, "cholesky");
  at::cholesky(meta(A), upper);
  auto [L, info] = linalg_cholesky_ex_impl(A, upper, false);
  at::_linalg_check_errors(info, "cholesky", A.dim() == 2);
  return L;
}

Tensor& cholesky_out(const Tensor& A, bool upper, Tensor& out) { return assign_out(out, cholesky_impl(A, upper), {A}); }

// X = A^{-1} B for A = L L^T (or U^T U), B and the factor already broadcast to one batch.
Tensor cholesky_solve_helper_impl(const Tensor& B, const Tensor& factor, bool upper) {
  Tensor expected = at::_cholesky_solve_helper(meta(B), meta(factor), upper);
  check_floating(B, "cholesky_solve");
  if (order(factor) > kFactorMaxOrder)
    return on_cpu(B.device(), [&](const Tensor& b, const Tensor& f) { return at::_cholesky_solve_helper(b, f, upper); },
                  B, factor);
  Tensor x = work_copy(B);
  Tensor f = flat(factor);
  const MatrixArg lower = upper ? transposed(matrix(f)) : matrix(f), higher = upper ? matrix(f) : transposed(matrix(f));
  const cl_long n = order(factor), cols = x.size(2);
  run("triangular_solve", x, x.size(0) * cols, lower, matrix(x), n, cols, cl_int(0), cl_int(0));
  run("triangular_solve", x, x.size(0) * cols, higher, matrix(x), n, cols, cl_int(1), cl_int(0));
  return like(expected, B.device()).copy_(x.view(expected.sizes()));
}

Tensor cholesky_inverse_impl(const Tensor& factor, bool upper) {
  check_square(factor, "cholesky_inverse");
  Tensor expected = at::cholesky_inverse(meta(factor), upper);
  const int64_t n = order(factor);
  Tensor eye = identities(batch_count(factor), n, n, factor.options()).view(factor.sizes());
  return like(expected, factor.device()).copy_(cholesky_solve_helper_impl(eye, factor, upper));
}

Tensor& cholesky_inverse_out(const Tensor& factor, bool upper, Tensor& out) {
  return assign_out(out, cholesky_inverse_impl(factor, upper), {factor});
}

// --- LU --------------------------------------------------------------------------------------

Tensor3 linalg_lu_factor_ex_impl(const Tensor& A, bool pivot, bool check_errors) {
  check_lu_input(A, "torch.lu_factor");
  auto [LU_meta, pivots_meta, info_meta] = at::linalg_lu_factor_ex(meta(A), pivot, false);
  TORCH_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on ocl");
  check_floating(A, "linalg.lu_factor");
  if (std::max(A.size(-2), A.size(-1)) > kFactorMaxOrder)
    return on_cpu(A.device(), [&](const Tensor& a) { return at::linalg_lu_factor_ex(a, pivot, check_errors); }, A);
  Tensor w = work_copy(A);
  Tensor pivots = like(pivots_meta, A.device()), info = like(info_meta, A.device());
  run("lu_factor", w, w.size(0), matrix(w), cl_long(A.size(-2)), cl_long(A.size(-1)), vector(pivots), vector(info));
  if (check_errors) at::_linalg_check_errors(info, "linalg.lu_factor_ex", A.dim() == 2);
  return {like(LU_meta, A.device()).copy_(w.view(A.sizes())), pivots, info};
}

std::tuple<Tensor&, Tensor&, Tensor&> linalg_lu_factor_ex_out(const Tensor& A, bool pivot, bool check_errors,
                                                              Tensor& LU, Tensor& pivots, Tensor& info) {
  return assign_outs(std::tie(LU, pivots, info), linalg_lu_factor_ex_impl(A, pivot, check_errors), {A});
}

// x ([batch, n, cols], overwritten) becomes A^{-1} x, or A^{-T} x with `adjoint`, for A = P L U
// given by lu ([batch, n, n]) and its pivots ([batch, n], contiguous int).
void lu_solve_in_place(const Tensor& lu, const Tensor& pivots, const Tensor& x, const MatrixArg& xm, int64_t cols,
                       bool adjoint) {
  const cl_long n = order(lu), items = x.size(0) * cols;
  const MatrixArg factors = matrix(lu);
  if (!adjoint) {  // U^{-1} L^{-1} P^T x
    run("permute_rows", x, items, xm, n, cl_long(cols), vector(pivots), n, cl_int(1));
    run("triangular_solve", x, items, factors, xm, n, cl_long(cols), cl_int(0), cl_int(1));
    run("triangular_solve", x, items, factors, xm, n, cl_long(cols), cl_int(1), cl_int(0));
  } else {  // P L^{-T} U^{-T} x
    run("triangular_solve", x, items, transposed(factors), xm, n, cl_long(cols), cl_int(0), cl_int(0));
    run("triangular_solve", x, items, transposed(factors), xm, n, cl_long(cols), cl_int(1), cl_int(1));
    run("permute_rows", x, items, xm, n, cl_long(cols), vector(pivots), n, cl_int(0));
  }
}

Tensor linalg_lu_solve_impl(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  check_square(LU, "torch.linalg.lu_solve");
  Tensor expected = at::linalg_lu_solve(meta(LU), meta(pivots), meta(B), left, adjoint);
  check_floating(LU, "linalg.lu_solve");
  const int64_t n = order(LU);
  if (n > kFactorMaxOrder)
    return on_cpu(LU.device(), [&](const Tensor& lu, const Tensor& p, const Tensor& b) {
      return at::linalg_lu_solve(lu, p, b, left, adjoint);
    }, LU, pivots, B);
  Tensor lu = flat(LU.expand(batched_like(LU, expected)));
  std::vector<int64_t> pivots_shape(expected.sizes().begin(), expected.sizes().end() - 2);
  pivots_shape.push_back(n);
  Tensor p = pivots.expand(pivots_shape).reshape({lu.size(0), n}).contiguous();
  Tensor x = work_copy(B.expand(expected.sizes()));
  // X A = B is A^T X^T = B^T.
  if (left)
    lu_solve_in_place(lu, p, x, matrix(x), x.size(2), adjoint);
  else
    lu_solve_in_place(lu, p, x, transposed(matrix(x)), x.size(1), !adjoint);
  return like(expected, B.device()).copy_(x.view(expected.sizes()));
}

Tensor& linalg_lu_solve_out(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint,
                            Tensor& out) {
  return assign_out(out, linalg_lu_solve_impl(LU, pivots, B, left, adjoint), {LU, pivots, B});
}

Tensor3 lu_unpack_impl(const Tensor& LU, const Tensor& pivots, bool unpack_data, bool unpack_pivots) {
  check_lu_input(LU, "torch.lu_unpack");
  auto [P_meta, L_meta, U_meta] = at::lu_unpack(meta(LU), meta(pivots), unpack_data, unpack_pivots);
  const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  Tensor P = like(P_meta, LU.device()), L = like(L_meta, LU.device()), U = like(U_meta, LU.device());
  if (unpack_data) {
    L.copy_(LU.narrow(-1, 0, k).tril(-1) + at::eye(m, k, LU.options()));
    U.copy_(LU.narrow(-2, 0, k).triu());
  }
  if (unpack_pivots && P.numel() > 0) {
    check_floating(P, "lu_unpack");
    // P = S_0 S_1 ... S_{k-1}: the row exchanges applied to the identity in reverse order.
    const int64_t batch = batch_count(LU);
    Tensor p = identities(batch, m, m, P.options());
    Tensor piv = pivots.reshape({batch, k}).to(c10::kInt).contiguous();
    run("permute_rows", p, batch * m, matrix(p), cl_long(m), cl_long(m), vector(piv), cl_long(k), cl_int(0));
    P.copy_(p.view(P.sizes()));
  }
  return {P, L, U};
}

std::tuple<Tensor&, Tensor&, Tensor&> lu_unpack_out(const Tensor& LU, const Tensor& pivots, bool unpack_data,
                                                    bool unpack_pivots, Tensor& P, Tensor& L, Tensor& U) {
  return assign_outs(std::tie(P, L, U), lu_unpack_impl(LU, pivots, unpack_data, unpack_pivots), {LU, pivots});
}

Tensor3 linalg_lu_impl(const Tensor& A, bool pivot) {
  check_lu_input(A, "linalg.lu");
  at::linalg_lu(meta(A), pivot);
  auto [LU, pivots, info] = linalg_lu_factor_ex_impl(A, pivot, false);
  return lu_unpack_impl(LU, pivots, true, true);
}

std::tuple<Tensor&, Tensor&, Tensor&> linalg_lu_out(const Tensor& A, bool pivot, Tensor& P, Tensor& L, Tensor& U) {
  return assign_outs(std::tie(P, L, U), linalg_lu_impl(A, pivot), {A});
}

// (-1)^(row exchanges) of each matrix's pivots, in dtype `type`.
Tensor permutation_sign(const Tensor& pivots, c10::ScalarType type) {
  Tensor moved = (pivots != at::arange(1, pivots.size(-1) + 1, pivots.options())).sum(-1);
  return (1 - 2 * moved.remainder(2)).to(type);
}

Tensor3 linalg_det_impl(const Tensor& A) {
  check_square(A, "linalg.det");
  auto [det_meta, LU_meta, pivots_meta] = at::_linalg_det(meta(A));
  // The LU of A^T, as the CPU's: det(A^T) = det(A), and the backward reads A^{-T} from it.
  auto [LU, pivots, info] = linalg_lu_factor_ex_impl(A.mT(), true, false);
  Tensor det = LU.diagonal(0, -2, -1).prod(-1) * permutation_sign(pivots, A.scalar_type());
  return {like(det_meta, A.device()).copy_(det), LU, pivots};
}

std::tuple<Tensor&, Tensor&, Tensor&> linalg_det_out(const Tensor& A, Tensor& det, Tensor& LU, Tensor& pivots) {
  return assign_outs(std::tie(det, LU, pivots), linalg_det_impl(A), {A});
}

Tensor4 linalg_slogdet_impl(const Tensor& A) {
  check_square(A, "linalg.slogdet");
  auto [sign_meta, log_meta, LU_meta, pivots_meta] = at::_linalg_slogdet(meta(A));
  auto [LU, pivots, info] = linalg_lu_factor_ex_impl(A.mT(), true, false);  // as linalg_det's
  Tensor diagonal = LU.diagonal(0, -2, -1);
  Tensor sign = diagonal.sign().prod(-1) * permutation_sign(pivots, A.scalar_type());
  Tensor logabsdet = diagonal.abs().log().sum(-1);
  return {like(sign_meta, A.device()).copy_(sign), like(log_meta, A.device()).copy_(logabsdet), LU, pivots};
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> linalg_slogdet_out(const Tensor& A, Tensor& sign, Tensor& logabsdet,
                                                                  Tensor& LU, Tensor& pivots) {
  return assign_outs(std::tie(sign, logabsdet, LU, pivots), linalg_slogdet_impl(A), {A});
}

Tensor2 linalg_inv_ex_impl(const Tensor& A, bool check_errors) {
  check_square(A, "linalg.inv");
  auto [inverse_meta, info_meta] = at::linalg_inv_ex(meta(A), false);
  auto [LU, pivots, info] = linalg_lu_factor_ex_impl(A, true, false);
  const int64_t n = order(A);
  Tensor inverse = identities(batch_count(A), n, n, A.options()).view(A.sizes());
  inverse = linalg_lu_solve_impl(LU, pivots, inverse, true, false);
  if (check_errors) at::_linalg_check_errors(info, "linalg.inv_ex", A.dim() == 2);
  return {like(inverse_meta, A.device()).copy_(inverse), info};
}

std::tuple<Tensor&, Tensor&> linalg_inv_ex_out(const Tensor& A, bool check_errors, Tensor& inverse, Tensor& info) {
  return assign_outs(std::tie(inverse, info), linalg_inv_ex_impl(A, check_errors), {A});
}

Tensor4 linalg_solve_ex_impl(const Tensor& A, const Tensor& B, bool left, bool check_errors) {
  check_square(A, "linalg.solve");
  auto [result_meta, LU_meta, pivots_meta, info_meta] = at::_linalg_solve_ex(meta(A), meta(B), left, false);
  auto [LU, pivots, info] = linalg_lu_factor_ex_impl(A, true, false);
  // B is a batch of vectors when it is one, or when its shape is A's without the last dim (the
  // meta function rejects that case with left=False).
  const bool vectors = B.dim() == 1 || (B.dim() == A.dim() - 1 && B.sizes() == A.sizes().slice(0, A.dim() - 1));
  Tensor x = linalg_lu_solve_impl(LU, pivots, vectors ? B.unsqueeze(-1) : B, left, false);
  if (vectors) x = x.squeeze(-1);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.solve_ex", A.dim() == 2);
  return {like(result_meta, A.device()).copy_(x), LU, pivots, info};
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> linalg_solve_ex_out(const Tensor& A, const Tensor& B, bool left,
                                                                   bool check_errors, Tensor& result, Tensor& LU,
                                                                   Tensor& pivots, Tensor& info) {
  return assign_outs(std::tie(result, LU, pivots, info), linalg_solve_ex_impl(A, B, left, check_errors), {A, B});
}

// --- QR --------------------------------------------------------------------------------------

// geqrf of a's matrices: the work copy [batch, m, n] with R and the reflectors, and tau
// [batch, min(m, n)].
Tensor2 householder_qr(const Tensor& a) {
  Tensor w = work_copy(a);
  Tensor tau = at::empty({w.size(0), std::min(w.size(1), w.size(2))}, a.options());
  run("householder_qr", w, w.size(0), matrix(w), cl_long(w.size(1)), cl_long(w.size(2)), vector(tau));
  return {w, tau};
}

// Q C (or Q^T C) in place of c ([batch, m, cols], read through cm) for the reflectors of v
// ([batch, m, >= k]) and tau ([batch, k], contiguous).
void apply_reflectors(const Tensor& v, const Tensor& tau, const Tensor& c, const MatrixArg& cm, int64_t m,
                      int64_t cols, bool transpose) {
  run("apply_reflectors", c, c.size(0) * cols, matrix(v), vector(tau), cl_long(tau.size(-1)), cl_long(m), cm,
      cl_long(cols), cl_int(transpose));
}

Tensor2 geqrf_impl(const Tensor& A) {
  TORCH_CHECK(A.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  check_floating(A, "geqrf");
  const int64_t m = A.size(-2), n = A.size(-1);
  if (std::max(m, n) > kFactorMaxOrder) return on_cpu(A.device(), [](const Tensor& a) { return at::geqrf(a); }, A);
  auto [w, tau] = householder_qr(A);
  std::vector<int64_t> tau_shape(A.sizes().begin(), A.sizes().end() - 2);
  tau_shape.push_back(std::min(m, n));
  // Column-major matrices, as LAPACK returns them.
  Tensor a = at::empty(A.mT().sizes(), A.options()).mT().copy_(w.view(A.sizes()));
  return {a, tau.view(tau_shape)};
}

std::tuple<Tensor&, Tensor&> geqrf_out(const Tensor& A, Tensor& a, Tensor& tau) {
  return assign_outs(std::tie(a, tau), geqrf_impl(A), {A});
}

Tensor2 linalg_qr_impl(const Tensor& A, c10::string_view mode) {
  auto [Q_meta, R_meta] = at::linalg_qr(meta(A), mode);
  check_floating(A, "linalg.qr");
  const int64_t m = A.size(-2), n = A.size(-1);
  if (std::max(m, n) > kFactorMaxOrder)
    return on_cpu(A.device(), [&](const Tensor& a) { return at::linalg_qr(a, mode); }, A);
  auto [w, tau] = householder_qr(A);
  Tensor Q = like(Q_meta, A.device()), R = like(R_meta, A.device());
  R.copy_(w.view(A.sizes()).narrow(-2, 0, R.size(-2)).triu());
  if (Q.numel() > 0) {
    const int64_t q_cols = Q.size(-1);
    Tensor q = identities(w.size(0), m, q_cols, A.options());
    apply_reflectors(w, tau, q, matrix(q), m, q_cols, false);
    Q.copy_(q.view(Q.sizes()));
  }
  return {Q, R};
}

std::tuple<Tensor&, Tensor&> linalg_qr_out(const Tensor& A, c10::string_view mode, Tensor& Q, Tensor& R) {
  return assign_outs(std::tie(Q, R), linalg_qr_impl(A, mode), {A});
}

Tensor linalg_householder_product_impl(const Tensor& V, const Tensor& tau) {
  Tensor expected = at::linalg_householder_product(meta(V), meta(tau));
  check_floating(V, "linalg.householder_product");
  const int64_t m = V.size(-2), n = V.size(-1);
  if (m > kFactorMaxOrder)
    return on_cpu(V.device(), [](const Tensor& v, const Tensor& t) { return at::linalg_householder_product(v, t); },
                  V, tau);
  Tensor v = flat(V), t = tau.reshape({v.size(0), tau.size(-1)}).contiguous();
  Tensor q = identities(v.size(0), m, n, V.options());
  apply_reflectors(v, t, q, matrix(q), m, n, false);
  return like(expected, V.device()).copy_(q.view(expected.sizes()));
}

Tensor& linalg_householder_product_out(const Tensor& V, const Tensor& tau, Tensor& out) {
  return assign_out(out, linalg_householder_product_impl(V, tau), {V, tau});
}

Tensor ormqr_impl(const Tensor& V, const Tensor& tau, const Tensor& C, bool left, bool transpose) {
  Tensor expected = at::ormqr(meta(V), meta(tau), meta(C), left, transpose);
  check_floating(C, "ormqr");
  if (std::max(C.size(-2), C.size(-1)) > kFactorMaxOrder)
    return on_cpu(C.device(), [&](const Tensor& v, const Tensor& t, const Tensor& c) {
      return at::ormqr(v, t, c, left, transpose);
    }, V, tau, C);
  Tensor v = flat(V), t = tau.reshape({v.size(0), tau.size(-1)}).contiguous();
  Tensor c = work_copy(C);
  // C Q is (Q^T C^T)^T: the reflectors act on C's rows.
  if (left)
    apply_reflectors(v, t, c, matrix(c), c.size(1), c.size(2), transpose);
  else
    apply_reflectors(v, t, c, transposed(matrix(c)), c.size(2), c.size(1), !transpose);
  return like(expected, C.device()).copy_(c.view(expected.sizes()));
}

Tensor& ormqr_out(const Tensor& V, const Tensor& tau, const Tensor& C, bool left, bool transpose, Tensor& out) {
  return assign_out(out, ormqr_impl(V, tau, C, left, transpose), {V, tau, C});
}

// --- matrix_exp ------------------------------------------------------------------------------

// Scaling and squaring: exp(A) = exp(A / 2^s)^(2^s), with the 1-norm of A / 2^s at most 1/2
// and a Taylor polynomial of degree 18 there (its remainder is below float64's rounding). One s
// serves the whole batch: the largest norm decides it. The squarings amplify rounding, so every
// dtype computes in float64 where the device has it (float32 where not; half and bfloat16, which
// the CPU also accepts here, too).
Tensor linalg_matrix_exp_impl(const Tensor& A) {
  check_square(A, "linalg.matrix_exp");
  Tensor expected = at::linalg_matrix_exp(meta(A));
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(A.scalar_type()), "linalg.matrix_exp: not implemented for '",
                              A.scalar_type(), "'");
  Tensor result = like(expected, A.device());
  if (A.numel() == 0) return result;
  if (order(A) == 1) return result.copy_(at::exp(A));
  const bool fp64 = core::checked_device(A.device().index()).properties().fp64;
  Tensor a = A.to(fp64 ? c10::kDouble : c10::kFloat);
  const double norm = a.abs().sum(-2).amax(-1).max().item<double>();
  const int squarings = std::isfinite(norm) && norm > 0.5 ? static_cast<int>(std::ceil(std::log2(norm / 0.5))) : 0;
  Tensor x = a / std::ldexp(1.0, squarings);
  Tensor eye = at::eye(order(A), a.options());
  Tensor e = eye.expand(a.sizes()).clone();
  for (int j = 18; j >= 1; --j) e = eye + at::matmul(x, e) / j;
  for (int i = 0; i < squarings; ++i) e = at::matmul(e, e);
  return result.copy_(e);
}

Tensor& linalg_matrix_exp_out(const Tensor& A, Tensor& out) { return assign_out(out, linalg_matrix_exp_impl(A), {A}); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_solve_triangular", TORCH_FN(linalg_solve_triangular_impl));
  m.impl("linalg_solve_triangular.out", TORCH_FN(linalg_solve_triangular_out));
  m.impl("triangular_solve", TORCH_FN(triangular_solve_impl));
  m.impl("triangular_solve.X", TORCH_FN(triangular_solve_out));
  m.impl("linalg_cholesky_ex", TORCH_FN(linalg_cholesky_ex_impl));
  m.impl("linalg_cholesky_ex.L", TORCH_FN(linalg_cholesky_ex_out));
  m.impl("cholesky", TORCH_FN(cholesky_impl));
  m.impl("cholesky.out", TORCH_FN(cholesky_out));
  m.impl("_cholesky_solve_helper", TORCH_FN(cholesky_solve_helper_impl));
  m.impl("cholesky_inverse", TORCH_FN(cholesky_inverse_impl));
  m.impl("cholesky_inverse.out", TORCH_FN(cholesky_inverse_out));
  m.impl("linalg_lu_factor_ex", TORCH_FN(linalg_lu_factor_ex_impl));
  m.impl("linalg_lu_factor_ex.out", TORCH_FN(linalg_lu_factor_ex_out));
  m.impl("linalg_lu_solve", TORCH_FN(linalg_lu_solve_impl));
  m.impl("linalg_lu_solve.out", TORCH_FN(linalg_lu_solve_out));
  m.impl("lu_unpack", TORCH_FN(lu_unpack_impl));
  m.impl("lu_unpack.out", TORCH_FN(lu_unpack_out));
  m.impl("linalg_lu", TORCH_FN(linalg_lu_impl));
  m.impl("linalg_lu.out", TORCH_FN(linalg_lu_out));
  m.impl("_linalg_det", TORCH_FN(linalg_det_impl));
  m.impl("_linalg_det.result", TORCH_FN(linalg_det_out));
  m.impl("_linalg_slogdet", TORCH_FN(linalg_slogdet_impl));
  m.impl("_linalg_slogdet.sign", TORCH_FN(linalg_slogdet_out));
  m.impl("linalg_inv_ex", TORCH_FN(linalg_inv_ex_impl));
  m.impl("linalg_inv_ex.inverse", TORCH_FN(linalg_inv_ex_out));
  m.impl("_linalg_solve_ex", TORCH_FN(linalg_solve_ex_impl));
  m.impl("_linalg_solve_ex.result", TORCH_FN(linalg_solve_ex_out));
  m.impl("geqrf", TORCH_FN(geqrf_impl));
  m.impl("geqrf.a", TORCH_FN(geqrf_out));
  m.impl("linalg_qr", TORCH_FN(linalg_qr_impl));
  m.impl("linalg_qr.out", TORCH_FN(linalg_qr_out));
  m.impl("linalg_householder_product", TORCH_FN(linalg_householder_product_impl));
  m.impl("linalg_householder_product.out", TORCH_FN(linalg_householder_product_out));
  m.impl("ormqr", TORCH_FN(ormqr_impl));
  m.impl("ormqr.out", TORCH_FN(ormqr_out));
  m.impl("linalg_matrix_exp", TORCH_FN(linalg_matrix_exp_impl));
  m.impl("linalg_matrix_exp.out", TORCH_FN(linalg_matrix_exp_out));
}

}  // namespace drawbridge::ops
