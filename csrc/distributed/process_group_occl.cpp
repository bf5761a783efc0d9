#include "distributed/process_group_occl.h"

#include <ATen/ATen.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/irange.h>

#include "core/device_state.h"
#include "runtime/commands.h"

namespace drawbridge::distributed {

// One transport of a collective: large in-place collectives go in pieces (chunks of one
// tensor), so that staging one piece overlaps the transfer of the one before.
struct ProcessGroupOCCL::Piece {
  std::vector<at::Tensor> host_inputs, host_outputs, device_outputs;
  std::optional<c10::Event> staged;  // its copies to the host are done
  c10::intrusive_ptr<c10d::Work> gloo_work;
};

struct ProcessGroupOCCL::Job {
  c10::intrusive_ptr<OcclWork> work;
  std::optional<Signature> signature;
  c10::DeviceIndex device;
  std::vector<Piece> pieces;
  Transport transport;
  Finish finish;
  std::exception_ptr error;
};

namespace {

using Tensors = std::vector<at::Tensor>;

bool all_on_cpu(std::initializer_list<const Tensors*> lists) {
  bool any = false;
  for (const Tensors* list : lists)
    for (const auto& t : *list) {
      if (!t.is_cpu()) return false;
      any = true;
    }
  return any;
}

// The one ocl device of a collective's tensors; a clear error for CPU or mixed tensors (occl
// serves CPU tensors only when all of a collective's tensors are on the CPU).
c10::DeviceIndex device_of(std::initializer_list<const Tensors*> lists, const char* op) {
  std::optional<c10::DeviceIndex> index;
  for (const Tensors* list : lists)
    for (const auto& t : *list) {
      TORCH_CHECK(t.device().type() == core::kOcl, "occl ", op,
                  ": expected tensors on ocl (or all on the cpu), got one on ", t.device());
      TORCH_CHECK(!index || *index == t.device().index(), "occl ", op,
                  ": all tensors must be on one ocl device, got ocl:", *index, " and ", t.device());
      TORCH_CHECK(t.layout() == at::kStrided, "occl ", op, ": only dense tensors are supported, got ", t.layout());
      index = t.device().index();
    }
  return index ? *index : core::current_device();
}

Tensors flatten(const std::vector<Tensors>& lists) {
  Tensors flat;
  for (const auto& list : lists) flat.insert(flat.end(), list.begin(), list.end());
  return flat;
}

// Splits `flat` back into lists of the sizes `like` has.
std::vector<Tensors> regroup(const Tensors& flat, const std::vector<Tensors>& like) {
  std::vector<Tensors> lists;
  size_t next = 0;
  for (const auto& list : like) {
    lists.emplace_back(flat.begin() + next, flat.begin() + next + list.size());
    next += list.size();
  }
  return lists;
}

// The options as Gloo runs them: AVG and PREMUL_SUM become SUM (the device does the rest).
template <typename Options>
Options for_gloo(Options opts) {
  if (opts.reduceOp == c10d::ReduceOp::AVG || opts.reduceOp == c10d::ReduceOp::PREMUL_SUM)
    opts.reduceOp = c10d::ReduceOp(c10d::ReduceOp::SUM);
  return opts;
}

// PREMUL_SUM's factor is applied on the device, on the caller's stream, before staging.
Tensors premultiplied(const Tensors& inputs, const c10d::ReduceOp& op) {
  if (op != c10d::ReduceOp::PREMUL_SUM) return inputs;
  auto* factor = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(factor, "occl: PREMUL_SUM without a factor");
  Tensors scaled;
  for (const auto& t : inputs)
    scaled.push_back(factor->tensor_factor.defined() ? t * factor->tensor_factor : t * factor->double_factor);
  return scaled;
}

// AVG is Gloo's SUM divided by the group size on the device (integers divide as C does).
std::function<void(Tensors&)> averaged(const c10d::ReduceOp& op, int size) {
  if (op != c10d::ReduceOp::AVG) return {};
  return [size](Tensors& outputs) {
    for (auto& t : outputs) {
      if (at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()))
        t.div_(size);
      else
        t.div_(size, "trunc");
    }
  };
}

at::Tensor pinned_like(const at::Tensor& t) {
  return at::empty(t.sizes(), at::TensorOptions().dtype(t.dtype()).pinned_memory(true));
}

// The signature of the tensors every rank passes alike; `sized` false where counts may differ.
CollectiveSignature signature_of(const Tensors& tensors, bool sized = true) {
  int64_t numel = 0;
  for (const auto& t : tensors) numel += t.numel();
  const auto dtype = tensors.empty() ? c10::ScalarType::Undefined : tensors.front().scalar_type();
  return {static_cast<int64_t>(dtype), sized ? numel : -1, static_cast<int64_t>(tensors.size())};
}

bool check_collectives_from_env() {
  const char* env = std::getenv("DRAWBRIDGE_OCCL_CHECK");
  return !(env && std::string(env) == "0");
}

int64_t chunk_bytes_from_env() {
  const char* env = std::getenv("DRAWBRIDGE_OCCL_CHUNK_BYTES");
  return env ? std::max<int64_t>(0, std::atoll(env)) : int64_t{4} << 20;
}

// The pieces of an in-place collective of one contiguous tensor (its input may be a scaled
// copy): chunks of about `chunk_bytes`, or the whole where chunking is off or would not pay.
std::vector<std::pair<Tensors, Tensors>> split_in_pieces(const Tensors& inputs, const Tensors& outputs,
                                                         bool in_place, int64_t chunk_bytes) {
  const bool splittable = in_place && chunk_bytes > 0 && inputs.size() == 1 && outputs.size() <= 1 &&
                          inputs[0].is_contiguous() && (outputs.empty() || outputs[0].is_contiguous()) &&
                          inputs[0].nbytes() >= 2 * static_cast<size_t>(chunk_bytes);
  if (!splittable) return {{inputs, outputs}};
  const int64_t numel = inputs[0].numel();
  const int64_t step = std::max<int64_t>(1, chunk_bytes / static_cast<int64_t>(inputs[0].element_size()));
  std::vector<std::pair<Tensors, Tensors>> pieces;
  for (int64_t start = 0; start < numel; start += step) {
    const int64_t length = std::min(step, numel - start);
    Tensors in{inputs[0].view(-1).narrow(0, start, length)}, out;
    if (!outputs.empty()) out.push_back(outputs[0].view(-1).narrow(0, start, length));
    pieces.emplace_back(std::move(in), std::move(out));
  }
  return pieces;
}

std::string describe(c10d::OpType type, int64_t dtype, int64_t numel, int64_t count) {
  std::string d = c10d::opTypeToString(type);
  if (count > 0) {
    d += std::string(" of ") + std::to_string(count) + " " + c10::toString(static_cast<c10::ScalarType>(dtype)) +
         " tensor(s)";
    if (numel >= 0) d += " with " + std::to_string(numel) + " elements";
  }
  return d;
}

bool same_memory(const at::Tensor& a, const at::Tensor& b) {
  return a.has_storage() && b.has_storage() && a.storage().is_alias_of(b.storage());
}

}  // namespace

