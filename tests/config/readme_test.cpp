// The README states the library's default timeout ladders in prose; these
// tests hold it to the code's defaults, so that a change of either shows.
// (The README once said point reads climb the metadata ladder, 1 s/5 s/65 s,
// while the code sends them up the partition-failover ladder, 6 s/6 s/10 s.)

#include "actors/policy/timeout_ladder.hpp"

#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace georoute;

std::string readme() {
  std::ifstream f{GEOROUTE_SOURCE_DIR "/README.md"};
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

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

// The ways the README writes a ladder: "6 s, 6 s, 10 s", "6 s/6 s/10 s",
// "`6s/0s`, `6s/0s`, `10s/0s`".
std::vector<std::string> spellings(const timeout_ladder& l) {
  std::string comma, slash, steps;
  for (size_t i = 0; i < l.size(); ++i) {
    comma += (i ? ", " : "") + spoken(l[i].timeout);
    slash += (i ? "/" : "") + spoken(l[i].timeout);
    steps += (i ? ", `" : "`") + to_string(l[i]) + "`";
  }
  return {comma, slash, steps};
}

TEST(Readme, DocumentReadLadder_StatedAsTheCodesDefault) {
  timeout_ladders defaults;
  auto choice = choose_ladder(defaults, request_kind::document_read, true);
  auto text = readme();
  ASSERT_FALSE(text.empty());
  auto comma = spellings(*choice.ladder).front();
  EXPECT_NE(text.find("partition-failover ladder (" + comma), std::string::npos)
      << "the README should state the read ladder as (" << comma << ")";
}

TEST(Readme, NoSentenceGivesReadsTheMetadataLadder) {
  timeout_ladders defaults;
  auto metadata = choose_ladder(defaults, request_kind::metadata_read, true);
  auto read = choose_ladder(defaults, request_kind::document_read, true);
  ASSERT_NE(metadata.ladder, read.ladder);
  for (const auto& s : sentences(readme())) {
    bool about_reads = s.find(" read") != std::string::npos &&
                       s.find("metadata") == std::string::npos;
    if (!about_reads) continue;
    for (const auto& way : spellings(*metadata.ladder))
      EXPECT_EQ(s.find(way), std::string::npos)
          << "a sentence about reads names the metadata ladder (" << way
          << "): " << s;
  }
}

} // namespace
