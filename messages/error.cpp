#include "georoute/messages/error.hpp"

#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/messages/types.hpp"
#include "georoute/transport/outcome.hpp"

#include <caf/make_message.hpp>
#include <caf/message.hpp>

namespace georoute {

const char* to_string(errc x) {
  switch (x) {
  case errc::none:
    return "none";
  case errc::connection_refused:
    return "connection_refused";
  case errc::connection_reset:
    return "connection_reset";
  case errc::transport_timeout:
    return "transport_timeout";
  case errc::dns_failure:
    return "dns_failure";
  case errc::tls_failure:
    return "tls_failure";
  case errc::protocol_error:
    return "protocol_error";
  case errc::body_too_large:
    return "body_too_large";
  case errc::bad_request:
    return "bad_request";
  case errc::unauthorized:
    return "unauthorized";
  case errc::forbidden:
    return "forbidden";
  case errc::write_forbidden:
    return "write_forbidden";
  case errc::account_not_found:
    return "account_not_found";
  case errc::not_found:
    return "not_found";
  case errc::read_session_unavailable:
    return "read_session_unavailable";
  case errc::request_timeout:
    return "request_timeout";
  case errc::conflict:
    return "conflict";
  case errc::gone:
    return "gone";
  case errc::partition_range_gone:
    return "partition_range_gone";
  case errc::lease_not_found:
    return "lease_not_found";
  case errc::precondition_failed:
    return "precondition_failed";
  case errc::throttled:
    return "throttled";
  case errc::internal_server_error:
    return "internal_server_error";
  case errc::service_unavailable:
    return "service_unavailable";
  case errc::unexpected_status:
    return "unexpected_status";
  case errc::deadline_exceeded:
    return "deadline_exceeded";
  case errc::validation_error:
    return "validation_error";
  case errc::protocol_violation:
    return "protocol_violation";
  case errc::attempts_exhausted:
    return "attempts_exhausted";
  case errc::shutting_down:
    return "shutting_down";
  case errc::collaborator_down:
    return "collaborator_down";
  case errc::overloaded:
    return "overloaded";
  case errc::outcome_unknown:
    return "outcome_unknown";
  }
  return "unknown";
}

std::string with_outcome_unknown_advice(std::string text) {
  if (text.find(outcome_unknown_advice) != std::string::npos) return text;
  if (!text.empty()) text += "; ";
  text += outcome_unknown_advice;
  return text;
}

caf::error make_error(errc x, std::string context) {
  return caf::error{static_cast<uint8_t>(x), error_category,
                    caf::make_message(std::move(context))};
}

caf::error make_error(errc x, std::string context, const diagnostics& diag) {
  return caf::error{static_cast<uint8_t>(x), error_category,
                    caf::make_message(std::move(context), diag)};
}

const diagnostics* diagnostics_of(const caf::error& err) {
  if (code_of(err) == errc::none) return nullptr;
  const auto& ctx = err.context();
  if (ctx.size() == 2 && ctx.match_element<diagnostics>(1))
    return &ctx.get_as<diagnostics>(1);
  return nullptr;
}

caf::error make_error(errc x) {
  return caf::error{static_cast<uint8_t>(x), error_category};
}

errc classify_status(int status, int substatus) {
  if ((status >= 200 && status < 300) || status == 304) return errc::none;
  switch (status) {
  case 400:
    return errc::bad_request;
  case 401:
    return errc::unauthorized;
  case 403:
    if (substatus == 3) return errc::write_forbidden;
    if (substatus == 1008) return errc::account_not_found;
    return errc::forbidden;
  case 404:
    return substatus == 1002 ? errc::read_session_unavailable : errc::not_found;
  case 408:
    return errc::request_timeout;
  case 409:
    return errc::conflict;
  case 410:
    // One reading of a 410 for the whole engine: range gone, completing
    // split and completing migration all mean "reload the routing map".
    switch (classify_gone(status, substatus)) {
    case gone_kind::partition_range:
      return errc::partition_range_gone;
    case gone_kind::lease_not_found:
      return errc::lease_not_found;
    default:
      return errc::gone;
    }
  case 412:
    return errc::precondition_failed;
  case 429:
    return errc::throttled;
  case 500:
    return errc::internal_server_error;
  case 503:
    return errc::service_unavailable;
  default:
    return errc::unexpected_status;
  }
}

errc classify_outcome(const transport::outcome& o) {
  switch (o.error) {
  case transport::failure::none:
    return classify_status(o.status, o.substatus);
  case transport::failure::refused:
    return errc::connection_refused;
  case transport::failure::reset:
    return errc::connection_reset;
  case transport::failure::timeout:
    return errc::transport_timeout;
  case transport::failure::dns:
    return errc::dns_failure;
  case transport::failure::tls:
    return errc::tls_failure;
  case transport::failure::protocol:
    return errc::protocol_error;
  case transport::failure::body_too_large:
    return errc::body_too_large;
  }
  return errc::protocol_error;
}

errc code_of(const caf::error& err) {
  if (!err || err.category() != error_category) return errc::none;
  return static_cast<errc>(err.code());
}

std::string context_of(const caf::error& err) {
  if (code_of(err) == errc::none) return {};
  const auto& ctx = err.context();
  if (ctx.size() >= 1 && ctx.match_element<std::string>(0))
    return ctx.get_as<std::string>(0);
  return {};
}

std::string render_error(uint8_t code, caf::atom_value,
                         const caf::message& context) {
  std::string result = "georoute.";
  result += to_string(static_cast<errc>(code));
  if (context.size() >= 1 && context.match_element<std::string>(0)) {
    result += ": ";
    result += context.get_as<std::string>(0);
  }
  return result;
}

} // namespace georoute
