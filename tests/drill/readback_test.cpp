// The drill's read-back of acknowledged writes: only 200 and 404 decide;
// a read-back that timed out is asked again and never counted as a loss.

#include "tests/drill/readback.hpp"

#include <gtest/gtest.h>
#include <map>

namespace {

using namespace georoute;
using namespace georoute::drill;
using namespace std::chrono_literals;

transport::outcome status(int code, int sub = 0) {
  transport::outcome o;
  o.status = code;
  o.substatus = sub;
  return o;
}

transport::outcome failed(transport::failure f) {
  transport::outcome o;
  o.error = f;
  o.error_detail = "deadline of 10000 ms expired";
  return o;
}

TEST(Readback, Classify_OnlyOkAndPlainNotFoundDecide) {
  struct row {
    transport::outcome o;
    readback_verdict want;
  };
  std::vector<row> rows{
      {status(200), readback_verdict::found},
      {status(404), readback_verdict::missing},
      {status(404, 1002), readback_verdict::undecided},
      {status(408), readback_verdict::undecided},
      {status(429), readback_verdict::undecided},
      {status(500), readback_verdict::undecided},
      {status(503), readback_verdict::undecided},
      {failed(transport::failure::timeout), readback_verdict::undecided},
      {failed(transport::failure::reset), readback_verdict::undecided},
      {failed(transport::failure::refused), readback_verdict::undecided},
  };
  for (const auto& r : rows)
    EXPECT_EQ(classify_readback(r.o), r.want)
        << r.o.status << "/" << r.o.substatus << " "
        << transport::to_string(r.o.error);
}

// A fake emulator: `answers[id]` is the sequence of answers to successive
// reads of that id (the last one repeats).
struct fake {
  std::map<std::string, std::vector<transport::outcome>> answers;
  std::map<std::string, size_t> asked;
  std::vector<size_t> round_sizes;

  std::vector<transport::outcome> send(std::vector<transport::request> reqs) {
    round_sizes.push_back(reqs.size());
    std::vector<transport::outcome> out;
    for (const auto& r : reqs) {
      const auto& seq = answers.at(r.target);
      auto n = asked[r.target]++;
      out.push_back(seq[std::min(n, seq.size() - 1)]);
    }
    return out;
  }
};

struct batch {
  std::vector<std::string> ids;
  std::vector<transport::request> reads;
  void add(const std::string& id) {
    ids.push_back(id);
    transport::request r;
    r.method = "GET";
    r.target = id;
    reads.push_back(r);
  }
};

TEST(Readback, TimedOutReadBack_AskedAgain_NotALoss) {
  fake f;
  batch b;
  for (auto id : {"a", "b", "c"})
    b.add(id);
  f.answers["a"] = {status(200)};
  f.answers["b"] = {failed(transport::failure::timeout),
                    failed(transport::failure::timeout), status(200)};
  f.answers["c"] = {status(503), status(200)};
  auto r = verify_writes(
      b.ids, b.reads, [&](auto reqs) { return f.send(std::move(reqs)); }, 8,
      0ms);
  EXPECT_EQ(r.checked, 3u);
  EXPECT_EQ(r.found, 3u);
  EXPECT_EQ(r.missing, 0u);
  EXPECT_EQ(r.unverified, 0u);
  EXPECT_EQ(r.rounds, 3u);
  // Later rounds carry only the undecided reads.
  EXPECT_EQ(f.round_sizes, (std::vector<size_t>{3, 2, 1}));
}

TEST(Readback, NotFound_IsALoss_UndecidedAfterLastRound_IsUnverified) {
  fake f;
  batch b;
  for (auto id : {"lost", "slow", "ok"})
    b.add(id);
  f.answers["lost"] = {status(404)};
  f.answers["slow"] = {failed(transport::failure::timeout)};
  f.answers["ok"] = {status(200)};
  auto r = verify_writes(
      b.ids, b.reads, [&](auto reqs) { return f.send(std::move(reqs)); }, 4,
      0ms);
  EXPECT_EQ(r.found, 1u);
  EXPECT_EQ(r.missing, 1u);
  EXPECT_EQ(r.unverified, 1u);
  EXPECT_EQ(r.rounds, 4u);
  EXPECT_EQ(f.asked["lost"], 1u); // a 404 is final: not asked again
  EXPECT_EQ(f.asked["slow"], 4u);
  EXPECT_EQ(r.missing_example.rfind("lost: 404", 0), 0u) << r.missing_example;
  EXPECT_NE(r.unverified_example.find("slow: timeout"), std::string::npos)
      << r.unverified_example;
}

} // namespace

