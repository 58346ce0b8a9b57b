#pragma once

// The request router's internals, shared by its files (actors/router*.cpp)
// and by nothing else: the operation record, the router's state, its
// private messages, and the functions each file offers the others. The
// public interface is actors/router.hpp.

#include "georoute/actors/bulk_executor.hpp"
#include "georoute/actors/change_feed_executor.hpp"
#include "georoute/actors/collection_cache.hpp"
#include "georoute/actors/fleet.hpp"
#include "georoute/actors/home_thread.hpp"
#include "georoute/actors/internal.hpp"
#include "georoute/actors/operation_driver.hpp"
#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/actors/policy/deadline_queue.hpp"
#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/hedge_budget.hpp"
#include "georoute/actors/policy/hedged_operation.hpp"
#include "georoute/actors/policy/hedging.hpp"
#include "georoute/actors/policy/loop_config.hpp"
#include "georoute/actors/policy/lru_cache.hpp"
#include "georoute/actors/policy/metadata_rules.hpp"
#include "georoute/actors/policy/node_pool.hpp"
#include "georoute/actors/policy/operation_histograms.hpp"
#include "georoute/actors/policy/partition_breaker.hpp"
#include "georoute/actors/policy/patch.hpp"
#include "georoute/actors/policy/range_lookup.hpp"
#include "georoute/actors/policy/routing_map.hpp"
#include "georoute/actors/policy/session_container.hpp"
#include "georoute/actors/policy/snapshot_holder.hpp"
#include "georoute/actors/policy/write_copy.hpp"
#include "georoute/actors/policy/write_tracking.hpp"
#include "georoute/actors/query_executor.hpp"
#include "georoute/actors/router.hpp"
#include "georoute/actors/router_wire.hpp"
#include "georoute/actors/timeout_cancels.hpp"
#include "georoute/messages/error.hpp"

#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <optional>
#include <random>

namespace georoute::router_detail {

// Messages only the router's files can name: the next attempt, the deadline
// sweep, an HTTP completion.
struct rt_attempt {
  uint64_t op = 0;
  uint32_t gen = 0;
};
struct rt_budget_tick {
  caf::actor_clock::time_point due;
};
struct rt_http_done {
  uint64_t op = 0;
  uint32_t arm = 0; // 0: the primary; 1..: a hedge
  transport::outcome outcome;
};
struct rt_fleet_flush {};

} // namespace georoute::router_detail

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::router_detail::rt_attempt)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::router_detail::rt_budget_tick)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::router_detail::rt_http_done)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::router_detail::rt_fleet_flush)

namespace georoute::router_detail {

using clock_type = caf::actor_clock::clock_type;

using router_impl_actor = router_actor::extend<
    caf::reacts_to<snapshot_atom, location_snapshot>,
    caf::reacts_to<engine_wiring>, caf::reacts_to<rt_attempt>,
    caf::reacts_to<rt_budget_tick>, caf::reacts_to<rt_http_done>,
    caf::reacts_to<rt_fleet_flush>>;

using map_ptr = std::shared_ptr<const routing_map>;

// What an operation's resolution waits for (the driver's phase is `idle`
// meanwhile; `waiting_on` names the cache asked).
enum class resolving : uint8_t { nothing, collection, ranges };

// The data plane's part of an operation (the driver's part is in
// `driven_op`: the loop, its phase, end time, refresh wait, last failure).
struct data_payload {
  data_request req;
  std::string link; // normalized collection link
  caf::typed_response_promise<data_response> rp;
  clock_type::time_point started;
  std::chrono::milliseconds budget{0};
  resolving resolves = resolving::nothing;
  // Shared with the router's collection LRU: a hit copies a pointer, not
  // the collection's strings and key definition.
  std::shared_ptr<const collection_info> coll;
  std::string epk;
  // Points into `map`: whoever replaces the map drops it (`use_map`).
  const partition_key_range* range = nullptr;
  map_ptr map;
  // Where the primary's last attempt went.
  std::string endpoint;
  std::string region;
  bool range_refreshed = false; // a range-targeted query refreshed its map
  diagnostics diag;
  clock_type::time_point attempt_started;
  size_t primary_record = 0; // diag.attempts index of arm 0's attempt
  // Hedging. Arm 0 is the loop, with its retries; the hedge (pure,
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
  std::vector<arm_wire> arms;                    // arms[i - 1] is arm i
  std::optional<transport::outcome> last_answer; // of any arm, for the end
  std::string last_answer_region;
  // The hedge's step when the primary gave up and the hedge takes over
  // (carried out after the failure's side effects).
  std::optional<hedge_step> handover;
  // Writes that survive a hang: retried where another region takes them;
  // creates, replaces and upserts carry `tracking_id` in their body.
  bool write_retries = false;
  std::string tracking_id;
  // A 409/412 that may be this write's own echo, while its read-back runs.
  std::optional<transport::outcome> echo;
  std::string echo_region;
  size_t echo_record = 0; // diag.attempts index of the read-back
  clock_type::time_point echo_started;
  // The fleet's tally already has this read's wait for the threshold.
  bool fleet_waited = false;
};

// One data-plane operation.
using data_operation = driven_op<data_payload>;

// What the router needs to send the next ladder step of an attempt its
// operation left behind (`late_attempts`): an abandoned arm's answer is
// dropped, but what it saw still marks regions, and its loop goes on up the
// timeout ladder on the same endpoint (so a hung region is still found
// silent and marked, as without hedging).
struct late_wire {
  data_request req;
  std::string link;
  std::string session_token;
  std::string range_id; // for the trace log
};

// How an operation failed, for its caller (with its diagnostics).
struct op_failed {
  errc code = errc::none;
  std::string text;
};

struct router_state;
using self_ptr = router_impl_actor::stateful_pointer<router_state>;

// What the data plane supplies to the operation driver (see
// operation_driver.hpp); the hooks live in the router's files.
struct data_plane {
  using self_ptr = router_detail::self_ptr;
  using payload = data_payload;
  using late_wire = router_detail::late_wire;
  using attempt_msg = rt_attempt;
  using tick_msg = rt_budget_tick;
  using http_msg = rt_http_done;
  static constexpr end_kind end = end_kind::budget;

