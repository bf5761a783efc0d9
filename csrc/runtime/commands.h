// What Drawbridge enqueues on a stream: kernel launches, buffer transfers, markers and waits.
// With DRAWBRIDGE_SYNC=1 every enqueue waits for completion (like CUDA_LAUNCH_BLOCKING).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "runtime/device_memory.h"
#include "runtime/error.h"
#include "runtime/idle_poll.h"
#include "runtime/program_cache.h"

namespace drawbridge::runtime {

bool sync_mode();
// After every enqueue: waits for completion under DRAWBRIDGE_SYNC=1, and tells the idle-poll
// request that work is coming.
inline void after_enqueue(cl_command_queue q) {
  note_work();
  if (sync_mode()) DB_CL_CHECK(clFinish(q));
}

// Kernel launches enqueued by this process (ours and library calls that note theirs): what
// bench/compile.py and the tests count to see fusion.
uint64_t launch_count();
void note_launch();
// Seconds the host has spent inside the OpenCL driver's enqueue calls (kernel arguments, launches,
// transfers): bench/op_overhead.py subtracts them to show the host time that is ours.
double driver_enqueue_seconds();

struct KernelArg {
  size_t size;
  const void* value;
};

// An N-d launch (1 to 3 dimensions): global[d] work-items in work-groups of local[d] (null: the
// driver's choice). No global offsets: PoCL compiles a kernel once per local size and again for a
// non-zero offset, so a kernel that numbers its items from elsewhere takes that as an argument.
// `label` is the name profiles show (default: the kernel's), e.g. the operation a dispatch kernel
// runs (kernels/op_dispatch.h).
void launch_nd(Kernel& kernel, cl_command_queue q, cl_uint dims, const size_t* global, const size_t* local,
               const KernelArg* args, size_t nargs, const char* label = nullptr);

// 1-D launch of `groups` work-groups of `local` work-items each.
void launch_args(Kernel& kernel, cl_command_queue q, size_t groups, size_t local, const KernelArg* args,
                 size_t nargs, const char* label = nullptr);

template <typename... Args>
void launch(Kernel& kernel, cl_command_queue q, size_t groups, size_t local, const Args&... args) {
  static_assert((std::is_trivially_copyable_v<Args> && ...), "kernel arguments are passed by value");
  const KernelArg list[] = {KernelArg{sizeof(Args), &args}...};
  launch_args(kernel, q, groups, local, list, sizeof...(Args));
}

void enqueue_copy(cl_command_queue q, const BufferRef& src, const BufferRef& dst, size_t bytes);
// A non-blocking write or read hands back its completion event in *done (caller releases it).
void enqueue_write(cl_command_queue q, const BufferRef& dst, const void* host, size_t bytes,
                   bool blocking, cl_event* done = nullptr);
void enqueue_read(cl_command_queue q, const BufferRef& src, void* host, size_t bytes, bool blocking,
                  cl_event* done = nullptr);

// Events: a marker completes when everything enqueued before it on q has completed.
cl_event enqueue_marker(cl_command_queue q);
void enqueue_wait(cl_command_queue q, cl_event event);  // later work on q waits for event
bool event_complete(cl_event event);
void wait_for(cl_event event);
// A user event is one the host completes: a queue waiting on it waits for host-side work (a
// transfer over the network) without a host thread blocking. The caller releases it.
cl_event create_user_event(cl_context context);
void complete_user_event(cl_event user);
// Completes `user` once `event` has (from the driver's callback; no host thread waits).
void complete_user_event_after(cl_event event, cl_event user);
float elapsed_ms(cl_event start, cl_event end);
bool queue_idle(cl_command_queue q);

}  // namespace drawbridge::runtime
