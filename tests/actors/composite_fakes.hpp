#pragma once

// Fakes for the composite executors (query, change feed) in virtual time:
// a router that records every sub-operation and is answered by hand, and
// metadata caches that answer at once and record what they were asked.

#include "georoute/actors/policy/routing_map.hpp"
#include "georoute/messages/error.hpp"
#include "tests/actors/actor_fixture.hpp"
#include "tests/actors/fake_caches.hpp"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace georoute::test {

/// What a `fake_router` was asked, in order.
struct router_log {
  std::vector<data_request> requests;
  std::vector<bool> answered;
  size_t pending() const {
    size_t n = 0;
    for (bool a : answered)
      n += a ? 0 : 1;
    return n;
  }
};

struct fake_router_state {
  std::vector<caf::response_promise> promises;
  static inline const char* name = "test.fake_router";
};

/// A router that holds every `(route_atom, data_request)` until the test
/// answers it: `(answer_atom, i, data_response)` or `(answer_atom, i,
/// caf::error)`. Cast to `router_actor` for an executor.
inline caf::behavior fake_router(caf::stateful_actor<fake_router_state>* self,
                                 std::shared_ptr<router_log> log) {
  return {
      [=](route_atom, data_request& r) -> caf::result<data_response> {
        log->requests.push_back(std::move(r));
        log->answered.push_back(false);
        self->state.promises.push_back(self->make_response_promise());
        return caf::delegated<data_response>{};
      },
      [=](answer_atom, uint64_t i, data_response& r) {
        log->answered.at(i) = true;
        self->state.promises.at(i).deliver(std::move(r));
      },
      [=](answer_atom, uint64_t i, caf::error& e) {
        log->answered.at(i) = true;
        self->state.promises.at(i).deliver(std::move(e));
      },
  };
}

inline const std::string composite_rid = "aaaaAAAAAAA=";

inline collection_info composite_collection() {
  collection_info c;
  c.id = "c";
  c.rid = composite_rid;
  c.self = "dbs/aaaaAA==/colls/" + composite_rid + "/";
  c.partition_key.paths = {"/pk"};
  return c;
}

inline partition_key_range range_of(std::string id, std::string min,
                                    std::string max,
                                    std::vector<std::string> parents = {}) {
  partition_key_range r;
  r.id = std::move(id);
  r.min_inclusive = std::move(min);
  r.max_exclusive = std::move(max);
  r.parents = std::move(parents);
  return r;
}

/// The ranges the service has now, and what a `fake_range_cache` was asked.
struct range_log {
  std::vector<partition_key_range> now = {range_of("0", "", "FF")};
  /// Every overlap lookup: the span and whether it was forced.
  std::vector<std::pair<epk_range, bool>> overlaps;
  /// Every map read: the etag it named (non-empty: a refresh).
  std::vector<std::string> map_reads;
  /// Answers every overlap lookup with these instead of `now`'s.
  std::optional<std::vector<partition_key_range>> overlap_answer;

  /// The routing-map refreshes these lookups asked the cache for.
  int refreshes() const {
    int n = 0;
    for (const auto& o : overlaps)
      n += o.second ? 1 : 0;
    for (const auto& etag : map_reads)
      n += etag.empty() ? 0 : 1;
    return n;
  }
};

/// A partition-range cache that serves `log->now` at once.
inline pkrange_cache_actor::behavior_type
fake_range_cache(pkrange_cache_actor::pointer, std::shared_ptr<range_log> log) {
  return {
      [log](pkranges_atom, const std::string& rid, const std::string& known) {
        log->map_reads.push_back(known);
        auto map = routing_map::create_complete(
            log->now, "etag-" + std::to_string(log->map_reads.size()));
        routing_snapshot s;
        s.collection_rid = rid;
        s.map = std::make_shared<const routing_map>(std::move(map.value()));
        return s;
      },
      [log](overlap_atom, const std::string&, const epk_range& span,
            bool force) {
        log->overlaps.emplace_back(span, force);
        if (log->overlap_answer) return *log->overlap_answer;
        std::vector<partition_key_range> out;
        for (const auto& r : log->now)
          if (r.min_inclusive < span.max && span.min < r.max_exclusive)
            out.push_back(r);
        return out;
      },
      [](stats_atom) { return pkrange_cache_stats{}; },
  };
}

/// Diagnostics of one sub-operation as the router reports them: `n`
/// attempts in `region`, each charged `charge`.
inline diagnostics sub_diag(size_t n, double charge,
                            const std::string& region = "West US") {
  diagnostics d;
  for (size_t i = 0; i < n; ++i) {
    attempt_record a;
    a.region = region;
    a.status = 200;
    a.request_charge = charge;
    d.attempts.push_back(a);
  }
  d.request_charge = charge * static_cast<double>(n);
  return d;
}

/// The error the router answers when a targeted range is gone: after its
/// one refresh of the routing map.
inline caf::error range_gone(const std::string& id, double charge = 1) {
  auto d = sub_diag(1, charge);
  d.attempts[0].status = 410;
  d.attempts[0].substatus = 1002;
  d.metadata_refreshes = 1;
  d.range_id = id;
  return make_error(errc::partition_range_gone,
                    "query of range " + id + ": partition-key range " + id +
                        " is gone (it split or merged); read its successors",
                    d);
}

/// Fixture base of the executor tests: the fake router and range cache's
/// logs, the router (spawned at once), the executor under test (`exec`,
/// spawned by the test), and the test's hand on the router's answers.
class composite_test : public actor_test {
protected:
  std::shared_ptr<router_log> routed = std::make_shared<router_log>();
  std::shared_ptr<range_log> ranges = std::make_shared<range_log>();
  caf::actor router = sys.spawn(fake_router, routed);
  caf::actor exec;

  /// Answers sub-operation `i` and runs what follows.
  void answer(uint64_t i, data_response r) {
    self->send(router, answer_atom_v, i, std::move(r));
    run();
  }

  void answer(uint64_t i, caf::error e) {
    self->send(router, answer_atom_v, i, std::move(e));
    run();
  }

  const data_request& sent(size_t i) const { return routed->requests.at(i); }

  void TearDown() override {
    for (auto& a : {router, exec})
      if (a) self->send_exit(a, caf::exit_reason::user_shutdown);
    run();
  }
};

} // namespace georoute::test
