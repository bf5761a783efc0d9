#include "distributed/occl_work.h"

#include <cstdlib>
#include <cstring>

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

#include "core/device_state.h"
#include "runtime/commands.h"

namespace drawbridge::distributed {

namespace {
bool blocking_wait() {
  static const bool on = [] {
    const char* env = std::getenv("DRAWBRIDGE_OCCL_BLOCKING_WAIT");
    return env && *env && std::strcmp(env, "0") != 0;
  }();
  return on;
}

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}
}  // namespace

OcclWork::OcclWork(int rank, c10d::OpType type, c10::Device device, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      device_(device),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                      std::vector<c10::Device>{device})) {
  if (!outputs_.empty()) gate_ = runtime::create_user_event(core::checked_device(device.index()).context());
}

OcclWork::~OcclWork() {
  if (!gate_) return;
  if (!gate_opened_) clSetUserEventStatus(gate_, CL_COMPLETE);  // a group torn down mid-flight
  clReleaseEvent(gate_);
}

bool OcclWork::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return completed_ && (!gate_ || runtime::event_complete(gate_));
}

int OcclWork::sourceRank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(completed_, "sourceRank() of an occl recv is known once it has completed; call wait() first");
  return source_rank_;
}

bool OcclWork::wait(std::chrono::milliseconds timeout) {
  if (gate_ && !blocking_wait()) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!completed_) {
      returned_early_ = true;
      lock.unlock();
      synchronize();
      return true;
    }
  }
  return c10d::Work::wait(timeout);  // over already (its error raised here), or blocking
}

void OcclWork::synchronize() {
  if (gate_) block(core::current_stream(device_.index()));
}

void OcclWork::block(const c10::Stream& stream) { runtime::enqueue_wait(core::queue_of(stream), gate_); }

void OcclWork::complete(std::exception_ptr error, cl_event copied_back, int source_rank) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    source_rank_ = source_rank;
    // Deferred before the gate opens: a read waiting on the gate must find the error.
    if (error && returned_early_)
      core::defer_error(device_.index(),
                        message_of(error) + " (occl " + c10d::opTypeToString(retrieveOpType()) +
                            " failed after wait() returned: raised at the next synchronization; its outputs were "
                            "not written, or in part. DRAWBRIDGE_OCCL_BLOCKING_WAIT=1 raises at wait())");
    if (gate_) {
      if (copied_back)
        runtime::complete_user_event_after(copied_back, gate_);
      else
        runtime::complete_user_event(gate_);
      gate_opened_ = true;
    }
  }
  finish(error);  // wakes Work::wait
  if (error) {
    future_->setError(error);
    return;
  }
  // The future records its own event on the thread's current stream: the copy-back stream, which
  // the caller made current.
  std::vector<at::Tensor> values(outputs_);
  future_->markCompleted(c10::IValue(values));
}

}  // namespace drawbridge::distributed
