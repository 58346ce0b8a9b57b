#pragma once

// Which writes may be hedged: those whose second copy, sent to another
// region while the first is still out, leaves the document as one copy
// would. An upsert and a replace without a precondition do: both copies
// carry the same body, and a multi-write account keeps one of them (last
// writer wins). A create would answer 409, a remove 404 and a conditional
// write 412 to the echo of its own first copy, an answer that cannot be told
// from the data's: those are never hedged.

namespace georoute {

/// The write operations, as the hedging rule sees them.
enum class write_op { create, upsert, replace, remove };

/// Whether a second copy of the write is safe (`conditional`: it carries
/// if-match or if-none-match).
constexpr bool write_copy_safe(write_op op, bool conditional) {
  return (op == write_op::upsert || op == write_op::replace) && !conditional;
}

} // namespace georoute
