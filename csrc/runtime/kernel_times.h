// Device time per kernel, read from the profiling info of OpenCL events (every queue profiles).
// Off by default, when a launch asks for no event at all; `python -m drawbridge check` switches it
// on to report where a script's device time went.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "runtime/opencl.h"

namespace drawbridge::runtime {

bool kernel_timing();
void set_kernel_timing(bool on);

// Counts the command that `end` marks under `name`, once it has run; takes over the events.
// `start`, when given, is a marker enqueued just before a command of several kernels (a CLBlast
// GEMM): the time runs from its end to `end`'s.
void record_kernel_time(const std::string& name, cl_event end, cl_event start = nullptr);

struct KernelTime {
  uint64_t launches = 0, nanoseconds = 0;
};
// Waits for the recorded commands, then the totals per name since the last reset.
std::map<std::string, KernelTime> kernel_times();
void reset_kernel_times();

}  // namespace drawbridge::runtime
