#include "georoute/actors/policy/client_retry_policy.hpp"

#include <algorithm>
#include <utility>

namespace georoute {

namespace {

using std::chrono::milliseconds;

/// Sets the retry context of the next attempt on both the decision and the
/// counters it commits.
void set_context(retry_decision& d, uint32_t index, bool use_preferred) {
  d.retry = true;
  d.location_index = index;
  d.use_preferred = use_preferred;
  d.next.has_context = true;
  d.next.location_index = index;
  d.next.use_preferred = use_preferred;
  d.next.route_to_hub = false;
}

std::string status_text(const failure_signal& s) {
  switch (s.what) {
  case failure_signal::kind::connection_failure:
    return "connection failure";
  case failure_signal::kind::timeout:
    return "timeout";
  case failure_signal::kind::lost_after_send:
    return "connection lost after the request was sent";
  case failure_signal::kind::http_status:
    break;
  }
  auto text = std::to_string(s.status);
  if (s.substatus != 0) text += "." + std::to_string(s.substatus);
  return text;
}

} // namespace

request_facts facts_for(const location_table& table, bool is_read,
                        bool is_document,
                        const std::vector<std::string>& excluded_regions,
                        std::string endpoint, policy_time now) {
  request_facts f;
  f.is_read = is_read;
  f.is_document = is_document;
  f.multi_write_usable = table.can_use_multiple_write_locations();
  f.write_region_count = table.available_write_regions().size();
  f.preferred_location_count = table.preferred_location_count();
  f.applicable_endpoint_count =
      table
          .applicable_endpoints(is_read ? op_kind::read : op_kind::write,
                                excluded_regions, now)
          .size();
  f.endpoint_discovery = table.endpoint_discovery();
  f.endpoint = std::move(endpoint);
  return f;
}

// -- client_retry_policy ---------------------------------------------------

retry_decision client_retry_policy::evaluate(const failure_signal& s,
                                             const request_facts& f) const {
  retry_decision d;
  d.next = counters_;
  // Every failure starts without a retry context (the SDK nulls it first);
  // only the branch that retries sets a new one.
  d.next.has_context = false;
  d.next.location_index = 0;
  d.next.use_preferred = true;
  d.next.route_to_hub = false;
  d.next.avoid_endpoint.clear();

  auto decide = [&]() -> retry_decision {
    switch (s.what) {
    case failure_signal::kind::connection_failure:
      return endpoint_failover(
          d, f, f.is_read, true, false, true, false,
          s.refused ? "connection refused" : "connection failure", s.refused);
    case failure_signal::kind::timeout:
      if (!f.is_read) {
        // A write that timed out may have been applied: it is not retried
        // here (the caller is told its outcome is unknown).
        d.reason = "timeout on a write: not retried";
        if (f.is_multi_master_write() && !f.endpoint.empty()) {
          // Its region went silent, and the next writes must not wait for
          // it too: mark it (as a connection failure would) so that they
          // go to the next write region.
          d.mark_endpoint = f.endpoint;
          d.mark_read = true;
          d.mark_write = true;
          d.reason += "; the silent region is marked unavailable";
        }
        return d;
      }
      d.reason = "timeout: not retried (the attempt ladder already did)";
      return d;
    case failure_signal::kind::lost_after_send:
      // A read repeats harmlessly: as a connection failure. A write may
      // have been applied before the connection went: a second copy could
      // create twice, or answer 409 / 404 / 412 for a write that succeeded.
      // It is not repeated, but its region is marked as a connection
      // failure would mark it: a gateway that resets every request after
      // reading it must not take the next writes too.
      if (f.is_read)
        return endpoint_failover(d, f, true, true, false, true, false,
                                 "connection lost after the request was "
                                 "sent");
      d.reason = "connection lost after the write was sent: not retried";
      if (f.endpoint_discovery && !f.endpoint.empty()) {
        d.mark_endpoint = f.endpoint;
        d.mark_read = true;
        d.mark_write = true;
        d.reason += "; the region is marked unavailable";
      }
      return d;
    case failure_signal::kind::http_status:
      break;
    }
    if (s.is(403, 3)) {
      if (f.is_multi_master_metadata_write()) {
        // The hub decides metadata writes; no region is marked. A second
        // 403.3 from the hub forces the refresh.
        auto r =
            endpoint_failover(d, f, false, false, counters_.route_to_hub, false,
                              true, "403.3 on a multi-master metadata write");
        if (r.retry) {
          r.route_to_hub = true;
          r.next.route_to_hub = true;
        }
        return r;
      }
      return endpoint_failover(d, f, false, false, true, false, false,
                               "403.3 write forbidden");
    }
    if (s.is(403, 1008) && (f.is_read || f.can_use_multiple_write_locations()))
      return endpoint_failover(d, f, f.is_read, false, false, true, false,
                               "403.1008 account not found in region");
    if (s.is(404, 1002)) return session_not_available(d, f);
    if (s.is_status(503) && f.is_single_master_write() &&
        counters_.service_unavailable == 0) {
      // Deviation from
      // ClientRetryPolicy.ShouldRetryOnUnavailableEndpointStatusCodes, which
      // never retries a single-master write after a 503. The engine's view may
      // be stale: the account may have become multi-write again, or moved its
      // hub, since the last refresh (a few seconds after a single-write
      // moment, the old hub answers 503). A 503 was not applied, so:
      // read the account anew, then retry once, resolved on the table as it
      // then is. A second 503 is not retried (the counter below). Not a
      // plain refresh: within the minimum interval it would answer the very
      // account the write was routed on, and the retry would go to the same
      // region on the same stale view. A fresh one waits for a new read
      // (at most about a second; reads stay one a second in a real hub
      // outage).
      d.next.service_unavailable = 1;
      d.refresh_account = true;
      d.fresh_refresh = true;
      set_context(d, 0, true);
      // If the refresh finds multi-write, the write may go elsewhere.
      d.next.avoid_endpoint = f.endpoint;
      d.reason = "503 service unavailable on a single-master write: the "
                 "account is read again and the write retried once";
      return d;
    }
    if (s.is_status(503))
      return unavailable_endpoint(d, f, "503 service unavailable");
    if (s.is_status(500) && f.is_read)
      return unavailable_endpoint(d, f, "500 on a read");
    if (s.is(410, 1022))
      return unavailable_endpoint(d, f, "410.1022 lease not found");
    if (s.is(429, 3092) && f.is_multi_master_write())
      return unavailable_endpoint(d, f, "429.3092 on a multi-master write");
    if (s.is_status(408)) {
      d.reason = f.is_read ? "408: not retried (the attempt ladder already did)"
                           : "408 on a write: not retried";
      return d;
    }
    return throttle(d, s, "throttle");
  };

  auto out = decide();
  out.hub_header = out.retry && f.is_read && out.next.hub_header;
  return out;
}

// EF (ClientRetryPolicy.ShouldRetryOnEndpointFailureAsync).
retry_decision
client_retry_policy::endpoint_failover(retry_decision d, const request_facts& f,
                                       bool as_read, bool mark_both, bool force,
                                       bool preferred, bool override_discovery,
                                       const char* what, bool refused) const {
  std::string why = what;
  if (counters_.failover > options_.max_failover_retries) {
    d.reason = why + ": not retried, " + std::to_string(counters_.failover) +
               " failovers done";
    return d;
  }
  if (!f.endpoint_discovery && !override_discovery) {
    d.reason = why + ": not retried, endpoint discovery is off";
    return d;
  }
  d.next.failover = counters_.failover + 1;
  if (!f.endpoint.empty() && !override_discovery) {
    d.mark_endpoint = f.endpoint;
    d.mark_read = as_read || mark_both;
    d.mark_write = !as_read || mark_both;
  }
  // Writes: the first failover goes at once (the other write region may
  // take it), later ones wait like reads. A refused connection is a
  // definite answer (the region is not serving, nothing was sent): the
  // next region is tried at once, as long as one of the request's regions
  // is still untried; once they all were, the pause is back, so that a
  // client whose every region refuses (its own network down) does not spin.
  bool wait = as_read || d.next.failover > 1;
  if (refused && d.next.failover < f.applicable_endpoint_count) wait = false;
  d.delay = wait ? options_.failover_retry_interval : milliseconds{0};
  d.refresh_account = true;
  d.force_refresh = force;
  // A marked endpoint is demoted, so index 0 is the next region; without
  // preferred routing the index walks the write regions.
  set_context(d, preferred ? 0 : d.next.failover, preferred);
  d.reason = why + ": failover " + std::to_string(d.next.failover);
  return d;
}

// 404.1002 (ClientRetryPolicy.ShouldRetryOnSessionNotAvailable).
retry_decision
client_retry_policy::session_not_available(retry_decision d,
                                           const request_facts& f) const {
  const uint32_t c = counters_.session + 1;
  d.next.session = c;
  const std::string why = "404.1002 session not available";
  auto give_up = [&](const std::string& because) {
    d.reason = why + ": not retried, " + because;
    d.clear_session_token = f.name_based;
    return d;
  };
  if (!f.endpoint_discovery) return give_up("endpoint discovery is off");
  if (f.can_use_multiple_write_locations()) {
    if (c > f.applicable_endpoint_count) return give_up("every region tried");
    set_context(d, c, true);
    d.reason = why + ": region " + std::to_string(c);
    return d;
  }
  // Single master: the write region has every write.
  if (options_.hub_region_processing) {
    if (c > options_.max_session_retries)
      return give_up("the hub answered with the hub-only header");
    if (c >= options_.max_session_retries) d.next.hub_header = true;
  } else if (c >= options_.max_session_retries) {
    return give_up("the write region answered");
  }
  set_context(d, 0, false);
  d.reason = why + ": write region, retry " + std::to_string(c);
  return d;
}

// UE (ClientRetryPolicy.ShouldRetryOnUnavailableEndpointStatusCodes).
retry_decision client_retry_policy::unavailable_endpoint(
    retry_decision d, const request_facts& f, const char* what) const {
  std::string why = what;
  const uint32_t before = counters_.service_unavailable;
  d.next.service_unavailable = before + 1;
  if (before >= options_.max_service_unavailable_retries) {
    d.reason = why + ": not retried, cross-region retry already used";
    return d;
  }
  if (f.is_single_master_write()) {
    d.reason = why + ": not retried, single-master write";
    return d;
  }
  if (f.preferred_location_count <= 1) {
    d.reason = why + ": not retried, no other preferred region";
    return d;
  }
  set_context(d, d.next.service_unavailable, true);
  // The index names the next preferred region only while the list stands
  // still; a mark that expires in between shifts it back onto this one.
  d.next.avoid_endpoint = f.endpoint;
  d.reason = why + ": next preferred region";
  return d;
}

retry_decision client_retry_policy::throttle(retry_decision d,
                                             const failure_signal& s,
                                             const char* what) const {
  auto v = evaluate_throttle(options_.throttle, counters_.throttle, s);
  d.next.throttle = v.next;
  d.retry = v.retry;
  d.delay = v.delay;
  if (v.retry)
    d.reason = std::string(what) + ": 429 retry " +
               std::to_string(v.next.attempts) + " after " +
               std::to_string(v.delay.count()) + " ms";
  else if (s.is_status(429))
    d.reason = std::string(what) + ": 429 not retried, budget spent";
  else
    d.reason = status_text(s) + ": not retried";
  return d;
}

resolve_input client_retry_policy::route(resolve_input base) const {
  if (counters_.has_context) {
    base.location_index = counters_.location_index;
    base.use_preferred = counters_.use_preferred;
    base.route_to_hub = counters_.route_to_hub;
    base.avoid_endpoint = counters_.avoid_endpoint;
  } else {
    base.location_index = 0;
    base.use_preferred = true;
    base.route_to_hub = false;
    base.avoid_endpoint.clear();
  }
  return base;
}

// -- partition_range_retry_policy ------------------------------------------

partition_range_retry_policy::partition_range_retry_policy(
    std::size_t preferred_location_count, throttle_options throttle)
    : throttle_(throttle),
      max_hops_(static_cast<uint32_t>(
          std::max<std::size_t>(1, preferred_location_count))) {}

retry_decision
partition_range_retry_policy::evaluate(const failure_signal& s,
                                       const std::string& endpoint) const {
  retry_decision d;
  d.next = counters_;
  d.next.avoid_endpoint.clear();
  d.location_index = counters_.location_index;
  // A refused or reset connection is as regional as a 503: hop too (the
  // reference hops only on statuses; its hedging strategy counts connection
  // failures as regional, and a dead region must not stall the map).
  const bool hop_signal = s.is_status(503) || s.is_status(500) ||
                          s.is(410, 1022) || s.is(403, 1008) ||
                          s.what == failure_signal::kind::connection_failure ||
                          s.what == failure_signal::kind::lost_after_send;
  if (hop_signal) {
    const uint32_t before = counters_.service_unavailable;
    d.next.service_unavailable = before + 1;
    if (before < max_hops_) {
      set_context(d, before + 1, true);
      d.next.avoid_endpoint = endpoint;
      d.reason =
          status_text(s) + ": next region, hop " + std::to_string(before + 1);
      return d;
    }
  }
  auto v = evaluate_throttle(throttle_, counters_.throttle, s);
  d.next.throttle = v.next;
  d.retry = v.retry;
  d.delay = v.delay;
  d.reason = status_text(s) + (v.retry ? ": throttle retry" : ": not retried");
  return d;
}

resolve_input partition_range_retry_policy::route(resolve_input base) const {
  base.location_index = counters_.location_index;
  base.use_preferred = true;
  base.route_to_hub = false;
  base.avoid_endpoint = counters_.avoid_endpoint;
  return base;
}

} // namespace georoute
