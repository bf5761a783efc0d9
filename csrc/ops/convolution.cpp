// Convolution (PyTorch routes a PrivateUse1 convolution to convolution_overrideable).
//
// Forward and backward of 1-, 2- and 3-d convolutions, ordinary and transposed, with stride,
// padding, dilation, output_padding and groups, as im2col + GEMM: cl/windows.cl gathers every
// receptive field into columns, CLBlast multiplies them by the weights, and col2im sums columns
// back into an image. A transposed convolution is the adjoint of the ordinary one whose image is
// its output, so the three products (correlate, its adjoint, its weight gradient) serve both.
// On CPU-class devices correlate's im2col writes the packed GEMM's panels of B directly, and the
// weight gradient of a 1-d or 2-d layer reads the windows of the padded image in place. A 1x1
// convolution's image is its own columns; depthwise convolutions have direct kernels instead.
// unfold/fold (im2col/col2im) are the same two maps.
#include <array>
#include <optional>
#include <vector>

#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "kernels/packed_gemm.h"
#include "kernels/pointwise_launcher.h"
#include "kernels/tensor_operands.h"
#include "runtime/commands.h"
#include "runtime/device.h"

namespace drawbridge::ops {

namespace {

// A sliding-window product over an image: its unpadded spatial sizes (`image`), the padded ones
// and the positions of the window (`out_size`).
struct ConvGeometry {
  int64_t groups = 1;
  std::vector<int64_t> stride, padding, dilation, kernel, image, padded, out_size;
};

int64_t pick(c10::SymIntArrayRef v, size_t d) { return v[v.size() == 1 ? 0 : d].expect_int(); }

std::vector<int64_t> per_dim(c10::SymIntArrayRef v, size_t dims) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < dims; ++d) out.push_back(pick(v, d));
  return out;
}

ConvGeometry geometry(std::vector<int64_t> image, std::vector<int64_t> kernel, std::vector<int64_t> stride,
                      std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups) {
  ConvGeometry g{groups, std::move(stride), std::move(padding), std::move(dilation), std::move(kernel),
                 std::move(image)};
  for (size_t d = 0; d < g.image.size(); ++d) {
    g.padded.push_back(g.image[d] + 2 * g.padding[d]);
    const int64_t span = g.dilation[d] * (g.kernel[d] - 1) + 1;
    TORCH_CHECK(g.padded[d] >= span, "Calculated padded input size per channel: (", g.padded[d],
                "). Kernel size: (", span, "). Kernel size can't be greater than actual input size");
    g.out_size.push_back((g.padded[d] - span) / g.stride[d] + 1);
  }
  return g;
}

ConvGeometry geometry(std::vector<int64_t> image, const at::Tensor& weight, c10::SymIntArrayRef stride,
                      c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, int64_t groups) {
  const size_t dims = image.size();
  return geometry(std::move(image), weight.sizes().slice(2).vec(), per_dim(stride, dims), per_dim(padding, dims),
                  per_dim(dilation, dims), groups);
}

std::vector<int64_t> spatial_sizes(const at::Tensor& t) { return t.sizes().slice(2).vec(); }

// The WindowDesc of cl/windows.cl: spatial dims right-aligned into three.
struct WindowDesc {
  cl_long batch, channels;
  cl_long image[3], out[3], window[3], stride[3], padding[3], dilation[3];
  cl_long image_stride[5];
  cl_long column_stride[2];
};

// Where a sample's columns go: unfold/fold's (N, C * K, L), or (C * K, N, L) for convolutions,
// which multiply the whole batch's columns in one GEMM per group instead of one per sample.
enum class ColumnLayout { per_sample, batch_in_columns };

WindowDesc window_desc(const ConvGeometry& g, int64_t batch, int64_t channels, ColumnLayout layout) {
  WindowDesc d{batch, channels, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0, 0, 0},
               {0, 0}};
  const size_t lead = 3 - g.image.size();
  for (size_t k = 0; k < g.image.size(); ++k) {
    d.image[lead + k] = g.image[k];
    d.out[lead + k] = g.out_size[k];
    d.window[lead + k] = g.kernel[k];
    d.stride[lead + k] = g.stride[k];
    d.padding[lead + k] = g.padding[k];
    d.dilation[lead + k] = g.dilation[k];
  }
  const int64_t rows = channels * c10::multiply_integers(g.kernel), columns = c10::multiply_integers(g.out_size);
  d.column_stride[0] = layout == ColumnLayout::per_sample ? rows * columns : columns;
  d.column_stride[1] = layout == ColumnLayout::per_sample ? columns : batch * columns;
  return d;
}

