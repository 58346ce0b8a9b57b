#include "georoute/actors/collection_cache.hpp"

#include "georoute/actors/internal.hpp"
#include "georoute/actors/policy/lru_cache.hpp"
#include "georoute/actors/policy/metadata_rules.hpp"
#include "georoute/messages/error.hpp"
#include "georoute/transport/auth.hpp"
#include "georoute/transport/codecs.hpp"

#include <algorithm>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <functional>
#include <map>
#include <utility>
#include <vector>

namespace georoute {

namespace {

constexpr const char* who = "the collection cache (georoute.collection_cache)";

using cache_impl_actor =
    collection_cache_actor::extend<caf::reacts_to<engine_wiring>>;

using promise = caf::typed_response_promise<collection_info>;

// Everyone waiting for one key's fetch. A waiter whose request timed out
// stays in the list: delivering to it is harmless. The id tells this fetch's
// answer from that of an earlier one that was abandoned (retry actor down).
// `via` is the retry actor that runs it: the supervisor's re-wiring to a
// successor may arrive before that actor's down message, so the down message
// is matched against the fetches it held, not against the current handle.
struct fetch {
  uint64_t id = 0;
  std::string what; // "read of /dbs/x/colls/y", for errors
  std::vector<promise> waiters;
  caf::actor_addr via;
};

using fetch_map = std::map<std::string, fetch>;

struct cache_state {
  collection_cache_config cfg;
  retry_actor retry;
  caf::actor session_sink;
  caf::actor_addr supervisor;
  lru_cache<std::string, collection_info> by_name{1}; // "dbs/x/colls/y"
  lru_cache<std::string, collection_info> by_rid{1};
  fetch_map name_fetches;
  fetch_map rid_fetches;
  uint64_t next_fetch = 1;
  collection_cache_stats stats;
  static inline const char* name = "georoute.collection_cache";
};

using self_ptr = cache_impl_actor::stateful_pointer<cache_state>;

caf::result<collection_info> join(self_ptr self, fetch_map& fetches,
                                  const std::string& key) {
  auto& f = fetches.at(key);
  if (f.waiters.size() >= self->state.cfg.max_waiters) {
    ++self->state.stats.overloaded;
    return make_error(errc::overloaded,
                      std::to_string(f.waiters.size()) +
                          " callers already wait for " + f.what +
                          " (georoute.cache-max-waiters); retry "
                          "later");
  }
  auto rp = self->make_response_promise<collection_info>();
  f.waiters.push_back(rp);
  return rp;
}

// The waiters of fetch `id` of `key`; empty if that fetch is over.
std::vector<promise> take_waiters(fetch_map& fetches, const std::string& key,
                                  uint64_t id) {
  std::vector<promise> result;
  auto i = fetches.find(key);
  if (i != fetches.end() && i->second.id == id) {
    result = std::move(i->second.waiters);
    fetches.erase(i);
  }
  return result;
}

void deliver_all(std::vector<promise>& waiters,
                 const caf::expected<collection_info>& r) {
  for (auto& w : waiters) {
    if (r)
      w.deliver(*r);
    else
      w.deliver(r.error());
  }
}

void put(cache_state& st, lru_cache<std::string, collection_info>& index,
         const std::string& key, const collection_info& value) {
  if (index.put(key, value)) ++st.stats.evictions;
}

// The metadata read the retry actor runs for one collection.
metadata_request read_request(std::string path, std::string link,
                              bool rid_based) {
  metadata_request req;
  req.what.kind = transport::attempt_kind::resource_read;
  req.what.resource = std::move(path);
  req.what.rid_based = rid_based;
  req.kind = request_kind::metadata_read;
  req.op = op_kind::read;
  req.policy = loop_policy::clearing_session;
  req.collection_name = std::move(link);
  return req;
}

caf::expected<collection_info> decode(const transport::outcome& o,
                                      const std::string& path) {
  auto r = transport::decode_collection(o.body);
  if (!r)
    return make_error(
        errc::protocol_violation,
        "the read of " + path + " answered " + std::to_string(o.status) +
            " from " + o.endpoint +
            " with a collection that does not decode: " + r.error().what);
  return std::move(r).value();
}

// Starts fetch `key` in `fetches` and joins the first waiter; the retry actor
// runs it and `landed` gets the decoded result or the error. No caller's
// timeout reaches it: `caf::infinite`, bounded by the retry actor's own hard
// deadline (and by its monitor, should it go down).
template <class Landed>
caf::result<collection_info> start_fetch(self_ptr self, fetch_map& fetches,
                                         const std::string& key,
                                         metadata_request req, Landed landed) {
  auto& st = self->state;
  ++st.stats.fetches;
  auto id = st.next_fetch++;
  fetches[key] =
      fetch{id, transport::describe(req.what), {}, st.retry.address()};
  auto rp = join(self, fetches, key);
  auto path = req.what.resource;
  self->request(st.retry, caf::infinite, execute_atom_v, std::move(req))
      .then([=](transport::outcome& o) { landed(id, decode(o, path)); },
            [=](caf::error& e) { landed(id, std::move(e)); });
  return rp;
}

void on_name_fetched(self_ptr self, const std::string& link, uint64_t id,
                     caf::expected<collection_info> r) {
  auto& st = self->state;
  auto waiters = take_waiters(st.name_fetches, link, id);
  if (waiters.empty() && st.name_fetches.count(link) > 0)
    return; // an abandoned fetch; a newer one owns the key
  const auto* old = st.by_name.get(link);
  if (!r) {
    ++st.stats.failures;
    if (old)
      st.by_name.erase(link); // never serve a value that a refresh doubted
    deliver_all(waiters, r);
    return;
  }
  if (old && old->rid != r->rid) {
    // Recreated under the same name: the old rid is dead and so are the
    // session tokens kept for the name.
    ++st.stats.recreated;
    st.by_rid.erase(old->rid);
    if (st.session_sink)
      caf::anon_send(st.session_sink, clear_session_atom_v, link);
  }
  put(st, st.by_name, link, *r);
  put(st, st.by_rid, r->rid, *r);
  deliver_all(waiters, r);
}

void on_rid_fetched(self_ptr self, const std::string& rid, uint64_t id,
                    const std::string& path, caf::expected<collection_info> r) {
  auto& st = self->state;
  auto waiters = take_waiters(st.rid_fetches, rid, id);
  if (waiters.empty() && st.rid_fetches.count(rid) > 0) return;
  if (r && rid_mismatch(rid, r->rid))
    r = make_error(errc::protocol_violation, "the read of " + path +
                                                 " answered collection _rid " +
                                                 r->rid + " instead of " + rid);
  if (!r) {
    ++st.stats.failures;
    st.by_rid.erase(rid);
    deliver_all(waiters, r);
    return;
  }
  put(st, st.by_rid, rid, *r);
  deliver_all(waiters, r);
}

// Fails every fetch in flight that `gone` ran (every fetch if `gone` is
// null) with `err` and forgets it: its answer, should one still come, finds
// no waiters. Returns how many waiters it failed.
size_t
fail_fetches(self_ptr self, const caf::actor_addr& gone,
             const std::function<caf::error(const std::string&)>& err_for) {
  auto& st = self->state;
  size_t failed = 0;
  auto fail = [&](fetch& f) {
    auto err = err_for(f.what);
    for (auto& w : f.waiters)
      w.deliver(err);
    failed += f.waiters.size();
  };
  take_entries_of(st.name_fetches, gone, fail);
  take_entries_of(st.rid_fetches, gone, fail);
  return failed;
}

cache_impl_actor::behavior_type
collection_cache_impl(self_ptr self, retry_actor retry, caf::actor session_sink,
                      collection_cache_config cfg, caf::actor_addr supervisor) {
  auto& st = self->state;
  st.cfg = cfg;
  st.by_name = lru_cache<std::string, collection_info>{cfg.capacity};
  st.by_rid = lru_cache<std::string, collection_info>{cfg.capacity};
  st.retry = std::move(retry);
  st.session_sink = std::move(session_sink);
  st.supervisor = std::move(supervisor);
  if (st.retry) self->monitor(st.retry);
  self->set_down_handler([=](caf::down_msg& dm) {
    if (!dm.source) return;
    self->state.stats.collaborator_failures +=
        fail_fetches(self, dm.source, [&](const std::string& what) {
          return collaborator_down("the retry actor (georoute.retry)",
                                   dm.reason, what);
        });
  });
  self->set_exit_handler([=](caf::exit_msg& msg) {
    if (!msg.reason) return;
    fail_fetches(self, caf::actor_addr{}, [&](const std::string&) {
      return stopped_error(who, msg.reason);
    });
    self->quit(msg.reason);
  });
  return {
      [=](by_name_atom, const std::string& raw, bool force,
          const std::string& obsolete_rid) -> caf::result<collection_info> {
        auto link = normalize_collection_link(raw);
        if (!link)
          return make_error(errc::validation_error,
                            "'" + raw +
                                "' is not a collection link (dbs/{db}/colls/"
                                "{coll})");
        auto& st = self->state;
        const auto* hit = st.by_name.get(*link);
        switch (decide_collection_lookup(
            st.name_fetches.count(*link) > 0, hit != nullptr, force,
            hit ? std::string_view{hit->rid} : std::string_view{},
            obsolete_rid)) {
        case collection_lookup::join:
          // A fetch in flight is fresh enough even for a forced refresh.
          ++st.stats.shared_waiters;
          return join(self, st.name_fetches, *link);
        case collection_lookup::hit:
          ++st.stats.hits;
          return *hit;
        case collection_lookup::refetch_skipped:
          // The caller doubts a rid we no longer hold: refreshed since.
          ++st.stats.hits;
          ++st.stats.refetch_skipped;
          return *hit;
        case collection_lookup::refresh:
          ++st.stats.refreshes;
          break;
        case collection_lookup::miss:
          ++st.stats.misses;
          break;
        }
        auto key = *link;
        return start_fetch(self, st.name_fetches, key,
                           read_request("/" + key, key, false),
                           [=](uint64_t id, caf::expected<collection_info> r) {
                             on_name_fetched(self, key, id, std::move(r));
                           });
      },
      [=](by_rid_atom, const std::string& rid) -> caf::result<collection_info> {
        auto path = rid_collection_path(rid);
        if (!path)
          return make_error(errc::validation_error,
                            "'" + rid +
                                "' is not a collection rid (8 bytes of "
                                "base64, '-' for '/')");
        auto& st = self->state;
        if (st.rid_fetches.count(rid) > 0) {
          ++st.stats.shared_waiters;
          return join(self, st.rid_fetches, rid);
        }
        if (const auto* hit = st.by_rid.get(rid)) {
          ++st.stats.hits;
          return *hit;
        }
        ++st.stats.misses;
        auto p = *path;
        // Rid-based: no name whose session tokens the policy could clear.
        return start_fetch(self, st.rid_fetches, rid,
                           read_request(p, std::string{}, true),
                           [=](uint64_t id, caf::expected<collection_info> r) {
                             on_rid_fetched(self, rid, id, p, std::move(r));
                           });
      },
      [=](stats_atom) { return self->state.stats; },
      [=](const engine_wiring& w) {
        auto& st = self->state;
        if (from_supervisor(self, st.supervisor))
          retarget(self, st.retry, w.retry);
      },
  };
}

} // namespace

std::optional<std::string> normalize_collection_link(std::string_view link) {
  while (!link.empty() && link.front() == '/')
    link.remove_prefix(1);
  while (!link.empty() && link.back() == '/')
    link.remove_suffix(1);
  // dbs/{db}/colls/{coll}: four non-empty segments, checked in place.
  std::string_view segs[4];
  size_t count = 0;
  size_t start = 0;
  for (;;) {
    auto slash = link.find('/', start);
    if (count == 4) return std::nullopt;
    segs[count++] = link.substr(start, slash - start);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (count != 4 || segs[0] != "dbs" || segs[2] != "colls" || segs[1].empty() ||
      segs[3].empty())
    return std::nullopt;
  return std::string{link};
}

std::optional<std::string> rid_collection_path(std::string_view rid) {
  std::string text{rid};
  std::replace(text.begin(), text.end(), '-', '/');
  auto bytes = transport::base64_decode(text);
  if (!bytes || bytes->size() != 8) return std::nullopt;
  auto db = transport::base64_encode(bytes->data(), 4);
  std::replace(db.begin(), db.end(), '/', '-');
  return "/dbs/" + db + "/colls/" + std::string{rid};
}

collection_cache_actor spawn_collection_cache(caf::actor_system& sys,
                                              retry_actor retry,
                                              caf::actor session_sink,
                                              collection_cache_config cfg,
                                              caf::actor_addr supervisor) {
  return caf::actor_cast<collection_cache_actor>(
      sys.spawn(collection_cache_impl, std::move(retry),
                std::move(session_sink), cfg, std::move(supervisor)));
}

} // namespace georoute
