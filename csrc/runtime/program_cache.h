// Builds OpenCL programs once per (device, driver, source, options) and keeps the binaries on
// disk in DRAWBRIDGE_CACHE_DIR, so a second process loads instead of compiling (except where the
// driver caches its own builds: program_binaries_cached).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "runtime/opencl.h"

namespace drawbridge::runtime {

class Device;

// A kernel object plus the lock that makes "set arguments, enqueue" atomic across threads.
struct Kernel {
  cl_kernel handle = nullptr;
  size_t max_work_group_size = 0;
  std::string name;
  std::mutex mutex;
};

struct ProgramCacheStats {
  uint64_t builds = 0;       // compiled from source
  uint64_t disk_hits = 0;    // loaded from a cached binary
  uint64_t memory_hits = 0;  // already built in this process
  // Kernel objects made (one per kernel of a program, on its first use): PoCL compiles each
  // kernel on its first launch, about 0.1 s apiece.
  uint64_t kernels = 0;
};

// Where a program may come from. Some drivers report kernel argument info (custom kernels check
// their arguments with it) only for programs built from source, not for loaded binaries.
enum class ProgramSource { disk_cache_or_build, build };

// `label` names the program in build errors and progress messages.
cl_program get_program(Device& device, const std::string& label, const std::string& source,
                       const std::string& options, ProgramSource from = ProgramSource::disk_cache_or_build);
// The returned reference stays valid for the life of the process.
Kernel& get_kernel(Device& device, const std::string& label, const std::string& source,
                   const std::string& options, const std::string& kernel_name,
                   ProgramSource from = ProgramSource::disk_cache_or_build);

ProgramCacheStats program_cache_stats();
std::string program_cache_dir();  // empty when the disk cache is off
// Whether programs built for `device` are kept in program_cache_dir(): not where the driver keeps
// its own cache and handing out a binary costs more than it saves (PoCL), unless
// DRAWBRIDGE_CACHE_BINARIES=1; never with DRAWBRIDGE_CACHE_BINARIES=0.
bool program_binaries_cached(const Device& device);

}  // namespace drawbridge::runtime
