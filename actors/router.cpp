#include "actors/router.hpp"

#include "actors/collection_cache.hpp"
#include "actors/home_thread.hpp"
#include "actors/internal.hpp"
#include "actors/policy/attempt_loop.hpp"
#include "actors/policy/deadline_queue.hpp"
#include "actors/policy/epk.hpp"
#include "actors/policy/hedge_budget.hpp"
#include "actors/policy/hedged_operation.hpp"
#include "actors/policy/hedging.hpp"
#include "actors/policy/lru_cache.hpp"
#include "actors/policy/metadata_rules.hpp"
#include "actors/policy/node_pool.hpp"
#include "actors/policy/operation_histograms.hpp"
#include "actors/policy/partition_breaker.hpp"
#include "actors/policy/routing_map.hpp"
#include "actors/policy/session_container.hpp"
#include "actors/policy/snapshot_holder.hpp"
#include "actors/policy/write_copy.hpp"
#include "actors/policy/write_tracking.hpp"
#include "actors/query_executor.hpp"
#include "actors/router_wire.hpp"
#include "actors/timeout_cancels.hpp"
#include "messages/error.hpp"

#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <optional>
#include <random>

namespace georoute {

namespace {

// Messages only this file can name: the next attempt, the deadline sweep,
// an HTTP completion.
struct rt_attempt {
  uint64_t op = 0;
};
struct rt_budget_tick {
  caf::actor_clock::time_point due;
};
struct rt_http_done {
  uint64_t op = 0;
  uint32_t arm = 0; // 0: the primary; 1..: a hedge
  transport::outcome outcome;
};

} // namespace

} // namespace georoute

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::rt_attempt)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::rt_budget_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::rt_http_done)

