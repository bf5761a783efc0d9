#include "runtime/program_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>
#include <vector>

#include "runtime/device.h"
#include "runtime/error.h"

namespace drawbridge::runtime {

namespace {

uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h ^ 0xff;  // separator, so ("ab","c") and ("a","bc") differ
}

struct Program {
  cl_program handle = nullptr;
  std::map<std::string, std::unique_ptr<Kernel>> kernels;
};

struct Cache {
  std::mutex mutex;
  std::map<std::tuple<int, uint64_t>, Program> programs;
  ProgramCacheStats stats;
};

Cache& cache() {
  static Cache* c = new Cache();
  return *c;
}

void make_dirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos)
    if (pos == path.size() || path[pos] == '/') mkdir(path.substr(0, pos).c_str(), 0755);
}

std::string build_log(cl_program program, cl_device_id device) {
  size_t n = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  if (n) clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

cl_program load_binary(Device& device, const std::string& path, const std::string& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.empty()) return nullptr;
  const unsigned char* data = bytes.data();
  size_t size = bytes.size();
  cl_int binary_status = CL_SUCCESS, status = CL_SUCCESS;
  cl_device_id id = device.id();
  cl_program p = clCreateProgramWithBinary(device.context(), 1, &id, &size, &data, &binary_status, &status);
  if (status != CL_SUCCESS || binary_status != CL_SUCCESS) {
    if (p) clReleaseProgram(p);
    return nullptr;
  }
  if (clBuildProgram(p, 1, &id, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(p);
    return nullptr;  // a stale or foreign binary: rebuild from source
  }
  return p;
}

void store_binary(Device& device, cl_program program, const std::string& path) {
  size_t size = 0;
  if (clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) != CL_SUCCESS || !size)
    return;
  std::vector<unsigned char> bytes(size);
  unsigned char* ptr = bytes.data();
  if (clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) return;
  // Write to a private name, then rename: concurrent processes never see half a file.
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(size));
    if (!out) return;
  }
  std::rename(tmp.c_str(), path.c_str());
  (void)device;
}

cl_program build_from_source(Device& device, const std::string& label, const std::string& source,
                             const std::string& options) {
  const char* text = source.c_str();
  size_t length = source.size();
  cl_int status = CL_SUCCESS;
  cl_program p = clCreateProgramWithSource(device.context(), 1, &text, &length, &status);
  DB_CL_CHECK(status);
  cl_device_id id = device.id();
  status = clBuildProgram(p, 1, &id, options.c_str(), nullptr, nullptr);
  if (status != CL_SUCCESS) {
    std::string log = build_log(p, id);
    clReleaseProgram(p);
    throw Error("failed to build OpenCL program '" + label + "' for ocl:" +
                    std::to_string(device.index()) + " (" + device.properties().name + ") with options '" +
                    options + "': " + error_name(status) + "\nBuild log:\n" + log,
                status);
  }
  return p;
}

// PoCL keeps its own cache of built programs and of the kernels compiled from them
// (POCL_KERNEL_CACHE, on unless set to 0), and asking it for a program's binary makes it compile
// every kernel of the program at once, where a launch compiles only the kernel it runs: a first
// sum took 29.6 s with our binary stored, 2.1 s without, and a second process builds from the
// driver's cache as fast as it loads our binary (0.1 s). Such drivers keep the binaries.
bool driver_caches_builds(const Device& device) {
  if (device.properties().platform_name.find("Portable Computing Language") == std::string::npos) return false;
  const char* pocl_cache = std::getenv("POCL_KERNEL_CACHE");
  return !pocl_cache || std::string(pocl_cache) != "0";
}

}  // namespace

bool program_binaries_cached(const Device& device) {
  if (program_cache_dir().empty()) return false;
  if (const char* env = std::getenv("DRAWBRIDGE_CACHE_BINARIES"); env && *env) return std::string(env) == "1";
  return !driver_caches_builds(device);
}

