// CTC loss (`_ctc_loss` and `_ctc_loss_backward`, with int-list and tensor lengths) on
// cl/ctc_loss.cl: one launch each way, one work-group per batch element looping over time.
// torch.nn.functional.ctc_loss reaches them through the composite ctc_loss, which adds the
// batch dim of an unbatched input, zero_infinity's masking of the loss and the reduction.
// The argument checks and their messages are the CPU's; float32 and float64, as on the CPU.
#include <ATen/TensorUtils.h>
#include <ATen/ops/_ctc_loss.h>
#include <ATen/ops/_ctc_loss_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "runtime/commands.h"

namespace drawbridge::ops {

namespace {

// cl/ctc_loss.cl's CtcDesc.
struct CtcDesc {
  cl_long T, N, C;
  cl_long lp_t, lp_n, lp_c;
  cl_long tg_s;
  cl_long width;
  cl_long blank;
  cl_long la_n, la_t, la_s;
  cl_long nll_n, go_n;
  cl_long zero_infinity;
};

// What both directions derive from the lengths: per element (input length, target length, the
// element offset of its target in targets), the targets' stride along a target and the longest
// target.
struct Alignment {
  std::vector<int64_t> table;
  int64_t target_stride = 0;
  int64_t max_target_length = 0;
};

void check_floating(const at::Tensor& log_probs, const char* op) {
  const c10::ScalarType type = log_probs.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(type == c10::kFloat || type == c10::kDouble, "\"", op, "\" not implemented for '",
                              c10::toString(type), "'");
  kernels::check_dtype_supported(type, log_probs.device().index());
}

// The CPU's checks of the forward (in its order, with its messages and CheckedFrom name).
Alignment check_and_align(const at::Tensor& log_probs, const at::Tensor& targets, c10::IntArrayRef input_lengths,
                          c10::IntArrayRef target_lengths, int64_t blank) {
  at::CheckedFrom c = "ctc_loss_allocate_outputs";
  at::TensorArg log_probs_arg(log_probs, "log_probs", 1), targets_arg(targets, "targets", 2);
  at::checkScalarType(c, targets_arg, targets.scalar_type() == c10::kLong ? c10::kLong : c10::kInt);
  at::checkDim(c, log_probs_arg, 3);
  at::checkDimRange(c, targets_arg, 1, 3);
  const int64_t batch = log_probs.size(1), labels = log_probs.size(2);
  TORCH_CHECK(0 <= blank && blank < labels, "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == batch, "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == batch, "target_lengths must be of size batch_size");
  Alignment a;
  a.table.resize(3 * batch);
  int64_t position = 0;
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(target_lengths[b] >= 0, "Expected target_lengths to have value at least ", 0, ", but got value ",
                target_lengths[b], " (while checking arguments for ", c, ")");
    a.table[3 * b + 2] = targets.dim() == 1 ? position : b * targets.stride(0);
    position += target_lengths[b];
    a.max_target_length = std::max(a.max_target_length, target_lengths[b]);
  }
  if (targets.dim() == 1) {
    a.target_stride = targets.stride(0);
    at::checkSize(c, targets_arg, 0, position);
  } else {
    a.target_stride = targets.stride(1);
    at::checkSize(c, targets_arg, 0, batch);
    TORCH_CHECK(targets.size(1) >= a.max_target_length, "Expected tensor to have size at least ",
                a.max_target_length, " at dimension 1, but got size ", targets.size(1), " for ", targets_arg,
                " (while checking arguments for ", c, ")");
  }
  const int64_t max_input_length = log_probs.size(0);
  for (int64_t b = 0; b < batch; ++b) {
    TORCH_CHECK(input_lengths[b] >= 0, "Expected input_lengths to have value at least ", 0, ", but got value ",
                input_lengths[b], " (while checking arguments for ", c, ")");
    TORCH_CHECK(input_lengths[b] <= max_input_length, "Expected input_lengths to have value at most ",
                max_input_length, ", but got value ", input_lengths[b], " (while checking arguments for ", c, ")");
    a.table[3 * b] = input_lengths[b];
    a.table[3 * b + 1] = target_lengths[b];
  }
  return a;
}

// The CPU's forward kernel reads targets on the host and has no device to match; ours reads them
// on log_probs' device.
at::Tensor targets_on_device(const at::Tensor& log_probs, const at::Tensor& targets) {
  TORCH_CHECK(log_probs.device().type() == c10::DeviceType::PrivateUse1, "ctc_loss: log_probs is on ",
              log_probs.device(), "; the ocl kernel takes it on ocl");
  return targets.device() == log_probs.device() ? targets : targets.to(log_probs.device());
}

CtcDesc describe(const at::Tensor& log_probs, const Alignment& a, int64_t blank) {
  CtcDesc d{};
  d.T = log_probs.size(0);
  d.N = log_probs.size(1);
  d.C = log_probs.size(2);
  d.lp_t = log_probs.stride(0);
  d.lp_n = log_probs.stride(1);
  d.lp_c = log_probs.stride(2);
  d.tg_s = a.target_stride;
  d.width = 2 * a.max_target_length + 1;
  d.blank = blank;
  return d;
}

// A tensor's buffer and byte offset for a kernel argument; an empty one (never read) gets
// `stand_in`'s.
struct Operand {
  cl_mem mem;
  cl_ulong offset;
};
Operand operand(runtime::Device& device, const at::Tensor& t, const at::Tensor& stand_in) {
  const at::Tensor& source = t.numel() > 0 ? t : stand_in;
  runtime::BufferRef ref = device.memory().resolve(source.const_data_ptr());
  return {ref.mem, ref.offset};
}

// Lanes per work-group, fixed per device class (PoCL compiles a kernel once per local size). GPUs
// spread a target's positions over a full group. A CPU device runs a group's lanes in one thread,
// one barrier region after another: there one lane walks the positions itself (at T = 500, 16
// elements and targets of 100, 16 lanes or 64 ran no faster than one, and 128 slower).
size_t lanes_for(runtime::Device& device, const runtime::Kernel& kernel) {
  size_t lanes = device.properties().cpu_class() ? 1 : 256;  // cl/ctc_loss.cl: LANES_MAX
  while (lanes > kernel.max_work_group_size) lanes /= 2;
  return lanes;
}

void launch(runtime::Device& device, const at::Tensor& like, const at::Tensor& targets, const char* name,
            size_t groups, const std::vector<runtime::KernelArg>& args) {
  const std::string options = std::string("-DNARGS=1 -DCT=") + kernels::dtype_token(like.scalar_type()) +
                              " -DTG=" + kernels::dtype_token(targets.scalar_type());
  runtime::Kernel& kernel = kernels::get_kernel(device, "ctc_loss.cl", options, name);
  const size_t lanes = lanes_for(device, kernel);
  const size_t global = groups * lanes;
  runtime::launch_nd(kernel, core::current_queue(like.device().index()), 1, &global, &lanes, args.data(), args.size());
}

void push(std::vector<runtime::KernelArg>& args, const Operand& o) {
  args.push_back({sizeof(cl_mem), &o.mem});
  args.push_back({sizeof(cl_ulong), &o.offset});
}

at::Tensor length_table(const Alignment& a, const at::Device& device) {
  return at::tensor(a.table, at::TensorOptions().dtype(c10::kLong)).to(device);
}

std::tuple<at::Tensor, at::Tensor> ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets_,
                                            c10::IntArrayRef input_lengths, c10::IntArrayRef target_lengths,
                                            int64_t blank, bool zero_infinity) {
  (void)zero_infinity;  // the backward's
  check_floating(log_probs, "ctc_loss_cpu");
  const Alignment a = check_and_align(log_probs, targets_, input_lengths, target_lengths, blank);
  const at::Tensor targets = targets_on_device(log_probs, targets_);
  const int64_t T = log_probs.size(0), N = log_probs.size(1);
  at::Tensor log_alpha = at::empty({N, T, 2 * a.max_target_length + 1}, log_probs.options());
  at::Tensor nll = at::empty({N}, log_probs.options());
  if (N == 0) return {nll, log_alpha};
  c10::DeviceGuard guard(log_probs.device());
  runtime::Device& device = core::checked_device(log_probs.device().index());
  const at::Tensor lengths = length_table(a, log_probs.device());
  const CtcDesc d = describe(log_probs, a, blank);
  const Operand lp = operand(device, log_probs, lengths), tg = operand(device, targets, lengths),
                len = operand(device, lengths, lengths), alpha = operand(device, log_alpha, lengths),
                out = operand(device, nll, lengths);
  std::vector<runtime::KernelArg> args{{sizeof(d), &d}};
  for (const Operand* o : {&lp, &tg, &len, &alpha, &out}) push(args, *o);
  launch(device, log_probs, targets, "ctc_alpha", N, args);
  return {nll, log_alpha};
}

