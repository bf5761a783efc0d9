// scaled_dot_product_attention on ocl. PyTorch asks each backend which implementation to use
// (_fused_sdp_choice_stub); we answer "overrideable" whenever the fused kernel applies, and
// "math" otherwise (dropout, grouped-query heads, broadcast batch dims, float64), whose
// composition of native ops PyTorch then runs.
//
// The fused forward (cl/attention.cl) never stores the L x S score matrix and returns each row's
// logsumexp; the backward recomputes the probabilities, softmax(q k^T scale + bias), with native
// matrix products in float32 (it stores L x S per head: flash attention's backward without tiling).
#include <ATen/ExpandUtils.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/full.h>
#include <ATen/ops/_safe_softmax.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <numeric>

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "runtime/commands.h"
#include "runtime/device.h"

namespace drawbridge::ops {

namespace {

constexpr int64_t kMaxHeadDim = 512;  // the kernel keeps a query row and an output row in registers

bool fused_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                   const std::optional<at::Tensor>& mask, double dropout_p) {
  if (dropout_p > 0 || q.is_nested() || k.is_nested() || v.is_nested()) return false;
  if (q.dim() < 3 || q.dim() > 4 || k.dim() != q.dim() || v.dim() != q.dim()) return false;
  const c10::ScalarType type = q.scalar_type();
  if (type != c10::kFloat && type != c10::kHalf && type != c10::kBFloat16) return false;
  if (k.scalar_type() != type || v.scalar_type() != type) return false;
  // Anything on another device takes the math path, whose first op raises the device mismatch.
  if (k.device() != q.device() || v.device() != q.device()) return false;
  if (q.sizes().slice(0, q.dim() - 2) != k.sizes().slice(0, k.dim() - 2) ||
      q.sizes().slice(0, q.dim() - 2) != v.sizes().slice(0, v.dim() - 2))
    return false;  // grouped-query heads or broadcast batches: the math path expands them
  if (q.size(-1) != k.size(-1) || k.size(-2) != v.size(-2)) return false;
  if (q.size(-1) > kMaxHeadDim || v.size(-1) > kMaxHeadDim || q.numel() == 0 || k.numel() == 0) return false;
  if (mask && mask->defined()) {
    if (mask->dim() > 4 || mask->is_nested() || mask->device() != q.device()) return false;
    if (mask->scalar_type() != c10::kBool && !c10::isFloatingType(mask->scalar_type())) return false;
  }
  return true;
}

int64_t choose_sdp_backend(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                           const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                           std::optional<double> scale, bool enable_gqa) {
  return static_cast<int64_t>(fused_applies(query, key, value, attn_mask, dropout_p) ? at::SDPBackend::overrideable
                                                                                     : at::SDPBackend::math);
}

double scale_for(const at::Tensor& query, std::optional<double> scale) {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
}

// 4-d (batch, head, row, column) views: a 3-d input gets a head dim of 1.
at::Tensor as_4d(const at::Tensor& t) { return t.dim() == 3 ? t.unsqueeze(1) : t; }

// A boolean mask becomes an additive bias (0 where attended, -inf elsewhere) in q's dtype.
at::Tensor additive_bias(const at::Tensor& mask, const at::Tensor& query) {
  if (mask.scalar_type() != c10::kBool) return mask.to(query.scalar_type());
  return at::where(mask, at::zeros({}, query.options()),
                   at::full({}, -std::numeric_limits<double>::infinity(), query.options()));
}

// The memory layouts the meta functions of the fused attention ops promise (torch.compile checks
// them): the output follows the query's dim order; each gradient is laid out like its input.
at::Tensor empty_like_layout(const at::Tensor& like, at::IntArrayRef sizes) {
  if (like.sizes() == sizes) return at::empty_like(like);
  std::vector<int64_t> order(like.dim());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return like.stride(a) > like.stride(b); });
  std::vector<int64_t> strides(like.dim());
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= sizes[*it];
  }
  return at::empty_strided(sizes, strides, like.options());
}

