"""FFT (VkFFT) and batched small-matrix linear algebra (one work-item per matrix) on ocl, beside
the CPU backend (pocketfft, LAPACK) in the same run: milliseconds per call for a stream of calls
of one shape, after the first call (which builds VkFFT's plan or compiles the kernel)."""
import argparse

import torch

from common import calls_for, report, time_it

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="ocl")
parser.add_argument("--seconds", type=float, default=0.5, help="length of each timed block")
args = parser.parse_args()


def spd(batch, n, device):
    a = torch.randn(batch, n, n, device=device)
    return a @ a.mT + n * torch.eye(n, device=device)


CASES = {
    "fft 64 x 4096 (c2c)": (lambda d: torch.randn(64, 4096, dtype=torch.complex64, device=d), torch.fft.fft),
    "rfft 64 x 4096": (lambda d: torch.randn(64, 4096, device=d), torch.fft.rfft),
    "irfft 64 x 2049": (lambda d: torch.randn(64, 2049, dtype=torch.complex64, device=d), torch.fft.irfft),
    "fft2 16 x 256 x 256": (lambda d: torch.randn(16, 256, 256, dtype=torch.complex64, device=d), torch.fft.fft2),
    "fft 64 x 4099 (prime, Bluestein)": (lambda d: torch.randn(64, 4099, dtype=torch.complex64, device=d), torch.fft.fft),
    "cholesky 1024 x 8 x 8": (lambda d: spd(1024, 8, d), torch.linalg.cholesky),
    "solve 1024 x 16 x 16": (lambda d: spd(1024, 16, d), lambda a: torch.linalg.solve(a, a[..., :1])),
    "inv 256 x 32 x 32": (lambda d: spd(256, 32, d), torch.linalg.inv),
    "qr 256 x 32 x 16": (lambda d: torch.randn(256, 32, 16, device=d), torch.linalg.qr),
    "eigh 256 x 16 x 16": (lambda d: spd(256, 16, d), torch.linalg.eigh),
    "svd 256 x 16 x 8": (lambda d: torch.randn(256, 16, 8, device=d), torch.linalg.svd),
}

rows = []
for name, (make, fn) in CASES.items():
    ms = {}
    for device in (args.device, "cpu"):
        x = make(device)
        call = lambda: fn(x)  # noqa: E731
        ms[device] = time_it(call, device, repeat=3, calls=calls_for(call, device, args.seconds)) * 1e3
    rows.append({"op": name, f"{args.device} ms": round(ms[args.device], 3), "cpu ms": round(ms["cpu"], 3),
                 "ocl / cpu speed": round(ms["cpu"] / ms[args.device], 2)})

report("spectral_linalg", list(rows[0]), rows)
