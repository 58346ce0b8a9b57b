#pragma once

// The location table (.NET LocationCache (src/Routing/LocationCache.cs),
// LocationCache): which regions an account has, which of them the client
// prefers, which are demoted after a failure, and from that which endpoint
// serves a request.
//
// A table is an immutable value. Every change (an account read, a new
// preference list, a mark) returns a new table, so the location-cache actor
// can swap a `shared_ptr<const location_table>` and hand snapshots out.
// Marks carry the time they were set; a mark older than the expiry is
// ignored by every query (the query takes `now`), so endpoints come back
// without a rebuild. `with_expired_marks_dropped` only reclaims memory.
//
// Where georoute deliberately differs from the .NET SDK:
//   - excluded regions are matched case-insensitively, like region names;
//   - when exclusions remove every candidate, the request goes to the
//     current `write_endpoints(now)[0]`, never to the static default
//     endpoint (for reads and writes alike);
//   - the default (global) endpoint is named after the current first write
//     region, also right after a write-region switch;
//   - a new preference list takes effect at once (the SDK orders endpoints
//     by the previous list until the next update);
//   - with endpoint discovery off, every request goes to the default
//     endpoint, exclusions included (the SDK's exclusion path would still
//     hand out regional endpoints).
//
// Endpoints are compared by `normalize_endpoint` (lower-case scheme and
// host, explicit default port, trailing '/'); the strings handed out are
// the ones the account (or the options) spelled.

#include "georoute/actors/policy/model.hpp"
#include "georoute/actors/policy/operation.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace georoute {

/// The clock every policy query is given; never read inside policy code.
using policy_clock = std::chrono::steady_clock;

/// A point in time on `policy_clock`.
using policy_time = policy_clock::time_point;

/// The comparison key of an endpoint: scheme and host lower-cased, the
/// default port made explicit (http 80, https 443), the path ending in '/'.
/// "HTTP://Acct.Example:443" and "http://acct.example:443/" compare equal;
/// "https://h" becomes "https://h:443/".
std::string normalize_endpoint(std::string_view endpoint);

/// Whether two region names are equal ignoring ASCII case.
bool same_region(std::string_view a, std::string_view b);

/// The client's location options (a pure slice of `location_options`).
struct location_table_options {
  /// The endpoint the client was given (global or regional). Never changes.
  std::string default_endpoint;
  /// Regions to use first, in order. Empty: the account's own order.
  std::vector<std::string> preferred_regions;
  /// Follow the account's region lists; off pins every request to
  /// `default_endpoint`.
  bool endpoint_discovery = true;
  /// Write to every write region when the account allows it.
  bool use_multiple_write_locations = true;
  /// How long a mark demotes an endpoint.
  std::chrono::milliseconds unavailable_expiry{std::chrono::seconds{300}};
};

/// What a request asks of `resolve` (LocationCache.ResolveServiceEndpoint).
struct resolve_input {
  op_kind op = op_kind::read;
  /// A document (or stored-procedure execution) request: multi-write
  /// routing applies. Metadata requests set this to false.
  bool is_document = true;
  /// false routes to the account's write regions (branch A of
  /// LocationCache.ResolveServiceEndpoint).
  bool use_preferred = true;
  /// The retry's location index: eps[index % size].
  uint32_t location_index = 0;
  /// Regions this request must not use, matched case-insensitively.
  std::vector<std::string> excluded_regions;
  /// Route to the hub (the first write region), e.g. after a 403.3 on a
  /// multi-master metadata write.
  bool route_to_hub = false;
  /// A pinned endpoint wins over everything else; empty: not pinned.
  std::string pinned_endpoint;
  /// The endpoint that just answered a regional error (503, 500 on a read,
  /// 410.1022); empty: none. Branch B steps past it to the next applicable
  /// endpoint when `eps[index % size]` names it and another one applies.
  /// The index walks a list that marks reorder: a mark expiring between two
  /// attempts moves its region forward, and the same index can then name
  /// the region that failed.
  /// Branch A (single-master writes) ignores it: only the hub takes those.
  std::string avoid_endpoint;
};

/// How `resolve` reached its answer.
enum class resolve_route : uint8_t {
  pinned,             ///< `pinned_endpoint` was set
  hub,                ///< `route_to_hub` was set
  write_regions,      ///< branch A: account write region [index % 2]
  default_endpoint,   ///< branch A without discovery or write regions
  applicable,         ///< branch B: the applicable endpoints
  exclusion_fallback, ///< branch B, everything excluded: write_endpoints[0]
};

/// The answer of `resolve`.
struct resolution {
  std::string endpoint;
  std::string region; ///< `region_of(endpoint)`; empty if unknown
  resolve_route route = resolve_route::applicable;
};

