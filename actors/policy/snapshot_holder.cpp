#include "georoute/actors/policy/snapshot_holder.hpp"

#include <algorithm>

namespace georoute {

bool snapshot_holder::apply(table_ptr table, uint64_t version) {
  if (!table) return false;
  // A restarted location cache first publishes a table without an account
  // (it answers the account endpoint until the endpoint manager feeds it).
  // Keep routing on the regions we know until its first real table.
  if (accept_any_ && table_ && table_->has_account() && !table->has_account())
    return false;
  if (table_ && !accept_any_ && version <= version_) {
    ++stale_;
    return false;
  }
  for (const auto& m : pending_)
    table = std::make_shared<const location_table>(
        table->with_mark(m.endpoint, m.read, m.write, m.at));
  table_ = std::move(table);
  version_ = version;
  accept_any_ = false;
  return true;
}

uint64_t snapshot_holder::mark(const std::string& endpoint, bool read,
                               bool write, policy_time now) {
  auto seq = next_seq_++;
  pending_.push_back(pending_mark{seq, endpoint, read, write, now});
  if (table_)
    table_ = std::make_shared<const location_table>(
        table_->with_mark(endpoint, read, write, now));
  return seq;
}

void snapshot_holder::confirm(uint64_t seq) {
  pending_.erase(
      std::remove_if(pending_.begin(), pending_.end(),
                     [&](const pending_mark& m) { return m.seq == seq; }),
      pending_.end());
}

} // namespace georoute
