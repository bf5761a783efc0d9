#include "core/host_allocator.h"

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include <c10/util/Exception.h>

#include "core/device_state.h"
#include "runtime/commands.h"

namespace drawbridge::core {

namespace {

struct HostBlock {
  void* ptr = nullptr;
  size_t size = 0;  // power of two
  cl_mem mem = nullptr;
  bool in_use = false;
  std::vector<cl_event> events;
};

size_t size_class(size_t n) {
  size_t s = 4096;
  while (s < n) s <<= 1;
  return s;
}

class HostCache {
 public:
  HostBlock* allocate(size_t bytes) {
    size_t size = size_class(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [addr, b] : blocks_) {
      if (b->in_use || b->size != size || !events_done(*b)) continue;
      b->in_use = true;
      return b.get();
    }
    // Pinned buffers belong to the context of ocl:0; every queue in the process can read them.
    auto& dev = checked_device(0);
    cl_int status = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(dev.context(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, nullptr, &status);
    TORCH_CHECK_WITH(OutOfMemoryError, status == CL_SUCCESS, "could not allocate ", size,
                     " bytes of pinned host memory: ", runtime::error_name(status));
    void* ptr = clEnqueueMapBuffer(map_queue(dev), mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, size, 0,
                                   nullptr, nullptr, &status);
    if (status != CL_SUCCESS) {
      clReleaseMemObject(mem);
      TORCH_CHECK(false, "could not map pinned host memory: ", runtime::error_name(status));
    }
    auto block = std::make_unique<HostBlock>();
    block->ptr = ptr;
    block->size = size;
    block->mem = mem;
    block->in_use = true;
    HostBlock* raw = block.get();
    blocks_[reinterpret_cast<uintptr_t>(ptr)] = std::move(block);
    return raw;
  }

  void free(HostBlock* block) {
    std::lock_guard<std::mutex> lock(mutex_);
    block->in_use = false;
  }


  HostBlock* find(const void* ptr) const {
    auto a = reinterpret_cast<uintptr_t>(ptr);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return nullptr;
    --it;
    HostBlock* b = it->second.get();
    return a < it->first + b->size ? b : nullptr;
  }

  bool contains(const void* ptr) const {
    std::lock_guard<std::mutex> lock(mutex_);
    HostBlock* b = find(ptr);
    return b && b->in_use;
  }

  void record(const void* ptr, cl_event e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (HostBlock* b = find(ptr)) {
      clRetainEvent(e);
      b->events.push_back(e);
    }
  }

  void empty() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = blocks_.begin(); it != blocks_.end();) {
      HostBlock& b = *it->second;
      if (b.in_use) {
        ++it;
        continue;
      }
      for (cl_event e : b.events) runtime::wait_for(e);
      events_done(b);
      auto& dev = runtime::device(0);
      clEnqueueUnmapMemObject(map_queue(dev), b.mem, b.ptr, 0, nullptr, nullptr);
      clFinish(map_queue(dev));
      clReleaseMemObject(b.mem);
      it = blocks_.erase(it);
    }
  }

 private:
  // A queue of its own for mapping new buffers: a blocking map on a stream's queue would wait
  // for all the compute queued there. Called with mutex_ held.
  cl_command_queue map_queue(runtime::Device& dev) {
    if (!map_queue_) {
      cl_int status = CL_SUCCESS;
      map_queue_ = clCreateCommandQueue(dev.context(), dev.id(), 0, &status);
      DB_CL_CHECK(status);
    }
    return map_queue_;
  }

  static bool events_done(HostBlock& b) {
    for (cl_event e : b.events)
      if (!runtime::event_complete(e)) return false;
    for (cl_event e : b.events) clReleaseEvent(e);
    b.events.clear();
    return true;
  }

  mutable std::mutex mutex_;
  std::map<uintptr_t, std::unique_ptr<HostBlock>> blocks_;
  cl_command_queue map_queue_ = nullptr;
};

HostCache& cache() {
  static HostCache* c = new HostCache();
  return *c;
}

void delete_host_block(void* ctx) { cache().free(static_cast<HostBlock*>(ctx)); }

}  // namespace

c10::DataPtr HostAllocator::allocate(size_t bytes) {
  if (bytes == 0) return c10::DataPtr(nullptr, c10::Device(c10::DeviceType::CPU));
  HostBlock* b = cache().allocate(bytes);
  return c10::DataPtr(b->ptr, b, &delete_host_block, c10::Device(c10::DeviceType::CPU));
}

void HostAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  std::memcpy(dest, src, count);
}

bool HostAllocator::is_pinned(const void* ptr) const { return cache().contains(ptr); }
void HostAllocator::record_event(const void* ptr, cl_event done) { cache().record(ptr, done); }
void HostAllocator::empty_cache() { cache().empty(); }

HostAllocator& host_allocator() {
  static HostAllocator* allocator = new HostAllocator();
  return *allocator;
}

}  // namespace drawbridge::core