  self_ptr self = nullptr;

  // router_attempt.cpp
  transport::attempt wire(const data_operation& op,
                          const attempt_plan& plan) const;
  transport::attempt wire(const late_wire& w, const attempt_plan& plan) const;
  late_wire late_wire_of(const data_operation& op) const;
  effect_origin origin(const data_payload&, const transport::outcome* why,
                       bool after_end) const;
  effect_origin origin(const late_wire&, const transport::outcome* why,
                       bool after_end) const;
  bool defer_primary(data_operation&) { return false; }
  void before_attempt(uint64_t id, data_operation& op);
  void on_sent(uint64_t id, data_operation& op, const attempt_plan& plan);
  bool on_answer(uint64_t id, data_operation& op, uint32_t arm,
                 transport::outcome& o);
  void on_primary_success(uint64_t id, data_operation& op,
                          transport::outcome& o);
  primary_hedge on_primary_failure(uint64_t id, data_operation& op,
                                   const transport::outcome& o,
                                   const loop_step& step);
  void on_metadata_step(uint64_t id, data_operation& op, const loop_step& step);
  void on_final_failure(uint64_t id, data_operation& op,
                        const transport::outcome& o, const loop_step& step);
  void on_refused(uint64_t id, data_operation& op, const std::string& why);
  void on_end_reached(uint64_t id, data_operation& op);
  void on_new_table() {}
  // router_hedge.cpp
  void on_hedge_due(uint64_t id, data_operation& op);
  void on_arm_answer(uint64_t id, data_operation& op, uint32_t arm,
                     transport::outcome& o);
  void hedge_takes_over(uint64_t id, data_operation& op);
  void abandon_arms(uint64_t id, data_operation& op, bool primary_abandoned);
  void on_late_answer(uint32_t arm, const transport::outcome& o);
  // router_reply.cpp
  void reply(uint64_t id, data_operation& op, data_response&& r);
  void reply(uint64_t id, data_operation& op, op_failed&& f);
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
  // The live operations: their table, budgets and hedge wake-ups, waits,
  // and the attempts they left behind.
  operation_driver<data_plane> driver;
  // Hedging: the budget (a share of hedged reads) and answer times per
  // region (adaptive thresholds).
  hedge_budget hedge_allowance;
  region_latencies latencies;
  // The per-partition circuit breaker; none when switched off. The attempt
  // loops hold a pointer to it: it lives as long as the state.
  std::optional<partition_breaker> breaker;
  // Per-partition failover overrides of single-write accounts' writes; the
  // attempt loops hold a pointer to it, as to the breaker.
  partition_failover ppaf;
  // Tracking ids of writes that survive a hang.
  std::mt19937_64 rng{std::random_device{}()};
  // A caller's request timeout goes when its answer is delivered (see
  // `answer`).
  timeout_cancels cancels;
  router_stats stats;
  // What applying decisions counted (folded into `stats` when asked).
  driver_counters counts;
  // Duration and request charge per (operation, region, status, error) of
  // every finished operation: the data plane's histograms.
  operation_histograms histograms;
  // What the router's own requests saw per region since the last flush to
  // the fleet actor (only with `cfg.fleet`).
  std::vector<fleet_tally> fleet_tallies;
  // At start, with the fleet on: data operations wait here, unresolved,
  // until the fleet's view is in (`fleet_sync_atom`) or the startup wait
  // passed; then they go on in the order they came.
  bool fleet_gate = false;
  std::vector<uint64_t> fleet_gate_waiters;
  static inline const char* name = "georoute.router";
};

inline constexpr const char* who = "the request router (georoute.router)";

// The read-back of a possible echo travels as this arm.
inline constexpr uint32_t read_back_arm = 0xFFFFFFFFu;

// -- what each file offers the others ----------------------------------------

// router_fleet.cpp
void fleet_note(router_state& st, const std::string& region, fleet_event e);
// Holds data operations until the fleet's view is in (the startup wait).
void close_fleet_gate(self_ptr self);
// Whether `id` waits at the gate (then it was parked there).
bool park_at_fleet_gate(self_ptr self, uint64_t id);
void fleet_answer(router_state& st, data_payload& op, const std::string& region,
                  const transport::outcome& o, clock_type::duration took);
void fleet_flush(self_ptr self);

// router_reply.cpp
int64_t micros(clock_type::duration d);
std::string describe(const data_payload& op);
router_stats current_stats(const router_state& st);
operation_series to_series(const operation_histogram& h);
void record_operation(router_state& st, const data_payload& op,
                      const std::string& region, int status, errc code,
                      clock_type::time_point now);
void finish_ok(self_ptr self, uint64_t id, transport::outcome& o,
               uint32_t arm = 0);
void finish_error(self_ptr self, uint64_t id, errc code, std::string text);
void finish_failure(self_ptr self, uint64_t id, const std::string& why);
effect_origin origin_of(const router_state& st, const transport::outcome* why,
                        bool after_end);

// router_breaker.cpp
void log_transition(const router_state& st, const breaker_transition& t);
void note_transitions(router_state& st, data_operation* op);
void note_admission(router_state& st, attempt_record& rec,
                    const attempt_plan& plan);
void report_to_breaker(router_state& st, data_operation* op, attempt_loop& loop,
                       const transport::outcome& o, policy_time now);
void set_partition(data_operation& op, attempt_loop& loop);
void primary_final(router_state& st, data_operation& op, policy_time now);

// router_resolve.cpp
void forget_dropped_ranges(router_state& st, const std::string& rid,
                           const map_ptr& old, const map_ptr& fresh,
                           policy_time now);
void forget_departed_regions(router_state& st);
void use_map(data_payload& op, map_ptr map);
void resolve_collection(self_ptr self, uint64_t id, bool force);
void locate(self_ptr self, uint64_t id);
void resolve_range(self_ptr self, uint64_t id, bool refresh);
std::string session_token_for(const router_state& st, const data_payload& op);
void capture_session(router_state& st, const data_payload& op,
                     const transport::outcome& o);

// router_attempt.cpp
std::vector<std::string> excluded_for(const router_state& st,
                                      const data_payload& op);
transport::attempt attempt_wire(const data_request& req,
                                const std::string& link, std::string token,
                                const attempt_plan& plan);
void log_attempt(const router_state& st, const data_request& req,
                 const std::string& link, const char* arm,
                 const std::string& range_id, const attempt_plan& plan);
std::optional<caf::error> refuse_if_overloaded(self_ptr self);
caf::result<data_response> start(self_ptr self, data_request& req);
/// A transactional batch: checked and written here, carried out as one
/// `data_op::batch` operation, its results read from the answer.
caf::result<batch_response> start_batch(self_ptr self, batch_request& req);
/// A bulk session: its options checked here, its executor spawned.
caf::result<caf::actor> open_bulk(self_ptr self, bulk_open& req);
/// One page of a change feed: checked here, read by a feed executor.
caf::result<change_feed_page> start_feed(self_ptr self,
                                         change_feed_request& req);
/// The collection's ranges now (the feed ranges).
caf::result<std::vector<partition_key_range>>
feed_ranges(self_ptr self, const std::string& link);

// router_hedge.cpp
hedge_env env_of(router_state& st);
void arm_hedge_timer(self_ptr self, uint64_t id, data_operation& op,
                     std::optional<policy_time> at);
void send_arm(self_ptr self, uint64_t id, data_operation& op,
              const arm_send& s);
void end_all_answered(self_ptr self, uint64_t id);
bool carry_out_hedge(self_ptr self, uint64_t id, const hedge_step& step);
hedge_ask ask_of(const router_state& st, const data_operation& op);
void plan_hedge(self_ptr self, uint64_t id, data_operation& op);
bool materialize_hedge(self_ptr self, data_operation& op);
void record_answer(self_ptr self, data_payload& op, attempt_record& rec,
                   transport::outcome& o, clock_type::time_point sent);

// router_writes.cpp
bool write_copy_safe(const data_payload& op);
// Whether a write's caller must be told that its outcome is unknown
// (`errc::outcome_unknown`) when it fails now.
bool write_outcome_unknown(const data_operation& op);
bool take_echo(self_ptr self, uint64_t id, const transport::outcome& o,
               const std::string& region);
void on_read_back(self_ptr self, uint64_t id, transport::outcome& o);
void on_answer_during_read_back(self_ptr self, uint64_t id, data_operation& op,
                                uint32_t arm, transport::outcome& o);

// router.cpp
void on_new_table(self_ptr self);
void subscribe(self_ptr self);
void fail_waiting(self_ptr self, resolving what, const caf::down_msg& dm,
                  const std::string& whom);
void on_down(self_ptr self, const caf::down_msg& dm);
void rewire(self_ptr self, const engine_wiring& w);
router_impl_actor::behavior_type router_impl(self_ptr self, router_config cfg,
                                             router_collaborators with);

} // namespace georoute::router_detail
