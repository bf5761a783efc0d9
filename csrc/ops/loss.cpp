// Loss functions and their backward, composed of native kernels: nll_loss (1-d/2-d and the 2d
// image form), mse_loss, smooth_l1_loss, huber_loss, binary_cross_entropy, multi_margin_loss and
// multilabel_margin_loss.
// The formulas and the checks are the CPU's; reduction is 0 (none), 1 (mean) or 2 (sum).
#include <ATen/core/Reduction.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include "ops/indexing.h"
#include "ops/out_arguments.h"
#include "ops/pointwise.h"
#include "ops/variants.h"

namespace drawbridge::ops {

namespace {

// float16/bfloat16 losses are computed in float32 and rounded once, as the CPU's fused kernels do.
at::Tensor wide(const at::Tensor& t) { return t.to(kernels::compute_type(t.scalar_type())); }

at::Tensor reduce_loss(const at::Tensor& loss, int64_t reduction) {
  if (reduction == at::Reduction::Mean) return loss.mean();
  if (reduction == at::Reduction::Sum) return loss.sum();
  return loss;
}

// ---- nll_loss -------------------------------------------------------------------------------

// Classes along dim 1 (dim 0 for a single 1-d sample). Returns the per-element weights (0 where
// the target is ignore_index) and the targets with ignored ones replaced by class 0, so that the
// device-side check of the gather that follows sees only real classes.
struct NllTerms {
  at::Tensor safe_target;  // the shape of target, with a class dim of size 1 inserted
  at::Tensor weights;      // the shape of target
};

NllTerms nll_terms(const at::Tensor& self, const at::Tensor& target, const std::optional<at::Tensor>& weight,
                   int64_t ignore_index) {
  TORCH_CHECK(target.scalar_type() == c10::kLong || target.scalar_type() == c10::kByte,
              "expected target dtype to be Long or Byte, but got ", target.scalar_type());
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const int64_t classes = self.size(class_dim);
  const bool weighted = weight && weight->defined();
  TORCH_CHECK(!weighted || weight->numel() == classes, "weight tensor should be defined either for all ", classes,
              " classes or no classes but got weight tensor of shape: ", weight->sizes());
  at::Tensor keep = target != ignore_index;
  at::Tensor safe = at::where(keep, target, at::zeros({}, target.options()));
  at::Tensor w = weighted ? weight->to(self.scalar_type()).index_select(0, safe.reshape({-1})).view(target.sizes())
                          : at::ones(target.sizes(), self.options());
  return {safe.unsqueeze(class_dim), w.mul_(keep)};
}

void check_nll_shapes(const at::Tensor& self, const at::Tensor& target) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  const bool no_batch = self.dim() == 1 && target.dim() == 0;
  TORCH_CHECK(no_batch || self.size(0) == target.size(0), "size mismatch (got input: ", self.sizes(),
              ", target: ", target.sizes(), ")");
}

void check_nll2d_shapes(const at::Tensor& self, const at::Tensor& target) {
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got targets of dimension: ",
              target.dim());
  TORCH_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got input of dimension: ",
              self.dim());
  TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2),
              "input and target batch or spatial sizes don't match: target ", target.sizes(), ", input ",
              self.sizes());
}

std::tuple<at::Tensor&, at::Tensor&> nll_forward_impl(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight, int64_t reduction,
                                                      int64_t ignore_index, at::Tensor& output,
                                                      at::Tensor& total_weight) {
  check_dtype("nll_loss", self.scalar_type(), Dtypes::Floating);
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  auto [safe, w] = nll_terms(self, target, weight, ignore_index);
  // An out-of-range target raises IndexError, as on the CPU (a plain gather raises RuntimeError).
  at::Tensor picked = at::empty(safe.sizes(), self.options());
  gather_along(picked, self, class_dim, safe, core::DeviceAssert::index_error);
  picked = picked.squeeze(class_dim);
  at::Tensor loss = picked.neg().mul_(w);
  at::Tensor total = w.sum();
  at::Tensor result = reduction == at::Reduction::None ? loss
                      : reduction == at::Reduction::Sum ? loss.sum()
                                                        : loss.sum().div_(total);
  assign_out(output, result);
  assign_out(total_weight, reduction == at::Reduction::None ? at::zeros({}, self.options()) : total);
  return {output, total_weight};
}

