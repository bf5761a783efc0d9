// segment_reduce (sum, mean, max, min, prod over segments given by lengths or offsets, 1-d or
// batched) and its backward (cl/segment_reduce.cl): one work-item per (outer, segment, inner)
// output element. Lengths become segment ends by a cumsum on the device; offsets are read as
// they are. The argument checks, their order and their exceptions are the CPU's
// (ATen/native/SegmentReduce.cpp).
#include <array>

#include <ATen/TensorOperators.h>
#include <ATen/TensorUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/ReductionType.h>
#include <ATen/ops/all.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "kernels/tensor_operands.h"
#include "ops/out_arguments.h"
#include "runtime/commands.h"

namespace drawbridge::ops {

namespace {

// cl/segment_reduce.cl's SegmentDesc.
struct SegmentDesc {
  cl_long outer, segments, inner, axis_size;
  cl_long data_stride[3];
  cl_long result_stride[3];
  cl_long grad_stride[3];
  cl_long bounds_stride;
  cl_long inclusive;
  cl_long has_initial;
};

// Where the CPU dispatches on dtypes (AT_DISPATCH_INDEX_TYPES, then the floating types) and
// raises NotImplementedError for the others.
void check_index_dtype(const at::Tensor& t, const char* what) {
  TORCH_CHECK_NOT_IMPLEMENTED(t.scalar_type() == c10::kLong || t.scalar_type() == c10::kInt, "\"segment_reduce_",
                              what, "_ocl\" not implemented for '", c10::toString(t.scalar_type()), "'");
}
void check_data_dtype(c10::ScalarType type) {
  TORCH_CHECK_NOT_IMPLEMENTED(type == c10::kFloat || type == c10::kDouble || type == c10::kHalf ||
                                  type == c10::kBFloat16,
                              "\"segment_reduce_ocl\" not implemented for '", c10::toString(type), "'");
}

// The element strides of `t` viewed as (outer, mid, inner): its own where its layout allows such a
// view, else those of the dense copy it is replaced by.
std::array<cl_long, 3> strides_3d(at::Tensor& t, int64_t outer, int64_t mid, int64_t inner) {
  const std::vector<int64_t> shape{outer, mid, inner};
  auto strides = at::detail::computeStride(t.sizes(), t.strides(), shape);
  if (!strides) {
    t = t.contiguous();
    strides = at::detail::computeStride(t.sizes(), t.strides(), shape);
  }
  return {(*strides)[0], (*strides)[1], (*strides)[2]};
}

// The dims before and after `axis` of `shape`, each flattened.
std::pair<int64_t, int64_t> outer_inner(at::IntArrayRef shape, int64_t axis) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(shape.size()); ++d) inner *= shape[d];
  return {outer, inner};
}

// Segment bounds for the kernels, one row per outer index: the inclusive prefix sums of the
// lengths (int64) or the offsets (as int64). The CPU reads row `outer` of the flattened lengths
// without checking that there is one (reading past the buffer); here too few rows are an error.
at::Tensor segment_bounds(const at::Tensor& given, bool is_offsets, int64_t outer, SegmentDesc& desc) {
  const int64_t per_row = given.size(-1);
  const int64_t rows = per_row == 0 ? 0 : given.numel() / per_row;
  TORCH_CHECK(rows >= outer, "segment_reduce(): expected ", is_offsets ? "offsets" : "lengths", " to have a row for ",
              "each of the ", outer, " positions of data before axis, but it has ", rows);
  at::Tensor flat = given.contiguous().view({rows, per_row});
  desc.bounds_stride = per_row;
  desc.inclusive = is_offsets ? 0 : 1;
  if (is_offsets) return flat.to(c10::kLong).contiguous();
  return at::cumsum(flat, 1, c10::kLong);
}

// `initial` in the data's dtype, as the CPU's Scalar::to<scalar_t> converts it (raising on
// overflow), carried in the kernel's accumulator type.
struct InitialArg {
  cl_float f = 0;
  cl_double d = 0;
  bool wide = false;
  runtime::KernelArg arg() const { return wide ? runtime::KernelArg{sizeof(d), &d} : runtime::KernelArg{sizeof(f), &f}; }
};
InitialArg initial_arg(c10::ScalarType type, const std::optional<c10::Scalar>& initial, double otherwise) {
  InitialArg a;
  a.wide = type == c10::kDouble;
  if (!initial) {
    a.f = static_cast<float>(otherwise);
    a.d = otherwise;
  } else if (type == c10::kDouble) {
    a.d = initial->to<double>();
  } else if (type == c10::kFloat) {
    a.f = initial->to<float>();
  } else if (type == c10::kHalf) {
    a.f = static_cast<float>(initial->to<at::Half>());
  } else {
    a.f = static_cast<float>(initial->to<at::BFloat16>());
  }
  return a;
}

