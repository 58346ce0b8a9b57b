#include "actors/pkrange_cache.hpp"

#include "actors/collection_cache.hpp"
#include "actors/policy/routing_map.hpp"
#include "messages/error.hpp"
#include "transport/codecs.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace georoute {

namespace {

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
  range_list ranges;
  uint32_t pages = 0;
  std::vector<waiter> waiters;
};

struct entry {
  map_ptr map;
  std::optional<load> loading;
};

struct cache_state {
  pkrange_cache_config cfg;
  retry_actor retry;
  std::map<std::string, entry> entries; // by collection rid
  uint64_t next_load = 1;
  pkrange_cache_stats stats;
  static inline const char* name = "georoute.pkrange_cache";
};

using self_ptr = pkrange_cache_actor::stateful_pointer<cache_state>;

caf::error not_a_rid(const std::string& rid) {
  return make_error(errc::validation_error,
                    "'" + rid +
                        "' is not a collection rid (8 bytes of base64, '-' "
                        "for '/')");
}

metadata_request page_request(const std::string& path,
                              const std::string& etag) {
  metadata_request req;
  req.method = "GET";
  req.path = path;
  req.headers = {{"a-im", "Incremental Feed"}, {"x-ms-max-item-count", "-1"}};
  if (!etag.empty()) req.headers.emplace_back("if-none-match", etag);
  req.kind = request_kind::pkranges_read;
  req.op = op_kind::read;
  req.policy = retry_policy_kind::partition_range;
  req.rid_based = true;
  return req;
}

// The load of `rid` with this id, or nullptr if it is over.
load* current_load(self_ptr self, const std::string& rid, uint64_t id) {
  auto i = self->state.entries.find(rid);
  if (i == self->state.entries.end() || !i->second.loading ||
      i->second.loading->id != id)
    return nullptr;
  return &*i->second.loading;
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
  auto i = st.entries.find(rid);
  auto waiters = std::move(i->second.loading->waiters);
  i->second.loading.reset();
  if (!r) {
    ++st.stats.failures;
    // A collection that is gone takes its map with it (.NET removes the
    // entry on a 404 refresh); any other failure keeps the old map.
    if (code_of(r.error()) == errc::not_found && i->second.map) {
      ++st.stats.dropped;
      i->second.map.reset();
    }
    if (!i->second.map) st.entries.erase(i);
    for (auto& w : waiters)
      answer(w, r.error());
    return;
  }
  i->second.map = *r;
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
  auto where = "GET " + path + " answered " + std::to_string(o.status) +
               " from " + o.endpoint;
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
  // `caf::infinite`: no caller's timeout reaches the load; the retry actor's
  // hard deadline bounds each page.
  self->request(self->state.retry, caf::infinite, execute_atom_v,
                page_request(path, l->etag))
      .then([=](transport::outcome& o) { on_page(self, rid, path, id, o); },
            [=](caf::error& e) { finish(self, rid, id, std::move(e)); });
}

// Adds `w` to the load of `rid`, starting one from the current map if none
// is running.
void enqueue(self_ptr self, const std::string& rid, const std::string& path,
             waiter w) {
  auto& st = self->state;
  auto& e = st.entries[rid];
  if (e.loading) {
    ++st.stats.shared_waiters;
    e.loading->waiters.push_back(std::move(w));
    return;
  }
  ++(e.map ? st.stats.refreshes : st.stats.misses);
  load l;
  l.id = st.next_load++;
  l.base = e.map;
  l.etag = e.map ? e.map->etag() : std::string{};
  l.waiters.push_back(std::move(w));
  auto id = l.id;
  e.loading = std::move(l);
  request_page(self, rid, path + "/pkranges", id);
}

pkrange_cache_actor::behavior_type
pkrange_cache_impl(self_ptr self, retry_actor retry, pkrange_cache_config cfg) {
  self->state.retry = std::move(retry);
  self->state.cfg = cfg;
  return {
      [=](pkranges_atom, const std::string& rid,
          const std::string& known_etag) -> caf::result<routing_snapshot> {
        auto path = rid_collection_path(rid);
        if (!path) return not_a_rid(rid);
        auto& st = self->state;
        auto i = st.entries.find(rid);
        if (i != st.entries.end() && i->second.map) {
          const auto& map = i->second.map;
          if (known_etag.empty()) {
            ++st.stats.hits;
            return routing_snapshot{map, rid};
          }
          if (known_etag != map->etag()) {
            ++st.stats.hits;
            ++st.stats.refresh_skipped;
            return routing_snapshot{map, rid};
          }
        }
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
        auto i = st.entries.find(rid);
        if (!force && i != st.entries.end() && i->second.map) {
          ++st.stats.hits;
          return i->second.map->overlapping(range);
        }
        waiter w;
        w.ranges = self->make_response_promise<range_list>();
        w.overlap = range;
        auto rp = w.ranges;
        enqueue(self, rid, *path, std::move(w));
        return rp;
      },
      [=](stats_atom) { return self->state.stats; },
  };
}

} // namespace

pkrange_cache_actor spawn_pkrange_cache(caf::actor_system& sys,
                                        retry_actor retry,
                                        pkrange_cache_config cfg) {
  return sys.spawn(pkrange_cache_impl, std::move(retry), cfg);
}

} // namespace georoute
