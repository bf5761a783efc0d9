#include "runtime/commands.h"

#include "runtime/kernel_times.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <cstring>

namespace drawbridge::runtime {

bool sync_mode() {
  static const bool on = [] {
    const char* env = std::getenv("DRAWBRIDGE_SYNC");
    return env && std::strcmp(env, "0") != 0 && *env;
  }();
  return on;
}

namespace {
std::atomic<uint64_t> launches{0};
std::atomic<int64_t> driver_ns{0};

// Adds the time from its construction to its destruction to driver_ns.
class DriverTime {
 public:
  ~DriverTime() {
    driver_ns.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count(),
        std::memory_order_relaxed);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// The completion event a transfer asks for: the caller's, or one of its own while commands are
// timed. record() hands it to the timing (retaining one the caller also holds).
class TransferEvent {
 public:
  explicit TransferEvent(cl_event* caller) : caller_(caller) {}
  cl_event* get() { return caller_ ? caller_ : timed_ ? &own_ : nullptr; }
  void record(const char* name) {
    if (!timed_) return;
    if (caller_) DB_CL_CHECK(clRetainEvent(*caller_));
    record_kernel_time(name, caller_ ? *caller_ : own_, nullptr, CommandKind::transfer, queued_ns_);
  }

 private:
  cl_event* caller_;
  cl_event own_ = nullptr;
  const bool timed_ = kernel_timing();
  // Read before the enqueue: a blocking transfer returns when it is done.
  const int64_t queued_ns_ = timed_ ? host_clock_ns() : 0;
};
}  // namespace

uint64_t launch_count() { return launches.load(std::memory_order_relaxed); }
double driver_enqueue_seconds() { return driver_ns.load(std::memory_order_relaxed) * 1e-9; }
void note_launch() { launches.fetch_add(1, std::memory_order_relaxed); }

void launch_nd(Kernel& kernel, cl_command_queue q, cl_uint dims, const size_t* global, const size_t* local,
               const KernelArg* args, size_t nargs, const char* label) {
  const char* name = label ? label : kernel.name.c_str();
  OpScope scope(name);
  note_launch();
  cl_event done = nullptr;
  {
    std::lock_guard<std::mutex> lock(kernel.mutex);
    DriverTime driver_time;
    for (size_t i = 0; i < nargs; ++i)
      DB_CL_CHECK(clSetKernelArg(kernel.handle, static_cast<cl_uint>(i), args[i].size, args[i].value));
    DB_CL_CHECK(clEnqueueNDRangeKernel(q, kernel.handle, dims, nullptr, global, local, 0, nullptr,
                                       kernel_timing() ? &done : nullptr));
  }
  if (done) record_kernel_time(name, done);
  after_enqueue(q);
}

void launch_args(Kernel& kernel, cl_command_queue q, size_t groups, size_t local, const KernelArg* args,
                 size_t nargs, const char* label) {
  const size_t global = groups * local;
  launch_nd(kernel, q, 1, &global, &local, args, nargs, label);
}

void enqueue_copy(cl_command_queue q, const BufferRef& src, const BufferRef& dst, size_t bytes) {
  if (bytes == 0) return;
  TransferEvent event(nullptr);
  {
    DriverTime driver_time;
    DB_CL_CHECK(clEnqueueCopyBuffer(q, src.mem, dst.mem, src.offset, dst.offset, bytes, 0, nullptr, event.get()));
  }
  event.record("Memcpy DtoD");
  after_enqueue(q);
}

void enqueue_write(cl_command_queue q, const BufferRef& dst, const void* host, size_t bytes,
                   bool blocking, cl_event* done) {
  if (bytes == 0) return;
  TransferEvent event(done);
  {
    DriverTime driver_time;
    DB_CL_CHECK(clEnqueueWriteBuffer(q, dst.mem, blocking ? CL_TRUE : CL_FALSE, dst.offset, bytes, host,
                                     0, nullptr, event.get()));
  }
  event.record("Memcpy HtoD");
  after_enqueue(q);
}

void enqueue_read(cl_command_queue q, const BufferRef& src, void* host, size_t bytes, bool blocking,
                  cl_event* done) {
  if (bytes == 0) return;
  TransferEvent event(done);
  {
    DriverTime driver_time;
    DB_CL_CHECK(clEnqueueReadBuffer(q, src.mem, blocking ? CL_TRUE : CL_FALSE, src.offset, bytes, host,
                                    0, nullptr, event.get()));
  }
  event.record("Memcpy DtoH");
  after_enqueue(q);
}

cl_event enqueue_marker(cl_command_queue q) {
  cl_event e = nullptr;
  DB_CL_CHECK(clEnqueueMarkerWithWaitList(q, 0, nullptr, &e));
  // Markers are not submitted by some drivers until the queue is flushed; a waiter on another
  // queue would otherwise wait forever.
  DB_CL_CHECK(clFlush(q));
  return e;
}

void enqueue_wait(cl_command_queue q, cl_event event) {
  DB_CL_CHECK(clEnqueueBarrierWithWaitList(q, 1, &event, nullptr));
}

bool event_complete(cl_event event) {
  cl_int status = CL_COMPLETE;
  DB_CL_CHECK(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr));
  if (status < 0) throw Error("an ocl command failed asynchronously", status);
  return status == CL_COMPLETE;
}

void wait_for(cl_event event) { DB_CL_CHECK(clWaitForEvents(1, &event)); }

cl_event create_user_event(cl_context context) {
  cl_int status = CL_SUCCESS;
  cl_event user = clCreateUserEvent(context, &status);
  DB_CL_CHECK(status);
  return user;
}

void complete_user_event(cl_event user) { DB_CL_CHECK(clSetUserEventStatus(user, CL_COMPLETE)); }

namespace {
// Also runs when `event` failed: a queue waiting on the user event must not wait forever.
void CL_CALLBACK complete_user_event_callback(cl_event, cl_int, void* user) {
  auto event = static_cast<cl_event>(user);
  clSetUserEventStatus(event, CL_COMPLETE);
  clReleaseEvent(event);
}
}  // namespace

void complete_user_event_after(cl_event event, cl_event user) {
  DB_CL_CHECK(clRetainEvent(user));
  if (clSetEventCallback(event, CL_COMPLETE, complete_user_event_callback, user) == CL_SUCCESS) return;
  clReleaseEvent(user);
  wait_for(event);  // a driver without callbacks: the caller's thread waits instead
  complete_user_event(user);
}

float elapsed_ms(cl_event start, cl_event end) {
  cl_ulong t0 = 0, t1 = 0;
  DB_CL_CHECK(clGetEventProfilingInfo(start, CL_PROFILING_COMMAND_END, sizeof(t0), &t0, nullptr));
  DB_CL_CHECK(clGetEventProfilingInfo(end, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr));
  return static_cast<float>((static_cast<double>(t1) - static_cast<double>(t0)) / 1e6);
}

bool queue_idle(cl_command_queue q) {
  // OpenCL cannot ask a queue whether it is empty, so ask a fresh marker. Even on an idle queue
  // the marker needs a moment to pass through the driver; give it up to a millisecond.
  cl_event e = enqueue_marker(q);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
  bool done = event_complete(e);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
    done = event_complete(e);
  }
  clReleaseEvent(e);
  return done;
}

}  // namespace drawbridge::runtime
