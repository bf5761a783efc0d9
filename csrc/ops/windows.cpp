#include "ops/windows.h"

#include <ATen/ops/arange.h>

namespace drawbridge::ops {

at::Tensor window_index(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& dilation, const std::vector<int64_t>& padded,
                        const std::vector<int64_t>& out_size, int64_t channels, const at::TensorOptions& options) {
  const int64_t spatial = static_cast<int64_t>(kernel.size());
  std::vector<int64_t> plane_stride(spatial, 1);
  for (int64_t d = spatial - 2; d >= 0; --d) plane_stride[d] = plane_stride[d + 1] * padded[d + 1];
  const int64_t plane = plane_stride[0] * padded[0];
  // Broadcast over (channel, k_1..k_n, o_1..o_n).
  const int64_t rank = 1 + 2 * spatial;
  auto along = [&](int64_t axis, int64_t n, int64_t step) {
    std::vector<int64_t> shape(rank, 1);
    shape[axis] = n;
    return at::arange(n, options).mul_(step).view(shape);
  };
  at::Tensor index = along(0, channels, plane);
  for (int64_t d = 0; d < spatial; ++d) {
    index = index + along(1 + d, kernel[d], dilation[d] * plane_stride[d]);
    index = index + along(1 + spatial + d, out_size[d], stride[d] * plane_stride[d]);
  }
  return index.reshape({channels * c10::multiply_integers(kernel), -1});
}

}  // namespace drawbridge::ops
