// What the CPU fallback did since the last reset, per operator: calls and the wall time they
// took (copies, the CPU kernel and the synchronization): `python -m drawbridge check` reports it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace drawbridge::core {

struct FallbackUse {
  int64_t calls = 0;
  double seconds = 0;
};

std::map<std::string, FallbackUse> fallback_uses();

}  // namespace drawbridge::core