at::Tensor& nll_backward_impl(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                              const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                              const at::Tensor& total_weight, at::Tensor& grad_input) {
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  auto [safe, w] = nll_terms(self, target, weight, ignore_index);
  at::Tensor scale = reduction == at::Reduction::Mean ? grad_output / total_weight : grad_output;
  at::Tensor values = w.neg().mul_(scale).unsqueeze(class_dim);
  at::native::resize_output(grad_input, self.sizes());
  grad_input.zero_();
  grad_input.scatter_(class_dim, safe, values.to(self.scalar_type()));
  return grad_input;
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss_forward_out(const at::Tensor& self, const at::Tensor& target,
                                                          const std::optional<at::Tensor>& weight, int64_t reduction,
                                                          int64_t ignore_index, at::Tensor& output,
                                                          at::Tensor& total_weight) {
  check_nll_shapes(self, target);
  return nll_forward_impl(self, target, weight, reduction, ignore_index, output, total_weight);
}
std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    int64_t ignore_index) {
  at::Tensor output = at::empty({0}, self.options()), total = at::empty({0}, self.options());
  nll_loss_forward_out(self, target, weight, reduction, ignore_index, output, total);
  return {output, total};
}
at::Tensor& nll_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                  const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                                  const at::Tensor& total_weight, at::Tensor& grad_input) {
  check_nll_shapes(self, target);
  return nll_backward_impl(grad_output, self, target, weight, reduction, ignore_index, total_weight, grad_input);
}
at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                             const at::Tensor& total_weight) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return nll_loss_backward_out(grad_output, self, target, weight, reduction, ignore_index, total_weight, grad_input);
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss2d_forward_out(const at::Tensor& self, const at::Tensor& target,
                                                            const std::optional<at::Tensor>& weight,
                                                            int64_t reduction, int64_t ignore_index,
                                                            at::Tensor& output, at::Tensor& total_weight) {
  check_nll2d_shapes(self, target);
  return nll_forward_impl(self, target, weight, reduction, ignore_index, output, total_weight);
}
std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight, int64_t reduction,
                                                      int64_t ignore_index) {
  at::Tensor output = at::empty({0}, self.options()), total = at::empty({0}, self.options());
  nll_loss2d_forward_out(self, target, weight, reduction, ignore_index, output, total);
  return {output, total};
}
at::Tensor& nll_loss2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                    const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                                    const at::Tensor& total_weight, at::Tensor& grad_input) {
  check_nll2d_shapes(self, target);
  return nll_backward_impl(grad_output, self, target, weight, reduction, ignore_index, total_weight, grad_input);
}
at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               const std::optional<at::Tensor>& weight, int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return nll_loss2d_backward_out(grad_output, self, target, weight, reduction, ignore_index, total_weight, grad_input);
}

// ---- regression losses ----------------------------------------------------------------------

// The gradient of a reduced loss, per element: mean divides by the number of elements.
at::Tensor scaled_grad(const at::Tensor& grad_output, const at::Tensor& self, int64_t reduction) {
  return reduction == at::Reduction::Mean ? grad_output / static_cast<double>(self.numel()) : grad_output;
}

at::Tensor& mse_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& out) {
  at::Tensor diff = wide(self) - wide(target);
  return assign_out(out, reduce_loss(diff.mul_(diff), reduction));
}
at::Tensor& mse_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                  int64_t reduction, at::Tensor& grad_input) {
  return assign_out(grad_input, (wide(self) - wide(target)).mul_(2).mul_(scaled_grad(wide(grad_output), self, reduction)));
}
at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return mse_loss_backward_out(grad_output, self, target, reduction, grad_input);
}

// smooth_l1 (beta) and huber (delta): quadratic near zero, linear beyond.
at::Tensor& smooth_l1_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta,
                               at::Tensor& out) {
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  at::Tensor z = (wide(self) - wide(target)).abs_();
  at::Tensor loss = beta == 0 ? z : at::where(z < beta, z * z * (0.5 / beta), z - 0.5 * beta);
  return assign_out(out, reduce_loss(loss, reduction));
}
at::Tensor& smooth_l1_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& target, int64_t reduction, double beta,
                                        at::Tensor& grad_input) {
  at::Tensor d = wide(self) - wide(target);
  at::Tensor slope = beta == 0 ? d.sign() : at::where(d.abs() < beta, d / beta, d.sign());
  return assign_out(grad_input, slope.mul_(scaled_grad(wide(grad_output), self, reduction)));
}
at::Tensor smooth_l1_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                   int64_t reduction, double beta) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return smooth_l1_loss_backward_out(grad_output, self, target, reduction, beta, grad_input);
}