std::string program_cache_dir() {
  if (const char* env = std::getenv("DRAWBRIDGE_CACHE_DIR")) return env;  // "" turns it off
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/drawbridge";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/drawbridge";
  return {};
}

namespace {

// While a program builds from source and stderr is a terminal: one line saying so, erased when
// the build ends (a build takes about a second on PoCL, and a first run builds many). The first
// build of a process whose cache folder holds no program yet adds a line that says why the run is
// slow. Nothing when stderr is not a terminal (logs, pipes) or DRAWBRIDGE_VERBOSE_BUILD prints
// its own lines.
class BuildProgress {
 public:
  // `dir` is the cache folder, empty when the cache is off; `cached`: whether this program would
  // be stored there.
  BuildProgress(const std::string& label, const std::string& dir, bool cached) {
    static const bool shown = isatty(STDERR_FILENO) && !std::getenv("DRAWBRIDGE_VERBOSE_BUILD");
    static int built = 0;
    static bool noted = false;
    active_ = shown;
    if (!active_) return;
    if (!noted && cached) {
      noted = true;
      if (dir.empty())
        std::fprintf(stderr, "[drawbridge] the kernel cache is off (DRAWBRIDGE_CACHE_DIR is empty): every run "
                             "compiles its OpenCL programs\n");
      else if (folder_is_empty(dir))
        std::fprintf(stderr, "[drawbridge] the kernel cache %s is empty: this run compiles OpenCL programs as it "
                             "first needs them (later runs load them)\n", dir.c_str());
    }
    std::fprintf(stderr, "\r[drawbridge] building OpenCL program %d (%s)\033[K", ++built, label.c_str());
    std::fflush(stderr);
  }
  ~BuildProgress() {
    if (!active_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  static bool folder_is_empty(const std::string& dir) {
    DIR* d = opendir(dir.c_str());
    if (!d) return true;
    bool empty = true;
    while (dirent* entry = readdir(d))
      if (entry->d_name[0] != '.') {
        empty = false;
        break;
      }
    closedir(d);
    return empty;
  }
  bool active_ = false;
};

// Serializes the builds of one program among the processes that share a cache folder (torchrun's
// ranks, the test suite's OpInfo children): the second waits for the first instead of compiling
// the same program beside it, then loads what the first left, our binary or the driver's own
// cache entry. A byte-range lock at the program's hash in one file per folder (a dot file, so the
// folder still counts as empty before its first program), released when the build ends or the
// process dies. Where the folder cannot hold the lock, builds go on unlocked.
class CrossProcessBuildLock {
 public:
  // The caller holds cache().mutex, which also guards the open lock files.
  CrossProcessBuildLock(const std::string& dir, uint64_t hash) {
    if (dir.empty()) return;
    fd_ = lock_file(dir);
    if (fd_ < 0) return;
    range_.l_type = F_WRLCK;
    range_.l_whence = SEEK_SET;
    range_.l_start = static_cast<off_t>(hash & 0x3fffffff);
    range_.l_len = 1;
    if (fcntl(fd_, F_SETLK, &range_) == 0) {
      held_ = true;
      return;
    }
    if (errno != EACCES && errno != EAGAIN) return;
    waited_ = true;
    int status;
    while ((status = fcntl(fd_, F_SETLKW, &range_)) != 0 && errno == EINTR) {
    }
    held_ = status == 0;
  }
  ~CrossProcessBuildLock() {
    if (!held_) return;
    range_.l_type = F_UNLCK;
    fcntl(fd_, F_SETLK, &range_);
  }
  CrossProcessBuildLock(const CrossProcessBuildLock&) = delete;
  CrossProcessBuildLock& operator=(const CrossProcessBuildLock&) = delete;

  // Whether another process held the lock: it may have built the program meanwhile.
  bool waited() const { return waited_; }

 private:
  // One descriptor per folder for the life of the process: closing any descriptor of a file
  // drops every lock the process holds on it.
  static int lock_file(const std::string& dir) {
    static std::map<std::string, int>* files = new std::map<std::string, int>();
    auto it = files->find(dir);
    if (it != files->end()) return it->second;
    make_dirs(dir);
    const int fd = open((dir + "/.build.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    (*files)[dir] = fd;
    return fd;
  }

  int fd_ = -1;
  struct flock range_ = {};
  bool held_ = false, waited_ = false;
};

// Finds or builds the program; the caller holds cache().mutex.
Program& program_locked(Device& device, const std::string& label, const std::string& source,
                        const std::string& options, ProgramSource from) {
  const auto& props = device.properties();
  uint64_t h = 1469598103934665603ull + static_cast<uint64_t>(from);
  for (const std::string* s : {&props.platform_name, &props.name, &props.driver_version,
                               &props.opencl_version, &options, &source})
    h = fnv1a(h, *s);

  auto& c = cache();
  auto key = std::make_tuple(device.index(), h);
  auto it = c.programs.find(key);
  if (it != c.programs.end()) {
    ++c.stats.memory_hits;
    return it->second;
  }
  const std::string cache_dir = program_cache_dir();  // also where builds take their lock
  const bool to_disk = from != ProgramSource::build && program_binaries_cached(device);
  const std::string dir = to_disk ? cache_dir : std::string();
  std::string path;
  cl_program p = nullptr;
  if (!dir.empty()) {
    char name[32];
    std::snprintf(name, sizeof(name), "%016llx.clbin", static_cast<unsigned long long>(h));
    path = dir + "/" + name;
    p = load_binary(device, path, options);
  }
  std::optional<CrossProcessBuildLock> build_lock;
  if (!p) {
    build_lock.emplace(cache_dir, h);
    if (build_lock->waited() && !path.empty()) p = load_binary(device, path, options);
  }
  if (p) {
    ++c.stats.disk_hits;
  } else {
    if (std::getenv("DRAWBRIDGE_VERBOSE_BUILD"))
      std::fprintf(stderr, "[drawbridge] compiling OpenCL program %s %s\n", label.c_str(), options.c_str());
    {
      BuildProgress progress(label, dir, to_disk);
      p = build_from_source(device, label, source, options);
    }
    ++c.stats.builds;
    if (!path.empty()) {
      make_dirs(dir);
      store_binary(device, p, path);
    }
  }
  Program& entry = c.programs[key];
  entry.handle = p;
  return entry;
}

}  // namespace

cl_program get_program(Device& device, const std::string& label, const std::string& source,
                       const std::string& options, ProgramSource from) {
  std::lock_guard<std::mutex> lock(cache().mutex);
  return program_locked(device, label, source, options, from).handle;
}

Kernel& get_kernel(Device& device, const std::string& label, const std::string& source,
                   const std::string& options, const std::string& kernel_name, ProgramSource from) {
  std::lock_guard<std::mutex> lock(cache().mutex);
  Program& program = program_locked(device, label, source, options, from);
  auto& slot = program.kernels[kernel_name];
  if (!slot) {
    auto k = std::make_unique<Kernel>();
    cl_int status = CL_SUCCESS;
    k->handle = clCreateKernel(program.handle, kernel_name.c_str(), &status);
    if (status != CL_SUCCESS)
      throw Error("kernel '" + kernel_name + "' not found in OpenCL program '" + label + "': " +
                      error_name(status),
                  status);
    DB_CL_CHECK(clGetKernelWorkGroupInfo(k->handle, device.id(), CL_KERNEL_WORK_GROUP_SIZE,
                                         sizeof(size_t), &k->max_work_group_size, nullptr));
    k->name = kernel_name;
    slot = std::move(k);
    ++cache().stats.kernels;
  }
  return *slot;
}

ProgramCacheStats program_cache_stats() {
  auto& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.stats;
}

}  // namespace drawbridge::runtime
