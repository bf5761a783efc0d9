// Multi-tensor kernels: one launch updates up to SLOTS tensors of each of NLISTS tensor lists (the
// _foreach_* ops and the fused optimizer steps), where a kernel per tensor would cost a launch per
// parameter. OpenCL cannot pass an array of buffers, so every slot's buffers are arguments of
// their own (kernels/multi_tensor_launcher.h chooses SLOTS from the device's argument space).
// Work-items are numbered across the slots: slot s owns items [start_s, start_s + its items), an
// item being ITEM consecutive elements (one on GPUs; a run the compiler vectorizes on CPU
// devices). All tensors are contiguous; list k holds dtype Tk, computed in CT.
//
// Options: NLISTS, SLOTS, ITEM; OP (foreach_apply's operation, below), FOREACH_NORM, UNSCALE
// (GradScaler's), ADAM_STEP or SGD_STEP (the optimizer kernels), each with its own options listed there.

// Token pasting for the slot and list macros: CAT cannot be used inside a macro CAT expanded.
#define JOIN_SLOTS_(a, b) a##b
#define JOIN_SLOTS(a, b) JOIN_SLOTS_(a, b)
#define JOIN_LISTS_(a, b) a##b
#define JOIN_LISTS(a, b) JOIN_LISTS_(a, b)

// The arguments of one slot: where its items start, its element count, its scalar's bits, and a
// buffer and byte offset per list.
#define LIST_ARG(k, s) , __global char *b##k##_##s, ulong o##k##_##s
#define LIST_ARGS_1(s) LIST_ARG(0, s)
#define LIST_ARGS_2(s) LIST_ARGS_1(s) LIST_ARG(1, s)
#define LIST_ARGS_3(s) LIST_ARGS_2(s) LIST_ARG(2, s)
#define LIST_ARGS_4(s) LIST_ARGS_3(s) LIST_ARG(3, s)
#define LIST_ARGS_5(s) LIST_ARGS_4(s) LIST_ARG(4, s)
#define LIST_ARGS_6(s) LIST_ARGS_5(s) LIST_ARG(5, s)
#define SLOT_ARGS(s) , ulong start##s, ulong numel##s, ulong scalar##s JOIN_LISTS(LIST_ARGS_, NLISTS)(s)
#define SLOTS_1 SLOT_ARGS(0)
#define SLOTS_2 SLOTS_1 SLOT_ARGS(1)
#define SLOTS_3 SLOTS_2 SLOT_ARGS(2)
#define SLOTS_4 SLOTS_3 SLOT_ARGS(3)
#define SLOTS_5 SLOTS_4 SLOT_ARGS(4)
#define SLOTS_6 SLOTS_5 SLOT_ARGS(5)
#define SLOTS_7 SLOTS_6 SLOT_ARGS(6)
#define SLOTS_8 SLOTS_7 SLOT_ARGS(7)
// A launch numbers its items from first_item, an argument rather than the launch's global offset:
// PoCL compiles a kernel again for every launch whose offset is not zero.
#define SLOT_PARAMETERS , ulong first_item JOIN_SLOTS(SLOTS_, SLOTS)

// The slot of this work-item, the last whose start is at or before it: its list pointers p0..,
// element count n and scalar bits; then the elements [begin, end) this work-item updates.
#define TAKE_LIST(k, s) p##k = b##k##_##s + o##k##_##s;
#define TAKE_LISTS_1(s) TAKE_LIST(0, s)
#define TAKE_LISTS_2(s) TAKE_LISTS_1(s) TAKE_LIST(1, s)
#define TAKE_LISTS_3(s) TAKE_LISTS_2(s) TAKE_LIST(2, s)
#define TAKE_LISTS_4(s) TAKE_LISTS_3(s) TAKE_LIST(3, s)
#define TAKE_LISTS_5(s) TAKE_LISTS_4(s) TAKE_LIST(4, s)
#define TAKE_LISTS_6(s) TAKE_LISTS_5(s) TAKE_LIST(5, s)
#define TAKE(s)                          \
  if (item >= start##s) {                \
    first = start##s;                    \
    n = numel##s;                        \
    scalar_bits = scalar##s;             \
    JOIN_LISTS(TAKE_LISTS_, NLISTS)(s)   \
  }
