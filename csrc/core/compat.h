// Differences between the torch releases Drawbridge builds against (2.11 through 2.14) live here
// and nowhere else.
#pragma once

#include <torch/version.h>

#define DRAWBRIDGE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
