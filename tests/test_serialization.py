"""torch.save / torch.load of ocl tensors and state dicts."""
import io

import torch
import torch.nn as nn


def roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kwargs)


def test_tensor_roundtrip_keeps_device_and_values():
    x = torch.randn(5, 3).to("ocl")
    y = roundtrip(x)
    assert y.device == torch.device("ocl:0")
    assert torch.equal(y.cpu(), x.cpu())
    view = roundtrip(x[1:, ::2])
    assert torch.equal(view.cpu(), x.cpu()[1:, ::2])


def test_map_location():
    x = torch.arange(6, dtype=torch.int64).to("ocl")
    for location, device in (("cpu", "cpu"), ("ocl", "ocl:0"), ("ocl:0", "ocl:0"), (torch.device("ocl:0"), "ocl:0")):
        y = roundtrip(x, map_location=location)
        assert y.device == torch.device(device)
        assert y.cpu().tolist() == list(range(6))
    cpu_saved = roundtrip(torch.arange(3.0), map_location="ocl")
    assert cpu_saved.device.type == "ocl" and cpu_saved.cpu().tolist() == [0, 1, 2]


def test_state_dicts():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).ocl()
    sd = roundtrip(model.state_dict())
    assert all(v.device.type == "ocl" for v in sd.values())
    fresh = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).ocl()
    fresh.load_state_dict(sd)
    for a, b in zip(model.parameters(), fresh.parameters(), strict=True):
        assert torch.equal(a.cpu(), b.cpu())


def test_cpu_checkpoint_into_ocl_model():
    cpu_model = nn.Linear(3, 3)
    ckpt = roundtrip(cpu_model.state_dict())
    model = nn.Linear(3, 3).ocl()
    model.load_state_dict(ckpt)
    assert model.weight.device.type == "ocl"
    assert torch.equal(model.weight.cpu(), cpu_model.weight.detach())
