// The kernel library: builds the embedded OpenCL programs per device and dtype (through the
// runtime's program cache) and hands out kernels.
#pragma once

#include <string>

#include <c10/core/ScalarType.h>

#include "runtime/device.h"
#include "runtime/program_cache.h"

namespace drawbridge::kernels {

// The token common.clh uses for a dtype that kernels compute on ("f32", "bf16", ...), or
// nullptr when kernels cannot compute on it (complex, float8, ...).
const char* dtype_token(c10::ScalarType type);
// The raw token for an element of `itemsize` bytes ("r8".."r128"), for copies that move bits.
const char* raw_token(size_t itemsize);
// The code by which a kernel reads and writes an operand of token dyn<k> in `type`
// (load_dynamic and store_dynamic in common.clh).
uint64_t dtype_code(c10::ScalarType type);

// Throws a TypeError when the device cannot hold `type` (float64 without cl_khr_fp64).
void check_dtype_supported(c10::ScalarType type, c10::DeviceIndex device);

// common.clh: dtype tokens, conversions and the arithmetic math helpers every program starts with.
const std::string& common_source();
// `options` plus what every program is built with on `device` (fp64, division rounding).
std::string program_options(runtime::Device& device, const std::string& options);

// The kernel `name` of program `file` (a file under csrc/kernels/cl) built with `options`.
// common.clh is prepended; options that mention f64 enable cl_khr_fp64.
runtime::Kernel& get_kernel(runtime::Device& device, const std::string& file, const std::string& options,
                            const std::string& name);

// Builds program `file` with `options` as get_kernel would, without making a kernel:
// `python -m drawbridge warmup` replays a list of programs so that later processes load them.
void build_program(runtime::Device& device, const std::string& file, const std::string& options);

// With DRAWBRIDGE_RECORD_PROGRAMS=FILE, each program this process first asks for is appended to
// FILE as a line "device class<TAB>file<TAB>options" (the list `warmup` replays).
void record_program(runtime::Device& device, const std::string& file, const std::string& options);

}  // namespace drawbridge::kernels
