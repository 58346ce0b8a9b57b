#include "georoute/actors/bulk_executor.hpp"

#include "georoute/actors/collection_cache.hpp"
#include "georoute/actors/policy/bulk.hpp"
#include "georoute/actors/policy/epk.hpp"
#include "georoute/actors/policy/routing_map.hpp"
#include "georoute/messages/error.hpp"

#include <algorithm>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

namespace georoute {

request_options unresent_write_options(request_options o) {
  o.partition_key_json.clear();
  o.max_item_count = -1;
  o.continuation.clear();
  o.if_match.clear();
  o.if_none_match.clear();
  o.hedge = 0;
  o.write_retries = 0;
  return o;
}

namespace {

using clock_type = caf::actor_clock::clock_type;
using time_point = clock_type::time_point;
using std::chrono::milliseconds;

struct op_slot {
  uint64_t chunk = 0;
  uint32_t index = 0;
  std::string json;
  std::string pk_json;
  std::string epk; // set when first routed
  time_point deadline;
  time_point not_before{}; // throttled: not sent again before this
  bool waits = false;      // queued after a throttle, not yet sent again
  bool early = false;      // released before its retry-after (on_answer)
  uint32_t sends = 0;
  uint32_t regroups = 0;
  uint32_t gone_resends = 0; // sent again after an other 410
  throttle_state throttle;   // charged 429s and their waits
  double charge = 0;
};

struct chunk_slot {
  caf::response_promise rp;
  std::vector<bulk_op_result> results;
  size_t remaining = 0;
  double charge = 0;
};

struct range_slot {
  explicit range_slot(std::string id, uint32_t ceiling) : cc(ceiling), stats{} {
    stats.range_id = std::move(id);
  }
  range_congestion cc;
  std::deque<uint64_t> queue;
  bool wake_pending = false;
  time_point wake_at{};
  // Queued operations that wait after a throttle: while there are any, the
  // range has one request in flight at most (see dispatch).
  size_t backlog = 0;
  time_point last_send{};
  bulk_range_stats stats;
};

// A checked chunk: its operations' JSON and keys, and whom to answer.
struct prepared_chunk {
  std::vector<std::string> json;
  std::vector<std::string> keys;
  caf::response_promise rp;
};

// Chunks that wait for room at most; one more is refused (overloaded).
constexpr size_t max_waiting_chunks = 16;

struct bulk_state {
  bulk_collaborators with;
  bulk_session s;
  std::optional<collection_info> coll;
  std::shared_ptr<const routing_map> map;
  bool coll_pending = false;
  bool map_pending = false;
  // Operations without a range yet: before the map, or after theirs split.
  std::deque<uint64_t> unrouted;
  std::unordered_map<uint64_t, op_slot> ops;
  std::map<uint64_t, chunk_slot> chunks;
  std::deque<prepared_chunk> waiting; // checked, not yet taken
  bool admit_pending = false;
  std::map<std::string, range_slot> ranges;
  std::vector<std::string> range_order; // first sent to, first listed
  uint64_t next_op = 1;
  uint64_t next_chunk = 1;
  bool closing = false;
  bool opener_gone = false;
  std::vector<caf::response_promise> stop_waiters;
  bulk_summary sum;
  static inline const char* name = "georoute.bulk_executor";
};

using self_ptr = caf::stateful_actor<bulk_state>*;

std::string what_of(const bulk_state& st) {
  return "bulk on " + st.s.collection_link;
}

bulk_summary summary_of(const bulk_state& st) {
  auto s = st.sum;
  s.pending = st.ops.size();
  for (const auto& id : st.range_order) {
    const auto& r = st.ranges.at(id);
    auto x = r.stats;
    x.cuts = r.cc.cuts();
    x.peak_window = r.cc.peak();
    x.window = r.cc.window();
    s.ranges.push_back(std::move(x));
  }
  return s;
}

// Once nothing is held: answer `stop`, or quit when the opener is gone.
void maybe_end(self_ptr self) {
  auto& st = self->state;
  if (!st.chunks.empty() || !st.waiting.empty()) return;
  if (st.closing) {
    auto s = summary_of(st);
    for (auto& rp : st.stop_waiters)
      rp.deliver(s);
    st.stop_waiters.clear();
    self->quit();
  } else if (st.opener_gone) {
    self->quit();
  }
}

void finish_op(self_ptr self, uint64_t id, bulk_op_result r) {
  auto& st = self->state;
  auto it = st.ops.find(id);
  if (it == st.ops.end()) return;
  auto& op = it->second;
  r.sends = op.sends;
  r.request_charge += op.charge;
  if (r.ok())
    ++st.sum.succeeded;
  else
    ++st.sum.failed;
  auto chunk_id = op.chunk;
  auto& c = st.chunks.at(chunk_id);
  c.charge += r.request_charge;
  c.results[op.index] = std::move(r);
  st.ops.erase(it);
  if (--c.remaining == 0) {
    bulk_chunk_result out;
    out.results = std::move(c.results);
    out.request_charge = c.charge;
    c.rp.deliver(std::move(out));
    st.chunks.erase(chunk_id);
    maybe_end(self);
  }
  // Room for a waiting chunk: taken in a message of its own, never from
  // inside the loop that finished this operation.
  if (!st.waiting.empty() && !st.admit_pending) {
    st.admit_pending = true;
    self->send(self, wake_atom_v, std::string{});
  }
}

void fail_op(self_ptr self, uint64_t id, errc code, std::string text) {
  bulk_op_result r;
  r.error_code = static_cast<uint16_t>(code);
  r.error = std::move(text);
  finish_op(self, id, std::move(r));
}

range_slot& range_of(bulk_state& st, const std::string& id) {
  auto it = st.ranges.find(id);
  if (it == st.ranges.end()) {
    it = st.ranges
             .emplace(
                 std::piecewise_construct, std::forward_as_tuple(id),
                 std::forward_as_tuple(id, st.s.options.max_requests_per_range))
             .first;
    st.range_order.push_back(id);
  }
  return it->second;
}

void dispatch(self_ptr self, range_slot& r);
void dispatch_all(self_ptr self);
void ensure_routing(self_ptr self);

// Operations that wait for a range: each goes to the range that holds its
// EPK now, behind what that range has queued.
void route_unrouted(self_ptr self) {
  auto& st = self->state;
  auto pending = std::move(st.unrouted);
  st.unrouted.clear();
  for (auto id : pending) {
    auto it = st.ops.find(id);
    if (it == st.ops.end()) continue;
    auto& op = it->second;
    if (op.epk.empty()) {
      auto epk = epk_for(st.coll->partition_key, op.pk_json);
      if (!epk) {
        fail_op(self, id, errc::validation_error,
                "bulk operation " + std::to_string(op.index) + ": " +
                    epk.error().what);
        continue;
      }
      op.epk = std::move(*epk);
    }
    const auto* range = st.map->range_by_epk(op.epk);
    if (range == nullptr) {
      fail_op(self, id, errc::protocol_violation,
              what_of(st) + ": no partition-key range holds EPK " + op.epk);
      continue;
    }
    range_of(st, range->id).queue.push_back(id);
  }
}

void fail_unrouted(self_ptr self, const caf::error& e, const char* where) {
  auto& st = self->state;
  auto code = code_of(e) == errc::none ? errc::collaborator_down : code_of(e);
  auto text = what_of(st) + ": " + where + ": " + context_of(e) +
              "; the operation was not sent";
  auto pending = std::move(st.unrouted);
  st.unrouted.clear();
  for (auto id : pending)
    fail_op(self, id, code, text);
}

// The routing map, read again: `known` names the map the session holds,
// so that the cache refetches only when nobody has since.
void read_map(self_ptr self, std::string known) {
  auto& st = self->state;
  if (st.map_pending) return;
  st.map_pending = true;
  if (!known.empty()) ++st.sum.map_reads;
  self->request(st.with.pkranges, caf::infinite, pkranges_atom_v, st.coll->rid,
                std::move(known))
      .then(
          [=](routing_snapshot& snap) {
            auto& st = self->state;
            st.map_pending = false;
            st.map = std::move(snap.map);
            route_unrouted(self);
            dispatch_all(self);
          },
          [=](caf::error& e) {
            self->state.map_pending = false;
            fail_unrouted(self, e, "the partition-key ranges");
          });
}

void ensure_routing(self_ptr self) {
  auto& st = self->state;
  if (st.unrouted.empty()) return;
  if (!st.coll) {
    if (st.coll_pending) return;
    st.coll_pending = true;
    self->request(st.with.collections, caf::infinite, by_name_atom_v,
                  st.s.collection_link, false, std::string{})
        .then(
            [=](collection_info& c) {
              auto& st = self->state;
              st.coll_pending = false;
              st.coll = std::move(c);
              ensure_routing(self);
            },
            [=](caf::error& e) {
              self->state.coll_pending = false;
              fail_unrouted(self, e, "the collection");
            });
    return;
  }
  if (!st.map) return read_map(self, std::string{});
  route_unrouted(self);
}

// An operation to be sent again (throttled, or turned away unexecuted): at
// the front of its range's queue, where `again` keeps request order.
void requeue_front(range_slot& r, const std::vector<uint64_t>& again) {
  for (auto it = again.rbegin(); it != again.rend(); ++it)
    r.queue.push_front(*it);
}

// The range's queue front waits until `at`: a wake then (unless an
// earlier one is due).
void wake_at(self_ptr self, range_slot& r, time_point at) {
  if (r.wake_pending && r.wake_at <= at) return;
  r.wake_pending = true;
  r.wake_at = at;
  auto delay = at - self->clock().now();
  self->delayed_send(self, std::max(delay, clock_type::duration::zero()),
                     wake_atom_v, r.stats.range_id);
}

void regroup(self_ptr self, const std::vector<uint64_t>& ids,
             const std::string& why) {
  auto& st = self->state;
  bool any = false;
  for (auto id : ids) {
    auto it = st.ops.find(id);
    if (it == st.ops.end()) continue;
    auto& op = it->second;
    if (++op.regroups > max_bulk_regroups) {
      fail_op(self, id, errc::partition_range_gone,
              what_of(st) + ": operation " + std::to_string(op.index) +
                  "'s range is still gone after " +
                  std::to_string(max_bulk_regroups) +
                  " reads of the routing map (" + why + ")");
      continue;
    }
    ++st.sum.regrouped;
    st.unrouted.push_back(id);
    any = true;
  }
  if (any) read_map(self, st.map ? st.map->etag() : std::string{});
}

bool was_throttled(const diagnostics& d) {
  return std::any_of(d.attempts.begin(), d.attempts.end(),
                     [](const attempt_record& a) { return a.status == 429; });
}

void on_answer(self_ptr self, const std::string& range_id, uint64_t seq,
               bool probe, const std::vector<uint64_t>& ids,
               data_response& resp) {
  auto& st = self->state;
  auto& r = range_of(st, range_id);
  auto now = self->clock().now();
  auto results = parse_batch_results(resp.body, ids.size());
  if (!results) {
    r.cc.on_abandon(seq);
    for (auto id : ids)
      fail_op(self, id, errc::outcome_unknown,
              with_outcome_unknown_advice(
                  what_of(st) + ": range " + range_id + " answered " +
                  std::to_string(resp.status) + " but " + results.error().what +
                  ", so which operations ran cannot be told"));
    dispatch_all(self);
    return;
  }
  bool throttled = was_throttled(resp.diag);
  std::vector<uint64_t> again;
  std::vector<uint64_t> gone;
  // `ids` is the request as sent (send() writes the body in this order) and
  // the results come in the same order: n is the operation's position in
  // its request, and n == 0 the one that led it.
  for (size_t n = 0; n < ids.size(); ++n) {
    auto id = ids[n];
    auto it = st.ops.find(id);
    if (it == st.ops.end()) continue;
    auto& op = it->second;
    auto& x = (*results)[n];
    op.charge += x.request_charge;
    switch (classify_bulk_op(x.status, x.substatus, n == 0, op.gone_resends)) {
    case bulk_op_verdict::done: {
      ++r.stats.operations;
      bulk_op_result out;
      out.status = x.status;
      out.substatus = x.substatus;
      out.etag = std::move(x.etag);
      out.body = std::move(x.body);
      finish_op(self, id, std::move(out));
      break;
    }
    case bulk_op_verdict::throttled: {
      throttled = true;
      ++r.stats.throttled;
      ++st.sum.throttled;
      auto v =
          decide_bulk_throttle(st.s.throttle, op.throttle, x.retry_after_ms,
                               op.early, op.deadline - now);
      op.early = false;
      switch (v.what) {
      case bulk_throttle_verdict::kind::final: {
        ++r.stats.operations;
        bulk_op_result out;
        out.status = x.status;
        out.substatus = x.substatus;
        finish_op(self, id, std::move(out));
        break;
      }
      case bulk_throttle_verdict::kind::out_of_time:
        fail_op(self, id, errc::deadline_exceeded,
                what_of(st) + ": operation " + std::to_string(op.index) +
                    " was throttled (429) and its budget ends before the "
                    "service's retry-after of " +
                    std::to_string(v.delay.count()) + " ms");
        break;
      case bulk_throttle_verdict::kind::wait:
        // Each waits for its own retry-after: the service spreads them so
        // that they come back as its budget frees up.
        op.throttle = v.next;
        op.not_before = now + v.delay;
        if (!op.waits) {
          op.waits = true;
          ++r.backlog;
        }
        again.push_back(id);
        break;
      }
      break;
    }
    case bulk_op_verdict::regroup:
      gone.push_back(id);
      break;
    case bulk_op_verdict::resend_gone:
      ++op.gone_resends;
      [[fallthrough]];
    case bulk_op_verdict::resend_now:
      ++st.sum.resent;
      again.push_back(id);
      break;
    }
  }
  st.sum.request_charge += resp.request_charge;
  r.cc.on_answer(seq, throttled);
  // A clear answer while operations wait after a throttle: their
  // retry-afters may be stale, and some go now, whatever they say; if the
  // service still throttles, they get fresh retry-afters.
  auto release = bulk_release_count(throttled, probe, ids.size(), r.backlog);
  for (auto id : r.queue) {
    if (release == 0) break;
    auto it = st.ops.find(id);
    if (it == st.ops.end() || !it->second.waits) continue;
    if (it->second.not_before > now) {
      it->second.not_before = now;
      it->second.early = true;
    }
    --release;
  }
  requeue_front(r, again);
  if (!gone.empty()) regroup(self, gone, "range " + range_id + " answered 410");
  dispatch_all(self);
}

void on_failure(self_ptr self, const std::string& range_id, uint64_t seq,
                const std::vector<uint64_t>& ids, caf::error& e) {
  auto& st = self->state;
  auto& r = range_of(st, range_id);
  auto code = code_of(e) == errc::none ? errc::collaborator_down : code_of(e);
  auto text = context_of(e);
  if (text.empty()) text = self->system().render(e);
  switch (classify_bulk_failure(code)) {
  case bulk_failure_verdict::regroup:
    r.cc.on_abandon(seq);
    regroup(self, ids, text);
    break;
  case bulk_failure_verdict::retry_later: {
    // The engine is full: a throttle in all but name.
    r.cc.on_answer(seq, true);
    std::vector<uint64_t> live;
    auto later = self->clock().now() + bulk_overloaded_pause;
    for (auto id : ids)
      if (auto it = st.ops.find(id); it != st.ops.end()) {
        it->second.not_before = later;
        live.push_back(id);
      }
    requeue_front(r, live);
    break;
  }
  case bulk_failure_verdict::final:
    r.cc.on_abandon(seq);
    for (auto id : ids)
      fail_op(self, id, code, text);
    break;
  case bulk_failure_verdict::maybe_applied:
    r.cc.on_abandon(seq);
    for (auto id : ids)
      fail_op(self, id, errc::outcome_unknown,
              with_outcome_unknown_advice(
                  text + "; the bulk request carrying this operation is not "
                         "sent again"));
    break;
  }
  dispatch_all(self);
}

void send(self_ptr self, range_slot& r, std::vector<uint64_t> ids,
          bool probe = false) {
  auto& st = self->state;
  std::string body = "[";
  auto earliest = time_point::max();
  for (auto id : ids) {
    auto& op = st.ops.at(id);
    if (body.size() > 1) body += ',';
    body += op.json;
    ++op.sends;
    earliest = std::min(earliest, op.deadline);
  }
  body += ']';
  data_request d;
  d.op = data_op::bulk;
  d.collection_link = st.s.collection_link;
  d.range_id = r.stats.range_id;
  d.body = std::move(body);
  d.options = unresent_write_options(st.s.request);
  // The request may use what is left of its operations' shortest budget.
  d.options.budget = std::max(
      milliseconds{1},
      std::chrono::duration_cast<milliseconds>(earliest - self->clock().now()));
  auto seq = r.cc.on_send();
  r.last_send = self->clock().now();
  ++r.stats.requests;
  ++st.sum.requests;
  auto range_id = r.stats.range_id;
  self->request(st.with.router, caf::infinite, route_atom_v, std::move(d))
      .then(
          [=](data_response& resp) {
            on_answer(self, range_id, seq, probe, ids, resp);
          },
          [=](caf::error& e) { on_failure(self, range_id, seq, ids, e); });
}

// Takes `op`, the front of its range's queue, off it.
void pop_front(range_slot& r, op_slot& op) {
  r.queue.pop_front();
  if (op.waits) {
    op.waits = false;
    --r.backlog;
  }
}

void dispatch(self_ptr self, range_slot& r) {
  auto& st = self->state;
  auto now = self->clock().now();
  const auto& o = st.s.options;
  bool front_waits = false;
  while (!front_waits && !r.queue.empty() && bulk_may_send(r.cc, r.backlog)) {
    std::vector<uint64_t> ids;
    bulk_request_fill fill{o.max_operations_per_request, o.max_request_bytes};
    while (!r.queue.empty() && !fill.full()) {
      auto id = r.queue.front();
      auto it = st.ops.find(id);
      if (it == st.ops.end()) {
        r.queue.pop_front();
        continue;
      }
      auto& op = it->second;
      auto plan = plan_bulk_front(op.deadline, op.not_before, now, r.last_send,
                                  ids.empty() && r.cc.in_flight() == 0);
      if (plan.what == bulk_front_plan::kind::expired) {
        pop_front(r, op);
        fail_op(self, id, errc::deadline_exceeded,
                what_of(st) + ": operation " + std::to_string(op.index) +
                    "'s budget was spent after " + std::to_string(op.sends) +
                    " sends; it is not sent again");
        continue;
      }
      if (plan.what == bulk_front_plan::kind::probe) {
        front_waits = true;
        pop_front(r, op);
        op.early = true;
        send(self, r, {id}, true);
        break;
      }
      if (plan.what == bulk_front_plan::kind::wait) {
        front_waits = true;
        wake_at(self, r, plan.wake);
        break;
      }
      if (!fill.take(op.json.size())) break;
      ids.push_back(id);
      pop_front(r, op);
    }
    if (ids.empty()) break;
    send(self, r, std::move(ids));
  }
}

void dispatch_all(self_ptr self) {
  auto& st = self->state;
  for (auto& [id, r] : st.ranges)
    dispatch(self, r);
}

// Takes a checked chunk's operations into the session.
void admit(self_ptr self, prepared_chunk c) {
  auto& st = self->state;
  auto deadline = self->clock().now() + milliseconds{st.s.options.budget_ms};
  auto chunk_id = st.next_chunk++;
  auto& slot = st.chunks[chunk_id];
  slot.rp = std::move(c.rp);
  slot.results.resize(c.json.size());
  slot.remaining = c.json.size();
  for (size_t n = 0; n < c.json.size(); ++n) {
    auto id = st.next_op++;
    auto& op = st.ops[id];
    op.chunk = chunk_id;
    op.index = static_cast<uint32_t>(n);
    op.json = std::move(c.json[n]);
    op.pk_json = std::move(c.keys[n]);
    op.deadline = deadline;
    st.unrouted.push_back(id);
  }
  st.sum.operations += c.json.size();
}

bool fits(const bulk_state& st, size_t n) {
  return st.ops.size() + n <= st.s.options.max_pending_operations;
}

// Chunks that waited for room, in the order they came.
void admit_waiting(self_ptr self) {
  auto& st = self->state;
  bool any = false;
  while (!st.waiting.empty() && fits(st, st.waiting.front().json.size())) {
    auto c = std::move(st.waiting.front());
    st.waiting.pop_front();
    admit(self, std::move(c));
    any = true;
  }
  if (!any) return;
  if (st.coll && st.map) {
    route_unrouted(self);
    dispatch_all(self);
  } else {
    ensure_routing(self);
  }
}

caf::result<bulk_chunk_result> take_chunk(self_ptr self, bulk_chunk& c) {
  auto& st = self->state;
  if (st.closing)
    return make_error(errc::validation_error,
                      what_of(st) + ": the session was stopped; open another");
  if (c.operations.empty()) return bulk_chunk_result{};
  auto cap = static_cast<size_t>(st.s.options.max_pending_operations);
  if (c.operations.size() > cap)
    return make_error(errc::validation_error,
                      what_of(st) + ": a chunk of " +
                          std::to_string(c.operations.size()) +
                          " operations is more than the session holds (" +
                          std::to_string(cap) +
                          ", bulk_options::max_pending_operations); send "
                          "smaller chunks");
  if (!(st.waiting.empty() && fits(st, c.operations.size())) &&
      st.waiting.size() >= max_waiting_chunks)
    return make_error(errc::overloaded,
                      what_of(st) + ": the session holds " +
                          std::to_string(st.ops.size()) + " operations (" +
                          std::to_string(cap) + " at most) and " +
                          std::to_string(st.waiting.size()) +
                          " chunks wait for room; send the next chunk when "
                          "an earlier one is answered");
  // Every operation is checked before any is taken: a refused chunk sends
  // nothing.
  prepared_chunk p;
  p.json.reserve(c.operations.size());
  p.keys.reserve(c.operations.size());
  for (size_t n = 0; n < c.operations.size(); ++n) {
    auto j = bulk_op_json(c.operations[n], n);
    if (!j)
      return make_error(errc::validation_error,
                        what_of(st) + ": " + j.error().what);
    p.json.push_back(std::move(*j));
    p.keys.push_back(std::move(c.operations[n].partition_key_json));
  }
  p.rp = self->make_response_promise();
  st.waiting.push_back(std::move(p));
  admit_waiting(self);
  return caf::delegated<bulk_chunk_result>{};
}

caf::behavior executor_impl(self_ptr self, bulk_collaborators with,
                            bulk_session s) {
  auto& st = self->state;
  st.with = std::move(with);
  st.s = std::move(s);
  if (st.s.opener) {
    self->monitor(st.s.opener);
    self->set_down_handler([=](caf::down_msg& m) {
      auto& st = self->state;
      if (m.source != st.s.opener) return;
      st.opener_gone = true;
      maybe_end(self);
    });
  }
  return {
      [=](route_atom, bulk_chunk& c) -> caf::result<bulk_chunk_result> {
        return take_chunk(self, c);
      },
      [=](stats_atom) -> bulk_summary { return summary_of(self->state); },
      [=](stop_atom) -> caf::result<bulk_summary> {
        auto& st = self->state;
        st.closing = true;
        auto rp = self->make_response_promise<bulk_summary>();
        st.stop_waiters.push_back(rp);
        maybe_end(self);
        return rp;
      },
      [=](wake_atom, const std::string& range_id) {
        auto& st = self->state;
        if (range_id.empty()) { // room for waiting chunks
          st.admit_pending = false;
          admit_waiting(self);
          return;
        }
        auto it = st.ranges.find(range_id);
        if (it == st.ranges.end()) return;
        auto& r = it->second;
        if (self->clock().now() >= r.wake_at) r.wake_pending = false;
        dispatch(self, r);
      },
  };
}

} // namespace

caf::actor spawn_bulk_executor(caf::actor_system& sys, bulk_collaborators with,
                               bulk_session session) {
  return sys.spawn(executor_impl, std::move(with), std::move(session));
}

} // namespace georoute
