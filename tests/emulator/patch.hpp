#pragma once

// Partial document update (PATCH): the operations of a patch request, their
// checks and their application to a document. Plain C++ and nlohmann/json,
// no engine state: a point PATCH and the Patch operations of batch and bulk
// requests all go through these two functions. The `condition` of a patch is
// a SQL filter; the engine evaluates it (engine_patch.cpp).
//
// Operations, in order, all or nothing:
//   add     object member: create or overwrite; array index: insert (index
//           = length or "-": append); index > length: error
//   set     like add, but an existing array index is overwritten
//   replace the target must exist
//   remove  the target must exist; array elements shift left
//   incr    adds a number; a missing member is created with it; a
//           non-number target or value: error
//   move    `from` must exist; its value goes to `path` (created or
//           overwritten); `path` may not lie under `from`
// Paths are JSON Pointers (`~1` is '/', `~0` is '~'); the parent of a path
// must exist (nothing is created recursively).

#include "georoute/actors/policy/result.hpp"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace georoute::emulator::detail {

/// At most this many operations per patch.
constexpr size_t max_patch_operations = 10;

/// A checked patch request.
struct patch_spec {
  std::optional<std::string> condition; ///< "FROM c WHERE ..."
  nlohmann::json operations;            ///< the array, each operation checked
};

/// Reads a patch body: `{"condition"?: "...", "operations": [...]}` or a bare
/// array of operations. Every operation is checked before any is applied: a
/// known `op`, a JSON-Pointer `path` (and `from` for move), a `value` where
/// one is needed (a number for incr), 1 to 10 operations, no system
/// property (_rid, _ts, _etag, _self, _attachments), and none of
/// `protected_paths` (the id and the partition-key paths), their parents or
/// children. The problem is the 400's message.
result<patch_spec> parse_patch(const nlohmann::json& body,
                               const std::vector<std::string>& protected_paths);

/// Applies checked operations to `doc` and returns the result; `doc` is a
/// copy, so a failure changes nothing. The problem is the 400's message
/// (a missing target or parent, an index out of range, incr on a
/// non-number).
result<nlohmann::json> apply_patch(nlohmann::json doc,
                                   const nlohmann::json& operations);

/// The segments of a JSON Pointer ("/a/b~1c" -> a, b/c); a problem for a
/// pointer that does not start with '/' or has a bad '~' escape.
result<std::vector<std::string>> parse_pointer(const std::string& pointer);

} // namespace georoute::emulator::detail
