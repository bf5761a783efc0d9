"""Thread safety: autograd's device thread and concurrent Python threads."""
import threading

import torch


class RecordThread(torch.autograd.Function):
    backward_thread = None

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        RecordThread.backward_thread = threading.get_ident()
        return grad


def test_backward_runs_on_the_device_thread():
    x = torch.ones(4, device="ocl", requires_grad=True)
    y = RecordThread.apply(x)
    y.backward(torch.full((4,), 2.0, device="ocl"))
    assert RecordThread.backward_thread is not None
    assert RecordThread.backward_thread != threading.get_ident()
    assert x.grad.device.type == "ocl" and x.grad.cpu().tolist() == [2.0] * 4


def test_two_threads_at_once():
    errors = []

    def work(seed):
        try:
            g = torch.Generator().manual_seed(seed)
            for i in range(40):
                a = torch.randn(64, 33, generator=g)
                d = a.to("ocl")
                b = d.t().contiguous().to(torch.bfloat16).to(torch.float32)
                expected = a.t().contiguous().to(torch.bfloat16).to(torch.float32)
                if not torch.equal(b.cpu(), expected):
                    errors.append(f"thread {seed} iteration {i}: wrong result")
                z = torch.zeros(100, device="ocl")
                z[::3].fill_(seed)
                if z.cpu()[::3].tolist() != [float(seed)] * 34:
                    errors.append(f"thread {seed} iteration {i}: wrong fill")
        except Exception as e:  # surfaced below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
