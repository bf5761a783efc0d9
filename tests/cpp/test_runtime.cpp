// Unit tests of csrc/runtime on whatever OpenCL device is present (PoCL in CI).
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "runtime/commands.h"
#include "runtime/device.h"
#include "runtime/device_memory.h"
#include "runtime/kernel_times.h"
#include "runtime/program_cache.h"

using namespace drawbridge::runtime;

namespace {
const char* kScaleSource = R"(
__kernel void scale(__global float* data, ulong offset, float factor, uint n) {
  __global float* p = (__global float*)((__global char*)data + offset);
  size_t i = get_global_id(0);
  if (i < n) p[i] *= factor;
}
)";
}

TEST(DeviceSelection, DefaultPrefersGpus) {
  std::vector<DeviceCandidate> c = {{"Portable Computing Language", "The pocl project", "cpu0", "AMD", "cpu"},
                                    {"NVIDIA CUDA", "NVIDIA Corporation", "H200", "NVIDIA", "gpu"}};
  EXPECT_EQ(select_devices(c, ""), std::vector<size_t>({1}));
  EXPECT_EQ(select_devices({c[0]}, ""), std::vector<size_t>({0}));
}

TEST(DeviceSelection, ByNameAndIndex) {
  std::vector<DeviceCandidate> c = {{"Portable Computing Language", "The pocl project", "cpu0", "AMD", "cpu"},
                                    {"NVIDIA CUDA", "NVIDIA Corporation", "A", "NVIDIA", "gpu"},
                                    {"NVIDIA CUDA", "NVIDIA Corporation", "B", "NVIDIA", "gpu"}};
  EXPECT_EQ(select_devices(c, "pocl"), std::vector<size_t>({0}));
  EXPECT_EQ(select_devices(c, "nvidia:1"), std::vector<size_t>({2}));
  EXPECT_EQ(select_devices(c, "NVIDIA:1,pocl"), std::vector<size_t>({2, 0}));
  EXPECT_EQ(select_devices(c, "gpu"), std::vector<size_t>({1, 2}));
  EXPECT_TRUE(select_devices(c, "amdgpu").empty());
  EXPECT_TRUE(select_devices(c, "nvidia:x").empty());
}

TEST(Device, DiscoveredWithProperties) {
  ASSERT_GT(device_count(), 0) << no_device_reason();
  const auto& p = device(0).properties();
  EXPECT_FALSE(p.name.empty());
  EXPECT_GT(p.global_mem_bytes, 0u);
  EXPECT_GT(p.max_alloc_bytes, 0u);
  EXPECT_LE(p.max_alloc_bytes, p.global_mem_bytes);
  EXPECT_THROW(device(device_count()), Error);
  EXPECT_THROW(device(-1), Error);
}

TEST(DeviceMemory, AddressesResolveToBufferAndOffset) {
  auto& mem = device(0).memory();
  char* a = static_cast<char*>(mem.allocate_segment(1000));
  char* b = static_cast<char*>(mem.allocate_segment(4096));
  EXPECT_TRUE(mem.contains(a));
  EXPECT_NE(a, b);
  BufferRef r = mem.resolve(a + 100);
  EXPECT_EQ(r.offset, 100u);
  EXPECT_EQ(r.available, 900u);
  EXPECT_EQ(mem.resolve(b).mem, mem.resolve(b + 4095).mem);
  EXPECT_NE(mem.resolve(a).mem, mem.resolve(b).mem);
  EXPECT_THROW(mem.resolve(a + 1000), Error);  // one past the end is not inside
  mem.free_segment(a);
  EXPECT_THROW(mem.resolve(a), Error);
  mem.free_segment(b);
}

TEST(DeviceMemory, TooLargeIsOutOfMemory) {
  auto& mem = device(0).memory();
  size_t before = mem.segment_bytes();
  EXPECT_THROW(mem.allocate_segment(device(0).properties().max_alloc_bytes + 1), OutOfMemoryError);
  EXPECT_EQ(mem.segment_bytes(), before);
  void* ok = mem.allocate_segment(256);  // still usable
  mem.free_segment(ok);
}

TEST(Commands, WriteLaunchRead) {
  Device& dev = device(0);
  cl_command_queue q = dev.queue(0);
  std::vector<float> host(1000);
  std::iota(host.begin(), host.end(), 0.0f);
  char* base = static_cast<char*>(dev.memory().allocate_segment(8192));
  char* data = base + 64;  // exercise a non-zero offset
  enqueue_write(q, dev.memory().resolve(data), host.data(), host.size() * 4, true);
  Kernel& k = get_kernel(dev, "test_scale", kScaleSource, "", "scale");
  BufferRef ref = dev.memory().resolve(data);
  cl_ulong offset = ref.offset;
  launch(k, q, 4, 256, ref.mem, offset, 2.0f, static_cast<cl_uint>(host.size()));
  std::vector<float> out(host.size());
  enqueue_read(q, ref, out.data(), out.size() * 4, true);
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 2.0f * i);
  dev.memory().free_segment(base);
}

