#pragma once

// Which writes may be hedged: those whose second copy, sent to another
// region while the first is still out, leaves the document as one copy
// would. An upsert and a replace without a precondition do: both copies
// carry the same body, and a multi-write account keeps one of them (last
// writer wins). A create would answer 409, a remove 404 and a conditional
// write 412 to the echo of its own first copy, an answer that cannot be told
// from the data's: those are never hedged.

#include "georoute/actors/policy/operation.hpp"

namespace georoute {

/// Whether a second copy of the write `op` is safe (`conditional`: it
/// carries if-match or if-none-match). Never for a read or a query: they
/// are not writes.
constexpr bool write_copy_safe(data_op op, bool conditional) {
  return (op == data_op::upsert || op == data_op::replace) && !conditional;
}

/// The same for a write that may carry a tracking id (write retries on,
/// write_tracking.hpp). A tracked create, or a tracked replace without
/// if-none-match, is safe as well: the echo of its own first copy (409,
/// 412) is recognised by the id, so a second copy cannot be mistaken for
/// somebody else's write.
constexpr bool write_copy_safe(data_op op, bool if_match, bool if_none_match,
                               bool tracked) {
  if (tracked &&
      (op == data_op::create || (op == data_op::replace && !if_none_match)))
    return true;
  return write_copy_safe(op, if_match || if_none_match);
}

/// A per-request switch (-1 the engine's setting, 0 off, 1 on) resolved
/// against the engine's setting.
constexpr bool resolve_switch(int requested, bool engine_default) {
  return requested >= 0 ? requested > 0 : engine_default;
}

} // namespace georoute