namespace georoute {

namespace {

using clock_type = caf::actor_clock::clock_type;

using router_impl_actor = router_actor::extend<
    caf::reacts_to<snapshot_atom, location_snapshot>,
    caf::reacts_to<engine_wiring>, caf::reacts_to<rt_attempt>,
    caf::reacts_to<rt_budget_tick>, caf::reacts_to<rt_http_done>>;

using map_ptr = std::shared_ptr<const routing_map>;

// What an operation waits for between attempts.
enum class waiting_for {
  nothing,
  snapshot,
  collection,
  ranges,
  refresh,
  backoff,
  response
};

// One data-plane operation.
struct data_operation {
  data_request req;
  std::string link; // normalized collection link
  caf::typed_response_promise<data_response> rp;
  clock_type::time_point started;
  std::chrono::milliseconds budget{0};
  clock_type::time_point
      deadline; // started + budget; in router_state::deadlines
  bool budget_spent = false;
  waiting_for waiting = waiting_for::nothing;
  // The collaborator asked while waiting for a collection, ranges or a
  // refresh: its down message may come after the supervisor re-wired us to a
  // successor, so it is matched against this, not the current handle.
  caf::actor_addr waiting_on;
  // Shared with the router's collection LRU: a hit copies a pointer, not
  // the collection's strings and key definition.
  std::shared_ptr<const collection_info> coll;
  std::string epk;
  const partition_key_range* range = nullptr; // in `map`
  map_ptr map;
  // The attempt loop (built when the operation starts): endpoint choice,
  // ladder, retry policy, attempt count.
  std::optional<attempt_loop> loop;
  // The primary's last attempt timed out and its next ladder step waits
  // out the step's pause (`waiting == backoff`).
  bool climbing = false;
  std::string endpoint;
  std::string region;
  bool range_refreshed = false; // a range-targeted query refreshed its map
  std::optional<transport::outcome> last_failure;
  std::string last_region;
  diagnostics diag;
  clock_type::time_point attempt_started;
  size_t primary_record = 0; // diag.attempts index of arm 0's attempt
  // Hedging. Arm 0 is the loop above, with its retries; the hedge (pure,
  // hedged_operation.hpp) owns arms i >= 1 and decides when each goes and
  // what its answer means. The router keeps what the wire needs of them.
  struct arm_wire {
    clock_type::time_point started;
    size_t record = 0; // diag.attempts index
  };
  // Until the first hedge is due only its time is known: the regions are
  // chosen then (most reads have answered by that time).
  std::optional<hedge_intent> hedge_pending;
  std::optional<hedged_operation> hedge;
  std::vector<arm_wire> arms;                      // arms[i - 1] is arm i
  std::optional<clock_type::time_point> hedge_due; // in `deadlines`
  std::optional<transport::outcome> last_answer;   // of any arm, for the end
  std::string last_answer_region;
  // Writes that survive a hang: retried where another region takes them;
  // creates, replaces and upserts carry `tracking_id` in their body.
  bool write_retries = false;
  std::string tracking_id;
  // A 409/412 that may be this write's own echo, while its read-back runs.
  std::optional<transport::outcome> echo;
  std::string echo_region;
  size_t echo_record = 0; // diag.attempts index of the read-back
  clock_type::time_point echo_started;
};

// An arm still in flight when its operation ended: its answer is dropped,
// but what it saw still marks regions. Its loop goes on up the timeout
// ladder on the same endpoint (so a hung region is still found silent and
// marked, as without hedging), and stops at anything else.
struct late_arm {
  attempt_loop loop;
  data_request req;
  std::string link;
  std::string session_token;
};

struct router_state {
  router_config cfg;
  router_collaborators with;
  retry_actor pipeline;
  snapshot_holder snap;
  lru_cache<std::string, std::shared_ptr<const collection_info>> collections{
      1};                                  // by link
  lru_cache<std::string, map_ptr> maps{1}; // by rid
  session_container sessions{10000};       // by collection rid and range
  // The live operations; their nodes (an operation is large) are reused,
  // up to a few hundred kept.
  std::unique_ptr<node_pool> ops_pool = std::make_unique<node_pool>(256);
  using op_entry = std::pair<const uint64_t, data_operation>;
  std::map<uint64_t, data_operation, std::less<uint64_t>,
           pool_allocator<op_entry>>
      ops{std::less<uint64_t>{}, pool_allocator<op_entry>{ops_pool.get()}};
  // The budgets and hedge times of the live operations, served by one
  // timer message: each operation's budget, and its hedge's next wake-up.
  deadline_queue deadlines;
  // Hedging: the budget (a share of hedged reads), answer times per region
  // (adaptive thresholds), and the arms of ended operations still out.
  hedge_budget hedge_allowance;
  region_latencies latencies;
  std::map<std::pair<uint64_t, uint32_t>, late_arm> late;
  // The per-partition circuit breaker; none when switched off. The attempt
  // loops hold a pointer to it: it lives as long as the state.
  std::optional<partition_breaker> breaker;
  // Per-partition failover overrides of single-write accounts' writes; the
  // attempt loops hold a pointer to it, as to the breaker.
  partition_failover ppaf;
  // Tracking ids of writes that survive a hang.
  std::mt19937_64 rng{std::random_device{}()};
  uint64_t next_id = 1;
  // A caller's request timeout goes when its answer is delivered (see
  // `answer`).
  timeout_cancels cancels;
  router_stats stats;
  // Duration and request charge per (operation, region, status, error) of
  // every finished operation: the data plane's histograms.
  operation_histograms histograms;
  static inline const char* name = "georoute.router";
};

using self_ptr = router_impl_actor::stateful_pointer<router_state>;

constexpr const char* who = "the request router (georoute.router)";

int64_t micros(clock_type::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

std::string describe(const data_operation& op) {
  auto what = std::string{to_string(op.req.op)} + " of ";
  if (op.req.op == data_op::query || op.req.op == data_op::create ||
      op.req.op == data_op::upsert)
    return what + op.link;
  return what + op.link + "/docs/" + op.req.id;
}

std::string session_token_for(const router_state& st, const data_operation& op);

void forget_deadlines(router_state& st, uint64_t id, const data_operation& op) {
  st.deadlines.remove({id, deadline_slot::end}, op.deadline);
  if (op.hedge_due)
    st.deadlines.remove({id, deadline_slot::hedge}, *op.hedge_due);
}

void send_late(self_ptr self, uint64_t id, uint32_t arm, late_arm late,
               const attempt_plan& plan);

// What an ended operation still had out goes to `late`: its answers still
// mark regions. The primary follows `abandon_primary` (the retry actor's
// rule too): an attempt in flight is settled when it answers; a ladder step
// pending after a timeout is sent now (a hung region is still found out),
// unless the budget was spent (then the loop climbs no further anyway).
// Counts the hedges into the diagnostics.
void settle_arms(self_ptr self, uint64_t id, data_operation& op) {
  auto& st = self->state;
  if (!op.loop) return;
  // A read-back in flight is not the primary: its answer is dropped.
  bool primary_out = op.waiting == waiting_for::response && !op.echo;
  bool climbing = op.waiting == waiting_for::backoff && op.climbing;
  auto fate = abandon_primary(primary_out, climbing, op.budget_spent);
  if (fate == primary_fate::nothing && !op.hedge) return;
  auto token = session_token_for(st, op);
  switch (fate) {
  case primary_fate::settle_in_flight:
    st.late.emplace(std::make_pair(id, uint32_t{0}),
                    late_arm{std::move(*op.loop), op.req, op.link, token});
    ++op.diag.abandoned_arms;
    break;
  case primary_fate::climb_now:
    if (!st.snap.table()) break;
    if (auto plan = continue_abandoned_climb(*op.loop, *st.snap.table(),
                                             self->clock().now())) {
      send_late(self, id, 0,
                late_arm{std::move(*op.loop), op.req, op.link, token}, *plan);
      ++op.diag.abandoned_arms;
    }
    break;
  case primary_fate::nothing:
    break;
  }
  if (!op.hedge) return;
  for (auto& [arm, loop] : op.hedge->abandon()) {
    st.late.emplace(std::make_pair(id, static_cast<uint32_t>(arm)),
                    late_arm{std::move(loop), op.req, op.link, token});
    ++op.diag.abandoned_arms;
  }
  op.diag.hedges = static_cast<uint32_t>(op.hedge->hedges_sent());
}

// -- counters and histograms --------------------------------------------------

router_stats current_stats(const router_state& st) {
  auto s = st.stats;
  s.live = st.ops.size();
  s.deadlines_tracked = st.deadlines.size();
  s.deadline_timers_pending = st.deadlines.timers_pending();
  if (st.breaker) {
    const auto& c = st.breaker->counters();
    s.breaker_opened = c.opened;
    s.breaker_probes = c.probes_started;
    s.breaker_closed = c.closed;
    s.breaker_reopened = c.reopened;
    s.breaker_tracked = st.breaker->size();
  }
  return s;
}

operation_series to_series(const operation_histogram& h) {
  operation_series s;
  s.operation = operation_name(static_cast<data_op>(h.operation));
  s.region = h.region;
  s.status_code = h.status;
  if (h.error != 0) s.error_type = to_string(static_cast<errc>(h.error));
  s.count = h.count;
  s.duration_sum = h.duration_sum;
  s.duration_buckets.assign(h.duration.begin(), h.duration.end());
  s.request_charge_sum = h.charge_sum;
  s.request_charge_buckets.assign(h.charge.begin(), h.charge.end());
  return s;
}

// One finished operation into the histograms: its whole duration, every
// attempt's charge, under the region whose answer ended it.
void record_operation(router_state& st, const data_operation& op,
                      const std::string& region, int status, errc code,
                      clock_type::time_point now) {
  auto seconds = std::chrono::duration<double>(now - op.started).count();
  st.histograms.record(static_cast<uint8_t>(op.req.op), region, status,
                       static_cast<uint8_t>(code), seconds,
                       op.diag.request_charge);
}

void primary_final(router_state& st, data_operation& op, policy_time now);

// Delivers an operation's answer, and the caller's request timeout goes
// with it (actors/timeout_cancels.hpp).
template <class T>
void answer(self_ptr self, caf::response_promise& rp, T&& x) {
  self->state.cancels.answer(self, rp, std::forward<T>(x));
}

// Takes `o`'s body and headers into the response: callers do not read it
// afterwards.
void finish_ok(self_ptr self, uint64_t id, transport::outcome& o,
               uint32_t arm = 0) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end()) return;
  auto& op = i->second;
  auto r = to_response(std::move(o));
  auto rec = arm == 0 ? op.primary_record : op.arms[arm - 1].record;
  if (op.hedge && op.hedge->hedges_sent() > 0) {
    op.diag.attempts[rec].winner = true;
    if (arm > 0) ++st.stats.hedges_won;
  }
  // (A hedge's win against arm 0 was recorded when its answer came.)
  auto now = self->clock().now();
  if (arm == 0) primary_final(st, op, now);
  op.diag.total_us = micros(now - op.started);
  record_operation(st, op,
                   rec < op.diag.attempts.size() ? op.diag.attempts[rec].region
                                                 : op.region,
                   r.status, errc::none, now);
  op.diag.metadata_refreshes = op.loop ? op.loop->metadata_refreshes() : 0;
  settle_arms(self, id, op);
  r.diag = std::move(op.diag);
  r.request_charge = r.diag.request_charge;
  r.hedge_charge = r.diag.hedge_charge;
  if (st.cfg.log.enabled(log_level::trace))
    st.cfg.log.log(log_level::trace, router_state::name, "operation.done",
                   describe(op) + ": " + std::to_string(r.status) + " after " +
                       std::to_string(r.diag.attempts.size()) +
                       " attempts in " + std::to_string(r.diag.total_us) +
                       "us");
  answer(self, op.rp, std::move(r));
  forget_deadlines(st, id, op);
  st.ops.erase(i);
  ++st.stats.succeeded;
}

void finish_error(self_ptr self, uint64_t id, errc code, std::string text) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end()) return;
  auto& op = i->second;
  auto now = self->clock().now();
  op.diag.total_us = micros(now - op.started);
  // The region and status of the last answer (none: the last attempt's
  // region, or no region when nothing was sent).
  const std::string* region = &op.last_region;
  if (region->empty() && !op.diag.attempts.empty())
    region = &op.diag.attempts.back().region;
  record_operation(st, op, *region,
                   op.last_failure ? op.last_failure->status : 0, code, now);
  op.diag.metadata_refreshes = op.loop ? op.loop->metadata_refreshes() : 0;
  settle_arms(self, id, op);
  if (st.cfg.log.enabled(log_level::debug))
    st.cfg.log.log(log_level::debug, router_state::name, "operation.failed",
                   std::string{to_string(code)} + ": " + text);
  answer(self, op.rp, make_error(code, std::move(text), op.diag));
  forget_deadlines(st, id, op);
  st.ops.erase(i);
  ++st.stats.failed;
}

// The last underlying failure, said so that people can act on it.
void finish_failure(self_ptr self, uint64_t id, const std::string& why) {
  auto& op = self->state.ops.at(id);
  if (!op.last_failure) {
    finish_error(self, id, errc::deadline_exceeded,
                 describe(op) + ": no attempt finished; " + why);
    return;
  }
  const auto& o = *op.last_failure;
  auto attempts = op.loop->attempts() +
                  static_cast<uint32_t>(op.hedge ? op.hedge->hedges_sent() : 0);
  finish_error(self, id, classify_outcome(o),
               failure_text(o, op.last_region, attempts, describe(op), why));
}

std::vector<std::string> excluded_for(const router_state& st,
                                      const data_operation& op) {
  return merged_exclusions(st.cfg.excluded_regions,
                           op.req.options.excluded_regions);
}

op_kind op_of(const data_operation& op) {
  return is_write(op.req.op) ? op_kind::write : op_kind::read;
}

// The write operation of a request (a write's op; create otherwise).
write_op write_op_of(data_op op) {
  return op == data_op::upsert    ? write_op::upsert
         : op == data_op::replace ? write_op::replace
         : op == data_op::remove  ? write_op::remove
                                  : write_op::create;
}

