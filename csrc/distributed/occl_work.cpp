#include "distributed/occl_work.h"

#include <ATen/core/ivalue.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace drawbridge::distributed {

OcclWork::OcclWork(int rank, c10d::OpType type, c10::Device device, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      device_(device),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                      std::vector<c10::Device>{device})) {}

bool OcclWork::isCompleted() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!completed_) return false;
  }
  std::lock_guard<std::mutex> lock(event_mutex_);
  return !copied_back_ || copied_back_->query();
}

int OcclWork::sourceRank() const {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(completed_, "sourceRank() of an occl recv is known once it has completed; call wait() first");
  return source_rank_;
}

void OcclWork::synchronize() {
  std::lock_guard<std::mutex> lock(event_mutex_);
  if (!copied_back_) return;
  auto& guard = *c10::impl::getDeviceGuardImpl(device_.type());
  copied_back_->block(guard.getStream(device_));
}

void OcclWork::complete(std::exception_ptr error, std::optional<c10::Event> copied_back, int source_rank) {
  {
    std::lock_guard<std::mutex> lock(event_mutex_);
    copied_back_ = std::move(copied_back);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    source_rank_ = source_rank;
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

void OcclWork::wait_for_transport() {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return completed_; });
}

}  // namespace drawbridge::distributed