at::Tensor& huber_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta,
                           at::Tensor& out) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  at::Tensor z = (wide(self) - wide(target)).abs_();
  at::Tensor loss = at::where(z < delta, z * z * 0.5, (z - 0.5 * delta) * delta);
  return assign_out(out, reduce_loss(loss, reduction));
}
at::Tensor& huber_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                    int64_t reduction, double delta, at::Tensor& grad_input) {
  at::Tensor d = wide(self) - wide(target);
  at::Tensor slope = at::where(d.abs() <= delta, d, d.sign() * delta);
  return assign_out(grad_input, slope.mul_(scaled_grad(wide(grad_output), self, reduction)));
}
at::Tensor huber_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               int64_t reduction, double delta) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return huber_loss_backward_out(grad_output, self, target, reduction, delta, grad_input);
}

// ---- binary_cross_entropy -------------------------------------------------------------------

at::Tensor& binary_cross_entropy_out(const at::Tensor& self, const at::Tensor& target,
                                     const std::optional<at::Tensor>& weight, int64_t reduction, at::Tensor& out) {
  TORCH_CHECK(self.sizes() == target.sizes(), "Using a target size (", target.sizes(),
              ") that is different to the input size (", self.sizes(), ") is deprecated. Please ensure they have ",
              "the same size.");
  // One synchronization, as the CPU checks (CUDA asserts on the device).
  TORCH_CHECK(!self.lt(0).logical_or_(self.gt(1)).any().item<bool>(),
              "all elements of input should be between 0 and 1");
  // The CPU clamps each log at -100 so that a confident wrong answer costs 100, not infinity.
  at::Tensor log_p = self.log().clamp_min_(-100), log_q = (1 - self).log_().clamp_min_(-100);
  at::Tensor loss = ((target - 1) * log_q).sub_(target * log_p);
  if (weight && weight->defined()) loss.mul_(*weight);
  return assign_out(out, reduce_loss(loss, reduction));
}
at::Tensor& binary_cross_entropy_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                              const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                              int64_t reduction, at::Tensor& grad_input) {
  constexpr double kEpsilon = 1e-12;  // the CPU's guard against dividing by zero
  at::Tensor grad = (self - target).div_(((1 - self) * self).clamp_min_(kEpsilon));
  grad.mul_(scaled_grad(grad_output, self, reduction));
  if (weight && weight->defined()) grad.mul_(*weight);
  return assign_out(grad_input, grad);
}
at::Tensor binary_cross_entropy_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                         const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                         int64_t reduction) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return binary_cross_entropy_backward_out(grad_output, self, target, weight, reduction, grad_input);
}

// ---- multi_margin_loss ----------------------------------------------------------------------

// Per sample, over the classes d other than the target t: max(0, margin - x[t] + x[d])^p, times
// weight[t], divided by the number of classes.
struct MarginTerms {
  at::Tensor x;       // (N, C) in the compute type
  at::Tensor target;  // (N, 1)
  at::Tensor z;       // margin - x[t] + x[d]
  at::Tensor active;  // z > 0 and d != t, as 0/1
  at::Tensor class_weight;  // (N, 1) weight[t], or undefined
};

