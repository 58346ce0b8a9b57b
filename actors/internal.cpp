#include "georoute/actors/internal.hpp"

#include "georoute/transport/codecs.hpp"

#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>

namespace georoute {

std::string describe_reason(const caf::error& reason) {
  if (!reason) return "normal";
  if (reason.category() == caf::atom("exit"))
    return caf::to_string(static_cast<caf::exit_reason>(reason.code()));
  if (reason.category() == caf::atom("system"))
    return caf::to_string(static_cast<caf::sec>(reason.code()));
  if (reason.category() == error_category) {
    auto ctx = context_of(reason);
    auto name = std::string{to_string(static_cast<errc>(reason.code()))};
    return ctx.empty() ? name : name + ": " + ctx;
  }
  return "error " + std::to_string(reason.code());
}

caf::error collaborator_down(const std::string& who, const caf::error& reason,
                             const std::string& what) {
  return make_error(errc::collaborator_down,
                    who + " exited (" + describe_reason(reason) + ") while " +
                        what +
                        " was in flight; the next request starts afresh");
}

caf::error stopped_error(const std::string& who, const caf::error& reason) {
  if (reason == caf::exit_reason::user_shutdown)
    return make_error(errc::shutting_down,
                      "engine stopped: " + who + " ended with work in flight");
  return make_error(errc::shutting_down, who + " exited (" +
                                             describe_reason(reason) +
                                             ") with work in flight");
}

attempt_result attempt_result_of(const transport::outcome& o) {
  attempt_result r;
  r.transport_failure = o.error != transport::failure::none;
  r.timed_out = o.error == transport::failure::timeout;
  r.request_sent = o.request_sent;
  r.refused = o.error == transport::failure::refused;
  r.status = o.status;
  r.substatus = o.substatus;
  r.retry_after_ms = o.retry_after_ms;
  return r;
}

std::string describe_outcome(const transport::outcome& o) {
  if (o.error != transport::failure::none)
    return std::string{transport::to_string(o.error)} + " (" + o.error_detail +
           ")";
  auto s = std::to_string(o.status);
  if (o.substatus != 0) s += "/" + std::to_string(o.substatus);
  return s;
}

std::string failure_text(const transport::outcome& last,
                         const std::string& region, uint32_t attempts,
                         const std::string& what, const std::string& why) {
  std::string where =
      region.empty() ? last.endpoint : region + " (" + last.endpoint + ")";
  auto text = describe_outcome(last) + " from " + where + " after " +
              std::to_string(attempts) +
              (attempts == 1 ? " attempt" : " attempts") + " for " + what;
  if (!why.empty()) text += "; " + why;
  // What the service said, when it said something: the one line that tells
  // a user what to fix.
  if (last.error == transport::failure::none && !last.body.empty()) {
    auto body = transport::decode_error_body(last.body);
    if (body && !body->message.empty()) {
      constexpr size_t limit = 300;
      auto msg = body->message.substr(0, limit);
      if (body->message.size() > limit) msg += "...";
      text += "; the service said: " + msg;
    }
  }
  return text;
}

} // namespace georoute
