#include "tests/drill/readback.hpp"

#include <nlohmann/json.hpp>
#include <thread>

namespace georoute::drill {

readback_verdict classify_readback(const transport::outcome& o) {
  if (o.error != transport::failure::none) return readback_verdict::undecided;
  if (o.status == 200) return readback_verdict::found;
  // 404/0 is "no such document"; 404/1002 (a replica behind) decides
  // nothing, and neither does any other status.
  if (o.status == 404 && o.substatus == 0) return readback_verdict::missing;
  return readback_verdict::undecided;
}

std::string describe_outcome_short(const transport::outcome& o) {
  if (o.error != transport::failure::none)
    return std::string{transport::to_string(o.error)} + " " + o.error_detail;
  return std::to_string(o.status) + " " + o.body.substr(0, 200);
}

readback_result verify_writes(const std::vector<std::string>& ids,
                              const std::vector<transport::request>& reads,
                              const send_round& send, int max_rounds,
                              std::chrono::milliseconds pause,
                              const std::vector<std::string>& tracking) {
  readback_result r;
  r.checked = reads.size();
  std::vector<size_t> open(reads.size());
  for (size_t i = 0; i < open.size(); ++i)
    open[i] = i;
  std::vector<transport::outcome> last(reads.size());
  while (!open.empty() && r.rounds < static_cast<uint64_t>(max_rounds)) {
    if (r.rounds > 0) std::this_thread::sleep_for(pause);
    ++r.rounds;
    std::vector<transport::request> round;
    round.reserve(open.size());
    for (auto i : open)
      round.push_back(reads[i]);
    auto got = send(std::move(round));
    std::vector<size_t> still;
    for (size_t k = 0; k < open.size(); ++k) {
      auto i = open[k];
      auto o = k < got.size() ? std::move(got[k]) : transport::outcome{};
      switch (classify_readback(o)) {
      case readback_verdict::found:
        ++r.found;
        if (i < tracking.size() && !tracking[i].empty()) {
          ++r.tracked;
          auto doc = nlohmann::json::parse(o.body, nullptr, false);
          auto stored = doc.is_object() && doc.contains("_trackingId") &&
                                doc["_trackingId"].is_string()
                            ? doc["_trackingId"].get<std::string>()
                            : std::string{"(none)"};
          if (stored != tracking[i]) {
            ++r.foreign;
            if (r.foreign_example.empty())
              r.foreign_example = ids[i] + ": stored " + stored;
          }
        }
        break;
      case readback_verdict::missing:
        ++r.missing;
        if (r.missing_example.empty())
          r.missing_example = ids[i] + ": " + describe_outcome_short(o);
        break;
      case readback_verdict::undecided:
        last[i] = std::move(o);
        still.push_back(i);
        break;
      }
    }
    open = std::move(still);
  }
  r.unverified = open.size();
  if (!open.empty())
    r.unverified_example =
        ids[open.front()] + ": " + describe_outcome_short(last[open.front()]);
  return r;
}

} // namespace georoute::drill
