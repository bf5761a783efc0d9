"""The ocl generator: seeding and state, laid out as CUDA's Philox state."""
import struct

import torch


def test_torch_manual_seed_seeds_ocl():
    torch.manual_seed(1234)
    assert torch.ocl.initial_seed() == 1234
    torch.ocl.manual_seed(99)
    assert torch.ocl.initial_seed() == 99
    torch.ocl.manual_seed_all(7)
    assert torch.ocl.initial_seed() == 7
    torch.ocl.seed()
    assert isinstance(torch.ocl.initial_seed(), int)


def test_state_layout_and_roundtrip():
    torch.ocl.manual_seed(42)
    state = torch.ocl.get_rng_state()
    assert state.dtype == torch.uint8 and state.numel() == 16
    seed, offset = struct.unpack("<Qq", bytes(state.tolist()))
    assert (seed, offset) == (42, 0)
    new = torch.tensor(list(struct.pack("<Qq", 5, 8)), dtype=torch.uint8)
    torch.ocl.set_rng_state(new)
    assert torch.ocl.initial_seed() == 5
    assert torch.equal(torch.ocl.get_rng_state(), new)
    assert len(torch.ocl.get_rng_state_all()) == torch.ocl.device_count()


def test_generators_and_fork_rng():
    g = torch.Generator(device="ocl")
    g.manual_seed(3)
    assert g.initial_seed() == 3 and g.device.type == "ocl"
    torch.ocl.manual_seed(11)
    with torch.random.fork_rng(device_type="ocl"):
        torch.ocl.manual_seed(12)
    assert torch.ocl.initial_seed() == 11


def test_complex_normal_draws_both_parts_as_the_cpu():
    # Each part with std / sqrt(2) around the mean, so that E|z - mean|^2 = std^2.
    z = torch.empty(200_000, dtype=torch.complex64, device="ocl").normal_(2.0, 3.0).cpu()
    for part in (z.real, z.imag):
        assert abs(part.mean().item() - 2.0) < 0.03 and abs(part.std().item() - 3.0 / 2 ** 0.5) < 0.03
    assert torch.randn(4, 3, dtype=torch.complex64, device="ocl").dtype == torch.complex64
