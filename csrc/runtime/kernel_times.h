// Device time per kernel, read from the profiling info of OpenCL events (every queue profiles).
// Off by default, when a launch asks for no event at all. `python -m drawbridge check` switches
// the totals on to report where a script's device time went; torch.profiler switches the trace on
// to show each command on a device timeline, under the op that enqueued it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/opencl.h"

namespace drawbridge::runtime {

// Whether launches should hand their events to record_kernel_time (totals or trace on).
bool kernel_timing();
void set_kernel_timing(bool on);

// Counts the command that `end` marks under `name`, once it has run; takes over the events.
// `start`, when given, is a marker enqueued just before a command of several kernels (a CLBlast
// GEMM): the time runs from its end to `end`'s. `queued_ns`, the host clock when `end` was
// enqueued (host_clock_ns(); by default the time of this call, so call it right after the
// enqueue), places the command's device times on the host's timeline.
enum class CommandKind { kernel, transfer };
void record_kernel_time(const std::string& name, cl_event end, cl_event start = nullptr,
                        CommandKind kind = CommandKind::kernel, int64_t queued_ns = 0);
int64_t host_clock_ns();  // the system clock, nanoseconds since the epoch

struct KernelTime {
  uint64_t launches = 0, nanoseconds = 0;
};
// Waits for the recorded commands, then the totals per kernel name since the last reset
// (transfers go to the trace only).
std::map<std::string, KernelTime> kernel_times();
void reset_kernel_times();

// The host operation that enqueues on this thread, as a profiler names it (0: none). Each traced
// command carries the innermost one.
void push_correlation(uint64_t id);
void pop_correlation();

struct TracedCommand {
  std::string name;
  CommandKind kind;
  cl_command_queue queue;
  uint64_t correlation;
  int64_t start_ns, end_ns;  // on the host's system clock, nanoseconds since the epoch
};
// Commands recorded between set_command_trace(true) and take_command_trace(), which waits for
// them and stops the trace. At most kMaxTracedCommands are kept; dropped_commands() counts the rest.
constexpr size_t kMaxTracedCommands = 1 << 20;
void set_command_trace(bool on);
std::vector<TracedCommand> take_command_trace();
uint64_t dropped_commands();

}  // namespace drawbridge::runtime
