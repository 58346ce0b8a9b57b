#include "tests/bench/alloc_count.hpp"

#include <atomic>
#include <cstddef>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) ||           \
    defined(GEOROUTE_NO_ALLOC_COUNT)
#  define GEOROUTE_COUNT_ALLOCS 0
#else
#  define GEOROUTE_COUNT_ALLOCS 1
#endif

namespace georoute::bench::alloc_count {

namespace {

std::atomic<bool> counting{false};
std::atomic<uint64_t> allocations{0};
std::atomic<uint64_t> allocated_bytes{0};

} // namespace

bool available() {
  return GEOROUTE_COUNT_ALLOCS != 0;
}

void enable(bool on) {
  counting.store(on, std::memory_order_relaxed);
}

totals read() {
  return {allocations.load(std::memory_order_relaxed),
          allocated_bytes.load(std::memory_order_relaxed)};
}

#if GEOROUTE_COUNT_ALLOCS
// Called from the wrappers below, before anything else: no allocation, no
// static initialisation (the atomics are constant-initialised).
inline void note(size_t size) {
  if (counting.load(std::memory_order_relaxed)) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    allocated_bytes.fetch_add(size, std::memory_order_relaxed);
  }
}
#endif

} // namespace georoute::bench::alloc_count

#if GEOROUTE_COUNT_ALLOCS
// glibc's own allocator under its exported internal names; memory from them
// is freed by the ordinary `free`.
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* p, size_t size);

void* malloc(size_t size) {
  georoute::bench::alloc_count::note(size);
  return __libc_malloc(size);
}

void* calloc(size_t n, size_t size) {
  georoute::bench::alloc_count::note(n * size);
  return __libc_calloc(n, size);
}

void* realloc(void* p, size_t size) {
  georoute::bench::alloc_count::note(size);
  return __libc_realloc(p, size);
}
}
#endif
