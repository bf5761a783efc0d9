// The CPU fallback for ops with no native ocl kernel (DESIGN.md, decision 8).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace drawbridge::core {

enum class FallbackMode { Warn, Error, Silent };

FallbackMode fallback_mode();
void set_fallback_mode(FallbackMode mode);
std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();

}  // namespace drawbridge::core
