// scaled_dot_product_attention on ocl. PyTorch asks each backend which implementation to use
// (_fused_sdp_choice_stub); we answer "overrideable" whenever the fused kernel applies and
// sdpa_kernel allows it, and "math" otherwise (dropout, grouped-query heads, broadcast batch
// dims, float64), whose composition of native ops PyTorch then runs.
//
// The fused kernels (cl/attention.cl) never store the L x S score matrix: the forward returns
// each row's logsumexp, from which the backward's two kernels recompute the probabilities.
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

#include "core/device_state.h"
#include "kernels/kernel_library.h"
#include "runtime/commands.h"
#include "runtime/device.h"

namespace drawbridge::ops {

namespace {

constexpr int64_t kMaxHeadDim = 512;  // the kernels keep up to five rows of this in private memory

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
  if (q.size(-1) > kMaxHeadDim || v.size(-1) > kMaxHeadDim || q.numel() == 0 || k.numel() == 0 ||
      v.numel() == 0)
    return false;
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
  cl_long q_stride[4], k_stride[4], v_stride[4], bias_stride[4], out_stride[4], grad_out_stride[4];
};

void copy_strides(const at::Tensor& t, cl_long* out) {
  for (int d = 0; d < 4; ++d) out[d] = t.size(d) == 1 ? 0 : t.stride(d);
}

// The 4-d operands of one attention problem (q, k, v, the expanded additive bias) and what every
// kernel of cl/attention.cl is built and launched with.
struct Attention {
  at::Tensor q, k, v, bias;
  bool causal;
  float scale;

  int64_t batch() const { return q.size(0); }
  int64_t heads() const { return q.size(1); }
  int64_t q_len() const { return q.size(2); }
  int64_t kv_len() const { return k.size(2); }
  int64_t head_dim() const { return q.size(3); }
  int64_t value_dim() const { return v.size(3); }

  // `rows_like` are the other operands whose rows the kernel reads in float8 pieces.
  runtime::Kernel& kernel(const char* name, const std::string& extra_options,
                          std::initializer_list<const at::Tensor*> rows_like) const {
    // NARGS sizes common.clh's IterDesc, which these kernels do not use.
    std::string options = std::string("-DNARGS=6 -DT=") + kernels::dtype_token(q.scalar_type()) +
                          " -DHEAD_DIM=" + std::to_string(head_dim()) + " -DVALUE_DIM=" + std::to_string(value_dim()) +
                          extra_options;
    if (causal) options += " -DCAUSAL";
    bool dense_rows = head_dim() % 8 == 0 && value_dim() % 8 == 0;  // q's dtype is one the kernels take
    for (const at::Tensor* t : {&q, &k, &v}) dense_rows = dense_rows && t->stride(3) == 1;
    for (const at::Tensor* t : rows_like) dense_rows = dense_rows && t->stride(3) == 1;
    if (dense_rows) options += " -DVECTOR_ROWS";
    if (bias.defined()) options += " -DBIAS";
    return kernels::get_kernel(core::checked_device(q.device().index()), "attention.cl", options, name);
  }

