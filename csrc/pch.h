// Precompiled header for the torch extension: the ATen and c10 headers every translation unit
// of csrc/core, csrc/kernels and csrc/ops uses. Compiled once per build.
#pragma once

#include <ATen/ATen.h>
#include <ATen/TensorIterator.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>