at::Tensor laid_out_like(const at::Tensor& result, const at::Tensor& like) {
  if (!result.defined()) return result;
  at::Tensor target = at::empty_like(like);
  if (target.strides() == result.strides()) return result;
  return target.copy_(result);
}

struct AttentionDesc {
  cl_long heads, q_len, kv_len;
  cl_long q_stride[4], k_stride[4], v_stride[4], bias_stride[4];
};

void copy_strides(const at::Tensor& t, cl_long* out) {
  for (int d = 0; d < 4; ++d) out[d] = t.size(d) == 1 ? 0 : t.stride(d);
}

using FusedResult = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor,
                               at::Tensor, at::Tensor>;

FusedResult fused_attention(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                            const std::optional<at::Tensor>& attn_bias, double dropout_p, bool is_causal,
                            bool return_debug_mask, std::optional<double> scale) {
  TORCH_CHECK(fused_applies(query, key, value, attn_bias, dropout_p),
              "_scaled_dot_product_fused_attention_overrideable: unsupported inputs on ocl (query ", query.sizes(),
              " ", query.scalar_type(), ", key ", key.sizes(), ", value ", value.sizes(), ", dropout_p ", dropout_p,
              ")");
  at::Tensor q = as_4d(query), k = as_4d(key), v = as_4d(value);
  const int64_t batch = q.size(0), heads = q.size(1), q_len = q.size(2), kv_len = k.size(2);
  const int64_t head_dim = q.size(3), value_dim = v.size(3);
  at::Tensor out = at::empty({batch, heads, q_len, value_dim}, q.options());
  at::Tensor lse = at::empty({batch, heads, q_len}, q.options().dtype(c10::kFloat));
  at::Tensor bias;
  if (attn_bias && attn_bias->defined()) bias = additive_bias(*attn_bias, q).expand({batch, heads, q_len, kv_len});

  runtime::Device& device = core::checked_device(q.device().index());
  // NARGS sizes common.clh's IterDesc, which this kernel does not use.
  std::string options = std::string("-DNARGS=6 -DT=") + kernels::dtype_token(q.scalar_type()) +
                        " -DHEAD_DIM=" + std::to_string(head_dim) + " -DVALUE_DIM=" + std::to_string(value_dim);
  if (is_causal) options += " -DCAUSAL";
  if (q.scalar_type() == c10::kFloat && q.stride(3) == 1 && k.stride(3) == 1 && v.stride(3) == 1 &&
      head_dim % 8 == 0 && value_dim % 8 == 0)
    options += " -DVECTOR_ROWS";
  if (bias.defined()) options += " -DBIAS";
  runtime::Kernel& kernel = kernels::get_kernel(device, "attention.cl", options, "attention_forward");

  AttentionDesc desc{heads, q_len, kv_len, {}, {}, {}, {}};
  copy_strides(q, desc.q_stride);
  copy_strides(k, desc.k_stride);
  copy_strides(v, desc.v_stride);
  if (bias.defined()) copy_strides(bias, desc.bias_stride);
  const at::Tensor& bias_or_q = bias.defined() ? bias : q;  // never read without BIAS
  std::vector<runtime::BufferRef> refs;
  for (const at::Tensor* t : std::initializer_list<const at::Tensor*>{&out, &lse, &q, &k, &v, &bias_or_q})
    refs.push_back(device.memory().resolve(t->const_data_ptr()));
  const cl_float scale_value = static_cast<cl_float>(scale_for(query, scale));
  const cl_long rows = batch * heads * q_len;
  std::vector<runtime::KernelArg> args{{sizeof(desc), &desc}};
  for (const runtime::BufferRef& ref : refs) {
    args.push_back({sizeof(cl_mem), &ref.mem});
    args.push_back({sizeof(cl_ulong), &ref.offset});
  }
  args.push_back({sizeof(scale_value), &scale_value});
  args.push_back({sizeof(rows), &rows});
  c10::DeviceGuard guard(q.device());
  const size_t local = std::min<size_t>(64, kernel.max_work_group_size);
  runtime::launch_args(kernel, core::current_queue(q.device().index()), (rows + local - 1) / local, local, args.data(),
                       args.size());
  if (query.dim() == 3) out = out.squeeze(1);  // the logsumexp stays (1, heads, rows), as the meta function says
  std::vector<int64_t> out_sizes = query.sizes().vec();
  out_sizes.back() = value_dim;
  at::Tensor laid_out = empty_like_layout(query, out_sizes);
  if (laid_out.strides() != out.strides()) out = laid_out.copy_(out);
  // No dropout: the philox seed and offset are placeholders (0-d, as the meta function says).
  at::Tensor seed = at::zeros({}, q.options().dtype(c10::kLong)), offset = at::zeros({}, q.options().dtype(c10::kLong));
  return {out, lse, at::Tensor(), at::Tensor(), c10::SymInt(q_len), c10::SymInt(kv_len), seed, offset, at::Tensor()};
}

