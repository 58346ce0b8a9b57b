#pragma once

// Vector session tokens, the value of `x-ms-session-token` (gateway protocol
// A10). One range's token is `{version}#{globalLsn}[#{regionId}={localLsn}...]`
// and a header carries `{pkRangeId}:{token}` entries joined by ',', e.g.
// `0:-1#12,1:1#9#4=8#5=7`.
//
// Only the vector form is accepted: a legacy `{range}:{lsn}` token (no '#') is
// a problem. Parsing never throws; every problem names the offending segment,
// its position and what was wrong with it.

#include "georoute/actors/policy/result.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace georoute {

/// The progress one partition-key range has made: `{version}#{globalLsn}`
/// plus the local LSN per region for multi-write accounts.
struct vector_session_token {
  int64_t version = 0;
  int64_t global_lsn = 0;
  std::map<int64_t, int64_t> local_lsns; ///< region id -> local LSN

  friend bool operator==(const vector_session_token& x,
                         const vector_session_token& y) {
    return x.version == y.version && x.global_lsn == y.global_lsn &&
           x.local_lsns == y.local_lsns;
  }
  friend bool operator!=(const vector_session_token& x,
                         const vector_session_token& y) {
    return !(x == y);
  }
};

/// Parses one range's token, e.g. `1#9#4=8#5=7` (without the `{range}:`).
result<vector_session_token> parse_vector_token(std::string_view text);

/// Renders `{version}#{globalLsn}[#{region}={lsn}...]`, regions ascending.
std::string render(const vector_session_token& token);

/// Merges two tokens of the same range, keeping the higher progress.
///
/// The rule of the SDKs (JS `VectorSessionToken.merge`, .NET
/// `VectorSessionToken.Merge`):
/// - version    = max(a.version, b.version)
/// - global LSN = max(a.global_lsn, b.global_lsn), whatever the versions
/// - regions    = the region set of the higher-version token; a region that
///   the other token also has gets the max of both local LSNs. A region only
///   the lower-version token knows is dropped (the topology changed with the
///   version bump).
/// - equal versions: the SDKs throw when the region sets differ; here the
///   region sets are united (max per region) so that a header from a
///   misbehaving peer cannot fail a request.
vector_session_token merge(const vector_session_token& a,
                           const vector_session_token& b);

/// True if a replica that has reached `seen` may serve a read that requires
/// `required` (the .NET `VectorSessionToken.IsValid` rule): `seen.version >=
/// required.version`, `seen.global_lsn >= required.global_lsn` and, for every
/// region both know, `seen`'s local LSN >= `required`'s. A session read that
/// is not covered is answered with 404/1002 (ReadSessionNotAvailable).
bool covers(const vector_session_token& seen,
            const vector_session_token& required);

/// Orders range ids numerically when both are decimal numbers ("2" < "10"),
/// otherwise numbers first, then by plain string comparison.
struct range_id_less {
  bool operator()(const std::string& x, const std::string& y) const;
};

/// The tokens of a header, keyed by partition-key range id.
using session_token_set =
    std::map<std::string, vector_session_token, range_id_less>;

/// Parses a whole `x-ms-session-token` value. Entries may be separated by
/// ',' with optional spaces or tabs around them. A range id that appears twice
/// is merged. Empty input, an empty entry and every malformed entry are
/// problems.
result<session_token_set> parse_session_header(std::string_view text);

/// Merges `from` into `into`, range by range, with `merge` above.
void merge_into(session_token_set& into, const session_token_set& from);

/// Renders the set as a header value: `{range}:{token}` joined by ',' in
/// range-id order. An empty set renders as "".
std::string render(const session_token_set& tokens);

} // namespace georoute
