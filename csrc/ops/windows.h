// Sliding windows over the spatial dims of a padded image, shared by convolution and pooling.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

namespace drawbridge::ops {

// For every (channel, kernel offset) row and output position column, the flat position in one
// padded image (channels x padded sizes) that the window reads: shape
// (channels * prod(kernel), prod(out_size)), int64, built on the device.
at::Tensor window_index(const std::vector<int64_t>& kernel, const std::vector<int64_t>& stride,
                        const std::vector<int64_t>& dilation, const std::vector<int64_t>& padded,
                        const std::vector<int64_t>& out_size, int64_t channels, const at::TensorOptions& options);

}  // namespace drawbridge::ops
