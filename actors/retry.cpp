#include "actors/retry.hpp"

#include "messages/error.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <variant>

namespace georoute {

namespace {

using policy_variant =
    std::variant<client_retry_policy, partition_range_retry_policy>;

// One loop-mode operation.
struct operation {
  metadata_request req;
  caf::typed_response_promise<transport::outcome> rp;
  std::optional<policy_variant> policy; // built with the first snapshot
  uint32_t attempts = 0;
  size_t ladder_step = 0;
  bool pinned = false; // a ladder step re-sends to the same endpoint
  bool in_flight = false;
  std::string endpoint;
  std::string region;
  std::optional<transport::outcome> last_failure;
  std::string last_region;
};

struct retry_state {
  retry_config cfg;
  retry_collaborators with;
  std::shared_ptr<const location_table> table;
  std::map<uint64_t, operation> ops;
  std::map<uint64_t, uint64_t> http_to_op;
  std::vector<uint64_t> waiting_for_snapshot;
  uint64_t next_id = 1;
  uint64_t detached = 0;
  retry_stats stats;
  static inline const char* name = "georoute.retry";
};

using self_ptr = retry_actor::stateful_pointer<retry_state>;

void update_live(retry_state& st) {
  st.stats.live = st.ops.size() + st.detached;
}

std::string status_text(const transport::outcome& o) {
  if (o.error != transport::failure::none)
    return std::string{transport::to_string(o.error)} + " (" + o.error_detail +
           ")";
  auto s = std::to_string(o.status);
  if (o.substatus != 0) s += "/" + std::to_string(o.substatus);
  return s;
}

// The last underlying failure, said so that people can act on it.
caf::error failure_error(const operation& op, const std::string& why) {
  const auto& o = *op.last_failure;
  std::string where = op.last_region.empty()
                          ? o.endpoint
                          : op.last_region + " (" + o.endpoint + ")";
  auto text = status_text(o) + " from " + where + " after " +
              std::to_string(op.attempts) +
              (op.attempts == 1 ? " attempt" : " attempts") + " for " +
              op.req.method + " " + op.req.path;
  if (!why.empty()) text += "; " + why;
  return make_error(classify_outcome(o), std::move(text));
}

void finish(self_ptr self, uint64_t op_id,
            caf::expected<transport::outcome> r) {
  auto& st = self->state;
  auto i = st.ops.find(op_id);
  if (i == st.ops.end()) return;
  if (r)
    i->second.rp.deliver(std::move(*r));
  else
    i->second.rp.deliver(r.error());
  st.ops.erase(i);
  update_live(st);
}

void schedule_attempt(self_ptr self, uint64_t op_id,
                      std::chrono::milliseconds delay) {
  // Even a zero back-off goes through the mailbox: other messages
  // interleave, and the attempt cap bounds the loop.
  if (delay.count() > 0)
    self->delayed_send(self, delay, attempt_atom_v, op_id);
  else
    self->send(self, attempt_atom_v, op_id);
}

std::vector<std::string> excluded_for(const retry_state& st,
                                      const metadata_request& req) {
  auto all = st.cfg.excluded_regions;
  all.insert(all.end(), req.excluded_regions.begin(),
             req.excluded_regions.end());
  return all;
}

policy_variant make_policy(const retry_state& st, const metadata_request& req) {
  if (req.policy == retry_policy_kind::partition_range)
    return partition_range_retry_policy{st.table->preferred_location_count(),
                                        st.cfg.client.throttle};
  return client_retry_policy{st.cfg.client};
}

void attempt(self_ptr self, uint64_t op_id) {
  auto& st = self->state;
  auto i = st.ops.find(op_id);
  if (i == st.ops.end() || i->second.in_flight) return;
  auto& op = i->second;
  if (!st.table) {
    st.waiting_for_snapshot.push_back(op_id);
    return;
  }
  if (op.attempts >= st.cfg.attempt_cap) {
    if (op.last_failure)
      finish(self, op_id,
             failure_error(op, "attempt cap of " +
                                   std::to_string(st.cfg.attempt_cap) +
                                   " reached"));
    else
      finish(self, op_id,
             make_error(errc::attempts_exhausted, "attempt cap reached"));
    return;
  }
  if (!op.policy) op.policy = make_policy(st, op.req);
  resolve_input in;
  in.op = op.req.op;
  in.is_document = false;
  in.excluded_regions = excluded_for(st, op.req);
  in = std::visit([&](const auto& p) { return p.route(in); }, *op.policy);
  if (op.pinned) in.pinned_endpoint = op.endpoint;
  auto now = self->clock().now();
  auto where = st.table->resolve(in, now);
  op.endpoint = where.endpoint;
  op.region = where.region;
  auto choice = choose_ladder(st.cfg.ladders, op.req.kind);
  const auto& ladder = *choice.ladder;
  transport::request req;
  req.method = op.req.method;
  req.endpoint = op.endpoint;
  req.target = op.req.path;
  req.headers = op.req.headers;
  req.body = op.req.body;
  req.rid_based = op.req.rid_based;
  req.timeout = ladder[std::min(op.ladder_step, ladder.size() - 1)].timeout;
  auto http_id = st.next_id++;
  st.http_to_op.emplace(http_id, op_id);
  op.in_flight = true;
  ++op.attempts;
  ++st.stats.attempts;
  if (op.attempts > 1) ++st.stats.retries;
  st.with.http->send(caf::actor_cast<caf::actor>(self), http_id,
                     std::move(req));
}

failure_signal signal_of(const transport::outcome& o) {
  if (o.error == transport::failure::none)
    return failure_signal::http(o.status, o.substatus, o.retry_after_ms);
  return failure_signal::connection();
}

void carry_out(self_ptr self, uint64_t op_id, const retry_decision& d) {
  auto& st = self->state;
  auto& op = st.ops.at(op_id);
  if (d.mark_read || d.mark_write) {
    auto ep = d.mark_endpoint.empty() ? op.endpoint : d.mark_endpoint;
    ++st.stats.marks;
    self->send(st.with.locations, mark_atom_v,
               region_mark{ep, d.mark_read, d.mark_write});
    // Apply locally too: the next attempt must not wait for the snapshot.
    st.table = std::make_shared<const location_table>(st.table->with_mark(
        ep, d.mark_read, d.mark_write, self->clock().now()));
  }
  if (d.clear_session_token && st.with.session_sink &&
      !op.req.collection_name.empty()) {
    ++st.stats.session_clears;
    caf::anon_send(st.with.session_sink, clear_session_atom_v,
                   op.req.collection_name);
  }
}

void on_outcome(self_ptr self, uint64_t http_id, transport::outcome& o) {
  auto& st = self->state;
  auto h = st.http_to_op.find(http_id);
  if (h == st.http_to_op.end()) return;
  auto op_id = h->second;
  st.http_to_op.erase(h);
  auto i = st.ops.find(op_id);
  if (i == st.ops.end()) {
    ++st.stats.late_completions; // the deadline tripped first
    return;
  }
  auto& op = i->second;
  op.in_flight = false;
  if (o.success()) {
    finish(self, op_id, std::move(o));
    return;
  }
  op.last_failure = o;
  op.last_region = op.region;
  // The HTTP ladder first: a timed-out (or 408) attempt climbs to the next
  // step on the same endpoint when the request kind allows it.
  bool timed_out = o.error == transport::failure::timeout;
  auto ladder = decide_ladder(choose_ladder(st.cfg.ladders, op.req.kind),
                              op.ladder_step, timed_out, o.status);
  if (ladder.climb) {
    ++op.ladder_step;
    op.pinned = true;
    schedule_attempt(self, op_id, ladder.delay);
    return;
  }
  op.ladder_step = 0;
  op.pinned = false;
  // A region that stays silent through the whole ladder is unavailable:
  // the failure counts as a connection failure (mark it, refresh, fail
  // over), not as a 503 that the reference retries once without marking.
  auto signal = signal_of(o);
  if (timed_out)
    signal = ladder.region_silent ? failure_signal::connection()
                                  : failure_signal::timed_out();
  auto now = self->clock().now();
  auto decision = std::visit(
      [&](auto& p) {
        if constexpr (std::is_same_v<std::decay_t<decltype(p)>,
                                     client_retry_policy>) {
          auto facts = facts_for(*st.table, op.req.op == op_kind::read, false,
                                 excluded_for(st, op.req), op.endpoint, now);
          return p.on_failure(signal, facts);
        } else {
          return p.on_failure(signal);
        }
      },
      *op.policy);
  // The clearing-session decorator: never changes the decision; when the
  // policy gives up on a name-based 404/1002 the tokens of the name go.
  if (op.req.policy == retry_policy_kind::clearing_session && !decision.retry &&
      o.status == 404 && o.substatus == 1002)
    decision.clear_session_token = true;
  carry_out(self, op_id, decision);
  if (!decision.retry) {
    ++st.stats.policy_refusals;
    finish(self, op_id, failure_error(op, decision.reason));
    return;
  }
  if (decision.refresh_account) {
    ++st.stats.refreshes;
    auto delay = decision.delay;
    // Wait for the refresh (the failover decision includes it), bounded by
    // the hard deadline, which can still fire meanwhile.
    self->request(st.with.endpoints, caf::infinite, refresh_atom_v,
                  decision.force_refresh)
        .then(
            [=](const database_account&) {
              schedule_attempt(self, op_id, delay);
            },
            [=](const caf::error&) { schedule_attempt(self, op_id, delay); });
    return;
  }
  schedule_attempt(self, op_id, decision.delay);
}

void on_deadline(self_ptr self, uint64_t op_id) {
  auto& st = self->state;
  auto i = st.ops.find(op_id);
  if (i == st.ops.end()) return;
  ++st.stats.deadline_trips;
  auto& op = i->second;
  auto limit = format_duration(st.cfg.hard_deadline);
  if (op.last_failure)
    finish(self, op_id,
           failure_error(op, "hard deadline of " + limit + " reached"));
  else
    finish(self, op_id,
           make_error(errc::deadline_exceeded,
                      "no attempt of " + op.req.method + " " + op.req.path +
                          " finished within the hard deadline of " + limit));
}

retry_actor::behavior_type retry_impl(self_ptr self, retry_config cfg,
                                      retry_collaborators with) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.with = std::move(with);
  self->request(st.with.locations, caf::infinite, subscribe_atom_v,
                caf::actor_cast<caf::actor>(self))
      .then([=](location_snapshot& snap) {
        auto& st = self->state;
        if (!st.table) st.table = snap.table;
        auto waiting = std::move(st.waiting_for_snapshot);
        for (auto id : waiting)
          attempt(self, id);
      });
  return {
      [=](execute_atom,
          metadata_request& req) -> caf::result<transport::outcome> {
        auto& st = self->state;
        auto id = st.next_id++;
        auto rp = self->make_response_promise<transport::outcome>();
        operation op;
        op.req = std::move(req);
        op.rp = rp;
        st.ops.emplace(id, std::move(op));
        ++st.stats.operations;
        update_live(st);
        self->delayed_send(self, st.cfg.hard_deadline, deadline_atom_v, id);
        schedule_attempt(self, id, std::chrono::milliseconds{0});
        return rp;
      },
      [=](detach_atom,
          document_request& req) -> caf::result<transport::outcome> {
        auto& st = self->state;
        if (!st.with.router)
          return make_error(errc::validation_error,
                            "detach-only mode needs a request router");
        auto rp = self->make_response_promise<transport::outcome>();
        ++st.detached;
        ++st.stats.operations;
        update_live(st);
        auto limit = st.cfg.hard_deadline;
        self->request(st.with.router, limit, route_atom_v, std::move(req))
            .then(
                [=](transport::outcome& o) mutable {
                  --self->state.detached;
                  update_live(self->state);
                  rp.deliver(std::move(o));
                },
                [=](caf::error& e) mutable {
                  auto& st = self->state;
                  --st.detached;
                  update_live(st);
                  if (e == caf::sec::request_timeout) {
                    ++st.stats.deadline_trips;
                    rp.deliver(
                        make_error(errc::deadline_exceeded,
                                   "the request pipeline did not finish within "
                                   "the hard deadline of " +
                                       format_duration(limit)));
                  } else {
                    rp.deliver(std::move(e));
                  }
                });
        return rp;
      },
      [=](stats_atom) { return self->state.stats; },
      [=](snapshot_atom, location_snapshot& snap) {
        if (snap.table) self->state.table = snap.table;
      },
      [=](http_done_atom, uint64_t http_id, transport::outcome& o) {
        on_outcome(self, http_id, o);
      },
      [=](attempt_atom, uint64_t op_id) { attempt(self, op_id); },
      [=](deadline_atom, uint64_t op_id) { on_deadline(self, op_id); },
  };
}

} // namespace

retry_config retry_config_from(const config::settings& s) {
  retry_config c;
  c.hard_deadline = s.retry.metadata_hard_deadline;
  c.attempt_cap = s.retry.metadata_attempt_cap;
  c.client.max_failover_retries = s.retry.failover_retries;
  c.client.failover_retry_interval = s.retry.failover_retry_interval;
  c.client.throttle.max_attempts = s.retry.throttle_retries;
  c.client.throttle.max_wait = s.retry.throttle_max_wait;
  c.ladders = s.http.ladders;
  c.excluded_regions = s.location.excluded_regions;
  return c;
}

retry_actor spawn_retry(caf::actor_system& sys, retry_config cfg,
                        retry_collaborators with) {
  return sys.spawn(retry_impl, std::move(cfg), std::move(with));
}

} // namespace georoute
