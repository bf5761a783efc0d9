#include "kernels/fft.h"

#include <clocale>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#define VKFFT_BACKEND 3  // OpenCL
#include <vkFFT.h>

#include <c10/util/Exception.h>

#include "runtime/commands.h"
#include "runtime/error.h"
#include "runtime/kernel_times.h"

namespace drawbridge::kernels {

namespace {

// r2c plans serve fft_c2r too: VkFFT's inverse of an out-of-place R2C plan reads the complex
// buffer and writes the real one.
enum class Kind { c2c, r2c };

// Per queue: a plan that needs scratch space (long or prime lengths) owns one temporary buffer,
// which transforms on two streams at once must not share. Per direction: VkFFT compiles a program
// for each direction it plans, and a process often runs one of them only (a test run built 87
// programs it never launched).
using PlanKey = std::tuple<cl_command_queue, Kind, size_t, size_t, bool, bool>;

// VkFFT keeps pointers to the device, context and buffer sizes it was configured with (and reads
// the sizes at every launch), so they live here, beside the application.
struct Plan {
  VkFFTApplication app{};
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  uint64_t bytes = 0, real_bytes = 0;
  std::mutex launching;  // VkFFT sets its kernels' arguments, then enqueues them
};

struct Plans {
  std::mutex mutex;
  std::map<PlanKey, std::unique_ptr<Plan>> by_key;  // kept until exit, as compiled kernels are
};

Plans& plans() {
  static Plans* p = new Plans();
  return *p;
}

// The buffers a plan is built with are only needed for its set-up: launches name their own.
Plan& plan_for(runtime::Device& device, cl_command_queue q, Kind kind, size_t n, size_t batch, bool fp64,
               bool inverse, FftOperand data, FftOperand real) {
  std::lock_guard<std::mutex> lock(plans().mutex);
  auto& slot = plans().by_key[PlanKey{q, kind, n, batch, fp64, inverse}];
  if (slot) return *slot;
  auto plan = std::make_unique<Plan>();
  plan->device = device.id();
  plan->context = device.context();
  const size_t complex_len = kind == Kind::r2c ? n / 2 + 1 : n;
  plan->bytes = batch * complex_len * 2 * (fp64 ? 8 : 4);
  plan->real_bytes = batch * n * (fp64 ? 8 : 4);
  VkFFTConfiguration config{};
  config.FFTdim = 1;
  config.size[0] = n;
  config.numberBatches = batch;
  config.device = &plan->device;
  config.context = &plan->context;
  config.buffer = &data.buffer;
  config.bufferSize = &plan->bytes;
  config.doublePrecision = fp64;
  config.useLUT = 1;  // tabulated twiddles: the device's sin and cos lose digits at large n
  config.makeForwardPlanOnly = !inverse;
  config.makeInversePlanOnly = inverse;
  for (auto& stride : config.bufferStride) stride = complex_len;
  if (kind == Kind::r2c) {
    config.performR2C = 1;
    config.isInputFormatted = 1;  // the reals in their own dense buffer, not padded in place
    config.inverseReturnToInputBuffer = 1;
    config.inputBuffer = &real.buffer;
    config.inputBufferSize = &plan->real_bytes;
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

// An operand as a sub-buffer that starts where it starts: VkFFT's multi-pass plans (long and
// prime lengths) apply a launch's buffer offset to their own scratch buffer too and write past
// its end, so every launch names buffers at offset 0. Released once enqueued (OpenCL keeps it
// alive for the commands that use it).
class OperandBuffer {
 public:
  OperandBuffer(const runtime::Device& device, FftOperand operand, size_t bytes) {
    TORCH_INTERNAL_ASSERT(operand.offset % device.properties().base_address_align == 0,
                          "fft: operand at an unaligned offset ", operand.offset);
    cl_buffer_region region{operand.offset, bytes};
    cl_int status = CL_SUCCESS;
    mem_ = clCreateSubBuffer(operand.buffer, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &status);
    DB_CL_CHECK(status);
  }
  ~OperandBuffer() { clReleaseMemObject(mem_); }
  OperandBuffer(const OperandBuffer&) = delete;
  OperandBuffer& operator=(const OperandBuffer&) = delete;
  cl_mem* get() { return &mem_; }

 private:
  cl_mem mem_ = nullptr;
};

void run(runtime::Device& device, cl_command_queue q, c10::ScalarType real_type, Kind kind, size_t n,
         size_t batch, FftOperand data, FftOperand real, bool inverse) {
  TORCH_INTERNAL_ASSERT(fft_supports(real_type, device), "fft: unsupported dtype ", real_type);
  TORCH_INTERNAL_ASSERT(n <= kFftMaxLength, "fft: length ", n, " is past VkFFT's single-pass plans");
  if (n == 0 || batch == 0) return;
  runtime::OpScope scope("fft (VkFFT)");
  Plan& plan = plan_for(device, q, kind, n, batch, real_type == c10::kDouble, inverse, data, real);
  OperandBuffer complex_part(device, data, plan.bytes);
  std::optional<OperandBuffer> real_part;
  VkFFTLaunchParams params{};
  params.commandQueue = &q;
  params.buffer = complex_part.get();
  if (kind == Kind::r2c) {
    real_part.emplace(device, real, plan.real_bytes);
    params.inputBuffer = real_part->get();
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

size_t fft_plan_count() {
  std::lock_guard<std::mutex> lock(plans().mutex);
  return plans().by_key.size();
}

int64_t fft_plan_batch(int64_t n, int64_t batch) {
  int64_t rounded = n <= kFftShortLength ? 4 : 1;
  while (rounded < batch) rounded *= 4;
  return rounded * n <= kFftPaddedElements ? rounded : batch;
}

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
