#pragma once

// Attempt outcomes as the attempt loop is told them, for the policy tables.

#include "georoute/actors/policy/attempt_loop.hpp"
#include "georoute/actors/policy/loop_config.hpp"

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

/// The router's loop for a point operation of kind `op` (the partition
/// failover ladder for reads, 410s refresh metadata), with `breaker`.
inline attempt_loop_config data_plane(op_kind op,
                                      partition_breaker* breaker = nullptr) {
  loop_environment env;
  env.breaker = breaker;
  return data_plane_loop(op == op_kind::read ? request_kind::document_read
                                             : request_kind::write,
                         op, false, {}, env);
}

} // namespace georoute::test