ProcessGroupOCCL::ProcessGroupOCCL(c10::intrusive_ptr<c10d::Backend> gloo, int rank, int size,
                                   std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size),
      gloo_(std::move(gloo)),
      timeout_(timeout),
      check_collectives_(check_collectives_from_env()),
      chunk_bytes_(chunk_bytes_from_env()) {
  TORCH_CHECK(gloo_ && gloo_->getRank() == rank && gloo_->getSize() == size,
              "occl: the Gloo backend must belong to the same group (rank ", rank, " of ", size, ")");
  poster_ = std::thread([this] { post_loop(); });
  completer_ = std::thread([this] { complete_loop(); });
}

ProcessGroupOCCL::~ProcessGroupOCCL() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  posted_cv_.notify_all();
  completed_cv_.notify_all();
  poster_.join();
  completer_.join();
}

void ProcessGroupOCCL::setTimeout(std::chrono::milliseconds timeout) {
  timeout_ = timeout;
  gloo_->setTimeout(timeout);
}

ProcessGroupOCCL::Streams& ProcessGroupOCCL::streams(c10::DeviceIndex index) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = streams_.find(index);
  if (it == streams_.end())
    it = streams_.emplace(index, Streams{core::stream_from_pool(index), core::stream_from_pool(index)}).first;
  return it->second;
}