// Why a region is marked, for the location cache's log; built only when
// that line can be logged.
std::string mark_reason(const router_state& st, const transport::outcome* o) {
  if (o == nullptr || !st.cfg.log.enabled(log_level::warn)) return {};
  return describe_outcome(*o) + " (router)";
}

// -- the circuit breaker ------------------------------------------------------

// Moves the breaker's transitions into `op`'s diagnostics (when an
// operation caused them); the counters in `router_stats` count them all.
void log_transition(const router_state& st, const breaker_transition& t) {
  const auto& log = st.cfg.log;
  // Every transition is an event of the range in the region, never of a
  // request: at most one per open period.
  const char* event = "breaker.opened"; // closed -> open
  auto level = log_level::warn;
  switch (t.to) {
  case breaker_state::probing:
    event = "breaker.probe";
    level = log_level::info;
    break;
  case breaker_state::half_open:
    event = "breaker.half_open";
    level = log_level::info;
    break;
  case breaker_state::closed:
    event = "breaker.closed";
    level = log_level::info;
    break;
  case breaker_state::open:
    if (t.from != breaker_state::closed) event = "breaker.reopened";
    break;
  }
  if (!log.enabled(level)) return;
  log.log(level, router_state::name, event,
          t.key.region + " range " + t.key.range_id + " of collection " +
              t.key.collection_rid + ": " + to_string(t.from) + " -> " +
              to_string(t.to) + " (" + to_string(t.reason) + ")");
}

void note_transitions(router_state& st, data_operation* op) {
  if (!st.breaker) return;
  for (auto& t : st.breaker->drain_transitions()) {
    log_transition(st, t);
    if (op == nullptr) continue;
    op->diag.breaker_transitions.push_back(
        t.key.region + " range " + t.key.range_id + ": " + to_string(t.from) +
        " -> " + to_string(t.to) + " (" + to_string(t.reason) + ")");
  }
}

// What the breaker said about an attempt, for its record.
void note_admission(router_state& st, attempt_record& rec,
                    const attempt_plan& plan) {
  rec.breaker_skipped = plan.breaker_skipped;
  if (!plan.breaker_skipped.empty()) ++st.stats.breaker_skips;
  switch (plan.admission) {
  case admission_kind::probe:
    rec.breaker_admission = "probe";
    break;
  case admission_kind::trial:
    rec.breaker_admission = "trial";
    break;
  case admission_kind::fallback:
    rec.breaker_admission = "fallback";
    break;
  default:
    break;
  }
}

// Hands one attempt's outcome to the breaker (the loop holds its ticket).
void report_to_breaker(router_state& st, data_operation* op, attempt_loop& loop,
                       const transport::outcome& o, policy_time now) {
  if (!st.breaker) return;
  loop.report_outcome(attempt_result_of(o), now);
  note_transitions(st, op);
}

// The range the operation's next attempts are for.
void set_partition(data_operation& op, attempt_loop& loop) {
  if (op.coll && op.range)
    loop.set_partition(op.coll->rid, op.range->id);
  else
    loop.set_partition({}, {});
}

// The primary's answer is the operation's result.
void primary_final(router_state& st, data_operation& op, policy_time now) {
  if (!st.breaker || !op.loop) return;
  op.loop->record_final(now);
  note_transitions(st, &op);
}

// A routing map replaced `old`: forget the breaker entries of ranges it no
// longer has (the parents of a split or merge).
void forget_dropped_ranges(router_state& st, const std::string& rid,
                           const map_ptr& old, const map_ptr& fresh,
                           policy_time now) {
  if (!old || !fresh || old == fresh) return;
  for (const auto& r : old->ranges()) {
    if (!fresh->is_gone(r.id) && fresh->range_by_id(r.id) != nullptr) continue;
    if (st.breaker) st.breaker->forget_range(rid, r.id, now);
    // A per-partition failover override of a parent: its children find
    // their own place (a 403/3 moves them again).
    st.ppaf.forget_range(rid, r.id);
  }
  note_transitions(st, nullptr);
}

// A new table: per-partition failover overrides whose region left the
// account are dropped (the range's writes go to the write region again).
void forget_departed_regions(router_state& st) {
  if (st.ppaf.size() > 0 && st.snap.table())
    st.ppaf.retain_regions(st.snap.table()->available_read_regions());
}

void resolve_collection(self_ptr self, uint64_t id, bool force);
void resolve_range(self_ptr self, uint64_t id, bool refresh);
void attempt(self_ptr self, uint64_t id);

void schedule_attempt(self_ptr self, uint64_t id,
                      std::chrono::milliseconds delay) {
  auto& op = self->state.ops.at(id);
  op.waiting = waiting_for::backoff;
  if (delay.count() > 0) {
    ++self->state.stats.timers_armed;
    self->delayed_send(self, delay, rt_attempt{id});
  } else
    self->send(self, rt_attempt{id});
}

// -- metadata ---------------------------------------------------------------

void resolve_collection(self_ptr self, uint64_t id, bool force) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  if (!force) {
    if (const auto* hit = st.collections.get(op.link)) {
      op.coll = *hit;
      resolve_range(self, id, false);
      return;
    }
  }
  if (!st.with.collections) {
    finish_error(self, id, errc::validation_error,
                 describe(op) + ": the router has no collection cache");
    return;
  }
  auto obsolete = force && op.coll ? op.coll->rid : std::string{};
  op.waiting = waiting_for::collection;
  op.waiting_on = st.with.collections.address();
  self->request(st.with.collections, caf::infinite, by_name_atom_v, op.link,
                force, obsolete)
      .then(
          [=](collection_info& c) {
            auto& st = self->state;
            auto i = st.ops.find(id);
            if (i == st.ops.end()) return;
            auto& op = i->second;
            if (op.coll && op.coll->rid != c.rid) {
              // Recreated under the same name: its session tokens are dead.
              st.sessions.clear_by_rid(op.coll->rid);
              st.maps.erase(op.coll->rid);
            }
            auto shared = std::make_shared<const collection_info>(std::move(c));
            st.collections.put(op.link, shared);
            op.coll = std::move(shared);
            op.diag.collection_rid = op.coll->rid;
            resolve_range(self, id, false);
          },
          [=](caf::error& e) {
            auto& st = self->state;
            auto i = st.ops.find(id);
            if (i == st.ops.end()) return;
            finish_error(self, id,
                         code_of(e) == errc::none ? errc::collaborator_down
                                                  : code_of(e),
                         "resolving the collection of " + describe(i->second) +
                             ": " + context_of(e));
          });
}

void locate(self_ptr self, uint64_t id) {
  auto& op = self->state.ops.at(id);
  auto found =
      locate_range(*op.map, op.req.range_id, op.epk, op.range_refreshed);
  switch (found.verdict) {
  case range_verdict::found:
    op.range = found.range;
    op.diag.range_id = op.range->id;
    attempt(self, id);
    return;
  case range_verdict::refresh_map:
    op.range_refreshed = true;
    resolve_range(self, id, true);
    return;
  case range_verdict::gone:
    finish_error(self, id, errc::partition_range_gone,
                 describe(op) + ": partition-key range " + op.req.range_id +
                     " of collection " + op.coll->rid +
                     " is gone (it split or merged); read its successors");
    return;
  case range_verdict::no_range_for_epk:
    finish_error(self, id, errc::protocol_violation,
                 describe(op) + ": no partition-key range of collection " +
                     op.coll->rid + " holds EPK " + op.epk);
    return;
  }
}

