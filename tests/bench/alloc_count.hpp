#pragma once

// Counts the process's heap allocations while switched on, for the bench's
// per-read accounting. The `georoute` program replaces `malloc`, `calloc`
// and `realloc` with thin wrappers around glibc's own (everything that
// allocates ends there: operator new, OpenSSL, Asio); switched off, a
// wrapper costs one relaxed load. Not built under a sanitizer, which has its
// own allocator, nor with GEOROUTE_COUNT_ALLOCS off (for a heap profiler):
// `available()` is false there and the counts stay zero.

#include <cstdint>

namespace georoute::bench::alloc_count {

struct totals {
  uint64_t count = 0; ///< allocations (malloc, calloc, realloc)
  uint64_t bytes = 0; ///< bytes asked for
};

/// False in sanitizer builds.
bool available();

/// Starts or stops counting (counters keep their values).
void enable(bool on);

/// The counts so far.
totals read();

} // namespace georoute::bench::alloc_count
