#pragma once

// Keeps the freed nodes of one node-based container (std::map, std::set)
// for its next inserts, so that a container whose entries come and go at
// the rate of requests (the router's live operations, a deadline queue)
// does not call malloc and free for each. At most `max_free` nodes are
// kept: memory stays bounded by the container's recent peak, not by how
// many entries went through it.
//
// Single-threaded, like the actor state it serves. The pool must outlive
// its container; containers built with `pool_allocator` must not be moved
// to another pool's owner (hold the pool by unique_ptr next to them).

#include <cstddef>
#include <new>
#include <vector>

namespace georoute {

class node_pool {
public:
  explicit node_pool(std::size_t max_free = 1024) : max_free_(max_free) {
    free_.reserve(max_free_); // `give` never allocates
  }
  node_pool(const node_pool&) = delete;
  node_pool& operator=(const node_pool&) = delete;
  ~node_pool() {
    for (auto* p : free_)
      ::operator delete(p);
  }

  /// One block of `size` bytes. Blocks of one size only are kept (a
  /// container allocates only its node type one at a time); other sizes go
  /// to the heap.
  void* take(std::size_t size) {
    if (size_ == 0) size_ = size;
    if (size == size_ && !free_.empty()) {
      auto* p = free_.back();
      free_.pop_back();
      return p;
    }
    return ::operator new(size);
  }

  void give(void* p, std::size_t size) {
    if (size == size_ && free_.size() < max_free_) {
      free_.push_back(p);
      return;
    }
    ::operator delete(p);
  }

  /// Blocks kept for reuse now.
  std::size_t kept() const { return free_.size(); }

private:
  std::size_t max_free_;
  std::size_t size_ = 0;
  std::vector<void*> free_;
};

template <class T>
class pool_allocator {
public:
  using value_type = T;

  explicit pool_allocator(node_pool* pool) noexcept : pool_(pool) {}
  template <class U>
  pool_allocator(const pool_allocator<U>& other) noexcept
      : pool_(other.pool()) {}

  T* allocate(std::size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(pool_->take(sizeof(T)));
  }

  void deallocate(T* p, std::size_t n) noexcept {
    if (n != 1) {
      ::operator delete(p);
      return;
    }
    pool_->give(p, sizeof(T));
  }

  node_pool* pool() const noexcept { return pool_; }

  template <class U>
  bool operator==(const pool_allocator<U>& other) const noexcept {
    return pool_ == other.pool();
  }
  template <class U>
  bool operator!=(const pool_allocator<U>& other) const noexcept {
    return pool_ != other.pool();
  }

private:
  node_pool* pool_;
};

} // namespace georoute