void ProcessGroupOCCL::order_after_pending_writes(const Tensors& inputs, const c10::Stream& staging) {
  std::vector<c10::intrusive_ptr<OcclWork>> writers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!in_flight_.empty() && in_flight_.front()->isCompleted()) in_flight_.pop_front();
    for (const auto& work : in_flight_)
      for (const auto& out : work->outputs())
        for (const auto& in : inputs)
          if (same_memory(in, out)) writers.push_back(work);
  }
  for (auto& work : writers) work->block(staging);  // no host wait: the device waits for the gate
}

bool ProcessGroupOCCL::on_cpu(std::initializer_list<const Tensors*> lists) {
  if (!all_on_cpu(lists)) return false;
  std::unique_lock<std::mutex> lock(mutex_);
  all_posted_cv_.wait(lock, [this] { return posted_ == enqueued_ || poster_done_; });
  return true;
}

void ProcessGroupOCCL::check_signatures(c10d::OpType type, const Signature& mine) {
  constexpr int kFields = 4;
  at::Tensor own = at::tensor({static_cast<int64_t>(type), mine.dtype, mine.numel, mine.count}, at::kLong);
  at::Tensor all = at::empty({getSize() * kFields}, at::kLong);
  gloo_->_allgather_base(all, own, c10d::AllgatherOptions())->wait(timeout_);
  const int64_t* rows = all.const_data_ptr<int64_t>();
  for (const auto r : c10::irange(getSize())) {
    const int64_t* row = rows + r * kFields;
    if (std::equal(row, row + kFields, own.const_data_ptr<int64_t>())) continue;
    TORCH_CHECK(false, "occl: the ranks called different collectives: rank ", getRank(), " called ",
                describe(type, mine.dtype, mine.numel, mine.count), ", rank ", r, " called ",
                describe(static_cast<c10d::OpType>(row[0]), row[1], row[2], row[3]),
                " (every rank must make the same calls with the same shapes and dtypes)");
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::enqueue(c10d::OpType type, std::optional<Signature> signature,
                                                         Tensors inputs, Tensors outputs, bool in_place,
                                                         Transport transport, Finish finish) {
  const c10::DeviceIndex index = device_of({&inputs, &outputs}, c10d::opTypeToString(type).c_str());
  auto job = std::make_shared<Job>();
  if (check_collectives_) job->signature = signature;
  job->device = index;
  job->work = c10::make_intrusive<OcclWork>(getRank(), type, c10::Device(core::kOcl, index), outputs);
  job->transport = std::move(transport);
  job->finish = std::move(finish);

  Streams& s = streams(index);
  c10::Event compute_done(core::kOcl);
  compute_done.record(core::current_stream(index));
  c10::StreamGuard guard(s.staging);
  compute_done.block(s.staging);
  order_after_pending_writes(inputs, s.staging);
  for (auto& [piece_inputs, piece_outputs] : split_in_pieces(inputs, outputs, in_place, chunk_bytes_)) {
    Piece& piece = job->pieces.emplace_back();
    for (const auto& t : piece_inputs) {
      piece.host_inputs.push_back(pinned_like(t));
      piece.host_inputs.back().copy_(t, /*non_blocking=*/true);
    }
    piece.staged.emplace(core::kOcl);
    piece.staged->record(s.staging);
    if (in_place)
      piece.host_outputs = piece.host_inputs;
    else
      for (const auto& t : piece_outputs) piece.host_outputs.push_back(pinned_like(t));
    piece.device_outputs = std::move(piece_outputs);
  }

  auto work = job->work;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!outputs.empty()) in_flight_.push_back(work);
    to_post_.push_back(std::move(job));
    ++enqueued_;
  }
  posted_cv_.notify_one();
  return work;
}

