#include "georoute/transport/attempt.hpp"

namespace georoute::transport {

const char* to_string(protocol p) {
  switch (p) {
  case protocol::gateway:
    return "gateway";
  }
  return "?";
}

const char* to_string(attempt_kind k) {
  switch (k) {
  case attempt_kind::account_read:
    return "account_read";
  case attempt_kind::resource_read:
    return "resource_read";
  case attempt_kind::pkranges_read:
    return "pkranges_read";
  case attempt_kind::query_plan:
    return "query_plan";
  case attempt_kind::create:
    return "create";
  case attempt_kind::upsert:
    return "upsert";
  case attempt_kind::read:
    return "read";
  case attempt_kind::replace:
    return "replace";
  case attempt_kind::remove:
    return "remove";
  case attempt_kind::query:
    return "query";
  case attempt_kind::change_feed:
    return "change_feed";
  case attempt_kind::patch:
    return "patch";
  case attempt_kind::batch:
    return "batch";
  case attempt_kind::bulk:
    return "bulk";
  case attempt_kind::raw:
    return "raw";
  }
  return "?";
}

bool reads_only(attempt_kind k) {
  switch (k) {
  case attempt_kind::account_read:
  case attempt_kind::resource_read:
  case attempt_kind::pkranges_read:
  case attempt_kind::query_plan:
  case attempt_kind::read:
  case attempt_kind::query:
  case attempt_kind::change_feed:
    return true;
  default:
    return false;
  }
}

bool repeat_safe(const raw_request& r) {
  request as_sent;
  as_sent.method = r.method;
  as_sent.headers = r.headers;
  return repeat_safe(as_sent);
}

std::string describe(const attempt& a) {
  switch (a.kind) {
  case attempt_kind::account_read:
    return "account read";
  case attempt_kind::resource_read:
    return "read of " + a.resource;
  case attempt_kind::pkranges_read:
    return "partition-key ranges of " + a.resource;
  case attempt_kind::query_plan:
    return "query plan of " + a.resource;
  case attempt_kind::raw:
    return a.raw.method + " " + a.resource;
  default:
    break;
  }
  std::string out = std::string{to_string(a.kind)} + " of " + a.resource;
  if (!a.id.empty()) out += "/docs/" + a.id;
  return out;
}

} // namespace georoute::transport
