// torch.autocast(device_type="ocl"): the AutocastPrivateUse1 dispatch key with CUDA's cast lists.
// PyTorch ships the lists (autocast_mode.h) and the casting wrappers, but registers them only for
// its own backends; without this file every op under autocast on ocl raises NotImplementedError.
// Ops on no list fall through to the ocl kernels unchanged.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace drawbridge::ops {

namespace {

// binary_cross_entropy is unsafe to autocast (log of a float16 probability); CUDA refuses it
// with this advice, and so do we.
at::Tensor binary_cross_entropy_refused(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                        int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

}  // namespace

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(LOWER_PRECISION)
  AT_FORALL_FP32(FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(FP32_SET_OPT_DTYPE)
  {
    // The signatures in this list are spelled as inside namespace at.
    using at::IntArrayRef;
    using at::Scalar;
    using at::ScalarType;
    using at::Tensor;
    AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  }
  AT_FORALL_PROMOTE(PROMOTE)
#undef LOWER_PRECISION
#undef FP32
#undef FP32_SET_OPT_DTYPE
#undef PROMOTE
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binary_cross_entropy_refused));
}

}  // namespace drawbridge::ops