// Launches `name` with the descriptor, each operand's buffer and offset (the output first), the
// initial value, the reduction and the error flag; one work-item per output element of desc.
void launch_segments(const char* name, const SegmentDesc& desc, std::initializer_list<at::Tensor> operands,
                     c10::ScalarType type, const InitialArg& initial, at::native::ReductionType reduction) {
  const int64_t work_items = desc.outer * desc.segments * desc.inner;
  if (work_items == 0) return;
  const c10::Device where = operands.begin()->device();
  c10::DeviceGuard guard(where);
  runtime::Device& device = core::checked_device(where.index());
  runtime::Kernel& kernel = kernels::get_kernel(device, "segment_reduce.cl",
                                                std::string("-DNARGS=1 -DT=") + kernels::dtype_token(type), name);
  const kernels::TensorOperands tensors(device, operands);
  std::vector<runtime::KernelArg> args{{sizeof(desc), &desc}};
  tensors.append(args);
  args.push_back(initial.arg());
  const cl_int which = static_cast<cl_int>(reduction);
  cl_mem error = device.error_flag();
  // A segment of negative length or past the data's end: RuntimeError, as the CPU raises (or, past
  // the end, would have read outside its buffer).
  const cl_int code = static_cast<cl_int>(core::DeviceAssert::index_runtime_error);
  args.push_back({sizeof(which), &which});
  args.push_back({sizeof(error), &error});
  args.push_back({sizeof(code), &code});
  const size_t local = std::min<size_t>(64, kernel.max_work_group_size);
  runtime::launch_args(kernel, core::current_queue(where.index()), (size_t(work_items) + local - 1) / local, local,
                       args.data(), args.size());
}

at::Tensor segment_reduce_functional(const at::Tensor& data, c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                          const std::optional<at::Tensor>& indices, const std::optional<at::Tensor>& offsets,
                          int64_t axis, bool unsafe, const std::optional<c10::Scalar>& initial) {
  axis = at::maybe_wrap_dim(axis, data.dim());
  TORCH_CHECK(!indices.has_value(), "segment_reduce(): indices based reduction is not supported yet.");
  TORCH_CHECK(lengths.has_value() || offsets.has_value(), "segment_reduce(): Either lengths or offsets must be defined.")
  const at::native::ReductionType reduction = at::native::get_reduction_enum(reduce);
  const bool is_offsets = offsets.has_value();
  const at::Tensor& given = is_offsets ? *offsets : *lengths;
  const char* what = is_offsets ? "offsets" : "lengths";
  // The CPU's unnamed checks, with their expressions' text.
  TORCH_CHECK(data.get_device() == given.get_device(), "Expected data.get_device() == ", what,
              "_value.get_device() to be true, but got false.");
  TORCH_CHECK(data.dim() >= given.dim(), "Expected data.dim() >= ", what, "_value.dim() to be true, but got false.");
  TORCH_CHECK(axis == given.dim() - 1, "segment_reduce(): Expected axis to be the last dimension of ", what,
              " but got ", axis, ".");
  if (!is_offsets && !unsafe) {
    TORCH_CHECK(given.min().item<int64_t>() >= 0, "lengths contains negative value!");
    TORCH_CHECK(at::all(given.sum({-1}) == data.size(axis)).item<bool>(),
                "segment_reduce(): Expected all rows of lengths along axis ",
                "to sum to data.size(lengths.dim()-1) when !unsafe.");
  }
  const int64_t segments = is_offsets ? given.size(axis) - 1 : given.size(axis);
  std::vector<int64_t> shape = data.sizes().vec();
  shape[axis] = segments;
  at::Tensor out = at::empty(shape, data.options());
  check_index_dtype(given, what);
  check_data_dtype(data.scalar_type());
  if (out.numel() == 0) return out;
  auto [outer, inner] = outer_inner(data.sizes(), axis);
  SegmentDesc desc{};
  desc.outer = outer;
  desc.segments = segments;
  desc.inner = inner;
  desc.axis_size = data.size(axis);
  at::Tensor values = data;
  auto data_strides = strides_3d(values, outer, desc.axis_size, inner);
  std::copy(data_strides.begin(), data_strides.end(), desc.data_stride);
  desc.has_initial = initial.has_value() ? 1 : 0;
  at::Tensor bounds = segment_bounds(given, is_offsets, outer, desc);
  // Empty data has no buffer; its segments are empty (or flagged), so the output's stands in, unread.
  if (values.numel() == 0) values = out;
  launch_segments("segment_reduce", desc, {out, values, bounds}, data.scalar_type(),
                  initial_arg(data.scalar_type(), initial, 0), reduction);
  return out;
}

