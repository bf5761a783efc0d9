"""Shows the OpenCL devices Drawbridge found and does a computation on the first one."""
import torch

if not torch.ocl.is_available():
    raise SystemExit("No OpenCL device: see `clinfo -l`, or install PoCL (apt-get install pocl-opencl-icd).")

for i in range(torch.ocl.device_count()):
    p = torch.ocl.get_device_properties(i)
    print(
        f"ocl:{i}: {p.name} ({p.type}, {p.platform_name}, driver {p.driver_version}), "
        f"{p.total_memory / 2**30:.1f} GiB, {p.multi_processor_count} compute units, "
        f"fp16={p.supports_fp16} fp64={p.supports_fp64}"
    )

x = torch.arange(12, dtype=torch.float32).reshape(3, 4).to("ocl")
y = x.t().contiguous().to(torch.bfloat16)  # strided copy and dtype conversion, both on the device
print("transposed on", y.device, ":", y.cpu().tolist())
