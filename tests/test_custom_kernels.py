"""Custom OpenCL kernels as operators (drawbridge.kernel) and the C++ extension API.

The examples in examples/kernels/ are compared with PyTorch on the CPU in eager mode, under
autograd and inside torch.compile; the API's checks are exercised with small kernels of our own."""
import pathlib
import sys

import pytest
import torch
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounterWithBackend

import drawbridge

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples" / "kernels"
sys.path.insert(0, str(EXAMPLES))

import attention as attention_example  # noqa: E402
import rmsnorm as rmsnorm_example  # noqa: E402
import softmax_cross_entropy as ce_example  # noqa: E402

AXPY = """
__kernel void axpy(__global T* out, __global const T* x, __global const T* y, const float a, const int n) {
  const int i = get_global_id(0);
  if (i < n) out[i] = a * x[i] + y[i];
}
"""
SCALE_ = """
__kernel void scale_(__global T* x, const T a, const long n) {
  const long i = get_global_id(0);
  if (i < n) x[i] *= a;
}
"""
# Reverses each block of 64 elements through local memory.
BLOCK_REVERSE = """
__kernel void block_reverse(__global float* out, __global const float* x, __local float* tile) {
  const int lane = get_local_id(0), lanes = get_local_size(0);
  tile[lane] = x[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = tile[lanes - 1 - lane];
}
"""


def _round_up(n, m):
    return (n + m - 1) // m * m


axpy = drawbridge.kernel(
    "drawbridge_tests::axpy(Tensor x, Tensor y, float a) -> Tensor", AXPY,
    outputs=lambda x, y, a: torch.empty_like(x),
    args=lambda x, y, a, out: (out, x, y, a, x.numel()),
    grid=lambda x, y, a: (_round_up(x.numel(), 64),), local=(64,),
    dtypes=(torch.float32, torch.float64))

scale_ = drawbridge.kernel(
    "drawbridge_tests::scale_(Tensor(a!) x, float a) -> ()", SCALE_,
    args=lambda x, a: (x, a, x.numel()),
    grid=lambda x, a: (_round_up(x.numel(), 64),), local=(64,),
    dtypes=(torch.float32, torch.float64))

block_reverse = drawbridge.kernel(
    "drawbridge_tests::block_reverse(Tensor x) -> Tensor", BLOCK_REVERSE,
    outputs=lambda x: torch.empty_like(x),
    args=lambda x, out: (out, x, 64 * 4),
    grid=lambda x: (x.numel(),), local=(64,))


def ocl(*tensors):
    return [t.to("ocl") for t in tensors]


