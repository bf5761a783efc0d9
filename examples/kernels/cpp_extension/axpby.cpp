// An ocl operator written in C++ with Drawbridge's extension API (drawbridge/extension.h):
// drawbridge_cpp_example::axpby(x, y, alpha, beta) = alpha * x + beta * y, for float32 tensors.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <drawbridge/extension.h>

#include <map>
#include <utility>
#include <mutex>

namespace {

// Tensors arrive as a buffer and a byte offset: an OpenCL kernel cannot take an interior pointer.
constexpr const char* kSource = R"CL(
__kernel void axpby(__global float* out, const ulong out_offset, __global const float* x, const ulong x_offset,
                    __global const float* y, const ulong y_offset, const float alpha, const float beta,
                    const ulong n) {
  const ulong i = get_global_id(0);
  if (i >= n) return;
  out = (__global float*)((__global char*)out + out_offset);
  x = (__global const float*)((__global const char*)x + x_offset);
  y = (__global const float*)((__global const char*)y + y_offset);
  out[i] = alpha * x[i] + beta * y[i];
}
)CL";

void check(cl_int status, const char* call) {
  TORCH_CHECK(status == CL_SUCCESS, "axpby: ", call, " failed with OpenCL error ", status);
}

// One kernel object per program (per device); setting arguments and enqueueing happen under the
// lock, as a cl_kernel's arguments are shared by every thread that uses it.
std::mutex kernels_mutex;
std::map<cl_program, cl_kernel> kernels;

cl_kernel kernel_for(cl_program program) {
  cl_kernel& k = kernels[program];
  if (!k) {
    cl_int status = CL_SUCCESS;
    k = clCreateKernel(program, "axpby", &status);
    check(status, "clCreateKernel");
  }
  return k;
}

at::Tensor axpby(const at::Tensor& x, const at::Tensor& y, double alpha, double beta) {
  TORCH_CHECK(x.device().type() == c10::DeviceType::PrivateUse1 && y.device() == x.device(),
              "axpby: expected x and y on the same ocl device, got ", x.device(), " and ", y.device());
  TORCH_CHECK(x.scalar_type() == at::kFloat && y.scalar_type() == at::kFloat, "axpby: expected float32 tensors");
  TORCH_CHECK(x.sizes() == y.sizes(), "axpby: x and y differ in shape: ", x.sizes(), " and ", y.sizes());
  const at::Tensor xc = x.contiguous(), yc = y.contiguous();
  at::Tensor out = at::empty_like(xc);
  const cl_ulong n = static_cast<cl_ulong>(out.numel());
  if (n == 0) return out;

  const int device = x.device().index();
  const drawbridge::Buffer xb = drawbridge::buffer(xc), yb = drawbridge::buffer(yc), ob = drawbridge::buffer(out);
  cl_program program = drawbridge::program(kSource, "", "axpby example", device);
  cl_command_queue queue = drawbridge::current_queue(device);
  const float a = static_cast<float>(alpha), b = static_cast<float>(beta);
  const cl_ulong out_offset = ob.offset, x_offset = xb.offset, y_offset = yb.offset;
  const size_t local = 256, global = (n + local - 1) / local * local;
  {
    std::lock_guard<std::mutex> lock(kernels_mutex);
    cl_kernel k = kernel_for(program);
    const std::pair<size_t, const void*> args[] = {
        {sizeof(cl_mem), &ob.mem}, {sizeof(cl_ulong), &out_offset}, {sizeof(cl_mem), &xb.mem},
        {sizeof(cl_ulong), &x_offset}, {sizeof(cl_mem), &yb.mem},     {sizeof(cl_ulong), &y_offset},
        {sizeof(float), &a},         {sizeof(float), &b},             {sizeof(cl_ulong), &n}};
    for (cl_uint i = 0; i < 9; ++i) check(clSetKernelArg(k, i, args[i].first, args[i].second), "clSetKernelArg");
    check(clEnqueueNDRangeKernel(queue, k, 1, nullptr, &global, &local, 0, nullptr, nullptr),
          "clEnqueueNDRangeKernel");
  }
  drawbridge::enqueued(queue);
  return out;
}

}  // namespace

TORCH_LIBRARY(drawbridge_cpp_example, m) {
  m.def("axpby(Tensor x, Tensor y, float alpha, float beta) -> Tensor");
}

TORCH_LIBRARY_IMPL(drawbridge_cpp_example, PrivateUse1, m) { m.impl("axpby", &axpby); }
