#pragma once

// The rules a composite operation (a cross-partition query page, a change
// feed page) follows for its sub-operations, each one request it sends the
// router: what budget the next one gets, and what a range-gone answer
// costs.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace georoute {

/// The budget of a composite's next sub-operation: what is left of the
/// caller's `budget` once `spent` has passed. A budget of 0 (none given:
/// the router applies the engine's to each sub-operation) is passed on as
/// 0. `std::nullopt`: the budget is spent, and no new sub-operation starts,
/// as no new attempt starts after an operation's budget.
std::optional<std::chrono::milliseconds>
sub_budget(std::chrono::milliseconds budget, std::chrono::milliseconds spent);

/// Range-gone answers one span may get in a row. The router refreshed the
/// routing map before each (the only refresh a split costs); more than a
/// few in a row means the map and the service disagree for good.
inline constexpr int max_gone_in_a_row = 4;

/// What a composite does with a range-gone answer (`errc::
/// partition_range_gone`) of one of its sub-operations.
enum class gone_step {
  /// Look up the ranges now under the span in the partition-range cache,
  /// without forcing it: the router's refresh put them there.
  successors,
  /// Give up: the span was gone `max_gone_in_a_row` times in a row.
  give_up,
};

/// The range-gone answers in a row of each span a composite reads, by the
/// id of the range that reads it. A page of the span ends its streak; the
/// ranges that replace a gone one carry its streak on.
class gone_streaks {
public:
  /// A range-gone answer for range `id`.
  gone_step gone(const std::string& id);

  /// `parent`'s span is now read by `children` (a child equal to the
  /// parent keeps it): each carries the parent's streak.
  void replaced(const std::string& parent,
                const std::vector<std::string>& children);

  /// A page (any answer but a failure) of range `id`: its streak ends.
  void answered(const std::string& id);

  /// The streak of `id` (0 when it has none).
  int streak(const std::string& id) const;

private:
  std::map<std::string, int> streaks_;
};

} // namespace georoute
