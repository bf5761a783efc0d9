"""torch.compile on ocl: Inductor with the OpenCL C code generator of drawbridge/compiler.

Compiled results are compared with the CPU (ops) and with eager ocl (training), with the fallback
switched to error so that nothing of a compiled graph runs on the CPU."""
import os
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounterWithBackend
from torch._inductor import metrics

import drawbridge
from test_training import TinyGPT, SequenceRegressor, adamw, classification_batch, cross_entropy, gpt_batch, \
    gpt_loss, mlp, small_cnn


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    metrics.reset()
    drawbridge.set_fallback_mode("error")
    yield
    drawbridge.set_fallback_mode("silent")
    torch._dynamo.reset()


def compiled(fn, *args, **kwargs):
    """fn compiled for ocl and run on ocl copies of args (CPU tensors)."""
    out = torch.compile(fn, **kwargs)(*[a.to("ocl") if isinstance(a, torch.Tensor) else a for a in args])
    return out


def assert_close_to_cpu(out, ref, atol=1e-5, rtol=1e-5):
    outs, refs = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs, strict=True):
        assert o.device.type == "ocl"
        assert o.dtype == r.dtype and o.shape == r.shape
        if r.dtype.is_floating_point:
            torch.testing.assert_close(o.cpu(), r, atol=atol, rtol=rtol, equal_nan=True)
        else:
            assert torch.equal(o.cpu(), r)


def test_pointwise_chain_and_its_reduction_are_one_kernel():
    x, y, z = (torch.randn(64, 100) for _ in range(3))
    fn = lambda x, y, z: (x * y + z).relu().sum(-1)  # noqa: E731
    assert_close_to_cpu(compiled(fn, x, y, z), fn(x, y, z), atol=1e-4)
    assert metrics.generated_kernel_count == 1


# Fusions the code generator must reach, as kernels per graph: a reduction with the pointwise ops
# before and after it is one kernel, and so are several outputs read from the same rows.
FUSIONS = {
    "softmax": (lambda x: torch.softmax(x * 2, -1), 1),
    "layer_norm_gelu_bias": (lambda x: F.gelu(F.layer_norm(x, (300,)) + 1.5), 1),
    "rms_norm": (lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6), 1),
    "norm_residual_chain": (lambda x: F.gelu(F.layer_norm(x, (300,)) * 0.5) + x, 1),
    "two_reductions_one_read": (lambda x: (x.sum(-1), x.amax(-1), (x * x).mean(-1)), 1),
    "pointwise_views": (lambda x: (x.t() * 2).reshape(-1)[:100].sigmoid(), 1),
    "cross_entropy": (lambda x: F.cross_entropy(x, torch.arange(x.shape[0], device=x.device) % 300), 2),
}


@pytest.mark.parametrize("name", FUSIONS)
def test_fusion_kernel_counts(name):
    fn, kernels = FUSIONS[name]
    x = torch.randn(40, 300)
    assert_close_to_cpu(compiled(fn, x), fn(x), atol=1e-4, rtol=1e-4)
    assert metrics.generated_kernel_count == kernels


def _randint(*shape, high=50):
    return torch.randint(-high, high, shape)


