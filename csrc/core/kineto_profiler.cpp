// torch.profiler's view of the device: a Kineto child profiler. While a trace runs, every kernel
// and transfer we enqueue keeps its OpenCL event; at the end each becomes a device activity,
// linked to the ATen op that enqueued it (Kineto hands each op's correlation id to the session on
// the op's thread), so that key_averages() shows ocl time per op and the Chrome trace shows the
// commands on one row per device stream.
#include <kineto/libkineto.h>

#include <set>
#include <string>

#include "core/device_state.h"
#include "runtime/device.h"
#include "runtime/kernel_times.h"

namespace drawbridge::core {

namespace {

using libkineto::ActivityType;

// A device's rows in the trace viewer; Kineto numbers CUDA devices the same way.
constexpr int64_t kSortIndexBase = 0x1000000;

class OclProfilerSession final : public libkineto::IActivityProfilerSession {
 public:
  void start() override {
    buffer_->span.startTime = runtime::host_clock_ns();
    runtime::set_command_trace(true);
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    commands_ = runtime::take_command_trace();
    buffer_->span.endTime = runtime::host_clock_ns();
    if (const uint64_t dropped = runtime::dropped_commands())
      errors_.push_back("drawbridge: the trace kept the first " + std::to_string(commands_.size()) +
                        " ocl commands and dropped " + std::to_string(dropped));
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return errors_; }

  void processTrace(libkineto::ActivityLogger& logger) override { processTrace(logger, nullptr, 0, 0); }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_op,
                    int64_t, int64_t) override {
    for (const runtime::TracedCommand& command : commands_) {
      const auto [device, stream] = locate(command.queue);
      const bool kernel = command.kind == runtime::CommandKind::kernel;
      buffer_->emplace_activity(buffer_->span, kernel ? ActivityType::CONCURRENT_KERNEL : ActivityType::GPU_MEMCPY,
                                command.name);
      libkineto::GenericTraceActivity& activity = *buffer_->activities.back();
      activity.startTime = command.start_ns;
      activity.endTime = command.end_ns;
      activity.device = device;
      activity.resource = stream;
      activity.threadId = stream;
      activity.id = static_cast<int32_t>(command.correlation);
      if (command.correlation) {
        activity.flow.id = static_cast<uint32_t>(command.correlation);
        activity.flow.type = libkineto::kLinkAsyncCpuGpu;
        activity.flow.start = false;
        if (linked_op) activity.linked = linked_op(static_cast<int32_t>(command.correlation));
      }
      // addMetadata would format with fmt, whose compiled part torch does not export.
      activity.addMetadataQuoted("device", std::to_string(device));
      activity.addMetadataQuoted("stream", std::to_string(stream));
      activity.addMetadataQuoted("correlation", std::to_string(command.correlation));
      streams_.emplace(device, stream);
      activity.log(logger);
    }
    buffer_->span.opCount = static_cast<int>(commands_.size());
    buffer_->gpuOpCount = static_cast<int>(commands_.size());
    commands_.clear();
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    const int64_t index = streams_.empty() ? 0 : streams_.begin()->first;
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{
        index, kSortIndexBase + index, "ocl:" + std::to_string(index), device_label(index)});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    std::vector<libkineto::ResourceInfo> rows;
    for (const auto& [device, stream] : streams_)
      rows.push_back({stream, stream, device, "stream " + std::to_string(stream)});
    return rows;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override { return std::move(buffer_); }

  void pushCorrelationId(uint64_t id) override { runtime::push_correlation(id); }
  void popCorrelationId() override { runtime::pop_correlation(); }

 private:
  // The device and stream a queue belongs to (device -1 for one we do not know).
  static std::pair<int32_t, int32_t> locate(cl_command_queue queue) {
    for (c10::DeviceIndex d = 0; d < device_count(); ++d) {
      const int stream = runtime::device(d).stream_index_of(queue);
      if (stream >= 0) return {d, stream};
    }
    return {-1, 0};
  }

  static std::string device_label(int64_t index) {
    if (index < 0 || index >= device_count()) return "ocl";
    return "ocl:" + std::to_string(index) + " " + runtime::device(static_cast<int>(index)).properties().name;
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> buffer_ = [] {
    auto buffer = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer->span = libkineto::TraceSpan(0, 0, "ocl");
    buffer->gpuOpCount = 0;
    return buffer;
  }();
  std::vector<runtime::TracedCommand> commands_;
  std::set<std::pair<int32_t, int32_t>> streams_;  // (device, stream) rows seen
  std::vector<std::string> errors_;
};

class OclActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }
  const std::set<ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<ActivityType>& types,
                                                                 const libkineto::Config&) override {
    const bool wanted = types.count(ActivityType::CONCURRENT_KERNEL) || types.count(ActivityType::GPU_MEMCPY);
    if (!wanted || device_count() == 0) return nullptr;
    return std::make_unique<OclProfilerSession>();
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                 const std::set<ActivityType>& types,
                                                                 const libkineto::Config& config) override {
    return configure(types, config);
  }

 private:
  std::string name_ = "drawbridge";
  std::set<ActivityType> activities_{ActivityType::CONCURRENT_KERNEL, ActivityType::GPU_MEMCPY};
};

const bool registered = [] {
  libkineto::api().registerProfilerFactory([] { return std::make_unique<OclActivityProfiler>(); });
  return true;
}();

}  // namespace

}  // namespace drawbridge::core
