// Fused optimizer steps (torch.optim.Adam / AdamW / SGD with fused=True), multi-tensor kernels
// of cl/foreach.cl that update up to 8 parameters and their state a launch, and GradScaler's two
// ops (cl/optim.cl). The formulas are CUDA's fused kernels': the gradient is unscaled (and stored
// back) when a grad_scale is given, and a set found_inf flag leaves everything unchanged.
#include <torch/library.h>

#include "core/device_state.h"
#include "kernels/multi_tensor_launcher.h"
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

// The step_flags bits of cl/foreach.cl's optimizer kernels: choices that select no program.
enum StepFlag : uint64_t {
  kLrTensor = 1,
  kGradScale = 2,
  kFoundInf = 4,
  kMaximize = 8,
  kAdamW = 16,
  kNesterov = 32,
  kFirstStep = 64,
};

// The device tensors a step reads, converted to the compute type; an absent one is represented
// by a placeholder address its kernel never reads (its flag is not set).
struct StepInputs {
  uint64_t flags = 0;
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
    in.flags |= kLrTensor;
  }
  if (grad_scale && grad_scale->defined()) {
    in.grad_scale = on_device_as(*grad_scale, param, compute, "grad_scale");
    in.grad_scale_at = device_value(in.grad_scale);
    in.flags |= kGradScale;
  }
  if (found_inf && found_inf->defined()) {
    in.found_inf = on_device_as(*found_inf, param, compute, "found_inf");
    in.found_inf_at = device_value(in.found_inf);
    in.flags |= kFoundInf;
  }
  if (maximize) in.flags |= kMaximize;
  return in;
}

