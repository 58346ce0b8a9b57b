#pragma once

// Shared fixture of the location-table tests: an account with three write
// regions (East US, West US, North Europe) and four read regions (plus
// Southeast Asia), endpoints on 127.0.0.1:4301-4304, the global endpoint on
// :4300, preferences [East US, West US, North Europe] (LocationCacheTests'
// fixture with real region names).

#include "georoute/actors/policy/location_table.hpp"

#include <chrono>
#include <string>
#include <vector>

namespace georoute::location_fixture {

using namespace std::chrono_literals;
using strings = std::vector<std::string>;

inline const std::string global_ep = "http://127.0.0.1:4300/";
inline const std::string east = "http://127.0.0.1:4301/";  // East US
inline const std::string west = "http://127.0.0.1:4302/";  // West US
inline const std::string north = "http://127.0.0.1:4303/"; // North Europe
inline const std::string asia = "http://127.0.0.1:4304/";  // Southeast Asia

inline const policy_time t0 = policy_time{} + 1h;
inline const std::chrono::milliseconds expiry = 300s;

inline const strings preferred3 = {"East US", "West US", "North Europe"};

/// Writes: East, West, North. Reads: East, West, North, Asia.
inline database_account fixture_account(bool multi_write) {
  database_account a;
  a.id = "contoso";
  a.enable_multiple_write_locations = multi_write;
  a.writable = {{"East US", east}, {"West US", west}, {"North Europe", north}};
  a.readable = {{"East US", east},
                {"West US", west},
                {"North Europe", north},
                {"Southeast Asia", asia}};
  return a;
}

inline location_table_options options(bool multi_write, bool discovery,
                                      strings preferred,
                                      std::string default_ep = global_ep) {
  location_table_options o;
  o.default_endpoint = std::move(default_ep);
  o.preferred_regions = std::move(preferred);
  o.endpoint_discovery = discovery;
  o.use_multiple_write_locations = multi_write;
  o.unavailable_expiry = expiry;
  return o;
}

/// The fixture: client and account agree on `multi_write`.
inline location_table fixture(bool multi_write = false, bool discovery = true,
                              strings preferred = preferred3) {
  return location_table(options(multi_write, discovery, std::move(preferred)))
      .with_account(fixture_account(multi_write), t0);
}

inline resolve_input req(op_kind op, uint32_t index = 0,
                         bool use_preferred = true, strings excluded = {},
                         bool is_document = true) {
  resolve_input in;
  in.op = op;
  in.location_index = index;
  in.use_preferred = use_preferred;
  in.excluded_regions = std::move(excluded);
  in.is_document = is_document;
  return in;
}

inline std::string resolve_ep(const location_table& t, const resolve_input& in,
                              policy_time now = t0) {
  return t.resolve(in, now).endpoint;
}

inline strings rotate(const strings& xs, std::size_t k) {
  strings out(xs.begin() + static_cast<std::ptrdiff_t>(k), xs.end());
  out.insert(out.end(), xs.begin(),
             xs.begin() + static_cast<std::ptrdiff_t>(k));
  return out;
}

} // namespace georoute::location_fixture