/// The answer of `should_refresh_endpoints`
/// (LocationCache.ShouldRefreshEndpoints).
struct refresh_verdict {
  bool refresh = false;
  /// false only when the first endpoint is down and it is the only one, so
  /// a refresh should not wait for the background loop.
  bool can_refresh_in_background = true;
  /// The row of LocationCache.ShouldRefreshEndpoints that decided (0-8).
  int row = 0;
};

/// One region of an account as the table keeps it.
struct region_entry {
  std::string name;
  std::string endpoint; ///< as the account spelled it
  std::string key;      ///< normalize_endpoint(endpoint)
};

/// An immutable snapshot of the client's view of the account's regions.
class location_table {
public:
  /// The state before any account read: every list is [default_endpoint].
  explicit location_table(location_table_options options);

  // -- changes (each returns a new table) -----------------------------------

  /// Applies an account read: region lists, the account's multi-write flag.
  /// Entries with an empty name or a non-absolute endpoint are skipped; on a
  /// duplicate name the last endpoint wins but the name is listed twice.
  location_table with_account(const database_account& account,
                              policy_time now) const;

  /// Replaces the preference list; effective immediately.
  location_table with_preferences(std::vector<std::string> preferred,
                                  policy_time now) const;

  /// Marks `endpoint` unavailable for reads and/or writes as of `now`. A
  /// live mark gains the new flags and a fresh timestamp; an expired one is
  /// replaced. Marking with neither flag changes nothing.
  location_table with_mark(std::string_view endpoint, bool read, bool write,
                           policy_time now) const;

  /// Forgets marks that have expired at `now`.
  location_table with_expired_marks_dropped(policy_time now) const;

  /// Replaces the regions the fleet's shared evidence demotes
  /// (actors/policy/fleet_health.hpp): each goes after every healthy
  /// region of its list, before the marked ones, and stays usable as the
  /// last resort. A soft demotion, not a mark: it changes the order only,
  /// never `is_unavailable`, and lasts until the next call (the owner
  /// decides when it ends). `writes` applies only while several write
  /// regions are used (a single-write account's write region never moves on
  /// hearsay). Names are matched ignoring ASCII case.
  location_table with_fleet_demotions(std::vector<std::string> reads,
                                      std::vector<std::string> writes,
                                      policy_time now) const;

  // -- endpoint lists --------------------------------------------------------

  /// Read endpoints in preference order, unavailable ones demoted to the end
  /// (never removed). Falls back to write_endpoints(now)[0]. Never empty.
  std::vector<std::string> read_endpoints(policy_time now) const;

  /// Write endpoints: with multi-write usable, preference- and
  /// availability-ordered like reads; otherwise the account's write regions
  /// in account order. Falls back to the default endpoint. Never empty.
  std::vector<std::string> write_endpoints(policy_time now) const;

  /// The endpoints a request may use (LocationCache.GetApplicableEndpoints):
  /// without exclusions the availability-ordered lists; with exclusions the
  /// effective preferred regions that are not excluded, marks not consulted; if
  /// nothing is left, [write_endpoints(now)[0]]. Never empty.
  std::vector<std::string>
  applicable_endpoints(op_kind op, const std::vector<std::string>& excluded,
                       policy_time now) const;

  /// The same list without a copy where the table holds it: a reference
  /// into the table (valid while it lives), or into `scratch` when it had
  /// to be computed (exclusions, or a mark expired since the table was
  /// built). `fell_back` as in resolve's exclusion fallback.
  const std::vector<std::string>&
  applicable_ref(op_kind op, const std::vector<std::string>& excluded,
                 policy_time now, bool& fell_back,
                 std::vector<std::string>& scratch) const;

  // -- regions ---------------------------------------------------------------

  /// The client's preference list.
  const std::vector<std::string>& preferred_regions() const {
    return options_.preferred_regions;
  }

  /// The preference list if set; else the region of the default endpoint
  /// if it is a read-region endpoint; else the readable regions.
  const std::vector<std::string>& effective_preferred_regions() const {
    return effective_preferred_;
  }

  /// The number of regions a retry may hop across
  /// (ClientRetryPolicy.ShouldRetryOnUnavailableEndpointStatusCodes): the size
  /// of `effective_preferred_regions()`.
  std::size_t preferred_location_count() const {
    return effective_preferred_.size();
  }

  /// Readable region names in account order.
  const std::vector<std::string>& available_read_regions() const {
    return read_regions_;
  }

  /// Writable region names in account order.
  const std::vector<std::string>& available_write_regions() const {
    return write_regions_;
  }

  /// The region an endpoint belongs to: a regional endpoint names its own
  /// region (write regions first); the default endpoint, if not itself
  /// regional, names the current first write region; otherwise "".
  std::string region_of(std::string_view endpoint) const;

  /// The endpoint of the first write region; the default endpoint before
  /// the account is known.
  std::string hub_endpoint() const;

