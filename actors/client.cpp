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

caf::expected<data_response> client::execute(data_request req) {
  if (!engine_->running())
    return make_error(errc::shutting_down, "engine stopped: no request runs");
  auto router = engine_->router();
  if (!router)
    return make_error(errc::collaborator_down,
                      "the request router is down and was not restarted");
  caf::expected<data_response> result{caf::error{}};
  caf::scoped_actor self{*sys_};
  self->request(router, timeout_, route_atom_v, std::move(req))
      .receive([&](data_response& r) { result = std::move(r); },
               [&](caf::error& e) { result = std::move(e); });
  return result;
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

} // namespace georoute
