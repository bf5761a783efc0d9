#include "kernels/pointwise_launcher.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_map>

#include <ATen/Dispatch_v2.h>
#include <c10/util/SmallVector.h>

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "kernels/op_dispatch.h"

namespace drawbridge::kernels {

namespace {

constexpr size_t kWorkGroup = 256;
// CPU devices walk strided iterations CHUNK elements per work-item (common.clh).
constexpr uint64_t kChunk = 2048;
constexpr size_t kChunkGroup = 16;

// The bits of a CPU scalar operand converted to the compute type, in the low bytes of a u64; an
// integer widened to all 64 (ops::scalar_bits, for the widened programs of run_in_int64).
uint64_t scalar_bits(at::TensorIteratorBase& iter, int arg, c10::ScalarType compute) {
  uint64_t bits = 0;
  AT_DISPATCH_V2(compute, "ocl_scalar_operand", AT_WRAP([&] {
    scalar_t value = iter.scalar_value<scalar_t>(arg);
    if constexpr (std::is_integral_v<scalar_t>) {
      bits = static_cast<uint64_t>(static_cast<int64_t>(value));
    } else {
      static_assert(sizeof(scalar_t) <= sizeof(bits));
      std::memcpy(&bits, &value, sizeof(scalar_t));
    }
  }), AT_EXPAND(AT_ALL_TYPES), at::kBool);
  return bits;
}

// What selects a kernel's variant besides its spec, as plain bytes: launches look their kernel
// up by these (per thread, without a lock) and build the option string only the first time.
struct Variant {
  uint64_t scalar_mask, dense, broadcast;
  int16_t device;
  uint16_t dynamic;  // operands read and written in a dtype given at run time
  uint8_t nargs, chunked, contiguous, index32, raw, vector_width;
  int8_t compute, dtypes[kMaxOperands];
  uint8_t run_time_scalars;  // which inputs are CPU scalars is read from the descriptor
  uint8_t unused[2];  // no padding: every byte takes part in the key
  Variant() { std::memset(this, 0, sizeof(*this)); }
};
static_assert(sizeof(Variant) == 48, "Variant has padding bytes");

std::string variant_options(const KernelSpec& spec, const Variant& v) {
  const int nargs = v.nargs;
  std::string options = spec.options;
  options += " -DNARGS=" + std::to_string(nargs);
  if (!v.run_time_scalars) options += " -DSCALAR_MASK=" + std::to_string(v.scalar_mask);
  if (v.chunked)
    options += " -DCHUNK=" + std::to_string(kChunk) + " -DROW_DENSE=" + std::to_string(v.dense) +
               " -DROW_BROADCAST=" + std::to_string(v.broadcast) + " -DVECTOR_WIDTH=" + std::to_string(v.vector_width);
  if (v.contiguous) options += " -DCONTIGUOUS";
  options += v.index32 ? " -DINDEX_T=uint" : " -DINDEX_T=ulong";
  for (int k = 0; k < nargs; ++k) {
    const std::string slot = std::to_string(k);
    if ((v.dynamic >> k) & 1) {
      options += " -DT" + slot + "=dyn" + slot;
      continue;
    }
    const auto dtype = static_cast<c10::ScalarType>(v.dtypes[k]);
    const char* token = spec.raw ? raw_token(c10::elementSize(dtype)) : dtype_token(dtype);
    TORCH_CHECK_NOT_IMPLEMENTED(token, spec.name, " on ocl does not support dtype ", dtype);
    options += " -DT" + slot + "=" + token;
  }
  const auto ct = static_cast<c10::ScalarType>(v.compute);
  const char* compute = spec.raw ? raw_token(c10::elementSize(static_cast<c10::ScalarType>(v.dtypes[0]))) : dtype_token(ct);
  TORCH_CHECK_NOT_IMPLEMENTED(compute, spec.name, " on ocl does not support dtype ", ct);
  return options + " -DCT=" + compute;
}

// The kernel a launch of `spec` in `variant` runs, with the operation it selects where that is
// the dispatch kernel of its file's generic program (kernels/op_dispatch.h). Cached per thread
// with the dispatch entry beside the kernel: the host path of a small launch looks up neither.
struct LaunchKernel {
  runtime::Kernel* kernel;
  const DispatchedOp* dispatched;  // null: the kernel is spec.name itself
};

const LaunchKernel& kernel_for(runtime::Device& device, const KernelSpec& spec, const Variant& variant) {
  std::string key(reinterpret_cast<const char*>(&variant), sizeof(variant));
  key.append(1, static_cast<char>(device.index())).append(spec.file).append(1, '|').append(spec.name);
  key.append(1, '|').append(spec.options);
  thread_local std::unordered_map<std::string, LaunchKernel> kernels;
  auto it = kernels.find(key);
  if (it != kernels.end()) return it->second;
  const DispatchedOp* dispatched = variant.run_time_scalars && !spec.raw ? dispatched_op(spec.file, spec.name) : nullptr;
  std::string options = variant_options(spec, variant);
  if (dispatched) options += kOpDispatchOption;
  runtime::Kernel& kernel = get_kernel(device, spec.file, options, dispatched ? dispatched->kernel : spec.name);
  return kernels.emplace(std::move(key), LaunchKernel{&kernel, dispatched}).first->second;
}

// Whether a launch of a kernel with dynamic_dtypes runs its generic program: an iteration of at
// most kSmallIteration elements reads and writes every operand through a run-time dtype (token
// dyn<k>) and finds its CPU scalars in the descriptor, so that the small launches of every dtype
// and layout (float16, bfloat16 and mixed beside float32, comparisons' bool outputs, a scalar
// operand or none) share one program per compute type, the loop taking microseconds either way.
// A cold test run had built a program for each of those, and PoCL compiled each of its kernels
// once per program.
bool runs_generic(const at::TensorIteratorBase& iter, const KernelSpec& spec) {
  return spec.dynamic_dtypes && static_cast<uint64_t>(iter.numel()) * spec.row_length <= kSmallIteration;
}

// Whether a generic launch of a kernel with widen_integers, whose compute type is an integer type
// narrower than int64, computes in int64 instead: its generic program then serves every integer
// dtype. Only where every tensor operand is an integer or bool, whose values int64 holds exactly:
// the kernels' integer arithmetic is then the same after the store's truncation (two's
// complement: sums and products wrap alike; shifts, divisions and comparisons see the same
// operand values), and no floating value converts to an integer through int64, which treats
// values past int32's range otherwise than a direct conversion. CPU scalars still convert to the
// kernel's own dtype first, as the CPU's do.
bool run_in_int64(const at::TensorIteratorBase& iter, c10::ScalarType compute) {
  if (compute != c10::kChar && compute != c10::kShort && compute != c10::kInt && compute != c10::kByte) return false;
  for (int k = 0; k < iter.ntensors(); ++k)
    if ((k < iter.noutputs() || !iter.is_cpu_scalar(k)) && !c10::isIntegralType(iter.dtype(k), /*includeBool=*/true))
      return false;
  return true;
}

// The inputs a longer launch of a kernel with dynamic_dtypes reads through a run-time dtype. Such
// iterations keep every type compiled in (their loops vectorize) unless the tensor inputs differ
// in dtype, or are integers computed in floating point: then every input whose dtype is not the
// compute type's own (or, without one, the first input's) is dynamic.
uint16_t dynamic_operands(const at::TensorIteratorBase& iter, const KernelSpec& spec, uint64_t scalar_mask) {
  if (!spec.dynamic_dtypes) return 0;
  std::optional<c10::ScalarType> first;
  bool mixed = false, has_compute = false;
  for (int k = iter.noutputs(); k < iter.ntensors(); ++k) {
    if ((scalar_mask >> k) & 1) continue;
    if (!first) first = iter.dtype(k);
    mixed |= iter.dtype(k) != *first;
    has_compute |= iter.dtype(k) == spec.compute;
  }
  // Integer inputs of a floating kernel (true division of integer tensors) are rare enough to
  // share one program per output dtype, whatever their dtype and layout.
  const bool integers_to_float =
      first && c10::isIntegralType(*first, /*includeBool=*/true) && c10::isFloatingType(spec.compute);
  if (!mixed && !integers_to_float) return 0;
  const c10::ScalarType stat = has_compute || integers_to_float ? spec.compute : *first;
  uint16_t mask = 0;
  for (int k = iter.noutputs(); k < iter.ntensors(); ++k)
    if (!((scalar_mask >> k) & 1) && iter.dtype(k) != stat) mask |= uint16_t(1) << k;
  return mask;
}

}  // namespace

c10::ScalarType compute_type(c10::ScalarType type) {
  return type == c10::kHalf || type == c10::kBFloat16 ? c10::kFloat : type;
}

void launch_pointwise_impl(at::TensorIteratorBase& iter, const KernelSpec& spec,
                           c10::ArrayRef<runtime::KernelArg> extra) {
  int64_t numel = iter.numel();
  if (numel == 0) return;
  const int nargs = iter.ntensors();
  TORCH_INTERNAL_ASSERT(nargs <= kMaxOperands, spec.name, ": ", nargs, " operands, more than a pointwise kernel takes");
  // The dims the kernel walks: those of size 1 take no part.
  c10::SmallVector<int, 16> walked;  // no heap allocation on the launch path
  for (int d = 0; d < iter.ndim(); ++d)
    if (iter.shape()[d] != 1) walked.push_back(d);
  if (walked.size() > static_cast<size_t>(kMaxDims)) {
    // More dims than a kernel's descriptor holds, even after coalescing: one launch per index of
    // the outermost (each narrowed to size 1, which the launch then skips).
    const int outer = walked.back();
    for (int64_t i = 0; i < iter.shape()[outer]; ++i) {
      at::TensorIterator part(iter);
      part.narrow(outer, i, 1);
      launch_pointwise_impl(part, spec, extra);
    }
    return;
  }
  // A single element (every dim of size 1) walks as one dense row of length 1: it then shares
  // the program of other small iterations (CPU devices) or of dense operands (GPUs) instead of
  // needing one of its own.
  const bool single_element = walked.empty();
  const int ndim = single_element ? 1 : static_cast<int>(walked.size());
  auto size_of = [&](int d) { return single_element ? int64_t(1) : iter.shape()[walked[d]]; };
  auto step_of = [&](int k, int d) {
    return single_element ? static_cast<int64_t>(c10::elementSize(iter.dtype(k))) : iter.strides(k)[walked[d]];
  };
  // IterDesc, laid out as in common.clh:
  //   numel, ndim, scalar_mask, scalars[nargs], sizes[kMaxDims], strides[nargs][kMaxDims].
  const int scalars_at = 3, sizes_at = scalars_at + nargs, strides_at = sizes_at + kMaxDims;
  c10::SmallVector<uint64_t, 3 + kMaxOperands * (1 + kMaxDims) + kMaxDims> desc(strides_at + kMaxDims * nargs, 0);
  desc[0] = static_cast<uint64_t>(numel);
  desc[1] = static_cast<uint64_t>(ndim);
  for (int d = 0; d < ndim; ++d) desc[sizes_at + d] = static_cast<uint64_t>(size_of(d));
  for (int k = 0; k < nargs; ++k)
    for (int d = 0; d < ndim; ++d) desc[strides_at + kMaxDims * k + d] = static_cast<uint64_t>(step_of(k, d));

  c10::DeviceIndex index = iter.device(0).index();
  runtime::Device& device = core::checked_device(index);
  // Which inputs are CPU scalars, and whether every operand is one dense run of elements, are
  // compiled into the kernel: its inner loop then has no branches and vectorizes.
  Variant variant;
  variant.device = index;
  variant.nargs = static_cast<uint8_t>(nargs);
  uint64_t scalar_mask = 0;
  for (int k = iter.noutputs(); k < nargs; ++k)
    if (iter.is_cpu_scalar(k)) scalar_mask |= uint64_t(1) << k;
  variant.run_time_scalars = runs_generic(iter, spec);
  const c10::ScalarType compute =
      variant.run_time_scalars && spec.widen_integers && run_in_int64(iter, spec.compute) ? c10::kLong : spec.compute;
  if (!variant.run_time_scalars) variant.scalar_mask = scalar_mask;
  // Operands whose innermost step is one element, or zero (broadcast along it).
  for (int k = 0; k < nargs; ++k) {
    const int64_t step = step_of(k, 0);
    if (step == static_cast<int64_t>(c10::elementSize(iter.dtype(k)))) variant.dense |= uint64_t(1) << k;
    if (step == 0) variant.broadcast |= uint64_t(1) << k;
  }
  variant.dynamic = variant.run_time_scalars ? static_cast<uint16_t>((1u << nargs) - 1)
                                             : dynamic_operands(iter, spec, scalar_mask);
  // A dynamic operand's element size is not compiled in: its steps come from the descriptor.
  if (variant.dynamic) variant.dense = variant.broadcast = 0;
  const runtime::DeviceProperties& props = device.properties();
  variant.chunked = props.cpu_class();
  // Chunked loops compile each operand's row step in when every operand is dense, broadcast or a
  // scalar (the layouts of hot ops, whose loops then vectorize) and the iteration is longer than one
  // work-item's chunk; with any other stride, or fewer elements, every step is read from the
  // descriptor, so that one program serves all those layouts of a dtype combination. Below a chunk
  // the loop takes a few microseconds either way, and the small tensors of a test run or of a
  // model's bookkeeping then compile one program instead of one per layout.
  if (variant.chunked && ((variant.dense | variant.broadcast | scalar_mask) != (uint64_t(1) << nargs) - 1 ||
                          static_cast<uint64_t>(numel) <= kChunk))
    variant.dense = variant.broadcast = 0;
  // CPU devices: each work-item walks CHUNK elements in one loop (common.clh) that the compiler
  // vectorizes at the vector unit's width; PoCL's own work-item vectorization picks half of
  // AVX-512's, and masks every access with the bounds check.
  if (variant.chunked)
    variant.vector_width =
        static_cast<uint8_t>(props.vector_elements(c10::elementSize(spec.raw ? iter.dtype(0) : compute)));
  // GPUs: dense operands index by the work-item's id alone, past kSmallIteration elements; below,
  // the descriptor's walk costs nothing measurable and serves every layout from one program.
  variant.contiguous = !variant.chunked && ndim == 1 && static_cast<uint64_t>(numel) > kSmallIteration &&
                       (variant.dense | scalar_mask) == (uint64_t(1) << nargs) - 1;
  variant.index32 = iter.can_use_32bit_indexing();
  variant.raw = spec.raw;
  variant.compute = static_cast<int8_t>(compute);
  // A CPU scalar travels as bits of the compute type, whatever its own dtype (a Python float is a
  // double, an int an int64), and a dynamic operand's dtype is a run-time value: programs do not
  // depend on either.
  for (int k = 0; k < nargs; ++k)
    if (!((variant.dynamic >> k) & 1))
      variant.dtypes[k] =
          static_cast<int8_t>(((variant.scalar_mask >> k) & 1) && !spec.raw ? spec.compute : iter.dtype(k));
  const LaunchKernel& launch_kernel = kernel_for(device, spec, variant);
  runtime::Kernel& kernel = *launch_kernel.kernel;
  const DispatchedOp* dispatched = launch_kernel.dispatched;
  const bool chunked = variant.chunked;

  c10::SmallVector<cl_mem, kMaxOperands> buffers(nargs);
  c10::SmallVector<cl_ulong, kMaxOperands> offsets(nargs);
  for (int k = 0; k < nargs; ++k) {
    if ((scalar_mask >> k) & 1) {
      desc[2] |= uint64_t(1) << k;
      desc[scalars_at + k] = scalar_bits(iter, k, spec.compute);  // the kernel's own dtype, widened
      continue;  // buffer filled in below with a valid placeholder
    }
    if ((variant.dynamic >> k) & 1) desc[scalars_at + k] = dtype_code(iter.dtype(k));
    runtime::BufferRef ref = device.memory().resolve(iter.data_ptr(k));
    buffers[k] = ref.mem;
    offsets[k] = ref.offset;
  }
  for (int k = 0; k < nargs; ++k)
    if (!buffers[k]) buffers[k] = buffers[0];  // never read: the kernel uses the scalar instead

  const size_t work_items = chunked ? (static_cast<size_t>(numel) + kChunk - 1) / kChunk : static_cast<size_t>(numel);
  size_t local = std::min(chunked ? kChunkGroup : kWorkGroup, kernel.max_work_group_size);
  size_t groups = (work_items + local - 1) / local;
  c10::SmallVector<runtime::KernelArg, 1 + 2 * kMaxOperands + 8> args;
  args.push_back({desc.size() * sizeof(uint64_t), desc.data()});
  for (int k = 0; k < nargs; ++k) {
    args.push_back({sizeof(cl_mem), &buffers[k]});
    args.push_back({sizeof(cl_ulong), &offsets[k]});
  }
  // A dispatch kernel takes the operation's code, its parameters p and q, and the device's error
  // flag. The operation's own arguments are its parameters' bits, or the error flag (an integer
  // division's), which then stands in for p, unused.
  cl_ulong dispatch_args[3] = {0, 0, 0};
  cl_mem error_flag = nullptr;
  if (dispatched) {
    TORCH_INTERNAL_ASSERT(extra.size() <= 2, spec.name, ": more arguments than a dispatched operation takes");
    dispatch_args[0] = dispatched->code;
    for (size_t i = 0; i < extra.size(); ++i) {
      TORCH_INTERNAL_ASSERT(extra[i].size == sizeof(cl_ulong), spec.name, ": an argument that is not 64 bits");
      std::memcpy(&dispatch_args[1 + i], extra[i].value, sizeof(cl_ulong));
    }
    error_flag = device.error_flag();
    for (cl_ulong& value : dispatch_args) args.push_back({sizeof(cl_ulong), &value});
    args.push_back({sizeof(cl_mem), &error_flag});
  } else {
    args.insert(args.end(), extra.begin(), extra.end());
  }
  cl_command_queue queue = core::current_queue(index);
  runtime::launch_args(kernel, queue, groups, local, args.data(), args.size(), spec.name);  // b_mul, not b_dispatch
  if (runtime::sync_mode()) core::raise_device_errors(index, queue);  // at the op, not at the next sync
}

}  // namespace drawbridge::kernels
