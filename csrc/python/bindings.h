// The parts of drawbridge._C's bindings that live in files of their own.
#pragma once

#include <pybind11/pybind11.h>

namespace drawbridge::python {

void bind_distributed(pybind11::module& m);  // distributed.cpp: ProcessGroupOCCL

}  // namespace drawbridge::python
