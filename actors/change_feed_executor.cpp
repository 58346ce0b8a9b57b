#include "georoute/actors/change_feed_executor.hpp"

#include "georoute/actors/collection_cache.hpp"
#include "georoute/actors/composite.hpp"
#include "georoute/actors/policy/change_feed.hpp"
#include "georoute/messages/error.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

namespace georoute {

namespace {

feed_origin origin_of(feed_start s) {
  switch (s) {
  case feed_start::beginning:
    return feed_origin::beginning;
  case feed_start::now:
    return feed_origin::now;
  case feed_start::time:
    return feed_origin::time;
  }
  return feed_origin::beginning;
}

feed_scope scope_of(const change_feed_request& req, std::string link) {
  feed_scope s;
  s.collection_link = std::move(link);
  s.partition_key_json = req.partition_key_json;
  s.range_min = req.range_min;
  s.range_max = req.range_max;
  s.start = origin_of(req.start);
  s.start_time_ms = req.start_time_ms;
  return s;
}

/// The feed a request asks for, or a problem naming the field. A
/// continuation is checked against the scope the request names (a v1 token
/// may need it: see change_feed.hpp). Every problem is the caller's to fix:
/// both callers answer it as `errc::validation_error`.
result<change_feed_state> feed_of(const change_feed_request& req,
                                  const std::string& link, int64_t now_ms) {
  auto scope = scope_of(req, link);
  if (req.continuation.empty()) return change_feed_state::fresh(scope, now_ms);
  return change_feed_state::resume(req.continuation, scope);
}

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct executor_state {
  change_feed_collaborators with;
  change_feed_request req;
  std::string link;
  composite_operation op;
  std::optional<change_feed_state> feed;
  static inline const char* name = "georoute.change_feed_executor";
};

using self_ptr = caf::stateful_actor<executor_state>*;

void fail(self_ptr self, errc code, const std::string& text) {
  if (self->state.op.fail(code, text, self->clock().now())) self->quit();
}

void fail(self_ptr self, const caf::error& e, const std::string& where) {
  if (self->state.op.fail(e, where, self->clock().now(), self->system()))
    self->quit();
}

/// Answers the page: `documents` is the JSON array text of `count`
/// documents.
void finish(self_ptr self, std::string documents, size_t count) {
  auto& st = self->state;
  if (st.op.done()) return;
  change_feed_page p;
  p.count = static_cast<uint32_t>(count);
  p.caught_up = count == 0;
  p.documents = std::move(documents);
  p.continuation = st.feed->continuation();
  p.ranges = static_cast<uint32_t>(st.feed->size());
  p.diag = std::move(*st.op.finish(self->clock().now()));
  p.request_charge = p.diag.request_charge;
  st.op.promise().deliver(std::move(p));
  self->quit();
}

/// The page's documents without those `drop` marks (replays): parsed,
/// filtered and written again, which only a replay costs.
std::string without(std::string_view documents, const std::vector<bool>& drop) {
  auto docs = nlohmann::json::parse(documents);
  auto kept = nlohmann::json::array();
  for (size_t i = 0; i < docs.size(); ++i)
    if (i >= drop.size() || !drop[i]) kept.push_back(std::move(docs[i]));
  return kept.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void step(self_ptr self);

// The feed reads one cursor at a time: its range-gone streak is the
// request's, under one key.
const std::string front_cursor = "front";

void on_answer(self_ptr self, data_response& r) {
  auto& st = self->state;
  st.op.gone().answered(front_cursor);
  if (!r.diag.range_id.empty()) st.op.diag().range_id = r.diag.range_id;
  st.op.take(std::move(r.diag));
  if (r.status == 304) {
    auto e = st.feed->on_not_modified(r.etag);
    if (!e) return fail(self, errc::protocol_violation, e.error().what);
  } else {
    // The documents go to the caller as the service wrote them: read once
    // for their positions, not built and written again.
    auto page = scan_feed_page(r.body);
    if (!page) return fail(self, errc::protocol_violation, page.error().what);
    auto e = st.feed->on_page(r.etag, page->lsns);
    if (!e) return fail(self, errc::protocol_violation, e.error().what);
    if (e->kept > 0) {
      if (e->dropped == 0)
        return finish(self, std::string{page->documents}, e->kept);
      return finish(self, without(page->documents, e->drop), e->kept);
    }
  }
  if (st.feed->caught_up()) return finish(self, "[]", 0);
  step(self);
}

// A range gone: the router refreshed the routing map before it answered,
// so the next lookup of the ranges under the cursor finds the successors
// without forcing the cache.
void on_failure(self_ptr self, caf::error& e) {
  auto& st = self->state;
  if (const auto* d = diagnostics_of(e))
    if (!d->range_id.empty()) st.op.diag().range_id = d->range_id;
  st.op.take(e);
  const auto& c = st.feed->front();
  auto span = "[" + c.min + ", " + c.max + ")";
  if (code_of(e) == errc::partition_range_gone &&
      !st.feed->by_partition_key()) {
    if (st.op.gone().gone(front_cursor) == gone_step::give_up)
      return fail(self, e,
                  "the range under " + span + " is still gone after " +
                      std::to_string(max_gone_in_a_row) +
                      " refreshes of the routing map");
    return step(self);
  }
  fail(self, e, "reading " + span);
}

void send_read(self_ptr self, const feed_target* where) {
  auto& st = self->state;
  auto left = st.op.next_budget(self->clock().now());
  if (!left) {
    const auto& c = st.feed->front();
    if (st.op.fail_budget("the next read of [" + c.min + ", " + c.max + ")",
                          self->clock().now()))
      self->quit();
    return;
  }
  auto budget = *left;
  data_request r;
  r.op = data_op::change_feed;
  r.collection_link = st.link;
  r.options = st.req.options;
  r.options.continuation.clear();
  r.options.max_item_count = st.req.max_item_count;
  r.options.if_match.clear();
  r.options.if_none_match = st.feed->if_none_match();
  r.if_modified_since = st.feed->if_modified_since();
  if (where == nullptr) {
    r.options.partition_key_json = st.feed->partition_key_json();
  } else {
    r.options.partition_key_json.clear();
    r.range_id = where->range_id;
    r.start_epk = where->start_epk;
    r.end_epk = where->end_epk;
  }
  r.options.budget = budget;
  self->request(st.with.router, caf::infinite, route_atom_v, std::move(r))
      .then([=](data_response& page) { on_answer(self, page); },
            [=](caf::error& e) { on_failure(self, e); });
}

void step(self_ptr self) {
  auto& st = self->state;
  if (st.op.done()) return;
  if (st.feed->by_partition_key()) return send_read(self, nullptr);
  const auto& c = st.feed->front();
  epk_range span{c.min, c.max, true, false};
  self->request(st.with.pkranges, caf::infinite, overlap_atom_v,
                st.feed->collection_rid(), span, false)
      .then(
          [=](std::vector<partition_key_range>& ranges) {
            auto& st = self->state;
            auto t = st.feed->target(ranges);
            if (!t) return fail(self, errc::protocol_violation, t.error().what);
            send_read(self, &*t);
          },
          [=](caf::error& e) { fail(self, e, "the partition-key ranges"); });
}

void start(self_ptr self) {
  auto& st = self->state;
  auto feed = feed_of(st.req, st.link, unix_ms_now());
  if (!feed) return fail(self, errc::validation_error, feed.error().what);
  st.feed.emplace(std::move(*feed));
  self->request(st.with.collections, caf::infinite, by_name_atom_v, st.link,
                false, std::string{})
      .then(
          [=](collection_info& c) {
            auto& st = self->state;
            st.op.diag().collection_rid = c.rid;
            if (auto p = st.feed->bind(c.rid))
              return fail(self, errc::validation_error, p->what);
            st.feed->begin_request();
            step(self);
          },
          [=](caf::error& e) { fail(self, e, "the collection"); });
}

caf::behavior executor_impl(self_ptr self, change_feed_collaborators with) {
  self->state.with = std::move(with);
  return {
      [=](route_atom,
          change_feed_request& req) -> caf::result<change_feed_page> {
        auto& st = self->state;
        st.link = normalize_collection_link(req.collection_link)
                      .value_or(req.collection_link);
        st.req = std::move(req);
        st.op.begin(self->make_response_promise(), self->clock().now(),
                    st.req.options.budget, "change feed of " + st.link);
        if (!st.with.router || !st.with.collections || !st.with.pkranges)
          fail(self, errc::validation_error,
               "the router is not wired to the metadata caches yet");
        else
          start(self);
        return caf::delegated<change_feed_page>{};
      },
  };
}

} // namespace

std::optional<std::string>
check_change_feed_request(const change_feed_request& req, int64_t now_ms) {
  auto link = normalize_collection_link(req.collection_link);
  auto what = "change feed of '" + req.collection_link + "': ";
  if (!link) return what + "not a collection link (dbs/{db}/colls/{coll})";
  if (req.max_item_count == 0 || req.max_item_count < -1)
    return what + "max_item_count " + std::to_string(req.max_item_count) +
           " must be positive, or -1 for the service's default";
  const std::pair<const char*, const std::string*> header_options[] = {
      {"consistency_level", &req.options.consistency_level},
      {"session_token", &req.options.session_token}};
  for (const auto& [name, value] : header_options)
    if (value->find_first_of(std::string_view{"\r\n\0", 3}) !=
        std::string::npos)
      return what + "options." + name +
             " contains a CR, LF or NUL character; it is sent as an HTTP "
             "header value, which must be one line";
  if (req.options.budget.count() < 0)
    return what + "the operation budget may not be negative";
  auto feed = feed_of(req, *link, now_ms);
  if (!feed) return what + feed.error().what;
  return std::nullopt;
}

caf::actor spawn_change_feed_executor(caf::actor_system& sys,
                                      change_feed_collaborators with) {
  return sys.spawn(executor_impl, std::move(with));
}

} // namespace georoute
