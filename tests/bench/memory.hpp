#pragma once

// Resident memory of georoute's metadata caches: an engine whose port is an
// in-process emulator engine (no sockets) loads `collections` collections of
// `ranges` partition-key ranges each into its collection and partition-range
// caches; the growth of this process's resident set, divided by the ranges
// held, is the cost of one cached range (collection entries included).

#include "tests/bench/measure.hpp"

#include <cstddef>

namespace georoute::bench {

memory_figures measure_memory(size_t collections, size_t ranges);

} // namespace georoute::bench
