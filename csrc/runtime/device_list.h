// Every OpenCL device the loader reports, selected or not: what `python -m drawbridge doctor`
// lists. Discovery happens once, with the devices of device.h.
#pragma once

#include <vector>

#include "runtime/device.h"

namespace drawbridge::runtime {

struct ListedDevice {
  DeviceCandidate names;
  int ocl_index = -1;  // the ocl:N it became under DRAWBRIDGE_DEVICES, or -1
};

std::vector<ListedDevice> listed_devices();

}  // namespace drawbridge::runtime
