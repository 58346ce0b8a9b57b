#pragma once

// Payloads of the messages between georoute's actors. Each has inspect() so
// it can cross CAF's network layer; the snapshots (immutable tables shared by
// pointer) are the exception and stay process-local by design.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actors/policy/model.hpp"
#include "actors/policy/timeout_ladder.hpp"
#include "transport/outcome.hpp"

namespace georoute {

class location_table; // actors/policy/location_table.hpp
class routing_map;    // actors/policy/routing_map.hpp

/// Whether an operation reads or writes; decides read vs write endpoints.
enum class operation_type : uint8_t { read = 0, write = 1 };

/// A request to the location cache: which endpoint serves this operation.
struct resolve_request {
  operation_type op = operation_type::read;
  /// Whether the resource is a document (multi-write routing applies).
  bool is_document = true;
  /// false routes to the account's write regions (branch A of §1.5).
  bool use_preferred = true;
  /// The retry's location index (§1.5: eps[index % size]).
  uint32_t location_index = 0;
  /// Per-request exclusions, matched case-insensitively.
  std::vector<std::string> excluded_regions;
};

/// The answer to a resolve request.
struct resolved_endpoint {
  std::string endpoint; ///< "http://127.0.0.1:4301/"
  std::string region;   ///< "East US"; empty if unknown
};

/// Marks an endpoint unavailable for reads, writes or both.
struct region_mark {
  std::string endpoint;
  bool read = false;
  bool write = false;
};

/// An immutable location snapshot, pushed to subscribers on every change.
struct location_snapshot {
  std::shared_ptr<const location_table> table;
  uint64_t version = 0;
};

/// An immutable routing map of one collection.
struct routing_snapshot {
  std::shared_ptr<const routing_map> map;
  std::string collection_rid;
};

/// A metadata request executed by the retry actor (loop mode): the actor
/// resolves the endpoint, signs, sends, and consults the retry policy on every
/// failure.
struct metadata_request {
  std::string method = "GET";
  std::string path; ///< "/dbs/d/colls/c"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  request_kind kind = request_kind::metadata_read;
  operation_type op = operation_type::read;
  /// Name-based collection path whose session tokens are cleared when the
  /// policy gives up on a 404/1002 (§5.4); empty when not applicable.
  std::string collection_name;
};

/// A document-level request for the request router.
struct document_request {
  std::string method = "GET";
  std::string path; ///< "/dbs/d/colls/c/docs/x"
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  request_kind kind = request_kind::document_read;
  operation_type op = operation_type::read;
  std::string partition_key_json; ///< "[\"p0\"]"; empty for cross-partition
  std::vector<std::string> excluded_regions;
};

/// A query plan request.
struct query_plan_request {
  std::string collection_link; ///< "dbs/d/colls/c"
  std::string collection_rid;
  std::string query;
  std::string parameters_json; ///< "[]" or the parameters array
  std::string partition_key_json;
};

/// Counters of the retry actor.
struct retry_stats {
  uint64_t operations = 0;
  uint64_t attempts = 0;
  uint64_t retries = 0;
  uint64_t deadline_trips = 0;
  uint64_t live = 0; ///< detached operations still running
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, resolve_request& x) {
  return f(x.op, x.is_document, x.use_preferred, x.location_index,
           x.excluded_regions);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, resolved_endpoint& x) {
  return f(x.endpoint, x.region);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, region_mark& x) {
  return f(x.endpoint, x.read, x.write);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metadata_request& x) {
  return f(x.method, x.path, x.headers, x.body, x.kind, x.op,
           x.collection_name);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, document_request& x) {
  return f(x.method, x.path, x.headers, x.body, x.kind, x.op,
           x.partition_key_json, x.excluded_regions);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_plan_request& x) {
  return f(x.collection_link, x.collection_rid, x.query, x.parameters_json,
           x.partition_key_json);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, retry_stats& x) {
  return f(x.operations, x.attempts, x.retries, x.deadline_trips, x.live);
}

} // namespace georoute