at::Tensor& segment_reduce_out(const at::Tensor& data, c10::string_view reduce,
                               const std::optional<at::Tensor>& lengths, const std::optional<at::Tensor>& indices,
                               const std::optional<at::Tensor>& offsets, int64_t axis, bool unsafe,
                               const std::optional<c10::Scalar>& initial, at::Tensor& out) {
  return assign_out(out, segment_reduce_functional(data, reduce, lengths, indices, offsets, axis, unsafe, initial));
}

at::Tensor segment_reduce_backward_functional(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                   c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                                   const std::optional<at::Tensor>& offsets, int64_t axis,
                                   const std::optional<c10::Scalar>& initial) {
  axis = at::maybe_wrap_dim(axis, data.dim());
  // Autograd passes an undefined tensor for None, not nullopt.
  const bool has_lengths = lengths.has_value() && lengths->defined();
  const bool is_offsets = offsets.has_value() && offsets->defined();
  TORCH_CHECK(has_lengths || is_offsets, "segment_reduce(): Either lengths or offsets must be defined.");
  const at::native::ReductionType reduction = at::native::get_reduction_enum(reduce);
  const at::Tensor& given = is_offsets ? *offsets : *lengths;
  // As on the CPU, the axis is the last dim of lengths or offsets.
  axis = given.dim() - 1;
  TORCH_CHECK(axis >= 0 && axis < data.dim(), "_segment_reduce_backward(): expected ", is_offsets ? "offsets" : "lengths",
              " of 1 to ", data.dim(), " dims, got ", given.dim());
  const int64_t segments = is_offsets ? given.size(axis) - 1 : given.size(axis);
  at::Tensor grad_input = at::zeros(data.sizes(), grad.options());
  check_index_dtype(given, is_offsets ? "offsets" : "lengths");
  check_data_dtype(data.scalar_type());
  TORCH_CHECK(grad.scalar_type() == data.scalar_type() && output.scalar_type() == data.scalar_type(),
              "_segment_reduce_backward(): expected grad and output of data's dtype ", data.scalar_type(), ", got ",
              grad.scalar_type(), " and ", output.scalar_type());
  std::vector<int64_t> shape = data.sizes().vec();
  shape[axis] = segments;
  TORCH_CHECK(grad.sizes() == at::IntArrayRef(shape) && output.sizes() == at::IntArrayRef(shape),
              "_segment_reduce_backward(): expected grad and output of shape ", at::IntArrayRef(shape), ", got ",
              grad.sizes(), " and ", output.sizes());
  const InitialArg init = initial_arg(data.scalar_type(), reduction == at::native::ReductionType::PROD ? initial
                                                                                                      : std::nullopt,
                                      1);
  if (grad_input.numel() == 0 || segments == 0) return grad_input;
  auto [outer, inner] = outer_inner(data.sizes(), axis);
  SegmentDesc desc{};
  desc.outer = outer;
  desc.segments = segments;
  desc.inner = inner;
  desc.axis_size = data.size(axis);
  at::Tensor values = data, g = grad, result = output;
  auto s = strides_3d(values, outer, desc.axis_size, inner);
  std::copy(s.begin(), s.end(), desc.data_stride);
  s = strides_3d(g, outer, segments, inner);
  std::copy(s.begin(), s.end(), desc.grad_stride);
  s = strides_3d(result, outer, segments, inner);
  std::copy(s.begin(), s.end(), desc.result_stride);
  at::Tensor bounds = segment_bounds(given, is_offsets, outer, desc);
  launch_segments("segment_reduce_backward", desc, {grad_input, g, result, values, bounds}, data.scalar_type(), init,
                  reduction);
  return grad_input;
}

at::Tensor& segment_reduce_backward_out(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                        c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                                        const std::optional<at::Tensor>& offsets, int64_t axis,
                                        const std::optional<c10::Scalar>& initial, at::Tensor& out) {
  return assign_out(out, segment_reduce_backward_functional(grad, output, data, reduce, lengths, offsets, axis, initial));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("segment_reduce", TORCH_FN(segment_reduce_functional));
  m.impl("segment_reduce.out", TORCH_FN(segment_reduce_out));
  m.impl("_segment_reduce_backward", TORCH_FN(segment_reduce_backward_functional));
  m.impl("_segment_reduce_backward.out", TORCH_FN(segment_reduce_backward_out));
}

}  // namespace drawbridge::ops
