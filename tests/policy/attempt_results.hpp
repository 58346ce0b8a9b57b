#pragma once

// Attempt outcomes as the attempt loop is told them, for the policy tables.

#include "actors/policy/attempt_loop.hpp"

namespace georoute::test {

/// An HTTP answer `status`/`substatus`.
inline attempt_result http_answer(int status, int substatus = 0) {
  attempt_result r;
  r.status = status;
  r.substatus = substatus;
  return r;
}

/// No answer: the connection failed or timed out (`timed_out`), after the
/// request went out or not (`sent`).
inline attempt_result no_answer(bool timed_out, bool sent) {
  attempt_result r;
  r.transport_failure = true;
  r.timed_out = timed_out;
  r.request_sent = sent;
  return r;
}

} // namespace georoute::test
