#include "runtime/idle_poll.h"

#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

#ifdef __linux__
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#endif

namespace drawbridge::runtime::idle_poll {

std::atomic<bool> wanted{false};
std::atomic<bool> busy{false};

#ifdef __linux__
namespace {

// Never destroyed: the releaser thread may still wait on it while the process exits.
struct Request {
  std::mutex mutex;
  std::condition_variable made;  // a request was made: the releaser starts watching
  int fd = -1;                   // open while the request holds
  bool releaser_started = false;
};
Request& request() {
  static Request* r = new Request;
  return *r;
}

// Holds the request while work keeps coming, then drops it and waits for the next one.
void releaser() {
  Request& r = request();
  std::unique_lock<std::mutex> lock(r.mutex);
  for (;;) {
    r.made.wait(lock, [&] { return r.fd >= 0; });
    busy.store(false, std::memory_order_relaxed);
    lock.unlock();
    std::this_thread::sleep_for(kIdlePollGrace);
    lock.lock();
    if (!busy.load(std::memory_order_relaxed)) {
      close(r.fd);  // closing the file withdraws the request
      r.fd = -1;
      wanted.store(true, std::memory_order_relaxed);
    }
  }
}

// A forked child has no releaser thread: it gives up the inherited request and makes none.
void forget_in_child() {
  wanted.store(false, std::memory_order_relaxed);
  Request& r = request();
  if (r.fd >= 0) close(r.fd);
  r.fd = -1;
}

}  // namespace

void arm() {
  // Opt-in: the request changes how every core of the machine idles, not only this process's.
  const char* env = std::getenv("DRAWBRIDGE_IDLE_POLL");
  if (!env || std::strcmp(env, "1") != 0) return;
  static std::once_flag once;
  std::call_once(once, [] {
    request();
    pthread_atfork(nullptr, nullptr, forget_in_child);
    wanted.store(true, std::memory_order_relaxed);
  });
}

void acquire() {
  Request& r = request();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!wanted.load(std::memory_order_relaxed)) return;  // another thread made it meanwhile
  wanted.store(false, std::memory_order_relaxed);
  int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;  // not permitted (it needs root by default) or no PM QoS: stay off
  const int32_t max_wake_latency_us = 0;
  if (write(fd, &max_wake_latency_us, sizeof(max_wake_latency_us)) != sizeof(max_wake_latency_us)) {
    close(fd);
    return;
  }
  if (!r.releaser_started) {
    try {
      std::thread(releaser).detach();
    } catch (const std::system_error&) {
      close(fd);  // nothing could withdraw it: make no request, now or later
      return;
    }
    r.releaser_started = true;
  }
  r.fd = fd;
  r.made.notify_one();
}
#else
void arm() {}
void acquire() {}
#endif

}  // namespace drawbridge::runtime::idle_poll