// The CPU checks nothing here and trusts the forward's outputs; what would make the kernel read
// outside the tensors is checked.
at::Tensor ctc_loss_backward(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets_,
                             c10::IntArrayRef input_lengths, c10::IntArrayRef target_lengths,
                             const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                             bool zero_infinity) {
  check_floating(log_probs, "ctc_loss_backward_cpu");
  const Alignment a = check_and_align(log_probs, targets_, input_lengths, target_lengths, blank);
  const at::Tensor targets = targets_on_device(log_probs, targets_);
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2);
  const int64_t width = 2 * a.max_target_length + 1;
  TORCH_CHECK(log_alpha.dim() == 3 && log_alpha.size(0) == N && log_alpha.size(1) == T && log_alpha.size(2) >= width,
              "ctc_loss_backward: log_alpha of shape ", log_alpha.sizes(), " does not fit log_probs of shape ",
              log_probs.sizes(), " and targets up to ", a.max_target_length, " long");
  TORCH_CHECK(neg_log_likelihood.dim() == 1 && neg_log_likelihood.size(0) == N && grad.dim() == 1 &&
                  grad.size(0) == N,
              "ctc_loss_backward: expected grad and neg_log_likelihood of shape [", N, "], got ", grad.sizes(),
              " and ", neg_log_likelihood.sizes());
  for (const at::Tensor* t : {&grad, &neg_log_likelihood, &log_alpha})
    TORCH_CHECK(t->device() == log_probs.device() && t->scalar_type() == log_probs.scalar_type(),
                "ctc_loss_backward: expected a ", log_probs.scalar_type(), " tensor on ", log_probs.device(),
                ", got ", t->scalar_type(), " on ", t->device());
  at::Tensor result = at::empty({T, N, C}, log_probs.options());
  if (result.numel() == 0) return result;
  c10::DeviceGuard guard(log_probs.device());
  runtime::Device& device = core::checked_device(log_probs.device().index());
  const at::Tensor lengths = length_table(a, log_probs.device());
  at::Tensor beta = at::empty({N, 2, width}, log_probs.options());
  at::Tensor chain = at::empty({N, width}, log_probs.options().dtype(c10::kInt));
  CtcDesc d = describe(log_probs, a, blank);
  d.la_n = log_alpha.stride(0);
  d.la_t = log_alpha.stride(1);
  d.la_s = log_alpha.stride(2);
  d.nll_n = neg_log_likelihood.stride(0);
  d.go_n = grad.stride(0);
  d.zero_infinity = zero_infinity ? 1 : 0;
  const Operand go = operand(device, grad, lengths), lp = operand(device, log_probs, lengths),
                tg = operand(device, targets, lengths), len = operand(device, lengths, lengths),
                nll = operand(device, neg_log_likelihood, lengths), alpha = operand(device, log_alpha, lengths),
                bt = operand(device, beta, lengths), ch = operand(device, chain, lengths),
                out = operand(device, result, lengths);
  std::vector<runtime::KernelArg> args{{sizeof(d), &d}};
  for (const Operand* o : {&go, &lp, &tg, &len, &nll, &alpha, &bt, &ch, &out}) push(args, *o);
  launch(device, log_probs, targets, "ctc_gradient", N, args);
  return result;
}

