// The READMEs state the library's default timeout ladders: README.md in
// prose, actors/policy/README.md in prose and in its ladder table, README.md
// again in its options table. These tests hold them to the code's defaults,
// so that a change of either shows. (Point reads climb the
// partition-failover ladder, 6 s/6 s/10 s, not the metadata ladder,
// 1 s/5 s/65 s: prose that mixes the two up fails here.)

#include "georoute/actors/policy/timeout_ladder.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace georoute;

// A file of the source tree; empty when it cannot be read.
std::string source_file(const std::string& path) {
  std::ifstream f{GEOROUTE_SOURCE_DIR "/" + path};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string readme() {
  return source_file("README.md");
}
std::string policy_readme() {
  return source_file("actors/policy/README.md");
}

// The documents whose prose may speak of reads and ladders.
const std::vector<std::string> documents = {
    "README.md",           "docs/embedding.md",     "docs/diagnostics.md",
    "docs/building.md",    "actors/README.md",      "actors/policy/README.md",
    "transport/README.md", "tests/drill/README.md", "tests/bench/README.md"};

// "6 s" for 6 seconds, "500 ms" below a second.
std::string spoken(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
  return std::to_string(d.count()) + " ms";
}

// The README's sentences (split at ". " and blank lines), whitespace folded.
std::vector<std::string> sentences(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  char prev = 0;
  for (char c : text) {
    char ch = (c == '\n') ? ' ' : c;
    if (ch == ' ' && prev == ' ') continue;
    cur += ch;
    if ((prev == '.' && ch == ' ') || (c == '\n' && prev == '\n')) {
      out.push_back(cur);
      cur.clear();
    }
    prev = ch == ' ' && c == '\n' ? '\n' : ch;
  }
  out.push_back(cur);
  return out;
}

// The ways the READMEs write a ladder: "6 s, 6 s, 10 s", "6 s/6 s/10 s",
// "`6s/0s`, `6s/0s`, `10s/0s`" and, as in georoute.ini,
// `["6s/0s", "6s/0s", "10s/0s"]`.
std::vector<std::string> spellings(const timeout_ladder& l) {
  std::string comma, slash, steps, ini = "[";
  for (size_t i = 0; i < l.size(); ++i) {
    comma += (i ? ", " : "") + spoken(l[i].timeout);
    slash += (i ? "/" : "") + spoken(l[i].timeout);
    steps += (i ? ", `" : "`") + to_string(l[i]) + "`";
    ini += (i ? ", \"" : "\"") + to_string(l[i]) + "\"";
  }
  return {comma, slash, steps, ini + "]"};
}

// Each configurable ladder: its key under [georoute.http] and its default.
std::vector<std::pair<std::string, const timeout_ladder*>>
keyed(const timeout_ladders& l) {
  return {{"ladder-control-plane-read", &l.control_plane_read},
          {"ladder-hot-path", &l.hot_path},
          {"ladder-default", &l.default_ladder},
          {"ladder-partition-failover", &l.partition_failover},
          {"ladder-no-retry", &l.no_retry}};
}

TEST(Readme, DocumentReadLadder_StatedAsTheCodesDefault) {
  timeout_ladders defaults;
  auto choice = choose_ladder(defaults, request_kind::document_read, true);
  auto comma = spellings(*choice.ladder).front();
  for (const auto& text : {readme(), policy_readme()}) {
    ASSERT_FALSE(text.empty());
    EXPECT_NE(text.find("partition-failover ladder (" + comma),
              std::string::npos)
        << "README.md and actors/policy/README.md should state the read "
           "ladder as ("
        << comma << ")";
  }
}

// actors/policy/README.md's ladder table: "| `ladder-hot-path` | `1s/0s`,
// `5s/1s`, `65s/0s` | ...", one row per ladder, with the code's default.
TEST(Readme, PolicyLadderTable_StatesEveryDefault) {
  timeout_ladders defaults;
  auto text = policy_readme();
  ASSERT_FALSE(text.empty());
  for (const auto& [key, ladder] : keyed(defaults)) {
    auto row = "| `" + key + "` | " + spellings(*ladder)[2] + " |";
    EXPECT_NE(text.find(row), std::string::npos)
        << "actors/policy/README.md should have the row " << row;
  }
}

// README.md's options table: "| `georoute.http.ladder-hot-path` |
// `["1s/0s", "5s/1s", "65s/0s"]` | ...", for the ladders it lists.
TEST(Readme, OptionsTable_LaddersAreTheCodesDefaults) {
  timeout_ladders defaults;
  auto text = readme();
  ASSERT_FALSE(text.empty());
  int listed = 0;
  for (const auto& [key, ladder] : keyed(defaults)) {
    auto cell = "| `georoute.http." + key + "` | ";
    auto at = text.find(cell);
    if (at == std::string::npos) continue;
    ++listed;
    auto value = "`" + spellings(*ladder)[3] + "`";
    EXPECT_EQ(text.compare(at + cell.size(), value.size(), value), 0)
        << "README.md lists " << key << " with a default other than " << value;
  }
  EXPECT_GE(listed, 1) << "README.md's options table lists no ladder";
}

TEST(Readme, NoSentenceGivesReadsTheMetadataLadder) {
  timeout_ladders defaults;
  auto metadata = choose_ladder(defaults, request_kind::metadata_read, true);
  auto read = choose_ladder(defaults, request_kind::document_read, true);
  ASSERT_NE(metadata.ladder, read.ladder);
  for (const auto& doc : documents) {
    auto text = source_file(doc);
    ASSERT_FALSE(text.empty()) << doc << " is missing";
    for (const auto& s : sentences(text)) {
      bool about_reads = s.find(" read") != std::string::npos &&
                         s.find("metadata") == std::string::npos;
      if (!about_reads) continue;
      for (const auto& way : spellings(*metadata.ladder))
        EXPECT_EQ(s.find(way), std::string::npos)
            << "a sentence of " << doc
            << " about reads names the metadata ladder (" << way << "): " << s;
    }
  }
}

} // namespace
