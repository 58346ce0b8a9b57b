#pragma once

// One operation's attempt loop, as pure code: the router (data plane) and
// the retry actor (metadata) both carry it out, so a rule is written once.
//
// The actor asks `next_attempt` for where and how to send (endpoint, the
// ladder step's timeout, the hub-region-only header), sends, and hands the
// attempt's end to `on_result`, which answers one `loop_step`:
//
//   effects  side effects that always run, whether the operation goes on or
//            not (its budget may be spent, its caller gone): mark a region,
//            refresh the account, clear a session token
//   next     attempt           send the next attempt after `delay`
//            after_refresh     wait for the account refresh the effects
//                              asked for, take the table it produced, then
//                              send after `delay`
//            refresh_ranges    a 410 range gone: reload the routing map,
//                              locate the range again, then send
//            refresh_collection  a 410 collection gone: resolve the
//                              collection again (recreated under its name)
//            succeed           the attempt succeeded
//            fail              stop; `reason` says why
//            fail_budget       stop: the budget is spent (the actor names it)
//
// Order of the rules after a failed attempt, first match wins:
//   1. a 410 that moves metadata (range or collection gone), when the loop
//      handles them and fewer than `max_metadata_refreshes` happened and the
//      budget is not spent: refresh that metadata, no region at fault;
//   2. the HTTP timeout ladder: a timed-out (or, where allowed, 408) attempt
//      climbs to the next step on the same endpoint (pinned);
//   3. the retry policy (client, partition-range, or client with the
//      clearing-session decorator): its decision names the effects and
//      whether to retry.
// A spent budget stops every new attempt, but the effects of rule 3 still
// run: the caller's timeout and the budget never pre-empt a failover
// decision.
//
// The per-partition circuit breaker (partition_breaker.hpp) is consulted in
// `next_attempt`, the one place an endpoint is chosen, when the loop has a
// breaker, knows its partition (`set_partition`) and the operation is
// eligible (reads; writes only where several regions take writes). The
// retry policy's pick comes first; the breaker then walks the applicable
// endpoints from that pick on and takes the first region whose breaker for
// this range lets the request through (a pinned ladder step whose region it
// blocks is unpinned and walks the same way). When it blocks every region,
// the pick is used anyway, except for an optional attempt (a hedge arm),
// which is then not made. The ticket of the admission stays with the loop
// until the actor reports the attempt's outcome (`report_outcome`), a hedge
// win against it (`record_hedge_loss`) or its final answer
// (`record_final`). The loop never reads a clock: time comes in as `now`.

#include "georoute/actors/policy/client_retry_policy.hpp"
#include "georoute/actors/policy/location_table.hpp"
#include "georoute/actors/policy/metadata_rules.hpp"
#include "georoute/actors/policy/partition_breaker.hpp"
#include "georoute/actors/policy/partition_failover.hpp"
#include "georoute/actors/policy/result.hpp"
#include "georoute/actors/policy/timeout_ladder.hpp"
#include "georoute/transport/attempt.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace georoute {

/// What a 410 means, decided in this one place.
enum class gone_kind : uint8_t {
  none,            ///< not a 410
  partition_range, ///< 1002 range gone, 1007 completing split, 1008
                   ///< completing migration: reload the routing map
  collection,      ///< 1000: the name points at a recreated collection
  lease_not_found, ///< 1022: a regional error (one cross-region retry)
  other,           ///< any other 410
};

gone_kind classify_gone(int status, int substatus);

/// How an attempt ended, as the loop needs it: the fields of a failed
/// attempt (metadata_rules.hpp), and whether it succeeded.
struct attempt_result : attempt_failure {
  bool success() const {
    return !transport_failure &&
           ((status >= 200 && status < 300) || status == 304);
  }
};

