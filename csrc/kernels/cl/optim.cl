// GradScaler's kernels, one per gradient (the fused optimizer steps are multi-tensor kernels of
// cl/foreach.cl). The scale and the inf flag stay on the device: a step never waits for the host.
#define DEVICE_VALUE(name) __global const char *name##_base, ulong name##_offset
#define READ_DEVICE(name, i) (((__global const ct*)(name##_base + name##_offset))[i])
#define VALUE(k) TO(CT, LOAD(CAT(T, k), ADDRESS(k)))
#define SET(k, v) STORE(CAT(T, k), ADDRESS(k), TO(CAT(T, k), (v)))

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
