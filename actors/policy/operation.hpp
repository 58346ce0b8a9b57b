#pragma once

// The operations georoute carries out, as every layer names them.
//
// A document operation is a `data_op`. The rules see every request,
// documents and metadata alike, along two axes: whether it reads or writes
// (`op_kind`: routing, the breaker, per-partition failover) and which
// timeout ladder it climbs (`request_kind`). For a document both follow from
// its `data_op` (`access_of`, `kind_of`); a metadata request has no
// `data_op` and states both itself. `loop_policy` names the retry policy a
// request's attempt loop consults.

#include <cstdint>
#include <string_view>

namespace georoute {

/// Whether `id` can name a document: 1 to 1023 characters, none of '/',
/// '\\', '?' and '#' (ids travel in the path).
constexpr bool is_document_id(std::string_view id) {
  if (id.empty() || id.size() > 1023) return false;
  for (char c : id)
    if (c == '/' || c == '\\' || c == '?' || c == '#') return false;
  return true;
}

/// A data-plane operation. The values travel in `data_request`.
enum class data_op : uint8_t {
  create = 0,  ///< POST .../docs
  upsert = 1,  ///< POST .../docs with x-ms-documentdb-is-upsert
  read = 2,    ///< GET .../docs/{id}
  replace = 3, ///< PUT .../docs/{id}
  remove = 4,  ///< DELETE .../docs/{id}
  query = 5,   ///< POST .../docs with a query (one logical partition)
  /// GET .../docs with `A-IM: Incremental Feed`: one page of the change feed
  /// of one partition-key range (or an EPK part of it) or one logical
  /// partition. A read. Callers read a whole feed with
  /// `change_feed_request`; the router sends these for it.
  change_feed = 6,
  /// PATCH .../docs/{id}: a partial update (`body` is the patch, see
  /// patch.hpp). A write.
  patch = 7,
  /// POST .../docs with `x-ms-cosmos-is-batch-request`: a transactional
  /// batch on one logical partition (`body` is its JSON array, see
  /// batch.hpp). A write, answered 200 or 207. Callers send a
  /// `batch_request`; the router sends this for it.
  batch = 8,
  /// POST .../docs with `x-ms-cosmos-is-batch-request` and
  /// `x-ms-cosmos-batch-atomic: False`: a bulk request, independent
  /// operations of one partition-key range (`range_id`; `body` their JSON
  /// array, see bulk.hpp). A write, answered 200 or 207 with each
  /// operation's status. Callers open a bulk session (`bulk_open`); its
  /// executor sends these.
  bulk = 9,
};

/// Whether a request reads or writes.
enum class op_kind : uint8_t { read = 0, write = 1 };

/// What a request is, as far as the choice of timeout ladder goes.
enum class request_kind {
  account_read,  ///< GET / on a global or regional endpoint
  query_plan,    ///< the gateway query-plan POST
  pkranges_read, ///< the pkranges feed
  metadata_read, ///< collection, database and other metadata reads
  document_read, ///< point reads, queries, feeds of documents
  write,         ///< every write, data or metadata
  probe,         ///< health probes
};

/// Which retry policy decides after the ladder. The values travel in
/// `metadata_request`.
enum class loop_policy : uint8_t {
  /// The client retry policy (.NET ClientRetryPolicy): failover, session,
  /// 503, throttling.
  client = 0,
  /// The client retry policy wrapped by the clearing-session-container
  /// decorator: the same decisions; when it gives up on a name-based
  /// 404/1002, the session tokens of the request's collection are cleared.
  clearing_session = 1,
  /// The partition-range metadata policy: region hops on
  /// 503/500/410.1022/403.1008, no marking, then throttling.
  partition_range = 2,
};

/// Whether a document operation writes.
constexpr bool is_write(data_op op) {
  switch (op) {
  case data_op::create:
  case data_op::upsert:
  case data_op::replace:
  case data_op::remove:
  case data_op::patch:
  case data_op::batch:
  case data_op::bulk:
    return true;
  case data_op::read:
  case data_op::query:
  case data_op::change_feed:
    return false;
  }
  return true;
}

/// A document operation's access mode.
constexpr op_kind access_of(data_op op) {
  return is_write(op) ? op_kind::write : op_kind::read;
}

/// A document operation's ladder.
constexpr request_kind kind_of(data_op op) {
  return is_write(op) ? request_kind::write : request_kind::document_read;
}

} // namespace georoute
