#pragma once

// The per-operation client retry policy (.NET ClientRetryPolicy
// (src/ClientRetryPolicy.cs), ClientRetryPolicy) and the partition-range retry
// policy (.NET ResourceThrottleRetryPolicy and the metadata retry policies,
// MetadataRequestThrottleRetryPolicy), as pure code.
//
// One `client_retry_policy` lives for one operation. After a failed attempt
// the caller classifies the outcome into a `failure_signal`, describes the
// request with `request_facts` (see `facts_for`), and asks `evaluate` (pure)
// or `on_failure` (evaluate + commit). The decision names the side effects
// for the caller to carry out: mark an endpoint, refresh the account
// (forced or not), clear a session token, wait `delay`, then resolve the
// next attempt with `route(...)`.
//
// Decision table (ClientRetryPolicy.ShouldRetryInternalAsync's branches), first
// match wins:
//   connection failure        EF(mark read+write, preferred, index 0)
//   lost after send           reads: as a connection failure; writes: no
//                             retry (it may have been applied), mark
//                             read+write
//   403.3                     multi-master metadata write: EF without marks,
//                             then route to the hub; otherwise EF(mark write,
//                             forced refresh, index = failover count,
//                             use_preferred = false)
//   403.1008                  reads and multi-write requests: EF(preferred);
//                             single-master writes: no retry
//   404.1002                  session retries (ClientRetryPolicy.
//                             ShouldRetryOnSessionNotAvailable)
//   503 (any substatus)       UE (no mark)
//   500 on a read, 410.1022   UE
//   429.3092 multi-master write  UE
//   other 429                 throttle
//   408, timeouts, the rest   no retry
// EF = endpoint failover (ClientRetryPolicy.ShouldRetryOnEndpointFailureAsync),
// UE = one cross-region retry
// (ClientRetryPolicy.ShouldRetryOnUnavailableEndpointStatusCodes).
//
// A UE retry, and a partition-range hop, also steps past the endpoint that
// just failed (`resolve_input::avoid_endpoint`): the reference resolves
// index 1 on the list as it is at the retry, and a mark expiring in between
// can put the failed region back at index 1.
//
// Not modelled here: per-partition failover and the circuit breaker (their
// own pure code, partition_failover.hpp and partition_breaker.hpp, which the
// attempt loop consults), and AAD revocation, DTX and the thin client (no
// counterpart in georoute).
//
// One deliberate reading: on a 403.3 for a multi-master metadata write the
// refresh is forced when the previous attempt already went to the hub (the
// SDK clears its retry context first, so its own check never fires).

#include "georoute/actors/policy/location_table.hpp"
#include "georoute/actors/policy/throttle_policy.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace georoute {

/// Limits of the client retry policy (reference defaults).
struct client_retry_options {
  /// Endpoint failovers per operation. The check runs before the increment,
  /// so max + 1 failovers happen (121 with the default).
  uint32_t max_failover_retries = 120;
  /// The pause before a failover retry: reads always, writes from the second
  /// failover on; none after a refused connection while a region of the
  /// request is still untried (a refusal is a definite answer).
  std::chrono::milliseconds failover_retry_interval{std::chrono::seconds{1}};
  /// 404.1002 retries of a single-master request (the last one carries the
  /// hub-region-only header when hub processing is on).
  uint32_t max_session_retries = 2;
  /// Cross-region retries on 503 / 500 / 410.1022.
  uint32_t max_service_unavailable_retries = 1;
  /// Send the last single-master 404.1002 read retry with the
  /// hub-region-only header; off: max_session_retries - 1 retries on the
  /// write region, no header (the SDK's behaviour without hub processing).
  bool hub_region_processing = true;
  throttle_options throttle;
};

/// What the policy needs to know about the request and the table.
struct request_facts {
  bool is_read = true;
  /// A document request; false for metadata (collections, databases, ...).
  bool is_document = true;
  /// The client wants multi-write and the account allows it.
  bool multi_write_usable = false;
  /// Writable regions of the account.
  std::size_t write_region_count = 1;
  /// `location_table::preferred_location_count()`.
  std::size_t preferred_location_count = 0;
  /// The size of the request's applicable endpoints (404.1002 walk).
  std::size_t applicable_endpoint_count = 1;
  bool endpoint_discovery = true;
  /// The endpoint the failed attempt was pinned to; empty: none (no marks).
  std::string endpoint;
  /// A name-based request: a final 404.1002 clears the session token of the
  /// name, which may have been reused (.NET
  /// ClearingSessionContainerClientRetryPolicy).
  bool name_based = false;

  bool is_metadata() const { return !is_document; }
  /// LocationCache.CanUseMultipleWriteLocations(request).
  bool can_use_multiple_write_locations() const {
    return multi_write_usable && is_document;
  }
  /// A write GEM routes to many write regions
  /// (ClientRetryPolicy.OnBeforeSendRequest isMultiMasterWrite).
  bool is_multi_master_write() const {
    return !is_read && can_use_multiple_write_locations() &&
           write_region_count > 1;
  }
  /// LocationCache.IsMultimasterMetadataWriteRequest.
  bool is_multi_master_metadata_write() const {
    return !is_read && write_region_count > 1 && is_metadata() &&
           multi_write_usable;
  }
  /// A write that only the hub may take.
  bool is_single_master_write() const {
    return !is_read && !can_use_multiple_write_locations();
  }
};

