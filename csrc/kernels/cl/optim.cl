// Optimizer steps and gradient scaling, one kernel per parameter tensor (as CUDA's fused
// optimizers do per chunk). Every operand is an output, updated in place: the parameter, its
// gradient, then the optimizer's state. Values that live on the device (a tensor learning rate,
// the gradient scale, the inf flag, the bias corrections of this step) are read by address, so a
// step never waits for the host. Options: ADAMW, AMSGRAD, MAXIMIZE, GRAD_SCALE, FOUND_INF,
// LR_TENSOR, NESTEROV, FIRST_STEP, MOMENTUM.
#define DEVICE_VALUE(name) __global const char *name##_base, ulong name##_offset
#define READ_DEVICE(name, i) (((__global const ct*)(name##_base + name##_offset))[i])
#define VALUE(k) TO(CT, LOAD(CAT(T, k), ADDRESS(k)))
#define SET(k, v) STORE(CAT(T, k), ADDRESS(k), TO(CAT(T, k), (v)))

// The gradient as the update uses it: unscaled (and stored back unscaled, as CUDA does), then
// negated for maximize.
#ifdef GRAD_SCALE
#define UNSCALED_GRAD(g)              \
  g = g / READ_DEVICE(grad_scale, 0); \
  SET(1, g);
#else
#define UNSCALED_GRAD(g)
#endif
#ifdef MAXIMIZE
#define DIRECTED(g) (-(g))
#else
#define DIRECTED(g) (g)
#endif
#ifdef FOUND_INF
#define SKIP_IF_FOUND_INF \
  if (READ_DEVICE(found_inf, 0) != 0) continue;
#else
#define SKIP_IF_FOUND_INF
#endif
#ifdef LR_TENSOR
#define LEARNING_RATE READ_DEVICE(lr_tensor, 0)
#else
#define LEARNING_RATE bits_to_ct(lr_bits)
#endif

// Adam / AdamW. corrections holds (1 - beta1^step, sqrt(1 - beta2^step)) of this parameter's step.
__kernel void adam_step(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3),
#ifdef AMSGRAD
                        OPERAND(4),
#endif
                        DEVICE_VALUE(corrections), DEVICE_VALUE(lr_tensor), DEVICE_VALUE(grad_scale),
                        DEVICE_VALUE(found_inf), ulong lr_bits, ulong beta1_bits, ulong beta2_bits,
                        ulong weight_decay_bits, ulong eps_bits) {
  ELEMENTWISE_BEGIN
  SKIP_IF_FOUND_INF
  const ct lr = LEARNING_RATE, beta1 = bits_to_ct(beta1_bits), beta2 = bits_to_ct(beta2_bits);
  const ct weight_decay = bits_to_ct(weight_decay_bits), eps = bits_to_ct(eps_bits);
  ct param = VALUE(0), grad = VALUE(1), exp_avg = VALUE(2), exp_avg_sq = VALUE(3);
  UNSCALED_GRAD(grad)
  grad = DIRECTED(grad);
  // Selected, not added, when there is no decay: an infinite parameter must not turn into NaN.
#ifdef ADAMW
  param = weight_decay != 0 ? param - lr * weight_decay * param : param;
#else
  grad = weight_decay != 0 ? grad + weight_decay * param : grad;
#endif
  exp_avg = beta1 * exp_avg + ((ct)1 - beta1) * grad;
  exp_avg_sq = beta2 * exp_avg_sq + ((ct)1 - beta2) * grad * grad;
  SET(2, exp_avg);
  SET(3, exp_avg_sq);
  ct second = exp_avg_sq;
#ifdef AMSGRAD
  ct max_sq = VALUE(4);
  second = max_sq > exp_avg_sq ? max_sq : exp_avg_sq;
  SET(4, second);
#endif
  const ct step_size = lr / READ_DEVICE(corrections, 0);
  const ct denom = sqrt(second) / READ_DEVICE(corrections, 1) + eps;
  SET(0, param - step_size * exp_avg / denom);
  ELEMENTWISE_END
}

// SGD with optional momentum (operand 2, the momentum buffer).
__kernel void sgd_step(IterDesc d, OPERAND(0), OPERAND(1),
#ifdef MOMENTUM
                       OPERAND(2),
#endif
                       DEVICE_VALUE(lr_tensor), DEVICE_VALUE(grad_scale), DEVICE_VALUE(found_inf), ulong lr_bits,
                       ulong weight_decay_bits, ulong momentum_bits, ulong dampening_bits) {
  ELEMENTWISE_BEGIN
  SKIP_IF_FOUND_INF
  const ct lr = LEARNING_RATE, weight_decay = bits_to_ct(weight_decay_bits);
  ct param = VALUE(0), grad = VALUE(1);
  UNSCALED_GRAD(grad)
  grad = DIRECTED(grad);
  grad = weight_decay != 0 ? grad + weight_decay * param : grad;
#ifdef MOMENTUM
  const ct momentum = bits_to_ct(momentum_bits);
#ifdef FIRST_STEP
  ct buf = grad;
#else
  ct buf = momentum * VALUE(2) + ((ct)1 - bits_to_ct(dampening_bits)) * grad;
#endif
  SET(2, buf);
#ifdef NESTEROV
  grad = grad + momentum * buf;
#else
  grad = buf;
#endif
#endif
  SET(0, param - lr * grad);
  ELEMENTWISE_END
}

// GradScaler: multiplies a gradient by 1/scale and raises the inf flag (a float32 on the device)
// when any element is infinite or NaN. Every work-item that finds one writes the same 1.
__kernel void unscale_check(IterDesc d, OPERAND(0), DEVICE_VALUE(inv_scale), __global char* found_inf_base,
                            ulong found_inf_offset) {
  ELEMENTWISE_BEGIN
  ct g = VALUE(0);
  if (!(g - g == (ct)0)) *(__global float*)(found_inf_base + found_inf_offset) = 1.0f;
  SET(0, g * READ_DEVICE(inv_scale, 0));
  ELEMENTWISE_END
}

// GradScaler's scale update (one work-item): back off after an inf, grow after growth_interval
// clean steps in a row, unless growing overflows.
__kernel void update_scale(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong growth_bits, ulong backoff_bits,
                           long growth_interval) {
  ELEMENTWISE_BEGIN
  __global float* scale = (__global float*)ADDRESS(0);
  __global int* tracker = (__global int*)ADDRESS(1);
  if (*(__global const float*)ADDRESS(2) != 0.0f) {
    *scale = *scale * bits_to_ct(backoff_bits);
    *tracker = 0;
    continue;
  }
  int successful = *tracker + 1;
  if (successful == growth_interval) {
    float grown = *scale * bits_to_ct(growth_bits);
    if (grown - grown == 0.0f) *scale = grown;
    successful = 0;
  }
  *tracker = successful;
  ELEMENTWISE_END
}
