// Fused optimizer steps (torch.optim.Adam / AdamW / SGD with fused=True) and GradScaler's two
// ops, one kernel per parameter tensor (cl/optim.cl) instead of the dozen a foreach step
// launches. The formulas are CUDA's fused kernels': the gradient is unscaled (and stored back)
// when a grad_scale is given, and a set found_inf flag leaves everything unchanged.
#include <ATen/ops/pow.h>
#include <ATen/ops/stack.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "ops/pointwise.h"

namespace drawbridge::ops {

namespace {

// A one-element device tensor passed to a kernel by address (two arguments: buffer, byte offset).
struct DeviceValue {
  cl_mem mem = nullptr;
  cl_ulong offset = 0;
};

DeviceValue device_value(const at::Tensor& t, int64_t element = 0) {
  runtime::BufferRef ref = core::checked_device(t.device().index()).memory().resolve(t.const_data_ptr());
  return {ref.mem, ref.offset + element * t.element_size()};
}

void push(std::vector<runtime::KernelArg>& args, const DeviceValue& v) {
  args.push_back({sizeof(cl_mem), &v.mem});
  args.push_back({sizeof(cl_ulong), &v.offset});
}

// The device tensors a step reads, converted to the compute type; an absent one is represented
// by a placeholder address its kernel never reads (its option is not set).
struct StepInputs {
  std::string options;
  at::Tensor lr, grad_scale, found_inf;
  DeviceValue lr_at, grad_scale_at, found_inf_at;
};

at::Tensor on_device_as(const at::Tensor& t, const at::Tensor& like, c10::ScalarType compute, const char* what) {
  TORCH_CHECK(t.numel() == 1, what, " must be a tensor of one element, got shape ", t.sizes());
  return t.to(like.device(), compute).contiguous();
}

// A tensor lr on the CPU is read once here (into `lr`); one on the device is read by the kernel.
StepInputs step_inputs(const at::Tensor& param, c10::ScalarType compute, double& lr,
                       const std::optional<at::Tensor>& lr_tensor, const std::optional<at::Tensor>& grad_scale,
                       const std::optional<at::Tensor>& found_inf, bool maximize) {
  StepInputs in;
  DeviceValue placeholder = device_value(param);
  in.lr_at = in.grad_scale_at = in.found_inf_at = placeholder;
  if (lr_tensor && lr_tensor->is_cpu()) {
    lr = lr_tensor->item<double>();
  } else if (lr_tensor) {
    in.lr = on_device_as(*lr_tensor, param, compute, "lr");
    in.lr_at = device_value(in.lr);
    in.options += " -DLR_TENSOR";
  }
  if (grad_scale && grad_scale->defined()) {
    in.grad_scale = on_device_as(*grad_scale, param, compute, "grad_scale");
    in.grad_scale_at = device_value(in.grad_scale);
    in.options += " -DGRAD_SCALE";
  }
  if (found_inf && found_inf->defined()) {
    in.found_inf = on_device_as(*found_inf, param, compute, "found_inf");
    in.found_inf_at = device_value(in.found_inf);
    in.options += " -DFOUND_INF";
  }
  if (maximize) in.options += " -DMAXIMIZE";
  return in;
}

// Runs `kernel` with every tensor of `operands` as an in-place output.
void launch_update(const std::vector<at::Tensor>& operands, const char* kernel, c10::ScalarType compute,
                   const std::string& options, const std::vector<runtime::KernelArg>& args) {
  const at::Tensor& param = operands[0];
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(false).resize_outputs(false).set_check_mem_overlap(false);
  for (const at::Tensor& t : operands) {
    TORCH_CHECK(t.device() == param.device(), kernel, ": expected all tensors on ", param.device(), ", got ",
                t.device());
    TORCH_CHECK(t.sizes() == param.sizes(), kernel, ": expected a tensor of shape ", param.sizes(), ", got ",
                t.sizes());
    config.add_output(t);
  }
  auto iter = config.build();
  c10::DeviceGuard guard(param.device());
  kernels::launch_pointwise_impl(iter, {"optim.cl", kernel, compute, options}, args);
}

void check_lists(const char* op, size_t n, std::initializer_list<size_t> sizes) {
  for (size_t s : sizes)
    TORCH_CHECK(s == n, op, ": expected every tensor list to hold ", n, " tensors, got one of ", s);
}

void adam_steps(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                at::TensorList max_exp_avg_sqs, at::TensorList state_steps, double lr,
                const std::optional<at::Tensor>& lr_tensor, double beta1, double beta2, double weight_decay,
                double eps, bool amsgrad, bool maximize, const std::optional<at::Tensor>& grad_scale,
                const std::optional<at::Tensor>& found_inf, bool adamw) {
  const char* op = adamw ? "_fused_adamw_" : "_fused_adam_";
  if (params.empty()) return;
  check_lists(op, params.size(), {grads.size(), exp_avgs.size(), exp_avg_sqs.size(), state_steps.size()});
  if (amsgrad) check_lists(op, params.size(), {max_exp_avg_sqs.size()});
  check_dtype(op, params[0].scalar_type(), Dtypes::Floating);
  const c10::ScalarType ct = kernels::compute_type(params[0].scalar_type());
  StepInputs in = step_inputs(params[0], ct, lr, lr_tensor, grad_scale, found_inf, maximize);
  if (adamw) in.options += " -DADAMW";
  if (amsgrad) in.options += " -DAMSGRAD";
  // The bias corrections of every parameter's step, computed on the device in a few launches.
  at::Tensor steps = at::stack(state_steps).to(params[0].device(), ct).reshape({-1});
  at::Tensor corrections =
      at::stack({at::pow(beta1, steps).neg_().add_(1), at::pow(beta2, steps).neg_().add_(1).sqrt_()}, 1)
          .contiguous();
  const uint64_t scalars[] = {scalar_bits(lr, ct), scalar_bits(beta1, ct), scalar_bits(beta2, ct),
                              scalar_bits(weight_decay, ct), scalar_bits(eps, ct)};
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<at::Tensor> operands{params[i], grads[i], exp_avgs[i], exp_avg_sqs[i]};
    if (amsgrad) operands.push_back(max_exp_avg_sqs[i]);
    DeviceValue corrections_at = device_value(corrections, 2 * static_cast<int64_t>(i));
    std::vector<runtime::KernelArg> args;
    for (const DeviceValue* v : {&corrections_at, &in.lr_at, &in.grad_scale_at, &in.found_inf_at}) push(args, *v);
    for (const uint64_t& s : scalars) args.push_back({sizeof(uint64_t), &s});
    launch_update(operands, "adam_step", ct, in.options, args);
  }
}

template <bool AdamW>
void fused_adam(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                at::TensorList max_exp_avg_sqs, at::TensorList state_steps, double lr, double beta1, double beta2,
                double weight_decay, double eps, bool amsgrad, bool maximize,
                const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  adam_steps(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, std::nullopt, beta1, beta2,
             weight_decay, eps, amsgrad, maximize, grad_scale, found_inf, AdamW);
}

template <bool AdamW>
void fused_adam_tensor_lr(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs,
                          at::TensorList exp_avg_sqs, at::TensorList max_exp_avg_sqs, at::TensorList state_steps,
                          const at::Tensor& lr, double beta1, double beta2, double weight_decay, double eps,
                          bool amsgrad, bool maximize, const std::optional<at::Tensor>& grad_scale,
                          const std::optional<at::Tensor>& found_inf) {
  adam_steps(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, 0.0, lr, beta1, beta2,
             weight_decay, eps, amsgrad, maximize, grad_scale, found_inf, AdamW);
}

void sgd_steps(at::TensorList params, at::TensorList grads, at::TensorList momentum_buffers, double weight_decay,
               double momentum, double lr, const std::optional<at::Tensor>& lr_tensor, double dampening,
               bool nesterov, bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
               const std::optional<at::Tensor>& found_inf) {
  if (params.empty()) return;
  check_lists("_fused_sgd_", params.size(), {grads.size()});
  if (momentum != 0) check_lists("_fused_sgd_", params.size(), {momentum_buffers.size()});
  check_dtype("_fused_sgd_", params[0].scalar_type(), Dtypes::Floating);
  const c10::ScalarType ct = kernels::compute_type(params[0].scalar_type());
  StepInputs in = step_inputs(params[0], ct, lr, lr_tensor, grad_scale, found_inf, maximize);
  if (momentum != 0) in.options += " -DMOMENTUM";
  if (nesterov) in.options += " -DNESTEROV";
  if (is_first_step) in.options += " -DFIRST_STEP";
  const uint64_t scalars[] = {scalar_bits(lr, ct), scalar_bits(weight_decay, ct), scalar_bits(momentum, ct),
                              scalar_bits(dampening, ct)};
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<at::Tensor> operands{params[i], grads[i]};
    if (momentum != 0) operands.push_back(momentum_buffers[i]);
    std::vector<runtime::KernelArg> args;
    for (const DeviceValue* v : {&in.lr_at, &in.grad_scale_at, &in.found_inf_at}) push(args, *v);
    for (const uint64_t& s : scalars) args.push_back({sizeof(uint64_t), &s});
    launch_update(operands, "sgd_step", ct, in.options, args);
  }
}