// Runs kernel `name` of cl/windows.cl on `work_items` items in work-groups of `local` (the
// driver's limit permitting; 0 takes 64): the WindowDesc, each operand as buffer and offset (the
// written one first), then the depthwise kernels' channel multiplier.
void launch_windows(const char* name, const char* token, const WindowDesc& desc,
                    std::initializer_list<at::Tensor> operands, int64_t work_items,
                    const std::string& extra_options = "", std::optional<cl_long> multiplier = std::nullopt,
                    size_t local = 0) {
  if (work_items == 0) return;
  const c10::Device where = operands.begin()->device();
  c10::DeviceGuard guard(where);
  runtime::Device& device = core::checked_device(where.index());
  runtime::Kernel& kernel =
      kernels::get_kernel(device, "windows.cl", std::string("-DNARGS=2 -DT=") + token + extra_options, name);
  const kernels::TensorOperands tensors(device, operands);
  std::vector<runtime::KernelArg> args{{sizeof(desc), &desc}};
  tensors.append(args);
  if (multiplier) args.push_back({sizeof(cl_long), &*multiplier});
  if (local == 0) local = std::min<size_t>(64, kernel.max_work_group_size);
  TORCH_CHECK(local <= kernel.max_work_group_size, name, " needs work-groups of ", local,
              " work-items; the device allows ", kernel.max_work_group_size);
  runtime::launch_args(kernel, core::current_queue(where.index()), (size_t(work_items) + local - 1) / local, local,
                       args.data(), args.size());
}

// im2col's WindowDesc of `image`, which may be strided.
WindowDesc image_windows(const at::Tensor& image, const ConvGeometry& g, ColumnLayout layout) {
  WindowDesc d = window_desc(g, image.size(0), image.size(1), layout);
  d.image_stride[0] = image.stride(0);
  d.image_stride[1] = image.stride(1);
  for (size_t k = 0; k < g.image.size(); ++k) d.image_stride[2 + 3 - g.image.size() + k] = image.stride(2 + k);
  return d;
}

// im2col: the columns of the image, zeros where a window hangs over: (N, groups, C/groups * K, L)
// per sample, or (groups, C/groups * K, N * L) with the batch in the columns.
at::Tensor image_to_columns(const at::Tensor& image, const ConvGeometry& g, ColumnLayout layout) {
  const int64_t n = image.size(0), channels = image.size(1);
  const int64_t kernel = c10::multiply_integers(g.kernel), columns = c10::multiply_integers(g.out_size);
  const int64_t rows = channels / g.groups * kernel;
  at::Tensor cols = layout == ColumnLayout::per_sample ? at::empty({n, g.groups, rows, columns}, image.options())
                                                       : at::empty({g.groups, rows, n * columns}, image.options());
  const WindowDesc d = image_windows(image, g, layout);
  launch_windows("im2col", kernels::raw_token(image.element_size()), d, {cols, image},
                 n * channels * kernel * d.out[0] * d.out[1]);
  return cols;
}