#define TAKES_1 TAKE(0)
#define TAKES_2 TAKES_1 TAKE(1)
#define TAKES_3 TAKES_2 TAKE(2)
#define TAKES_4 TAKES_3 TAKE(3)
#define TAKES_5 TAKES_4 TAKE(4)
#define TAKES_6 TAKES_5 TAKE(5)
#define TAKES_7 TAKES_6 TAKE(6)
#define TAKES_8 TAKES_7 TAKE(7)
#define SLOT_BEGIN                                                        \
  const ulong item = first_item + get_global_id(0);                       \
  ulong first = 0, n = 0, scalar_bits = 0;                                \
  __global char *p0 = 0, *p1 = 0, *p2 = 0, *p3 = 0, *p4 = 0, *p5 = 0;     \
  JOIN_SLOTS(TAKES_, SLOTS)                                               \
  const ulong begin = (item - first) * ITEM, end = min(begin + ITEM, n);

// Element i of list k, read in the compute type and stored from it.
#define ELEMENT(k, i) (p##k + (i) * sizeof(ST(T##k)))
#define VALUE(k) TO(CT, LOAD(T##k, ELEMENT(k, i)))
#define SET(k, v) STORE(T##k, ELEMENT(k, i), TO(T##k, (v)))
// A one-element device tensor passed by buffer and byte offset.
#define DEVICE_VALUE(name) __global const char *name##_base, ulong name##_offset
#define READ_DEVICE(name) (*(__global const ct*)(name##_base + name##_offset))

#if CT_IS_FLOAT
#if defined(OP) || defined(OP_DISPATCH)
// foreach_apply: list 0 = the operation's result of the inputs A, B, C (lists 0, 1, 2 with INPLACE,
// else 1, 2, 3) and the scalar s (each slot's, or with SCALAR_ON_DEVICE a one-element device
// tensor's). OP compiles one operation in; with OP_DISPATCH (the programs of small calls) the
// kernel takes its operation's code as an argument and switches on it, one compile serving every
// operation of an input count.
#ifdef INPLACE
#define A VALUE(0)
#define B VALUE(1)
#define C VALUE(2)
#define FOREACH_INPUTS NLISTS
#else
#define A VALUE(1)
#define B VALUE(2)
#define C VALUE(3)
#define FOREACH_INPUTS JOIN_LISTS(INPUTS_BESIDE_OUTPUT_, NLISTS)
#define INPUTS_BESIDE_OUTPUT_2 1
#define INPUTS_BESIDE_OUTPUT_3 2
#define INPUTS_BESIDE_OUTPUT_4 3
#endif
// The operations: codes of kernels/multi_tensor_launcher.h's ForeachOp.
#define FOREACH_0 (A + s)
#define FOREACH_1 (A + s * B)
#define FOREACH_2 (A * s)
#define FOREACH_3 (A * B)
#define FOREACH_4 (A / s)
#define FOREACH_5 (A / B)
#define FOREACH_6 lerp_value(A, B, s)
#define FOREACH_7 (A + s * B * C)
#define FOREACH_8 (A + s * (B / C))
#define FOREACH_9 sqrt(A)
#define FOREACH_10 ((ct)0)
// Token pasting of their own: an operation expands CAT (in its loads), which cannot be used
// inside a macro CAT expanded.
#define FOREACH_OP_(n) FOREACH_##n
#define FOREACH_OP(n) FOREACH_OP_(n)
#define FOREACH_CASES_OF_(n) FOREACH_CASES_##n
#define FOREACH_CASES_OF(n) FOREACH_CASES_OF_(n)

