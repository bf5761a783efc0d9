#include "runtime/kernel_times.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>

#include "runtime/error.h"

namespace drawbridge::runtime {

namespace {

struct Pending {
  std::string name;
  CommandKind kind;
  cl_event start, end;
  uint64_t correlation;
  int64_t host_ns;  // host clock when `end` was enqueued
};

std::atomic<bool> totals_on{false}, trace_on{false};
std::mutex mutex;
std::deque<Pending> pending;  // in launch order
std::map<std::string, KernelTime> totals;
std::vector<TracedCommand> trace;
std::vector<int64_t> clock_offsets;  // per traced command: host clock at its enqueue - device clock
uint64_t dropped = 0;

thread_local std::vector<uint64_t> correlations;

cl_ulong profiled(cl_event event, cl_profiling_info what) {
  cl_ulong t = 0;
  DB_CL_CHECK(clGetEventProfilingInfo(event, what, sizeof(t), &t, nullptr));
  return t;
}

bool complete(cl_event event) {
  cl_int status = CL_QUEUED;
  DB_CL_CHECK(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr));
  return status == CL_COMPLETE;
}

// Adds a finished command to the totals and the trace (mutex held).
void count(const Pending& p) {
  const cl_ulong begin =
      p.start ? profiled(p.start, CL_PROFILING_COMMAND_END) : profiled(p.end, CL_PROFILING_COMMAND_START);
  const cl_ulong end = std::max(profiled(p.end, CL_PROFILING_COMMAND_END), begin);
  if (totals_on.load(std::memory_order_relaxed) && p.kind == CommandKind::kernel) {
    KernelTime& t = totals[p.name];
    t.launches += 1;
    t.nanoseconds += end - begin;
  }
  if (trace_on.load(std::memory_order_relaxed)) {
    if (trace.size() < kMaxTracedCommands) {
      // For now in device time; take_command_trace() moves the trace onto the host clock.
      cl_command_queue queue = nullptr;
      DB_CL_CHECK(clGetEventInfo(p.end, CL_EVENT_COMMAND_QUEUE, sizeof(queue), &queue, nullptr));
      trace.push_back({p.name, p.kind, queue, p.correlation, static_cast<int64_t>(begin), static_cast<int64_t>(end)});
      clock_offsets.push_back(p.host_ns - static_cast<int64_t>(profiled(p.end, CL_PROFILING_COMMAND_QUEUED)));
    } else {
      ++dropped;
    }
  }
  if (p.start) clReleaseEvent(p.start);
  clReleaseEvent(p.end);
}

// Counts every recorded command, waiting for those still in flight (mutex held).
void drain() {
  for (const Pending& p : pending) {
    DB_CL_CHECK(clWaitForEvents(1, &p.end));
    count(p);
  }
  pending.clear();
}

}  // namespace

bool kernel_timing() {
  return totals_on.load(std::memory_order_relaxed) || trace_on.load(std::memory_order_relaxed);
}
void set_kernel_timing(bool on) {
  std::lock_guard<std::mutex> lock(mutex);
  drain();
  totals_on.store(on);
}

int64_t host_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void record_kernel_time(const std::string& name, cl_event end, cl_event start, CommandKind kind,
                        int64_t queued_ns) {
  const int64_t host_ns = queued_ns ? queued_ns : host_clock_ns();
  const uint64_t correlation = correlations.empty() ? 0 : correlations.back();
  std::lock_guard<std::mutex> lock(mutex);
  pending.push_back({name, kind, start, end, correlation, host_ns});
  // Count what has run already, so that the list stays as short as the work in flight.
  while (!pending.empty() && complete(pending.front().end)) {
    count(pending.front());
    pending.pop_front();
  }
}

std::map<std::string, KernelTime> kernel_times() {
  std::lock_guard<std::mutex> lock(mutex);
  drain();
  return totals;
}

void reset_kernel_times() {
  std::lock_guard<std::mutex> lock(mutex);
  drain();
  totals.clear();
}

void push_correlation(uint64_t id) { correlations.push_back(id); }
void pop_correlation() {
  if (!correlations.empty()) correlations.pop_back();
}

void set_command_trace(bool on) {
  std::lock_guard<std::mutex> lock(mutex);
  drain();
  trace.clear();
  clock_offsets.clear();
  dropped = 0;
  trace_on.store(on);
}

std::vector<TracedCommand> take_command_trace() {
  std::lock_guard<std::mutex> lock(mutex);
  drain();
  trace_on.store(false);
  // The host read its clock a little after each command was queued on the device's clock, so the
  // smallest difference on a queue is the closest to the true offset. One offset per queue keeps
  // the commands of a queue in the order and with the gaps the device measured.
  std::map<cl_command_queue, int64_t> offset;
  for (size_t i = 0; i < trace.size(); ++i) {
    auto [it, first] = offset.emplace(trace[i].queue, clock_offsets[i]);
    if (!first) it->second = std::min(it->second, clock_offsets[i]);
  }
  for (TracedCommand& command : trace) {
    command.start_ns += offset[command.queue];
    command.end_ns += offset[command.queue];
  }
  clock_offsets.clear();
  return std::move(trace);
}

uint64_t dropped_commands() {
  std::lock_guard<std::mutex> lock(mutex);
  return dropped;
}

}  // namespace drawbridge::runtime