void resolve_range(self_ptr self, uint64_t id, bool refresh) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  if (op.epk.empty() && op.req.range_id.empty()) {
    auto epk =
        epk_for(op.coll->partition_key, op.req.options.partition_key_json);
    if (!epk) {
      finish_error(self, id, errc::validation_error,
                   describe(op) + ": " + epk.error().what);
      return;
    }
    op.epk = *epk;
  }
  const auto& rid = op.coll->rid;
  if (!refresh) {
    if (const auto* hit = st.maps.get(rid)) {
      op.map = *hit;
      locate(self, id);
      return;
    }
  }
  if (!st.with.pkranges) {
    finish_error(self, id, errc::validation_error,
                 describe(op) + ": the router has no partition-range cache");
    return;
  }
  // A refresh names the map we hold: the cache refetches only if nobody
  // refreshed since.
  auto known = refresh && op.map ? op.map->etag() : std::string{};
  op.waiting = waiting_for::ranges;
  op.waiting_on = st.with.pkranges.address();
  self->request(st.with.pkranges, caf::infinite, pkranges_atom_v, rid, known)
      .then(
          [=](routing_snapshot& snap) {
            auto& st = self->state;
            auto i = st.ops.find(id);
            if (i == st.ops.end()) return;
            if (const auto* old = st.maps.get(snap.collection_rid))
              forget_dropped_ranges(st, snap.collection_rid, *old, snap.map,
                                    self->clock().now());
            st.maps.put(snap.collection_rid, snap.map);
            i->second.map = snap.map;
            locate(self, id);
          },
          [=](caf::error& e) {
            auto& st = self->state;
            auto i = st.ops.find(id);
            if (i == st.ops.end()) return;
            finish_error(self, id,
                         code_of(e) == errc::none ? errc::collaborator_down
                                                  : code_of(e),
                         "resolving the partition range of " +
                             describe(i->second) + ": " + context_of(e));
          });
}

// -- attempts ---------------------------------------------------------------

// The session token a read of `op`'s range sends: the caller's own, or the
// merged token of the range (after a split, the parent's serves a child).
std::string session_token_for(const router_state& st,
                              const data_operation& op) {
  switch (session_token_source(is_write(op.req.op),
                               op.req.options.consistency_level,
                               !op.req.options.session_token.empty())) {
  case session_source::none:
    return {};
  case session_source::caller:
    return op.req.options.session_token;
  case session_source::container:
    break;
  }
  if (!op.range) return {};
  return st.sessions.header_for(op.coll->rid, op.range->id, op.range->parents);
}

void capture_session(router_state& st, const data_operation& op,
                     const transport::outcome& o) {
  // A malformed header is counted by the container, never fails a request.
  if (!o.session_token.empty() && op.coll)
    st.sessions.capture(op.coll->rid, op.link, o.session_token);
}

void plan_hedge(self_ptr self, uint64_t id);
bool take_echo(self_ptr self, uint64_t id, const transport::outcome& o,
               const std::string& region);

void attempt(self_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end()) return;
  auto& op = i->second;
  if (op.budget_spent) {
    finish_failure(self, id,
                   "operation budget of " + format_duration(op.budget) +
                       " spent");
    return;
  }
  if (!st.snap.table()) {
    op.waiting = waiting_for::snapshot;
    return;
  }
  // The one place where endpoint choice happens: the attempt loop resolves
  // on the router's snapshot and asks the circuit breaker of the range.
  set_partition(op, *op.loop);
  auto plan = op.loop->next_attempt(*st.snap.table(), self->clock().now());
  note_transitions(st, &op);
  if (!plan) {
    finish_failure(self, id, plan.error().what);
    return;
  }
  op.endpoint = plan->endpoint;
  op.region = plan->region;
  wire_target t;
  t.collection_link = op.link;
  t.endpoint = op.endpoint;
  t.session_token = session_token_for(st, op);
  t.hub_header = plan->hub_header;
  t.timeout = plan->timeout;
  auto req = to_wire(op.req, t);
  ++st.stats.attempts;
  op.waiting = waiting_for::response;
  op.climbing = false;
  op.attempt_started = self->clock().now();
  attempt_record rec;
  rec.region = op.region;
  rec.endpoint = op.endpoint;
  rec.started_us = micros(op.attempt_started - op.started);
  note_admission(st, rec, *plan);
  op.primary_record = op.diag.attempts.size();
  op.diag.attempts.push_back(std::move(rec));
  auto hdl = caf::actor_cast<caf::actor>(self);
  st.with.http->send(std::move(req), [hdl, id](transport::outcome o) {
    caf::anon_send(hdl, rt_http_done{id, 0, std::move(o)});
  });
  if (plan->number == 1) plan_hedge(self, id);
}

// Carries out the side effects of a step: they always run, whether the
// operation goes on or not (its budget may be spent, its caller gone).
//
// Counted in `router_stats`: a decision is complete when every side effect
// it started has been answered (the mark confirmed, the refresh done or
// failed). `pending` counts them down; the last one completes the decision.
// When the step waits for the refresh (`after_refresh`), the retry follows
// its answer.
void carry_out(self_ptr self, uint64_t id, const loop_step& s) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  const auto& fx = s.effects;
  bool mark = fx.marks();
  bool refresh = fx.refresh_account && st.with.endpoints;
  if (!mark && !refresh) return;
  ++st.stats.failover_decisions;
  if (op.budget_spent) ++st.stats.decisions_after_budget;
  auto pending = std::make_shared<int>((mark ? 1 : 0) + (refresh ? 1 : 0));
  auto one_done = [self, pending] {
    if (--*pending == 0) ++self->state.stats.failover_decisions_completed;
  };
  if (mark) {
    ++st.stats.marks;
    mark_region(self, fx.mark_endpoint, fx.mark_read, fx.mark_write, one_done,
                mark_reason(st, op.last_failure ? &*op.last_failure : nullptr));
  }
  if (!refresh) return;
  ++st.stats.refreshes;
  if (s.next != loop_next::after_refresh) {
    // Nobody waits for the operation, but the refresh happens.
    self->request(st.with.endpoints, caf::infinite, refresh_atom_v,
                  fx.force_refresh)
        .then([=](const database_account&) { one_done(); },
              [=](const caf::error&) { one_done(); });
    return;
  }
  op.waiting = waiting_for::refresh;
  op.waiting_on = st.with.endpoints.address();
  auto delay = s.delay;
  auto retry = [=] {
    auto& st = self->state;
    auto i = st.ops.find(id);
    if (i == st.ops.end() || i->second.waiting != waiting_for::refresh) return;
    schedule_attempt(self, id, delay);
  };
  // The retry resolves on the table the refresh produced (see
  // take_current_table): the soak saw single-master writes retried to the
  // hub of a single-write view the refresh had already replaced.
  auto go_on = [=] {
    one_done();
    take_current_table(self, retry);
  };
  self->request(st.with.endpoints, caf::infinite, refresh_atom_v,
                fx.force_refresh)
      .then([=](const database_account&) { go_on(); },
            [=](const caf::error&) { go_on(); });
}

// -- hedging ----------------------------------------------------------------
//
// The decisions live in the pure hedged_operation (hedged_operation.hpp):
// whether an operation is hedged and where to, when each arm goes, what an
// arm's answer means, what an abandoned arm does with its answer. The
// handlers below carry its steps out: the wire, diagnostics, counters,
// marks and the hedge's place in the deadline queue.

void arm_budget_tick(self_ptr self, std::optional<clock_type::time_point> at);

// What the operations of the router share, for the hedge.
hedge_env env_of(router_state& st) {
  hedge_env env;
  env.options = &st.cfg.hedging;
  env.budget = &st.hedge_allowance;
  env.latencies = &st.latencies;
  env.ladders = &st.cfg.ladders;
  env.breaker = st.breaker ? &*st.breaker : nullptr;
  return env;
}

// The pure rule (`write_copy_safe`, write_copy.hpp) on a request; reads
// and queries are not writes and are never asked.
bool write_copy_safe(const data_operation& op) {
  const auto& o = op.req.options;
  return write_copy_safe(write_op_of(op.req.op), !o.if_match.empty(),
                         !o.if_none_match.empty(), !op.tracking_id.empty());
}

// Puts the hedge's next wake-up into the deadline queue.
void arm_hedge_timer(self_ptr self, uint64_t id, data_operation& op,
                     std::optional<policy_time> at) {
  auto& st = self->state;
  if (op.hedge_due == at) return;
  if (op.hedge_due) {
    st.deadlines.remove({id, deadline_slot::hedge}, *op.hedge_due);
    op.hedge_due.reset();
  }
  if (!at) return;
  op.hedge_due = *at;
  arm_budget_tick(self, st.deadlines.add({id, deadline_slot::hedge}, *at));
}

