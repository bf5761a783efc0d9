#include "kernels/fft.h"

#include <clocale>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#define VKFFT_BACKEND 3  // OpenCL
#include <vkFFT.h>

#include <c10/util/Exception.h>

#include "runtime/commands.h"
#include "runtime/kernel_times.h"

namespace drawbridge::kernels {

namespace {

// r2c plans serve fft_c2r too: VkFFT's inverse of an out-of-place R2C plan reads the complex
// buffer and writes the real one.
enum class Kind { c2c, r2c };

using PlanKey = std::tuple<cl_device_id, Kind, size_t, size_t, bool>;

struct Plan {
  VkFFTApplication app{};
  std::mutex launching;  // VkFFT sets its kernels' arguments, then enqueues them
};

// The buffers a plan is built with are only needed for its set-up: launches name their own.
Plan& plan_for(runtime::Device& device, Kind kind, size_t n, size_t batch, bool fp64, FftOperand data,
               FftOperand real) {
  static std::mutex mutex;
  static std::map<PlanKey, std::unique_ptr<Plan>> plans;  // kept until exit, as compiled kernels are
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = plans[PlanKey{device.id(), kind, n, batch, fp64}];
  if (slot) return *slot;
  auto plan = std::make_unique<Plan>();
  cl_device_id id = device.id();
  cl_context context = device.context();
  const size_t complex_len = kind == Kind::r2c ? n / 2 + 1 : n;
  uint64_t bytes = batch * complex_len * 2 * (fp64 ? 8 : 4), real_bytes = batch * n * (fp64 ? 8 : 4);
  VkFFTConfiguration config{};
  config.FFTdim = 1;
  config.size[0] = n;
  config.numberBatches = batch;
  config.device = &id;
  config.context = &context;
  config.buffer = &data.buffer;
  config.bufferSize = &bytes;
  config.doublePrecision = fp64;
  config.specifyOffsetsAtLaunch = 1;
  config.useLUT = 1;  // tabulated twiddles: the device's sin and cos lose digits at large n
  for (auto& stride : config.bufferStride) stride = complex_len;
  if (kind == Kind::r2c) {
    config.performR2C = 1;
    config.isInputFormatted = 1;  // the reals in their own dense buffer, not padded in place
    config.inverseReturnToInputBuffer = 1;
    config.inputBuffer = &real.buffer;
    config.inputBufferSize = &real_bytes;
    for (auto& stride : config.inputBufferStride) stride = n;
  }
  // VkFFT generates its kernels under the "C" locale and means to restore the caller's, but
  // keeps setlocale's static buffer, which the switch overwrites: the process would stay in "C"
  // (and Python would read files as ASCII). Keep our own copy and restore it.
  const std::string locale = setlocale(LC_ALL, nullptr);
  const VkFFTResult status = initializeVkFFT(&plan->app, config);
  setlocale(LC_ALL, locale.c_str());
  TORCH_CHECK(status == VKFFT_SUCCESS, "VkFFT could not build a plan for length ", n, " x ", batch,
              " (VkFFTResult ", static_cast<int>(status), ")");
  slot = std::move(plan);
  return *slot;
}

void run(runtime::Device& device, cl_command_queue q, c10::ScalarType real_type, Kind kind, size_t n,
         size_t batch, FftOperand data, FftOperand real, bool inverse) {
  TORCH_INTERNAL_ASSERT(fft_supports(real_type, device), "fft: unsupported dtype ", real_type);
  if (n == 0 || batch == 0) return;
  runtime::OpScope scope("fft (VkFFT)");
  Plan& plan = plan_for(device, kind, n, batch, real_type == c10::kDouble, data, real);
  VkFFTLaunchParams params{};
  params.commandQueue = &q;
  params.buffer = &data.buffer;
  params.bufferOffset = data.offset;
  if (kind == Kind::r2c) {
    params.inputBuffer = &real.buffer;
    params.inputBufferOffset = real.offset;
  }
  runtime::note_launch();  // one transform, however many kernels VkFFT splits it into
  cl_event started = runtime::kernel_timing() ? runtime::enqueue_marker(q) : nullptr;
  VkFFTResult status;
  {
    std::lock_guard<std::mutex> lock(plan.launching);
    status = VkFFTAppend(&plan.app, inverse ? 1 : -1, &params);
  }
  if (started) runtime::record_kernel_time("VkFFT", runtime::enqueue_marker(q), started);
  TORCH_CHECK(status == VKFFT_SUCCESS, "VkFFT failed to launch a transform of length ", n, " x ", batch,
              " (VkFFTResult ", static_cast<int>(status), ")");
  runtime::after_enqueue(q);
}

}  // namespace

bool fft_supports(c10::ScalarType real_type, const runtime::Device& device) {
  return real_type == c10::kFloat || (real_type == c10::kDouble && device.properties().fp64);
}

void fft_c2c(runtime::Device& device, cl_command_queue q, c10::ScalarType real_type, size_t n, size_t batch,
             FftOperand data, bool inverse) {
  run(device, q, real_type, Kind::c2c, n, batch, data, {}, inverse);
}

void fft_r2c(runtime::Device& device, cl_command_queue q, c10::ScalarType real_type, size_t n, size_t batch,
             FftOperand real, FftOperand complex) {
  run(device, q, real_type, Kind::r2c, n, batch, complex, real, false);
}

void fft_c2r(runtime::Device& device, cl_command_queue q, c10::ScalarType real_type, size_t n, size_t batch,
             FftOperand complex, FftOperand real) {
  run(device, q, real_type, Kind::r2c, n, batch, complex, real, true);
}

}  // namespace drawbridge::kernels
