// Anti-aliased bilinear and bicubic resampling of (N, C, H, W) images (F.interpolate with
// antialias=True) and their backward, through cl/antialias.cl.
//
// The filter is separable, so the forward is one pass along W and one along H, as on the CPU:
// a dim whose size does not change is skipped (the CPU skips it even when a scale was given),
// and the intermediate is stored in the input's dtype. The backward is the adjoint of each pass,
// gathered per input element, in the opposite order; the CPU walks both dims at once and skips
// none, which differs only in the order of its sums.
//
// The CPU computes these for float32 and float64 only (its weights are dispatched on those);
// uint8, which it resamples with fixed-point weights of its own, runs there, explicitly.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "core/fallback.h"
#include "kernels/kernel_library.h"
#include "kernels/tensor_operands.h"
#include "ops/out_arguments.h"
#include "runtime/commands.h"

namespace drawbridge::ops {

namespace {

using Scale = std::optional<double>;

// As cl/antialias.cl's AaPass.
struct AaPass {
  int64_t size[4];
  int64_t dst_stride[4], src_stride[4];
  int64_t src_size;
  int64_t dim;
};

enum class Filter { Bilinear, Bicubic };

const char* op_name(Filter f) { return f == Filter::Bilinear ? "_upsample_bilinear2d_aa" : "_upsample_bicubic2d_aa"; }

// The CPU's area_pixel_compute_scale and support (interp_size / 2, widened by a downscale), in the
// compute type T.
template <typename T>
std::pair<T, T> scale_and_support(Filter f, int64_t in, int64_t out, bool align_corners, Scale scale) {
  T s;
  if (align_corners)
    s = out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  else
    s = scale && *scale > 0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
  const double half_taps = f == Filter::Bilinear ? 1.0 : 2.0;
  return {s, static_cast<T>(s >= 1.0 ? half_taps * s : half_taps)};
}

void launch(const c10::Device& where, runtime::Kernel& kernel, size_t items, const std::vector<runtime::KernelArg>& args) {
  const size_t local = std::min<size_t>(64, kernel.max_work_group_size);
  runtime::launch_args(kernel, core::current_queue(where.index()), (items + local - 1) / local, local, args.data(),
                       args.size());
}

// One pass along `dim` of cl/antialias.cl's `kernel` ("aa_forward" or "aa_backward") from src
// into dst; `out` and `in` are the forward's output and input lengths along dim.
void launch_pass(const char* kernel, Filter f, const at::Tensor& dst, const at::Tensor& src, int64_t dim, int64_t in,
                 int64_t out, bool align_corners, Scale scale) {
  AaPass d{};
  for (int k = 0; k < 4; ++k) {
    d.size[k] = dst.size(k);
    d.dst_stride[k] = dst.stride(k);
    d.src_stride[k] = src.stride(k);
  }
  d.src_size = src.size(dim);
  d.dim = dim;
  const c10::Device where = dst.device();
  c10::DeviceGuard guard(where);
  runtime::Device& device = core::checked_device(where.index());
  const std::string options = std::string("-DNARGS=2 -DT=") + kernels::dtype_token(dst.scalar_type()) +
                              " -DCUBIC=" + (f == Filter::Bicubic ? "1" : "0");
  // The kernels' scale and support are of their compute type, as the CPU's.
  const bool wide = dst.scalar_type() == c10::kDouble;
  const auto [scale_d, support_d] = scale_and_support<double>(f, in, out, align_corners, scale);
  const auto [scale_f, support_f] = scale_and_support<float>(f, in, out, align_corners, scale);
  const runtime::KernelArg scale_arg = wide ? runtime::KernelArg{sizeof(double), &scale_d}
                                            : runtime::KernelArg{sizeof(float), &scale_f};
  const runtime::KernelArg support_arg = wide ? runtime::KernelArg{sizeof(double), &support_d}
                                              : runtime::KernelArg{sizeof(float), &support_f};
  const cl_long max_taps = static_cast<cl_long>(wide ? std::ceil(support_d) : std::ceil(support_f)) * 2 + 1;
  at::Tensor taps = at::empty({out, 2}, dst.options().dtype(c10::kLong));
  at::Tensor weights = at::empty({out, max_taps}, dst.options().dtype(wide ? c10::kDouble : c10::kFloat));
  const bool backward = std::string(kernel) == "aa_backward";
  at::Tensor covers = at::empty({backward ? in : 0, 2}, dst.options().dtype(c10::kLong));

  // covers, empty in the forward (which does not pass it), is last: the others keep their places.
  const kernels::TensorOperands tensors(device, backward ? std::initializer_list<at::Tensor>{dst, src, taps, weights, covers}
                                                        : std::initializer_list<at::Tensor>{dst, src, taps, weights});
  auto operands = [&](std::vector<runtime::KernelArg>& args, std::initializer_list<size_t> which) {
    for (size_t k : which) tensors.append(args, k);
  };

  const cl_long in_l = in, out_l = out;
  std::vector<runtime::KernelArg> table_args{{sizeof(cl_long), &in_l}, {sizeof(cl_long), &out_l},
                                             {sizeof(cl_long), &max_taps}, scale_arg, support_arg};
  operands(table_args, {2, 3});
  launch(where, kernels::get_kernel(device, "antialias.cl", options, "aa_weights"), static_cast<size_t>(out),
         table_args);

  if (backward) {
    std::vector<runtime::KernelArg> cover_args{{sizeof(cl_long), &in_l}, {sizeof(cl_long), &out_l}, scale_arg,
                                               support_arg};
    operands(cover_args, {4, 2});
    launch(where, kernels::get_kernel(device, "antialias.cl", options, "aa_covers"), static_cast<size_t>(in),
           cover_args);
  }
  std::vector<runtime::KernelArg> args{{sizeof(d), &d}, {sizeof(cl_long), &max_taps}};
  operands(args, {0, 1, 2, 3});
  if (backward) operands(args, {4});
  launch(where, kernels::get_kernel(device, "antialias.cl", options, kernel), static_cast<size_t>(dst.numel()),
         args);
}

// The CPU's checks of upsample_2d_common_check, in its order.
void check_sizes(at::IntArrayRef input_size, c10::SymIntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ", output_size.size());
  TORCH_CHECK(input_size.size() == 4, "It is expected input_size equals to 4, but got size ", input_size.size());
  const int64_t oh = output_size[0].expect_int(), ow = output_size[1].expect_int();
  TORCH_CHECK(input_size[2] > 0 && input_size[3] > 0 && oh > 0 && ow > 0,
              "Input and output sizes should be greater than 0, but got input (H: ", input_size[2],
              ", W: ", input_size[3], ") output (H: ", oh, ", W: ", ow, ")");
}

bool native_dtype(c10::ScalarType t) { return t == c10::kFloat || t == c10::kDouble; }

template <Filter F>
at::Tensor aa_forward(const at::Tensor& input, c10::SymIntArrayRef output_size, bool align_corners, Scale scales_h,
                      Scale scales_w) {
  if (input.scalar_type() == c10::kByte) {
    using Sig = at::Tensor(const at::Tensor&, c10::SymIntArrayRef, bool, Scale, Scale);
    auto op = core::find_aten_op(op_name(F)).typed<Sig>();
    return c10::impl::BoxedKernelWrapper<Sig>::call(c10::BoxedKernel::makeFromFunction<&core::cpu_fallback>(), op,
                                                    c10::DispatchKeySet(), input, output_size, align_corners,
                                                    scales_h, scales_w);
  }
  check_sizes(input.sizes(), output_size);
  TORCH_CHECK(input.numel() != 0 || c10::multiply_integers(input.sizes().begin() + 1, input.sizes().end()),
              "Non-empty 4D data tensor expected but got a tensor with sizes ", input.sizes());
  TORCH_CHECK_NOT_IMPLEMENTED(native_dtype(input.scalar_type()),
                              "\"compute_index_ranges_weights\" not implemented for '",
                              c10::toString(input.scalar_type()), "'");
  kernels::check_dtype_supported(input.scalar_type(), input.device().index());
  const int64_t ih = input.size(2), iw = input.size(3);
  const int64_t oh = output_size[0].expect_int(), ow = output_size[1].expect_int();
  const auto format = input.suggest_memory_format();
  at::Tensor output =
      at::empty({input.size(0), input.size(1), oh, ow}, input.options().memory_format(format));
  if (output.numel() == 0) return output;
  at::Tensor x = input;
  if (ow != iw) {
    at::Tensor across = oh == ih ? output : at::empty({input.size(0), input.size(1), ih, ow}, input.options());
    launch_pass("aa_forward", F, across, x, 3, iw, ow, align_corners, scales_w);
    x = across;
  }
  if (oh != ih) launch_pass("aa_forward", F, output, x, 2, ih, oh, align_corners, scales_h);
  if (oh == ih && ow == iw) output.copy_(input);
  return output;
}

template <Filter F>
at::Tensor& aa_forward_out(const at::Tensor& input, c10::SymIntArrayRef output_size, bool align_corners,
                           Scale scales_h, Scale scales_w, at::Tensor& out) {
  return assign_out(out, aa_forward<F>(input, output_size, align_corners, scales_h, scales_w), {input});
}

template <Filter F>
at::Tensor aa_backward(const at::Tensor& grad_output, c10::SymIntArrayRef output_size, c10::SymIntArrayRef input_size,
                       bool align_corners, Scale scales_h, Scale scales_w) {
  std::vector<int64_t> in;
  for (const c10::SymInt& s : input_size) in.push_back(s.expect_int());
  check_sizes(in, output_size);
  TORCH_CHECK(grad_output.dim() == 4, "Expected grad_output to be a tensor of dimension 4 but got: dimension ",
              grad_output.dim());
  const int64_t expected[4] = {in[0], in[1], output_size[0].expect_int(), output_size[1].expect_int()};
  for (int64_t k = 0; k < 4; ++k)
    TORCH_CHECK(grad_output.size(k) == expected[k], "Expected grad_output to have the same shape as output;",
                " output.size(", k, ") = ", expected[k], " but got grad_output.size(", k, ") = ",
                grad_output.size(k));
  TORCH_CHECK_NOT_IMPLEMENTED(native_dtype(grad_output.scalar_type()), "\"",
                              F == Filter::Bilinear ? "upsample_bilinear2d_aa_backward_cpu"
                                                    : "upsample_bicubic2d_aa_backward_cpu",
                              "\" not implemented for '", c10::toString(grad_output.scalar_type()), "'");
  kernels::check_dtype_supported(grad_output.scalar_type(), grad_output.device().index());
  const auto format = grad_output.suggest_memory_format();
  at::Tensor grad_input = at::empty(in, grad_output.options().memory_format(format));
  if (grad_input.numel() == 0) return grad_input;
  at::Tensor across = at::empty({in[0], in[1], expected[2], in[3]}, grad_output.options());
  launch_pass("aa_backward", F, across, grad_output, 3, in[3], expected[3], align_corners, scales_w);
  launch_pass("aa_backward", F, grad_input, across, 2, in[2], expected[2], align_corners, scales_h);
  return grad_input;
}

template <Filter F>
at::Tensor& aa_backward_out(const at::Tensor& grad_output, c10::SymIntArrayRef output_size,
                            c10::SymIntArrayRef input_size, bool align_corners, Scale scales_h, Scale scales_w,
                            at::Tensor& grad_input) {
  return assign_out(grad_input,
                    aa_backward<F>(grad_output, output_size, input_size, align_corners, scales_h, scales_w),
                    {grad_output});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_upsample_bilinear2d_aa", TORCH_FN(aa_forward<Filter::Bilinear>));
  m.impl("_upsample_bilinear2d_aa.out", TORCH_FN(aa_forward_out<Filter::Bilinear>));
  m.impl("_upsample_bilinear2d_aa_backward", TORCH_FN(aa_backward<Filter::Bilinear>));
  m.impl("_upsample_bilinear2d_aa_backward.grad_input", TORCH_FN(aa_backward_out<Filter::Bilinear>));
  m.impl("_upsample_bicubic2d_aa", TORCH_FN(aa_forward<Filter::Bicubic>));
  m.impl("_upsample_bicubic2d_aa.out", TORCH_FN(aa_forward_out<Filter::Bicubic>));
  m.impl("_upsample_bicubic2d_aa_backward", TORCH_FN(aa_backward<Filter::Bicubic>));
  m.impl("_upsample_bicubic2d_aa_backward.grad_input", TORCH_FN(aa_backward_out<Filter::Bicubic>));
}

}  // namespace drawbridge::ops
