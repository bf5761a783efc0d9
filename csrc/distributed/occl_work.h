// The Work of one occl collective. Where the collective writes device tensors it has a gate: a
// user event completed once the copies back to the device have run. wait() makes the caller's
// current stream wait on the gate and returns without blocking the host, as NCCL's works do;
// the transport goes on behind it. A transport that fails after wait() returned leaves the
// outputs unwritten and its error is raised at the device's next synchronization (as a
// device-side assert is); DRAWBRIDGE_OCCL_BLOCKING_WAIT=1 makes wait() block and raise instead.
// Works without device outputs (send, barrier, a reduce's non-root ranks) block in wait(), as
// Gloo's do. The future is device-aware and completes with the output tensors, which DDP's
// reducer and comm hooks read.
#pragma once

#include <CL/cl.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace drawbridge::distributed {

class OcclWork final : public c10d::Work {
 public:
  OcclWork(int rank, c10d::OpType type, c10::Device device, std::vector<at::Tensor> outputs);
  ~OcclWork() override;

  bool isCompleted() override;
  int sourceRank() const override;
  std::vector<at::Tensor> result() override { return outputs_; }
  bool wait(std::chrono::milliseconds timeout) override;
  // Makes the current stream wait for the copies back (Work::wait calls it once completed).
  void synchronize() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  // Called by the backend's completion thread once the transport is over: `copied_back` marks
  // the end of the copies to the device (null when the transport failed and nothing is copied).
  void complete(std::exception_ptr error, cl_event copied_back, int source_rank);
  // Makes `stream` wait until this work's outputs are written (a later collective reading them).
  void block(const c10::Stream& stream);
  const std::vector<at::Tensor>& outputs() const { return outputs_; }

 private:
  c10::Device device_;
  std::vector<at::Tensor> outputs_;
  cl_event gate_ = nullptr;  // null without device outputs
  bool gate_opened_ = false;  // guarded by mutex_
  bool returned_early_ = false;  // a wait() returned before the transport was over
  int source_rank_ = -1;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace drawbridge::distributed