// Runs the multi-tensor step `kernel` over `lists` (updated in place; the last `value_lists` hold
// one element per parameter). Tensors that are not contiguous are updated through contiguous
// copies, written back after the launches.
void launch_step(kernels::MultiTensorKernel kernel, const char* op, std::vector<std::vector<at::Tensor>> lists,
                 size_t value_lists) {
  const at::Tensor& param = lists[0][0];
  std::vector<std::pair<at::Tensor, at::Tensor>> write_back;
  for (auto& list : lists)
    for (size_t k = 0; k < list.size(); ++k) {
      TORCH_CHECK(list[k].device() == param.device(), op, ": expected all tensors on ", param.device(), ", got ",
                  list[k].device());
      if (!list[k].is_contiguous()) {
        at::Tensor dense = list[k].contiguous();
        write_back.emplace_back(list[k], dense);
        list[k] = dense;
      }
    }
  std::vector<at::TensorList> views(lists.begin(), lists.end());
  for (size_t j = 1; j + value_lists < lists.size(); ++j)
    for (size_t k = 0; k < lists[0].size(); ++k)
      TORCH_CHECK(lists[j][k].sizes() == lists[0][k].sizes() && lists[j][k].scalar_type() == lists[0][k].scalar_type(),
                  op, ": expected a tensor of shape ", lists[0][k].sizes(), " and dtype ", lists[0][k].scalar_type(),
                  ", got ", lists[j][k].sizes(), " ", lists[j][k].scalar_type());
  TORCH_CHECK(kernels::multi_tensor_applies(views, value_lists), op,
              ": expected floating tensors of one dtype, and one-element steps, on one device");
  kernels::launch_multi_tensor(kernel, views, value_lists, {});
  for (auto& [original, dense] : write_back) original.copy_(dense);
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
  if (adamw) in.flags |= kAdamW;
  std::vector<std::vector<at::Tensor>> lists{params.vec(), grads.vec(), exp_avgs.vec(), exp_avg_sqs.vec()};
  if (amsgrad) lists.push_back(max_exp_avg_sqs.vec());
  std::vector<at::Tensor> steps;  // on the device (PyTorch keeps them there for fused steps)
  for (const at::Tensor& step : state_steps) steps.push_back(step.to(params[0].device()));
  lists.push_back(std::move(steps));
  const uint64_t scalars[] = {scalar_bits(lr, ct), in.flags, scalar_bits(beta1, ct), scalar_bits(beta2, ct),
                              scalar_bits(weight_decay, ct), scalar_bits(eps, ct)};
  kernels::MultiTensorKernel kernel{"adam_apply", amsgrad ? " -DADAM_STEP -DAMSGRAD" : " -DADAM_STEP", {}};
  for (const DeviceValue* v : {&in.lr_at, &in.grad_scale_at, &in.found_inf_at}) push(kernel.shared, *v);
  for (const uint64_t& s : scalars) kernel.shared.push_back({sizeof(uint64_t), &s});
  launch_step(kernel, op, std::move(lists), 1);
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
  if (nesterov) in.flags |= kNesterov;
  if (is_first_step) in.flags |= kFirstStep;
  std::vector<std::vector<at::Tensor>> lists{params.vec(), grads.vec()};
  if (momentum != 0) lists.push_back(momentum_buffers.vec());
  const uint64_t scalars[] = {scalar_bits(lr, ct), in.flags, scalar_bits(weight_decay, ct),
                              scalar_bits(momentum, ct), scalar_bits(dampening, ct)};
  kernels::MultiTensorKernel kernel{"sgd_apply", momentum != 0 ? " -DSGD_STEP -DMOMENTUM" : " -DSGD_STEP", {}};
  for (const DeviceValue* v : {&in.lr_at, &in.grad_scale_at, &in.found_inf_at}) push(kernel.shared, *v);
  for (const uint64_t& s : scalars) kernel.shared.push_back({sizeof(uint64_t), &s});
  launch_step(kernel, "_fused_sgd_", std::move(lists), 0);
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

// The gradients the multi-tensor kernel takes (contiguous, of the first one's dtype) go in as
// few launches as the argument space allows; any others one launch each.
void unscale_and_check(at::TensorList grads, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  check_one_float(found_inf, "found_inf");
  check_one_float(inv_scale, "inv_scale");
  TORCH_CHECK(!found_inf.is_cpu() && !inv_scale.is_cpu(), "found_inf and inv_scale must be on the ocl device");
  const DeviceValue found_at = device_value(found_inf);
  std::vector<at::Tensor> together, alone;
  for (const at::Tensor& grad : grads) {
    if (grad.numel() == 0) continue;
    TORCH_CHECK(grad.device() == found_inf.device(), "all grads must be on the device of found_inf (",
                found_inf.device(), "), got ", grad.device());
    check_dtype("_amp_foreach_non_finite_check_and_unscale_", grad.scalar_type(), Dtypes::Floating);
    const bool joins = grad.is_contiguous() && (together.empty() || grad.scalar_type() == together[0].scalar_type());
    (joins ? together : alone).push_back(grad);
  }
  if (!together.empty() && !kernels::multi_tensor_applies({together})) {
    alone.insert(alone.end(), together.begin(), together.end());
    together.clear();
  }
  c10::DeviceGuard guard(found_inf.device());
  if (!together.empty()) {
    const at::Tensor inv = inv_scale.to(kernels::compute_type(together[0].scalar_type())).contiguous();
    const DeviceValue inv_at = device_value(inv);
    kernels::MultiTensorKernel kernel{"foreach_unscale", " -DUNSCALE", {}};
    push(kernel.shared, inv_at);
    push(kernel.shared, found_at);
    kernels::launch_multi_tensor(kernel, {together}, 0, {});
  }
  for (const at::Tensor& grad : alone) {
    const c10::ScalarType ct = kernels::compute_type(grad.scalar_type());
    at::Tensor inv = inv_scale.to(ct).contiguous();
    const DeviceValue inv_at = device_value(inv);
    std::vector<runtime::KernelArg> args;
    push(args, inv_at);
    push(args, found_at);
    at::TensorIteratorConfig config;
    config.check_all_same_dtype(false).resize_outputs(false).set_check_mem_overlap(false).add_output(grad);
    auto iter = config.build();
    kernels::launch_pointwise_impl(iter, {"optim.cl", "unscale_check", ct}, args);
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
