#include "kernels/multi_tensor_launcher.h"

#include <algorithm>
#include <numeric>
#include <string>

#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "kernels/pointwise_launcher.h"
#include "runtime/commands.h"

namespace drawbridge::kernels {

namespace {

constexpr size_t kMaxSlots = 8;    // SLOTS_1 .. SLOTS_8 in cl/foreach.cl
constexpr uint64_t kCpuItem = 2048;  // elements per work-item on CPU devices (as the pointwise launcher)
constexpr size_t kGpuGroup = 256, kCpuGroup = 16;
// The most elements (of the list written) a foreach call may have to run its operation chosen at
// run time (launch_foreach).
constexpr uint64_t kSmallForeachCall = 4 * kSmallIteration;
// Elements per partial norm on GPUs: each pass over the partials shrinks them this many times.
constexpr uint64_t kGpuNormItem = 64;

// Tensors per launch: as many slots as the device's kernel-argument space holds beside the shared
// arguments (a device must allow 1024 bytes; PoCL allows exactly that).
size_t slots_for(const runtime::DeviceProperties& props, size_t lists, size_t shared_bytes) {
  const size_t per_slot = 3 * sizeof(cl_ulong) + lists * (sizeof(cl_mem) + sizeof(cl_ulong));
  const size_t budget = std::max<size_t>(props.max_parameter_bytes, 1024) - shared_bytes - 32;
  return std::clamp<size_t>(budget / per_slot, 1, kMaxSlots);
}

// The passes of cl/foreach.cl's foreach_norm: over the elements, then over the partials.
enum NormPass : uint64_t { kLargestAbs, kSumOfAbs, kSumOfSquares, kLargestPartial, kSumOfPartials };

uint64_t norm_of_elements(int ord) {
  TORCH_INTERNAL_ASSERT(ord >= 0 && ord <= 2, "foreach_norm: order code ", ord);
  return ord == 0 ? kLargestAbs : ord == 1 ? kSumOfAbs : kSumOfSquares;
}

}  // namespace

bool multi_tensor_applies(const std::vector<at::TensorList>& lists, size_t value_lists) {
  if (lists.size() <= value_lists || lists[0].empty()) return false;
  const at::Tensor& first = lists[0][0];
  if (!first.device().is_privateuseone() || !c10::isFloatingType(first.scalar_type())) return false;
  if (first.scalar_type() == c10::kDouble && !core::checked_device(first.device().index()).properties().fp64)
    return false;  // the per-tensor path raises the device's error
  for (size_t j = 0; j < lists.size(); ++j) {
    const at::TensorList& list = lists[j];
    const bool value = j >= lists.size() - value_lists;
    if (list.size() != lists[0].size()) return false;
    for (size_t k = 0; k < list.size(); ++k) {
      const at::Tensor& t = list[k];
      if (!t.defined() || t.device() != first.device() || !t.is_contiguous()) return false;
      if (value ? (t.numel() != 1 || !c10::isFloatingType(t.scalar_type()) || t.scalar_type() != list[0].scalar_type())
                : (t.scalar_type() != first.scalar_type() || t.sizes() != lists[0][k].sizes()))
        return false;
    }
  }
  return true;
}

void launch_multi_tensor(const MultiTensorKernel& spec, const std::vector<at::TensorList>& lists, size_t value_lists,
                         const std::vector<uint64_t>& scalar_bits) {
  const at::Tensor& first = lists[0][0];
  const c10::DeviceIndex index = first.device().index();
  runtime::Device& device = core::checked_device(index);
  const runtime::DeviceProperties& props = device.properties();
  const bool cpu = props.cpu_class();
  const uint64_t item = spec.item ? spec.item : cpu ? kCpuItem : 1;
  size_t shared_bytes = 0;
  for (const runtime::KernelArg& a : spec.shared) shared_bytes += a.size;
  // The slot count depends on the device and the list count only, not on how many tensors a call
  // passes: lists shorter than that pad their one launch, and every call shares one program.
  const size_t slots = slots_for(props, lists.size(), shared_bytes);

  std::string options = spec.options + " -DNLISTS=" + std::to_string(lists.size()) + " -DNARGS=" +
                        std::to_string(lists.size()) + " -DSLOTS=" + std::to_string(slots) + " -DITEM=" +
                        std::to_string(item) + " -DCT=" + dtype_token(compute_type(first.scalar_type()));
  for (size_t k = 0; k < lists.size(); ++k)
    options += " -DT" + std::to_string(k) + "=" + dtype_token(lists[k][0].scalar_type());
  runtime::Kernel& kernel = get_kernel(device, "foreach.cl", options, spec.name);
  cl_command_queue queue = core::current_queue(index);
  c10::DeviceGuard guard(first.device());

  // One launch per group of `slots` non-empty tensors; unused slots of the last launch repeat its
  // last tensor with no items (their start lies past every work-item). A launch's work-items are
  // numbered on from the last one's (first_item in cl/foreach.cl).
  struct Slot {
    cl_ulong start, numel, scalar;
    std::vector<runtime::BufferRef> refs;
  };
  std::vector<Slot> group;
  cl_ulong launched = 0;  // work-items of the launches so far
  auto flush = [&] {
    if (group.empty()) return;
    const cl_ulong first = group.front().start;
    const cl_ulong items = group.back().start + (group.back().numel + item - 1) / item;
    while (group.size() < slots) group.push_back({items, 0, 0, group.back().refs});
    std::vector<runtime::KernelArg> args = spec.shared;
    args.push_back({sizeof(cl_ulong), &first});
    for (Slot& s : group) {
      args.push_back({sizeof(cl_ulong), &s.start});
      args.push_back({sizeof(cl_ulong), &s.numel});
      args.push_back({sizeof(cl_ulong), &s.scalar});
      for (runtime::BufferRef& r : s.refs) {
        args.push_back({sizeof(cl_mem), &r.mem});
        args.push_back({sizeof(cl_ulong), &r.offset});
      }
    }
    const size_t local = std::min<size_t>(cpu ? kCpuGroup : kGpuGroup, kernel.max_work_group_size);
    runtime::launch_args(kernel, queue, (items - first + local - 1) / local, local, args.data(), args.size());
    launched = items;
    group.clear();
  };
  for (size_t k = 0; k < lists[0].size(); ++k) {
    const int64_t numel = lists[0][k].numel();
    if (numel == 0) continue;
    Slot s{group.empty() ? launched : group.back().start + (group.back().numel + item - 1) / item,
           static_cast<cl_ulong>(numel), 0, {}};
    if (!scalar_bits.empty()) s.scalar = scalar_bits.size() == 1 ? scalar_bits[0] : scalar_bits[k];
    for (const at::TensorList& list : lists) s.refs.push_back(device.memory().resolve(list[k].const_data_ptr()));
    group.push_back(std::move(s));
    if (group.size() == slots) flush();
  }
  flush();
}

void launch_foreach(ForeachOp op, const std::vector<at::TensorList>& lists, bool inplace,
                    const std::vector<uint64_t>& scalar_bits, const std::optional<at::Tensor>& scalar_tensor) {
  const at::Tensor& first = lists[0][0];
  runtime::Device& device = core::checked_device(first.device().index());
  // Calls of few elements (a test's, a small model's bookkeeping) pass the operation as an
  // argument, so that one program serves every operation of their list count; longer ones compile
  // it in, and their loops vectorize.
  int64_t elements = 0;
  for (const at::Tensor& t : lists[0]) elements += t.numel();
  const bool dispatch = static_cast<uint64_t>(elements) <= kSmallForeachCall;
  MultiTensorKernel spec{"foreach_apply", dispatch ? " -DOP_DISPATCH" : " -DOP=" + std::to_string(static_cast<int>(op)), {}};
  if (inplace) spec.options += " -DINPLACE";
  at::Tensor on_device;
  if (scalar_tensor) {
    on_device = scalar_tensor->to(first.device(), compute_type(first.scalar_type())).contiguous();
    spec.options += " -DSCALAR_ON_DEVICE";
  }
  // Without a scalar tensor the kernel never reads these: any valid buffer will do.
  const runtime::BufferRef scalar_ref =
      device.memory().resolve((on_device.defined() ? on_device : first).const_data_ptr());
  const cl_ulong op_code = static_cast<cl_ulong>(op);
  spec.shared = {{sizeof(cl_mem), &scalar_ref.mem}, {sizeof(cl_ulong), &scalar_ref.offset}};
  if (dispatch) spec.shared.push_back({sizeof(cl_ulong), &op_code});
  launch_multi_tensor(spec, lists, 0, scalar_bits);
}

at::Tensor launch_foreach_norm(at::TensorList self, int ord) {
  const at::Tensor& first = self[0];
  runtime::Device& device = core::checked_device(first.device().index());
  const uint64_t item = device.properties().cpu_class() ? kCpuItem : kGpuNormItem;
  const c10::ScalarType ct = compute_type(first.scalar_type());
  std::vector<at::Tensor> inputs(self.begin(), self.end());
  std::vector<size_t> nonempty;  // the tensors with elements, whose partials are numbered in order
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].numel() > 0) nonempty.push_back(k);
  if (nonempty.empty()) return at::zeros({static_cast<int64_t>(self.size())}, first.options().dtype(ct));
  at::Tensor partials;
  for (bool reduced = false, first_pass = true; !reduced; first_pass = false) {
    const uint64_t pass = first_pass ? norm_of_elements(ord) : ord == 0 ? kLargestPartial : kSumOfPartials;
    std::vector<int64_t> items;  // work-items (partials) of each tensor with elements
    for (size_t k : nonempty) items.push_back((inputs[k].numel() + int64_t(item) - 1) / int64_t(item));
    reduced = std::all_of(items.begin(), items.end(), [](int64_t n) { return n == 1; });
    partials = at::empty({std::accumulate(items.begin(), items.end(), int64_t(0))}, first.options().dtype(ct));
    const runtime::BufferRef out = device.memory().resolve(partials.data_ptr());
    MultiTensorKernel spec{"foreach_norm", " -DFOREACH_NORM",
                           {{sizeof(cl_mem), &out.mem}, {sizeof(cl_ulong), &out.offset}, {sizeof(pass), &pass}},
                           item};
    launch_multi_tensor(spec, {inputs}, 0, {});
    for (size_t j = 0, start = 0; j < nonempty.size(); start += items[j++])  // the next pass reduces them
      inputs[nonempty[j]] = partials.narrow(0, static_cast<int64_t>(start), items[j]);
  }
  // One partial per tensor with elements; an empty tensor's norm is 0.
  at::Tensor norms = partials;
  if (nonempty.size() != self.size()) {
    norms = at::zeros({static_cast<int64_t>(self.size())}, partials.options());
    std::vector<int64_t> where(nonempty.begin(), nonempty.end());
    if (!where.empty()) norms.index_copy_(0, at::tensor(where).to(norms.device()), partials);
  }
  return ord == 2 ? norms.sqrt_() : norms;
}

}  // namespace drawbridge::kernels
