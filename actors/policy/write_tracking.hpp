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

#include "actors/policy/result.hpp"
#include "actors/policy/write_copy.hpp"

#include <cstdint>
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
write_echo classify_write_echo(write_op op, bool conditional,
                               bool maybe_applied, int status);

/// Whether `op` carries a tracking property when write retries are on.
constexpr bool tracks(write_op op) {
  return op == write_op::create || op == write_op::replace ||
         op == write_op::upsert;
}

} // namespace georoute
