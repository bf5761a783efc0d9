#include "runtime/kernel_info.h"

#include "runtime/error.h"

namespace drawbridge::runtime {

namespace {

std::string arg_string(cl_kernel kernel, cl_uint index, cl_kernel_arg_info what) {
  size_t n = 0;
  DB_CL_CHECK(clGetKernelArgInfo(kernel, index, what, 0, nullptr, &n));
  std::string s(n, '\0');
  if (n) DB_CL_CHECK(clGetKernelArgInfo(kernel, index, what, n, s.data(), nullptr));
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

}  // namespace

std::optional<std::vector<KernelParam>> kernel_params(cl_kernel kernel) {
  cl_uint count = 0;
  DB_CL_CHECK(clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof(count), &count, nullptr));
  std::vector<KernelParam> params(count);
  for (cl_uint i = 0; i < count; ++i) {
    cl_kernel_arg_address_qualifier space = 0;
    const cl_int status = clGetKernelArgInfo(kernel, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(space), &space,
                                             nullptr);
    if (status == CL_KERNEL_ARG_INFO_NOT_AVAILABLE) return std::nullopt;
    DB_CL_CHECK(status);
    cl_kernel_arg_type_qualifier qualifiers = 0;
    DB_CL_CHECK(clGetKernelArgInfo(kernel, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof(qualifiers), &qualifiers,
                                   nullptr));
    KernelParam& p = params[i];
    p.name = arg_string(kernel, i, CL_KERNEL_ARG_NAME);
    p.type = arg_string(kernel, i, CL_KERNEL_ARG_TYPE_NAME);
    p.is_const = (qualifiers & CL_KERNEL_ARG_TYPE_CONST) != 0;
    switch (space) {
      case CL_KERNEL_ARG_ADDRESS_GLOBAL: p.space = KernelParam::Space::global; break;
      case CL_KERNEL_ARG_ADDRESS_CONSTANT: p.space = KernelParam::Space::constant; break;
      case CL_KERNEL_ARG_ADDRESS_LOCAL: p.space = KernelParam::Space::local; break;
      default: p.space = KernelParam::Space::value; break;
    }
  }
  return params;
}

}  // namespace drawbridge::runtime