  // -- predicates ------------------------------------------------------------

  /// Client wants multi-write and the account allows it.
  bool can_use_multiple_write_locations() const {
    return options_.use_multiple_write_locations && account_multi_write_;
  }

  /// ... and the request is a document request
  /// (LocationCache.ResolveServiceEndpoint).
  bool can_use_multiple_write_locations(bool is_document) const {
    return can_use_multiple_write_locations() && is_document;
  }

  /// ... and the account has more than one write region (GEM's
  /// CanSupportMultipleWriteLocations, LocationCache's region-name helpers).
  bool can_support_multiple_write_locations(bool is_document) const {
    return can_use_multiple_write_locations(is_document) &&
           write_regions_.size() > 1;
  }

  /// Whether `endpoint` carries a live mark for `op` at `now`.
  bool is_unavailable(std::string_view endpoint, op_kind op,
                      policy_time now) const;

  /// Resolves the endpoint of one attempt
  /// (LocationCache.ResolveServiceEndpoint,
  /// LocationCache.GetApplicableEndpoints).
  resolution resolve(const resolve_input& in, policy_time now) const;

  /// Whether the account should be re-read
  /// (LocationCache.ShouldRefreshEndpoints, rows 0-8).
  refresh_verdict should_refresh_endpoints(policy_time now) const;

  // -- plain accessors -------------------------------------------------------

  const location_table_options& options() const { return options_; }
  const std::string& default_endpoint() const {
    return options_.default_endpoint;
  }
  bool endpoint_discovery() const { return options_.endpoint_discovery; }
  /// The account says it moves single partitions' write regions: the last
  /// explicit `enablePerPartitionFailoverBehavior` it sent (false before).
  /// Whether the client follows it is `partition_failover_options::enabled`.
  bool account_per_partition_failover() const { return account_ppaf_; }
  /// The endpoint of readable region `region` as the account lists it;
  /// empty when the account has no such read region.
  std::string account_read_endpoint(std::string_view region) const;
  /// The account's current (first) write region; empty before an account.
  std::string write_region() const {
    return write_regions_.empty() ? std::string{} : write_regions_.front();
  }
  /// The account's own multi-write flag (false before the first read).
  bool account_multiple_write_locations() const { return account_multi_write_; }
  /// Whether an account has been applied.
  bool has_account() const { return has_account_; }
  /// When the table was last built.
  policy_time updated_at() const { return updated_at_; }
  /// Number of marks kept (live or expired-but-not-dropped).
  std::size_t mark_count() const { return marks_.size(); }
  /// The regions the fleet demotes for reads and for writes.
  const std::vector<std::string>& fleet_demoted_reads() const {
    return fleet_reads_;
  }
  const std::vector<std::string>& fleet_demoted_writes() const {
    return fleet_writes_;
  }

private:
  struct mark_state {
    policy_time at;
    bool read = false;
    bool write = false;
  };

  void rebuild(policy_time now);
  bool mark_live(const mark_state& m, policy_time now) const;
  bool unavailable_by_key(const std::string& key, op_kind op,
                          policy_time now) const;
  std::vector<std::string>
  preferred_available(const std::vector<region_entry>& by_name,
                      const std::vector<std::string>& ordered, op_kind op,
                      const std::string& fallback, policy_time now) const;
  std::vector<std::string> applicable(op_kind op,
                                      const std::vector<std::string>& excluded,
                                      policy_time now, bool& fell_back) const;
  std::vector<std::string> compute_write_endpoints(policy_time now) const;
  std::vector<std::string> compute_read_endpoints(policy_time now) const;
  // The normalized key of `endpoint`, without normalizing when the table
  // lists that exact spelling (the common case: endpoints come from it).
  const std::string* known_key(std::string_view endpoint) const;

  location_table_options options_;
  std::string default_key_;
  bool has_account_ = false;
  bool account_multi_write_ = false;
  bool account_ppaf_ = false;
  std::vector<std::string> write_regions_;
  std::vector<std::string> read_regions_;
  std::vector<region_entry> write_map_; ///< unique names, account order
  std::vector<region_entry> read_map_;
  std::vector<std::string> effective_preferred_;
  std::map<std::string, mark_state> marks_; ///< by normalized endpoint
  std::vector<std::string> fleet_reads_;    ///< region names
  std::vector<std::string> fleet_writes_;
  policy_time updated_at_{};
  // The endpoint lists as of the last rebuild. They depend on time only
  // through the marks' expiry, so they hold for every `now` up to the
  // earliest expiry of a mark kept; after it they are computed afresh.
  std::vector<std::string> reads_at_rebuild_;
  std::vector<std::string> writes_at_rebuild_;
  policy_time lists_valid_until_{};
};

} // namespace georoute
