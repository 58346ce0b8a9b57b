#pragma once

// Patch (a partial document update): what a patch body may say, which
// patches can be sent twice, and how a patch is made recognisable when it
// may have been applied.
//
// A patch body is the service's: `{"operations": [...], "condition": "FROM
// c WHERE ..."}` or a bare array of operations. Each operation is `add`,
// `set`, `replace`, `remove`, `incr` or `move` on a JSON Pointer path; the
// service applies them in order, all or none, at most ten per request.
//
// Sending a patch twice is harmless only when the second copy leaves the
// document and the answer as one copy would: `set`, `replace`, and `add` of
// an object member. Everything else (`incr`, `remove`, `move`, `add` into
// an array) changes the document again or fails the second time. With
// write retries on, a patch of at most nine operations is tracked instead:
// the engine appends `set /_trackingId` and makes the patch conditional on
// the stored document not carrying that id yet. A copy that comes after an
// applied one then fails with 412 and changes nothing, and reading the
// document back tells that the patch was applied.

#include "georoute/actors/policy/result.hpp"
#include "georoute/actors/policy/write_tracking.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

/// The service's limit of operations in one patch.
inline constexpr size_t max_patch_operations = 10;

/// A patch operation's kind.
enum class patch_kind : uint8_t { add, set, replace, remove, incr, move };

/// "add", "set", ...
const char* to_string(patch_kind k);

/// One operation, as far as the engine's decisions go (the value stays in
/// the body the caller wrote).
struct patch_operation {
  patch_kind kind = patch_kind::set;
  std::string path;
  std::string from; ///< `move` only
};

/// A checked patch body.
struct patch_spec {
  std::vector<patch_operation> operations;
  /// The filter predicate, "FROM c WHERE ...", or "" for none.
  std::string condition;
};

/// Checks a patch body the way the service would and says what is wrong,
/// naming the operation by its index: not JSON; no operations or more than
/// ten; an unknown op; a path that is not a JSON Pointer or targets `/id` or
/// a system property (`_rid`, `_self`, `_etag`, `_ts`, `_attachments`); a
/// missing `value`; an `incr` by
/// anything but a number; a `move` without `from` or into its own subtree;
/// a condition that is not `FROM <alias> WHERE <predicate>`.
result<patch_spec> parse_patch(std::string_view body);

/// Whether a JSON Pointer (RFC 6901) is well formed and names a member: it
/// starts with '/' and every '~' is followed by '0' or '1'.
bool is_json_pointer(std::string_view path);

/// Whether sending `spec` a second time after an applied first copy leaves
/// the document and the answer unchanged (`set`, `replace`, and `add` of
/// an object member; a path ending in an array index or "-" may be an
/// array insertion and counts as unsafe).
bool patch_resend_safe(const patch_spec& spec);

/// Whether there is room for the tracking operation.
inline bool patch_trackable(const patch_spec& spec) {
  return spec.operations.size() < max_patch_operations;
}

/// A patch's plan when write retries are `on`: tracked when there is room
/// for the tracking operation and the caller leaves `/_trackingId` alone;
/// otherwise retried only when `patch_resend_safe`.
write_tracking_plan plan_patch_tracking(const patch_spec& spec, bool on);

/// The body of `spec` tracked by `id`: the caller's operations followed by
/// `set /_trackingId`, under the caller's condition (if any) joined with
/// "the document does not carry `id` yet". `body` is the caller's body,
/// checked by `parse_patch`; the result is always the object form. A
/// problem when there is no room (ten operations) or the caller's patch
/// touches `/_trackingId` itself.
result<std::string> with_patch_tracking(std::string_view body,
                                        const patch_spec& spec,
                                        std::string_view id);

} // namespace georoute