CASES = {
    "softmax": (lambda x: torch.softmax(x, -1), lambda: [torch.randn(32, 300)]),
    "log_softmax_dim0": (lambda x: torch.log_softmax(x, 0), lambda: [torch.randn(70, 33)]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (512,), w, b), lambda: [torch.randn(16, 512), torch.randn(512),
                                                                          torch.randn(512)]),
    "rms_norm": (lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6), lambda: [torch.randn(4, 1000)]),
    "gelu_bias": (lambda x, b: F.gelu(x + b), lambda: [torch.randn(8, 64), torch.randn(64)]),
    "silu_mul": (lambda x, y: F.silu(x) * y, lambda: [torch.randn(300), torch.randn(300)]),
    "argmax_ties_nan": (lambda x: (x.argmax(-1), x.argmin(0)),
                        lambda: [torch.randint(0, 3, (17, 1000)).float().index_put_((torch.tensor([3]),
                                 torch.tensor([5])), torch.tensor(float("nan")))]),
    "var_mean": (lambda x: torch.var_mean(x, -1), lambda: [torch.randn(9, 777)]),
    # Far from 0, with the first element an outlier (the shift of the blocked Welford sums): rows
    # of several blocks per lane (enough rows that Inductor does not split them into a combine),
    # and rows shorter than a work-group.
    "var_mean_offset": (lambda x, y: (*torch.var_mean(x, -1), torch.var(y, -1)),
                        lambda: [(torch.randn(64, 3000) + 1000).index_fill_(1, torch.tensor([0]), 1010.0),
                                 torch.randn(64, 40) * 3 - 500]),
    "amax_amin_prod": (lambda x: (x.amax(1), x.amin(1), x[:, :20].prod(1)), lambda: [torch.randn(5, 3000)]),
    "sum_all_long_row": (lambda x: x.sum(), lambda: [torch.randn(1000, 100)]),
    # Column reductions (inputs contiguous along the outputs): runs of outputs that do not fill
    # a work-item's run, ties and NaN for the arg reductions, ops after the loop, and an output
    # stored from inside it.
    "column_reductions": (lambda x, y: ((x * y).sum(0), x.amax(0), x.argmax(0), x.argmin(0), (x > 1).any(0),
                                        x.sum(0) * 2 + y[0], x * 2 + 1, (x * 2 + 1).prod(0)),
                          lambda: [torch.randint(0, 3, (300, 100)).float().index_put_(
                                       (torch.tensor([7]), torch.tensor([5])), torch.tensor(float("nan"))),
                                   torch.randn(300, 100)]),
    "column_var_mean": (lambda x: torch.var_mean(x, 0),
                        lambda: [(torch.randn(3000, 70) + 1000).index_fill_(0, torch.tensor([0]), 1010.0)]),
    "column_sum_of_3d": (lambda x: x.sum((0, 1)), lambda: [torch.randn(6, 50, 130)]),
    "mean_of_many": (lambda x: x.mean(0), lambda: [torch.randn(5000, 3)]),
    "transposed_inputs": (lambda x, y: x.t() + y, lambda: [torch.randn(64, 32), torch.randn(32, 64)]),
    "cat_and_pad": (lambda x, y: F.pad(torch.cat([x, y * 2], 1), (1, 2)), lambda: [torch.randn(8, 5),
                                                                                   torch.randn(8, 7)]),
    "where_clamp": (lambda x: torch.where(x > 0, x, x * 0.1).clamp(-0.5, 0.5), lambda: [torch.randn(1000)]),
    "integer_arithmetic": (lambda x: (x // 3, x % 3, x * x, x.abs(), x >> 1),
                           lambda: [_randint(100)]),
    "bool_any_all": (lambda x: ((x > 1).any(-1), (x > -3).all(-1)), lambda: [torch.randn(10, 100)]),
    "embedding": (lambda w, i: F.embedding(i, w) * 2, lambda: [torch.randn(50, 16), torch.randint(0, 50, (4, 6))]),
    "float16_io": (lambda x: (x * 2 + 1).sum(-1), lambda: [torch.randn(4, 100).half()]),
    "bfloat16_io": (lambda x: F.gelu(x) + 1, lambda: [torch.randn(4, 100).bfloat16()]),
    "dtype_casts": (lambda x: (x.to(torch.int32), x.to(torch.uint8), x.to(torch.bool), x.half().float()),
                    lambda: [torch.randn(100) * 100]),
    "math": (lambda x: (torch.exp(x) ** 2 + torch.tanh(x), torch.erf(x), torch.log1p(x.abs()), torch.atan2(x, x + 1)),
             lambda: [torch.randn(100)]),
    "float64": (lambda x: (x * 3).sum(-1), lambda: [torch.randn(4, 50, dtype=torch.float64)]),
    "matmul_epilogue": (lambda x, w, b: (x @ w + b).relu(), lambda: [torch.randn(16, 32), torch.randn(32, 8),
                                                                     torch.randn(8)]),
    "scan_and_sort_as_aten": (lambda x: (x.cumsum(-1) + 1, torch.sort(x, -1)[0] * 2), lambda: [torch.randn(4, 20)]),
    "index_add": (lambda x, i, s: x.index_add(0, i, s), lambda: [torch.zeros(10, 4), torch.tensor([1, 3, 1, 9]),
                                                                torch.ones(4, 4)]),
}