# ---- the examples -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (64, 768), (2, 5, 1000), (0, 16)])
def test_rms_norm_matches_cpu_forward_and_backward(shape):
    x = torch.randn(shape, requires_grad=True)
    w = torch.randn(shape[-1], requires_grad=True)
    expected = F.rms_norm(x, (shape[-1],), w, 1e-6)
    grad = torch.randn(shape)
    expected.backward(grad)
    xo, wo = (t.detach().to("ocl").requires_grad_() for t in (x, w))
    y = rmsnorm_example.rms_norm(xo, wo, 1e-6)
    y.backward(grad.to("ocl"))
    torch.testing.assert_close(y.detach().cpu(), expected.detach(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(xo.grad.cpu(), x.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(wo.grad.cpu(), w.grad, atol=1e-4, rtol=1e-4)


def test_rms_norm_gradcheck_float64():
    if not torch.ocl.get_device_properties().supports_fp64:
        pytest.skip("the device has no float64")
    x = torch.randn(4, 9, dtype=torch.float64, device="ocl", requires_grad=True)
    w = torch.randn(9, dtype=torch.float64, device="ocl", requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w: rmsnorm_example.rms_norm(x, w, 1e-6), (x, w))


def test_rms_norm_rejects_a_mismatched_weight():
    with pytest.raises(RuntimeError, match="does not match"):
        rmsnorm_example.rms_norm(torch.randn(4, 8, device="ocl"), torch.randn(7, device="ocl"))


@pytest.mark.parametrize("classes", [1, 10, 1000])
def test_softmax_cross_entropy_matches_cpu(classes):
    logits = torch.randn(33, classes, requires_grad=True)
    target = torch.randint(0, classes, (33,))
    target[::5] = -100
    expected = F.cross_entropy(logits, target)
    expected.backward()
    lo = logits.detach().to("ocl").requires_grad_()
    loss = ce_example.cross_entropy(lo, target.to("ocl"))
    loss.backward()
    torch.testing.assert_close(loss.detach().cpu(), expected.detach(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lo.grad.cpu(), logits.grad, atol=1e-6, rtol=1e-5)


def test_softmax_cross_entropy_handles_extreme_logits():
    logits = torch.tensor([[1000.0, -1000.0, float("-inf")], [0.0, 0.0, 0.0]])
    target = torch.tensor([0, 2])
    loss = ce_example.cross_entropy(logits.to("ocl"), target.to("ocl"))
    torch.testing.assert_close(loss.cpu(), F.cross_entropy(logits, target))


@pytest.mark.parametrize("seq_q,seq_k,causal", [(1, 1, False), (100, 100, True), (33, 70, False), (64, 64, True)])
def test_attention_matches_sdpa(seq_q, seq_k, causal):
    q = torch.randn(2, 3, seq_q, 16)
    k, v = torch.randn(2, 3, seq_k, 16), torch.randn(2, 3, seq_k, 16)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    got = attention_example.attention(*ocl(q, k, v), causal=causal)
    torch.testing.assert_close(got.cpu(), expected, atol=1e-5, rtol=1e-5)


def test_transformer_with_custom_kernels_compiles_in_one_graph():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = attention_example.TinyTransformer(vocab=64, dim=32, heads=2, layers=2).to("ocl").eval()
    tokens = torch.randint(0, 64, (2, 40), device="ocl")
    counter = CompileCounterWithBackend("ocl")
    drawbridge.set_fallback_mode("error")
    try:
        with torch.no_grad():
            eager = model(tokens)
            compiled = torch.compile(model, backend=counter, fullgraph=True)(tokens)
    finally:
        drawbridge.set_fallback_mode("silent")
    assert counter.frame_count == 1
    torch.testing.assert_close(compiled.cpu(), eager.cpu(), atol=1e-5, rtol=1e-5)
    torch._dynamo.reset()


def test_compiled_training_step_through_custom_backward():
    torch._dynamo.reset()
    x = torch.randn(8, 32)
    w = torch.randn(32)

    def loss_fn(x, w):
        return (rmsnorm_example.rms_norm(x, w) * 2).relu().sum()

    x.requires_grad_(), w.requires_grad_()
    (F.rms_norm(x, (32,), w, 1e-6) * 2).relu().sum().backward()
    xo, wo = (t.detach().to("ocl").requires_grad_() for t in (x, w))
    counter = CompileCounterWithBackend("ocl")
    # Compiled afresh: the backward comes from register_autograd's Python function, which is not
    # part of Inductor's and AOTAutograd's cache keys, so a graph cached while the example's
    # backward was another would be replayed (a limitation of those caches for custom ops).
    with torch._inductor.config.patch(fx_graph_cache=False), torch._functorch.config.patch(enable_autograd_cache=False):
        torch.compile(loss_fn, backend=counter, fullgraph=True)(xo, wo).backward()
    assert counter.frame_count == 1
    torch.testing.assert_close(xo.grad.cpu(), x.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(wo.grad.cpu(), w.grad, atol=1e-4, rtol=1e-4)
    torch._dynamo.reset()


def test_cpp_extension_builds_and_runs():
    sys.path.insert(0, str(EXAMPLES / "cpp_extension"))
    import axpby as axpby_example

    axpby_example.build()
    x, y = torch.randn(1000), torch.randn(1003)
    # Views that start inside their buffers: the extension passes buffer + byte offset.
    out = torch.ops.drawbridge_cpp_example.axpby(x.to("ocl")[1:], y.to("ocl")[4:], 2.0, -0.5)
    torch.testing.assert_close(out.cpu(), 2.0 * x[1:] - 0.5 * y[4:])
    with pytest.raises(RuntimeError, match="float32"):
        torch.ops.drawbridge_cpp_example.axpby(torch.ones(3, device="ocl", dtype=torch.float64),
                                               torch.ones(3, device="ocl", dtype=torch.float64), 1.0, 1.0)


# ---- the API ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_kernel_specializes_per_dtype(dtype):
    x, y = torch.randn(1000, dtype=dtype), torch.randn(1000, dtype=dtype)
    torch.testing.assert_close(axpy(*ocl(x, y), 2.5).cpu(), 2.5 * x + y)


def test_each_dtype_builds_once_per_process():
    x = torch.randn(100, device="ocl")
    axpy(x, x, 1.0)
    before = drawbridge._C._program_cache_stats()
    for _ in range(3):
        axpy(x, x, 1.0)
    after = drawbridge._C._program_cache_stats()
    assert (after["builds"], after["disk_hits"]) == (before["builds"], before["disk_hits"])


def test_views_that_start_inside_their_buffer():
    x, y = torch.randn(1000), torch.randn(1000)
    xo, yo = ocl(x, y)
    # 128 floats in: an aligned sub-buffer; 3 floats in: staged through an aligned copy.
    torch.testing.assert_close(axpy(xo[128:], yo[128:], 1.0).cpu(), x[128:] + y[128:])
    torch.testing.assert_close(axpy(xo[3:996], yo[5:998], 1.0).cpu(), x[3:996] + y[5:998])


def test_in_place_operator_eager_unaligned_and_compiled():
    x = torch.randn(300)
    xo = x.to("ocl")
    scale_(xo, 2.0)
    torch.testing.assert_close(xo.cpu(), 2 * x)
    scale_(xo[3:], 0.5)  # an unaligned view: written back from its staging copy
    expected = 2 * x
    expected[3:] *= 0.5
    torch.testing.assert_close(xo.cpu(), expected)

    def f(t):
        t = t + 1
        scale_(t, 3.0)
        return t * 2

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("ocl")
    torch.testing.assert_close(torch.compile(f, backend=counter, fullgraph=True)(x.to("ocl")).cpu(), (x + 1) * 6)
    assert counter.frame_count == 1
    torch._dynamo.reset()


def test_local_memory_parameter():
    x = torch.arange(256, dtype=torch.float32)
    got = block_reverse(x.to("ocl")).cpu()
    torch.testing.assert_close(got, x.view(4, 64).flip(1).reshape(-1))


def test_runs_on_the_current_stream():
    x, y = torch.randn(4096), torch.randn(4096)
    xo, yo = ocl(x, y)
    s = torch.ocl.Stream()
    s.wait_stream(torch.ocl.current_stream())
    with torch.ocl.stream(s):
        out = axpy(xo, yo, 3.0)
    s.synchronize()
    torch.testing.assert_close(out.cpu(), 3 * x + y)


def test_bad_arguments_raise_and_leave_the_process_usable():
    xo = torch.randn(10, device="ocl")
    with pytest.raises(RuntimeError, match="same device"):
        axpy(xo, torch.randn(10), 1.0)
    with pytest.raises(RuntimeError, match="not implemented for 'Half'"):
        axpy(xo.half(), xo.half(), 1.0)
    with pytest.raises(RuntimeError, match="must be contiguous"):
        axpy(torch.randn(20, device="ocl")[::2], xo, 1.0)
    with pytest.raises(NotImplementedError, match="'CPU' backend"):  # as a CUDA-only operator
        axpy(torch.randn(10), torch.randn(10), 1.0)
    torch.testing.assert_close(axpy(xo, xo, 1.0).cpu(), 2 * xo.cpu())


def test_argument_types_are_checked_against_the_kernel():
    src = "__kernel void narrow(__global float* out, __global const int* idx, const int n, const uchar u) {}"
    op = drawbridge.kernel(
        "drawbridge_tests::narrow(Tensor x, Tensor idx, int n, int u) -> Tensor", src,
        outputs=lambda x, idx, n, u: torch.empty_like(x),
        args=lambda x, idx, n, u, out: (out, idx, n, u), grid=lambda x, idx, n, u: (1,))
    x = torch.ones(4, device="ocl")
    idx = torch.zeros(4, dtype=torch.int32, device="ocl")
    op(x, idx, 2**31 - 1, 255)
    with pytest.raises(RuntimeError, match="does not fit parameter 'n' of type int"):
        op(x, idx, 2**31, 0)
    with pytest.raises(RuntimeError, match="does not fit parameter 'u' of type uchar"):
        op(x, idx, 0, 256)
    with pytest.raises(RuntimeError, match="does not fit parameter 'u'"):
        op(x, idx, 0, -1)
    with pytest.raises(RuntimeError, match=r"parameter 'idx' is int\*, got a tensor of dtype torch.int64"):
        op(x, idx.long(), 0, 0)
    op(x, idx, 0, 0)


def test_wrong_argument_count_and_kinds_raise_type_errors():
    src = "__kernel void k(__global float* out, const float a) {}"
    too_few = drawbridge.kernel(
        "drawbridge_tests::too_few(Tensor x) -> Tensor", src, name="k", outputs=lambda x: torch.empty_like(x),
        args=lambda x, out: (out,), grid=lambda x: (1,))
    swapped = drawbridge.kernel(
        "drawbridge_tests::swapped(Tensor x) -> Tensor", src, name="k", outputs=lambda x: torch.empty_like(x),
        args=lambda x, out: (1.0, out), grid=lambda x: (1,))
    x = torch.ones(2, device="ocl")
    with pytest.raises(TypeError, match="takes 2 arguments"):
        too_few(x)
    with pytest.raises(TypeError, match="needs a tensor"):
        swapped(x)


def test_launch_geometry_is_checked():
    limit = torch.ocl.get_device_properties().max_work_group_size
    too_big = drawbridge.kernel(
        "drawbridge_tests::too_big(Tensor x) -> Tensor", AXPY, name="axpy",
        outputs=lambda x: torch.empty_like(x),
        args=lambda x, out: (out, x, x, 1.0, x.numel()), grid=lambda x: (4 * limit,), local=(2 * limit,))
    ragged = drawbridge.kernel(
        "drawbridge_tests::ragged(Tensor x) -> Tensor", AXPY, name="axpy",
        outputs=lambda x: torch.empty_like(x),
        args=lambda x, out: (out, x, x, 1.0, x.numel()), grid=lambda x: (100,), local=(64,))
    x = torch.ones(8, device="ocl")
    with pytest.raises(RuntimeError, match="work-group|local size"):
        too_big(x)
    with pytest.raises(RuntimeError, match="not a multiple of the local size 64"):
        ragged(x)


def test_build_errors_show_the_users_source_and_line(tmp_path):
    path = tmp_path / "broken.cl"
    path.write_text("// a comment\n__kernel void broken(__global float* out) {\n  out[0] = missing_name;\n}\n")
    op = drawbridge.kernel("drawbridge_tests::broken(Tensor x) -> Tensor", path,
                           outputs=lambda x: torch.empty_like(x), args=lambda x, out: (out,), grid=lambda x: (1,))
    with pytest.raises(RuntimeError) as info:
        op(torch.ones(1, device="ocl"))
    message = str(info.value)
    assert "missing_name" in message
    assert f"{path}:3:" in message


def test_schema_and_outputs_are_validated():
    with pytest.raises(ValueError, match="namespace::name"):
        drawbridge.kernel("noname(Tensor x) -> Tensor", AXPY, args=lambda *a: a, grid=lambda *a: (1,))
    with pytest.raises(ValueError, match="give outputs="):
        drawbridge.kernel("drawbridge_tests::no_outputs(Tensor x) -> Tensor", AXPY, args=lambda *a: a,
                          grid=lambda *a: (1,))


def test_get_include_holds_the_public_header():
    assert (pathlib.Path(drawbridge.get_include()) / "drawbridge" / "extension.h").is_file()
