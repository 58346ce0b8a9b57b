#include "georoute/actors/client.hpp"

#include "georoute/actors/bulk_executor.hpp"
#include "georoute/actors/router_wire.hpp"
#include "georoute/messages/error.hpp"

#include <caf/scoped_actor.hpp>
#include <deque>
#include <nlohmann/json.hpp>

namespace georoute {

request_options pk(const std::string& value) {
  request_options o;
  o.partition_key_json = nlohmann::json::array({value}).dump();
  return o;
}

client::client(caf::actor_system& sys, const engine& eng, caf::timespan timeout)
    : sys_(&sys), engine_(&eng), timeout_(timeout) {}

namespace {

/// Sends `msg...` to the engine's current router and waits for the answer
/// of type `T`, at most `timeout`.
template <class T, class... Ts>
caf::expected<T> ask_router(caf::actor_system& sys, const engine& eng,
                            caf::timespan timeout, Ts&&... msg) {
  if (!eng.running())
    return make_error(errc::shutting_down, "engine stopped: no request runs");
  auto router = eng.router();
  if (!router)
    return make_error(errc::collaborator_down,
                      "the request router is down and was not restarted");
  caf::expected<T> result{caf::error{}};
  caf::scoped_actor self{sys};
  self->request(router, timeout, std::forward<Ts>(msg)...)
      .receive([&](T& r) { result = std::move(r); },
               [&](caf::error& e) { result = std::move(e); });
  return result;
}

/// A write the caller stopped waiting for may still be applied by the
/// engine, which goes on with it: its outcome is unknown, and the error
/// says so as every other such write's does.
template <class T>
caf::expected<T> write_timed_out(caf::expected<T> result, caf::timespan timeout,
                                 const std::string& what) {
  if (result || result.error() != caf::sec::request_timeout) return result;
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  return make_error(errc::outcome_unknown,
                    with_outcome_unknown_advice(
                        "the client's timeout of " +
                        std::to_string(ms.count()) +
                        " ms passed before the engine answered the " + what));
}

} // namespace

caf::expected<data_response> client::execute(data_request req) {
  bool write = is_write(req.op);
  auto what = std::string{to_string(req.op)} + " on " + req.collection_link;
  auto r = ask_router<data_response>(*sys_, *engine_, timeout_, route_atom_v,
                                     std::move(req));
  return write ? write_timed_out(std::move(r), timeout_, what) : r;
}

caf::expected<batch_response> client::batch(batch_request req) {
  auto what = "batch on " + req.collection_link;
  return write_timed_out(ask_router<batch_response>(*sys_, *engine_, timeout_,
                                                    route_atom_v,
                                                    std::move(req)),
                         timeout_, what);
}

caf::expected<bulk_summary> client::bulk(bulk_open open,
                                         const bulk_source& next,
                                         const bulk_sink& done,
                                         size_t chunks_in_flight) {
  if (chunks_in_flight < 1 || chunks_in_flight > 16)
    return make_error(errc::validation_error,
                      "bulk: chunks_in_flight is " +
                          std::to_string(chunks_in_flight) +
                          "; it must be 1 to 16");
  if (!next || !done)
    return make_error(errc::validation_error,
                      "bulk: the source and the sink must both be set");
  if (!engine_->running())
    return make_error(errc::shutting_down, "engine stopped: no request runs");
  auto router = engine_->router();
  if (!router)
    return make_error(errc::collaborator_down,
                      "the request router is down and was not restarted");
  // The session lives while the actor that opened it does: this one, which
  // also sends the chunks.
  caf::scoped_actor self{*sys_};
  caf::expected<caf::actor> opened{caf::error{}};
  self->request(router, timeout_, route_atom_v, std::move(open))
      .receive([&](caf::actor& a) { opened = std::move(a); },
               [&](caf::error& e) { opened = std::move(e); });
  if (!opened) return opened.error();
  auto session = caf::actor_cast<bulk_actor>(*opened);
  // The session bounds each operation by its budget and answers every
  // chunk: the wait needs no deadline of its own, and a session that dies
  // answers with an error.
  using handle = decltype(self->request(session, caf::infinite, route_atom_v,
                                        bulk_chunk{}));
  struct out_chunk {
    uint64_t first;
    handle h;
  };
  std::deque<out_chunk> out;
  uint64_t taken = 0;
  bool exhausted = false;
  caf::error failure;
  for (;;) {
    while (!failure && !exhausted && out.size() < chunks_in_flight) {
      auto ops = next();
      if (ops.empty()) {
        exhausted = true;
        break;
      }
      auto first = taken;
      taken += ops.size();
      out.push_back({first, self->request(session, caf::infinite, route_atom_v,
                                          bulk_chunk{std::move(ops)})});
    }
    if (out.empty()) break;
    auto c = std::move(out.front());
    out.pop_front();
    c.h.receive([&](bulk_chunk_result& r) { done(c.first, r.results); },
                [&](caf::error& e) {
                  if (failure) return;
                  auto code = code_of(e) == errc::none ? errc::collaborator_down
                                                       : code_of(e);
                  auto text = context_of(e);
                  if (text.empty()) text = sys_->render(e);
                  failure = make_error(code, "bulk: the chunk from operation " +
                                                 std::to_string(c.first) +
                                                 ": " + text);
                });
  }
  caf::expected<bulk_summary> result{caf::error{}};
  self->request(session, timeout_, stop_atom_v)
      .receive([&](bulk_summary& s) { result = std::move(s); },
               [&](caf::error& e) { result = std::move(e); });
  if (failure) return failure;
  return result;
}

caf::expected<change_feed_page>
client::read_change_feed(change_feed_request req) {
  return ask_router<change_feed_page>(*sys_, *engine_, timeout_, route_atom_v,
                                      std::move(req));
}

caf::expected<std::vector<partition_key_range>>
client::feed_ranges(const std::string& collection_link) {
  return ask_router<std::vector<partition_key_range>>(
      *sys_, *engine_, timeout_, feed_ranges_atom_v, collection_link);
}

namespace {

data_request make(data_op op, const std::string& link, std::string id,
                  std::string body, request_options options) {
  data_request r;
  r.op = op;
  r.collection_link = link;
  r.id = std::move(id);
  r.body = std::move(body);
  r.options = std::move(options);
  return r;
}

} // namespace

caf::expected<data_response> client::create(const std::string& link,
                                            std::string document,
                                            request_options options) {
  return execute(
      make(data_op::create, link, {}, std::move(document), std::move(options)));
}

caf::expected<data_response> client::upsert(const std::string& link,
                                            std::string document,
                                            request_options options) {
  return execute(
      make(data_op::upsert, link, {}, std::move(document), std::move(options)));
}

caf::expected<data_response> client::read(const std::string& link,
                                          const std::string& id,
                                          request_options options) {
  return execute(make(data_op::read, link, id, {}, std::move(options)));
}

caf::expected<data_response> client::replace(const std::string& link,
                                             const std::string& id,
                                             std::string document,
                                             request_options options) {
  return execute(make(data_op::replace, link, id, std::move(document),
                      std::move(options)));
}

caf::expected<data_response> client::remove(const std::string& link,
                                            const std::string& id,
                                            request_options options) {
  return execute(make(data_op::remove, link, id, {}, std::move(options)));
}

caf::expected<data_response> client::query(const std::string& link,
                                           std::string spec,
                                           request_options options) {
  return execute(
      make(data_op::query, link, {}, std::move(spec), std::move(options)));
}

caf::expected<data_response> client::patch(const std::string& link,
                                           const std::string& id,
                                           std::string patch,
                                           request_options options) {
  return execute(
      make(data_op::patch, link, id, std::move(patch), std::move(options)));
}

} // namespace georoute