@pytest.mark.parametrize("name", CASES)
def test_compiled_ops_match_cpu(name):
    fn, make = CASES[name]
    torch.manual_seed(0)
    args = make()
    tol = 1e-2 if name in ("float16_io", "bfloat16_io") else 1e-4
    assert_close_to_cpu(compiled(fn, *args), fn(*args), atol=tol, rtol=tol)


# Each reduction form (drawbridge/compiler/kernel.py) and the line of its loop that says which.
FORM_LINES = {"column": "xbase + xi", "runs": "r0_run + ri", "blocks": "r0_block_end"}


@pytest.mark.parametrize("fn, forms", [(lambda x: x.sum(0), ["column"]),
                                       (lambda x: torch.var_mean(x, 0), ["column", "blocks"]),
                                       (lambda x: x.sum(1), []), (lambda x: torch.softmax(x, 0), ["runs"]),
                                       (lambda x: (x.amax(1), x.argmin(1)), ["runs"]),
                                       (lambda x: torch.var_mean(x, 1), ["blocks"])],
                         ids=["sum0", "var_mean0", "sum1", "softmax0", "amax_argmin1", "var_mean1"])
def test_reduction_forms(fn, forms, tmp_path, monkeypatch):
    # One reduction loop over inputs contiguous along the outputs takes the column form; a
    # softmax over dim 0 needs two loops and takes the row form, whose lanes walk runs of
    # elements for a max (not for sums, nor with Welford's blocks).
    monkeypatch.setenv("DRAWBRIDGE_COMPILE_SOURCE_DIR", str(tmp_path))
    x = torch.randn(200, 150)
    assert_close_to_cpu(compiled(fn, x), fn(x), atol=1e-4, rtol=1e-4)
    (source,) = [p.read_text() for p in tmp_path.glob("*.cl")]
    assert [f for f, line in FORM_LINES.items() if line in source] == forms


def test_backend_ocl_fullgraph_and_max_autotune_mode():
    x = torch.randn(8, 33)
    fn = lambda x: torch.softmax(x * 2, -1)  # noqa: E731
    assert_close_to_cpu(compiled(fn, x, backend="ocl", fullgraph=True), fn(x))
    torch._dynamo.reset()
    assert_close_to_cpu(compiled(fn, x, mode="max-autotune-no-cudagraphs"), fn(x))


def _train(make_model, batch, loss_of, compile_model, steps=20):
    torch.manual_seed(0)
    model = make_model().to("ocl")
    run = torch.compile(model) if compile_model else model
    optimizer = adamw(model.parameters())
    g = torch.Generator().manual_seed(2)
    losses = []
    for _ in range(steps):
        inputs, targets = batch(g)
        loss = loss_of(run, inputs.to("ocl"), targets.to("ocl"))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses, {n: p.detach().cpu() for n, p in model.named_parameters()}


def _cnn_batch(g):
    labels = torch.randint(0, 4, (16,), generator=g)
    return torch.randn(16, 1, 16, 16, generator=g), labels


def _lstm_batch(g):
    x = torch.randn(16, 12, 4, generator=g)
    return x, x[:, :, 0].sum(1, keepdim=True)