MarginTerms margin_terms(const at::Tensor& self, const at::Tensor& target, const c10::Scalar& p,
                         const c10::Scalar& margin, const std::optional<at::Tensor>& weight) {
  check_dtype("multi_margin_loss", self.scalar_type(), Dtypes::Floating);
  TORCH_CHECK(p.toDouble() == 1 || p.toDouble() == 2, "only p == 1 and p == 2 supported");
  TORCH_CHECK((self.dim() <= 1 && target.dim() <= 1) || (self.dim() == 2 && target.dim() == 1),
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", self.sizes());
  const int64_t classes = self.dim() == 0 ? 1 : self.size(-1);
  const int64_t samples = self.dim() == 2 ? self.size(0) : 1;
  TORCH_CHECK(target.numel() == samples, "inconsistent target size, expected ", samples, " but got ",
              target.sizes());
  const bool weighted = weight && weight->defined();
  TORCH_CHECK(!weighted || (weight->dim() <= 1 && weight->numel() == classes), "inconsistent weight size, expected ",
              classes, " but got ", weighted ? weight->sizes() : at::IntArrayRef{});
  MarginTerms m;
  m.x = wide(self).reshape({samples, classes});
  m.target = target.reshape({samples, 1}).to(c10::kLong);
  m.z = m.x.gather(1, m.target).neg_().add_(margin).add(m.x);
  at::Tensor other = at::arange(classes, m.target.options()).unsqueeze(0) != m.target;
  m.active = (m.z > 0).logical_and_(other).to(m.x.scalar_type());
  if (weighted) m.class_weight = wide(*weight).index_select(0, m.target.reshape({-1})).unsqueeze(1);
  return m;
}

at::Tensor margin_loss_multi(const at::Tensor& self, const at::Tensor& target, const c10::Scalar& p,
                             const c10::Scalar& margin, const std::optional<at::Tensor>& weight, int64_t reduction) {
  MarginTerms m = margin_terms(self, target, p, margin, weight);
  at::Tensor h = (p.toDouble() == 1 ? m.z : m.z * m.z).mul_(m.active);
  if (m.class_weight.defined()) h.mul_(m.class_weight);
  at::Tensor loss = h.sum(1).div_(m.x.size(1));
  if (self.dim() <= 1 && target.dim() == 0 && reduction == at::Reduction::None) loss = loss.squeeze(0);
  return reduce_loss(loss, reduction).to(self.scalar_type());
}
at::Tensor& multi_margin_loss_out(const at::Tensor& self, const at::Tensor& target, const c10::Scalar& p,
                                  const c10::Scalar& margin, const std::optional<at::Tensor>& weight,
                                  int64_t reduction, at::Tensor& out) {
  return assign_out(out, margin_loss_multi(self, target, p, margin, weight, reduction));
}

at::Tensor margin_loss_multi_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                      const c10::Scalar& p, const c10::Scalar& margin,
                                      const std::optional<at::Tensor>& weight, int64_t reduction) {
  MarginTerms m = margin_terms(self, target, p, margin, weight);
  const int64_t samples = m.x.size(0), classes = m.x.size(1);
  at::Tensor g = wide(grad_output).reshape({reduction == at::Reduction::None ? samples : 1, 1}).div(classes);
  if (reduction == at::Reduction::Mean) g.div_(samples);
  at::Tensor grad = (p.toDouble() == 1 ? m.active : m.z.mul(2).mul_(m.active)).mul_(g);
  if (m.class_weight.defined()) grad.mul_(m.class_weight);
  // The target class receives minus what the other classes received.
  grad.scatter_add_(1, m.target, grad.sum(1, true).neg_());
  return grad.view(self.sizes()).to(self.scalar_type());
}
at::Tensor& multi_margin_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, const c10::Scalar& p, const c10::Scalar& margin,
                                           const std::optional<at::Tensor>& weight, int64_t reduction,
                                           at::Tensor& grad_input) {
  return assign_out(grad_input, margin_loss_multi_backward(grad_output, self, target, p, margin, weight, reduction));
}

// ---- multilabel_margin_loss -----------------------------------------------------------------

// Per sample, over the listed targets j (up to the first -1) and the classes i that are not
// targets: max(0, 1 - x[j] + x[i]), divided by the number of classes. One (N, K, C) tensor of
// margins, K the target list's length.
struct MultilabelTerms {
  at::Tensor x;          // (N, C) in the compute type
  at::Tensor targets;    // (N, K), -1 entries as 0 (masked by `listed`)
  at::Tensor listed;     // (N, K) bool: before the first -1
  at::Tensor is_target;  // (N, C) in x's type
  at::Tensor active;     // (N, K, C) as 0/1: listed target, non-target class, positive margin
  at::Tensor margins;    // (N, K, C)
};

