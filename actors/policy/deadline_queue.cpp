#include "georoute/actors/policy/deadline_queue.hpp"

namespace georoute {

std::optional<deadline_queue::time_point> deadline_queue::arm_for_earliest() {
  if (deadlines_.empty()) return std::nullopt;
  auto earliest = deadlines_.begin()->first;
  if (!armed_.empty() && *armed_.begin() <= earliest) return std::nullopt;
  armed_.insert(earliest);
  ++pending_;
  return earliest;
}

std::optional<deadline_queue::time_point> deadline_queue::add(deadline_key key,
                                                              time_point at) {
  deadlines_.emplace(at, key);
  return arm_for_earliest();
}

void deadline_queue::remove(deadline_key key, time_point at) {
  deadlines_.erase({at, key});
}

deadline_queue::fired deadline_queue::on_timer(time_point due, time_point now) {
  fired out;
  if (auto i = armed_.find(due); i != armed_.end()) {
    armed_.erase(i);
    --pending_;
  }
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    out.expired.push_back(deadlines_.begin()->second);
    deadlines_.erase(deadlines_.begin());
  }
  out.arm = arm_for_earliest();
  return out;
}

} // namespace georoute