# The biases of convolutions followed by batch norm get gradients that cancel to rounding noise,
# which Adam scales up to full-size steps: they differ between any two summation orders. (So do
# the key biases of attention, a few steps' worth: hence the parameters' tolerance of 1e-2.)
NOISE_ONLY = {"0.bias", "4.bias"}

MODELS = {
    "mlp": (mlp, classification_batch, cross_entropy),
    "cnn": (small_cnn, _cnn_batch, cross_entropy),
    "gpt": (TinyGPT, gpt_batch, gpt_loss),
    "lstm": (SequenceRegressor, _lstm_batch, lambda m, x, y: F.mse_loss(m(x), y)),
}


@pytest.mark.parametrize("name", MODELS)
def test_compiled_training_equals_eager(name):
    eager_losses, eager_params = _train(*MODELS[name], compile_model=False)
    losses, params = _train(*MODELS[name], compile_model=True)
    for step, (a, b) in enumerate(zip(losses, eager_losses, strict=True)):
        assert abs(a - b) <= 1e-3 * abs(b) + 1e-6, f"step {step}: compiled {a} vs eager {b}"
    for n, p in params.items():
        if not (name == "cnn" and n in NOISE_ONLY):
            torch.testing.assert_close(p, eager_params[n], atol=1e-2, rtol=1e-2, msg=lambda m, n=n: f"{n}: {m}")
    if name != "lstm":  # Dynamo runs RNN modules eagerly (torch._dynamo.config.allow_rnn)
        assert metrics.generated_kernel_count > 0


def test_dynamic_shapes_compile_once_and_build_one_program():
    def fn(x, w):
        return torch.softmax(F.layer_norm(x, (32,)) @ w, -1).sum(1)

    w = torch.randn(32, 32)
    counter = CompileCounterWithBackend("inductor")
    cf = torch.compile(fn, dynamic=True, backend=counter)
    loads = []
    for length in (5, 9, 17, 33, 64):
        x = torch.randn(3, length, 32)
        assert_close_to_cpu(cf(x.to("ocl"), w.to("ocl")), fn(x, w), atol=1e-4, rtol=1e-4)
        stats = drawbridge._C._program_cache_stats()
        loads.append(stats["builds"] + stats["disk_hits"])
    assert counter.frame_count == 1
    assert loads[1:] == loads[:1] * 4, f"programs built or loaded after the first size: {loads}"


def test_graphs_that_generate_the_same_kernels_share_one_program():
    """Graphs of differently named nodes (Inductor's FX graph cache keeps them apart) whose kernels
    are the same build one program: the node names stay out of the OpenCL source."""
    x = torch.randn(37, 5)
    loaded = []
    for fn in (lambda t: torch.sin(t.view(-1)), lambda t: torch.sin(t.flatten())):
        assert_close_to_cpu(compiled(fn, x), fn(x))
        stats = drawbridge._C._program_cache_stats()
        loaded.append(stats["builds"] + stats["disk_hits"])
    assert metrics.generated_kernel_count == 2
    assert loaded[1] == loaded[0], "the second graph built or loaded a program of its own"


def test_mark_dynamic_sizes_are_kernel_arguments():
    fn = lambda x: (x * 2).sum(-1)  # noqa: E731
    cf = torch.compile(fn)
    for n in (10, 20, 30):
        x = torch.randn(4, n)
        xo = x.to("ocl")
        torch._dynamo.mark_dynamic(xo, 1)
        assert_close_to_cpu(cf(xo), fn(x), atol=1e-5)
    assert metrics.generated_kernel_count == 1


def test_dynamic_column_reductions():
    fn = lambda x: (x * 3).sum(0)  # noqa: E731
    cf = torch.compile(fn, dynamic=True)
    for rows, cols in ((5, 7), (300, 65), (64, 128), (2, 3)):
        x = torch.randn(rows, cols)
        assert_close_to_cpu(cf(x.to("ocl")), fn(x), atol=1e-4, rtol=1e-4)
    assert metrics.generated_kernel_count == 1