// col2im: the image (N, channels, image...) whose every element sums the column entries that
// im2col would have taken from it, for a batch of n samples.
at::Tensor columns_to_image(const at::Tensor& columns, const ConvGeometry& g, int64_t n, int64_t channels,
                            ColumnLayout layout) {
  const char* token = kernels::dtype_token(columns.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(token, "col2im on ocl does not support ", columns.scalar_type());
  std::vector<int64_t> shape{n, channels};
  shape.insert(shape.end(), g.image.begin(), g.image.end());
  at::Tensor image = at::empty(shape, columns.options());
  WindowDesc d = window_desc(g, n, channels, layout);
  launch_windows("col2im", token, d, {image, columns.contiguous()}, n * channels * d.image[0] * d.image[1]);
  return image;
}

// A 1x1 window at unit stride without padding reads every image position once, in order: a
// sample's columns are its image, and the products take it as it is (no im2col, no col2im).
bool is_pointwise(const ConvGeometry& g) {
  for (size_t d = 0; d < g.kernel.size(); ++d)
    if (g.kernel[d] != 1 || g.stride[d] != 1 || g.padding[d] != 0) return false;
  return true;
}

// The columns a convolution's products read (only read: a 1x1 convolution's may be a view of
// the image, which unfold's result must never be).
at::Tensor convolution_columns(const at::Tensor& image, const ConvGeometry& g, ColumnLayout layout) {
  if (layout == ColumnLayout::per_sample && is_pointwise(g))
    return image.reshape({image.size(0), g.groups, image.size(1) / g.groups, c10::multiply_integers(g.out_size)});
  return image_to_columns(image, g, layout);
}

// The three products compute in the compute type (float32 for float16/bfloat16) and return it,
// so that a result (bias included) is rounded once, as on the CPU.
at::Tensor wide(const at::Tensor& t) { return t.to(kernels::compute_type(t.scalar_type())); }

// Convolutions with few output positions per sample (deep layers: 7x7, 14x14) multiply the
// whole batch's columns in one GEMM per group: per-sample products would be too narrow to run
// well. With many positions a product per sample is already large, and saves the transposes to
// and from (C, N, L) that one GEMM needs. Measured on PoCL (bench/conv_layer.py, batch 8, best
// of 3-4 noisy runs): one GEMM took 78 ms instead of 186 at 512 channels 7x7 and 85 instead of 95
// at 256 x 14x14, but 109 instead of 91 at 128 x 28x28 and 226 instead of 200 at 64 x 56x56.
constexpr int64_t kColumnsForPerSampleProducts = 512;

ColumnLayout conv_layout(const ConvGeometry& g) {
  return c10::multiply_integers(g.out_size) >= kColumnsForPerSampleProducts ? ColumnLayout::per_sample
                                                                             : ColumnLayout::batch_in_columns;
}

// A result-shaped tensor (N, O, out...) as the products see it: (N, groups, O/groups, L) per
// sample, (groups, O/groups, N * L) with the batch in the columns.
at::Tensor result_as_matrix(const at::Tensor& result, int64_t groups, ColumnLayout layout) {
  // Sizes spelled out, not -1: an empty batch leaves -1 undetermined.
  const int64_t n = result.size(0), channels = result.size(1);
  const int64_t positions = c10::multiply_integers(result.sizes().slice(2));
  if (layout == ColumnLayout::per_sample) return wide(result).reshape({n, groups, channels / groups, positions});
  return wide(result).reshape({n, channels, positions}).transpose(0, 1).reshape(
      {groups, channels / groups, n * positions});
}

// The weight (O, C/groups, K...) as the products see it: (1, groups, O/groups, C/groups * K) per
// sample (broadcast over the batch), (groups, O/groups, C/groups * K) with the batch in the columns.
at::Tensor weight_as_matrix(const at::Tensor& weight, int64_t groups, ColumnLayout layout) {
  const int64_t out_channels = weight.size(0);
  at::Tensor w = wide(weight).reshape({groups, out_channels / groups, -1});
  return layout == ColumnLayout::per_sample ? w.unsqueeze(0) : w;
}

// On CPU-class devices, whose packed GEMM multiplies panels of B, im2col writes the products'
// columns as those panels itself (kernels/packed_gemm.h), instead of columns that the GEMM would
// then copy into panels: one pass over them fewer. groups == 1, float32 or float64. Not for a
// 1x1 convolution's products per sample, whose columns are the image as it is: packing reads it
// in order, where the panels' rows would each read another channel's plane (at 256 -> 64
// channels, 56x56: 28 ms of device time per step that way, 38 through the panels).
bool columns_as_panels(const at::Tensor& input, const ConvGeometry& g, ColumnLayout layout) {
  if (layout == ColumnLayout::per_sample && is_pointwise(g)) return false;
  const c10::ScalarType type = kernels::compute_type(input.scalar_type());
  return g.groups == 1 && kernels::packed_gemm_serves(core::checked_device(input.device().index()), type);
}

int64_t panel_columns(const at::Tensor& t) {
  return kernels::packed_gemm_panel_columns(core::checked_device(t.device().index()), t.scalar_type());
}

int64_t whole_panels(int64_t columns, int64_t width) { return (columns + width - 1) / width * width; }

// a[p] (m x depth; a of one matrix serves every product) @ the B whose panels im2col wrote, for
// each of `products`: (products, m, columns).
at::Tensor multiply_by_panels(const at::Tensor& a, int64_t products, const at::Tensor& b_panels, int64_t columns) {
  runtime::Device& device = core::checked_device(a.device().index());
  const int64_t m = a.size(-2), depth = a.size(-1);
  at::Tensor out = at::empty({products, m, columns}, a.options());
  const runtime::BufferRef a_ref = device.memory().resolve(a.const_data_ptr());
  const runtime::BufferRef o_ref = device.memory().resolve(out.const_data_ptr());
  const size_t bytes = a.element_size();
  const size_t a_batch_stride = a.size(0) == 1 ? 0 : m * depth;
  const kernels::BlasMatrix a_matrix{a_ref.mem, a_ref.offset / bytes, size_t(depth), a_batch_stride, false};
  const kernels::BlasMatrix c{o_ref.mem, o_ref.offset / bytes, size_t(columns), size_t(m * columns), false};
  c10::DeviceGuard guard(a.device());
  kernels::packed_gemm_with_b_panels(device, core::current_queue(a.device().index()), a.scalar_type(), m, columns, depth,
                                     1.0, a_matrix, device.memory().resolve(b_panels.const_data_ptr()), 0.0, c,
                                     products);
  return out;
}

// The weight gradient of a 1-d or 2-d convolution as (columns @ result^T)^T, per sample: the
// columns are windows of the zero-padded image, which the packed product reads in place
// (kernels/packed_gemm.h's ALayout), so they are never written: row (c, k_0, k_1) at channel c
// shifted by the window offset, depth (o_0, o_1) the output positions. The padded copy is about
// one image; the columns would be K of them.
bool weight_grad_reads_windows(const at::Tensor& image, const ConvGeometry& g, ColumnLayout layout) {
  return layout == ColumnLayout::per_sample && g.image.size() <= 2 && columns_as_panels(image, g, layout);
}

at::Tensor weight_grad_from_windows(const at::Tensor& image, const at::Tensor& result, const ConvGeometry& g) {
  const size_t dims = g.image.size();
  if (image.size(0) == 0) return at::zeros({result.size(1), image.size(1) * c10::multiply_integers(g.kernel)},
                                           image.options().dtype(kernels::compute_type(image.scalar_type())));
  std::vector<int64_t> pad;  // last dim first, as constant_pad_nd takes it
  for (size_t d = dims; d-- > 0;) pad.insert(pad.end(), {g.padding[d], g.padding[d]});
  const at::Tensor padded = at::constant_pad_nd(wide(image), pad, 0).contiguous();
  const at::Tensor grad_out = wide(result).contiguous();
  // Spatial dims right-aligned into two: a 1-d convolution is one line.
  auto last2 = [&](const std::vector<int64_t>& v, int64_t fill) {
    return std::array<int64_t, 2>{dims == 2 ? v[0] : fill, v[dims - 1]};
  };
  const auto window = last2(g.kernel, 1), stride = last2(g.stride, 1), dilation = last2(g.dilation, 1);
  const auto out = last2(g.out_size, 1);
  const int64_t width = padded.size(-1), plane = c10::multiply_integers(padded.sizes().slice(2));
  const int64_t n = image.size(0), channels = image.size(1), out_channels = result.size(1);
  const int64_t rows = channels * window[0] * window[1], positions = out[0] * out[1];
  runtime::Device& device = core::checked_device(image.device().index());
  const size_t bytes = padded.element_size();
  const runtime::BufferRef x = device.memory().resolve(padded.const_data_ptr());
  kernels::ALayout windows{};
  windows.offset = x.offset / bytes;
  windows.row_group = window[0] * window[1];  // rows (c, k_0, k_1): a channel's window offsets
  windows.row_width = window[1];
  windows.group_stride = plane;
  windows.row_y_stride = dilation[0] * width;
  windows.row_x_stride = dilation[1];
  windows.depth_width = out[1];  // depth (o_0, o_1): the output positions
  windows.depth_y_stride = stride[0] * width;
  windows.depth_x_stride = stride[1];
  windows.batch_stride = channels * plane;
  const runtime::BufferRef dy = device.memory().resolve(grad_out.const_data_ptr());
  const kernels::BlasMatrix b{dy.mem, dy.offset / bytes, size_t(positions), size_t(out_channels * positions), true};
  at::Tensor grad = at::empty({n, rows, out_channels}, padded.options());
  const runtime::BufferRef o = device.memory().resolve(grad.const_data_ptr());
  const kernels::BlasMatrix c{o.mem, o.offset / bytes, size_t(out_channels), size_t(rows * out_channels), false};
  c10::DeviceGuard guard(image.device());
  kernels::packed_gemm_with_a_layout(device, core::current_queue(image.device().index()), padded.scalar_type(), rows,
                                     out_channels, positions, 1.0, x.mem, windows, b, 0.0, c, n);
  return grad.sum(0).t();
}

// weight (O, C * K) @ columns (C * K, L) for each sample, (N, O, L); or with the batch in the
// columns, weight @ (C * K, N * L), (1, O, N * L).
at::Tensor correlate_by_panels(const at::Tensor& input, const at::Tensor& weight, const ConvGeometry& g,
                               ColumnLayout layout) {
  const at::Tensor x = wide(input), w = wide(weight).reshape({1, weight.size(0), -1}).contiguous();
  const int64_t n = x.size(0), rows = w.size(2), positions = c10::multiply_integers(g.out_size);
  const int64_t width = panel_columns(x);
  const bool per_sample = layout == ColumnLayout::per_sample;
  WindowDesc d = image_windows(x, g, layout);
  d.column_stride[0] = per_sample ? whole_panels(positions, width) : positions;  // the first column of each sample
  const int64_t columns = whole_panels(n * d.column_stride[0], width);
  at::Tensor panels = at::empty({columns * rows}, x.options());
  launch_windows("im2col_panels", kernels::raw_token(x.element_size()), d, {panels, x}, columns / width * rows,
                 " -DPANEL_COLUMNS=" + std::to_string(width));
  return multiply_by_panels(w, per_sample ? n : 1, panels, per_sample ? positions : n * positions);
}

// result (O, L) @ columns^T (L, C * K) for each sample, summed; or with the batch in the depth,
// (O, N * L) @ (N * L, C * K) once. im2col writes the columns^T as the panels.
at::Tensor weight_grad_by_panels(const at::Tensor& image, const at::Tensor& result, const ConvGeometry& g,
                                 ColumnLayout layout) {
  const at::Tensor x = wide(image);
  const int64_t n = x.size(0), rows = x.size(1) * c10::multiply_integers(g.kernel);
  const int64_t positions = c10::multiply_integers(g.out_size), width = panel_columns(x);
  const bool per_sample = layout == ColumnLayout::per_sample;
  const int64_t products = per_sample ? n : 1, depth = per_sample ? positions : n * positions;
  if (products == 0 || depth == 0) return at::zeros({result.size(1), rows}, x.options());
  WindowDesc d = image_windows(x, g, layout);
  d.column_stride[0] = per_sample ? whole_panels(rows, width) * depth : 0;  // each sample's own product
  d.column_stride[1] = per_sample ? 0 : positions;                          // its positions in a shared one
  at::Tensor panels = at::empty({products * whole_panels(rows, width) * depth}, x.options());
  launch_windows("im2col_transposed_panels", kernels::raw_token(x.element_size()), d, {panels, x},
                 whole_panels(rows, width) / width * n * d.out[0] * d.out[1],
                 " -DPANEL_COLUMNS=" + std::to_string(width));
  const at::Tensor a = (per_sample ? wide(result).reshape({n, result.size(1), positions})
                                   : result_as_matrix(result, 1, layout))
                           .contiguous();
  const at::Tensor grad = multiply_by_panels(a, products, panels, rows);
  return per_sample ? grad.sum(0) : grad[0];
}

// (N, O, out...) = weight (O, C/groups, K...) applied to every window of input (N, C, image...).
at::Tensor correlate(const at::Tensor& input, const at::Tensor& weight, const ConvGeometry& g) {
  const int64_t n = input.size(0), out_channels = weight.size(0);
  const ColumnLayout layout = conv_layout(g);
  at::Tensor out = columns_as_panels(input, g, layout)
                       ? correlate_by_panels(input, weight, g, layout)
                       : at::matmul(weight_as_matrix(weight, g.groups, layout), convolution_columns(wide(input), g, layout));
  std::vector<int64_t> shape{n, out_channels};
  shape.insert(shape.end(), g.out_size.begin(), g.out_size.end());
  if (layout == ColumnLayout::per_sample) return out.reshape(shape);
  // contiguous, as convolution's meta function promises (a reshape of the transpose is a view)
  return out.reshape({out_channels, n, -1}).transpose(0, 1).contiguous().view(shape);
}

// The adjoint of correlate: (N, C, image...) from a result-shaped tensor (N, O, out...).
at::Tensor correlate_adjoint(const at::Tensor& result, const at::Tensor& weight, const ConvGeometry& g,
                             int64_t channels) {
  const ColumnLayout layout = conv_layout(g);
  at::Tensor cols = at::matmul(weight_as_matrix(weight, g.groups, layout).transpose(-1, -2),
                               result_as_matrix(result, g.groups, layout));
  if (layout == ColumnLayout::per_sample && is_pointwise(g)) {
    std::vector<int64_t> shape{result.size(0), channels};
    shape.insert(shape.end(), g.image.begin(), g.image.end());
    return cols.reshape(shape);
  }
  return columns_to_image(cols, g, result.size(0), channels, layout);
}

// The weight gradient of correlate: windows of `image` against the result-shaped `result`.
at::Tensor correlate_weight_grad(const at::Tensor& image, const at::Tensor& result, const at::Tensor& weight,
                                 const ConvGeometry& g) {
  const ColumnLayout layout = conv_layout(g);
  at::Tensor grad;
  if (weight_grad_reads_windows(image, g, layout)) {
    grad = weight_grad_from_windows(image, result, g);
  } else if (columns_as_panels(image, g, layout)) {
    grad = weight_grad_by_panels(image, result, g, layout);
  } else {
    at::Tensor cols = convolution_columns(wide(image), g, layout);
    grad = at::matmul(result_as_matrix(result, g.groups, layout), cols.transpose(-1, -2));
    if (layout == ColumnLayout::per_sample) grad = grad.sum(0);
  }
  return grad.reshape(weight.sizes()).to(weight.scalar_type());
}

at::Tensor bias_grad(const at::Tensor& grad_output) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < grad_output.dim(); ++d) dims.push_back(d);
  return grad_output.sum(dims);
}

