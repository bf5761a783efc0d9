#include "core/device_allocator.h"

#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include <c10/util/Exception.h>

#include "core/device_state.h"
#include "runtime/commands.h"
#include "runtime/device_memory.h"

namespace drawbridge::core {

namespace {

using c10::CachingDeviceAllocator::DeviceStats;
using c10::CachingAllocator::StatType;

constexpr size_t kMinBlock = 512;
constexpr size_t kSmallRequest = size_t(1) << 20;   // <= 1 MiB: small pool
constexpr size_t kSmallSegment = size_t(2) << 20;   // small pool segments are 2 MiB
constexpr size_t kMediumRequest = size_t(10) << 20;  // < 10 MiB: shared 20 MiB segments
constexpr size_t kMediumSegment = size_t(20) << 20;
constexpr size_t kRoundLarge = size_t(2) << 20;

size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

struct Block {
  c10::DeviceIndex device;
  int stream;             // the stream it was allocated on
  bool small;             // pool
  uintptr_t address;
  size_t size;            // rounded bytes this block covers
  size_t requested = 0;   // bytes the caller asked for (0 when free)
  bool allocated = false;
  Block* prev = nullptr;  // neighbours within the same segment
  Block* next = nullptr;
  std::set<int> other_streams;  // record_stream
  std::vector<cl_event> pending;  // markers that must complete before reuse
};

struct BlockOrder {
  bool operator()(const Block* a, const Block* b) const {
    if (a->stream != b->stream) return a->stream < b->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->address < b->address;
  }
};

class DeviceCache {
 public:
  explicit DeviceCache(c10::DeviceIndex device) : device_(device) {}

  Block* allocate(size_t requested, int stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    process_pending(false);
    size_t size = requested <= kMinBlock ? kMinBlock : round_up(requested, kMinBlock);
    bool small = size <= kSmallRequest;
    auto& pool = small ? small_free_ : large_free_;
    Block key{device_, stream, small, 0, size};
    Block* block = nullptr;
    auto it = pool.lower_bound(&key);
    if (it != pool.end() && (*it)->stream == stream) {
      block = *it;
      pool.erase(it);
    } else {
      block = new_segment(size, small, stream);
    }
    split(block, size, pool);
    block->allocated = true;
    block->requested = requested;
    update(stats_.allocation, small, 1, true);
    update(stats_.active, small, 1, true);
    update(stats_.allocated_bytes, small, requested, true);
    update(stats_.requested_bytes, small, requested, true);
    update(stats_.active_bytes, small, block->size, true);
    live_[block->address] = block;
    return block;
  }

  void free(Block* block) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(block->address);
    bool small = block->small;
    update(stats_.allocation, small, 1, false);
    update(stats_.active, small, 1, false);
    update(stats_.allocated_bytes, small, block->requested, false);
    update(stats_.requested_bytes, small, block->requested, false);
    update(stats_.active_bytes, small, block->size, false);
    block->allocated = false;
    block->requested = 0;
    if (!block->other_streams.empty()) {
      // Reuse must wait until every other stream that used the block has passed this point.
      try {
        auto& dev = runtime::device(device_);
        for (int s : block->other_streams) block->pending.push_back(runtime::enqueue_marker(dev.queue(s)));
      } catch (const std::exception&) {
        // Runs in a deleter, which must not throw. Without its markers nothing tells when the
        // other streams are done with the block, so it is never handed out again: memory is
        // lost, no tensor is corrupted.
        for (cl_event e : block->pending) clReleaseEvent(e);
        block->pending.clear();
        return;
      }
      block->other_streams.clear();
      pending_.push_back(block);
      return;
    }
    release(block);
  }

  // Bytes held by tensors and bytes in segments now, for the profiler's memory events.
  std::pair<size_t, size_t> in_use() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {static_cast<size_t>(stats_.allocated_bytes[0].current),
            static_cast<size_t>(stats_.reserved_bytes[0].current)};
  }

  void record_stream(uintptr_t address, int stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(address);
    if (it != live_.end() && it->second->stream != stream) it->second->other_streams.insert(stream);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    process_pending(true);
    release_cached_segments();
  }