def test_dropout_draws_on_the_device_reproducibly():
    fn = lambda x: F.dropout(x, 0.3, training=True)  # noqa: E731
    cf = torch.compile(fn)
    x = torch.ones(20000, device="ocl")
    torch.manual_seed(3)
    a = cf(x)
    torch.manual_seed(3)
    b = cf(x)
    torch.manual_seed(4)
    c = cf(x)
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert abs(float((a == 0).float().mean()) - 0.3) < 0.02
    assert set(a.unique().cpu().tolist()) == {0.0, 1 / 0.7} or torch.allclose(a.unique().cpu(),
                                                                          torch.tensor([0.0, 1 / 0.7]))


def test_out_of_range_index_raises_index_error_at_sync():
    fn = lambda w, i: F.embedding(i, w) + 1  # noqa: E731
    w, i = torch.randn(10, 4), torch.tensor([1, 12])
    with pytest.raises(IndexError):
        compiled(fn, w, i).cpu()
    ok = torch.tensor([1, 2])
    assert_close_to_cpu(compiled(fn, w, ok), fn(w, ok))  # the process stays usable


def test_shape_and_device_errors_raise_as_in_eager():
    fn = lambda x, y: x + y  # noqa: E731
    with pytest.raises(RuntimeError):
        fn(torch.randn(3), torch.randn(4))
    with pytest.raises(RuntimeError):
        compiled(fn, torch.randn(3), torch.randn(4))
    with pytest.raises(RuntimeError):  # a CPU tensor beside an ocl one, as in eager
        torch.compile(fn)(torch.randn(3, device="ocl"), torch.randn(3))


def test_a_program_that_fails_to_build_names_its_log_and_source(tmp_path):
    from drawbridge.compiler.launcher import OpenCLProgram

    program = OpenCLProgram()
    program.add("broken", "l", "pointwise", "__kernel void broken(const long xnumel) { undeclared = 1; }")
    with pytest.raises(RuntimeError, match=r"(?s)undeclared.*generated OpenCL source of this graph is in"):
        program.build()
    x = torch.randn(5)
    assert_close_to_cpu(compiled(lambda x: x + 1, x), x + 1)


SECOND_PROCESS = textwrap.dedent("""
    import json, torch, drawbridge
    from torch._dynamo.utils import counters
    fn = torch.compile(lambda x: torch.softmax(x, -1) * 3)
    fn(torch.randn(4, 50, device="ocl")).cpu()
    stats = drawbridge._C._program_cache_stats()
    print(json.dumps({"builds": stats["builds"], "fx_hits": counters["inductor"]["fxgraph_cache_hit"]}))
""")


def test_a_second_process_builds_nothing_and_hits_the_fx_graph_cache(tmp_path):
    env = dict(os.environ, DRAWBRIDGE_CACHE_DIR=str(tmp_path / "kernels"), DRAWBRIDGE_CACHE_BINARIES="1",
               TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"), DRAWBRIDGE_COMPILE_SOURCE_DIR=str(tmp_path / "src"))
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", SECOND_PROCESS], env=env, capture_output=True, text=True,
                             timeout=600, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        import json
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert runs[0]["builds"] > 0 and runs[0]["fx_hits"] == 0
    assert runs[1]["builds"] == 0, runs
    assert runs[1]["fx_hits"] == 1, runs
    sources = list((tmp_path / "src").glob("*.cl"))
    assert sources and "__kernel void" in sources[0].read_text()


def test_control_flow_subgraphs_compile_into_the_same_program():
    def fn(x):
        return torch.cond(x.sum() > 0, lambda x: (x * 2).relu().sum(-1), lambda x: (x - 1).sum(-1), (x,))

    for sign in (1, -1):
        torch._dynamo.reset()
        x = torch.randn(8, 16) + 10 * sign
        assert_close_to_cpu(compiled(fn, x), fn(x), atol=1e-4, rtol=1e-5)
