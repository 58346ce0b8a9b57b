#include "georoute/actors/policy/write_tracking.hpp"

#include <nlohmann/json.hpp>

namespace georoute {

std::string make_tracking_id(uint64_t hi, uint64_t lo) {
  static const char digits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[static_cast<size_t>(15 - i)] = digits[(hi >> (4 * i)) & 0xF];
    out[static_cast<size_t>(31 - i)] = digits[(lo >> (4 * i)) & 0xF];
  }
  return out;
}

result<std::string> with_tracking_id(std::string_view body,
                                     std::string_view id) {
  auto doc = nlohmann::ordered_json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return problem{"the document must be a JSON object to carry a tracking "
                   "id (write retries are on)"};
  doc[std::string{tracking_property}] = std::string{id};
  return doc.dump();
}

bool carries_tracking_id(std::string_view body, std::string_view id) {
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return false;
  auto it = doc.find(std::string{tracking_property});
  return it != doc.end() && it->is_string() &&
         it->get_ref<const std::string&>() == id;
}

write_echo classify_write_echo(data_op op, bool conditional, bool maybe_applied,
                               int status) {
  if (!maybe_applied) return write_echo::none;
  if (op == data_op::create && status == 409) return write_echo::check_tracking;
  if (op == data_op::replace && conditional && status == 412)
    return write_echo::check_tracking;
  // A tracked patch is conditional on not being applied yet.
  if (op == data_op::patch && status == 412) return write_echo::check_tracking;
  if (op == data_op::remove && status == 404)
    return write_echo::deleted_maybe_by_self;
  return write_echo::none;
}

std::chrono::milliseconds read_back_timeout(const timeout_ladders& ladders) {
  return choose_ladder(ladders, request_kind::document_read, true)
      .ladder->front()
      .timeout;
}

read_back_verdict judge_read_back(data_op op, bool read_ok, bool carries_id,
                                  int read_status) {
  read_back_verdict v;
  if (read_ok && carries_id) {
    v.applied = true;
    v.status = op == data_op::create ? 201 : 200;
    return v;
  }
  v.why = read_ok ? "the stored document does not carry this write's "
                    "tracking id: it is somebody else's"
                  : "reading the document back to tell its own first copy "
                    "failed (" +
                        std::to_string(read_status) + ")";
  return v;
}

} // namespace georoute
