#pragma once

// Shared fixture of the retry-policy tests: request facts for reads,
// single- and multi-master writes, and a three-region location table.

#include "georoute/actors/policy/client_retry_policy.hpp"
#include "georoute/actors/policy/location_table.hpp"

#include <chrono>
#include <string>

namespace georoute::retry_fixture {

inline const std::string global_ep = "http://127.0.0.1:4300/";
inline const std::string east = "http://127.0.0.1:4301/";
inline const std::string west = "http://127.0.0.1:4302/";
inline const std::string north = "http://127.0.0.1:4303/";
inline const policy_time t0 = policy_time{} + std::chrono::hours{1};

inline request_facts read_facts(std::size_t preferred = 3) {
  request_facts f;
  f.is_read = true;
  f.multi_write_usable = false;
  f.write_region_count = 3;
  f.preferred_location_count = preferred;
  f.applicable_endpoint_count = 3;
  f.endpoint = east;
  return f;
}

inline request_facts single_write_facts() {
  auto f = read_facts();
  f.is_read = false;
  return f;
}

inline request_facts multi_write_facts() {
  auto f = single_write_facts();
  f.multi_write_usable = true;
  return f;
}

inline request_facts multi_read_facts() {
  auto f = read_facts();
  f.multi_write_usable = true;
  return f;
}

inline request_facts multi_metadata_write_facts() {
  auto f = multi_write_facts();
  f.is_document = false;
  return f;
}

template <class F>
inline request_facts with(request_facts f, F change) {
  change(f);
  return f;
}

inline request_facts no_discovery(request_facts f) {
  f.endpoint_discovery = false;
  return f;
}

inline location_table table(bool multi) {
  location_table_options o;
  o.default_endpoint = global_ep;
  o.preferred_regions = {"East US", "West US", "North Europe"};
  o.use_multiple_write_locations = multi;
  database_account a;
  a.enable_multiple_write_locations = multi;
  a.writable = {{"East US", east}, {"West US", west}, {"North Europe", north}};
  a.readable = a.writable;
  return location_table(o).with_account(a, t0);
}

} // namespace georoute::retry_fixture
