#include "georoute/actors/pkrange_cache.hpp"

#include "georoute/actors/collection_cache.hpp"
#include "georoute/actors/internal.hpp"
#include "georoute/actors/policy/lru_cache.hpp"
#include "georoute/actors/policy/metadata_rules.hpp"
#include "georoute/actors/policy/routing_map.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/transport/codecs.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace georoute {

namespace {

// The hard deadline of one load; only this file can name it.
struct pk_load_deadline {
  std::string rid;
  uint64_t load = 0;
};

} // namespace

} // namespace georoute

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(georoute::pk_load_deadline)

namespace georoute {

namespace {

constexpr const char* who =
    "the partition-range cache (georoute.pkrange_cache)";

using cache_impl_actor =
    pkrange_cache_actor::extend<caf::reacts_to<engine_wiring>,
                                caf::reacts_to<pk_load_deadline>>;

using map_ptr = std::shared_ptr<const routing_map>;
using range_list = std::vector<partition_key_range>;

// A caller waiting for a load: it wants the snapshot, or the ranges that
// overlap `overlap`.
struct waiter {
  caf::typed_response_promise<routing_snapshot> snapshot;
  caf::typed_response_promise<range_list> ranges;
  std::optional<epk_range> overlap;
};

// One load of a collection's map, page after page.
struct load {
  uint64_t id = 0;
  map_ptr base;     ///< the map the refresh starts from; null for a cold load
  std::string etag; ///< the next If-None-Match
  /// The endpoint that served the last page: the next page starts there
  /// (`metadata_request::start_endpoint`).
  std::string endpoint;
  range_list ranges;
  uint32_t pages = 0;
  std::vector<waiter> waiters;
  // The retry actor running the page in flight: its down message may come
  // after the supervisor re-wired us to a successor.
  caf::actor_addr via;
};

struct cache_state {
  pkrange_cache_config cfg;
  retry_actor retry;
  caf::actor_addr supervisor;
  lru_cache<std::string, map_ptr> maps{1}; // by collection rid
  std::map<std::string, load> loads;       // by collection rid
  uint64_t next_load = 1;
  pkrange_cache_stats stats;
  static inline const char* name = "georoute.pkrange_cache";
};

using self_ptr = cache_impl_actor::stateful_pointer<cache_state>;

caf::error not_a_rid(const std::string& rid) {
  return make_error(errc::validation_error,
                    "'" + rid +
                        "' is not a collection rid (8 bytes of base64, '-' "
                        "for '/')");
}

metadata_request page_request(const std::string& path, const std::string& etag,
                              bool first_page, std::string start_endpoint) {
  metadata_request req;
  req.first_page = first_page;
  req.start_endpoint = std::move(start_endpoint);
  // Every range of the page (-1), the changes since `etag` when set.
  req.what.kind = transport::attempt_kind::pkranges_read;
  req.what.resource = path;
  req.what.rid_based = true;
  req.what.max_item_count = -1;
  req.what.if_none_match = etag;
  req.kind = request_kind::pkranges_read;
  req.op = op_kind::read;
  req.policy = loop_policy::partition_range;
  return req;
}

// The load of `rid` with this id, or nullptr if it is over.
load* current_load(self_ptr self, const std::string& rid, uint64_t id) {
  auto i = self->state.loads.find(rid);
  if (i == self->state.loads.end() || i->second.id != id) return nullptr;
  return &i->second;
}

map_ptr current_map(self_ptr self, const std::string& rid) {
  const auto* m = self->state.maps.get(rid);
  return m ? *m : map_ptr{};
}

void answer(waiter& w, const std::string& rid, const map_ptr& map) {
  if (w.overlap)
    w.ranges.deliver(map->overlapping(*w.overlap));
  else
    w.snapshot.deliver(routing_snapshot{map, rid});
}

void answer(waiter& w, const caf::error& err) {
  if (w.overlap)
    w.ranges.deliver(err);
  else
    w.snapshot.deliver(err);
}

void finish(self_ptr self, const std::string& rid, uint64_t id,
            caf::expected<map_ptr> r) {
  auto& st = self->state;
  if (!current_load(self, rid, id)) return;
  auto i = st.loads.find(rid);
  auto waiters = std::move(i->second.waiters);
  st.loads.erase(i);
  if (!r) {
    ++st.stats.failures;
    // A collection that is gone takes its map with it (.NET removes the
    // entry on a 404 refresh); any other failure keeps the old map.
    if (code_of(r.error()) == errc::not_found && st.maps.erase(rid))
      ++st.stats.dropped;
    for (auto& w : waiters)
      answer(w, r.error());
    return;
  }
  if (st.maps.put(rid, *r)) ++st.stats.evictions;
  for (auto& w : waiters)
    answer(w, rid, *r);
}

// The server said 304: the collected ranges become the new map, whole or
// not at all.
void build(self_ptr self, const std::string& rid, uint64_t id) {
  auto* l = current_load(self, rid, id);
  auto m = l->base
               ? l->base->try_combine(l->ranges, l->etag)
               : routing_map::create_complete(std::move(l->ranges), l->etag);
  if (!m) {
    auto what = std::string{l->base ? "refreshed" : "loaded"} +
                " pkranges of collection " + rid + " after " +
                std::to_string(l->pages) +
                (l->pages == 1 ? " page" : " pages") +
                " do not form a complete routing map: " + m.error().what +
                (l->base ? "; the previous map stays" : "");
    finish(self, rid, id,
           make_error(errc::protocol_violation, std::move(what)));
    return;
  }
  finish(self, rid, id,
         std::make_shared<const routing_map>(std::move(m).value()));
}

void request_page(self_ptr self, const std::string& rid,
                  const std::string& path, uint64_t id);

void on_page(self_ptr self, const std::string& rid, const std::string& path,
             uint64_t id, const transport::outcome& o) {
  auto* l = current_load(self, rid, id);
  if (!l) return;
  if (o.status == 304) {
    if (!o.etag.empty()) l->etag = o.etag;
    build(self, rid, id);
    return;
  }
  auto where = "the partition-key ranges of " + path + " answered " +
               std::to_string(o.status) + " from " + o.endpoint;
  auto page = transport::decode_pkranges(o.body, o.etag);
  if (!page) {
    finish(self, rid, id,
           make_error(errc::protocol_violation,
                      where + " with a page that does not decode: " +
                          page.error().what));
    return;
  }
  if (page->etag.empty()) {
    finish(self, rid, id,
           make_error(errc::protocol_violation,
                      where + " without an etag header: the incremental feed "
                              "cannot continue"));
    return;
  }
  for (auto& r : page->ranges)
    l->ranges.push_back(std::move(r));
  l->etag = page->etag;
  l->endpoint = o.endpoint;
  if (l->pages >= self->state.cfg.max_pages) {
    finish(self, rid, id,
           make_error(errc::protocol_violation, where + ": no 304 after " +
                                                    std::to_string(l->pages) +
                                                    " pages"));
    return;
  }
  request_page(self, rid, path, id);
}

void request_page(self_ptr self, const std::string& rid,
                  const std::string& path, uint64_t id) {
  auto* l = current_load(self, rid, id);
  ++l->pages;
  ++self->state.stats.pages;
  l->via = self->state.retry.address();
  // `caf::infinite`: no caller's timeout reaches the load; the load's own
  // deadline bounds all its pages together.
  self->request(self->state.retry, caf::infinite, execute_atom_v,
                page_request(path, l->etag, l->pages == 1, l->endpoint))
      .then([=](transport::outcome& o) { on_page(self, rid, path, id, o); },
            [=](caf::error& e) { finish(self, rid, id, std::move(e)); });
}

// The error for a caller who would exceed the waiter cap of the load of
// `rid` in flight; checked before a promise exists (a promise made and then
// dropped would answer nothing).
std::optional<caf::error> over_capacity(self_ptr self, const std::string& rid) {
  auto& st = self->state;
  auto running = st.loads.find(rid);
  if (running == st.loads.end() ||
      running->second.waiters.size() < st.cfg.max_waiters)
    return std::nullopt;
  ++st.stats.overloaded;
  return make_error(errc::overloaded,
                    std::to_string(running->second.waiters.size()) +
                        " callers already wait for the pkranges of "
                        "collection " +
                        rid + " (georoute.cache-max-waiters); retry later");
}

// Adds `w` to the load of `rid`, starting one from the current map if none
// is running.
void enqueue(self_ptr self, const std::string& rid, const std::string& path,
             waiter w) {
  auto& st = self->state;
  auto running = st.loads.find(rid);
  if (running != st.loads.end()) {
    ++st.stats.shared_waiters;
    running->second.waiters.push_back(std::move(w));
    return;
  }
  auto base = current_map(self, rid);
  ++(base ? st.stats.refreshes : st.stats.misses);
  load l;
  l.id = st.next_load++;
  l.base = base;
  l.etag = base ? base->etag() : std::string{};
  l.waiters.push_back(std::move(w));
  auto id = l.id;
  st.loads.emplace(rid, std::move(l));
  self->delayed_send(self, st.cfg.load_deadline, pk_load_deadline{rid, id});
  request_page(self, rid, path, id);
}

void on_load_deadline(self_ptr self, const pk_load_deadline& m) {
  auto* l = current_load(self, m.rid, m.load);
  if (!l) return;
  ++self->state.stats.deadline_trips;
  auto pages = l->pages;
  finish(self, m.rid, m.load,
         make_error(errc::deadline_exceeded,
                    "loading the pkranges of collection " + m.rid +
                        " did not finish within the hard deadline of " +
                        format_duration(self->state.cfg.load_deadline) + " (" +
                        std::to_string(pages) +
                        (pages == 1 ? " page" : " pages") + " requested)"));
}

// Fails every load in flight and forgets it.
// Fails the loads whose page `gone` runs (all of them if `gone` is null);
// returns how many callers it answered.
size_t fail_loads(self_ptr self, const caf::actor_addr& gone,
                  const caf::error& err) {
  size_t failed = 0;
  take_entries_of(self->state.loads, gone, [&](load& l) {
    for (auto& w : l.waiters)
      answer(w, err);
    failed += l.waiters.size();
  });
  return failed;
}

cache_impl_actor::behavior_type pkrange_cache_impl(self_ptr self,
                                                   retry_actor retry,
                                                   pkrange_cache_config cfg,
                                                   caf::actor_addr supervisor) {
  auto& st = self->state;
  st.retry = std::move(retry);
  st.cfg = cfg;
  st.maps = lru_cache<std::string, map_ptr>{cfg.capacity};
  st.supervisor = std::move(supervisor);
  if (st.retry) self->monitor(st.retry);
  self->set_down_handler([=](caf::down_msg& dm) {
    if (!dm.source) return;
    self->state.stats.collaborator_failures +=
        fail_loads(self, dm.source,
                   collaborator_down("the retry actor (georoute.retry)",
                                     dm.reason, "a pkranges load"));
  });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (!msg.reason) return;
    fail_loads(self, caf::actor_addr{}, stopped_error(who, msg.reason));
    self->quit(msg.reason);
  });
  return {
      [=](pkranges_atom, const std::string& rid,
          const std::string& known_etag) -> caf::result<routing_snapshot> {
        auto path = rid_collection_path(rid);
        if (!path) return not_a_rid(rid);
        auto& st = self->state;
        auto map = current_map(self, rid);
        switch (decide_pkrange_lookup(map != nullptr,
                                      map ? std::string_view{map->etag()} : "",
                                      known_etag)) {
        case pkrange_lookup::hit:
          ++st.stats.hits;
          return routing_snapshot{map, rid};
        case pkrange_lookup::refresh_skipped:
          ++st.stats.hits;
          ++st.stats.refresh_skipped;
          return routing_snapshot{map, rid};
        case pkrange_lookup::load:
          break;
        }
        if (auto err = over_capacity(self, rid)) return *err;
        waiter w;
        w.snapshot = self->make_response_promise<routing_snapshot>();
        auto rp = w.snapshot;
        enqueue(self, rid, *path, std::move(w));
        return rp;
      },
      [=](overlap_atom, const std::string& rid, const epk_range& range,
          bool force) -> caf::result<range_list> {
        auto path = rid_collection_path(rid);
        if (!path) return not_a_rid(rid);
        auto& st = self->state;
        auto map = current_map(self, rid);
        if (decide_overlap_lookup(map != nullptr, force) ==
            pkrange_lookup::hit) {
          ++st.stats.hits;
          return map->overlapping(range);
        }
        if (auto err = over_capacity(self, rid)) return *err;
        waiter w;
        w.ranges = self->make_response_promise<range_list>();
        w.overlap = range;
        auto rp = w.ranges;
        enqueue(self, rid, *path, std::move(w));
        return rp;
      },
      [=](stats_atom) { return self->state.stats; },
      [=](const engine_wiring& w) {
        auto& st = self->state;
        if (from_supervisor(self, st.supervisor))
          retarget(self, st.retry, w.retry);
      },
      [=](const pk_load_deadline& m) { on_load_deadline(self, m); },
  };
}

} // namespace

pkrange_cache_actor spawn_pkrange_cache(caf::actor_system& sys,
                                        retry_actor retry,
                                        pkrange_cache_config cfg,
                                        caf::actor_addr supervisor) {
  return caf::actor_cast<pkrange_cache_actor>(sys.spawn(
      pkrange_cache_impl, std::move(retry), cfg, std::move(supervisor)));
}

} // namespace georoute
