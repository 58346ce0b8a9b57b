#pragma once

// One attempt as the engine means it, before any protocol shapes it: what
// to do (the kind), to what (the resource, the document id, the partition
// key or range), with which options (session token, consistency,
// continuation, page size, conditions), where (the endpoint and the
// protocol it speaks), for how long, and whether the transport may send it
// a second time after its connection dropped with nothing back.
//
// The actors fill this in and hand it to a port (port.hpp); the port's
// encoder turns it into what its protocol sends. Nothing above transport/
// writes a method, a header or a signature. Plain data: no Beast, no CAF.

#include "georoute/transport/outcome.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace georoute::transport {

/// How an endpoint is spoken to.
enum class protocol : uint8_t {
  /// The classic gateway: REST over HTTP/1.1 (http or https), signed with
  /// the account's master key.
  gateway = 0,
};

/// Stable lower-case name, e.g. "gateway".
const char* to_string(protocol p);

/// What an attempt does.
enum class attempt_kind : uint8_t {
  account_read,  ///< the database account (regions, write regions)
  resource_read, ///< a database or collection by its path
  pkranges_read, ///< one page of a collection's partition-key ranges feed
  query_plan,    ///< the plan of a query (a cross-partition query's shape)
  create,        ///< a document
  upsert,        ///< a document
  read,          ///< a document by id
  replace,       ///< a document by id
  remove,        ///< a document by id
  query,         ///< one page of a query (a partition key or one range)
  change_feed,   ///< one page of a range's (or a key's) change feed
  patch,         ///< a document by id, with a JSON patch
  batch,         ///< a transactional batch of one partition key
  bulk,          ///< a non-atomic batch of one range (continue on error)
  raw,           ///< a caller's own request, sent as it is (`raw` below)
};

/// Stable lower-case name, e.g. "pkranges_read".
const char* to_string(attempt_kind k);

/// Whether `k` only reads: sending it twice changes nothing stored.
bool reads_only(attempt_kind k);

/// A caller's request sent as it is (`attempt_kind::raw`, the raw document
/// path): only the classic gateway can carry it.
struct raw_request {
  std::string method = "GET";
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Whether sending `r` twice is harmless by its method (`repeat_safe` of
/// outcome.hpp: GET, HEAD, a query POST).
bool repeat_safe(const raw_request& r);

/// See the file comment. Every option is empty (or -1) when not sent.
struct attempt {
  attempt_kind kind = attempt_kind::read;
  /// Where it goes: the region's base URL ("http://127.0.0.1:4301/") and
  /// the protocol that endpoint speaks.
  std::string endpoint;
  protocol proto = protocol::gateway;
  /// What it addresses: "dbs/d/colls/c" for the document kinds, a query
  /// plan and a pkranges page (of that collection); the resource's own path
  /// for `resource_read` and `raw` ("dbs/d/colls/c", may carry a query
  /// string); unused for `account_read`. No leading slash needed.
  std::string resource;
  /// `resource` addresses by rid instead of by name.
  bool rid_based = false;
  /// The document id (read, replace, remove, patch).
  std::string id;
  /// The partition key as JSON array text, `["p0"]`.
  std::string partition_key_json;
  /// One physical range (query, change feed, bulk), and for a change feed
  /// an EPK part of it: [start_epk, end_epk) when `end_epk` is set.
  std::string range_id;
  std::string start_epk;
  std::string end_epk;
  std::string session_token;
  std::string consistency_level;
  std::string continuation;
  int32_t max_item_count = -1;
  std::string if_match;
  std::string if_none_match;
  std::string if_modified_since;
  /// Only the hub region may serve it (a read's last session retry).
  bool hub_region_only = false;
  /// The document, the query spec, the patch, the batch's operations.
  std::string body;
  /// The whole attempt: the wait for a connection, connect, send, answer.
  std::chrono::milliseconds timeout{65000};
  /// May the transport send it again, on a fresh connection, when the one
  /// it went out on dropped with nothing back (so the server may have
  /// applied it)? Decided by whoever plans the attempt from the operation
  /// and its write-retry rules, never from how a protocol spells it. An
  /// attempt that provably never left is always sent again.
  bool resend_after_drop = false;
  /// `attempt_kind::raw` only.
  raw_request raw;
};

/// What `a` does, for error texts and logs: "read of /dbs/d/colls/c",
/// "query plan of dbs/d/colls/c", a raw request's "POST /dbs/d/...".
std::string describe(const attempt& a);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, raw_request& x) {
  return f(x.method, x.headers);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, attempt& x) {
  return f(x.kind, x.endpoint, x.proto, x.resource, x.rid_based, x.id,
           x.partition_key_json, x.range_id, x.start_epk, x.end_epk,
           x.session_token, x.consistency_level, x.continuation,
           x.max_item_count, x.if_match, x.if_none_match, x.if_modified_since,
           x.hub_region_only, x.body, x.timeout, x.resend_after_drop, x.raw);
}

} // namespace georoute::transport
