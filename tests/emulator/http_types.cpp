#include "tests/emulator/http_types.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace georoute::emulator {

namespace {

bool iequals(const std::string& x, const std::string& y) {
  return x.size() == y.size() &&
         std::equal(x.begin(), x.end(), y.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) ==
                  std::tolower(static_cast<unsigned char>(b));
         });
}

} // namespace

const std::string& http_request::header(const std::string& name) const {
  static const std::string empty;
  auto i = headers.find(name);
  return i == headers.end() ? empty : i->second;
}

void http_response::set(const std::string& name, std::string value) {
  for (auto& [key, val] : headers) {
    if (iequals(key, name)) {
      val = std::move(value);
      return;
    }
  }
  headers.emplace_back(name, std::move(value));
}

http_request from_client_request(const transport::request& r) {
  http_request hr;
  hr.method = r.method;
  hr.target = r.target;
  hr.body = r.body;
  for (const auto& [name, value] : r.headers) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    hr.headers[lower] = value;
  }
  return hr;
}

transport::outcome to_outcome(const http_response& res,
                              const std::string& endpoint) {
  transport::outcome o;
  o.status = res.status;
  o.endpoint = endpoint;
  o.body = res.body;
  for (const auto& [name, value] : res.headers) {
    if (iequals(name, "x-ms-substatus"))
      o.substatus = std::atoi(value.c_str());
    else if (iequals(name, "x-ms-session-token"))
      o.session_token = value;
    else if (iequals(name, "x-ms-retry-after-ms"))
      o.retry_after_ms = std::atoll(value.c_str());
    else if (iequals(name, "x-ms-continuation"))
      o.continuation = value;
    else if (iequals(name, "etag"))
      o.etag = value;
    else if (iequals(name, "x-ms-content-path"))
      o.content_path = value;
    else if (iequals(name, "x-ms-activity-id"))
      o.activity_id = value;
    else if (iequals(name, "x-ms-request-charge"))
      o.request_charge = std::atof(value.c_str());
  }
  return o;
}

std::string http_response::get(const std::string& name) const {
  for (const auto& [key, val] : headers)
    if (iequals(key, name)) return val;
  return {};
}

} // namespace georoute::emulator
