#pragma once

// A bounded least-recently-used map (the query-plan cache). Pure, header
// only; not thread-safe (one actor owns it).

#include <cstddef>
#include <list>
#include <unordered_map>
#include <utility>

namespace georoute {

template <class Key, class Value>
class lru_cache {
public:
  /// `capacity` of 0 is treated as 1.
  explicit lru_cache(size_t capacity)
      : capacity_(capacity == 0 ? 1 : capacity) {}

  /// The value for `key`, marked most recently used; nullptr when absent.
  const Value* get(const Key& key) {
    auto i = index_.find(key);
    if (i == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, i->second);
    return &i->second->second;
  }

  /// Inserts or replaces; evicts the least recently used entry when full.
  /// Returns true if an entry was evicted.
  bool put(const Key& key, Value value) {
    auto i = index_.find(key);
    if (i != index_.end()) {
      i->second->second = std::move(value);
      order_.splice(order_.begin(), order_, i->second);
      return false;
    }
    order_.emplace_front(key, std::move(value));
    index_.emplace(key, order_.begin());
    if (order_.size() <= capacity_) return false;
    index_.erase(order_.back().first);
    order_.pop_back();
    return true;
  }

  bool erase(const Key& key) {
    auto i = index_.find(key);
    if (i == index_.end()) return false;
    order_.erase(i->second);
    index_.erase(i);
    return true;
  }

  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }

private:
  size_t capacity_;
  std::list<std::pair<Key, Value>> order_;
  std::unordered_map<Key, typename std::list<std::pair<Key, Value>>::iterator>
      index_;
};

} // namespace georoute
