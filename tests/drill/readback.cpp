#include "tests/drill/readback.hpp"

#include <algorithm>
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

namespace {

// The `batch` property of a found document ("" when it has none).
std::string batch_in(const std::string& body) {
  auto doc = nlohmann::json::parse(body, nullptr, false);
  if (doc.is_object() && doc.contains("batch") && doc["batch"].is_string())
    return doc["batch"].get<std::string>();
  return {};
}

} // namespace

batch_pair_verdict classify_batch_pair(const transport::outcome& a,
                                       const transport::outcome& b,
                                       std::string* batch) {
  auto va = classify_readback(a);
  auto vb = classify_readback(b);
  if (va == readback_verdict::undecided || vb == readback_verdict::undecided)
    return batch_pair_verdict::undecided;
  if (va == readback_verdict::missing && vb == readback_verdict::missing)
    return batch_pair_verdict::absent;
  if (va != vb) return batch_pair_verdict::torn;
  auto ba = batch_in(a.body);
  if (ba.empty() || ba != batch_in(b.body)) return batch_pair_verdict::torn;
  if (batch != nullptr) *batch = std::move(ba);
  return batch_pair_verdict::whole;
}

batch_pair_result
verify_batch_pairs(const std::vector<std::string>& pairs,
                   const std::vector<transport::request>& reads,
                   const send_round& send, int max_rounds,
                   std::chrono::milliseconds pause) {
  batch_pair_result r;
  r.pairs = std::min(pairs.size(), reads.size() / 2);
  std::vector<size_t> open(r.pairs);
  for (size_t i = 0; i < open.size(); ++i)
    open[i] = i;
  // "id pk: a: <answer> / b: <answer>" (a pair is "id\npk").
  auto said = [&](size_t i, const transport::outcome& a,
                  const transport::outcome& b) {
    auto pair = pairs[i];
    std::replace(pair.begin(), pair.end(), '\n', ' ');
    return pair + ": a: " + describe_outcome_short(a) +
           " / b: " + describe_outcome_short(b);
  };
  std::string last_undecided;
  while (!open.empty() && r.rounds < static_cast<uint64_t>(max_rounds)) {
    if (r.rounds > 0) std::this_thread::sleep_for(pause);
    ++r.rounds;
    std::vector<transport::request> round;
    round.reserve(open.size() * 2);
    for (auto i : open) {
      round.push_back(reads[2 * i]);
      round.push_back(reads[2 * i + 1]);
    }
    auto got = send(std::move(round));
    got.resize(open.size() * 2);
    std::vector<size_t> still;
    for (size_t k = 0; k < open.size(); ++k) {
      auto i = open[k];
      const auto& a = got[2 * k];
      const auto& b = got[2 * k + 1];
      std::string batch;
      switch (classify_batch_pair(a, b, &batch)) {
      case batch_pair_verdict::whole:
        ++r.whole;
        r.batch_of[pairs[i]] = std::move(batch);
        break;
      case batch_pair_verdict::absent:
        ++r.absent;
        break;
      case batch_pair_verdict::torn:
        ++r.torn;
        if (r.torn_example.empty()) r.torn_example = said(i, a, b);
        break;
      case batch_pair_verdict::undecided:
        still.push_back(i);
        if (still.size() == 1) last_undecided = said(i, a, b);
        break;
      }
    }
    open = std::move(still);
  }
  r.undecided = open.size();
  if (!open.empty()) r.undecided_example = last_undecided;
  return r;
}

} // namespace georoute::drill
