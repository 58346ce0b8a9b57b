// Issue 11, item 6 (in part): the account key never appears in what
// georoute prints or writes. Runs the real program: a configuration dump
// with the key in the environment, a key file that does not decode, and a
// short drill with its JSON and HTML reports; every byte they produce is
// searched for the key (whole, and any 12-character piece of it).

#include "tests/emulator/engine.hpp"

#include <array>
#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace {

struct ran {
  int status = -1;
  std::string output; // stdout and stderr
};

ran run(const std::string& command) {
  ran r;
  auto* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    r.output.append(buf.data(), n);
  auto st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream f{path, std::ios::binary};
  std::ostringstream os;
  os << f.rdbuf();
  return os.str();
}

// The key, or any 12-character window of it, in `text`.
::testing::AssertionResult leaks(const std::string& text,
                                 const std::string& key,
                                 const std::string& where) {
  for (size_t i = 0; i + 12 <= key.size(); ++i)
    if (text.find(key.substr(i, 12)) != std::string::npos)
      return ::testing::AssertionSuccess()
             << where << " shows key characters " << i << ".." << i + 12;
  return ::testing::AssertionFailure() << where << ": clean";
}

const std::string binary = GEOROUTE_BINARY;
const std::string key = georoute::emulator::default_master_key;

TEST(Secrets, ConfigDump_WithTheKeyInTheEnvironment_ShowsNoKey) {
  auto r = run("GEOROUTE_ACCOUNT_KEY='" + key + "' " + binary +
               " check-config --dump-config "
               "--georoute.account-endpoint=https://127.0.0.1:1/");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("<redacted>"), std::string::npos) << r.output;
  EXPECT_FALSE(leaks(r.output, key, "--dump-config"));
}

TEST(Secrets, InvalidKey_TheErrorNamesTheProblemNotTheKey) {
  // A key that is almost right (one character off) must not be echoed
  // either: people paste real keys with a typo.
  auto bad = key.substr(0, key.size() - 3) + "!==";
  auto r =
      run("GEOROUTE_ACCOUNT_KEY='" + bad + "' " + binary +
          " check-config --georoute.account-endpoint=https://127.0.0.1:1/");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("GEOROUTE_ACCOUNT_KEY"), std::string::npos)
      << r.output;
  EXPECT_FALSE(leaks(r.output, bad, "the error"));
}

TEST(Secrets, DrillOutputAndReports_ShowNoKey) {
  auto dir = ::testing::TempDir();
  auto json = dir + "/secrets-drill.json";
  auto html = dir + "/secrets-drill.html";
  auto r = run(binary +
               " drill --scenario=S3 --duration=4s --rate=50 "
               "--json=" +
               json + " --html=" + html);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(leaks(r.output, key, "the drill's output"));
  EXPECT_FALSE(leaks(slurp(json), key, "the JSON report"));
  EXPECT_FALSE(leaks(slurp(html), key, "the HTML report"));
}

// Crash output: a georoute that dies of SIGABRT mid-drill (what a failed
// assertion or std::terminate does) with the key in its environment. What
// it wrote up to its death, and what dying adds, must not show the key.
TEST(Secrets, CrashOutput_ShowsNoKey) {
  // Killed two seconds into the scenario (a sanitizer build takes longer
  // than a fixed sleep to get there).
  auto r = run("exec 2>&1; ulimit -c 0; out=$(mktemp); "
               "GEOROUTE_ACCOUNT_KEY='" +
               key + "' " + binary +
               " drill --scenario=S1a --duration=30s --rate=50 >\"$out\" "
               "2>&1 & pid=$!; "
               "for i in $(seq 600); do grep -q S1a \"$out\" && break; "
               "sleep 0.1; done; sleep 2; "
               "kill -ABRT $pid; wait $pid; echo \"exit=$?\"; "
               "cat \"$out\"; rm -f \"$out\"");
  EXPECT_NE(r.output.find("exit=134"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("S1a"), std::string::npos) << r.output;
  EXPECT_FALSE(leaks(r.output, key, "a crashed georoute's output"));
}

} // namespace