/// Fills `request_facts` from a table snapshot.
request_facts facts_for(const location_table& table, bool is_read,
                        bool is_document,
                        const std::vector<std::string>& excluded_regions,
                        std::string endpoint, policy_time now);

/// The counters of one operation's client retry policy.
struct retry_counters {
  uint32_t failover = 0;
  uint32_t session = 0;
  uint32_t service_unavailable = 0;
  throttle_state throttle;
  /// Sticky: every later read attempt carries the hub-region-only header.
  bool hub_header = false;
  /// The retry context of the next attempt (cleared by every failure).
  bool has_context = false;
  uint32_t location_index = 0;
  bool use_preferred = true;
  bool route_to_hub = false;
  /// The endpoint the next attempt steps past (`resolve_input`), set with
  /// the context by the cross-region retries (503 and its kin); empty: none.
  std::string avoid_endpoint;
};

/// The answer of a retry policy.
struct retry_decision {
  bool retry = false;
  std::chrono::milliseconds delay{0};
  /// How the next attempt resolves its endpoint
  /// (LocationCache.ResolveServiceEndpoint).
  uint32_t location_index = 0;
  bool use_preferred = true;
  bool route_to_hub = false;
  /// The next attempt carries the hub-region-only header.
  bool hub_header = false;
  /// Mark `mark_endpoint` unavailable for reads and/or writes.
  std::string mark_endpoint;
  bool mark_read = false;
  bool mark_write = false;
  /// Re-read the account before the retry; `force_refresh` bypasses the
  /// minimum interval.
  bool refresh_account = false;
  bool force_refresh = false;
  /// The refresh must read the account anew (a fresh refresh: see the
  /// endpoint manager), even within the minimum interval; the retry waits
  /// for it.
  bool fresh_refresh = false;
  /// Clear the session token of the request's name (.NET
  /// ClearingSessionContainerClientRetryPolicy).
  bool clear_session_token = false;
  /// Why, for logs and counters: "403.3 write forbidden: failover 1".
  std::string reason;
  /// The policy's counters once this decision is applied.
  retry_counters next;
};

/// The per-operation client retry policy.
class client_retry_policy {
public:
  explicit client_retry_policy(client_retry_options options = {})
      : options_(options) {}

  /// Would this outcome be retried, and how? Changes nothing.
  retry_decision evaluate(const failure_signal& signal,
                          const request_facts& facts) const;

  /// Commits a decision returned by `evaluate` on this policy.
  void apply(const retry_decision& decision) { counters_ = decision.next; }

  /// `evaluate`, then `apply`.
  retry_decision on_failure(const failure_signal& signal,
                            const request_facts& facts) {
    auto decision = evaluate(signal, facts);
    apply(decision);
    return decision;
  }

  /// The resolve input of the next attempt: `base` with the retry context
  /// (index, use_preferred, route_to_hub) applied; without a context (first
  /// attempt, or after a throttle retry) index 0, preferred, no hub. A pin
  /// in `base` is left alone (and still wins in `resolve`).
  resolve_input route(resolve_input base) const;

  /// Whether the next attempt of a read carries the hub-region-only header.
  bool hub_header(bool is_read) const {
    return is_read && counters_.hub_header;
  }

  const retry_counters& counters() const { return counters_; }
  const client_retry_options& options() const { return options_; }

private:
  retry_decision endpoint_failover(retry_decision d, const request_facts& f,
                                   bool as_read, bool mark_both, bool force,
                                   bool preferred, bool override_discovery,
                                   const char* what,
                                   bool refused = false) const;
  retry_decision session_not_available(retry_decision d,
                                       const request_facts& f) const;
  retry_decision unavailable_endpoint(retry_decision d, const request_facts& f,
                                      const char* what) const;
  retry_decision throttle(retry_decision d, const failure_signal& s,
                          const char* what) const;

  client_retry_options options_;
  retry_counters counters_;
};

/// The partition-range (pkranges feed) retry policy: up to
/// max(1, preferred_location_count) region hops on 503 / 500 / 410.1022 /
/// 403.1008 (index = hop count, preferred, no delay, no marks, no
/// refresh); everything else goes to a throttle policy.
class partition_range_retry_policy {
public:
  explicit partition_range_retry_policy(std::size_t preferred_location_count,
                                        throttle_options throttle = {});

  /// `endpoint`: where the failed attempt went; a hop steps past it.
  retry_decision evaluate(const failure_signal& signal,
                          const std::string& endpoint = {}) const;
  void apply(const retry_decision& decision) { counters_ = decision.next; }
  retry_decision on_failure(const failure_signal& signal,
                            const std::string& endpoint = {}) {
    auto decision = evaluate(signal, endpoint);
    apply(decision);
    return decision;
  }

  /// The resolve input of the next attempt (index, use_preferred = true).
  resolve_input route(resolve_input base) const;

  uint32_t hop_budget() const { return max_hops_; }
  uint32_t hops() const { return counters_.service_unavailable; }
  uint32_t location_index() const { return counters_.location_index; }
  const retry_counters& counters() const { return counters_; }

private:
  throttle_options throttle_;
  uint32_t max_hops_;
  retry_counters counters_;
};

} // namespace georoute
