// Stable sort along one dimension: one work-item sorts one row with a bottom-up merge sort in
// scratch memory (keys in the compute type, positions as long). Ascending puts NaN last,
// descending first, as the CPU does; equal keys keep their order.
#if CT_IS_FLOAT
#define BEFORE(a, b, desc) ((desc) ? (isnan(a) ? !isnan(b) : (a) > (b)) : (isnan(b) ? !isnan(a) : (a) < (b)))
#else
#define BEFORE(a, b, desc) ((desc) ? (a) > (b) : (a) < (b))
#endif

__kernel void sort_rows(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), ulong n, ulong values_step,
                        ulong indices_step, ulong in_step, __global char* keys_base, ulong keys_off,
                        __global char* pos_base, ulong pos_off, int desc) {
  ELEMENTWISE_BEGIN
  __global ct* keys = (__global ct*)(keys_base + keys_off);
  __global long* pos = (__global long*)(pos_base + pos_off);
  __global ct* k0 = keys + 2 * n * i;
  __global ct* k1 = k0 + n;
  __global long* p0 = pos + 2 * n * i;
  __global long* p1 = p0 + n;
  for (ulong j = 0; j < n; ++j) {
    k0[j] = TO(CT, LOAD(T2, ADDRESS(2) + j * in_step));
    p0[j] = (long)j;
  }
  for (ulong width = 1; width < n; width *= 2) {
    for (ulong lo = 0; lo < n; lo += 2 * width) {
      ulong mid = min(lo + width, n), hi = min(lo + 2 * width, n), a = lo, b = mid;
      for (ulong out = lo; out < hi; ++out) {
        bool take_b = b < hi && (a >= mid || BEFORE(k0[b], k0[a], desc));
        ulong src = take_b ? b++ : a++;
        k1[out] = k0[src];
        p1[out] = p0[src];
      }
    }
    __global ct* kt = k0; k0 = k1; k1 = kt;
    __global long* pt = p0; p0 = p1; p1 = pt;
  }
  for (ulong j = 0; j < n; ++j) {
    STORE(T0, ADDRESS(0) + j * values_step, TO(T0, k0[j]));
    *(__global long*)(ADDRESS(1) + j * indices_step) = p0[j];
  }
  ELEMENTWISE_END
}

// searchsorted: for each value (operand 1), the position in its sorted row of boundaries (operand 2
// points at the row's start; n elements `step` bytes apart) where it would be inserted: before
// equal elements (lower bound) or, with `right`, after them. With `use_sorter`, operand 3 is the
// row of the permutation that sorts the boundaries. The comparisons are the CPU's, so NaNs land
// at the end.
__kernel void searchsorted(IterDesc d, OPERAND(0), OPERAND(1), OPERAND(2), OPERAND(3), ulong n, ulong step,
                           ulong sorter_step, int right, int use_sorter) {
  ELEMENTWISE_BEGIN
  ct v = INPUT(1);
  ulong lo = 0, hi = n;
  while (lo < hi) {
    ulong mid = lo + (hi - lo) / 2;
    ulong at = use_sorter ? (ulong)(*(__global const long*)(ADDRESS(3) + mid * sorter_step)) : mid;
    ct b = TO(CT, LOAD(T2, ADDRESS(2) + at * step));
    if (right ? !(b > v) : !(b >= v))
      lo = mid + 1;
    else
      hi = mid;
  }
  STORE(T0, ADDRESS(0), TO(T0, lo));
  ELEMENTWISE_END
}