void check_conv(const at::Tensor& input, const at::Tensor& weight, int64_t groups, bool transposed) {
  TORCH_CHECK(input.dim() >= 3 && input.dim() <= 5, "Expected 3D, 4D or 5D input to convolution, but got input of size: ",
              input.sizes());
  TORCH_CHECK(weight.dim() == input.dim(), "Expected ", input.dim(), "-dimensional weight for ", input.dim(),
              "-dimensional input ", input.sizes(), ", but got ", weight.dim(), "-dimensional weight of size ",
              weight.sizes());
  TORCH_CHECK(groups > 0 && weight.size(0) % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ",
              groups, " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  const int64_t expected = transposed ? weight.size(0) : weight.size(1) * groups;
  TORCH_CHECK(input.size(1) == expected, "Given ", transposed ? "transposed=1" : "groups=" + std::to_string(groups),
              ", weight of size ", weight.sizes(), ", expected input", input.sizes(), " to have ", expected,
              " channels, but got ", input.size(1), " channels instead");
}

// A transposed convolution is the adjoint of the ordinary one whose image is its output.
ConvGeometry transposed_geometry(const at::Tensor& input, const at::Tensor& weight, c10::SymIntArrayRef stride,
                                 c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                                 c10::SymIntArrayRef output_padding, int64_t groups) {
  std::vector<int64_t> image;
  for (int64_t d = 0; d + 2 < input.dim(); ++d) {
    const int64_t s = pick(stride, d), dil = pick(dilation, d), extra = pick(output_padding, d);
    TORCH_CHECK(extra < s || extra < dil, "output padding must be smaller than either stride or dilation, but got ",
                "output_padding: ", extra, ", stride: ", s, ", dilation: ", dil);
    const int64_t size = (input.size(2 + d) - 1) * s - 2 * pick(padding, d) + dil * (weight.size(2 + d) - 1) + extra + 1;
    TORCH_CHECK(size > 0, "Given input size per channel: ", input.sizes().slice(2), ", the calculated output size is ",
                "not positive: ", size);
    image.push_back(size);
  }
  ConvGeometry g = geometry(std::move(image), weight, stride, padding, dilation, groups);
  // Windows are the input's positions. With output_padding >= stride the image has room for
  // more; the extra rows only receive the bias.
  g.out_size = spatial_sizes(input);
  return g;
}

// ---- depthwise convolutions: direct kernels (cl/windows.cl) ---------------------------------

// Every input channel its own group, with `multiplier` output channels each.
bool is_depthwise(const at::Tensor& input, const at::Tensor& weight, int64_t groups) {
  const c10::ScalarType type = kernels::compute_type(input.scalar_type());
  return groups > 1 && groups == input.size(1) && weight.size(1) == 1 && (type == at::kFloat || type == at::kDouble);
}

// The work-group size of depthwise_weight_grad (DEPTHWISE_GROUP in cl/windows.cl).
constexpr size_t kDepthwiseGroup = 64;

cl_long multiplier(const at::Tensor& weight, const ConvGeometry& g) { return weight.size(0) / g.groups; }

// The rows of the last spatial dim that the forward and input-gradient kernels each walk.
int64_t rows_of(const at::Tensor& t) { return c10::multiply_integers(t.sizes().slice(0, t.dim() - 1)); }

at::Tensor depthwise_forward(const at::Tensor& input, const at::Tensor& weight, const ConvGeometry& g) {
  const at::Tensor x = wide(input), w = wide(weight).contiguous();
  std::vector<int64_t> shape{x.size(0), weight.size(0)};
  shape.insert(shape.end(), g.out_size.begin(), g.out_size.end());
  at::Tensor out = at::empty(shape, x.options());
  launch_windows("depthwise_forward", kernels::dtype_token(x.scalar_type()),
                 image_windows(x, g, ColumnLayout::per_sample), {out, x, w}, rows_of(out), "", multiplier(weight, g));
  return out;
}

at::Tensor depthwise_input_grad(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
                                const ConvGeometry& g) {
  const at::Tensor grad_out = wide(grad_output).contiguous(), w = wide(weight).contiguous();
  at::Tensor grad = at::empty(input.sizes(), grad_out.options());
  launch_windows("depthwise_input_grad", kernels::dtype_token(grad.scalar_type()),
                 window_desc(g, input.size(0), input.size(1), ColumnLayout::per_sample), {grad, grad_out, w},
                 rows_of(grad), "", multiplier(weight, g));
  return grad;
}

at::Tensor depthwise_weight_grad(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
                                 const ConvGeometry& g) {
  const at::Tensor grad_out = wide(grad_output).contiguous(), x = wide(input);
  at::Tensor grad = at::empty(weight.sizes(), grad_out.options());
  launch_windows("depthwise_weight_grad", kernels::dtype_token(grad.scalar_type()),
                 image_windows(x, g, ColumnLayout::per_sample), {grad, grad_out, x},
                 grad.numel() * int64_t(kDepthwiseGroup), "", multiplier(weight, g), kDepthwiseGroup);
  return grad.to(weight.scalar_type());
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       c10::SymIntArrayRef stride, c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation,
                       bool transposed, c10::SymIntArrayRef output_padding, c10::SymInt groups) {
  const int64_t group_count = groups.expect_int();
  check_conv(input, weight, group_count, transposed);
  at::Tensor out;
  if (transposed) {
    ConvGeometry g = transposed_geometry(input, weight, stride, padding, dilation, output_padding, group_count);
    out = correlate_adjoint(input, weight, g, weight.size(1) * group_count);
  } else {
    ConvGeometry g = geometry(spatial_sizes(input), weight, stride, padding, dilation, group_count);
    out = is_depthwise(input, weight, group_count) ? depthwise_forward(input, weight, g) : correlate(input, weight, g);
  }
  if (bias && bias->defined()) {
    std::vector<int64_t> bias_shape(out.dim(), 1);
    bias_shape[1] = out.size(1);
    out.add_(bias->view(bias_shape));
  }
  return out.to(input.scalar_type());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed, c10::SymIntArrayRef output_padding,
    c10::SymInt groups, std::array<bool, 3> output_mask) {
  const int64_t group_count = groups.expect_int();
  at::Tensor grad_input, grad_weight, grad_bias;
  if (transposed) {
    ConvGeometry g = transposed_geometry(input, weight, stride, padding, dilation, output_padding, group_count);
    if (output_mask[0]) grad_input = correlate(grad_output, weight, g).to(input.scalar_type());
    if (output_mask[1]) grad_weight = correlate_weight_grad(grad_output, input, weight, g);
  } else {
    ConvGeometry g = geometry(spatial_sizes(input), weight, stride, padding, dilation, group_count);
    const bool depthwise = is_depthwise(input, weight, group_count);
    if (output_mask[0])
      grad_input = (depthwise ? depthwise_input_grad(grad_output, input, weight, g)
                              : correlate_adjoint(grad_output, weight, g, input.size(1)))
                       .to(input.scalar_type());
    if (output_mask[1])
      grad_weight = depthwise ? depthwise_weight_grad(grad_output, input, weight, g)
                              : correlate_weight_grad(input, grad_output, weight, g);
  }
  if (output_mask[2]) grad_bias = bias_grad(grad_output);
  return {grad_input, grad_weight, grad_bias};
}

// ---- unfold / fold (im2col / col2im of 4-d batches, or 3-d single images) --------------------

ConvGeometry unfold_geometry(std::vector<int64_t> image, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                             at::IntArrayRef padding, at::IntArrayRef stride) {
  TORCH_CHECK(kernel_size.size() == 2 && dilation.size() == 2 && padding.size() == 2 && stride.size() == 2,
              "It is expected kernel_size, dilation, padding and stride to be 2-element tuples");
  for (size_t d = 0; d < 2; ++d) {
    TORCH_CHECK(kernel_size[d] > 0 && dilation[d] > 0 && stride[d] > 0 && padding[d] >= 0,
                "kernel size, dilation and stride should be greater than zero and padding non-negative, but got ",
                "kernel_size: ", kernel_size, " dilation: ", dilation, " stride: ", stride, " padding: ", padding);
  }
  return geometry(std::move(image), kernel_size.vec(), stride.vec(), padding.vec(), dilation.vec(), 1);
}

// A batch may be empty; the other dims may not (as on the CPU).
bool empty_batch_only(const at::Tensor& t, int64_t batched_dims) {
  if (t.dim() != batched_dims) return t.numel() > 0;
  for (int64_t d = 1; d < t.dim(); ++d)
    if (t.size(d) == 0) return false;
  return true;
}

at::Tensor im2col(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                  at::IntArrayRef padding, at::IntArrayRef stride) {
  TORCH_CHECK((self.dim() == 3 || self.dim() == 4) && empty_batch_only(self, 4),
              "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions ",
              "for input, but got: ", self.sizes());
  at::Tensor batch = self.dim() == 3 ? self.unsqueeze(0) : self;
  ConvGeometry g = unfold_geometry(spatial_sizes(batch), kernel_size, dilation, padding, stride);
  if (batch.size(0) == 0)
    return at::empty({0, batch.size(1) * c10::multiply_integers(g.kernel), c10::multiply_integers(g.out_size)},
                     self.options());
  at::Tensor cols = image_to_columns(batch, g, ColumnLayout::per_sample);
  cols = cols.reshape({batch.size(0), cols.size(2), cols.size(3)});
  return self.dim() == 3 ? cols.squeeze(0) : cols;
}

at::Tensor col2im(const at::Tensor& self, c10::SymIntArrayRef output_size, at::IntArrayRef kernel_size,
                  at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  TORCH_CHECK((self.dim() == 2 || self.dim() == 3) && empty_batch_only(self, 3),
              "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions ",
              "for input, but got: ", self.sizes());
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ", output_size.size());
  at::Tensor batch = self.dim() == 2 ? self.unsqueeze(0) : self;
  ConvGeometry g = unfold_geometry({output_size[0].expect_int(), output_size[1].expect_int()}, kernel_size, dilation,
                                   padding, stride);
  const int64_t kernel = kernel_size[0] * kernel_size[1];
  TORCH_CHECK(batch.size(1) % kernel == 0, "Expected size of input's dimension 1 to be divisible by the product of ",
              "kernel_size, but got input.size(1)=", batch.size(1), " and kernel_size=", kernel_size);
  TORCH_CHECK(batch.size(2) == c10::multiply_integers(g.out_size), "Given output_size=", output_size,
              ", kernel_size=", kernel_size, ", dilation=", dilation, ", padding=", padding, ", stride=", stride,
              ", expected size of input's dimension 2 to match the calculated number of sliding blocks ",
              c10::multiply_integers(g.out_size), ", but got input.size(2)=", batch.size(2), ".");
  const int64_t channels = batch.size(1) / kernel;
  if (batch.size(0) == 0) return at::empty({0, channels, g.image[0], g.image[1]}, self.options());
  at::Tensor image =
      columns_to_image(wide(batch), g, batch.size(0), channels, ColumnLayout::per_sample).to(self.scalar_type());
  return self.dim() == 2 ? image.squeeze(0) : image;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
  m.impl("im2col", TORCH_FN(im2col));
  m.impl("col2im", TORCH_FN(col2im));
}

}  // namespace drawbridge::ops
