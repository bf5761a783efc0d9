// The Work of one occl collective: done when Gloo's transport has finished and the copies back
// to the device are queued. wait() raises the transport's error (as Gloo's works do) and makes
// the caller's current stream wait for the copies back; it never waits for device work on the
// host. The future is device-aware and completes with the output tensors, which DDP's reducer
// and comm hooks read.
#pragma once

#include <optional>

#include <c10/core/Event.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace drawbridge::distributed {

class OcclWork final : public c10d::Work {
 public:
  OcclWork(int rank, c10d::OpType type, c10::Device device, std::vector<at::Tensor> outputs);

  bool isCompleted() override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override { return outputs_; }
  // Makes the current stream wait for the copies back (Work::wait calls it once completed).
  void synchronize() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // Called by the backend's completion thread once the transport is over: `copied_back` marks the
  // end of the copies to the device on the copy-back stream (unset when the transport failed).
  void complete(std::exception_ptr error, std::optional<c10::Event> copied_back, int source_rank);
  // Blocks the host until complete() has run; the transport's error is not raised here.
  void wait_for_transport();
  const std::vector<at::Tensor>& outputs() const { return outputs_; }

 private:
  c10::Device device_;
  std::vector<at::Tensor> outputs_;
  // Its own lock: Work::wait holds mutex_ while it calls synchronize().
  std::mutex event_mutex_;
  std::optional<c10::Event> copied_back_;
  int source_rank_ = -1;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace drawbridge::distributed
