#include "kernels/pointwise_launcher.h"

#include <algorithm>

#include "core/device_state.h"
#include "kernels/kernel_library.h"

namespace drawbridge::kernels {

namespace {
constexpr size_t kWorkGroup = 256;
}

void launch_pointwise_impl(at::TensorIteratorBase& iter, const std::string& file, const std::string& name,
                           const std::string& options, const std::vector<runtime::KernelArg>& extra) {
  int64_t numel = iter.numel();
  if (numel == 0) return;
  const int nargs = iter.ntensors();
  const int ndim = iter.ndim();
  TORCH_CHECK_NOT_IMPLEMENTED(ndim <= kMaxDims, "ocl kernels support at most ", kMaxDims,
                              " dimensions after coalescing; got ", ndim);
  // IterDesc, laid out exactly as in common.clh: numel, ndim, sizes[kMaxDims], strides[nargs][kMaxDims].
  std::vector<uint64_t> desc(2 + kMaxDims * (1 + nargs), 0);
  desc[0] = static_cast<uint64_t>(numel);
  desc[1] = static_cast<uint64_t>(ndim);
  for (int d = 0; d < ndim; ++d) desc[2 + d] = static_cast<uint64_t>(iter.shape()[d]);
  for (int k = 0; k < nargs; ++k)
    for (int d = 0; d < ndim; ++d)
      desc[2 + kMaxDims * (1 + k) + d] = static_cast<uint64_t>(iter.strides(k)[d]);

  c10::DeviceIndex index = iter.device(0).index();
  runtime::Device& device = core::checked_device(index);
  std::string opts = options + " -DNARGS=" + std::to_string(nargs) +
                     (iter.can_use_32bit_indexing() ? " -DINDEX_T=uint" : " -DINDEX_T=ulong");
  runtime::Kernel& kernel = get_kernel(device, file, opts, name);

  std::vector<runtime::BufferRef> buffers(nargs);
  std::vector<cl_ulong> offsets(nargs);
  for (int k = 0; k < nargs; ++k) {
    buffers[k] = device.memory().resolve(iter.data_ptr(k));
    offsets[k] = buffers[k].offset;
  }
  size_t local = std::min(kWorkGroup, kernel.max_work_group_size);
  size_t groups = (static_cast<size_t>(numel) + local - 1) / local;

  std::vector<runtime::KernelArg> args;
  args.reserve(1 + 2 * nargs + extra.size());
  args.push_back({desc.size() * sizeof(uint64_t), desc.data()});
  for (int k = 0; k < nargs; ++k) {
    args.push_back({sizeof(cl_mem), &buffers[k].mem});
    args.push_back({sizeof(cl_ulong), &offsets[k]});
  }
  args.insert(args.end(), extra.begin(), extra.end());

  runtime::launch_args(kernel, core::current_queue(index), groups, local, args.data(), args.size());
}

}  // namespace drawbridge::kernels
