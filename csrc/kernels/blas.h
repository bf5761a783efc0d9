// GEMM through CLBlast (DESIGN.md, decision 6): tuned for many vendors' devices.
// On CPU-class devices float32 and float64 go to kernels/packed_gemm.h instead.
#pragma once

#include <cstdint>

#include <c10/core/ScalarType.h>

#include "runtime/device.h"

namespace drawbridge::kernels {

// One operand of a (strided batched) GEMM, in CLBlast's row-major terms.
struct BlasMatrix {
  cl_mem buffer;
  size_t offset;        // elements
  size_t ld;            // leading dimension, elements
  size_t batch_stride;  // elements between consecutive matrices
  bool transposed;      // use op(X) = X^T (C never is)
};

bool blas_supports(c10::ScalarType type);  // float32, and float64 where the device has it

// C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b] for b < batch, on queue q of device.
void gemm(runtime::Device& device, cl_command_queue q, c10::ScalarType type, size_t m, size_t n, size_t k,
          double alpha, const BlasMatrix& a, const BlasMatrix& b, double beta, const BlasMatrix& c, size_t batch);

// Makes the next `count` CLBlast calls report that their temporary buffers did not fit, as a
// device that is out of memory would: the tests' way to reach the retry and the error of gemm(),
// since PoCL never refuses CLBlast's own allocations.
void fail_next_gemm_calls_for_testing(int count);

}  // namespace drawbridge::kernels
