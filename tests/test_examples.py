"""The real-world examples run, small, as a user would run them (each asserts its own results
against the CPU or against itself)."""
import json
import os
import subprocess
import sys
import tempfile

from conftest import gemm_kernel_name

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def run(*argv, timeout=900):
    return subprocess.run([sys.executable, *argv], cwd=tempfile.gettempdir(), capture_output=True, text=True,
                          timeout=timeout)


def test_hf_causal_lm_generates_and_fine_tunes_with_the_migration_report():
    out = run("-m", "drawbridge", "check", "--json", os.path.join(EXAMPLES, "hf_causal_lm.py"), "--",
              "--layers", "2", "--width", "64", "--new-tokens", "8", "--steps", "2")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "generated token ids:" in out.stdout and "fine-tuning step 1" in out.stdout
    report = json.loads(out.stdout[out.stdout.index("\n{") + 1:])
    assert report["fallback"] == {}  # GPT-2 generation and training run natively
    assert report["top_kernels"][gemm_kernel_name()]["launches"] > 0


def test_resnet_loop_with_workers_pinned_memory_autocast_and_resume():
    out = run(os.path.join(EXAMPLES, "train_resnet.py"), "--epochs", "2", "--batches", "3", "--batch-size", "8",
              "--width", "8")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "the resumed run's last" in out.stdout
