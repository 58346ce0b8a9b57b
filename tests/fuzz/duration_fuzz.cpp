// Fuzzes the duration and timeout-ladder parsers
// (actors/policy/timeout_ladder.hpp), which read user configuration values
// ("300s", "5s/0s"). One value per line: the first is a duration, every line
// is also a ladder step, and all lines together form a ladder. Invariants:
// never a crash; a problem has a message; format/parse and to_string/parse
// give back the same value; a ladder has 1..10 steps with positive timeouts.

#include "georoute/actors/policy/timeout_ladder.hpp"
#include "tests/fuzz/fuzz_check.hpp"

#include <string>
#include <vector>

namespace {

using namespace georoute;

void check_duration(std::string_view text) {
  auto d = parse_duration(text);
  if (!d) {
    FUZZ_CHECK(!d.error().what.empty(), "a problem without a message");
    return;
  }
  auto shown = format_duration(*d);
  auto again = parse_duration(shown);
  FUZZ_CHECK(again.ok(), "formatted duration does not parse: " + shown);
  FUZZ_CHECK(*again == *d, "format/parse changed the duration: " + shown);
}

void check_step(std::string_view text) {
  auto s = parse_ladder_step(text);
  if (!s) {
    FUZZ_CHECK(!s.error().what.empty(), "a problem without a message");
    return;
  }
  FUZZ_CHECK(s->timeout.count() > 0, "accepted a non-positive timeout");
  auto shown = to_string(*s);
  auto again = parse_ladder_step(shown);
  FUZZ_CHECK(again.ok(), "rendered step does not parse: " + shown);
  FUZZ_CHECK(*again == *s, "to_string/parse changed the step: " + shown);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto text = fuzz::as_text(data, size);
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size() && lines.size() < 16) {
    auto nl = text.find('\n', start);
    auto line =
        text.substr(start, nl == std::string_view::npos ? std::string_view::npos
                                                        : nl - start);
    lines.emplace_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  check_duration(lines.front());
  for (const auto& l : lines)
    check_step(l);
  auto ladder = parse_ladder(lines);
  if (ladder) {
    FUZZ_CHECK(!ladder->empty() && ladder->size() <= 10, "ladder size");
    for (const auto& s : *ladder)
      FUZZ_CHECK(s.timeout.count() > 0, "accepted a non-positive timeout");
    for (size_t step = 0; step < ladder->size() + 1; ++step)
      for (auto kind : {request_kind::account_read, request_kind::write}) {
        timeout_ladders all;
        all.control_plane_read = *ladder;
        all.default_ladder = *ladder;
        auto choice = choose_ladder(all, kind);
        auto d = decide_ladder(choice, step, true, 408);
        FUZZ_CHECK(!d.climb || step + 1 < ladder->size(),
                   "climbed past the last step");
      }
  } else {
    FUZZ_CHECK(!ladder.error().what.empty(), "a problem without a message");
  }
  return 0;
}