void fused_sgd(at::TensorList params, at::TensorList grads, at::TensorList momentum_buffers, double weight_decay,
               double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step,
               const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  sgd_steps(params, grads, momentum_buffers, weight_decay, momentum, lr, std::nullopt, dampening, nesterov, maximize,
            is_first_step, grad_scale, found_inf);
}

void fused_sgd_tensor_lr(at::TensorList params, at::TensorList grads, at::TensorList momentum_buffers,
                         double weight_decay, double momentum, const at::Tensor& lr, double dampening, bool nesterov,
                         bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                         const std::optional<at::Tensor>& found_inf) {
  sgd_steps(params, grads, momentum_buffers, weight_decay, momentum, 0.0, lr, dampening, nesterov, maximize,
            is_first_step, grad_scale, found_inf);
}

// ---- GradScaler -----------------------------------------------------------------------------

void check_one_float(const at::Tensor& t, const char* what, c10::ScalarType type = c10::kFloat) {
  TORCH_CHECK(t.numel() == 1, what, " must be a 1-element tensor.");
  TORCH_CHECK(t.scalar_type() == type, what, " must be a ", c10::toString(type), " tensor.");
}

void unscale_and_check(at::TensorList grads, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  check_one_float(found_inf, "found_inf");
  check_one_float(inv_scale, "inv_scale");
  TORCH_CHECK(!found_inf.is_cpu() && !inv_scale.is_cpu(), "found_inf and inv_scale must be on the ocl device");
  const DeviceValue found_at = device_value(found_inf);
  for (const at::Tensor& grad : grads) {
    if (grad.numel() == 0) continue;
    TORCH_CHECK(grad.device() == found_inf.device(), "all grads must be on the device of found_inf (",
                found_inf.device(), "), got ", grad.device());
    check_dtype("_amp_foreach_non_finite_check_and_unscale_", grad.scalar_type(), Dtypes::Floating);
    const c10::ScalarType ct = kernels::compute_type(grad.scalar_type());
    at::Tensor inv = inv_scale.to(ct).contiguous();
    const DeviceValue inv_at = device_value(inv);
    std::vector<runtime::KernelArg> args;
    push(args, inv_at);
    push(args, found_at);
    launch_update({grad}, "unscale_check", ct, "", args);
  }
}

