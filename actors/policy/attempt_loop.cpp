#include "georoute/actors/policy/attempt_loop.hpp"

#include <algorithm>

namespace georoute {

gone_kind classify_gone(int status, int substatus) {
  if (status != 410) return gone_kind::none;
  switch (substatus) {
  case 1002: // PartitionKeyRangeGone
  case 1007: // CompletingSplit
  case 1008: // CompletingPartitionMigration
    return gone_kind::partition_range;
  case 1000: // NameCacheIsStale
    return gone_kind::collection;
  case 1022:
    return gone_kind::lease_not_found;
  default:
    return gone_kind::other;
  }
}

const char* to_string(loop_next x) {
  switch (x) {
  case loop_next::attempt:
    return "attempt";
  case loop_next::after_refresh:
    return "after_refresh";
  case loop_next::refresh_ranges:
    return "refresh_ranges";
  case loop_next::refresh_collection:
    return "refresh_collection";
  case loop_next::succeed:
    return "succeed";
  case loop_next::fail:
    return "fail";
  case loop_next::fail_budget:
    return "fail_budget";
  }
  return "?";
}

attempt_loop::attempt_loop(attempt_loop_config cfg,
                           const timeout_ladders& ladders)
    : cfg_(std::move(cfg)),
      choice_(choose_ladder(ladders, cfg_.kind, cfg_.per_partition_failover)) {}

void attempt_loop::make_policy(const location_table& table) {
  if (cfg_.policy == loop_policy::partition_range)
    policy_.emplace(partition_range_retry_policy{
        table.preferred_location_count(), cfg_.client.throttle});
  else
    policy_.emplace(client_retry_policy{cfg_.client});
}

std::string attempt_loop::applicable_start(const location_table& table,
                                           const resolve_input& in,
                                           policy_time now) const {
  bool fell_back = false;
  std::vector<std::string> scratch;
  const auto& eps =
      table.applicable_ref(in.op, in.excluded_regions, now, fell_back, scratch);
  if (fell_back) return {}; // every region is down: the policy's choice
  auto wanted = normalize_endpoint(cfg_.start_endpoint);
  for (const auto& ep : eps) {
    if (normalize_endpoint(ep) != wanted) continue;
    // Unavailable endpoints are listed too, after the others: a mark or a
    // fleet demotion since the page before outweighs where it was served.
    if (table.is_unavailable(ep, in.op, now)) return {};
    if (in.op == op_kind::read) {
      auto region = table.region_of(ep);
      for (const auto& r : table.fleet_demoted_reads())
        if (same_region(r, region)) return {};
    }
    return ep;
  }
  return {};
}

result<attempt_plan> attempt_loop::next_attempt(const location_table& table,
                                                policy_time now) {
  if (attempts_ >= cfg_.attempt_cap)
    return problem{"attempt cap of " + std::to_string(cfg_.attempt_cap) +
                   " reached"};
  if (!policy_) make_policy(table);
  resolve_input in;
  in.op = cfg_.op;
  in.is_document = cfg_.is_document;
  in.excluded_regions = cfg_.excluded_regions;
  in = std::visit([&](const auto& p) { return p.route(std::move(in)); },
                  *policy_);
  if (pinned_)
    in.pinned_endpoint = endpoint_;
  else if (attempts_ == 0 && !cfg_.start_endpoint.empty())
    in.pinned_endpoint = applicable_start(table, in, now);
  attempt_plan plan;
  // Per-partition failover: the range's writes go where the service moved
  // them, and so does a read's hub retry (its hub is that region). The
  // service decides, so preferences and exclusions do not apply.
  if (!pinned_ && ppaf_in_play(table)) {
    auto* client = std::get_if<client_retry_policy>(&*policy_);
    bool hub_read = cfg_.op == op_kind::read && client != nullptr &&
                    client->hub_header(true);
    if (cfg_.op == op_kind::write || hub_read) {
      if (auto r = cfg_.ppaf->override_for(collection_rid_, range_id_)) {
        auto ep = table.account_read_endpoint(*r);
        if (!ep.empty()) {
          in.pinned_endpoint = std::move(ep);
          plan.ppaf_region = *r;
        }
      }
    }
  }
  auto where = table.resolve(in, now);
  out_key_.reset();
  out_ticket_ = {};
  out_kind_ = admission_kind::pass;
  out_reported_ = false;
  out_hedge_loss_ = false;
  if (breaker_applies(table) && !where.region.empty()) {
    auto& breaker = *cfg_.breaker;
    breaker_key key{collection_rid_, range_id_, where.region};
    if (where.route == resolve_route::pinned) {
      // A ladder step stays in its region unless the breaker now keeps this
      // range out of it: then it starts over where the breaker allows.
      auto a = breaker.admit(key, now);
      if (a.allowed()) {
        plan.breaker_consulted = true;
        plan.admission = a.kind;
        out_key_ = std::move(key);
        out_ticket_ = a.ticket;
        out_kind_ = a.kind;
      } else {
        plan.breaker_skipped.push_back(where.region);
        pinned_ = false;
        ladder_step_ = 0;
        in.pinned_endpoint.clear();
        where = table.resolve(in, now);
      }
    }
    if (where.route == resolve_route::applicable && !plan.breaker_consulted &&
        !where.region.empty()) {
      // The candidates: the applicable endpoints from the policy's pick on,
      // one per region.
      bool fell_back = false;
      std::vector<std::string> scratch;
      const auto& eps = table.applicable_ref(in.op, in.excluded_regions, now,
                                             fell_back, scratch);
      // The pick is one of `eps` as spelled there; normalized only if not.
      std::size_t start = eps.size();
      for (std::size_t i = 0; i < eps.size() && start == eps.size(); ++i)
        if (eps[i] == where.endpoint) start = i;
      if (start == eps.size()) {
        start = 0;
        auto picked = normalize_endpoint(where.endpoint);
        for (std::size_t i = 0; i < eps.size(); ++i)
          if (normalize_endpoint(eps[i]) == picked) {
            start = i;
            break;
          }
      }
      // A retry that steps past the region that just failed (a UE retry,
      // a partition-range hop) does not come back to it through the
      // breaker: if the breaker keeps the range out of every other region,
      // the choice falls back to the pick, as when every region is open.
      const auto avoid = in.avoid_endpoint.empty()
                             ? std::string{}
                             : normalize_endpoint(in.avoid_endpoint);
      std::vector<std::string> regions;
      std::vector<std::string> endpoints;
      regions.reserve(eps.size());
      endpoints.reserve(eps.size());
      for (std::size_t k = 0; k < eps.size(); ++k) {
        const auto& ep = eps[(start + k) % eps.size()];
        if (!avoid.empty() && eps.size() > 1 && normalize_endpoint(ep) == avoid)
          continue;
        auto region = table.region_of(ep);
        if (region.empty()) continue;
        bool seen = false;
        for (const auto& r : regions)
          seen = seen || same_region(r, region);
        if (seen) continue;
        regions.push_back(std::move(region));
        endpoints.push_back(ep);
      }
      if (auto c = breaker.choose(collection_rid_, range_id_, regions, now)) {
        bool fallback = c->admission.kind == admission_kind::fallback;
        for (std::size_t k = 0; k < c->skipped && k < regions.size(); ++k) {
          if (fallback && k == c->index) continue; // used anyway
          bool listed = false;
          for (const auto& r : plan.breaker_skipped)
            listed = listed || same_region(r, regions[k]);
          if (!listed) plan.breaker_skipped.push_back(regions[k]);
        }
        if (fallback) {
          const auto& used = regions[c->index];
          auto& sk = plan.breaker_skipped;
          sk.erase(std::remove_if(sk.begin(), sk.end(),
                                  [&](const std::string& r) {
                                    return same_region(r, used);
                                  }),
                   sk.end());
        }
        if (fallback && cfg_.optional_attempt) {
          plan.skip = true;
          plan.admission = admission_kind::blocked;
          plan.breaker_consulted = true;
          plan.region = regions[c->index];
          plan.endpoint = endpoints[c->index];
          return plan;
        }
        where.endpoint = endpoints[c->index];
        where.region = regions[c->index];
        plan.breaker_consulted = true;
        plan.admission = c->admission.kind;
        out_key_ = breaker_key{collection_rid_, range_id_, where.region};
        out_ticket_ = c->admission.ticket;
        out_kind_ = c->admission.kind;
      }
    }
  }
  endpoint_ = std::move(where.endpoint);
  region_ = std::move(where.region);
  plan.endpoint = endpoint_;
  plan.region = region_;
  plan.timeout = ladder()[std::min(ladder_step_, ladder().size() - 1)].timeout;
  if (auto* client = std::get_if<client_retry_policy>(&*policy_))
    plan.hub_header = client->hub_header(cfg_.op == op_kind::read);
  plan.number = ++attempts_;
  return plan;
}

// -- the circuit breaker -----------------------------------------------------

void attempt_loop::set_partition(std::string collection_rid,
                                 std::string range_id) {
  collection_rid_ = std::move(collection_rid);
  range_id_ = std::move(range_id);
}

bool attempt_loop::breaker_applies(const location_table& table) const {
  if (cfg_.breaker == nullptr || collection_rid_.empty() || range_id_.empty())
    return false;
  return cfg_.op == op_kind::read ||
         table.can_support_multiple_write_locations(cfg_.is_document);
}

breaker_report attempt_loop::report_outcome(const attempt_result& r,
                                            policy_time now) {
  breaker_report out;
  if (!out_key_ || out_reported_ || cfg_.breaker == nullptr) return out;
  out_reported_ = true;
  auto kind = !r.transport_failure ? transport_failure_kind::none
              : r.timed_out        ? transport_failure_kind::timeout
                                   : transport_failure_kind::connection;
  out.reported = true;
  out.probe = out_kind_ == admission_kind::probe;
  // A 429/3092 (the region is out of resources) on a write that consults
  // the breaker (a multi-write write) is a 503 for the retry policy, so it
  // is one for the breaker too: counted, not an answer that resets.
  int status = r.status;
  if (kind == transport_failure_kind::none && cfg_.op == op_kind::write &&
      r.status == 429 && r.substatus == 3092)
    status = 503;
  out.signal = breaker_signal_of(status, r.substatus, kind, r.request_sent);
  out.state =
      cfg_.breaker->record(*out_key_, cfg_.op, out.signal, out_ticket_, now);
  return out;
}

bool attempt_loop::record_hedge_loss(policy_time now) {
  if (!out_key_ || out_reported_ || out_hedge_loss_ || cfg_.breaker == nullptr)
    return false;
  out_hedge_loss_ = true;
  cfg_.breaker->record_hedge_win(*out_key_, out_ticket_, now);
  return true;
}

void attempt_loop::record_final(policy_time now) {
  if (!out_key_ || cfg_.breaker == nullptr) return;
  cfg_.breaker->record_primary_final(*out_key_, now);
}

bool attempt_loop::pinned_blocked(policy_time now) const {
  if (!pinned_ || cfg_.breaker == nullptr || collection_rid_.empty() ||
      range_id_.empty() || region_.empty())
    return false;
  return cfg_.breaker->blocked(breaker_key{collection_rid_, range_id_, region_},
                               now);
}

loop_step attempt_loop::on_result(const attempt_result& r,
                                  const location_table& table, policy_time now,
                                  bool budget_spent) {
  loop_step step;
  if (r.success()) {
    if (cfg_.op == op_kind::write && ppaf_in_play(table))
      cfg_.ppaf->on_success(collection_rid_, range_id_, region_,
                            table.write_region());
    step.next = loop_next::succeed;
    return step;
  }
  last_failure_ = r;
  last_region_ = region_;
  const bool maybe_applied =
      cfg_.op == op_kind::write &&
      (r.timed_out || (r.transport_failure && r.request_sent) ||
       (!r.transport_failure && r.status == 408 && r.substatus != 21013));
  if (maybe_applied) maybe_applied_ = true;
  // 1. Metadata moved: refresh it and route again; no region is at fault.
  auto gone = r.transport_failure ? gone_kind::none
                                  : classify_gone(r.status, r.substatus);
  if (cfg_.refresh_metadata_on_gone && !budget_spent &&
      metadata_refreshes_ < cfg_.max_metadata_refreshes &&
      (gone == gone_kind::partition_range || gone == gone_kind::collection)) {
    ++metadata_refreshes_;
    if (gone == gone_kind::partition_range) {
      step.next = loop_next::refresh_ranges;
      step.reason = "partition range gone: routing map refreshed";
    } else {
      step.next = loop_next::refresh_collection;
      step.reason = "collection recreated: collection refreshed";
    }
    return step;
  }
  // 1b. Per-partition failover: the range's write moves on (no region is
  // marked: only this range left it).
  if (auto s = ppaf_decide(r, table, now, budget_spent)) return *s;
  // 2. The HTTP ladder: the same endpoint again with a longer timeout.
  auto ladder = decide_ladder(choice_, ladder_step_, r.timed_out, r.status);
  if (ladder.climb && !budget_spent) {
    ++ladder_step_;
    pinned_ = true;
    step.next = loop_next::attempt;
    step.delay = ladder.delay;
    step.reason = "attempt timed out: next ladder step";
    step.ladder_climb = true;
    return step;
  }
  ladder_step_ = 0;
  pinned_ = false;
  // 2b. Writes that survive a hang: on a multi-write account a write that
  // may have been applied goes to the next write region, as if nothing had
  // been sent there (the region is marked; the caller recognises its own
  // first copy by its tracking id).
  if (maybe_applied && cfg_.write_retries && !r.success() &&
      table.can_support_multiple_write_locations(cfg_.is_document)) {
    attempt_result unsent = r;
    unsent.transport_failure = true;
    unsent.request_sent = false;
    unsent.timed_out = false;
    auto step = decide(unsent, table, now, budget_spent, ladder);
    step.reason = "write retried in the next write region (it may have "
                  "been applied: its tracking id tells): " +
                  step.reason;
    return step;
  }
  return decide(r, table, now, budget_spent, ladder);
}

bool attempt_loop::ppaf_in_play(const location_table& table) const {
  return cfg_.ppaf != nullptr && !collection_rid_.empty() &&
         !range_id_.empty() &&
         ppaf_applies(cfg_.ppaf->options(), table, op_kind::write,
                      cfg_.is_document);
}

std::optional<loop_step> attempt_loop::ppaf_decide(const attempt_result& r,
                                                   const location_table& table,
                                                   policy_time now,
                                                   bool budget_spent) {
  if (cfg_.op != op_kind::write || !ppaf_in_play(table)) return std::nullopt;
  auto trigger =
      ppaf_trigger_of(r.transport_failure, r.timed_out, r.status, r.substatus);
  if (!trigger) return std::nullopt;
  auto move = cfg_.ppaf->on_failure(collection_rid_, range_id_, region_,
                                    *trigger, table.available_read_regions(),
                                    table.write_region(), now);
  bool moved = move.what == ppaf_move::kind::moved ||
               move.what == ppaf_move::kind::homing;
  // A 403/3 was never applied: retry at once. A 503 is retried once (the
  // reference SDKs retry a single-write account's write on 503 only with
  // PPAF on). A 408 or a client timeout may have been applied: the range
  // moves for the next writes, this one is not retried here.
  // With write retries, a write that may have been applied follows its
  // range too (its caller recognises its own first copy).
  bool maybe = *trigger == ppaf_trigger::client_timeout ||
               *trigger == ppaf_trigger::server_timeout;
  bool retry = moved && !budget_spent &&
               (*trigger == ppaf_trigger::write_forbidden ||
                (*trigger == ppaf_trigger::service_unavailable &&
                 ppaf_503_retries_ < 1) ||
                (maybe && cfg_.write_retries));
  if (!retry) return std::nullopt;
  if (*trigger == ppaf_trigger::service_unavailable) ++ppaf_503_retries_;
  ladder_step_ = 0;
  pinned_ = false;
  loop_step step;
  step.next = loop_next::attempt;
  step.reason = std::string{"per-partition failover: "} + to_string(*trigger) +
                " from " + region_ + ", range " + range_id_ +
                (move.what == ppaf_move::kind::homing
                     ? " tries the write region " + move.region + " first"
                     : "'s writes go to " + move.region);
  return step;
}

loop_step attempt_loop::decide(const attempt_result& r,
                               const location_table& table, policy_time now,
                               bool budget_spent,
                               const ladder_decision& ladder) {
  loop_step step;
  if (!policy_) make_policy(table);
  auto signal = signal_for(r, ladder);
  auto decision = std::visit(
      [&](auto& p) {
        if constexpr (std::is_same_v<std::decay_t<decltype(p)>,
                                     client_retry_policy>) {
          auto facts =
              facts_for(table, cfg_.op == op_kind::read, cfg_.is_document,
                        cfg_.excluded_regions, endpoint_, now);
          return p.on_failure(signal, facts);
        } else {
          return p.on_failure(signal, endpoint_);
        }
      },
      *policy_);
  if (cfg_.policy == loop_policy::clearing_session &&
      clearing_session_clears(decision.retry, cfg_.name_based, r.status,
                              r.substatus))
    decision.clear_session_token = true;
  auto& fx = step.effects;
  if (decision.mark_read || decision.mark_write) {
    fx.mark_endpoint =
        decision.mark_endpoint.empty() ? endpoint_ : decision.mark_endpoint;
    fx.mark_read = decision.mark_read;
    fx.mark_write = decision.mark_write;
  }
  // A refresh belongs to a retry: a decision that gives up refreshes nothing.
  fx.refresh_account = decision.retry && decision.refresh_account;
  fx.force_refresh = fx.refresh_account && decision.force_refresh;
  fx.fresh_refresh = fx.refresh_account && decision.fresh_refresh;
  fx.clear_session = decision.clear_session_token;
  step.reason = decision.reason;
  step.delay = decision.delay;
  if (!decision.retry) {
    step.next = loop_next::fail;
    step.policy_refused = true;
    return step;
  }
  if (budget_spent) {
    step.next = loop_next::fail_budget;
    return step;
  }
  step.next =
      fx.refresh_account ? loop_next::after_refresh : loop_next::attempt;
  return step;
}

} // namespace georoute
