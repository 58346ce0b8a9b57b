#pragma once

// Transactional batch: up to a hundred operations on one logical partition,
// applied by the service all or none. What a batch may hold, its body on
// the wire, and the per-operation results the service answers.
//
// The service answers 200 when every operation was applied, each with its
// own status (201 create, 200 or 201 upsert, 200 read, replace and patch,
// 204 delete); or 207 when one failed: then nothing was applied, the
// failing operation carries its status and every other one 424. A batch is
// not idempotent: sent twice after an applied first copy, its creates
// answer 409, and its upserts, replaces and increments apply again. The
// engine therefore never sends a batch again once a copy of it may have
// been applied (it timed out or lost its connection after it was sent);
// answers that say nothing was applied (429, 403/3, 410, a refused
// connection) are retried like any write's.

#include "georoute/actors/policy/result.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

/// The service's limits of one batch: operations, and bytes of its body.
inline constexpr size_t max_batch_operations = 100;
inline constexpr size_t max_batch_bytes = 2 * 1024 * 1024;

/// A batch operation's kind.
enum class batch_op_kind : uint8_t {
  create = 0,  ///< `body` is the document
  upsert = 1,  ///< `body` is the document
  read = 2,    ///< `id`
  replace = 3, ///< `id` and the document as `body`
  remove = 4,  ///< `id`
  patch = 5,   ///< `id` and the patch as `body` (see patch.hpp)
};

/// "Create", "Upsert", ...: the service's operationType.
const char* wire_name(batch_op_kind k);

/// One operation of a batch.
///
/// (The `{}` initializers keep `{kind, id}` and `{kind, id, body}` free of
/// -Wmissing-field-initializers.)
struct batch_operation {
  batch_op_kind kind = batch_op_kind::create;
  std::string id{};
  std::string body{};
  /// Its partition key as JSON array text; "" (the usual) means the
  /// batch's. Another key than the batch's is refused: a batch is one
  /// logical partition.
  std::string partition_key_json{};
  std::string if_match{};
  std::string if_none_match{};
};

/// The body of a batch of `ops` on the logical partition
/// `partition_key_json` (checked JSON array text), or a problem naming the
/// operation by its index: no operations or more than a hundred; a missing
/// or malformed id; a document that is not a JSON object, has no string id
/// or (replace) another id than the operation's; a patch `parse_patch`
/// refuses; another partition key; text that is not UTF-8; a body over
/// 2 MiB. Documents are checked, not parsed and printed again: each goes
/// on the wire as the caller wrote it.
result<std::string> batch_wire_body(const std::vector<batch_operation>& ops,
                                    std::string_view partition_key_json);

/// One operation's result.
struct batch_op_result {
  int status = 0;
  int substatus = 0;
  std::string etag;
  /// The document (a JSON object) as the service wrote it, when it sent
  /// one; "" otherwise.
  std::string body;
  double request_charge = 0;
  /// A throttled operation's wait, in milliseconds (0: none said).
  int64_t retry_after_ms = 0;
};

/// The service's per-operation results of a batch of `expected`
/// operations; a problem when the body is not an array of that many
/// objects with a numeric statusCode.
result<std::vector<batch_op_result>> parse_batch_results(std::string_view body,
                                                         size_t expected);

} // namespace georoute
