#pragma once

// Writes that survive a hang: the tracking property that makes a second
// copy of a write recognisable, and what an answer to a second copy means.
//
// A create, replace or upsert whose attempt may have been applied (it timed
// out, or lost its connection after it was sent) can be sent again only if
// its first copy can be told from somebody else's write. The engine adds a
// `_trackingId` property, new for each operation, to the document; it stays
// in the stored document. When the copy that went again answers 409 (a
// create) or 412 (a replace with if-match), the engine reads the document:
// if it carries the operation's own tracking id, the first copy was applied
// and the write succeeded (201 or 200 with the stored document). A remove
// needs no property: its second copy's 404 after a first copy that may have
// been applied means "deleted, possibly by this operation", and is reported
// so. An upsert's second copy simply succeeds.

#include "georoute/actors/policy/result.hpp"
#include "georoute/actors/policy/timeout_ladder.hpp"
#include "georoute/actors/policy/write_copy.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace georoute {

/// The property's name in the document.
inline constexpr std::string_view tracking_property = "_trackingId";

/// A tracking id from 128 random bits: 32 lower-case hex digits.
std::string make_tracking_id(uint64_t hi, uint64_t lo);

/// `body` (a JSON object) with `_trackingId` set to `id` (replacing one the
/// caller set). A problem naming what is wrong when `body` is not a JSON
/// object.
result<std::string> with_tracking_id(std::string_view body,
                                     std::string_view id);

/// Whether a stored document (`body`, a JSON object) carries `id` as its
/// `_trackingId`. False for anything else, malformed bodies included.
bool carries_tracking_id(std::string_view body, std::string_view id);

/// What the final answer to a write means when an earlier copy of it may
/// have been applied.
enum class write_echo : uint8_t {
  none,                  ///< the answer is what it says
  check_tracking,        ///< read the document: its tracking id decides
  deleted_maybe_by_self, ///< a remove's 404: gone, possibly by this remove
};

/// `conditional`: the write carried if-match. `maybe_applied`: an earlier
/// copy of this operation may have been applied.
write_echo classify_write_echo(data_op op, bool conditional, bool maybe_applied,
                               int status);

/// Whether `op` carries a tracking property when write retries are on.
constexpr bool tracks(data_op op) {
  return op == data_op::create || op == data_op::replace ||
         op == data_op::upsert;
}

/// Whether a write is retried where it may have been applied, and whether
/// it carries a tracking id for that.
struct write_tracking_plan {
  bool retries = false;
  bool tracked = false;
};

/// `op`: the operation (a read or a query is never retried this way).
/// `requested`: the request's own switch (-1 the engine's, 0 off, 1 on);
/// `engine_default`: `georoute.write-retries`.
constexpr write_tracking_plan plan_write_tracking(data_op op, int requested,
                                                  bool engine_default) {
  write_tracking_plan p;
  // A batch or a bulk request is never sent again once it may have been
  // applied (batch.hpp, bulk.hpp); a patch's plan depends on its operations
  // (plan_patch_tracking).
  p.retries = is_write(op) && op != data_op::batch && op != data_op::bulk &&
              resolve_switch(requested, engine_default);
  p.tracked = p.retries && tracks(op);
  return p;
}

/// What the read-back of a possible echo says about the write.
struct read_back_verdict {
  /// Its first copy was applied: the write succeeded with `status`.
  bool applied = false;
  int status = 0;
  /// Why the echo stands, when it does (for the error's text).
  std::string why;
};

/// `read_ok`: the read-back succeeded (`read_status` otherwise);
/// `carries_id`: the stored document carries this write's tracking id.
read_back_verdict judge_read_back(data_op op, bool read_ok, bool carries_id,
                                  int read_status);

/// How long the read-back of a possible echo may take: as long as the first
/// attempt of any read of the operation's document (the read ladder's first
/// step).
std::chrono::milliseconds read_back_timeout(const timeout_ladders& ladders);

} // namespace georoute