  // After an allocation failed: give every cached segment back, then try once more.
  Block* allocate_retrying(size_t requested, int stream) {
    try {
      return allocate(requested, stream);
    } catch (const runtime::OutOfMemoryError&) {
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.num_alloc_retries++;
      process_pending(true);
      release_cached_segments();
    }
    try {
      return allocate(requested, stream);
    } catch (const runtime::OutOfMemoryError& e) {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.num_ooms++;
      TORCH_CHECK_WITH(OutOfMemoryError, false, e.what(), ". Of this, ",
                       stats_.allocated_bytes[0].current, " bytes are held by tensors and ",
                       stats_.reserved_bytes[0].current - stats_.allocated_bytes[0].current,
                       " bytes are reserved but unallocated.");
    }
  }

  DeviceStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* arr : arrays()) for (auto& s : *arr) s.reset_peak();
  }

  void reset_accumulated() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* arr : arrays()) for (auto& s : *arr) s.reset_accumulated();
    stats_.num_alloc_retries = 0;
    stats_.num_ooms = 0;
  }

 private:
  std::vector<c10::CachingAllocator::StatArray*> arrays() {
    return {&stats_.allocation,  &stats_.segment,         &stats_.active,
            &stats_.inactive_split, &stats_.allocated_bytes, &stats_.reserved_bytes,
            &stats_.active_bytes, &stats_.inactive_split_bytes, &stats_.requested_bytes};
  }

  static void update(c10::CachingAllocator::StatArray& arr, bool small, size_t amount, bool up) {
    for (size_t i : {static_cast<size_t>(StatType::AGGREGATE),
                     static_cast<size_t>(small ? StatType::SMALL_POOL : StatType::LARGE_POOL)}) {
      if (up)
        arr[i].increase(amount);
      else
        arr[i].decrease(amount);
    }
  }

  Block* new_segment(size_t size, bool small, int stream) {
    size_t bytes = small ? kSmallSegment : size < kMediumRequest ? kMediumSegment : round_up(size, kRoundLarge);
    auto& mem = runtime::device(device_).memory();
    void* base = nullptr;
    try {
      base = mem.allocate_segment(bytes);
    } catch (const runtime::OutOfMemoryError&) {
      if (bytes == size) throw;
      bytes = size;  // a shared segment did not fit; an exact one may
      base = mem.allocate_segment(bytes);
    }
    update(stats_.segment, small, 1, true);
    update(stats_.reserved_bytes, small, bytes, true);
    return new Block{device_, stream, small, reinterpret_cast<uintptr_t>(base), bytes};
  }

  void split(Block* block, size_t size, std::set<Block*, BlockOrder>& pool) {
    size_t rest = block->size - size;
    if (rest < kMinBlock || (!block->small && rest <= kSmallRequest)) return;
    auto* tail = new Block{device_, block->stream, block->small, block->address + size, rest};
    tail->prev = block;
    tail->next = block->next;
    if (block->next) block->next->prev = tail;
    block->next = tail;
    block->size = size;
    pool.insert(tail);
  }

  // Returns a free block to its pool, merged with free neighbours.
  void release(Block* block) {
    auto& pool = block->small ? small_free_ : large_free_;
    for (Block* n : {block->prev, block->next}) {
      if (!n || n->allocated || !n->pending.empty()) continue;
      pool.erase(n);
      if (n == block->prev) {
        n->size += block->size;
        n->next = block->next;
        if (block->next) block->next->prev = n;
        delete block;
        block = n;
      } else {
        block->size += n->size;
        block->next = n->next;
        if (n->next) n->next->prev = block;
        delete n;
      }
    }
    pool.insert(block);
  }

  void process_pending(bool wait) {
    for (auto it = pending_.begin(); it != pending_.end();) {
      Block* b = *it;
      bool done = true;
      for (cl_event e : b->pending) {
        if (wait) runtime::wait_for(e);
        else if (!runtime::event_complete(e)) done = false;
      }
      if (!done) {
        ++it;
        continue;
      }
      for (cl_event e : b->pending) clReleaseEvent(e);
      b->pending.clear();
      it = pending_.erase(it);
      release(b);
    }
  }

  void release_cached_segments() {
    auto& mem = runtime::device(device_).memory();
    for (auto* pool : {&small_free_, &large_free_}) {
      for (auto it = pool->begin(); it != pool->end();) {
        Block* b = *it;
        if (b->prev || b->next) {
          ++it;
          continue;
        }
        mem.free_segment(reinterpret_cast<void*>(b->address));
        update(stats_.segment, b->small, 1, false);
        update(stats_.reserved_bytes, b->small, b->size, false);
        it = pool->erase(it);
        delete b;
      }
    }
  }

  c10::DeviceIndex device_;
  std::mutex mutex_;
  std::set<Block*, BlockOrder> small_free_, large_free_;
  std::vector<Block*> pending_;
  std::map<uintptr_t, Block*> live_;
  DeviceStats stats_;
};