// Tensor lengths are read to the host once, as the CPU's overloads do, and go the int-list way.
struct HostLengths {
  at::Tensor input, target;
};
HostLengths host_lengths(const at::Tensor& input_lengths, const at::Tensor& target_lengths) {
  TORCH_CHECK(c10::isIntegralType(input_lengths.scalar_type(), /*includeBool=*/false),
              "input_lengths must be integral");
  TORCH_CHECK(c10::isIntegralType(target_lengths.scalar_type(), /*includeBool=*/false),
              "target_lengths must be integral");
  return {input_lengths.to(c10::Device(c10::kCPU), c10::kLong).contiguous(),
          target_lengths.to(c10::Device(c10::kCPU), c10::kLong).contiguous()};
}
c10::IntArrayRef as_list(const at::Tensor& t) { return {t.const_data_ptr<int64_t>(), static_cast<size_t>(t.numel())}; }

std::tuple<at::Tensor, at::Tensor> ctc_loss_tensor(const at::Tensor& log_probs, const at::Tensor& targets,
                                                   const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                                   int64_t blank, bool zero_infinity) {
  const HostLengths l = host_lengths(input_lengths, target_lengths);
  return at::_ctc_loss(log_probs, targets, as_list(l.input), as_list(l.target), blank, zero_infinity);
}

at::Tensor ctc_loss_backward_tensor(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                                    const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                    const at::Tensor& neg_log_likelihood, const at::Tensor& log_alpha, int64_t blank,
                                    bool zero_infinity) {
  const HostLengths l = host_lengths(input_lengths, target_lengths);
  return at::_ctc_loss_backward(grad, log_probs, targets, as_list(l.input), as_list(l.target), neg_log_likelihood,
                                log_alpha, blank, zero_infinity);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_ctc_loss", TORCH_FN(ctc_loss));
  m.impl("_ctc_loss.Tensor", TORCH_FN(ctc_loss_tensor));
  m.impl("_ctc_loss_backward", TORCH_FN(ctc_loss_backward));
  m.impl("_ctc_loss_backward.Tensor", TORCH_FN(ctc_loss_backward_tensor));
}

}  // namespace drawbridge::ops