// Sends one arm (>= 1) the hedge started.
void send_arm(self_ptr self, uint64_t id, data_operation& op,
              const arm_send& s) {
  auto& st = self->state;
  auto now = self->clock().now();
  if (op.arms.size() < s.arm) op.arms.resize(s.arm);
  auto& w = op.arms[s.arm - 1];
  w.started = now;
  wire_target t;
  t.collection_link = op.link;
  t.endpoint = s.plan.endpoint;
  t.session_token = session_token_for(st, op);
  t.hub_header = s.plan.hub_header;
  t.timeout = s.plan.timeout;
  attempt_record rec;
  rec.region = s.plan.region;
  rec.endpoint = s.plan.endpoint;
  rec.started_us = micros(now - op.started);
  rec.arm = static_cast<uint32_t>(s.arm);
  note_admission(st, rec, s.plan);
  w.record = op.diag.attempts.size();
  op.diag.attempts.push_back(std::move(rec));
  ++st.stats.hedges_started;
  ++st.stats.attempts;
  auto hdl = caf::actor_cast<caf::actor>(self);
  auto arm32 = static_cast<uint32_t>(s.arm);
  st.with.http->send(
      to_wire(op.req, t), [hdl, id, arm32](transport::outcome o) {
        caf::anon_send(hdl, rt_http_done{id, arm32, std::move(o)});
      });
}

// Every arm answered and none was final: the last answer is the result.
void end_all_answered(self_ptr self, uint64_t id) {
  auto& op = self->state.ops.at(id);
  // A success is always final, so the last answer is a failure.
  finish_failure(self, id,
                 "no region gave a final answer (" +
                     std::to_string(op.hedge->arms().started()) +
                     " hedged arms)");
}

// Carries out a hedge step: counts, sends the arms it started, ends the
// operation when every arm answered, or sets the next wake-up. Returns
// false when the operation ended.
bool carry_out_hedge(self_ptr self, uint64_t id, const hedge_step& step) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  note_transitions(st, &op); // an arm's admission may start a probe
  st.stats.hedges_on_evidence += step.on_evidence;
  st.stats.hedges_refused += step.refused;
  st.stats.breaker_skips += step.skipped;
  for (const auto& s : step.sends)
    send_arm(self, id, op, s);
  if (step.all_answered) {
    end_all_answered(self, id);
    return false;
  }
  arm_hedge_timer(self, id, op, step.wake_at);
  return true;
}

// What the operation asks of hedging.
hedge_ask ask_of(const router_state& st, const data_operation& op) {
  hedge_ask ask;
  ask.op = op_of(op);
  ask.hedge = op.req.options.hedge;
  ask.threshold = op.req.options.hedge_threshold;
  if (ask.op == op_kind::write) ask.write_copy_safe = write_copy_safe(op);
  ask.excluded = excluded_for(st, op);
  return ask;
}

// Decides at the first attempt whether the operation may be hedged, and
// when; its regions wait for that time (materialize_hedge).
void plan_hedge(self_ptr self, uint64_t id) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  if (!st.snap.table()) return;
  // The cheap check first: an operation that is not hedged pays nothing
  // more (no exclusion list).
  if (!hedge_wanted(st.cfg.hedging, op_of(op), op.req.options.hedge)) return;
  op.hedge_pending =
      hedged_operation::intend(env_of(st), ask_of(st, op), *op.loop,
                               *st.snap.table(), op.attempt_started);
  if (op.hedge_pending) arm_hedge_timer(self, id, op, op.hedge_pending->due());
}

// The first hedge is due, or arm 0 gave up before: the regions now. False:
// the operation is not hedged (fewer than two regions left).
bool materialize_hedge(self_ptr self, data_operation& op) {
  if (op.hedge) return true;
  auto& st = self->state;
  if (!op.hedge_pending || !st.snap.table()) return false;
  auto intent = *op.hedge_pending;
  op.hedge_pending.reset();
  op.hedge = hedged_operation::materialize(env_of(st), ask_of(st, op), intent,
                                           *op.loop, *st.snap.table(),
                                           self->clock().now());
  return op.hedge.has_value();
}

// The hedge's time came (or an event may have made an arm due).
void advance_hedge(self_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end() || !st.snap.table()) return;
  auto& op = i->second;
  if (!materialize_hedge(self, op)) return;
  auto step = op.hedge->advance(env_of(st), *op.loop, *st.snap.table(),
                                self->clock().now(), op.budget_spent);
  carry_out_hedge(self, id, step);
}

// Takes the outcome's activity id (nothing after this reads it).
void record_answer(self_ptr self, data_operation& op, attempt_record& rec,
                   transport::outcome& o, clock_type::time_point sent) {
  auto now = self->clock().now();
  rec.activity_id = std::move(o.activity_id);
  rec.connection = o.connection;
  rec.connection_served = o.connection_served;
  rec.status = o.status;
  rec.substatus = o.substatus;
  rec.failure = o.error == transport::failure::none
                    ? std::string{}
                    : std::string{transport::to_string(o.error)};
  rec.elapsed_us = micros(now - sent);
  rec.request_charge = o.request_charge;
  op.diag.request_charge += o.request_charge;
  // Answer times feed only the adaptive threshold: nothing to do otherwise.
  const auto& hc = self->state.cfg.hedging;
  if (o.success() && hc.enabled && hc.mode == hedge_threshold_mode::adaptive)
    self->state.latencies.record(
        rec.region,
        std::chrono::duration_cast<std::chrono::microseconds>(now - sent));
}

// A hedge arm answered (its operation still runs).
void on_hedge_outcome(self_ptr self, uint64_t id, uint32_t arm,
                      transport::outcome& o) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  auto& rec = op.diag.attempts[op.arms[arm - 1].record];
  record_answer(self, op, rec, o, op.arms[arm - 1].started);
  op.diag.hedge_charge += o.request_charge;
  st.stats.hedge_charge += o.request_charge;
  capture_session(st, op, o);
  auto now = self->clock().now();
  const auto& region = op.hedge->arm_region(arm);
  auto answer = op.hedge->on_arm_result(arm, attempt_result_of(o),
                                        o.request_charge, env_of(st), *op.loop,
                                        op.waiting == waiting_for::response,
                                        *st.snap.table(), now, op.budget_spent);
  note_transitions(st, &op);
  op.last_answer = o;
  op.last_answer_region = region;
  if (answer.ends == arm_answer::end::final_result) {
    if (o.success() && !success_body_problem(op.req.op, o)) {
      finish_ok(self, id, o, arm);
      return;
    }
    op.last_failure = o;
    op.last_region = region;
    if (take_echo(self, id, o, region)) return;
    finish_error(self, id, classify_outcome(o),
                 failure_text(o, region, op.loop->attempts() + arm,
                              describe(op), "a final answer of a hedge"));
    return;
  }
  const auto& fx = answer.effects;
  if (fx.marks()) {
    ++st.stats.marks;
    mark_region(self, fx.mark_endpoint, fx.mark_read, fx.mark_write,
                mark_reason(st, &o));
  }
  if (replaces_reported_failure(op.last_failure.has_value(),
                                op.hedge->primary_done())) {
    op.last_failure = o;
    op.last_region = region;
  }
  if (answer.ends == arm_answer::end::all_answered) {
    end_all_answered(self, id);
    return;
  }
  carry_out_hedge(self, id, answer.next);
}

