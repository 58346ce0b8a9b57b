// The log handle every actor gets (actors/log.hpp): a null sink or a level
// below the minimum costs one test and calls nothing; a sink that throws
// does not reach the actor; levels and lines read as documented.

#include "georoute/actors/log.hpp"

#include <gtest/gtest.h>
#include <sstream>
#include <stdexcept>
#include <vector>

// Named after the file as well: the unity build (tests/CMakeLists.txt)
// compiles it in one translation unit with other tests.
namespace log_test {
namespace {

using namespace georoute;

TEST(Logger, NullSink_NothingEnabled) {
  logger none;
  for (auto l : {log_level::trace, log_level::info, log_level::error})
    EXPECT_FALSE(none.enabled(l));
  none.log(log_level::error, "c", "e", "m"); // no sink: nothing to call
  logger null_fn{log_sink{}, log_level::trace};
  EXPECT_FALSE(null_fn.enabled(log_level::error));
}

TEST(Logger, MinimumLevel_FiltersBelowIt) {
  std::vector<log_record> got;
  logger log{[&](const log_record& r) { got.push_back(r); }, log_level::info};
  EXPECT_FALSE(log.enabled(log_level::debug));
  EXPECT_TRUE(log.enabled(log_level::info));
  EXPECT_TRUE(log.enabled(log_level::error));
  log.log(log_level::debug, "georoute.router", "operation.retry", "x");
  log.log(log_level::warn, "georoute.router", "breaker.opened", "West US");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].level, log_level::warn);
  EXPECT_EQ(got[0].component, "georoute.router");
  EXPECT_EQ(got[0].event, "breaker.opened");
  EXPECT_EQ(got[0].message, "West US");
  logger off{[&](const log_record& r) { got.push_back(r); }, log_level::off};
  off.log(log_level::error, "c", "e", "m");
  EXPECT_EQ(got.size(), 1u);
}

TEST(Logger, ThrowingSink_Swallowed) {
  int calls = 0;
  logger log{[&](const log_record&) {
               ++calls;
               throw std::runtime_error{"disk full"};
             },
             log_level::trace};
  EXPECT_NO_THROW(log.log(log_level::error, "c", "e", "m"));
  EXPECT_EQ(calls, 1);
}

TEST(Logger, LevelNames_RoundTrip) {
  for (auto l : {log_level::trace, log_level::debug, log_level::info,
                 log_level::warn, log_level::error, log_level::off})
    EXPECT_EQ(parse_log_level(to_string(l)), l);
  EXPECT_EQ(parse_log_level("warning"), log_level::warn);
  EXPECT_EQ(parse_log_level("loud"), std::nullopt);
}

TEST(Logger, StreamSink_OneLinePerRecord) {
  std::ostringstream out;
  auto sink = make_stream_sink(out);
  sink(log_record{log_level::warn, "georoute.engine", "engine.restart",
                  "georoute.router exited (kill)"});
  EXPECT_EQ(out.str(), "warn georoute.engine engine.restart: georoute.router "
                       "exited (kill)\n");
}

} // namespace
} // namespace log_test
