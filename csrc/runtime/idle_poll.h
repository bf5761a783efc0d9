// Fast wake-ups for CPU devices. A CPU device's OpenCL driver runs kernels on worker threads that
// sleep between kernels (PoCL's never spin), so every kernel first wakes a sleeping worker. When
// the idle core has halted, that wake is an inter-processor interrupt: ~30 us on a virtual
// machine, a quarter of a 16 MiB reduction. OpenMP's threads, which PyTorch's CPU ops use, spin
// for a while instead. The equivalent here: while ocl work is being enqueued, ask Linux (PM QoS,
// /dev/cpu_dma_latency) to let idle cores poll rather than halt, and drop the request once no
// work has been enqueued for kIdlePollGrace. It trades idle power for latency, as spinning does.
// Opt-in (DRAWBRIDGE_IDLE_POLL=1), since it changes how the whole machine idles; off for GPU
// devices and where the process may not open the file.
#pragma once

#include <atomic>
#include <chrono>

namespace drawbridge::runtime {

constexpr std::chrono::milliseconds kIdlePollGrace{100};

namespace idle_poll {
// Device discovery arms the request when a CPU device is in use.
void arm();
void acquire();  // the slow path of note_work
extern std::atomic<bool> wanted;  // armed and not held
extern std::atomic<bool> busy;    // work enqueued since the releaser last looked
}  // namespace idle_poll

// After each enqueue: two relaxed loads unless the request has to be made. (The request is
// process-wide: with a CPU and a GPU device both selected, GPU work keeps it too.)
inline void note_work() {
  if (!idle_poll::busy.load(std::memory_order_relaxed)) idle_poll::busy.store(true, std::memory_order_relaxed);
  if (idle_poll::wanted.load(std::memory_order_relaxed)) idle_poll::acquire();
}

}  // namespace drawbridge::runtime
