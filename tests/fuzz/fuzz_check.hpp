#pragma once

// What every harness shares: FUZZ_CHECK, an invariant that aborts (so that
// libFuzzer records the input as a crash) in every build type, NDEBUG or not,
// and field-by-field equality of the model types (model.hpp defines none),
// used by the decode -> encode -> decode round trips.

#include "georoute/actors/policy/model.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#define FUZZ_CHECK(cond, what)                                                 \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: invariant failed: %s (%s)\n", __FILE__,     \
                   __LINE__, #cond, std::string(what).c_str());                \
      std::abort();                                                            \
    }                                                                          \
  } while (false)

namespace georoute::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

inline bool same(const account_region& a, const account_region& b) {
  return a.name == b.name && a.endpoint == b.endpoint;
}

inline bool same(const partition_key_range& a, const partition_key_range& b);
inline bool same(const epk_range& a, const epk_range& b);

template <class T>
bool same_list(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

inline bool same(const database_account& a, const database_account& b) {
  return a.id == b.id && same_list(a.writable, b.writable) &&
         same_list(a.readable, b.readable) &&
         a.enable_multiple_write_locations ==
             b.enable_multiple_write_locations &&
         a.default_consistency == b.default_consistency;
}

inline bool same(const collection_info& a, const collection_info& b) {
  return a.id == b.id && a.rid == b.rid && a.self == b.self &&
         a.etag == b.etag && a.partition_key.paths == b.partition_key.paths &&
         a.partition_key.kind == b.partition_key.kind &&
         a.partition_key.version == b.partition_key.version;
}

inline bool same(const partition_key_range& a, const partition_key_range& b) {
  return a.id == b.id && a.min_inclusive == b.min_inclusive &&
         a.max_exclusive == b.max_exclusive && a.parents == b.parents &&
         a.status == b.status;
}

inline bool same(const pkranges_page& a, const pkranges_page& b) {
  return a.rid == b.rid && a.etag == b.etag && same_list(a.ranges, b.ranges);
}

inline bool same(const epk_range& a, const epk_range& b) {
  return a.min == b.min && a.max == b.max &&
         a.min_inclusive == b.min_inclusive &&
         a.max_inclusive == b.max_inclusive;
}

inline bool same(const query_plan& a, const query_plan& b) {
  const auto& x = a.info;
  const auto& y = b.info;
  return a.version == b.version && x.distinct_type == y.distinct_type &&
         x.top == y.top && x.offset == y.offset && x.limit == y.limit &&
         x.order_by == y.order_by &&
         x.order_by_expressions == y.order_by_expressions &&
         x.aggregates == y.aggregates &&
         x.rewritten_query == y.rewritten_query &&
         x.has_select_value == y.has_select_value &&
         same_list(a.query_ranges, b.query_ranges);
}

inline bool same(const error_body& a, const error_body& b) {
  return a.code == b.code && a.message == b.message &&
         a.additional_error_info == b.additional_error_info;
}

} // namespace georoute::fuzz
