#pragma once

// A fake retry actor for the cache tests: it records every metadata request
// and keeps its response promise. The test answers request `i` by sending
// the fake `(answer_atom, i, outcome)`; the fake itself delivers (a
// promise is only ever delivered by its own actor, never from the test
// thread). A 2xx or 304 outcome is delivered as the outcome; a status >= 400
// or a transport failure as the error the real retry actor would give.

#include "georoute/messages/error.hpp"
#include "georoute/messages/interfaces.hpp"
#include "tests/actors/actor_fixture.hpp"

#include <memory>
#include <string>
#include <vector>

namespace georoute::test {

struct recording_retry_log {
  std::vector<metadata_request> requests;
  std::vector<caf::typed_response_promise<transport::outcome>> promises;
  std::vector<bool> answered;

  /// Indexes of the requests not answered yet, oldest first.
  std::vector<uint64_t> pending() const {
    std::vector<uint64_t> r;
    for (size_t i = 0; i < answered.size(); ++i)
      if (!answered[i]) r.push_back(i);
    return r;
  }

  /// The classic gateway's request for request `i`.
  transport::request wire(size_t i) const {
    return transport::to_gateway_request(
        transport::attempt{requests.at(i).what});
  }

  /// The value of header `name` of request `i` on the classic gateway, or
  /// "<absent>".
  std::string header(size_t i, const std::string& name) const {
    for (const auto& [k, v] : wire(i).headers)
      if (k == name) return v;
    return "<absent>";
  }
};

inline fake_retry_actor::behavior_type
recording_retry(fake_retry_actor::pointer self,
                std::shared_ptr<recording_retry_log> log) {
  return {
      [=](execute_atom,
          metadata_request& req) -> caf::result<transport::outcome> {
        log->requests.push_back(req);
        log->promises.push_back(
            self->make_response_promise<transport::outcome>());
        log->answered.push_back(false);
        return log->promises.back();
      },
      [=](detach_atom, document_request& d) -> caf::result<transport::outcome> {
        // Recorded like a metadata request (the query-plan actor's path).
        metadata_request m;
        m.what = d.what;
        m.kind = d.kind;
        log->requests.push_back(std::move(m));
        log->promises.push_back(
            self->make_response_promise<transport::outcome>());
        log->answered.push_back(false);
        return log->promises.back();
      },
      [](stats_atom) { return retry_stats{}; },
      [=](answer_atom, uint64_t i, transport::outcome& o) {
        auto& rp = log->promises.at(i);
        log->answered.at(i) = true;
        if (o.error != transport::failure::none)
          rp.deliver(
              make_error(errc::connection_refused,
                         "injected failure for " +
                             transport::describe(log->requests[i].what)));
        else if (o.status >= 400)
          rp.deliver(
              make_error(classify_status(o.status, o.substatus),
                         std::to_string(o.status) + " from West US for " +
                             transport::describe(log->requests[i].what)));
        else
          rp.deliver(std::move(o));
      },
  };
}

/// What a caller actor got: "ok <detail>", "timeout" or "error <code>".
struct reply_log {
  std::vector<std::string> got;
};

inline std::string describe_error(const caf::error& e) {
  if (e == caf::sec::request_timeout) return "timeout";
  return std::string{"error "} + to_string(code_of(e));
}

} // namespace georoute::test