MultilabelTerms multilabel_terms(const at::Tensor& self, const at::Tensor& target) {
  check_dtype("multilabel_margin_loss", self.scalar_type(), Dtypes::Floating);
  TORCH_CHECK((self.dim() <= 1 && self.numel() > 0) || (self.dim() == 2 && self.size(1) > 0),
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", self.sizes());
  TORCH_CHECK(target.sizes() == self.sizes(), "inconsistent target size: ", target.sizes(), " for input of size: ",
              self.sizes());
  const int64_t classes = self.dim() == 0 ? 1 : self.size(-1), samples = self.dim() == 2 ? self.size(0) : 1;
  MultilabelTerms m;
  m.x = wide(self).reshape({samples, classes});
  at::Tensor t = target.reshape({samples, classes}).to(c10::kLong);
  TORCH_CHECK(t.numel() == 0 || t.ge(-1).logical_and_(t.lt(classes)).all().item<bool>(),
              "argument #2 'target' is out of range");
  m.listed = t.ge(0).cumprod(1).to(c10::kBool);
  m.targets = t.clamp_min(0);
  m.is_target = at::zeros_like(m.x).scatter_add_(1, m.targets, m.listed.to(m.x.scalar_type())).gt_(0).to(m.x.scalar_type());
  m.margins = m.x.gather(1, m.targets).unsqueeze(2).neg().add_(1).add(m.x.unsqueeze(1));
  at::Tensor pairs = m.listed.unsqueeze(2).logical_and(m.is_target.unsqueeze(1).eq(0));
  m.active = m.margins.gt(0).logical_and_(pairs).to(m.x.scalar_type());
  return m;
}

std::tuple<at::Tensor, at::Tensor> multilabel_loss(const at::Tensor& self, const at::Tensor& target,
                                                                  int64_t reduction) {
  MultilabelTerms m = multilabel_terms(self, target);
  at::Tensor loss = (m.margins * m.active).sum({1, 2}).div_(m.x.size(1));
  if (self.dim() <= 1 && reduction == at::Reduction::None) loss = loss.squeeze(0);
  return {reduce_loss(loss, reduction).to(self.scalar_type()), m.is_target.view(self.sizes()).to(self.scalar_type())};
}

std::tuple<at::Tensor&, at::Tensor&> multilabel_margin_loss_forward_out(const at::Tensor& self,
                                                                        const at::Tensor& target, int64_t reduction,
                                                                        at::Tensor& output, at::Tensor& is_target) {
  return assign_outs(std::tie(output, is_target), multilabel_loss(self, target, reduction));
}

// Each active pair moves its non-target class up and its target down by the upstream gradient.
at::Tensor multilabel_loss_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                           const at::Tensor& target, int64_t reduction, const at::Tensor& is_target) {
  MultilabelTerms m = multilabel_terms(self, target);
  const int64_t samples = m.x.size(0), classes = m.x.size(1);
  at::Tensor g = wide(grad_output).reshape({reduction == at::Reduction::None ? samples : 1, 1}).div(classes);
  if (reduction == at::Reduction::Mean) g.div_(samples);
  at::Tensor grad = m.active.sum(1).mul_(g);
  grad.scatter_add_(1, m.targets, m.active.sum(2).mul_(g).neg_());
  return grad.view(self.sizes()).to(self.scalar_type());
}

at::Tensor& multilabel_margin_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                                const at::Tensor& target, int64_t reduction,
                                                const at::Tensor& is_target, at::Tensor& grad_input) {
  return assign_out(grad_input, multilabel_loss_backward(grad_output, self, target, reduction, is_target));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multilabel_margin_loss_forward", TORCH_FN(multilabel_loss));
  m.impl("multilabel_margin_loss_forward.output", TORCH_FN(multilabel_margin_loss_forward_out));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(multilabel_loss_backward));
  m.impl("multilabel_margin_loss_backward.grad_input", TORCH_FN(multilabel_margin_loss_backward_out));
  m.impl("nll_loss_forward", TORCH_FN(nll_loss_forward));
  m.impl("nll_loss_forward.output", TORCH_FN(nll_loss_forward_out));
  m.impl("nll_loss_backward", TORCH_FN(nll_loss_backward));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(nll_loss_backward_out));
  m.impl("nll_loss2d_forward", TORCH_FN(nll_loss2d_forward));
  m.impl("nll_loss2d_forward.output", TORCH_FN(nll_loss2d_forward_out));
  m.impl("nll_loss2d_backward", TORCH_FN(nll_loss2d_backward));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(nll_loss2d_backward_out));
  register_from_out<&mse_loss_out>(m, "mse_loss", nullptr, "mse_loss.out", ComplexArgs::Native);
  m.impl("mse_loss_backward", TORCH_FN(mse_loss_backward));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mse_loss_backward_out));
  register_from_out<&smooth_l1_loss_out>(m, "smooth_l1_loss", nullptr, "smooth_l1_loss.out", ComplexArgs::Native);
  m.impl("smooth_l1_loss_backward", TORCH_FN(smooth_l1_loss_backward));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(smooth_l1_loss_backward_out));
  register_from_out<&huber_loss_out>(m, "huber_loss", nullptr, "huber_loss.out", ComplexArgs::Native);
  m.impl("huber_loss_backward", TORCH_FN(huber_loss_backward));
  m.impl("huber_loss_backward.out", TORCH_FN(huber_loss_backward_out));
  m.impl("multi_margin_loss", TORCH_FN(margin_loss_multi));
  m.impl("multi_margin_loss.out", TORCH_FN(multi_margin_loss_out));
  m.impl("multi_margin_loss_backward", TORCH_FN(margin_loss_multi_backward));
  m.impl("multi_margin_loss_backward.grad_input", TORCH_FN(multi_margin_loss_backward_out));
  register_from_out<&binary_cross_entropy_out>(m, "binary_cross_entropy",
                                               nullptr, "binary_cross_entropy.out", ComplexArgs::Native);
  m.impl("binary_cross_entropy_backward", TORCH_FN(binary_cross_entropy_backward));
  m.impl("binary_cross_entropy_backward.grad_input", TORCH_FN(binary_cross_entropy_backward_out));
}

}  // namespace drawbridge::ops
