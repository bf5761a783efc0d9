// Reading and writing by index, shared by the indexing, scatter and search ops.
// Out-of-range indices are caught on the device (see Device::error_flag) and raised at the next
// synchronization; they are never read or written.
#pragma once

#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include "core/device_state.h"

namespace drawbridge::ops {

enum class Combine { Store, Add, Mul, Max, Min };

// How an index outside its dimension is met: the exception the CPU raises for the op, and
// whether negative indices count from the end first (otherwise they are out of range).
struct IndexBounds {
  core::DeviceAssert raises;
  bool wrap = false;
};
constexpr IndexBounds kScatterBounds{core::DeviceAssert::index_runtime_error};  // scatter, gather
constexpr IndexBounds kIndexOpBounds{core::DeviceAssert::index_error};          // index_add, index_copy

// For each element of `index` (int32/int64): dst[..., index, ...] (along dim) = or combined
// with the element of `src` at the same position (src has index's shape).
void scatter_along(const at::Tensor& dst, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                   Combine combine, IndexBounds bounds);
void scatter_value_along(const at::Tensor& dst, int64_t dim, const at::Tensor& index, const c10::Scalar& value,
                         IndexBounds bounds);

// `index` (any shape, int32/int64) viewed with `shape`: it varies along dim only.
at::Tensor index_along(const at::Tensor& index, at::IntArrayRef shape, int64_t dim);

// out = src[index] along dim, where `index` already has out's shape.
void gather_along(const at::Tensor& out, const at::Tensor& src, int64_t dim, const at::Tensor& index,
                  core::DeviceAssert raises);

// self[indices] with NumPy's advanced-indexing rules (integer and bool index tensors, broadcast
// together; None keeps a dimension). `target` views self with the result's shape (stride 0 over
// the indexed dimensions) and `offsets`, broadcastable to that shape, holds the byte offset
// each result element adds to it. Index bounds are checked on the device.
struct AdvancedIndex {
  at::Tensor target;
  at::Tensor offsets;
};
AdvancedIndex advanced_index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices);

// Coordinates of the nonzero elements, shape (count, self.dim()); synchronizes to learn count.
at::Tensor nonzero_coords(const at::Tensor& self);

}  // namespace drawbridge::ops