  // One work-item per row of `rows`; `operands` in the kernel's order, an undefined tensor where
  // the kernel takes a placeholder.
  void launch(runtime::Kernel& kernel, AttentionDesc desc, std::initializer_list<const at::Tensor*> operands,
              int64_t rows) const {
    desc.heads = heads();
    desc.q_len = q_len();
    desc.kv_len = kv_len();
    copy_strides(q, desc.q_stride);
    copy_strides(k, desc.k_stride);
    copy_strides(v, desc.v_stride);
    if (bias.defined()) copy_strides(bias, desc.bias_stride);
    runtime::Device& device = core::checked_device(q.device().index());
    std::vector<runtime::BufferRef> refs;
    for (const at::Tensor* t : operands) refs.push_back(device.memory().resolve((t->defined() ? *t : q).const_data_ptr()));
    const cl_long row_count = rows;
    std::vector<runtime::KernelArg> args{{sizeof(desc), &desc}};
    for (const runtime::BufferRef& ref : refs) {
      args.push_back({sizeof(cl_mem), &ref.mem});
      args.push_back({sizeof(cl_ulong), &ref.offset});
    }
    args.push_back({sizeof(scale), &scale});
    args.push_back({sizeof(row_count), &row_count});
    c10::DeviceGuard guard(q.device());
    const size_t local = std::min<size_t>(64, kernel.max_work_group_size);
    runtime::launch_args(kernel, core::current_queue(q.device().index()), (rows + local - 1) / local, local,
                         args.data(), args.size());
  }
};

Attention attention_of(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const std::optional<at::Tensor>& attn_bias, bool is_causal, std::optional<double> scale) {
  Attention a{as_4d(query), as_4d(key), as_4d(value), at::Tensor(), is_causal,
              static_cast<float>(scale_for(query, scale))};
  if (attn_bias && attn_bias->defined()) {
    at::Tensor bias = additive_bias(*attn_bias, a.q);
    if (query.dim() == 3) bias = bias.expand({a.batch(), a.q_len(), a.kv_len()}).unsqueeze(1);
    a.bias = bias.expand({a.batch(), a.heads(), a.q_len(), a.kv_len()});
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
  const Attention a = attention_of(query, key, value, attn_bias, is_causal, scale);
  at::Tensor out = at::empty({a.batch(), a.heads(), a.q_len(), a.value_dim()}, a.q.options());
  at::Tensor lse = at::empty({a.batch(), a.heads(), a.q_len()}, a.q.options().dtype(c10::kFloat));
  a.launch(a.kernel("attention_forward", "", {}), AttentionDesc{}, {&out, &lse, &a.q, &a.k, &a.v, &a.bias},
           a.batch() * a.heads() * a.q_len());
  if (query.dim() == 3) out = out.squeeze(1);  // the logsumexp stays (1, heads, rows), as the meta function says
  std::vector<int64_t> out_sizes = query.sizes().vec();
  out_sizes.back() = a.value_dim();
  at::Tensor laid_out = empty_like_layout(query, out_sizes);
  if (laid_out.strides() != out.strides()) out = laid_out.copy_(out);
  // No dropout: the philox seed and offset are placeholders (0-d, as the meta function says).
  at::Tensor seed = at::zeros({}, a.q.options().dtype(c10::kLong));
  at::Tensor offset = at::zeros({}, a.q.options().dtype(c10::kLong));
  return {out, lse, at::Tensor(), at::Tensor(), c10::SymInt(a.q_len()), c10::SymInt(a.kv_len()), seed, offset,
          at::Tensor()};
}

// The gradients by the two backward kernels (cl/attention.cl), from the forward's output and
// logsumexp: nothing of size L x S is stored unless the bias's gradient is asked for.
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
  const Attention a = attention_of(query, key, value, attn_bias, is_causal, scale);
  // Rows read in float8 pieces must be dense (sum().backward() passes an expanded gradient).
  auto dense_rows = [](const at::Tensor& t) { return t.stride(-1) == 1 ? t : t.contiguous(); };
  const at::Tensor d_out = as_4d(dense_rows(grad_out.to(query.scalar_type()))), o = as_4d(dense_rows(out));
  const at::Tensor lse = logsumexp.contiguous();
  const int64_t query_rows = a.batch() * a.heads() * a.q_len(), key_rows = a.batch() * a.heads() * a.kv_len();
  TORCH_CHECK(lse.scalar_type() == c10::kFloat && lse.numel() == query_rows,
              "the fused ocl attention's backward needs the forward's float32 logsumexp of ", query_rows,
              " rows; got ", lse.sizes(), " ", lse.scalar_type());
  AttentionDesc desc{};
  copy_strides(o, desc.out_stride);
  copy_strides(d_out, desc.grad_out_stride);

  const bool want_bias_grad = grad_input_mask[3] && attn_bias.defined();
  at::Tensor grad_q = at::empty_like(a.q, at::MemoryFormat::Contiguous);
  at::Tensor delta = at::empty({query_rows}, lse.options());
  at::Tensor grad_scores;
  if (want_bias_grad) grad_scores = at::empty({a.batch(), a.heads(), a.q_len(), a.kv_len()}, lse.options());
  std::string options = want_bias_grad ? " -DGRAD_SCORES" : "";
  // A float32 output gives delta = dO . O exactly enough; a rounded one does not.
  if (query.scalar_type() != c10::kFloat) options += " -DDELTA_FROM_SCORES";
  a.launch(a.kernel("attention_backward_queries", options, {&o, &d_out}), desc,
           {&grad_q, &delta, &grad_scores, &a.q, &a.k, &a.v, &a.bias, &o, &d_out, &lse}, query_rows);

  at::Tensor grad_k, grad_v;
  if (grad_input_mask[1] || grad_input_mask[2]) {
    grad_k = at::empty_like(a.k, at::MemoryFormat::Contiguous);
    grad_v = at::empty_like(a.v, at::MemoryFormat::Contiguous);
    a.launch(a.kernel("attention_backward_keys", "", {&d_out}), desc,
             {&grad_k, &grad_v, &a.q, &a.k, &a.v, &a.bias, &d_out, &lse, &delta}, key_rows);
  }
  auto as_input = [&](at::Tensor grad, const at::Tensor& input, bool wanted) {
    if (!wanted) return at::Tensor();
    return laid_out_like(input.dim() == 3 ? grad.squeeze(1) : grad, input);
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
