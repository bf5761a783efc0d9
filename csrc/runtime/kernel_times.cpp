#include "runtime/kernel_times.h"

#include <atomic>
#include <deque>
#include <mutex>

#include "runtime/error.h"

namespace drawbridge::runtime {

namespace {

struct Pending {
  std::string name;
  cl_event start, end;
};

std::atomic<bool> timing{false};
std::mutex mutex;
std::deque<Pending> pending;  // in launch order
std::map<std::string, KernelTime> totals;

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

// Adds a finished command to the totals (mutex held).
void count(const Pending& p) {
  const cl_ulong begin =
      p.start ? profiled(p.start, CL_PROFILING_COMMAND_END) : profiled(p.end, CL_PROFILING_COMMAND_START);
  const cl_ulong end = profiled(p.end, CL_PROFILING_COMMAND_END);
  KernelTime& t = totals[p.name];
  t.launches += 1;
  t.nanoseconds += end > begin ? end - begin : 0;
  if (p.start) clReleaseEvent(p.start);
  clReleaseEvent(p.end);
}

}  // namespace

bool kernel_timing() { return timing.load(std::memory_order_relaxed); }
void set_kernel_timing(bool on) { timing.store(on); }

void record_kernel_time(const std::string& name, cl_event end, cl_event start) {
  std::lock_guard<std::mutex> lock(mutex);
  pending.push_back({name, start, end});
  // Count what has run already, so that the list stays as short as the work in flight.
  while (!pending.empty() && complete(pending.front().end)) {
    count(pending.front());
    pending.pop_front();
  }
}

std::map<std::string, KernelTime> kernel_times() {
  std::lock_guard<std::mutex> lock(mutex);
  for (const Pending& p : pending) {
    DB_CL_CHECK(clWaitForEvents(1, &p.end));
    count(p);
  }
  pending.clear();
  return totals;
}

void reset_kernel_times() {
  kernel_times();
  std::lock_guard<std::mutex> lock(mutex);
  totals.clear();
}

}  // namespace drawbridge::runtime