#ifdef SCALAR_ON_DEVICE
#define FOREACH_SCALAR READ_DEVICE(scalar)
#else
#define FOREACH_SCALAR bits_to_ct(scalar_bits)
#endif
#ifdef OP
__kernel void foreach_apply(DEVICE_VALUE(scalar) SLOT_PARAMETERS) {
  SLOT_BEGIN
  const ct s = FOREACH_SCALAR;
  for (ulong i = begin; i < end; ++i) SET(0, FOREACH_OP(OP));
}
#else
// The operations of each input count (an operation reads no list the program lacks).
#define FOREACH_CASE(n) \
  case n:               \
    SET(0, FOREACH_##n); \
    break;
#define FOREACH_CASES_1 FOREACH_CASE(0) FOREACH_CASE(2) FOREACH_CASE(4) FOREACH_CASE(9) FOREACH_CASE(10)
#define FOREACH_CASES_2 FOREACH_CASES_1 FOREACH_CASE(1) FOREACH_CASE(3) FOREACH_CASE(5) FOREACH_CASE(6)
#define FOREACH_CASES_3 FOREACH_CASES_2 FOREACH_CASE(7) FOREACH_CASE(8)
__kernel void foreach_apply(DEVICE_VALUE(scalar), ulong op_code SLOT_PARAMETERS) {
  SLOT_BEGIN
  const ct s = FOREACH_SCALAR;
  for (ulong i = begin; i < end; ++i) switch (op_code) { FOREACH_CASES_OF(FOREACH_INPUTS) }
}
#endif
#endif

#ifdef FOREACH_NORM
// foreach_norm: a partial norm of each work-item's ITEM elements of list 0 at partials[item]
// (work-items are numbered across launches). The pass, an argument (one program serves every
// norm and pass): the largest |x| (NaN wins), the sum of |x| or of x * x over the elements, or, over
// the partials of the pass before, their largest or their sum (kernels/multi_tensor_launcher.cpp's
// NormPass). Eight accumulators break the chain of dependent additions (the compiler vectorizes
// them on CPU devices).
#define NORM_MAX(acc, v) ((v) > (acc) || isnan(v) ? (v) : (acc))
#define NORM_SUM(acc, v) ((acc) + (v))
#define NORM_ABS(x) fabs(x)
#define NORM_SQUARE(x) ((x) * (x))
#define NORM_SELF(x) (x)
#define NORM_ADD(acc, j, COMBINE, TERM) acc = COMBINE(acc, TERM(TO(CT, LOAD(T0, ELEMENT(0, j)))))
#define NORM_LOOP(COMBINE, TERM)                                                       \
  {                                                                                    \
    ct acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                              \
    ulong i = begin;                                                                   \
    for (; i + 8 <= end; i += 8)                                                       \
      for (int lane = 0; lane < 8; ++lane) NORM_ADD(acc[lane], i + lane, COMBINE, TERM); \
    for (; i < end; ++i) NORM_ADD(acc[0], i, COMBINE, TERM);                           \
    for (int lane = 1; lane < 8; ++lane) acc[0] = COMBINE(acc[0], acc[lane]);          \
    result = acc[0];                                                                   \
  }                                                                                    \
  break;
__kernel void foreach_norm(__global char *partials_base, ulong partials_offset, ulong pass SLOT_PARAMETERS) {
  SLOT_BEGIN
  if (begin >= end) return;
  ct result = 0;
  switch (pass) {
    case 0: NORM_LOOP(NORM_MAX, NORM_ABS)
    case 1: NORM_LOOP(NORM_SUM, NORM_ABS)
    case 2: NORM_LOOP(NORM_SUM, NORM_SQUARE)
    case 3: NORM_LOOP(NORM_MAX, NORM_SELF)
    default: NORM_LOOP(NORM_SUM, NORM_SELF)
  }
  ((__global ct *)(partials_base + partials_offset))[item] = result;
}
#endif

#ifdef UNSCALE
// GradScaler's unscale of the gradients (list 0, in place): times inv_scale (in CT), and the
// found_inf flag (a float32) raised when an element is infinite or NaN; every work-item that
// finds one writes the same 1.
__kernel void foreach_unscale(DEVICE_VALUE(inv_scale), __global char *found_inf_base,
                              ulong found_inf_offset SLOT_PARAMETERS) {
  SLOT_BEGIN
  const ct inv_scale = READ_DEVICE(inv_scale);
  bool non_finite = false;
  for (ulong i = begin; i < end; ++i) {
    const ct g = VALUE(0);
    non_finite |= !(g - g == (ct)0);
    SET(0, g * inv_scale);
  }
  if (non_finite) *(__global float *)(found_inf_base + found_inf_offset) = 1.0f;
}
#endif

// ---- fused optimizer steps (fused=True) ---------------------------------------------------------
// The formulas are CUDA's fused kernels': the gradient is unscaled (and stored back) when a
// grad_scale is given, a set found_inf flag leaves everything unchanged, a tensor learning rate
// and both flags are read on the device, so a step never waits for the host; maximize negates the
// gradient. Those choices are bits of the step_flags argument (ops/optimizers.cpp's StepFlag), not
// options: one program serves every combination. Each tests one uniform value, outside the loop
// or as a branch every work-item takes alike.
#define STEP_LR_TENSOR 1
#define STEP_GRAD_SCALE 2
#define STEP_FOUND_INF 4
#define STEP_MAXIMIZE 8
#define STEP_ADAMW 16
#define STEP_NESTEROV 32
#define STEP_FIRST 64
#define STEP_HAS(flag) ((step_flags & (flag)) != 0)
#define STEP_ARGUMENTS \
  DEVICE_VALUE(lr_tensor), DEVICE_VALUE(grad_scale), DEVICE_VALUE(found_inf), ulong lr_bits, ulong step_flags
// The step's start: nothing when found_inf is set; the learning rate and the gradient scale.
#define STEP_BEGIN                                                                             \
  SLOT_BEGIN                                                                                   \
  if (STEP_HAS(STEP_FOUND_INF) && READ_DEVICE(found_inf) != 0) return;                         \
  const ct lr = STEP_HAS(STEP_LR_TENSOR) ? READ_DEVICE(lr_tensor) : bits_to_ct(lr_bits);       \
  const bool unscale = STEP_HAS(STEP_GRAD_SCALE), maximize = STEP_HAS(STEP_MAXIMIZE);          \
  const ct grad_scale = unscale ? READ_DEVICE(grad_scale) : (ct)1;
// The gradient of element i: unscaled (and stored back) and negated as the flags say.
#define STEP_GRAD(grad)         \
  ct grad = VALUE(1);           \
  if (unscale) {                \
    grad = grad / grad_scale;   \
    SET(1, grad);               \
  }                             \
  if (maximize) grad = -grad;

#ifdef ADAM_STEP
// Adam / AdamW (the ADAMW flag; the AMSGRAD option, which adds a list): lists param, grad,
// exp_avg, exp_avg_sq[, max_exp_avg_sq], updated in place, then each parameter's step count (one
// element), from which the bias corrections come.
#ifdef AMSGRAD
#define STEP_LIST 5
#else
#define STEP_LIST 4
#endif
__kernel void adam_apply(STEP_ARGUMENTS, ulong beta1_bits, ulong beta2_bits, ulong weight_decay_bits,
                         ulong eps_bits SLOT_PARAMETERS) {
  STEP_BEGIN
  const bool adamw = STEP_HAS(STEP_ADAMW);
  const ct beta1 = bits_to_ct(beta1_bits), beta2 = bits_to_ct(beta2_bits);
  const ct weight_decay = bits_to_ct(weight_decay_bits), eps = bits_to_ct(eps_bits);
  const ct step = TO(CT, LOAD(JOIN_LISTS(T, STEP_LIST), JOIN_LISTS(p, STEP_LIST)));
  const ct step_size = lr / ((ct)1 - pow(beta1, step));
  const ct correction2 = sqrt((ct)1 - pow(beta2, step));
  for (ulong i = begin; i < end; ++i) {
    ct param = VALUE(0), exp_avg = VALUE(2), exp_avg_sq = VALUE(3);
    STEP_GRAD(grad)
    // Selected, not added, when there is no decay: an infinite parameter must not turn into NaN.
    if (adamw)
      param = weight_decay != 0 ? param - lr * weight_decay * param : param;
    else
      grad = weight_decay != 0 ? grad + weight_decay * param : grad;
    exp_avg = beta1 * exp_avg + ((ct)1 - beta1) * grad;
    exp_avg_sq = beta2 * exp_avg_sq + ((ct)1 - beta2) * grad * grad;
    SET(2, exp_avg);
    SET(3, exp_avg_sq);
    ct second = exp_avg_sq;
#ifdef AMSGRAD
    const ct max_sq = VALUE(4);
    second = max_sq > exp_avg_sq ? max_sq : exp_avg_sq;
    SET(4, second);
#endif
    SET(0, param - step_size * exp_avg / (sqrt(second) / correction2 + eps));
  }
}
#endif

#ifdef SGD_STEP
// SGD (the MOMENTUM option, which adds a list; the NESTEROV and FIRST flags): lists param,
// grad[, momentum_buffer], updated in place.
__kernel void sgd_apply(STEP_ARGUMENTS, ulong weight_decay_bits, ulong momentum_bits,
                        ulong dampening_bits SLOT_PARAMETERS) {
  STEP_BEGIN
  const bool nesterov = STEP_HAS(STEP_NESTEROV), first_step = STEP_HAS(STEP_FIRST);
  const ct weight_decay = bits_to_ct(weight_decay_bits);
  const ct momentum = bits_to_ct(momentum_bits), dampening = bits_to_ct(dampening_bits);
  for (ulong i = begin; i < end; ++i) {
    ct param = VALUE(0);
    STEP_GRAD(grad)
    grad = weight_decay != 0 ? grad + weight_decay * param : grad;
#ifdef MOMENTUM
    const ct buf = first_step ? grad : momentum * VALUE(2) + ((ct)1 - dampening) * grad;
    SET(2, buf);
    grad = nesterov ? grad + momentum * buf : buf;
#endif
    SET(0, param - lr * grad);
  }
}
#endif
#endif