TEST(KernelTimes, CountLaunchesOnlyWhenOn) {
  Device& dev = device(0);
  cl_command_queue q = dev.queue(0);
  char* data = static_cast<char*>(dev.memory().allocate_segment(4096));
  BufferRef ref = dev.memory().resolve(data);
  cl_ulong offset = ref.offset;
  Kernel& k = get_kernel(dev, "test_scale", kScaleSource, "", "scale");
  reset_kernel_times();
  launch(k, q, 1, 256, ref.mem, offset, 1.0f, 256u);  // timing off: not counted
  set_kernel_timing(true);
  for (int i = 0; i < 3; ++i) launch(k, q, 1, 256, ref.mem, offset, 1.0f, 256u);
  set_kernel_timing(false);
  const auto times = kernel_times();
  ASSERT_EQ(times.count("scale"), 1u);
  EXPECT_EQ(times.at("scale").launches, 3u);
  EXPECT_GT(times.at("scale").nanoseconds, 0u);
  reset_kernel_times();
  EXPECT_TRUE(kernel_times().empty());
  dev.memory().free_segment(data);
}

TEST(Commands, EventsOrderStreams) {
  Device& dev = device(0);
  cl_command_queue q1 = dev.queue(1), q2 = dev.queue(2);
  cl_event start = enqueue_marker(q1);
  char* buf = static_cast<char*>(dev.memory().allocate_segment(1 << 20));
  std::vector<uint8_t> host(1 << 20, 7), back(1 << 20, 0);
  enqueue_write(q1, dev.memory().resolve(buf), host.data(), host.size(), false);
  cl_event written = enqueue_marker(q1);
  enqueue_wait(q2, written);
  enqueue_read(q2, dev.memory().resolve(buf), back.data(), back.size(), true);
  EXPECT_EQ(back, host);
  EXPECT_TRUE(event_complete(written));
  EXPECT_GE(elapsed_ms(start, written), 0.0f);
  EXPECT_TRUE(queue_idle(q1));
  clReleaseEvent(start);
  clReleaseEvent(written);
  dev.memory().free_segment(buf);
}

TEST(ProgramCache, BuildFailureCarriesLog) {
  try {
    get_program(device(0), "broken", "__kernel void f(__global float* x) { x[0] = undefined_name; }", "");
    FAIL() << "expected a build error";
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("broken"), std::string::npos);
    EXPECT_NE(what.find("undefined_name"), std::string::npos) << what;
  }
}

TEST(ProgramCache, SecondRequestIsAMemoryHit) {
  auto before = program_cache_stats();
  get_program(device(0), "test_scale", kScaleSource, "-DUNUSED=1");
  get_program(device(0), "test_scale", kScaleSource, "-DUNUSED=1");
  auto after = program_cache_stats();
  EXPECT_EQ(after.memory_hits, before.memory_hits + 1);
  EXPECT_EQ(after.builds + after.disk_hits, before.builds + before.disk_hits + 1);
}

TEST(Commands, StructArgumentByValue) {
  // The pointwise launcher passes its iteration descriptor as a struct by value.
  const char* src = R"(
typedef struct { ulong n; ulong scale[3]; } Desc;
__kernel void apply(Desc d, __global ulong* out, ulong offset) {
  __global ulong* p = (__global ulong*)((__global char*)out + offset);
  size_t i = get_global_id(0);
  if (i < d.n) p[i] = i * d.scale[2];
}
)";
  Device& dev = device(0);
  char* buf = static_cast<char*>(dev.memory().allocate_segment(64 * 8));
  Kernel& k = get_kernel(dev, "test_struct", src, "", "apply");
  struct {
    uint64_t n, scale[3];
  } desc{64, {1, 2, 3}};
  BufferRef ref = dev.memory().resolve(buf);
  cl_ulong offset = ref.offset;
  launch(k, dev.queue(0), 1, 64, desc, ref.mem, offset);
  std::vector<uint64_t> out(64);
  enqueue_read(dev.queue(0), ref, out.data(), 64 * 8, true);
  for (size_t i = 0; i < 64; ++i) ASSERT_EQ(out[i], 3 * i);
  dev.memory().free_segment(buf);
}
