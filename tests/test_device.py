"""The ocl device: autoload, identity, torch.ocl, device selection and their errors."""
import os
import shutil
import subprocess
import sys

import pytest
import torch
import torch.nn as nn


def test_import_torch_alone_registers_ocl(run_py):
    r = run_py(
        """
        import sys, torch
        t = torch.ones(3, device="ocl")
        print(t.device, "drawbridge" in sys.modules, torch.accelerator.current_accelerator())
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ocl:0", "True", "ocl"]


def test_import_drawbridge_before_torch(run_py):
    # torch's import autoloads this package while the package's own import is under way.
    r = run_py(
        """
        import drawbridge
        import torch
        print(torch.ones(2, device="ocl").sum().item())
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["2.0"]


def test_identity():
    assert torch.accelerator.current_accelerator() == torch.device("ocl")
    assert torch.accelerator.is_available()
    a = torch.ones(2, device="ocl")
    b = torch.ones(2, device=torch.device("ocl:0"))
    assert a.device == b.device == torch.device("ocl", 0)
    assert a.is_ocl and not torch.ones(1).is_ocl
    assert torch.arange(4).ocl().device.type == "ocl"
    m = nn.Linear(3, 2).ocl()
    assert all(p.device.type == "ocl" for p in m.parameters())
    assert torch.device("ocl").type == "ocl"


def test_torch_ocl_module():
    assert torch.ocl.is_available()
    assert torch.ocl.device_count() >= 1
    assert torch.ocl.is_initialized()
    torch.ocl.set_device(0)
    assert torch.ocl.current_device() == 0
    with torch.ocl.device(0):
        assert torch.ocl.current_device() == 0
    with torch.ocl.device("ocl:0"):
        assert torch.ones(1, device="ocl").device.index == 0
    torch.ocl.synchronize()
    assert isinstance(torch.ocl.get_device_name(), str) and torch.ocl.get_device_name()
    assert torch.ocl.get_amp_supported_dtype() == [torch.float16, torch.bfloat16]


def test_device_properties():
    p = torch.ocl.get_device_properties(0)
    assert p.name and p.vendor and p.driver_version and p.platform_name
    assert p.total_memory > 0
    assert 0 < p.max_alloc_size <= p.total_memory
    assert p.multi_processor_count > 0
    assert isinstance(p.supports_fp16, bool) and isinstance(p.supports_fp64, bool)
    assert p.type in ("gpu", "cpu", "accelerator")
    assert p.device_class in ("gpu", "cpu")


def test_device_class_override(run_py):
    code = "import torch; print(torch.ocl.get_device_properties().device_class, (torch.arange(10., device='ocl') * 2).sum().item())"
    for chosen in ("gpu", "cpu", "GPU"):
        r = run_py(code, env={"DRAWBRIDGE_DEVICE_CLASS": chosen})
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == [chosen.lower(), "90.0"]
    r = run_py(
        """
        import torch
        try:
            torch.ones(1, device="ocl")
        except RuntimeError as e:
            print("ERROR", e)
        print(torch.ones(2).sum().item())
        """,
        env={"DRAWBRIDGE_DEVICE_CLASS": "tpu"},
    )
    assert r.returncode == 0, r.stderr
    assert "DRAWBRIDGE_DEVICE_CLASS" in r.stdout and r.stdout.splitlines()[-1] == "2.0"


def test_device_index_out_of_range_raises_and_recovers():
    bad = torch.ocl.device_count()
    with pytest.raises(RuntimeError, match=f"ocl:{bad}"):
        torch.ones(1, device=f"ocl:{bad}")
    with pytest.raises(RuntimeError, match="Invalid device"):
        torch.ocl.set_device(bad)
    assert torch.ocl.current_device() == 0
    assert torch.ones(2, device="ocl").sum().item() == 2


def test_no_opencl_platform_is_a_clear_error(run_py, tmp_path):
    r = run_py(
        """
        import torch
        print(torch.ocl.is_available(), torch.ocl.device_count())
        try:
            torch.ones(3, device="ocl")
        except RuntimeError as e:
            print("ERROR", e)
        print(torch.ones(2).sum().item())
        """,
        env={"OCL_ICD_VENDORS": str(tmp_path), "OCL_ICD_FILENAMES": ""},
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "False 0"
    assert lines[1].startswith("ERROR") and "no OpenCL" in lines[1] and "install" in lines[1].lower()
    assert lines[2] == "2.0"


def test_select_devices_by_name(run_py):
    r = run_py(
        """
        import torch
        print(torch.ocl.device_count(), torch.ocl.get_device_properties(0).platform_name)
        """,
        env={"DRAWBRIDGE_DEVICES": "pocl"},
    )
    assert r.returncode == 0, r.stderr
    if r.stdout.startswith("0"):
        pytest.skip("no PoCL device on this machine")
    assert r.stdout.split()[0] == "1"
    assert "Portable Computing Language" in r.stdout

    r = run_py(
        """
        import torch
        print(torch.ocl.device_count())
        try:
            torch.zeros(1, device="ocl")
        except RuntimeError as e:
            print("ERROR", e)
        """,
        env={"DRAWBRIDGE_DEVICES": "no-such-vendor:3"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "0"
    assert "DRAWBRIDGE_DEVICES" in r.stdout


def test_float64_without_fp64_is_an_error_never_a_downcast(run_py):
    r = run_py(
        """
        import torch
        print(torch.ocl.get_device_properties().supports_fp64)
        for make in (lambda: torch.zeros(2, dtype=torch.float64, device="ocl"),
                     lambda: torch.tensor([1.5], dtype=torch.float64).to("ocl"),
                     lambda: torch.ones(2, device="ocl").double()):
            try:
                t = make()
                print("NO ERROR", t.dtype)
            except TypeError as e:
                print("TypeError", "float64" in str(e))
        print(torch.ones(2, device="ocl").float().cpu().tolist())
        """,
        env={"DRAWBRIDGE_DISABLE_FP64": "1"},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["False", "TypeError True", "TypeError True", "TypeError True", "[1.0, 1.0]"]


@pytest.mark.skipif(
    torch.ocl.get_device_properties().type != "cpu" or not os.access("/dev/cpu_dma_latency", os.W_OK),
    reason="the idle-poll request is made for CPU devices where the process may open /dev/cpu_dma_latency",
)
def test_idle_poll_request_held_while_work_comes_and_dropped_after(run_py):
    code = """
        import os, time, torch
        def held():
            # A descriptor listed may close before it is read (listdir's own, another thread's).
            def target(fd):
                try:
                    return os.readlink(f"/proc/self/fd/{fd}")
                except FileNotFoundError:
                    return None
            return any(target(fd) == "/dev/cpu_dma_latency" for fd in os.listdir("/proc/self/fd"))
        x = torch.ones(1000, device="ocl")
        before = held()
        (x + 1).sum().item()
        during = held()
        time.sleep(0.5)
        after = held()
        (x * 2).sum().item()
        print(before, during, after, held())
        """
    r = run_py(code, env={"DRAWBRIDGE_IDLE_POLL": "1"})
    assert r.returncode == 0, r.stderr
    # x is created by a write, which makes the request too.
    assert r.stdout.split() == ["True", "True", "False", "True"]
    for off in ({"DRAWBRIDGE_IDLE_POLL": "0"}, {"DRAWBRIDGE_IDLE_POLL": ""}):  # the default is off
        r = run_py(code, env=off)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == ["False", "False", "False", "False"]


REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_python_started_in_the_repository_root_imports_torch():
    # There `import drawbridge` (which `import torch` autoloads) finds the source folder, which
    # `make install` links the built extension into.
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.ones(3, device='ocl').sum().item())"],
                         cwd=REPO_ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "3.0"


def test_a_source_folder_without_the_extension_says_what_to_do(tmp_path):
    shutil.copytree(os.path.join(REPO_ROOT, "drawbridge"), tmp_path / "drawbridge",
                    ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    out = subprocess.run([sys.executable, "-c", "import torch"], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode != 0
    assert "the compiled extension (_C) is not in" in out.stderr and "make install" in out.stderr
