#include "georoute/actors/policy/composite.hpp"

namespace georoute {

std::optional<std::chrono::milliseconds>
sub_budget(std::chrono::milliseconds budget, std::chrono::milliseconds spent) {
  if (budget.count() <= 0) return std::chrono::milliseconds{0};
  if (spent >= budget) return std::nullopt;
  return budget - spent;
}

gone_step gone_streaks::gone(const std::string& id) {
  auto& n = streaks_[id];
  if (n >= max_gone_in_a_row) return gone_step::give_up;
  ++n;
  return gone_step::successors;
}

void gone_streaks::replaced(const std::string& parent,
                            const std::vector<std::string>& children) {
  auto n = streak(parent);
  streaks_.erase(parent);
  if (n == 0) return;
  for (const auto& c : children)
    streaks_[c] = n;
}

void gone_streaks::answered(const std::string& id) {
  streaks_.erase(id);
}

int gone_streaks::streak(const std::string& id) const {
  auto i = streaks_.find(id);
  return i == streaks_.end() ? 0 : i->second;
}

} // namespace georoute
