#include "core/fallback.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include "core/fallback_report.h"

namespace drawbridge::core {

namespace {

FallbackMode mode_from_env() {
  const char* env = std::getenv("DRAWBRIDGE_FALLBACK");
  if (!env || !*env || std::strcmp(env, "warn") == 0) return FallbackMode::Warn;
  if (std::strcmp(env, "error") == 0) return FallbackMode::Error;
  if (std::strcmp(env, "silent") == 0) return FallbackMode::Silent;
  TORCH_WARN("DRAWBRIDGE_FALLBACK='", env, "' is not one of warn, error, silent; using warn");
  return FallbackMode::Warn;
}

std::atomic<FallbackMode>& mode() {
  static std::atomic<FallbackMode> m{mode_from_env()};
  return m;
}

// Never destroyed: the autograd engine's threads may run a fallback while the process exits.
struct Counts {
  std::mutex mutex;
  std::map<std::string, int64_t> by_op;
  std::map<std::string, double> seconds;
  std::set<std::string> warned;
};
Counts& counts() {
  static Counts* c = new Counts();
  return *c;
}

}  // namespace

void note_fallback(const std::string& full) {
  FallbackMode m = mode().load();
  TORCH_CHECK_NOT_IMPLEMENTED(m != FallbackMode::Error, "The operator '", full,
                              "' has no native ocl kernel and DRAWBRIDGE_FALLBACK=error forbids running it "
                              "on the CPU.");
  bool first = false;
  {
    Counts& c = counts();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.by_op[full]++;
    first = c.warned.insert(full).second;
  }
  if (first && m == FallbackMode::Warn)
    TORCH_WARN("The operator '", full,
               "' has no native ocl kernel yet; it runs on the CPU, which costs two copies and a "
               "synchronization. DRAWBRIDGE_FALLBACK=silent hides this warning, =error forbids the fallback.");
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& name = op.schema().operator_name();
  const std::string full = name.overload_name.empty() ? name.name : name.name + "." + name.overload_name;
  note_fallback(full);
  const auto start = std::chrono::steady_clock::now();
  at::native::cpu_fallback(op, stack);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Counts& c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.seconds[full] += seconds;
}

const c10::OperatorHandle& find_aten_op(const std::string& registered_name) {
  static auto* mutex = new std::mutex();  // never destroyed, like the counts
  static auto* found_ops = new std::map<std::string, c10::OperatorHandle>();
  std::lock_guard<std::mutex> lock(*mutex);
  auto& found = *found_ops;
  auto it = found.find(registered_name);
  if (it == found.end()) {
    const size_t dot = registered_name.find('.');
    const std::string name = "aten::" + registered_name.substr(0, dot);
    const std::string overload = dot == std::string::npos ? "" : registered_name.substr(dot + 1);
    it = found.emplace(registered_name, c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), overload.c_str()))
             .first;
  }
  return it->second;
}

FallbackMode fallback_mode() { return mode().load(); }
void set_fallback_mode(FallbackMode m) { mode().store(m); }

std::map<std::string, int64_t> fallback_counts() {
  Counts& c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.by_op;
}

std::map<std::string, FallbackUse> fallback_uses() {
  Counts& c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  std::map<std::string, FallbackUse> uses;
  for (const auto& [op, calls] : c.by_op) uses[op] = {calls, c.seconds.count(op) ? c.seconds.at(op) : 0.0};
  return uses;
}

void reset_fallback_counts() {
  Counts& c = counts();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.by_op.clear();
  c.seconds.clear();
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

}  // namespace drawbridge::core