// An attempt of an ended operation answered: dropped, but what it saw still
// reaches the breaker and marks, and a timeout may climb its ladder
// (`settle_late_attempt`).
void on_late_answer(self_ptr self, uint64_t id, uint32_t arm,
                    transport::outcome& o) {
  auto& st = self->state;
  auto i = st.late.find({id, arm});
  if (i == st.late.end()) return;
  ++st.stats.late_answers;
  if (arm > 0) st.stats.hedge_charge += o.request_charge;
  auto& late = i->second;
  if (!st.snap.table()) {
    st.late.erase(i);
    return;
  }
  auto step = settle_late_attempt(late.loop, attempt_result_of(o),
                                  *st.snap.table(), self->clock().now());
  note_transitions(st, nullptr); // a report or a ladder step may transition
  if (step.resend) {
    auto still = std::move(late);
    st.late.erase(i);
    send_late(self, id, arm, std::move(still), *step.resend);
    return;
  }
  const auto& fx = step.effects;
  if (fx.marks()) {
    ++st.stats.marks;
    mark_region(self, fx.mark_endpoint, fx.mark_read, fx.mark_write,
                mark_reason(st, &o));
  }
  if (fx.refresh_account && st.with.endpoints) {
    ++st.stats.refreshes;
    self->request(st.with.endpoints, caf::infinite, refresh_atom_v,
                  fx.force_refresh)
        .then([](const database_account&) {}, [](const caf::error&) {});
  }
  st.late.erase(i);
}

// Sends the next ladder step of an abandoned attempt; its answer comes back
// to `on_late_answer` under the same (operation, arm).
void send_late(self_ptr self, uint64_t id, uint32_t arm, late_arm late,
               const attempt_plan& plan) {
  auto& st = self->state;
  wire_target t;
  t.collection_link = late.link;
  t.endpoint = plan.endpoint;
  t.session_token = late.session_token;
  t.hub_header = plan.hub_header;
  t.timeout = plan.timeout;
  auto req = to_wire(late.req, t);
  st.late.insert_or_assign(std::make_pair(id, arm), std::move(late));
  auto hdl = caf::actor_cast<caf::actor>(self);
  st.with.http->send(std::move(req), [hdl, id, arm](transport::outcome o) {
    caf::anon_send(hdl, rt_http_done{id, arm, std::move(o)});
  });
}

// -- writes that survive a hang ---------------------------------------------

// The read-back of a possible echo travels as this arm.
constexpr uint32_t read_back_arm = 0xFFFFFFFFu;

// A final answer of a write that may be the echo of its own first copy
// (`classify_write_echo`): a create's 409 or a conditional replace's 412
// is checked by reading the document (its tracking id decides); a remove's
// 404 is reported as what it is. Returns true when it took the operation.
bool take_echo(self_ptr self, uint64_t id, const transport::outcome& o,
               const std::string& region) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  if (!op.write_retries || o.error != transport::failure::none) return false;
  bool maybe_applied =
      op.loop->maybe_applied() || (op.hedge && op.hedge->hedges_sent() > 0);
  auto echo = classify_write_echo(write_op_of(op.req.op),
                                  !op.req.options.if_match.empty(),
                                  maybe_applied, o.status);
  switch (echo) {
  case write_echo::none:
    return false;
  case write_echo::deleted_maybe_by_self:
    op.last_failure = o;
    op.last_region = region;
    finish_error(self, id, classify_outcome(o),
                 failure_text(o, region, op.loop->attempts(), describe(op),
                              "the document is gone, possibly deleted by "
                              "this remove: an earlier attempt of it may "
                              "have been applied (it timed out or lost its "
                              "connection after it was sent)"));
    return true;
  case write_echo::check_tracking:
    break;
  }
  if (op.tracking_id.empty()) return false;
  // Read the document where the echo came from (it is there).
  op.echo = o;
  op.echo_region = region;
  data_request rr = op.req;
  rr.op = data_op::read;
  rr.body.clear();
  rr.options.if_match.clear();
  rr.options.if_none_match.clear();
  wire_target t;
  t.collection_link = op.link;
  t.endpoint = o.endpoint.empty() ? op.endpoint : o.endpoint;
  t.timeout = read_back_timeout(st.cfg.ladders);
  attempt_record rec;
  rec.region = region;
  rec.endpoint = t.endpoint;
  rec.started_us = micros(self->clock().now() - op.started);
  rec.retry_reason = "read back: the " + std::to_string(o.status) +
                     " may be this write's own first copy";
  op.echo_record = op.diag.attempts.size();
  op.diag.attempts.push_back(std::move(rec));
  op.waiting = waiting_for::response;
  op.echo_started = self->clock().now();
  ++st.stats.attempts;
  auto hdl = caf::actor_cast<caf::actor>(self);
  st.with.http->send(to_wire(rr, t), [hdl, id](transport::outcome r) {
    caf::anon_send(hdl, rt_http_done{id, read_back_arm, std::move(r)});
  });
  return true;
}

// The read-back answered: the document carries this write's tracking id
// (its first copy was applied: the write succeeded) or not (the echo is
// somebody else's document: the 409/412 stands).
void on_read_back(self_ptr self, uint64_t id, transport::outcome& o) {
  auto& st = self->state;
  auto& op = st.ops.at(id);
  op.waiting = waiting_for::nothing;
  auto& rec = op.diag.attempts[op.echo_record];
  record_answer(self, op, rec, o, op.echo_started);
  auto echo = *op.echo;
  auto verdict = judge_read_back(
      write_op_of(op.req.op), o.success(),
      o.success() && carries_tracking_id(o.body, op.tracking_id), o.status);
  if (verdict.applied) {
    transport::outcome won = o;
    won.status = verdict.status;
    rec.retry_reason += "; it carries this write's tracking id: applied";
    finish_ok(self, id, won);
    return;
  }
  op.last_failure = echo;
  op.last_region = op.echo_region;
  finish_error(self, id, classify_outcome(echo),
               failure_text(echo, op.echo_region, op.loop->attempts(),
                            describe(op), verdict.why));
}

