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

/// One HTTP request as the engine describes it. `target` is the path plus
/// query ("/dbs/d/colls/c"); `endpoint` the base URL of the region
/// ("http://127.0.0.1:4301/").
struct request {
  std::string method = "GET";
  std::string endpoint;
  std::string target = "/";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{65000};
  /// The path addresses resources by rid: the signer lower-cases the rid.
  bool rid_based = false;
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

  /// True for 2xx and 304 responses.
  bool success() const {
    return error == failure::none &&
           ((status >= 200 && status < 300) || status == 304);
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request& x) {
  return f(x.method, x.endpoint, x.target, x.headers, x.body, x.timeout,
           x.rid_based);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, outcome& x) {
  return f(x.error, x.error_detail, x.status, x.substatus, x.session_token,
           x.retry_after_ms, x.continuation, x.etag, x.content_path,
           x.activity_id, x.request_charge, x.body, x.endpoint);
}

} // namespace georoute::transport
