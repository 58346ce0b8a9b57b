#pragma once

// gtest's printer of hedge_class, found by ADL: hedge_plan_test.cpp and
// hedging_test.cpp both print it, and a unity build (tests/CMakeLists.txt)
// may compile the two in one translation unit, where two definitions would
// clash.

#include "georoute/actors/policy/hedging.hpp"

#include <ostream>

namespace georoute {

inline void PrintTo(hedge_class x, std::ostream* os) {
  static const char* names[] = {"final_result", "start_next", "wait_for_timer"};
  *os << names[static_cast<int>(x)];
}

} // namespace georoute
