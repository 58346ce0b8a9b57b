#include "georoute/transport/http1/response.hpp"

#include "georoute/transport/request_checks.hpp"

#include <utility>

namespace georoute::transport::http1 {

using request_checks::parse_number;

outcome to_outcome(response_message& res) {
  outcome o;
  o.status = static_cast<int>(res.result_int());
  o.substatus = parse_number<int>(res["x-ms-substatus"], 0);
  o.session_token = std::string(res["x-ms-session-token"]);
  o.retry_after_ms = parse_number<int64_t>(res["x-ms-retry-after-ms"], -1);
  o.continuation = std::string(res["x-ms-continuation"]);
  o.etag = std::string(res[http::field::etag]);
  o.content_path = std::string(res["x-ms-content-path"]);
  o.activity_id = std::string(res["x-ms-activity-id"]);
  o.request_charge = parse_number<double>(res["x-ms-request-charge"], 0.0);
  o.body = std::move(res.body());
  return o;
}

outcome failed(failure kind, std::string detail) {
  outcome o;
  o.error = kind;
  o.error_detail = std::move(detail);
  return o;
}

} // namespace georoute::transport::http1
