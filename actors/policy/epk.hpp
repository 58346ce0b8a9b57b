#pragma once

// Effective partition keys (EPK), hash version 2, as the service computes
// them (the SDKs' effective-partition-key hashing, V2; Java
// PartitionKeyInternalHelper):
//
//   1. each component is encoded for hashing: string 0x08 + UTF-8 + 0xFF
//      (no truncation), number 0x05 + IEEE-754 double little-endian, true
//      0x03, false 0x02, null 0x01, undefined 0x00;
//   2. MurmurHash3 x64 128 (seed 0) over the bytes gives (h1, h2);
//   3. h1 little-endian then h2 little-endian, all 16 bytes reversed;
//   4. byte[0] &= 0x3F; uppercase hex, 32 characters.
//
// Hash (single path) hashes the concatenated encoding of all components once;
// MultiHash hashes each component on its own and concatenates the results
// (32 hex characters per level). The empty key maps to `epk_min`.
//
// Also here: the EPK order (`epk_compare`, length-aware) and a parser for the
// `x-ms-documentdb-partitionkey` header text. Pure standard C++17.

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/result.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace georoute {

/// The JSON `null` partition-key component.
struct pk_null {};

/// The "undefined" partition-key component, written `{}` in the header
/// (a document that lacks the partition-key path).
struct pk_undefined {};

inline bool operator==(pk_null, pk_null) {
  return true;
}
inline bool operator!=(pk_null, pk_null) {
  return false;
}
inline bool operator==(pk_undefined, pk_undefined) {
  return true;
}
inline bool operator!=(pk_undefined, pk_undefined) {
  return false;
}

/// One partition-key component: a string (UTF-8), a number (integers are
/// doubles too, as on the service), a boolean, null or undefined.
/// Construct numbers from a double (`pk_component{5.0}`), strings from a
/// `std::string`.
using pk_component =
    std::variant<std::string, double, bool, pk_null, pk_undefined>;

/// The lowest EPK (MinInclusive of the first range).
inline constexpr std::string_view epk_min = "";

/// The EPK just past the highest (MaxExclusive of the last range).
inline constexpr std::string_view epk_max = "FF";

/// The most components a partition key may have (MultiHash allows 3 paths;
/// the header format itself is bounded here to keep input small).
inline constexpr std::size_t max_pk_components = 8;

/// MurmurHash3 x64 128 (Austin Appleby's public-domain algorithm) over
/// `data`; returns {h1, h2}. Blocks are read little-endian on any host.
std::array<uint64_t, 2> murmur3_x64_128(std::string_view data,
                                        uint64_t seed = 0);

/// The hashing-V2 byte encoding of one component (step 1 above).
std::string encode_for_hashing_v2(const pk_component& component);

/// The V2 EPK of `key` for a Hash (single path) collection: the components'
/// encodings concatenated and hashed once. `[]` maps to "" (`epk_min`).
std::string epk_v2(const std::vector<pk_component>& key);

/// The V2 EPK of `key` for a MultiHash collection: each component hashed on
/// its own, 32 hex characters per level. A prefix of the paths yields a
/// prefix EPK whose documents lie in [epk, epk + "FF").
std::string epk_v2_multihash(const std::vector<pk_component>& key);

/// Compares two EPK hex strings, length-aware: the shorter string is treated
/// as right-padded with '0' (so "05C1" == "05C100"), then the strings compare
/// ordinally. Uppercase hex digits sort correctly in ASCII, and because '0' is
/// the lowest digit this equals comparing after trimming trailing '0's.
/// Ordinal order refines this order (ordinal a < b implies a <= b here).
/// Returns <0, 0 or >0.
int epk_compare(std::string_view a, std::string_view b);

/// `epk_compare(a, b) < 0`, for algorithms that take a less-than.
inline bool epk_less(std::string_view a, std::string_view b) {
  return epk_compare(a, b) < 0;
}

/// Parses the partition-key header text, a JSON array of at most
/// `max_pk_components` components: strings (all JSON escapes, surrogate pairs
/// joined into UTF-8), numbers, true, false, null and `{}` (undefined), e.g.
/// `["p0"]`, `[5]`, `[{}]`, `["a","b"]`. Anything else — nested arrays,
/// non-empty objects, trailing text, invalid UTF-8, lone surrogates, numbers
/// out of double range — is a problem naming the offset and what was
/// expected there.
result<std::vector<pk_component>>
parse_partition_key_json(std::string_view text);

/// The EPK of the partition-key header `key_json` under a collection's
/// definition: multi-hash keys hash each component, single keys use hash
/// version 2. The one place that decides which hash applies; a problem for
/// a key that does not parse or a version-1 collection (not supported).
result<std::string> epk_for(const partition_key_definition& def,
                            std::string_view key_json);

} // namespace georoute
