#include "georoute/actors/client.hpp"

#include "georoute/messages/error.hpp"

#include <caf/scoped_actor.hpp>
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

} // namespace

caf::expected<data_response> client::execute(data_request req) {
  return ask_router<data_response>(*sys_, *engine_, timeout_, route_atom_v,
                                   std::move(req));
}

caf::expected<batch_response> client::batch(batch_request req) {
  return ask_router<batch_response>(*sys_, *engine_, timeout_, route_atom_v,
                                    std::move(req));
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