void on_outcome(self_ptr self, uint64_t id, uint32_t arm,
                transport::outcome& o) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end()) {
    on_late_answer(self, id, arm, o);
    return;
  }
  if (arm == read_back_arm) {
    on_read_back(self, id, o);
    return;
  }
  if (i->second.echo) {
    // A read-back decides this write now: another arm's success ends it,
    // its failure cannot (it would end the operation before the read-back
    // tells whether the echo was its own first copy). A hedge arm's answer
    // still reaches the hedge (the arm is no longer out; the breaker hears
    // of it) and what it saw still marks; no further arm starts.
    auto& op = i->second;
    auto& rec =
        op.diag
            .attempts[arm == 0 ? op.primary_record : op.arms[arm - 1].record];
    record_answer(self, op, rec, o,
                  arm == 0 ? op.attempt_started : op.arms[arm - 1].started);
    capture_session(st, op, o);
    if (arm > 0 && op.hedge) {
      op.diag.hedge_charge += o.request_charge;
      st.stats.hedge_charge += o.request_charge;
      auto answer = op.hedge->on_arm_result(
          arm, attempt_result_of(o), o.request_charge, env_of(st), *op.loop,
          false, *st.snap.table(), self->clock().now(), op.budget_spent);
      note_transitions(st, &op);
      const auto& fx = answer.effects;
      if (fx.marks()) {
        ++st.stats.marks;
        mark_region(self, fx.mark_endpoint, fx.mark_read, fx.mark_write,
                    mark_reason(st, &o));
      }
    }
    if (o.success() && !success_body_problem(op.req.op, o)) {
      if (arm == 0) op.waiting = waiting_for::nothing; // it answered
      finish_ok(self, id, o, arm);
    }
    return;
  }
  if (arm > 0) {
    on_hedge_outcome(self, id, arm, o);
    return;
  }
  auto& op = i->second;
  op.waiting = waiting_for::nothing;
  auto& rec = op.diag.attempts[op.primary_record];
  record_answer(self, op, rec, o, op.attempt_started);
  capture_session(st, op, o);
  report_to_breaker(st, &op, *op.loop, o, self->clock().now());
  if (o.success()) {
    // The loop hears of it too: a success confirms where per-partition
    // failover sent the range (without it an override was never confirmed
    // and its failback walked on instead of going home; the drill's S8).
    op.loop->on_result(attempt_result_of(o), *st.snap.table(),
                       self->clock().now(), op.budget_spent);
    // A broken body is the gateway breaking the protocol: an error, never a
    // success the caller cannot parse. Not retried: a write was applied.
    if (auto bad = success_body_problem(op.req.op, o)) {
      auto why = *bad;
      if (is_write(op.req.op))
        why += "; the write may have been applied: read it back before "
               "retrying";
      finish_error(
          self, id, errc::protocol_violation,
          failure_text(o, op.region, op.loop->attempts(), describe(op), why));
      return;
    }
    finish_ok(self, id, o);
    return;
  }
  op.last_failure = o;
  op.last_region = op.region;
  auto step = op.loop->on_result(attempt_result_of(o), *st.snap.table(),
                                 self->clock().now(), op.budget_spent);
  op.climbing = step.ladder_climb;
  if (st.cfg.log.enabled(log_level::debug))
    st.cfg.log.log(
        log_level::debug, router_state::name, "operation.retry",
        describe(op) + ": " + describe_outcome(o) + " from " + op.region +
            " (" + o.endpoint + "); " +
            (step.reason.empty() ? std::string{"no retry"} : step.reason));
  switch (step.next) {
  case loop_next::refresh_ranges:
    // Range gone: refresh the map and re-route; a targeted range that is
    // gone fails now.
    rec.retry_reason = step.reason;
    ++st.stats.metadata_refreshes;
    op.range_refreshed = true;
    resolve_range(self, id, true);
    return;
  case loop_next::refresh_collection:
    rec.retry_reason = step.reason;
    ++st.stats.metadata_refreshes;
    op.epk.clear();
    resolve_collection(self, id, true);
    return;
  default:
    break;
  }
  carry_out(self, id, step);
  bool gives_up =
      step.next == loop_next::fail || step.next == loop_next::fail_budget;
  if (gives_up && materialize_hedge(self, op)) {
    // The primary gave up; a hedge may still win, or start at once.
    auto hs = op.hedge->primary_gave_up(attempt_result_of(o), o.request_charge,
                                        env_of(st), *op.loop, *st.snap.table(),
                                        self->clock().now(), op.budget_spent);
    if (hs) {
      op.last_answer = o;
      op.last_answer_region = op.region;
      carry_out_hedge(self, id, *hs);
      return;
    }
  }
  switch (step.next) {
  case loop_next::fail:
    primary_final(st, op, self->clock().now());
    if (take_echo(self, id, o, op.region)) return;
    finish_failure(self, id, step.reason);
    return;
  case loop_next::fail_budget:
    rec.retry_reason = step.reason;
    finish_failure(self, id,
                   "operation budget of " + format_duration(op.budget) +
                       " spent");
    return;
  default:
    rec.retry_reason = step.reason;
    if (op.waiting != waiting_for::refresh)
      schedule_attempt(self, id, step.delay);
    return;
  }
}

void arm_budget_tick(self_ptr self, std::optional<clock_type::time_point> at) {
  if (!at) return;
  auto now = self->clock().now();
  auto delay = *at > now ? *at - now : clock_type::duration::zero();
  ++self->state.stats.timers_armed;
  self->delayed_send(self, delay, rt_budget_tick{*at});
}

void on_budget(self_ptr self, uint64_t id);

// Ends the budget of every operation whose deadline has come, and starts
// the hedges that are due.
void on_budget_tick(self_ptr self, clock_type::time_point due) {
  auto fired = self->state.deadlines.on_timer(due, self->clock().now());
  for (auto key : fired.expired) {
    if (key.slot == deadline_slot::end) {
      on_budget(self, key.op);
      continue;
    }
    auto i = self->state.ops.find(key.op);
    if (i == self->state.ops.end()) continue;
    i->second.hedge_due.reset();
    advance_hedge(self, key.op);
  }
  arm_budget_tick(self, fired.arm);
}

void on_budget(self_ptr self, uint64_t id) {
  auto& st = self->state;
  auto i = st.ops.find(id);
  if (i == st.ops.end()) return;
  auto& op = i->second;
  op.budget_spent = true;
  // An attempt in flight finishes (its failover decision runs then);
  // anything else ends now.
  if (op.waiting == waiting_for::response) return;
  finish_failure(
      self, id, "operation budget of " + format_duration(op.budget) + " spent");
}

// An engine that cannot keep up says so at once rather than queueing
// without bound: the caller can back off, shed load or try another engine.
std::optional<caf::error> refuse_if_overloaded(self_ptr self) {
  auto& st = self->state;
  if (st.ops.size() < st.cfg.max_in_flight) return std::nullopt;
  ++st.stats.rejected_overloaded;
  return make_error(errc::overloaded,
                    "the request router has " + std::to_string(st.ops.size()) +
                        " operations in flight, its limit "
                        "(georoute.max-operations-in-flight): the engine "
                        "cannot keep up; retry after a back-off, send less, "
                        "or raise the limit");
}

caf::result<data_response> start(self_ptr self, data_request& req) {
  auto& st = self->state;
  if (auto problem = validate(req))
    return make_error(errc::validation_error, *problem);
  if (req.op == data_op::query && req.options.partition_key_json.empty() &&
      req.range_id.empty()) {
    if (!st.with.plans || !st.with.collections || !st.with.pkranges)
      return make_error(errc::validation_error,
                        "a cross-partition query needs the engine's query "
                        "plans and metadata caches");
    if (auto refused = refuse_if_overloaded(self)) return std::move(*refused);
    auto executor = spawn_query_executor(
        self->system(),
        {caf::actor_cast<router_actor>(self), st.with.collections,
         st.with.pkranges, st.with.plans, st.cfg.query_parallelism});
    self->delegate(executor, route_atom_v, std::move(req));
    return caf::delegated<data_response>{}; // the executor answers
  }
  auto link = normalize_collection_link(req.collection_link);
  if (!link)
    return make_error(errc::validation_error,
                      "'" + req.collection_link +
                          "' is not a collection link (dbs/{db}/colls/{coll})");
  if (!st.with.http)
    return make_error(errc::validation_error, "the router has no HTTP port");
  if (auto refused = refuse_if_overloaded(self)) return std::move(*refused);
  // Writes that survive a hang: the request's setting wins.
  auto tracking = plan_write_tracking(
      is_write(req.op) ? std::optional{write_op_of(req.op)} : std::nullopt,
      req.options.write_retries, st.cfg.write_retries);
  std::string tracking_id;
  if (tracking.tracked) {
    tracking_id = make_tracking_id(st.rng(), st.rng());
    auto body = with_tracking_id(req.body, tracking_id);
    if (!body)
      return make_error(errc::validation_error, std::string{to_string(req.op)} +
                                                    " of " + *link + ": " +
                                                    body.error().what);
    req.body = std::move(*body);
  }
  auto id = st.next_id++;
  ++st.stats.operations;
  data_operation op;
  op.req = std::move(req);
  op.write_retries = tracking.retries;
  op.tracking_id = std::move(tracking_id);
  op.link = std::move(*link);
  op.rp = self->make_response_promise<data_response>();
  op.started = self->clock().now();
  op.budget = effective_budget(op.req.options.budget, st.cfg.default_budget);
  loop_environment env;
  env.client = st.cfg.client;
  env.attempt_cap = st.cfg.attempt_cap;
  env.breaker = st.breaker ? &*st.breaker : nullptr;
  env.ppaf = &st.ppaf;
  op.loop.emplace(data_plane_loop(kind_of(op.req.op), op_of(op),
                                  op.write_retries, excluded_for(st, op), env),
                  st.cfg.ladders);
  op.deadline = op.started + op.budget;
  auto rp = op.rp;
  auto arm = st.deadlines.add({id, deadline_slot::end}, op.deadline);
  st.ops.emplace(id, std::move(op));
  arm_budget_tick(self, arm);
  resolve_collection(self, id, false);
  return rp;
}

// -- collaborators -----------------------------------------------------------

