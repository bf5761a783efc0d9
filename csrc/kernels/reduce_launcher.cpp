#include "kernels/reduce_launcher.h"

#include <algorithm>

#include <ATen/ops/empty.h>

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "kernels/op_dispatch.h"
#include "kernels/pointwise_launcher.h"
#include "runtime/commands.h"

namespace drawbridge::kernels {

namespace {

constexpr size_t kWorkGroup = 256;  // WG in reduce.cl: the size of the local scratch array
constexpr uint64_t kDefaultColumns = 16;  // COLS when cl/reduce.cl is given none

// ReduceDesc of reduce.cl, as u64 words.
struct ReduceDesc {
  uint64_t num_outputs = 0, inner = 0, chunk = 0, chunks = 1, per_group = 1, outer_ndim = 0, inner_ndim = 0;
  uint64_t outer_sizes[kMaxDims] = {}, inner_sizes[kMaxDims] = {};
  uint64_t out_strides[kMaxDims] = {}, out2_strides[kMaxDims] = {};
  uint64_t in_outer_strides[kMaxDims] = {}, in_inner_strides[kMaxDims] = {};
  uint64_t dtype_codes = 0;
};

// Work-groups narrower than this leave a GPU's SIMD lanes idle anyway (a warp is 32 wide, an AMD
// wavefront 32 or 64). Not narrowing below it also keeps the sizes a kernel runs with few, which
// PoCL's GPU-class runs need: PoCL compiles a kernel again for every work-group size.
constexpr size_t kMinGroup = 32;

// A power of two (the tree reduction needs one), enough for `work` items, from kMinGroup to
// kWorkGroup.
size_t group_size(const runtime::Kernel& kernel, uint64_t work) {
  size_t cap = std::min(kWorkGroup, kernel.max_work_group_size), local = std::min(kMinGroup, cap);
  while (local * 2 <= cap && local < work) local *= 2;
  return local;
}

// How many accumulators a CPU work-item keeps side by side (COLS of a strip; a dense run's
// LANES_OF in cl/reduce.cl is the same rule over four registers): `registers` vector registers'
// worth, enough independent chains to hide the latency of vector adds while they stay in registers.
uint64_t accumulator_count(const runtime::DeviceProperties& props, const ReduceSpec& spec, uint64_t registers) {
  const uint64_t budget = registers * props.vector_elements(1);
  uint64_t count = 16;
  while (count < 128 && count * 2 * spec.accumulator_bytes <= budget) count *= 2;
  return count;
}

}  // namespace

void launch_reduce(at::TensorIteratorBase& iter, const ReduceSpec& spec, uint64_t param) {
  const int noutputs = iter.noutputs();
  TORCH_INTERNAL_ASSERT(noutputs == 1 || noutputs == 2, "reductions have one or two outputs");
  const int input = noutputs;
  ReduceDesc d;
  for (int dim = 0; dim < iter.ndim(); ++dim) {
    const int64_t size = iter.shape()[dim];
    // Size-0 dims count as reduced: with a non-empty output, only a reduced dim can be empty.
    const bool reduced = iter.strides(0)[dim] == 0 && size != 1;
    if (reduced) {
      TORCH_CHECK_NOT_IMPLEMENTED(d.inner_ndim < kMaxDims, "ocl reductions support at most ", kMaxDims, " dims");
      d.inner_sizes[d.inner_ndim] = size;
      d.in_inner_strides[d.inner_ndim] = iter.strides(input)[dim];
      d.inner_ndim++;
    } else {
      TORCH_CHECK_NOT_IMPLEMENTED(d.outer_ndim < kMaxDims, "ocl reductions support at most ", kMaxDims, " dims");
      d.outer_sizes[d.outer_ndim] = size;
      d.out_strides[d.outer_ndim] = iter.strides(0)[dim];
      if (noutputs == 2) d.out2_strides[d.outer_ndim] = iter.strides(1)[dim];
      d.in_outer_strides[d.outer_ndim] = iter.strides(input)[dim];
      d.outer_ndim++;
    }
  }
  d.num_outputs = 1;
  for (uint64_t i = 0; i < d.outer_ndim; ++i) d.num_outputs *= d.outer_sizes[i];
  d.inner = 1;
  for (uint64_t i = 0; i < d.inner_ndim; ++i) d.inner *= d.inner_sizes[i];
  if (iter.numel() == 0) d.inner = 0;  // an empty input still has outputs: they get the initial value
  if (d.num_outputs == 0 || iter.output(0).numel() == 0) return;

  c10::DeviceIndex index = iter.device(0).index();
  runtime::Device& device = core::checked_device(index);
  const auto& props = device.properties();

  // CPU devices: one work-item per work-group, walking its elements in memory order.
  const bool dense_run = props.cpu_class();
  // Enough work-groups to fill the device: split the reduced elements of few outputs in chunks.
  // CPU devices get 3x as many: the driver deals them out in shrinking batches, and with fewer
  // its threads finished a 4 M-element sum ~8 % apart.
  const uint64_t target_groups = std::max<uint64_t>(props.compute_units * 8, 16) * (dense_run ? 3 : 1);
  // On CPU devices a work-group costs more than a short row: unsplit reductions give each several
  // outputs. Dense runs keep LANES_OF accumulators of each kernel's accumulator (cl/reduce.cl).
  const uint64_t outputs_per_group = dense_run ? std::max<uint64_t>(1, d.num_outputs / target_groups) : 1;
  const std::string lane_bytes = dense_run ? " -DLANE_BYTES=" + std::to_string(4 * props.vector_elements(1)) : "";
  const uint64_t min_chunk = kWorkGroup * 16;
  if (d.num_outputs < target_groups && d.inner > 2 * min_chunk) {
    d.chunks = std::min<uint64_t>((target_groups + d.num_outputs - 1) / d.num_outputs,
                                  (d.inner + min_chunk - 1) / min_chunk);
  }
  // Chunks are whole multiples of min_chunk elements, so that vector loads stay aligned.
  if (d.chunks > 1) d.chunk = ((d.inner + d.chunks - 1) / d.chunks + min_chunk - 1) / min_chunk * min_chunk;
  else d.chunk = d.inner;
  d.chunks = d.chunk ? (d.inner + d.chunk - 1) / d.chunk : 1;
  if (d.chunks == 0) d.chunks = 1;

  // Small reductions of every kind run the one dispatch kernel of their compute type's generic
  // program (kernels/op_dispatch.h), whatever the device class: at most kSmallIteration elements
  // take microseconds either way, and a cold test run had compiled the
  // kernels of every reduction in every dtype for them. They read and write through run-time
  // dtypes (common.clh's dyn<k>). Those of integers and bools compute in int64 (none is split,
  // so no scratch is sized by the accumulator): one program then serves every integer dtype,
  // whose results are the same (sums and products wrap alike after the store's truncation;
  // comparisons and tests against zero see the same values).
  const bool small = static_cast<uint64_t>(iter.numel()) <= kSmallIteration;
  bool integers = c10::isIntegralType(spec.compute, /*includeBool=*/true);
  for (int k = 0; k < iter.ntensors(); ++k) integers &= c10::isIntegralType(iter.dtype(k), /*includeBool=*/true);
  const c10::ScalarType compute = small && integers ? c10::kLong : spec.compute;
  const char* ct_token = dtype_token(compute);
  TORCH_CHECK_NOT_IMPLEMENTED(dtype_token(iter.dtype(0)) && dtype_token(iter.dtype(input)) && ct_token, spec.name,
                              " on ocl does not support dtype ", iter.dtype(input));
  auto ref = [&](int k) { return device.memory().resolve(iter.data_ptr(k)); };
  runtime::BufferRef out = ref(0), in = d.inner ? ref(input) : out, out2 = noutputs == 2 ? ref(1) : out;
  cl_ulong out_off = out.offset, in_off = in.offset, out2_off = out2.offset;
  cl_command_queue queue = core::current_queue(index);
  const std::string kernel_name = std::string("r_") + spec.name;
  if (small) {
    const DispatchedOp* dispatched = dispatched_op("reduce.cl", kernel_name);
    TORCH_INTERNAL_ASSERT(dispatched, kernel_name, " is not a REDUCTION of reduce.cl");
    d.dtype_codes = dtype_code(iter.dtype(0)) | dtype_code(iter.dtype(input)) << 4;
    // The lanes of the longer kernels' dense runs, so that a small row rounds as a long one.
    const std::string options =
        std::string(" -DNARGS=1 -DT0=dyn0 -DT1=dyn1 -DCT=") + ct_token + kOpDispatchOption + lane_bytes;
    runtime::Kernel& kernel = get_kernel(device, "reduce.cl", options, dispatched->kernel);
    // A work-item per run of outputs (CPU devices) or per output (GPUs).
    const size_t local = dense_run ? 1 : std::min(kMinGroup, kernel.max_work_group_size);
    d.per_group = outputs_per_group;
    const uint64_t items = (d.num_outputs + d.per_group - 1) / d.per_group;
    const cl_ulong op_code = dispatched->code;
    cl_mem error_flag = device.error_flag();
    const runtime::KernelArg args[] = {{sizeof(d), &d},           {sizeof(cl_mem), &out.mem},
                                       {sizeof(cl_ulong), &out_off}, {sizeof(cl_mem), &out2.mem},
                                       {sizeof(cl_ulong), &out2_off}, {sizeof(cl_mem), &in.mem},
                                       {sizeof(cl_ulong), &in_off},  {sizeof(uint64_t), &param},
                                       {sizeof(cl_ulong), &op_code}, {sizeof(cl_mem), &error_flag}};
    runtime::launch_args(kernel, queue, (items + local - 1) / local, local, args, std::size(args),
                         kernel_name.c_str());  // r_sum, not r_dispatch
    if (runtime::sync_mode()) core::raise_device_errors(index, queue);  // at the op, not at the next sync
    return;
  }
  // A program per reduction: the whole file's took PoCL 1.5 to 2.4 s to build, one reduction's 0.2
  // to 0.3, and a process rarely runs more than two of them on one dtype.
  std::string options = std::string(" -DONE_FAMILY -DKEEP_r_") + spec.name + "=KEEP_PROBE -DNARGS=1 -DWG=" +
                        std::to_string(kWorkGroup);
  if (dense_run) {
    // The accumulator count follows each kernel's accumulator (LANES_OF): one program per dtype
    // serves sums, Welford moments and (value, index) pairs alike.
    options += " -DDENSE_RUN=1" + lane_bytes;
    // Inputs already in the compute type are read as OpenCL vectors of the device's width
    // (VECTOR_RUN in cl/reduce.cl); OpenCL vectors have at most 16 elements.
    const uint64_t width = std::min<uint64_t>(16, props.vector_elements(c10::elementSize(compute)));
    if (iter.dtype(input) == compute && width > 1)
      options += " -DVECTOR_WIDTH=" + std::to_string(width);
  }
  options += std::string(" -DT0=") + dtype_token(iter.dtype(0)) + " -DT1=" + dtype_token(iter.dtype(input)) +
             " -DCT=" + ct_token;
  const uint64_t in_size = c10::elementSize(iter.dtype(input));
  if (dense_run && d.chunks == 1 && d.outer_ndim > 0 && d.in_outer_strides[0] == in_size && d.inner > 0 &&
      !(d.inner_ndim == 1 && d.in_inner_strides[0] == in_size)) {
    // Adjacent outputs are adjacent in the input: a work-item reduces a strip of `width` of them
    // side by side (cl/reduce.cl, _cols). Wide strips read many cache lines per page of each
    // input row (columns 16 wide ran 3x slower), and every compute unit needs strips.
    const uint64_t row = d.outer_sizes[0];
    uint64_t width = accumulator_count(props, spec, 8);
    while (width > 16 && d.num_outputs / width < props.compute_units * 4) width /= 2;
    // At reduce.cl's default width the strip kernel comes from the program of the row kernels.
    const std::string cols_options = width == kDefaultColumns ? options : options + " -DCOLS=" + std::to_string(width);
    runtime::Kernel& cols = get_kernel(device, "reduce.cl", cols_options, kernel_name + "_cols");
    runtime::launch(cols, queue, (d.num_outputs / row) * ((row + width - 1) / width), 1, d, out.mem, out_off, out2.mem,
                    out2_off, in.mem, in_off, param);
    return;
  }
  runtime::Kernel& kernel = get_kernel(device, "reduce.cl", options, kernel_name);
  size_t local = dense_run ? 1 : group_size(kernel, d.chunk);
  if (d.chunks == 1) d.per_group = outputs_per_group;
  const uint64_t groups = (d.num_outputs + d.per_group - 1) / d.per_group * d.chunks;

  if (d.chunks == 1) {
    runtime::launch(kernel, queue, groups, local, d, out.mem, out_off, out2.mem, out2_off, in.mem, in_off, out.mem,
                    out_off, param);
    return;
  }
  // Split: the chunks' accumulators go to a scratch buffer, a second launch merges them.
  at::Tensor partials = at::empty({static_cast<int64_t>(d.num_outputs * d.chunks * spec.accumulator_bytes)},
                                  iter.output(0).options().dtype(at::kByte));
  runtime::BufferRef part = device.memory().resolve(partials.data_ptr());
  cl_ulong part_off = part.offset;
  runtime::launch(kernel, queue, groups, local, d, out.mem, out_off, out2.mem, out2_off, in.mem, in_off, part.mem,
                  part_off, param);
  runtime::Kernel& merge = get_kernel(device, "reduce.cl", options, kernel_name + "_merge");
  runtime::launch(merge, queue, d.num_outputs, dense_run ? 1 : group_size(merge, d.chunks), d, out.mem, out_off,
                  out2.mem, out2_off, part.mem, part_off, param);
}

}  // namespace drawbridge::kernels