at::Tensor& update_scale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                         double growth_factor, double backoff_factor, int64_t growth_interval) {
  check_one_float(scale, "current_scale");
  check_one_float(growth_tracker, "growth_tracker", c10::kInt);
  check_one_float(found_inf, "found_inf");
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(false).resize_outputs(false).set_check_mem_overlap(false);
  at::Tensor scale_1 = scale.reshape({1}), tracker_1 = growth_tracker.reshape({1}), found_1 = found_inf.reshape({1});
  config.add_output(scale_1).add_output(tracker_1).add_const_input(found_1);
  auto iter = config.build();
  c10::DeviceGuard guard(scale.device());
  kernels::launch_pointwise(iter, {"optim.cl", "update_scale", c10::kFloat}, scalar_bits(growth_factor, c10::kFloat),
                            scalar_bits(backoff_factor, c10::kFloat), static_cast<cl_long>(growth_interval));
  return scale;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_adam_", fused_adam<false>);
  m.impl("_fused_adam_.tensor_lr", fused_adam_tensor_lr<false>);
  m.impl("_fused_adamw_", fused_adam<true>);
  m.impl("_fused_adamw_.tensor_lr", fused_adam_tensor_lr<true>);
  m.impl("_fused_sgd_", fused_sgd);
  m.impl("_fused_sgd_.tensor_lr", fused_sgd_tensor_lr);
  m.impl("_amp_foreach_non_finite_check_and_unscale_", unscale_and_check);
  m.impl("_amp_update_scale_", update_scale);
}

}  // namespace drawbridge::ops
