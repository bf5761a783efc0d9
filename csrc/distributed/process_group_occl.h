// ProcessGroupOCCL: torch.distributed's backend for ocl tensors ("occl"). Gloo is the transport
// (a ProcessGroupGloo of the same group, made by the Python registration); this class stages
// device tensors through pinned host memory on streams of its own, so a collective overlaps the
// caller's compute:
//
//   caller thread   the staging stream waits for the current stream, copies the inputs to pinned
//                   buffers (device -> host) and records `staged`; the Work is returned at once.
//   poster thread   waits for `staged` on the host, then starts Gloo's collective (which runs on
//                   Gloo's own threads). It never waits for a transport, so a recv posted before
//                   a send cannot hold the send back.
//   completer       waits for each transport in order, queues the copies back (host -> device)
//                   and the device-side steps Gloo lacks (AVG's division) on the copy-back
//                   stream, and completes the Work, its gate (occl_work.h) and its future.
//
// wait() does not block the host: the caller's stream waits on the work's gate. A collective
// whose inputs an earlier one still writes orders its staging on that one's gate.
//
// A large broadcast / all-reduce / reduce of one tensor goes in pieces of
// DRAWBRIDGE_OCCL_CHUNK_BYTES (4 MiB): the poster starts a piece's transport as soon as that piece
// is staged and the completer copies one back while the next is in transit.
//
// Reductions Gloo lacks run on the device: PREMUL_SUM multiplies before staging, AVG divides
// after the copy back. CPU tensors go to Gloo directly (occl also serves a group's cpu side).
//
// Before each collective the poster compares a small signature (collective, dtype, element
// count) across the ranks, with one Gloo all-gather of a few integers: Gloo aborts the process
// when ranks pass buffers of different sizes, and this turns that into an error on every rank.
// DRAWBRIDGE_OCCL_CHECK=0 leaves it out (docs/env.md).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "distributed/occl_work.h"

namespace drawbridge::distributed {

// What every rank must agree on for a collective: dtype, element count (-1 where it may differ,
// as all_to_all's splits do) and tensor count. Point-to-point ops have none.
struct CollectiveSignature {
  int64_t dtype, numel, count;
};

class ProcessGroupOCCL final : public c10d::Backend {
 public:
  ProcessGroupOCCL(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size, std::chrono::milliseconds timeout);
  ~ProcessGroupOCCL() override;

  const std::string getBackendName() const override { return "occl"; }
  void setTimeout(std::chrono::milliseconds timeout) override;
  uint64_t getSequenceNumberForGroup() override { return gloo_->getSequenceNumberForGroup(); }
  void setSequenceNumberForGroup() override { gloo_->setSequenceNumberForGroup(); }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  // Runs Gloo's collective on the staged host tensors: the inputs' pinned copies, and host
  // buffers shaped like the outputs (the inputs' own buffers where the collective is in place).
  using Transport = std::function<c10::intrusive_ptr<c10d::Work>(c10d::Backend& gloo, std::vector<at::Tensor>& in,
                                                                 std::vector<at::Tensor>& out)>;
  // A device-side step on the outputs after their copy back, on the copy-back stream.
  using Finish = std::function<void(std::vector<at::Tensor>& outputs)>;
  using Signature = CollectiveSignature;
  struct Piece;
  struct Job;
  struct Streams {
    c10::Stream staging, copy_back;
  };

  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::optional<Signature> signature,
                                         std::vector<at::Tensor> inputs, std::vector<at::Tensor> outputs,
                                         bool in_place, Transport transport, Finish finish = {});
  // True when every tensor is on the CPU: such a collective goes to Gloo from the caller's thread,
  // once the collectives enqueued before it have reached Gloo (Gloo matches collectives across
  // ranks by the order of the calls).
  bool on_cpu(std::initializer_list<const std::vector<at::Tensor>*> lists);
  // Raises on every rank when the ranks' signatures for this collective differ.
  void check_signatures(c10d::OpType type, const Signature& mine);
  Streams& streams(c10::DeviceIndex index);
  // Makes the staging stream wait for in-flight collectives whose outputs the inputs share memory
  // with (the copy back of `allreduce(x)` must land before a second collective reads x).
  void order_after_pending_writes(const std::vector<at::Tensor>& inputs, const c10::Stream& staging);
  void post_loop();
  void complete_loop();

  c10::intrusive_ptr<c10d::Backend> gloo_;
  std::chrono::milliseconds timeout_;
  const bool check_collectives_;
  const int64_t chunk_bytes_;  // DRAWBRIDGE_OCCL_CHUNK_BYTES

  std::mutex mutex_;
  std::condition_variable posted_cv_, completed_cv_, all_posted_cv_;
  std::deque<std::shared_ptr<Job>> to_post_, to_complete_;
  std::deque<c10::intrusive_ptr<OcclWork>> in_flight_;  // works with device outputs, oldest first
  std::map<c10::DeviceIndex, Streams> streams_;
  uint64_t enqueued_ = 0, posted_ = 0;  // jobs queued for the poster, and those it has handed to Gloo
  bool stopping_ = false, poster_done_ = false;
  std::thread poster_, completer_;
};

}  // namespace drawbridge::distributed
