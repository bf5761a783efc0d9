// Multi-tensor kernels: one launch updates up to SLOTS tensors of each of NLISTS tensor lists (the
// _foreach_* ops and the optimizer steps built on them), where a kernel per tensor would cost a
// launch per parameter. OpenCL cannot pass an array of buffers, so every slot's buffers are
// arguments of their own (kernels/multi_tensor_launcher.h chooses SLOTS from the device's argument
// space). Work-items are numbered across the slots: slot s owns items [start_s, start_s + its
// items), an item being ITEM consecutive elements (one on GPUs; a run the compiler vectorizes on
// CPU devices). All tensors are contiguous; list k holds dtype Tk, computed in CT.
//
// Options: OP (the operation, below), NLISTS, SLOTS, ITEM, INPLACE (list 0 is also the first
// input; otherwise list 0 is the output and list 1 the first input), SCALAR_ON_DEVICE (the
// scalar is a one-element device tensor instead of each slot's value).

// Token pasting for the slot and list macros below: CAT itself cannot be used inside a macro that
// CAT expanded.
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
#define SLOT_ARGS(s) , ulong start##s, ulong numel##s, ulong scalar##s JOIN_LISTS(LIST_ARGS_, NLISTS)(s)
#define SLOTS_1 SLOT_ARGS(0)
#define SLOTS_2 SLOTS_1 SLOT_ARGS(1)
#define SLOTS_3 SLOTS_2 SLOT_ARGS(2)
#define SLOTS_4 SLOTS_3 SLOT_ARGS(3)
#define SLOTS_5 SLOTS_4 SLOT_ARGS(4)
#define SLOTS_6 SLOTS_5 SLOT_ARGS(5)
#define SLOTS_7 SLOTS_6 SLOT_ARGS(6)
#define SLOTS_8 SLOTS_7 SLOT_ARGS(7)

// The slot of this work-item: the last whose start is at or before it.
#define TAKE_LIST(k, s) p##k = b##k##_##s + o##k##_##s;
#define TAKE_LISTS_1(s) TAKE_LIST(0, s)
#define TAKE_LISTS_2(s) TAKE_LISTS_1(s) TAKE_LIST(1, s)
#define TAKE_LISTS_3(s) TAKE_LISTS_2(s) TAKE_LIST(2, s)
#define TAKE_LISTS_4(s) TAKE_LISTS_3(s) TAKE_LIST(3, s)
#define TAKE(s)                        \
  if (item >= start##s) {              \
    first = start##s;                  \
    n = numel##s;                      \
    scalar_bits = scalar##s;           \
    JOIN_LISTS(TAKE_LISTS_, NLISTS)(s) \
  }
#define TAKES_1 TAKE(0)
#define TAKES_2 TAKES_1 TAKE(1)
#define TAKES_3 TAKES_2 TAKE(2)
#define TAKES_4 TAKES_3 TAKE(3)
#define TAKES_5 TAKES_4 TAKE(4)
#define TAKES_6 TAKES_5 TAKE(5)
#define TAKES_7 TAKES_6 TAKE(6)
#define TAKES_8 TAKES_7 TAKE(7)

// Element i of list k, and the inputs A, B, C: lists 0, 1, 2 in place, else 1, 2, 3.
#define ELEMENT(k, i) (p##k + (i) * sizeof(ST(T##k)))
#define VALUE(k) TO(CT, LOAD(T##k, ELEMENT(k, i)))
#ifdef INPLACE
#define A VALUE(0)
#define B VALUE(1)
#define C VALUE(2)
#else
#define A VALUE(1)
#define B VALUE(2)
#define C VALUE(3)
#endif

// The operations: OP codes of kernels/multi_tensor_launcher.h's ForeachOp.
#if OP == 0
#define RESULT (A + s)
#elif OP == 1
#define RESULT (A + s * B)
#elif OP == 2
#define RESULT (A * s)
#elif OP == 3
#define RESULT (A * B)
#elif OP == 4
#define RESULT (A / s)
#elif OP == 5
#define RESULT (A / B)
#elif OP == 6
#define RESULT lerp_value(A, B, s)
#elif OP == 7
#define RESULT (A + s * B * C)
#elif OP == 8
#define RESULT (A + s * (B / C))
#elif OP == 9
#define RESULT sqrt(A)
#elif OP == 10
#define RESULT ((ct)0)
#endif

#if CT_IS_FLOAT
__kernel void foreach_apply(__global const char* scalar_base, ulong scalar_offset JOIN_SLOTS(SLOTS_, SLOTS)) {
  const ulong item = get_global_id(0);
  ulong first = 0, n = 0, scalar_bits = 0;
  __global char *p0 = 0, *p1 = 0, *p2 = 0, *p3 = 0;
  JOIN_SLOTS(TAKES_, SLOTS)
#ifdef SCALAR_ON_DEVICE
  const ct s = *(__global const ct*)(scalar_base + scalar_offset);
#else
  const ct s = bits_to_ct(scalar_bits);
#endif
  const ulong begin = (item - first) * ITEM, end = min(begin + ITEM, n);
  for (ulong i = begin; i < end; ++i) STORE(T0, ELEMENT(0, i), TO(T0, RESULT));
}
#endif