// The gradients from the recomputed probabilities, in float32.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const at::Tensor& out,
    const at::Tensor& logsumexp, const at::Tensor& cum_seq_q, const at::Tensor& cum_seq_k, c10::SymInt max_q,
    c10::SymInt max_k, double dropout_p, bool is_causal, const at::Tensor& philox_seed,
    const at::Tensor& philox_offset, std::optional<double> scale) {
  TORCH_CHECK(dropout_p == 0, "the fused ocl attention has no dropout; its backward got dropout_p ", dropout_p);
  const double s = scale_for(query, scale);
  auto wide = [](const at::Tensor& t) { return t.to(c10::kFloat); };
  at::Tensor q = wide(query), k = wide(key), v = wide(value), d_out = wide(grad_out);
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)).mul_(s);
  if (attn_bias.defined()) scores.add_(wide(additive_bias(attn_bias, query)));
  if (is_causal)
    scores.masked_fill_(at::ones({q.size(-2), k.size(-2)}, q.options().dtype(c10::kBool)).triu_(1),
                        -std::numeric_limits<double>::infinity());
  // Softmax (rows with no visible key are 0, as in the forward) rather than exp(s - lse): the
  // logsumexp from the kernel carries its exp/log rounding into every probability.
  at::Tensor probs = at::_safe_softmax(scores, -1);
  at::Tensor grad_q, grad_k, grad_v, grad_bias;
  if (grad_input_mask[2]) grad_v = at::matmul(probs.transpose(-2, -1), d_out).to(value.scalar_type());
  // d scores = P * (dP - rowsum(P * dP)), dP = dO V^T. (rowsum(P * dP) equals rowsum(dO * O), but
  // this form is exactly 0 where a row attends to a single key, as the CPU's result is.)
  at::Tensor d_probs = at::matmul(d_out, v.transpose(-2, -1));
  at::Tensor d_scores = (d_probs - (probs * d_probs).sum(-1, true)).mul_(probs);
  if (grad_input_mask[0]) grad_q = at::matmul(d_scores, k).mul_(s).to(query.scalar_type());
  if (grad_input_mask[1]) grad_k = at::matmul(d_scores.transpose(-2, -1), q).mul_(s).to(key.scalar_type());
  if (grad_input_mask[3] && attn_bias.defined())
    grad_bias = at::sum_to(d_scores, attn_bias.sizes()).to(attn_bias.scalar_type());
  return {laid_out_like(grad_q, query), laid_out_like(grad_k, key), laid_out_like(grad_v, value),
          laid_out_like(grad_bias, attn_bias)};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fused_attention));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", TORCH_FN(fused_attention_backward));
}

}  // namespace drawbridge::ops

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &drawbridge::ops::choose_sdp_backend);
}  // namespace at::native