DeviceCache& cache_for(c10::DeviceIndex device) {
  // Never destroyed: tensors freed late at exit (the autograd engine's threads) still find them.
  static auto* mutex = new std::mutex();
  static auto* all = new std::vector<std::unique_ptr<DeviceCache>>();
  checked_device(device);
  std::lock_guard<std::mutex> lock(*mutex);
  auto& caches = *all;
  if (caches.size() <= static_cast<size_t>(device)) caches.resize(device + 1);
  if (!caches[device]) caches[device] = std::make_unique<DeviceCache>(device);
  return *caches[device];
}

// torch.profiler(profile_memory=True): each allocation and free with the totals after it, as
// the CUDA allocator reports them (the block's rounded size).
void report_to_profiler(c10::DeviceIndex device, uintptr_t address, int64_t bytes) noexcept {
  try {
    const auto [allocated, reserved] = cache_for(device).in_use();
    c10::reportMemoryUsageToProfiler(reinterpret_cast<void*>(address), bytes, allocated, reserved,
                                     c10::Device(kOcl, device));
  } catch (const std::exception&) {
    // A free runs in a deleter, which must not throw; a lost memory event is only a gap in a profile.
  }
}

void delete_block(void* ctx) noexcept {
  auto* block = static_cast<Block*>(ctx);
  const c10::DeviceIndex device = block->device;  // free() may merge the block away
  const uintptr_t address = block->address;
  const int64_t size = static_cast<int64_t>(block->size);
  cache_for(device).free(block);
  if (c10::memoryProfilingEnabled()) report_to_profiler(device, address, -size);
}

}  // namespace

c10::DataPtr DeviceAllocator::allocate(size_t bytes) {
  c10::DeviceIndex device = current_device();
  checked_device(device);
  if (bytes == 0) return c10::DataPtr(nullptr, c10::Device(kOcl, device));
  int stream = static_cast<int>(current_stream(device).id());
  Block* block = cache_for(device).allocate_retrying(bytes, stream);
  if (c10::memoryProfilingEnabled()) report_to_profiler(device, block->address, static_cast<int64_t>(block->size));
  return c10::DataPtr(reinterpret_cast<void*>(block->address), block, &delete_block, c10::Device(kOcl, device));
}

c10::DeleterFnPtr DeviceAllocator::raw_deleter() const { return nullptr; }

void DeviceAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  if (count == 0) return;
  auto& dev = checked_device(current_device());
  runtime::enqueue_copy(current_queue(), dev.memory().resolve(src), dev.memory().resolve(dest), count);
}

bool DeviceAllocator::initialized() { return device_count() > 0; }

void DeviceAllocator::emptyCache(c10::MempoolId_t) {
  for (c10::DeviceIndex d = 0; d < device_count(); ++d) cache_for(d).empty_cache();
}

void DeviceAllocator::recordStream(const c10::DataPtr& ptr, c10::Stream stream) {
  // Only memory this allocator handed out has a Block behind it.
  if (ptr.get_deleter() != &delete_block || !ptr.get_context() || stream.device_type() != kOcl) return;
  auto* block = static_cast<Block*>(ptr.get_context());
  cache_for(block->device).record_stream(block->address, static_cast<int>(stream.id()));
}

c10::CachingDeviceAllocator::DeviceStats DeviceAllocator::getDeviceStats(c10::DeviceIndex device) {
  return cache_for(device < 0 ? current_device() : device).stats();
}

void DeviceAllocator::resetAccumulatedStats(c10::DeviceIndex device) {
  cache_for(device < 0 ? current_device() : device).reset_accumulated();
}

void DeviceAllocator::resetPeakStats(c10::DeviceIndex device) {
  cache_for(device < 0 ? current_device() : device).reset_peak();
}

std::pair<size_t, size_t> DeviceAllocator::getMemoryInfo(c10::DeviceIndex device) {
  auto& dev = checked_device(device);
  size_t total = dev.properties().global_mem_bytes;
  return {total - dev.memory().segment_bytes(), total};
}

DeviceAllocator& device_allocator() {
  static DeviceAllocator* allocator = new DeviceAllocator();
  return *allocator;
}

namespace {
// Registered at load time, so at::GetAllocator(kPrivateUse1) works before any device exists.
const bool registered = [] {
  c10::SetAllocator(kOcl, &device_allocator());
  return true;
}();
}  // namespace

}  // namespace drawbridge::core