namespace {

TEST(Readback, TrackingId_AnotherOne_IsSomebodyElsesDocument) {
  fake f;
  batch b;
  for (auto id : {"own", "other", "untracked"})
    b.add(id);
  auto with = [](const char* t) {
    auto o = status(200);
    o.body = std::string{R"({"id":"x","_trackingId":")"} + t + "\"}";
    return o;
  };
  f.answers["own"] = {with("t-own")};
  f.answers["other"] = {with("t-late-copy")};
  f.answers["untracked"] = {status(200)};
  auto r = verify_writes(b.ids, b.reads,
                         [&](auto reqs) { return f.send(std::move(reqs)); }, 2,
                         0ms, {"t-own", "t-other", ""});
  EXPECT_EQ(r.found, 3u);
  EXPECT_EQ(r.tracked, 2u);
  EXPECT_EQ(r.foreign, 1u);
  EXPECT_EQ(r.foreign_example, "other: stored t-late-copy");
}

} // namespace

namespace {

transport::outcome doc_of(const char* batch) {
  auto o = status(200);
  o.body = std::string{R"({"id":"x","batch":")"} + batch + "\"}";
  return o;
}

TEST(BatchPairs, Classify_WholeAbsentTornUndecided) {
  std::string b;
  EXPECT_EQ(classify_batch_pair(doc_of("c1"), doc_of("c1"), &b),
            batch_pair_verdict::whole);
  EXPECT_EQ(b, "c1");
  EXPECT_EQ(classify_batch_pair(status(404), status(404)),
            batch_pair_verdict::absent);
  // One without the other, or from two batches.
  EXPECT_EQ(classify_batch_pair(doc_of("c1"), status(404)),
            batch_pair_verdict::torn);
  EXPECT_EQ(classify_batch_pair(status(404), doc_of("c1")),
            batch_pair_verdict::torn);
  EXPECT_EQ(classify_batch_pair(doc_of("c1"), doc_of("c2")),
            batch_pair_verdict::torn);
  // A document without the property cannot show it came from one batch.
  EXPECT_EQ(classify_batch_pair(status(200), status(200)),
            batch_pair_verdict::torn);
  EXPECT_EQ(
      classify_batch_pair(doc_of("c1"), failed(transport::failure::timeout)),
      batch_pair_verdict::undecided);
  EXPECT_EQ(classify_batch_pair(status(404, 1002), status(404)),
            batch_pair_verdict::undecided);
}

TEST(BatchPairs, Verify_UndecidedAskedAgain_TornNamed) {
  fake f;
  batch b;
  std::vector<std::string> pairs{"p1\npk", "p2\npk", "p3\npk"};
  for (auto id : {"p1a", "p1b", "p2a", "p2b", "p3a", "p3b"})
    b.add(id);
  f.answers["p1a"] = {doc_of("c7")};
  f.answers["p1b"] = {failed(transport::failure::timeout), doc_of("c7")};
  f.answers["p2a"] = {status(404)};
  f.answers["p2b"] = {status(404)};
  f.answers["p3a"] = {doc_of("c8")};
  f.answers["p3b"] = {doc_of("c9")};
  auto r = verify_batch_pairs(
      pairs, b.reads, [&](auto reqs) { return f.send(std::move(reqs)); }, 4,
      0ms);
  EXPECT_EQ(r.pairs, 3u);
  EXPECT_EQ(r.whole, 1u);
  EXPECT_EQ(r.absent, 1u);
  EXPECT_EQ(r.torn, 1u);
  EXPECT_EQ(r.undecided, 0u);
  EXPECT_EQ(r.rounds, 2u);
  EXPECT_EQ(f.round_sizes, (std::vector<size_t>{6, 2}));
  EXPECT_EQ(r.batch_of, (std::map<std::string, std::string>{{"p1\npk", "c7"}}));
  EXPECT_EQ(r.torn_example.rfind("p3 pk: a: 200", 0), 0u) << r.torn_example;
}

} // namespace
