// scaled_dot_product_attention on ocl. PyTorch asks each backend which implementation to use
// (_fused_sdp_choice_stub); we answer "overrideable" whenever the fused kernel applies and
// sdpa_kernel allows it, and "math" otherwise (dropout, grouped-query heads, broadcast batch
// dims, float64), whose composition of native ops PyTorch then runs.
//
// The fused implementation multiplies with the device's GEMM (the packed kernels on CPU devices,
// CLBlast on GPUs), a block of query rows at a time, so that only one block's scores, of bounded
// size, are stored at once: cl/softmax.cl turns them into probabilities and each row's
// logsumexp, and the backward recomputes each block's probabilities from its scores. Computing
// in float32 GEMMs beat the kernel it replaces (one work-item per query row walking the keys) by
// 3-5x on PoCL, and GPUs are where CLBlast's GEMMs are at their best.
#include <ATen/Context.h>
#include <ATen/ExpandUtils.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/full.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <numeric>

#include "ops/row.h"

namespace drawbridge::ops {

namespace {

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
  if (q.numel() == 0 || k.numel() == 0 || v.numel() == 0) return false;
  if (mask && mask->defined()) {
    if (mask->dim() > q.dim() || mask->is_nested() || mask->device() != q.device()) return false;
    if (mask->scalar_type() != c10::kBool && !c10::isFloatingType(mask->scalar_type())) return false;
  }
  return true;
}

int64_t choose_sdp_backend(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                           const std::optional<at::Tensor>& attn_mask, double dropout_p, bool is_causal,
                           std::optional<double> scale, bool enable_gqa) {
  // torch.nn.attention.sdpa_kernel's choice is honoured, as on CUDA.
  const at::Context& context = at::globalContext();
  if (context.userEnabledOverrideableSDP() && fused_applies(query, key, value, attn_mask, dropout_p))
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  TORCH_CHECK(context.userEnabledMathSDP(),
              "scaled_dot_product_attention on ocl: no available kernel (the math backend is disabled and the fused "
              "one ", context.userEnabledOverrideableSDP() ? "does not apply to these inputs" : "is disabled", ")");
  return static_cast<int64_t>(at::SDPBackend::math);
}

double scale_for(const at::Tensor& query, std::optional<double> scale) {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
}

// 4-d (batch, head, row, column) views: a 3-d input gets a head dim of 1.
at::Tensor as_4d(const at::Tensor& t) { return t.dim() == 3 ? t.unsqueeze(1) : t; }

// A boolean mask becomes an additive bias (0 where attended, -inf elsewhere), in float32.
at::Tensor additive_bias(const at::Tensor& mask) {
  const c10::TensorOptions options = mask.options().dtype(c10::kFloat);
  if (mask.scalar_type() != c10::kBool) return mask.to(c10::kFloat);
  return at::where(mask, at::zeros({}, options), at::full({}, -std::numeric_limits<double>::infinity(), options));
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

// The products inside are ours to run in float32: autocast, on during a backward under
// torch.autocast, would round them to 16 bits.
struct NoAutocast {
  c10::impl::ExcludeDispatchKeyGuard guard{c10::DispatchKeySet(c10::DispatchKey::AutocastPrivateUse1)};
};

// Scores of one block of query rows stay near this many bytes (float32): the most attention ever
// stores beyond its inputs and outputs is a few blocks, however long the sequences.
constexpr int64_t kBlockBytes = int64_t(4) << 20;

// One attention problem as the blocks see it: batch and heads folded into the first dim of
// float32 (batch * heads, rows, dim) operands, the query already multiplied by the scale.
struct Attention {
  int64_t batch, heads;
  at::Tensor q, k, v;  // q * scale, k, v
  at::Tensor bias;     // (batch, heads, L, S), expanded, float32; undefined without a mask
  bool causal;
  float scale;

  int64_t q_len() const { return q.size(1); }
  int64_t kv_len() const { return k.size(1); }

  // Query rows per block: a multiple of 8 (the CPU GEMM's tile), the blocks of equal size.
  int64_t block_rows() const {
    const int64_t row_bytes = std::max<int64_t>(1, q.size(0) * kv_len() * 4);
    const int64_t most = std::max<int64_t>(8, kBlockBytes / row_bytes / 8 * 8);
    const int64_t blocks = (q_len() + most - 1) / most;
    return std::min(q_len(), ((q_len() + blocks - 1) / blocks + 7) / 8 * 8);
  }

  // The keys rows [r0, r0 + rows) attend: all, or with is_causal (row i sees keys j <= i, PyTorch's
  // top-left alignment) those before r0 + rows.
  int64_t keys(int64_t r0, int64_t rows) const { return causal ? std::min(kv_len(), r0 + rows) : kv_len(); }

  // The probabilities of rows [r0, r0 + rows) over their keys, (batch * heads, rows, keys), and
  // the rows' logsumexp into lse when it is defined.
  at::Tensor probabilities(int64_t r0, int64_t rows, const at::Tensor& lse) const {
    const int64_t n = keys(r0, rows);
    at::Tensor scores = at::bmm(q.narrow(1, r0, rows), k.narrow(1, 0, n).transpose(1, 2));
    if (bias.defined())
      scores.view({batch, heads, rows, n}).add_(bias.narrow(2, r0, rows).narrow(3, 0, n));
    // Key j > row i is masked: row r0 + i sees keys [0, r0 + i].
    attention_probabilities_(scores, lse, causal ? r0 + 1 : 0);
    return scores;
  }
};

Attention attention_of(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const std::optional<at::Tensor>& attn_bias, bool is_causal, std::optional<double> scale) {
  const at::Tensor q = as_4d(query), k = as_4d(key), v = as_4d(value);
  const int64_t batch = q.size(0), heads = q.size(1), bh = batch * heads;
  const float s = static_cast<float>(scale_for(query, scale));
  // Computed in float32 whatever the inputs (PoCL has no half arithmetic), rounded once at the end.
  at::Tensor scaled_q = at::empty(q.sizes(), q.options().dtype(c10::kFloat));
  scaled_q.copy_(q).mul_(s);
  Attention a{batch, heads, scaled_q.view({bh, q.size(2), q.size(3)}),
              k.to(c10::kFloat).reshape({bh, k.size(2), k.size(3)}),
              v.to(c10::kFloat).reshape({bh, v.size(2), v.size(3)}), at::Tensor(), is_causal, s};
  if (attn_bias && attn_bias->defined()) {
    at::Tensor bias = additive_bias(*attn_bias);
    if (query.dim() == 3) bias = bias.expand({batch, q.size(2), k.size(2)}).unsqueeze(1);
    a.bias = bias.expand({batch, heads, q.size(2), k.size(2)});
  }
  return a;
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
  const NoAutocast no_autocast;
  const Attention a = attention_of(query, key, value, attn_bias, is_causal, scale);
  const int64_t bh = a.q.size(0), length = a.q_len(), step = a.block_rows();
  at::Tensor out = at::empty({bh, length, a.v.size(2)}, a.q.options());
  at::Tensor lse = at::empty({a.batch, a.heads, length}, a.q.options());
  at::Tensor lse_rows = lse.view({bh, length});
  for (int64_t r0 = 0; r0 < length; r0 += step) {
    const int64_t rows = std::min(step, length - r0);
    at::Tensor p = a.probabilities(r0, rows, lse_rows.narrow(1, r0, rows));
    at::Tensor out_rows = out.narrow(1, r0, rows);
    at::bmm_out(out_rows, p, a.v.narrow(1, 0, a.keys(r0, rows)));
  }
  out = out.view({a.batch, a.heads, length, a.v.size(2)}).to(query.scalar_type());
  if (query.dim() == 3) out = out.squeeze(1);  // the logsumexp stays (1, heads, rows), as the meta function says
  std::vector<int64_t> out_sizes = query.sizes().vec();
  out_sizes.back() = a.v.size(2);
  at::Tensor laid_out = empty_like_layout(query, out_sizes);
  if (laid_out.strides() != out.strides()) out = laid_out.copy_(out);
  // No dropout: the philox seed and offset are placeholders (0-d, as the meta function says).
  at::Tensor seed = at::zeros({}, query.options().dtype(c10::kLong));
  at::Tensor offset = at::zeros({}, query.options().dtype(c10::kLong));
  return {out, lse, at::Tensor(), at::Tensor(), c10::SymInt(length), c10::SymInt(a.kv_len()), seed, offset,
          at::Tensor()};
}

// The gradients, block by block of query rows as the forward: each block's probabilities are
// recomputed from the scores, so nothing of size L x S is stored unless the bias's gradient is
// asked for.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_attention_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
    const at::Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const at::Tensor& out,
    const at::Tensor& logsumexp, const at::Tensor& cum_seq_q, const at::Tensor& cum_seq_k, c10::SymInt max_q,
    c10::SymInt max_k, double dropout_p, bool is_causal, const at::Tensor& philox_seed,
    const at::Tensor& philox_offset, std::optional<double> scale) {
  TORCH_CHECK(dropout_p == 0, "the fused ocl attention has no dropout; its backward got dropout_p ", dropout_p);
  TORCH_CHECK(fused_applies(query, key, value, attn_bias, dropout_p),
              "_scaled_dot_product_fused_attention_overrideable_backward: unsupported inputs on ocl (query ",
              query.sizes(), " ", query.scalar_type(), ")");
  const NoAutocast no_autocast;
  const Attention a = attention_of(query, key, value, attn_bias, is_causal, scale);
  const int64_t bh = a.q.size(0), length = a.q_len(), step = a.block_rows();
  const at::Tensor d_out = as_4d(grad_out).to(c10::kFloat).reshape({bh, length, a.v.size(2)});

  const bool want_bias_grad = grad_input_mask[3] && attn_bias.defined();
  at::Tensor grad_q = at::empty_like(a.q), grad_k = at::zeros_like(a.k), grad_v = at::zeros_like(a.v);
  at::Tensor grad_scores;
  if (want_bias_grad) grad_scores = at::zeros({a.batch, a.heads, length, a.kv_len()}, a.q.options());
  for (int64_t r0 = 0; r0 < length; r0 += step) {
    const int64_t rows = std::min(step, length - r0), n = a.keys(r0, rows);
    const at::Tensor p = a.probabilities(r0, rows, at::Tensor());
    const at::Tensor d_out_rows = d_out.narrow(1, r0, rows);
    grad_v.narrow(1, 0, n).baddbmm_(p.transpose(1, 2), d_out_rows);
    at::Tensor d_scores = at::bmm(d_out_rows, a.v.narrow(1, 0, n).transpose(1, 2));  // dP
    // dS = P * (dP - rowsum(P * dP)), softmax's backward as the CPU computes it (rowsum(dO * O) is
    // the same number, rounded otherwise: 16-bit outputs and near-zero gradients showed it).
    attention_score_gradients_(d_scores, p);
    if (want_bias_grad)
      grad_scores.narrow(2, r0, rows).narrow(3, 0, n).copy_(d_scores.view({a.batch, a.heads, rows, n}));
    at::Tensor grad_q_rows = grad_q.narrow(1, r0, rows);
    at::bmm_out(grad_q_rows, d_scores, a.k.narrow(1, 0, n));
    grad_k.narrow(1, 0, n).baddbmm_(d_scores.transpose(1, 2), a.q.narrow(1, r0, rows));  // q holds the scale
  }
  grad_q.mul_(a.scale);
  auto as_input = [&](const at::Tensor& grad, const at::Tensor& input, bool wanted) {
    if (!wanted) return at::Tensor();
    at::Tensor g = grad.view({a.batch, a.heads, grad.size(1), grad.size(2)}).to(input.scalar_type());
    return laid_out_like(input.dim() == 3 ? g.squeeze(1) : g, input);
  };
  at::Tensor grad_bias;
  if (want_bias_grad)
    grad_bias = at::sum_to(query.dim() == 3 ? grad_scores.squeeze(1) : grad_scores, attn_bias.sizes())
                    .to(attn_bias.scalar_type());
  return {as_input(grad_q, query, grad_input_mask[0]), as_input(grad_k, key, grad_input_mask[1]),
          as_input(grad_v, value, grad_input_mask[2]), laid_out_like(grad_bias, attn_bias)};
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
