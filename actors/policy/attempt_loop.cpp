#include "actors/policy/attempt_loop.hpp"

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
  if (pinned_) in.pinned_endpoint = endpoint_;
  auto where = table.resolve(in, now);
  endpoint_ = std::move(where.endpoint);
  region_ = std::move(where.region);
  attempt_plan plan;
  plan.endpoint = endpoint_;
  plan.region = region_;
  plan.timeout = ladder()[std::min(ladder_step_, ladder().size() - 1)].timeout;
  if (auto* client = std::get_if<client_retry_policy>(&*policy_))
    plan.hub_header = client->hub_header(cfg_.op == op_kind::read);
  plan.number = ++attempts_;
  return plan;
}

loop_step attempt_loop::on_result(const attempt_result& r,
                                  const location_table& table, policy_time now,
                                  bool budget_spent) {
  loop_step step;
  if (r.success()) {
    step.next = loop_next::succeed;
    return step;
  }
  last_failure_ = r;
  last_region_ = region_;
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
  return decide(r, table, now, budget_spent, ladder);
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
