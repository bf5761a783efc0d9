// What the linear-algebra ops share: launching cl/decompositions.cl over batches of matrices,
// the work copies its kernels overwrite, outputs laid out as the op's meta function lays them
// out, and the CPU's LAPACK for matrices too large for one work-item each.
#pragma once

#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>

#include "runtime/commands.h"

namespace drawbridge::ops::linalg {

// Matrices larger than this (their order, or the larger side) go to the CPU's LAPACK: one
// work-item per matrix stops paying there. The Jacobi methods converge by sweeps of n^2 / 2
// rotations, so their bound is lower.
constexpr int64_t kFactorMaxOrder = 512;
constexpr int64_t kJacobiMaxOrder = 64;

// A [batch, rows, cols] tensor as decompositions.cl's Mat sees it (element strides).
struct Mat {
  cl_ulong offset;
  cl_long rs, cs, bs;
};
struct MatrixArg {
  cl_mem mem;
  Mat desc;
};
struct VectorArg {
  cl_mem mem;
  cl_ulong offset;
};
MatrixArg matrix(const at::Tensor& t);
MatrixArg transposed(MatrixArg m);  // the same matrices read as their transposes
VectorArg vector(const at::Tensor& t);

// Runs kernel `name` of decompositions.cl for `items` work-items in the compute dtype of `like`
// (float32 or float64); the arguments follow, then the item count.
void launch(const char* name, const at::Tensor& like, int64_t items, std::vector<runtime::KernelArg> args);

inline void push(std::vector<runtime::KernelArg>& list, const MatrixArg& m) {
  list.push_back({sizeof(cl_mem), &m.mem});
  list.push_back({sizeof(Mat), &m.desc});
}
inline void push(std::vector<runtime::KernelArg>& list, const VectorArg& v) {
  list.push_back({sizeof(cl_mem), &v.mem});
  list.push_back({sizeof(cl_ulong), &v.offset});
}
template <typename T>
void push(std::vector<runtime::KernelArg>& list, const T& value) {
  static_assert(std::is_same_v<T, cl_long> || std::is_same_v<T, cl_int>, "scalars travel as long or int");
  list.push_back({sizeof(T), &value});
}
template <typename... Args>
void run(const char* name, const at::Tensor& like, int64_t items, const Args&... args) {
  std::vector<runtime::KernelArg> list;
  (push(list, args), ...);
  launch(name, like, items, std::move(list));
}

// The number of matrices of a [..., rows, cols] tensor.
int64_t batch_count(const at::Tensor& a);
// A fresh [batch, rows, cols] row-major copy of a's matrices, for kernels to overwrite.
at::Tensor work_copy(const at::Tensor& a);
// a's matrices as [batch, rows, cols] (a view where the layout allows).
at::Tensor flat(const at::Tensor& a);
// Identity matrices [batch, rows, cols], fresh.
at::Tensor identities(int64_t batch, int64_t rows, int64_t cols, const at::TensorOptions& options);

// t on the meta device, same sizes and strides: the op's meta function checks the arguments as
// the CPU does and says what its outputs look like.
at::Tensor meta(const at::Tensor& t);
// An uninitialized tensor on `device` with the sizes, strides and dtype of meta tensor m.
at::Tensor like(const at::Tensor& m, const at::Device& device);

// The CPU's shape checks and messages, ahead of meta(): PyTorch's Python meta functions word
// several differently and raise AssertionError where the CPU raises RuntimeError.
void check_matrix(const at::Tensor& A, const char* op, const char* arg = "A");
void check_square(const at::Tensor& A, const char* op, const char* arg = "A");
// The LU family's own wording of check_matrix.
void check_lu_input(const at::Tensor& A, const char* op);

// NotImplementedError for dtypes the kernels do not compute in (float32 and float64 only, as
// the CPU's LAPACK), TypeError for float64 on a device without it.
void check_floating(const at::Tensor& t, const char* op);

// Arguments and results of an op run on the CPU's LAPACK: tensors moved, the rest as they are.
inline at::Tensor to_cpu(const at::Tensor& t) { return t.cpu(); }
template <typename T>
const T& to_cpu(const T& v) {
  return v;
}
inline at::Tensor to_device(const at::Tensor& t, const at::Device& d) { return t.to(d); }
template <typename... T>
std::tuple<T...> to_device(const std::tuple<T...>& results, const at::Device& d) {
  return std::apply([&](const auto&... r) { return std::tuple<T...>{to_device(r, d)...}; }, results);
}
// op(args...) computed on the CPU, its results on `device`: where our kernels are not the better
// choice (kFactorMaxOrder), said in docs/ops.md.
template <typename Op, typename... Args>
auto on_cpu(const at::Device& device, Op op, const Args&... args) {
  return to_device(op(to_cpu(args)...), device);
}

}  // namespace drawbridge::ops::linalg
