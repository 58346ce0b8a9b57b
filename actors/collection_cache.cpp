#include "actors/collection_cache.hpp"

#include "messages/error.hpp"
#include "transport/auth.hpp"
#include "transport/codecs.hpp"

#include <algorithm>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <map>
#include <utility>
#include <vector>

namespace georoute {

namespace {

using promise = caf::typed_response_promise<collection_info>;

// Everyone waiting for one key's fetch. A waiter whose request timed out
// stays in the list: delivering to it is harmless.
using fetch_map = std::map<std::string, std::vector<promise>>;

struct cache_state {
  retry_actor retry;
  caf::actor session_sink;
  std::map<std::string, collection_info> by_name; // "dbs/x/colls/y"
  std::map<std::string, collection_info> by_rid;
  fetch_map name_fetches;
  fetch_map rid_fetches;
  collection_cache_stats stats;
  static inline const char* name = "georoute.collection_cache";
};

using self_ptr = collection_cache_actor::stateful_pointer<cache_state>;

caf::result<collection_info> join(self_ptr self, fetch_map& fetches,
                                  const std::string& key) {
  auto rp = self->make_response_promise<collection_info>();
  fetches[key].push_back(rp);
  return rp;
}

std::vector<promise> take_waiters(fetch_map& fetches, const std::string& key) {
  std::vector<promise> result;
  auto i = fetches.find(key);
  if (i != fetches.end()) {
    result = std::move(i->second);
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

// The metadata read the retry actor runs for one collection.
metadata_request read_request(std::string path, std::string link,
                              bool rid_based) {
  metadata_request req;
  req.method = "GET";
  req.path = std::move(path);
  req.kind = request_kind::metadata_read;
  req.op = op_kind::read;
  req.policy = retry_policy_kind::clearing_session;
  req.collection_name = std::move(link);
  req.rid_based = rid_based;
  return req;
}

caf::expected<collection_info> decode(const transport::outcome& o,
                                      const std::string& path) {
  auto r = transport::decode_collection(o.body);
  if (!r)
    return make_error(
        errc::protocol_violation,
        "GET " + path + " answered " + std::to_string(o.status) + " from " +
            o.endpoint +
            " with a collection that does not decode: " + r.error().what);
  return std::move(r).value();
}

// Runs one fetch in the retry actor; `landed` gets the decoded result or
// the error. No caller's timeout reaches it: `caf::infinite`, bounded by the
// retry actor's own hard deadline.
template <class Landed>
void run_fetch(self_ptr self, metadata_request req, Landed landed) {
  ++self->state.stats.fetches;
  auto path = req.path;
  self->request(self->state.retry, caf::infinite, execute_atom_v,
                std::move(req))
      .then([=](transport::outcome& o) { landed(decode(o, path)); },
            [=](caf::error& e) { landed(std::move(e)); });
}

void on_name_fetched(self_ptr self, const std::string& link,
                     caf::expected<collection_info> r) {
  auto& st = self->state;
  auto waiters = take_waiters(st.name_fetches, link);
  auto old = st.by_name.find(link);
  if (!r) {
    ++st.stats.failures;
    if (old != st.by_name.end())
      st.by_name.erase(old); // never serve a value that a refresh doubted
    deliver_all(waiters, r);
    return;
  }
  if (old != st.by_name.end() && old->second.rid != r->rid) {
    // Recreated under the same name: the old rid is dead and so are the
    // session tokens kept for the name.
    ++st.stats.recreated;
    st.by_rid.erase(old->second.rid);
    if (st.session_sink)
      caf::anon_send(st.session_sink, clear_session_atom_v, link);
  }
  st.by_name[link] = *r;
  st.by_rid[r->rid] = *r;
  deliver_all(waiters, r);
}

void on_rid_fetched(self_ptr self, const std::string& rid,
                    const std::string& path, caf::expected<collection_info> r) {
  auto& st = self->state;
  auto waiters = take_waiters(st.rid_fetches, rid);
  if (r && r->rid != rid)
    r = make_error(errc::protocol_violation, "GET " + path +
                                                 " answered collection _rid " +
                                                 r->rid + " instead of " + rid);
  if (!r) {
    ++st.stats.failures;
    st.by_rid.erase(rid);
    deliver_all(waiters, r);
    return;
  }
  st.by_rid[rid] = *r;
  deliver_all(waiters, r);
}

collection_cache_actor::behavior_type
collection_cache_impl(self_ptr self, retry_actor retry,
                      caf::actor session_sink) {
  self->state.retry = std::move(retry);
  self->state.session_sink = std::move(session_sink);
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
        if (st.name_fetches.count(*link) > 0) {
          // A fetch in flight is fresh enough even for a forced refresh.
          ++st.stats.shared_waiters;
          return join(self, st.name_fetches, *link);
        }
        auto hit = st.by_name.find(*link);
        if (hit != st.by_name.end()) {
          if (!force) {
            ++st.stats.hits;
            return hit->second;
          }
          if (!obsolete_rid.empty() && obsolete_rid != hit->second.rid) {
            // The caller doubts a rid we no longer hold: refreshed since.
            ++st.stats.hits;
            ++st.stats.refetch_skipped;
            return hit->second;
          }
          ++st.stats.refreshes;
        } else {
          ++st.stats.misses;
        }
        auto rp = join(self, st.name_fetches, *link);
        auto key = *link;
        run_fetch(self, read_request("/" + key, key, false),
                  [=](caf::expected<collection_info> r) {
                    on_name_fetched(self, key, std::move(r));
                  });
        return rp;
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
        auto hit = st.by_rid.find(rid);
        if (hit != st.by_rid.end()) {
          ++st.stats.hits;
          return hit->second;
        }
        ++st.stats.misses;
        auto rp = join(self, st.rid_fetches, rid);
        auto p = *path;
        // Rid-based: no name whose session tokens the policy could clear.
        run_fetch(self, read_request(p, std::string{}, true),
                  [=](caf::expected<collection_info> r) {
                    on_rid_fetched(self, rid, p, std::move(r));
                  });
        return rp;
      },
      [=](stats_atom) { return self->state.stats; },
  };
}

} // namespace

std::optional<std::string> normalize_collection_link(std::string_view link) {
  while (!link.empty() && link.front() == '/')
    link.remove_prefix(1);
  while (!link.empty() && link.back() == '/')
    link.remove_suffix(1);
  std::vector<std::string_view> segs;
  size_t start = 0;
  for (;;) {
    auto slash = link.find('/', start);
    segs.push_back(link.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (segs.size() != 4 || segs[0] != "dbs" || segs[2] != "colls" ||
      segs[1].empty() || segs[3].empty())
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
                                              caf::actor session_sink) {
  return sys.spawn(collection_cache_impl, std::move(retry),
                   std::move(session_sink));
}

} // namespace georoute
