// Batched one-dimensional FFTs through VkFFT (a maintained FFT library with an OpenCL backend):
// any length (Bluestein for large primes), float32, and float64 where the device has it. Each
// transform runs over `batch` dense sequences; the ops move the transformed dim last and make it
// dense first (ops/fft.cpp). Plans are built once per (queue, kind, length, batch, precision,
// direction) and kept for the process's life: VkFFT compiles its kernels when it builds a plan.
#pragma once

#include <cstddef>
#include <cstdint>

#include <c10/core/ScalarType.h>

#include "runtime/device.h"

namespace drawbridge::kernels {

// A dense operand: a buffer and the byte offset where its first sequence starts, aligned as a
// sub-buffer's origin must be (the caching allocator's blocks are; ops/fft.cpp copies views).
struct FftOperand {
  cl_mem buffer;
  size_t offset;
};

// Longer transforms take VkFFT's multi-pass kernels, which crash on PoCL (a segfault inside the
// kernel at 32749, 65537 or 131072 points, while 16381 and 2^20 run); ops/fft.cpp transforms
// those lengths with the CPU's pocketfft and says so in docs/ops.md.
constexpr size_t kFftMaxLength = 16384;

// VkFFT compiles a plan's kernels for its exact batch count. Transforms of at most
// kFftPaddedElements elements once padded run over the batch rounded up to a power of four (the
// added sequences zero; ops/fft.cpp): a few plans then serve every batch of a length, where a test
// run had built a plan for nearly every (length, batch) it met. Longer ones keep their batch.
// A single sequence of at most kFftShortLength elements runs as four, so that it shares the plan
// of batches 2 to 4 (the three added sequences cost less than a launch; a plan is a VkFFT
// program, about 0.35 s to build on PoCL).
constexpr int64_t kFftPaddedElements = int64_t(1) << 18;
constexpr int64_t kFftShortLength = 4096;
// The batch a transform of `batch` sequences of n elements runs over.
int64_t fft_plan_batch(int64_t n, int64_t batch);
// The plans built so far in this process (each compiled one VkFFT program).
size_t fft_plan_count();

// float32, and float64 on devices with fp64: the real type of the transform.
bool fft_supports(c10::ScalarType real_type, const runtime::Device& device);

// `batch` sequences of n complex values at `data`, transformed in place, unnormalized; `inverse`
// takes exp(+2 pi i jk / n).
void fft_c2c(runtime::Device& device, cl_command_queue q, c10::ScalarType real_type, size_t n, size_t batch,
             FftOperand data, bool inverse);

// `batch` sequences of n reals at `real` to their n / 2 + 1 leading coefficients at `complex`.
void fft_r2c(runtime::Device& device, cl_command_queue q, c10::ScalarType real_type, size_t n, size_t batch,
             FftOperand real, FftOperand complex);

// The inverse of fft_r2c, unnormalized: n / 2 + 1 coefficients per sequence at `complex` (which
// it overwrites) to n reals at `real`.
void fft_c2r(runtime::Device& device, cl_command_queue q, c10::ScalarType real_type, size_t n, size_t batch,
             FftOperand complex, FftOperand real);

}  // namespace drawbridge::kernels
