#pragma once

// The account, collection, partition-range and query-plan resources as the
// engine sees them: what the wire codecs produce and what the caches hold.
// Plain aggregates with inspect() so they can travel in CAF messages; no CAF
// or JSON types here.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace georoute {

/// One entry of `writableLocations` / `readableLocations`.
struct account_region {
  std::string name;     ///< "West US"
  std::string endpoint; ///< "http://127.0.0.1:4301/"
};

/// `GET /` on the account endpoint.
struct database_account {
  std::string id;
  std::vector<account_region> writable; ///< priority order
  std::vector<account_region> readable; ///< priority order
  bool enable_multiple_write_locations = false;
  std::string default_consistency = "Session";
  /// `enablePerPartitionFailoverBehavior`: the service may move one
  /// partition's write region on its own; nullopt when the account did not
  /// say (the client keeps what it last heard).
  std::optional<bool> per_partition_failover;
};

/// `partitionKey` of a collection.
struct partition_key_definition {
  std::vector<std::string> paths; ///< ["/pk"]
  std::string kind = "Hash";      ///< "Hash" or "MultiHash"
  int version = 2;                ///< 1 or 2
};

/// `GET /dbs/{db}/colls/{coll}`.
struct collection_info {
  std::string id;
  std::string rid;  ///< 8-byte base64 collection rid
  std::string self; ///< "dbs/{dbRid}/colls/{collRid}/"
  std::string etag;
  partition_key_definition partition_key;
};

/// One partition-key range.
struct partition_key_range {
  std::string id;
  std::string min_inclusive; ///< EPK hex, "" for the first range
  std::string max_exclusive; ///< EPK hex, "FF" for the last range
  std::vector<std::string> parents;
  std::string status = "online";
};

/// One page of the pkranges feed. `etag` is the next If-None-Match.
struct pkranges_page {
  std::string rid;
  std::vector<partition_key_range> ranges;
  std::string etag;
};

/// An EPK range of a query plan (`queryRanges[]`).
struct epk_range {
  std::string min;
  std::string max;
  bool min_inclusive = true;
  bool max_inclusive = false;
};

/// `queryInfo` of a query plan (the subset the engine and emulator use).
struct query_info {
  std::string distinct_type = "None"; ///< None | Ordered | Unordered
  int64_t top = -1;                   ///< -1 when absent
  int64_t offset = -1;
  int64_t limit = -1;
  std::vector<std::string> order_by;             ///< Ascending | Descending
  std::vector<std::string> order_by_expressions; ///< ["c.n"]
  std::vector<std::string> aggregates;           ///< Count | Sum | ...
  std::string rewritten_query;
  bool has_select_value = false;
};

/// The gateway's answer to a query-plan request.
struct query_plan {
  int version = 2; ///< partitionedQueryExecutionInfoVersion
  query_info info;
  std::vector<epk_range> query_ranges;
};

/// The error body `{"code":..,"message":..,"additionalErrorInfo":..}`.
struct error_body {
  std::string code;
  std::string message;
  std::string additional_error_info; ///< JSON text, may be empty
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, account_region& x) {
  return f(x.name, x.endpoint);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, database_account& x) {
  return f(x.id, x.writable, x.readable, x.enable_multiple_write_locations,
           x.default_consistency);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f,
                                        partition_key_definition& x) {
  return f(x.paths, x.kind, x.version);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, collection_info& x) {
  return f(x.id, x.rid, x.self, x.etag, x.partition_key);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, partition_key_range& x) {
  return f(x.id, x.min_inclusive, x.max_exclusive, x.parents, x.status);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pkranges_page& x) {
  return f(x.rid, x.ranges, x.etag);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, epk_range& x) {
  return f(x.min, x.max, x.min_inclusive, x.max_inclusive);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_info& x) {
  return f(x.distinct_type, x.top, x.offset, x.limit, x.order_by,
           x.order_by_expressions, x.aggregates, x.rewritten_query,
           x.has_select_value);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, query_plan& x) {
  return f(x.version, x.info, x.query_ranges);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, error_body& x) {
  return f(x.code, x.message, x.additional_error_info);
}

} // namespace georoute