/// What one operation's loop is.
struct attempt_loop_config {
  request_kind kind = request_kind::document_read;
  op_kind op = op_kind::read;
  /// Document requests (multi-write routing applies); false for metadata.
  bool is_document = true;
  /// Document reads use the partition-failover ladder.
  bool per_partition_failover = false;
  loop_policy policy = loop_policy::client;
  /// The request names a collection (clearing-session decorator).
  bool name_based = false;
  /// Rule 1: 410 range/collection gone refresh the metadata (data plane).
  bool refresh_metadata_on_gone = false;
  uint32_t max_metadata_refreshes = 3;
  /// Attempts at most (a bound besides the budget or deadline).
  uint32_t attempt_cap = 200;
  /// Regions excluded for this operation (engine-wide and its own).
  std::vector<std::string> excluded_regions;
  /// The first attempt goes to this endpoint if it is among the applicable
  /// ones for the request then; empty: the policy's choice (see
  /// `metadata_request::start_endpoint`).
  std::string start_endpoint;
  client_retry_options client;
  /// The per-partition circuit breaker: owned by the caller, it must
  /// outlive the loop; null: none (metadata, or switched off). Consulted
  /// only once `set_partition` named the range.
  partition_breaker* breaker = nullptr;
  /// An attempt that may be left out (a hedge arm): when the breaker blocks
  /// every candidate, the plan says `skip` instead of falling back.
  bool optional_attempt = false;
  /// Per-partition failover: owned by the caller, it must outlive the loop;
  /// null: none (metadata). Consulted only once `set_partition` named the
  /// range, for document writes on accounts where it applies
  /// (`ppaf_applies`), and for a read's hub retry there.
  partition_failover* ppaf = nullptr;
  /// A write that may be sent again after an attempt that may have been
  /// applied (timed out, lost after it was sent, a 408): the caller made a
  /// second copy safe (a tracking id it can recognise, or a remove whose
  /// 404 it reports as such). It is retried where another region can take
  /// it: the next write region of a multi-write account, or the region
  /// per-partition failover moved the range to. Never for stored
  /// procedures.
  bool write_retries = false;
};

/// Where and how the next attempt goes.
struct attempt_plan {
  std::string endpoint;
  /// The protocol that endpoint speaks (every region's endpoint speaks the
  /// classic gateway until a second transport is configured).
  transport::protocol protocol = transport::protocol::gateway;
  std::string region;
  std::chrono::milliseconds timeout{0};
  /// Send the hub-region-only header (a read's last session retry).
  bool hub_header = false;
  uint32_t number = 0; ///< 1 for the first attempt
  /// The circuit breaker admitted this attempt (`admission` says how);
  /// false when it was not consulted.
  bool breaker_consulted = false;
  admission_kind admission = admission_kind::pass;
  /// Regions the breaker made this attempt skip, in the order walked.
  std::vector<std::string> breaker_skipped;
  /// The region of the range's per-partition failover override this
  /// attempt follows; empty: none.
  std::string ppaf_region;
  /// An optional attempt whose every candidate the breaker blocks: do not
  /// send it (it is not counted as an attempt).
  bool skip = false;
};

/// What reporting an attempt's outcome to the breaker did.
struct breaker_report {
  /// The attempt had a ticket and it was handed back (at most once).
  bool reported = false;
  breaker_signal signal = breaker_signal::no_signal;
  /// The key's state afterwards.
  breaker_state state = breaker_state::closed;
  /// The attempt was the key's probe.
  bool probe = false;
};

/// Side effects of a decision: carried out whatever comes next.
struct loop_effects {
  std::string mark_endpoint; ///< empty: no mark
  bool mark_read = false;
  bool mark_write = false;
  bool refresh_account = false;
  bool force_refresh = false;
  bool fresh_refresh = false; ///< a read newer than the table decided on
  bool clear_session = false;

  bool marks() const { return mark_read || mark_write; }
};

enum class loop_next : uint8_t {
  attempt,
  after_refresh,
  refresh_ranges,
  refresh_collection,
  succeed,
  fail,
  fail_budget,
};

const char* to_string(loop_next x);

/// The answer to an attempt's end.
struct loop_step {
  loop_effects effects;
  loop_next next = loop_next::fail;
  std::chrono::milliseconds delay{0};
  /// Why the next attempt happens (for the attempt's diagnostics), or why
  /// the operation ends.
  std::string reason;
  /// The retry policy declined to retry (counted by the retry actor).
  bool policy_refused = false;
  /// The next attempt is the ladder's next step on the same endpoint.
  bool ladder_climb = false;
};

/// One operation's loop. Not thread-safe; one actor owns it.
class attempt_loop {
public:
  /// `ladders` must outlive the loop (the actor's configuration).
  attempt_loop(attempt_loop_config cfg, const timeout_ladders& ladders);

