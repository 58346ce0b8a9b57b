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

#include "actors/policy/client_retry_policy.hpp"
#include "actors/policy/location_table.hpp"
#include "actors/policy/metadata_rules.hpp"
#include "actors/policy/result.hpp"
#include "actors/policy/timeout_ladder.hpp"

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

/// Which retry policy decides after the ladder.
enum class loop_policy : uint8_t {
  client,           ///< the client retry policy
  partition_range,  ///< the pkranges feed's region hops
  clearing_session, ///< client, and a final 404/1002 on a name-based
                    ///< request clears the name's session tokens
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
  client_retry_options client;
};

/// Where and how the next attempt goes.
struct attempt_plan {
  std::string endpoint;
  std::string region;
  std::chrono::milliseconds timeout{0};
  /// Send the hub-region-only header (a read's last session retry).
  bool hub_header = false;
  uint32_t number = 0; ///< 1 for the first attempt
};

/// Side effects of a decision: carried out whatever comes next.
struct loop_effects {
  std::string mark_endpoint; ///< empty: no mark
  bool mark_read = false;
  bool mark_write = false;
  bool refresh_account = false;
  bool force_refresh = false;
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

  uint32_t attempts() const { return attempts_; }
  uint32_t metadata_refreshes() const { return metadata_refreshes_; }
  /// The endpoint and region of the last attempt.
  const std::string& endpoint() const { return endpoint_; }
  const std::string& region() const { return region_; }
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
};

} // namespace georoute