void ProcessGroupOCCL::post_loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      posted_cv_.wait(lock, [this] { return stopping_ || !to_post_.empty(); });
      if (to_post_.empty()) {
        poster_done_ = true;  // the completer finishes what is left, then stops
        completed_cv_.notify_all();
        all_posted_cv_.notify_all();
        return;
      }
      job = std::move(to_post_.front());
      to_post_.pop_front();
    }
    try {
      // The ranks compare signatures while the device copies the inputs out.
      if (job->signature) check_signatures(job->work->retrieveOpType(), *job->signature);
      for (auto& piece : job->pieces) {
        piece.staged->synchronize();
        piece.gloo_work = job->transport(*gloo_, piece.host_inputs, piece.host_outputs);
      }
    } catch (...) {
      job->error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      to_complete_.push_back(std::move(job));
      ++posted_;
    }
    completed_cv_.notify_one();
    all_posted_cv_.notify_all();  // a CPU collective may wait for the posts before it
  }
}

void ProcessGroupOCCL::complete_loop() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      completed_cv_.wait(lock, [this] { return !to_complete_.empty() || poster_done_; });
      if (to_complete_.empty()) return;
      job = std::move(to_complete_.front());
      to_complete_.pop_front();
    }
    int source_rank = -1;
    // The device stays untouched when a transport failed: its piece is not copied back (pieces
    // copied back before it hold their final values).
    c10::StreamGuard guard(streams(job->device).copy_back);
    at::NoGradGuard no_grad;  // an output may be a leaf that requires grad (DTensor's scatter)
    for (auto& piece : job->pieces) {
      if (job->error) break;
      try {
        piece.gloo_work->wait(timeout_);
        if (job->work->retrieveOpType() == c10d::OpType::RECVANYSOURCE) source_rank = piece.gloo_work->sourceRank();
        for (const auto i : c10::irange(piece.device_outputs.size())) {
          auto& out = piece.device_outputs[i];
          out.copy_(piece.host_outputs[i], /*non_blocking=*/true);
          out.record_stream(guard.current_stream());  // freed by the caller before the copy has run
        }
        if (job->finish) job->finish(piece.device_outputs);
      } catch (...) {
        job->error = std::current_exception();
      }
    }
    cl_event copied_back = job->error ? nullptr : runtime::enqueue_marker(core::queue_of(guard.current_stream()));
    job->work->complete(job->error, copied_back, source_rank);
    if (copied_back) clReleaseEvent(copied_back);
  }
}

