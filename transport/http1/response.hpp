#pragma once

// A response as it comes off the wire: where its header fields live while
// it is parsed, and its mapping to the normalized outcome.

#include "georoute/transport/http1/errors.hpp"
#include "georoute/transport/outcome.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace georoute::transport::http1 {

/// Where a response's header fields live: a block the connection keeps,
/// handed out front to back and taken back whole once the response has
/// been mapped (Beast otherwise allocates every field on the heap). A
/// header larger than the block spills into heap blocks, freed the same way.
class header_arena {
public:
  void* allocate(size_t n, size_t align) {
    size_t at = (used_ + align - 1) & ~(align - 1);
    if (at + n <= sizeof block_) {
      used_ = at + n;
      return block_ + at;
    }
    // operator new[] aligns for any fundamental type, which is all Beast's
    // field elements need.
    spill_.push_back(std::make_unique<char[]>(n));
    return spill_.back().get();
  }
  /// Only when nothing allocated here is in use any more.
  void reset() {
    used_ = 0;
    spill_.clear();
  }

private:
  alignas(std::max_align_t) char block_[4096];
  size_t used_ = 0;
  std::vector<std::unique_ptr<char[]>> spill_;
};

template <class T>
struct arena_allocator {
  using value_type = T;
  header_arena* arena;
  explicit arena_allocator(header_arena* a) noexcept : arena(a) {}
  template <class U>
  arena_allocator(const arena_allocator<U>& o) noexcept : arena(o.arena) {}
  T* allocate(size_t n) {
    return static_cast<T*>(arena->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T*, size_t) noexcept {} // taken back by reset()
  template <class U>
  bool operator==(const arena_allocator<U>& o) const noexcept {
    return arena == o.arena;
  }
  template <class U>
  bool operator!=(const arena_allocator<U>& o) const noexcept {
    return arena != o.arena;
  }
};

using response_parser =
    http::response_parser<http::string_body, arena_allocator<char>>;
using response_message = response_parser::value_type;

/// Maps the wire to the normalized outcome, exactly once per response.
outcome to_outcome(response_message& res);

/// An outcome that failed with `kind`, saying why in `detail`.
outcome failed(failure kind, std::string detail);

} // namespace georoute::transport::http1
