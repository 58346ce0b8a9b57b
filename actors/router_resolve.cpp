// Resolution: collection, partition-key range, session token.

#include "georoute/actors/router_state.hpp"

namespace georoute::router_detail {

// A routing map replaced `old`: forget the breaker entries of ranges it no
// longer has (the parents of a split or merge).
void forget_dropped_ranges(router_state& st, const std::string& rid,
                           const map_ptr& old, const map_ptr& fresh,
                           policy_time now) {
  if (!old || !fresh || old == fresh) return;
  for (const auto& r : old->ranges()) {
    if (!fresh->is_gone(r.id) && fresh->range_by_id(r.id) != nullptr) continue;
    if (st.breaker) st.breaker->forget_range(rid, r.id, now);
    // A per-partition failover override of a parent: its children find
    // their own place (a 403/3 moves them again).
    st.ppaf.forget_range(rid, r.id);
  }
  note_transitions(st, nullptr);
}

// A new table: per-partition failover overrides whose region left the
// account are dropped (the range's writes go to the write region again).
void forget_departed_regions(router_state& st) {
  if (st.ppaf.size() > 0 && st.snap.table())
    st.ppaf.retain_regions(st.snap.table()->available_read_regions());
}

// -- metadata ---------------------------------------------------------------

// The operation routes on `map` from now on. Its range pointed into the map
// it held, which may go with it: it is found again (`locate`).
void use_map(data_payload& op, map_ptr map) {
  op.range = nullptr;
  op.map = std::move(map);
}

void resolve_collection(self_ptr self, uint64_t id, bool force) {
  auto& st = self->state;
  auto& op = st.driver.at(id);
  if (!force) {
    if (const auto* hit = st.collections.get(op.link)) {
      op.coll = *hit;
      resolve_range(self, id, false);
      return;
    }
  }
  if (!st.with.collections) {
    finish_error(self, id, errc::validation_error,
                 describe(op) + ": the router has no collection cache");
    return;
  }
  auto obsolete = force && op.coll ? op.coll->rid : std::string{};
  op.resolves = resolving::collection;
  op.waiting_on = st.with.collections.address();
  self->request(st.with.collections, caf::infinite, by_name_atom_v, op.link,
                force, obsolete)
      .then(
          [=](collection_info& c) {
            auto& st = self->state;
            auto* found = st.driver.find(id);
            if (found == nullptr) return;
            auto& op = *found;
            op.resolves = resolving::nothing;
            if (op.coll && op.coll->rid != c.rid) {
              // Recreated under the same name: its session tokens are dead.
              st.sessions.clear_by_rid(op.coll->rid);
              st.maps.erase(op.coll->rid);
            }
            auto shared = std::make_shared<const collection_info>(std::move(c));
            st.collections.put(op.link, shared);
            op.coll = std::move(shared);
            op.diag.collection_rid = op.coll->rid;
            resolve_range(self, id, false);
          },
          [=](caf::error& e) {
            auto* op = self->state.driver.find(id);
            if (op == nullptr) return;
            op->resolves = resolving::nothing;
            finish_error(self, id,
                         code_of(e) == errc::none ? errc::collaborator_down
                                                  : code_of(e),
                         "resolving the collection of " + describe(*op) + ": " +
                             context_of(e));
          });
}

void locate(self_ptr self, uint64_t id) {
  auto& op = self->state.driver.at(id);
  auto found =
      locate_range(*op.map, op.req.range_id, op.epk, op.range_refreshed);
  switch (found.verdict) {
  case range_verdict::found:
    op.range = found.range;
    op.diag.range_id = op.range->id;
    self->state.driver.attempt(id, op);
    return;
  case range_verdict::refresh_map:
    op.range_refreshed = true;
    resolve_range(self, id, true);
    return;
  case range_verdict::gone:
    finish_error(self, id, errc::partition_range_gone,
                 describe(op) + ": partition-key range " + op.req.range_id +
                     " of collection " + op.coll->rid +
                     " is gone (it split or merged); read its successors");
    return;
  case range_verdict::no_range_for_epk:
    finish_error(self, id, errc::protocol_violation,
                 describe(op) + ": no partition-key range of collection " +
                     op.coll->rid + " holds EPK " + op.epk);
    return;
  }
}

void resolve_range(self_ptr self, uint64_t id, bool refresh) {
  auto& st = self->state;
  auto& op = st.driver.at(id);
  if (op.epk.empty() && op.req.range_id.empty()) {
    auto epk =
        epk_for(op.coll->partition_key, op.req.options.partition_key_json);
    if (!epk) {
      finish_error(self, id, errc::validation_error,
                   describe(op) + ": " + epk.error().what);
      return;
    }
    op.epk = *epk;
  }
  const auto& rid = op.coll->rid;
  if (!refresh) {
    if (const auto* hit = st.maps.get(rid)) {
      use_map(op, *hit);
      locate(self, id);
      return;
    }
  }
  if (!st.with.pkranges) {
    finish_error(self, id, errc::validation_error,
                 describe(op) + ": the router has no partition-range cache");
    return;
  }
  // A refresh names the map we hold: the cache refetches only if nobody
  // refreshed since.
  auto known = refresh && op.map ? op.map->etag() : std::string{};
  op.resolves = resolving::ranges;
  op.waiting_on = st.with.pkranges.address();
  self->request(st.with.pkranges, caf::infinite, pkranges_atom_v, rid, known)
      .then(
          [=](routing_snapshot& snap) {
            auto& st = self->state;
            auto* op = st.driver.find(id);
            if (op == nullptr) return;
            op->resolves = resolving::nothing;
            if (const auto* old = st.maps.get(snap.collection_rid))
              forget_dropped_ranges(st, snap.collection_rid, *old, snap.map,
                                    self->clock().now());
            st.maps.put(snap.collection_rid, snap.map);
            use_map(*op, snap.map);
            locate(self, id);
          },
          [=](caf::error& e) {
            auto* op = self->state.driver.find(id);
            if (op == nullptr) return;
            op->resolves = resolving::nothing;
            finish_error(self, id,
                         code_of(e) == errc::none ? errc::collaborator_down
                                                  : code_of(e),
                         "resolving the partition range of " + describe(*op) +
                             ": " + context_of(e));
          });
}

// -- session tokens ---------------------------------------------------------

// The session token a read of `op`'s range sends: the caller's own, or the
// merged token of the range (after a split, the parent's serves a child).
std::string session_token_for(const router_state& st, const data_payload& op) {
  switch (session_token_source(is_write(op.req.op),
                               op.req.options.consistency_level,
                               !op.req.options.session_token.empty())) {
  case session_source::none:
    return {};
  case session_source::caller:
    return op.req.options.session_token;
  case session_source::container:
    break;
  }
  if (!op.range) return {};
  return st.sessions.header_for(op.coll->rid, op.range->id, op.range->parents);
}

void capture_session(router_state& st, const data_payload& op,
                     const transport::outcome& o) {
  // A malformed header is counted by the container, never fails a request.
  if (!o.session_token.empty() && op.coll)
    st.sessions.capture(op.coll->rid, op.link, o.session_token);
}

} // namespace georoute::router_detail