// The collectives. Each stages its inputs and outputs and names Gloo's collective on the host
// copies; the CPU path hands CPU tensors to Gloo as they are.

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::broadcast(Tensors& tensors, const c10d::BroadcastOptions& opts) {
  if (on_cpu({&tensors})) return gloo_->broadcast(tensors, opts);
  return enqueue(c10d::OpType::BROADCAST, signature_of(tensors), tensors, tensors, /*in_place=*/true,
                 [opts](c10d::Backend& g, Tensors& in, Tensors&) { return g.broadcast(in, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::allreduce(Tensors& tensors, const c10d::AllreduceOptions& opts) {
  if (on_cpu({&tensors})) return gloo_->allreduce(tensors, opts);
  const auto gloo_opts = for_gloo(opts);
  return enqueue(c10d::OpType::ALLREDUCE, signature_of(tensors), premultiplied(tensors, opts.reduceOp), tensors,
                 /*in_place=*/true,
                 [gloo_opts](c10d::Backend& g, Tensors& in, Tensors&) { return g.allreduce(in, gloo_opts); },
                 averaged(opts.reduceOp, getSize()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::allreduce_coalesced(Tensors& tensors,
                                                                     const c10d::AllreduceCoalescedOptions& opts) {
  if (on_cpu({&tensors})) return gloo_->allreduce_coalesced(tensors, opts);
  const auto gloo_opts = for_gloo(opts);
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, signature_of(tensors), premultiplied(tensors, opts.reduceOp),
                 tensors, /*in_place=*/true,
                 [gloo_opts](c10d::Backend& g, Tensors& in, Tensors&) { return g.allreduce_coalesced(in, gloo_opts); },
                 averaged(opts.reduceOp, getSize()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::reduce(Tensors& tensors, const c10d::ReduceOptions& opts) {
  if (on_cpu({&tensors})) return gloo_->reduce(tensors, opts);
  const auto gloo_opts = for_gloo(opts);
  const bool root = getRank() == opts.rootRank;  // only the root's tensors change
  return enqueue(c10d::OpType::REDUCE, signature_of(tensors), premultiplied(tensors, opts.reduceOp),
                 root ? tensors : Tensors{}, /*in_place=*/true,
                 [gloo_opts](c10d::Backend& g, Tensors& in, Tensors&) { return g.reduce(in, gloo_opts); },
                 root ? averaged(opts.reduceOp, getSize()) : Finish{});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::allgather(std::vector<Tensors>& outputs, Tensors& inputs,
                                                           const c10d::AllgatherOptions& opts) {
  auto flat = flatten(outputs);
  if (on_cpu({&inputs, &flat})) return gloo_->allgather(outputs, inputs, opts);
  return enqueue(c10d::OpType::ALLGATHER, signature_of(inputs), inputs, flat, false,
                 [opts, like = outputs](c10d::Backend& g, Tensors& in, Tensors& out) {
                   auto lists = regroup(out, like);
                   return g.allgather(lists, in, opts);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                 const c10d::AllgatherOptions& opts) {
  Tensors in{input}, out{output};
  if (on_cpu({&in, &out})) return gloo_->_allgather_base(output, input, opts);
  return enqueue(c10d::OpType::_ALLGATHER_BASE, signature_of(in), in, out, false,
                 [opts](c10d::Backend& g, Tensors& in, Tensors& out) {
                   return g._allgather_base(out[0], in[0], opts);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::allgather_coalesced(std::vector<Tensors>& outputs, Tensors& inputs,
                                                                     const c10d::AllgatherOptions& opts) {
  auto flat = flatten(outputs);
  if (on_cpu({&inputs, &flat})) return gloo_->allgather_coalesced(outputs, inputs, opts);
  return enqueue(c10d::OpType::ALLGATHER_COALESCED, signature_of(inputs), inputs, flat, false,
                 [opts, like = outputs](c10d::Backend& g, Tensors& in, Tensors& out) {
                   auto lists = regroup(out, like);
                   return g.allgather_coalesced(lists, in, opts);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::allgather_into_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                                                                 const c10d::AllgatherOptions& opts) {
  if (on_cpu({&inputs, &outputs})) return gloo_->allgather_into_tensor_coalesced(outputs, inputs, opts);
  return enqueue(c10d::OpType::COALESCED, signature_of(inputs), inputs, outputs, false,
                 [opts](c10d::Backend& g, Tensors& in, Tensors& out) {
                   return g.allgather_into_tensor_coalesced(out, in, opts);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::gather(std::vector<Tensors>& outputs, Tensors& inputs,
                                                        const c10d::GatherOptions& opts) {
  auto flat = flatten(outputs);
  if (on_cpu({&inputs, &flat})) return gloo_->gather(outputs, inputs, opts);
  return enqueue(c10d::OpType::GATHER, signature_of(inputs), inputs, flat, false,
                 [opts, like = outputs](c10d::Backend& g, Tensors& in, Tensors& out) {
                   auto lists = regroup(out, like);
                   return g.gather(lists, in, opts);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                         const c10d::ScatterOptions& opts) {
  auto flat = flatten(inputs);
  if (on_cpu({&flat, &outputs})) return gloo_->scatter(outputs, inputs, opts);
  return enqueue(c10d::OpType::SCATTER, signature_of(outputs), flat, outputs, false,
                 [opts, like = inputs](c10d::Backend& g, Tensors& in, Tensors& out) {
                   auto lists = regroup(in, like);
                   return g.scatter(out, lists, opts);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                                const c10d::ReduceScatterOptions& opts) {
  auto flat = flatten(inputs);
  if (on_cpu({&flat, &outputs})) return gloo_->reduce_scatter(outputs, inputs, opts);
  const auto gloo_opts = for_gloo(opts);
  return enqueue(c10d::OpType::REDUCE_SCATTER, signature_of(outputs), premultiplied(flat, opts.reduceOp), outputs,
                 false,
                 [gloo_opts, like = inputs](c10d::Backend& g, Tensors& in, Tensors& out) {
                   auto lists = regroup(in, like);
                   return g.reduce_scatter(out, lists, gloo_opts);
                 },
                 averaged(opts.reduceOp, getSize()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                      const c10d::ReduceScatterOptions& opts) {
  Tensors in{input}, out{output};
  if (on_cpu({&in, &out})) return gloo_->_reduce_scatter_base(output, input, opts);
  const auto gloo_opts = for_gloo(opts);
  return enqueue(c10d::OpType::_REDUCE_SCATTER_BASE, signature_of(out), premultiplied(in, opts.reduceOp), out, false,
                 [gloo_opts](c10d::Backend& g, Tensors& in, Tensors& out) {
                   return g._reduce_scatter_base(out[0], in[0], gloo_opts);
                 },
                 averaged(opts.reduceOp, getSize()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::reduce_scatter_tensor_coalesced(
    Tensors& outputs, Tensors& inputs, const c10d::ReduceScatterOptions& opts) {
  if (on_cpu({&inputs, &outputs})) return gloo_->reduce_scatter_tensor_coalesced(outputs, inputs, opts);
  const auto gloo_opts = for_gloo(opts);
  return enqueue(c10d::OpType::COALESCED, signature_of(outputs), premultiplied(inputs, opts.reduceOp), outputs,
                 false,
                 [gloo_opts](c10d::Backend& g, Tensors& in, Tensors& out) {
                   return g.reduce_scatter_tensor_coalesced(out, in, gloo_opts);
                 },
                 averaged(opts.reduceOp, getSize()));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                               std::vector<int64_t>& output_split_sizes,
                                                               std::vector<int64_t>& input_split_sizes,
                                                               const c10d::AllToAllOptions& opts) {
  Tensors in{input}, out{output};
  if (on_cpu({&in, &out})) return gloo_->alltoall_base(output, input, output_split_sizes, input_split_sizes, opts);
  return enqueue(c10d::OpType::ALLTOALL_BASE, signature_of(in, /*sized=*/false), in, out, false,
                 [opts, out_splits = output_split_sizes, in_splits = input_split_sizes](
                     c10d::Backend& g, Tensors& in, Tensors& out) mutable {
                   return g.alltoall_base(out[0], in[0], out_splits, in_splits, opts);
                 });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::alltoall(Tensors& outputs, Tensors& inputs,
                                                          const c10d::AllToAllOptions& opts) {
  if (on_cpu({&inputs, &outputs})) return gloo_->alltoall(outputs, inputs, opts);
  return enqueue(c10d::OpType::ALLTOALL, signature_of(inputs, /*sized=*/false), inputs, outputs, false,
                 [opts](c10d::Backend& g, Tensors& in, Tensors& out) { return g.alltoall(out, in, opts); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::send(Tensors& tensors, int dst_rank, int tag) {
  if (on_cpu({&tensors})) return gloo_->send(tensors, dst_rank, tag);
  return enqueue(c10d::OpType::SEND, std::nullopt, tensors, {}, false,
                 [dst_rank, tag](c10d::Backend& g, Tensors& in, Tensors&) { return g.send(in, dst_rank, tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::recv(Tensors& tensors, int src_rank, int tag) {
  if (on_cpu({&tensors})) return gloo_->recv(tensors, src_rank, tag);
  return enqueue(c10d::OpType::RECV, std::nullopt, {}, tensors, false,
                 [src_rank, tag](c10d::Backend& g, Tensors&, Tensors& out) { return g.recv(out, src_rank, tag); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::recvAnysource(Tensors& tensors, int tag) {
  if (on_cpu({&tensors})) return gloo_->recvAnysource(tensors, tag);
  return enqueue(c10d::OpType::RECVANYSOURCE, std::nullopt, {}, tensors, false,
                 [tag](c10d::Backend& g, Tensors&, Tensors& out) { return g.recvAnysource(out, tag); });
}

// Queued like the collectives, so that it completes after the ones called before it.
c10::intrusive_ptr<c10d::Work> ProcessGroupOCCL::barrier(const c10d::BarrierOptions& opts) {
  return enqueue(c10d::OpType::BARRIER, signature_of({}), {}, {}, false,
                 [opts](c10d::Backend& g, Tensors&, Tensors&) { return g.barrier(opts); });
}

}  // namespace drawbridge::distributed