  /// The next attempt, resolved on `table` at `now`; a problem once the
  /// attempt cap is reached ("attempt cap of 200 reached").
  result<attempt_plan> next_attempt(const location_table& table,
                                    policy_time now);

  /// The attempt `next_attempt` planned ended with `r`. `budget_spent`: no
  /// new attempt may start (the effects still run).
  loop_step on_result(const attempt_result& r, const location_table& table,
                      policy_time now, bool budget_spent);

  // -- the circuit breaker ----------------------------------------------------

  /// The range the next attempts are for (again after a split or a
  /// recreated collection). Empty ids: the breaker is not consulted.
  void set_partition(std::string collection_rid, std::string range_id);

  /// Whether the breaker applies to this operation on `table`: a breaker
  /// and a partition are set, and it reads, or writes where more than one
  /// region takes document writes.
  bool breaker_applies(const location_table& table) const;

  /// Hands the last attempt's outcome to the breaker with its ticket (what
  /// counts: `breaker_signal_of`; a write's 429/3092 counts as a 503, as
  /// the retry policy treats it). Only the first call per attempt reports.
  breaker_report report_outcome(const attempt_result& r, policy_time now);

  /// Another arm's final answer won while the last attempt was still out:
  /// a hedge win against its region. Reports nothing twice; the attempt's
  /// own outcome, when it comes, is still reported.
  bool record_hedge_loss(policy_time now);

  /// The last attempt's answer ended the operation (a primary's final
  /// answer): resets the hedge-win count of its region.
  void record_final(policy_time now);

  /// Whether the next attempt is a pinned ladder step whose region the
  /// breaker blocks now (changes nothing).
  bool pinned_blocked(policy_time now) const;

  /// The range set by `set_partition` (empty: none).
  const std::string& collection_rid() const { return collection_rid_; }
  const std::string& range_id() const { return range_id_; }

  uint32_t attempts() const { return attempts_; }
  uint32_t metadata_refreshes() const { return metadata_refreshes_; }
  /// The endpoint and region of the last attempt.
  const std::string& endpoint() const { return endpoint_; }
  const std::string& region() const { return region_; }
  /// An attempt of this write may have been applied (it timed out, lost
  /// its connection after it was sent, or answered 408).
  bool maybe_applied() const { return maybe_applied_; }
  /// The last failed attempt and its region (none before a failure).
  const std::optional<attempt_result>& last_failure() const {
    return last_failure_;
  }
  const std::string& last_region() const { return last_region_; }
  const attempt_loop_config& config() const { return cfg_; }

private:
  using policy_variant =
      std::variant<client_retry_policy, partition_range_retry_policy>;

  const timeout_ladder& ladder() const { return *choice_.ladder; }
  void make_policy(const location_table& table);
  /// `cfg_.start_endpoint` as the table spells it, if the request may use
  /// it now (applicable, not a fallback); empty otherwise.
  std::string applicable_start(const location_table& table,
                               const resolve_input& in, policy_time now) const;
  loop_step decide(const attempt_result& r, const location_table& table,
                   policy_time now, bool budget_spent,
                   const ladder_decision& ladder);

  attempt_loop_config cfg_;
  ladder_choice choice_;
  std::optional<policy_variant> policy_; // built with the first table
  uint32_t attempts_ = 0;
  uint32_t metadata_refreshes_ = 0;
  size_t ladder_step_ = 0;
  bool pinned_ = false;
  std::string endpoint_;
  std::string region_;
  std::optional<attempt_result> last_failure_;
  std::string last_region_;
  // The breaker: this operation's range, and the last attempt's admission.
  std::string collection_rid_;
  std::string range_id_;
  std::optional<breaker_key> out_key_;
  breaker_ticket out_ticket_;
  admission_kind out_kind_ = admission_kind::pass;
  bool out_reported_ = false;
  bool out_hedge_loss_ = false;
  // Per-partition failover: 503s of a write retried on its account (once).
  uint32_t ppaf_503_retries_ = 0;
  bool maybe_applied_ = false;
  bool ppaf_in_play(const location_table& table) const;
  std::optional<loop_step> ppaf_decide(const attempt_result& r,
                                       const location_table& table,
                                       policy_time now, bool budget_spent);
};

} // namespace georoute
