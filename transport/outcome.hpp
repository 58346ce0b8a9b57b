#pragma once

// The one normalized result of an HTTP attempt. The Beast client maps the wire
// to this exactly once; everything above the transport (retry policy, caches,
// the drill) reads only this. Plain data: no Beast, no CAF.

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace georoute::transport {

/// Why an attempt produced no HTTP response (or an unusable one).
enum class failure : uint8_t {
  none = 0,       ///< an HTTP response arrived; see `status`
  refused,        ///< TCP connect refused (port closed)
  reset,          ///< the peer reset or closed the connection mid-exchange
  timeout,        ///< the per-attempt deadline expired
  dns,            ///< the host name did not resolve
  tls,            ///< handshake or certificate verification failed
  protocol,       ///< malformed HTTP, header block over the limit
  body_too_large, ///< the body exceeded the configured limit
};

/// Stable lower-case name, e.g. "refused".
const char* to_string(failure x);

/// Whether a request may be sent again on a fresh connection after the
/// kept-alive one it went out on closed with no response byte back.
enum class resend_rule : uint8_t {
  /// Decided from the method (`repeat_safe`): for requests written by hand
  /// (tests, the drill's own REST client). An encoder of an attempt always
  /// says `allowed` or `never`.
  by_method = 0,
  allowed, ///< sending it twice is harmless (it only reads)
  never,   ///< only if it provably never left
};

/// One HTTP/1.1 request. `target` is the path plus query ("/dbs/d/colls/c");
/// `endpoint` the base URL of the region ("http://127.0.0.1:4301/"). The
/// engine's own requests are written by the gateway encoder
/// (gateway_wire.hpp) from an attempt.
struct request {
  std::string method = "GET";
  std::string endpoint;
  std::string target = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{65000};
  /// The path addresses resources by rid: the signer lower-cases the rid.
  bool rid_based = false;
  resend_rule resend = resend_rule::by_method;
};

/// The normalized outcome of one attempt.
struct outcome {
  failure error = failure::none;
  std::string error_detail; ///< human-readable cause when `error != none`
  int status = 0;           ///< HTTP status; 0 when no response arrived
  int substatus = 0;        ///< x-ms-substatus, 0 when absent
  std::string session_token;
  int64_t retry_after_ms = -1; ///< x-ms-retry-after-ms, -1 when absent
  std::string continuation;
  std::string etag;
  std::string content_path;
  std::string activity_id;
  double request_charge = 0;
  std::string body;
  std::string endpoint; ///< the endpoint the attempt went to
  /// With `error != none`: (part of) the request had been handed to the
  /// socket when the attempt failed, so the server may have read and
  /// applied it. False when it provably never left (connect, DNS and TLS
  /// handshake failures, a queue timeout, a write that failed before its
  /// first byte). A write with this set must not be repeated blindly.
  bool request_sent = false;
  /// The connection that carried the attempt, numbered from 1 per client;
  /// 0 when none did (it waited in the pool until its deadline).
  uint64_t connection = 0;
  /// Requests answered on that connection before this one: 0 for a fresh
  /// connection, more for a kept-alive one.
  uint64_t connection_served = 0;
  /// Where the attempt's time went, in microseconds; -1 for a phase it did
  /// not reach. `queued_us`: from `send` until a connection took it (the
  /// pool had none free); `connect_us`: a fresh connection's connect (and
  /// TLS handshake), 0 on a kept-alive one; `write_us`: writing the
  /// request; `wait_us`: from the request written to the answer complete
  /// (the server and the network), or to the failure.
  int64_t queued_us = -1;
  int64_t connect_us = -1;
  int64_t write_us = -1;
  int64_t wait_us = -1;

  /// True for 2xx and 304 responses.
  bool success() const {
    return error == failure::none &&
           ((status >= 200 && status < 300) || status == 304);
  }
};

/// How far a request got when its kept-alive socket turned out closed
/// before any byte of the response came back.
enum class send_progress : uint8_t {
  unsent,     ///< provably no byte of it left this host
  maybe_sent, ///< (part of) it was handed to the socket: the server may
              ///< have read and applied it before it closed
};

/// Whether repeating `r` is harmless: a second copy can change neither what
/// the server stores nor what the caller is told. Exact method names; a
/// query is a POST with the media type `application/query+json`.
///
///   request                             repeat   why
///   GET, HEAD                           yes      reads change nothing
///   POST, Content-Type                  yes      a query or query plan only
///     application/query+json                     reads
///   POST, any other (create, upsert,    no       a create applies twice or
///     stored procedure, batch)                   comes back 409 for a create
///                                                that succeeded; an upsert
///                                                may overwrite a write made
///                                                in between; a procedure or
///                                                batch does what it does
///   PUT without If-Match                no       may overwrite a later write
///                                                by someone else
///   PUT with If-Match                   no       comes back 412 for a replace
///                                                that succeeded (the etag
///                                                moved): an optimistic-
///                                                concurrency loop then
///                                                re-reads and applies its
///                                                change a second time
///   DELETE                              no       comes back 404 for a delete
///                                                that succeeded
///   PATCH                               no       increments and appends
///                                                apply again
///   any other method                    no       effects unknown
///
/// The x-ms-documentdb-isquery header alone does not make a POST a query:
/// every query and query plan the engine sends carries the query media type,
/// and a request with a JSON body is what a gateway would store.
bool repeat_safe(const request& r);

/// Whether the client sends `r` again on a fresh connection after the
/// kept-alive socket it went out on closed with no response byte back:
/// always when it provably never left, else as `r.resend` says (by its
/// method, `repeat_safe`, when it says nothing). Not
/// resending is the rule of HTTP/1.1 for requests that are not idempotent
/// unless the client knows they were not applied.
bool resend_after_close(const request& r, send_progress progress);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request& x) {
  return f(x.method, x.endpoint, x.target, x.headers, x.body, x.timeout,
           x.rid_based, x.resend);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, outcome& x) {
  return f(x.error, x.error_detail, x.status, x.substatus, x.session_token,
           x.retry_after_ms, x.continuation, x.etag, x.content_path,
           x.activity_id, x.request_charge, x.body, x.endpoint, x.request_sent);
}

} // namespace georoute::transport
