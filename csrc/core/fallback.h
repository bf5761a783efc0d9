// The CPU fallback for ops with no native ocl kernel (DESIGN.md, decision 8).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace drawbridge::core {

enum class FallbackMode { Warn, Error, Silent };

FallbackMode fallback_mode();
// Accounts for an op that runs on the CPU by explicit code (not through the boxed fallback):
// raises NotImplementedError in error mode, warns once in warn mode, counts it in the report.
void note_fallback(const std::string& op);
void set_fallback_mode(FallbackMode mode);
std::map<std::string, int64_t> fallback_counts();
void reset_fallback_counts();

}  // namespace drawbridge::core