void subscribe(self_ptr self) {
  auto& st = self->state;
  if (!st.with.locations) return;
  self->monitor(st.with.locations);
  self->request(st.with.locations, caf::infinite, subscribe_atom_v,
                caf::actor_cast<caf::actor>(self))
      .then(
          [=](location_snapshot& snap) {
            auto& st = self->state;
            if (!st.snap.apply(snap.table, snap.version)) return;
            forget_departed_regions(st);
            std::vector<uint64_t> waiting;
            for (auto& [id, op] : st.ops)
              if (op.waiting == waiting_for::snapshot) waiting.push_back(id);
            for (auto id : waiting)
              attempt(self, id);
          },
          [](caf::error&) {});
}

// The operations waiting for `what` from the collaborator `gone`.
std::vector<uint64_t> ops_waiting_on(router_state& st, waiting_for what,
                                     const caf::actor_addr& gone) {
  std::vector<uint64_t> ids;
  for (auto& [id, op] : st.ops)
    if (op.waiting == what && op.waiting_on == gone) ids.push_back(id);
  return ids;
}

void fail_waiting(self_ptr self, waiting_for what, const caf::down_msg& dm,
                  const std::string& whom) {
  for (auto id : ops_waiting_on(self->state, what, dm.source)) {
    auto err =
        collaborator_down(whom, dm.reason, describe(self->state.ops.at(id)));
    finish_error(self, id, code_of(err), context_of(err));
  }
}

// A collaborator went down: whoever waits for it is told at once. Matched by
// the address each operation asked, since the supervisor's re-wiring to the
// successor may arrive first.
void on_down(self_ptr self, const caf::down_msg& dm) {
  if (!dm.source) return;
  fail_waiting(self, waiting_for::collection, dm,
               "the collection cache (georoute.collection_cache)");
  fail_waiting(self, waiting_for::ranges, dm,
               "the partition-range cache (georoute.pkrange_cache)");
  // Refreshes asked of an endpoint manager that is gone will never be
  // answered: go on without them.
  for (auto id : ops_waiting_on(self->state, waiting_for::refresh, dm.source))
    schedule_attempt(self, id, std::chrono::milliseconds{0});
}

void rewire(self_ptr self, const engine_wiring& w) {
  auto& st = self->state;
  if (!from_supervisor(self, st.with.supervisor)) return;
  retarget(self, st.with.collections, w.collections);
  retarget(self, st.with.pkranges, w.pkranges);
  retarget(self, st.with.endpoints, w.endpoints);
  if (w.plans) st.with.plans = w.plans;
  if (w.locations && w.locations != st.with.locations) {
    st.with.locations = w.locations;
    st.snap.reset_source();
    subscribe(self);
  }
  caf::unsafe_send_as(self, caf::actor_cast<caf::actor>(st.pipeline), w);
}

router_impl_actor::behavior_type router_impl(self_ptr self, router_config cfg,
                                             router_collaborators with) {
  auto& st = self->state;
  st.cfg = std::move(cfg);
  st.with = std::move(with);
  st.collections =
      lru_cache<std::string, std::shared_ptr<const collection_info>>{
          st.cfg.collection_capacity};
  st.maps = lru_cache<std::string, map_ptr>{st.cfg.collection_capacity};
  st.hedge_allowance = hedge_budget{st.cfg.hedging.budget};
  st.latencies = region_latencies{st.cfg.hedging.adaptive};
  if (st.cfg.breaker_enabled) st.breaker.emplace(st.cfg.breaker);
  st.ppaf = partition_failover{st.cfg.ppaf};
  st.cancels = timeout_cancels{self->home_system()};
  // The raw path's pipeline: linked, it lives and dies with the router and
  // takes re-wiring from us only.
  st.pipeline = spawn_retry(self->system(), st.cfg.pipeline,
                            {st.with.locations, st.with.endpoints, st.with.http,
                             router_actor{}, caf::actor{}, self->address()});
  self->link_to(st.pipeline);
  for (auto h : {caf::actor_cast<caf::actor>(st.with.collections),
                 caf::actor_cast<caf::actor>(st.with.pkranges),
                 caf::actor_cast<caf::actor>(st.with.endpoints)})
    if (h) self->monitor(h);
  self->set_down_handler([=](caf::down_msg& dm) { on_down(self, dm); });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (!msg.reason) return;
    auto& st = self->state;
    auto err = stopped_error(who, msg.reason);
    for (auto& [id, op] : st.ops)
      op.rp.deliver(err);
    st.ops.clear();
    st.deadlines.clear();
    st.late.clear();
    self->quit(msg.reason);
  });
  subscribe(self);
  return {
      [=](route_atom, data_request& req) -> caf::result<data_response> {
        return start(self, req);
      },
      [=](route_atom,
          const document_request& req) -> caf::delegated<transport::outcome> {
        return self->delegate(self->state.pipeline, execute_atom_v,
                              to_pipeline_request(req));
      },
      [=](snapshot_atom, location_snapshot& snap) {
        auto& st = self->state;
        if (!st.with.locations ||
            self->current_sender() != st.with.locations.address())
          return; // only the location cache publishes tables
        if (st.snap.apply(snap.table, snap.version))
          forget_departed_regions(st);
      },
      [=](const engine_wiring& w) { rewire(self, w); },
      [=](rt_attempt m) {
        auto i = self->state.ops.find(m.op);
        if (i == self->state.ops.end() ||
            i->second.waiting != waiting_for::backoff)
          return;
        attempt(self, m.op);
      },
      [=](rt_budget_tick m) { on_budget_tick(self, m.due); },
      [=](stats_atom) { return current_stats(self->state); },
      [=](metrics_atom) {
        const auto& st = self->state;
        router_metrics m;
        m.stats = current_stats(st);
        m.operations.reserve(st.histograms.series().size());
        for (const auto& h : st.histograms.series())
          m.operations.push_back(to_series(h));
        return m;
      },
      [=](rt_http_done& m) { on_outcome(self, m.op, m.arm, m.outcome); },
  };
}

} // namespace

metadata_request to_pipeline_request(const document_request& req) {
  metadata_request m;
  m.method = req.method;
  m.path = req.path;
  m.headers = req.headers;
  if (!req.partition_key_json.empty())
    m.headers.emplace_back("x-ms-documentdb-partitionkey",
                           req.partition_key_json);
  m.body = req.body;
  m.kind = req.kind;
  m.op = req.op;
  m.policy = retry_policy_kind::client;
  m.excluded_regions = req.excluded_regions;
  return m;
}

router_config router_config_from(const config::settings& s) {
  router_config c;
  c.pipeline = retry_config_from(s);
  c.client = c.pipeline.client;
  c.ladders = s.http.ladders;
  c.excluded_regions = s.location.excluded_regions;
  c.default_budget = s.retry.operation_budget;
  c.collection_capacity = s.collection_cache_size;
  c.max_in_flight = s.max_operations_in_flight;
  c.hedging = s.hedging;
  c.breaker_enabled = s.circuit_breaker_enabled;
  c.breaker = s.circuit_breaker;
  c.ppaf = s.per_partition_failover;
  c.write_retries = s.retry.write_retries;
  return c;
}

namespace {

/// The router kept on a home thread.
class homed_router final
    : public pinned<
          caf::stateful_actor<router_state, router_impl_actor::base>> {
public:
  using super =
      pinned<caf::stateful_actor<router_state, router_impl_actor::base>>;

  homed_router(caf::actor_config& cfg, std::shared_ptr<home_thread> home,
               router_config rc, router_collaborators with)
      : super(cfg, std::move(home)), rc_(std::move(rc)),
        with_(std::move(with)) {}

  behavior_type make_behavior() override {
    return router_impl(this, std::move(rc_), std::move(with_));
  }

private:
  router_config rc_;
  router_collaborators with_;
};

} // namespace

router_actor spawn_router(caf::actor_system& sys, router_config cfg,
                          router_collaborators with,
                          std::shared_ptr<home_thread> home) {
  if (home)
    return caf::actor_cast<router_actor>(sys.spawn<homed_router>(
        std::move(home), std::move(cfg), std::move(with)));
  return caf::actor_cast<router_actor>(
      sys.spawn(router_impl, std::move(cfg), std::move(with)));
}

} // namespace georoute
