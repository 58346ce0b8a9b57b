#include "tests/drill/report.hpp"

#include <algorithm>
#include <functional>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>

// The three renderers on a hand-made report: S1 passes, S2 fails.

namespace {

using namespace georoute::drill;
using json = nlohmann::json;

scenario_report passing() {
  scenario_report s;
  s.id = "S1";
  s.title = "multi-write, a secondary region hangs";
  s.description = "East US stops answering for 20 s; reads move elsewhere.";
  s.duration_ms = 4000;
  s.by_kind["read"] = {300, 300, 0, 0};
  s.by_kind["write"] = {100, 99, 0, 1};
  s.total = {400, 399, 0, 1};
  s.success_pct = 99.75;
  s.failover_ms = 1234;
  s.failover_at_ms = 2234;
  s.p50_ms = 3.14;
  s.p99_ms = 45.6;
  s.account_refreshes = 7;
  s.backend = {{"West US", {{200, 1234}, {403, 3}}},
               {"East US", {{200, 500}}},
               {"(global)", {{200, 7}}}};
  s.served_by = {{"West US", 300}, {"East US", 99}};
  s.faults = {{1000, "East US hangs", "East US"},
              {3000, "East US recovers", "East US"}};
  for (int64_t t = 0; t < 4; ++t) {
    timeline_bucket b;
    b.t_ms = t * 1000;
    b.backend["West US"] = {{200, 300}, {403, t == 1 ? 3u : 0u}};
    if (t != 1 && t != 2) b.backend["East US"] = {{200, 250}};
    b.callers = {{"success", 99}, {"timeout", t == 1 ? 1u : 0u}};
    if (t == 1) b.accepted["East US"] = 7;
    if (t == 2) b.held["East US"] = 12;
    if (t == 2) b.queued["East US"] = 40;
    if (t == 3) b.open["West US"] = 16;
    s.timeline.push_back(b);
  }
  s.criteria = {{"user-visible failures = 0", "0", true},
                {"failover within 5 s", "1.23 s", true}};
  s.notes = {"3 failover decisions, 0 pre-empted"};
  s.memory = {{0, 30.5, 12.25, 0.5}, {1000, 31.0, 12.5, 0.75}};
  s.passed = true;
  return s;
}

scenario_report failing() {
  scenario_report s;
  s.id = "S2";
  s.title = "single-write, the write region is lost";
  s.duration_ms = 3000;
  s.by_kind["write"] = {200, 150, 50, 0};
  s.total = {200, 150, 50, 0};
  s.success_pct = 75;
  s.p50_ms = 8;
  s.p99_ms = 2400;
  s.backend = {{"West US", {{503, 50}, {200, 150}}}};
  s.faults = {{500, "write region -> East US", ""}};
  s.timeline.push_back({0, {{"West US", {{503, 50}}}}, {{"failure", 50}}});
  s.criteria = {{"user-visible failures = 0", "50", false},
                {"p99 < 3 s", "2.40 s", true}};
  s.passed = false;
  return s;
}

drill_report sample() {
  drill_report r;
  r.regions = {"West US", "East US"};
  r.callers = 8;
  r.rate = 100;
  r.duration_ms = 4000;
  r.seed = 42;
  r.started_utc = "2024-05-01T10:00:00Z";
  r.settings = {{"request_timeout", "2s"}, {"refresh_interval", "1s"}};
  r.scenarios = {passing(), failing()};
  r.passed = false;
  return r;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (auto p = text.find(part); p != std::string::npos;
       p = text.find(part, p + 1))
    ++n;
  return n;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// -- render_table -------------------------------------------------------------

TEST(RenderTable, Scenarios_HeaderLinesWithVerdicts) {
  auto t = render_table(sample());
  EXPECT_TRUE(
      contains(t, "\nS1  multi-write, a secondary region hangs  PASS\n"))
      << t;
  EXPECT_TRUE(
      contains(t, "\nS2  single-write, the write region is lost  FAIL\n"))
      << t;
}

TEST(RenderTable, Criteria_OneLineEachWithVerdict) {
  auto t = render_table(sample());
  EXPECT_TRUE(contains(t, "\n  [PASS] user-visible failures = 0 — 0\n")) << t;
  EXPECT_TRUE(contains(t, "\n  [PASS] failover within 5 s — 1.23 s\n")) << t;
  EXPECT_TRUE(contains(t, "\n  [FAIL] user-visible failures = 0 — 50\n")) << t;
  EXPECT_TRUE(contains(t, "\n  [PASS] p99 < 3 s — 2.40 s\n")) << t;
}

TEST(RenderTable, Facts_FailoverLatencyRegionsFaultsNotes) {
  auto t = render_table(sample());
  EXPECT_TRUE(contains(t, "1.23 s (first success elsewhere at +2.2s)")) << t;
  EXPECT_TRUE(contains(t, "p50 3.1 ms, p99 45.6 ms")) << t;
  EXPECT_TRUE(contains(t, "+1.0s    East US hangs")) << t;
  EXPECT_TRUE(contains(t, "+3.0s    East US recovers")) << t;
  EXPECT_TRUE(contains(t, "note: 3 failover decisions, 0 pre-empted")) << t;
  // S2 has no failover and served nobody.
  auto s2 = t.substr(t.find("\nS2 "));
  EXPECT_TRUE(contains(s2, "failover time       none\n")) << s2;
  EXPECT_TRUE(contains(s2, "served (callers) by region: none\n")) << s2;
}

/// The words of the first line of `text` that starts with `prefix`.
std::vector<std::string> words_of(const std::string& text,
                                  const std::string& prefix) {
  for (const auto& l : lines(text))
    if (l.rfind(prefix, 0) == 0) {
      std::istringstream in(l.substr(prefix.size()));
      std::vector<std::string> out;
      for (std::string w; in >> w;)
        out.push_back(w);
      return out;
    }
  return {};
}

using words = std::vector<std::string>;

TEST(RenderTable, Backend_OneColumnPerStatus) {
  auto t = render_table(sample());
  EXPECT_EQ(words_of(t, "  backend (emulator)"),
            (words{"200", "403", "total"}));
  EXPECT_EQ(words_of(t, "    West US"), (words{"1234", "3", "1237"}));
  EXPECT_EQ(words_of(t, "    East US"), (words{"500", "-", "500"}));
  EXPECT_EQ(words_of(t, "  served (callers)"), (words{"ok", "share"}));
  EXPECT_EQ(words_of(t, "    (global)"), (words{"7", "-", "7"}));
  // Right-aligned: West US's 1237 ends under "total".
  auto all = lines(t);
  auto header = std::find_if(all.begin(), all.end(), [](const auto& l) {
    return l.rfind("  backend (emulator)", 0) == 0;
  });
  ASSERT_NE(header, all.end());
  EXPECT_EQ(header->size(), (header + 1)->size()) << *header << "\n"
                                                  << *(header + 1);
}

TEST(RenderTable, Backend_TooManyStatuses_ListsThem) {
  auto r = sample();
  for (int status = 400; status < 420; ++status)
    r.scenarios[0].backend["East US"][status] = 1;
  auto t = render_table(r);
  EXPECT_TRUE(contains(t, "  backend (emulator) by region:\n")) << t;
  EXPECT_EQ(words_of(t, "    West US"),
            (words{"200×1234", "403×3", "total", "1237"}));
  for (const auto& l : lines(t))
    EXPECT_LE(columns(l), 100u) << l;
}

TEST(RenderTable, Regions_DrillOrderThenOthers) {
  auto t = render_table(sample());
  auto west = t.find("    West US ");
  auto east = t.find("    East US ");
  auto global = t.find("    (global) ");
  ASSERT_NE(global, std::string::npos) << t;
  EXPECT_LT(west, east);
  EXPECT_LT(east, global);
}

TEST(RenderTable, Counts_RightAlignedUnderTheirHeaders) {
  auto all = lines(render_table(sample()));
  auto header = std::find_if(all.begin(), all.end(), [](const auto& l) {
    return l.rfind("  kind ", 0) == 0;
  });
  ASSERT_NE(header, all.end());
  const auto& write = *(header + 2); // read, write
  ASSERT_EQ(write.rfind("  write", 0), 0u) << write;
  EXPECT_EQ(columns(write), columns(*header)) << *header << "\n" << write;
  // "caller timeouts" ends where the write row's 1 timeout ends.
  auto end_of = [](const std::string& l, const std::string& part) {
    return l.find(part) + part.size();
  };
  EXPECT_EQ(end_of(*header, "caller timeouts"), write.find(" 1 ") + 2);
  EXPECT_EQ(end_of(*header, "success"), end_of(write, "99.00%"));
  EXPECT_TRUE(contains(*(header + 3), "  all ")) << *(header + 3);
  EXPECT_TRUE(contains(*(header + 3), "99.75%")) << *(header + 3);
}

TEST(RenderTable, EveryLine_FitsInOneHundredColumns) {
  auto r = sample();
  r.scenarios[0].notes.push_back(std::string(30, 'x') + " " +
                                 std::string(60, 'y') + " " +
                                 std::string(40, 'z'));
  for (const auto& l : lines(render_table(r)))
    EXPECT_LE(columns(l), 100u) << l;
}

TEST(RenderTable, Overall_CountsAndNamesTheFailed) {
  auto r = sample();
  EXPECT_TRUE(contains(render_table(r),
                       "\ndrill: 1 of 2 scenarios passed; failed: S2\n"));
  r.scenarios[1].passed = true;
  r.passed = true;
  EXPECT_TRUE(contains(render_table(r), "\ndrill: 2 of 2 scenarios passed\n"));
}

TEST(RenderTable, NoColours) {
  EXPECT_FALSE(contains(render_table(sample()), "\x1b"));
}

// -- render_json and validate_report_json -------------------------------------

TEST(RenderJson, Valid_NoProblems) {
  auto problems = validate_report_json(render_json(sample()));
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
}

TEST(RenderJson, Fields_UnderTheirStructNames) {
  auto j = json::parse(render_json(sample()));
  EXPECT_EQ(j["seed"], 42);
  EXPECT_EQ(j["settings"]["request_timeout"], "2s");
  const auto& s1 = j["scenarios"][0];
  EXPECT_EQ(s1["backend"]["West US"]["403"], 3);
  EXPECT_EQ(s1["failover_at_ms"], 2234);
  EXPECT_EQ(s1["timeline"][1]["backend"]["West US"]["403"], 3);
  EXPECT_EQ(s1["timeline"][1]["callers"]["timeout"], 1);
  EXPECT_EQ(s1["timeline"][1]["accepted"]["East US"], 7);
  EXPECT_EQ(s1["timeline"][2]["held"]["East US"], 12);
  EXPECT_TRUE(s1["timeline"][0]["held"].empty());
  EXPECT_EQ(s1["timeline"][2]["queued"]["East US"], 40);
  EXPECT_EQ(s1["timeline"][3]["open"]["West US"], 16);
  EXPECT_TRUE(s1["timeline"][0]["queued"].empty());
  EXPECT_EQ(s1["faults"][1]["label"], "East US recovers");
  EXPECT_EQ(s1["by_kind"]["write"]["timeouts"], 1);
  EXPECT_EQ(s1["criteria"][1]["measured"], "1.23 s");
  EXPECT_EQ(s1["notes"][0], "3 failover decisions, 0 pre-empted");
  EXPECT_EQ(s1["memory"][1]["t_ms"], 1000);
  EXPECT_EQ(s1["memory"][1]["rss_mib"], 31.0);
  EXPECT_EQ(s1["memory"][1]["heap_mib"], 12.5);
  EXPECT_EQ(s1["memory"][1]["records_mib"], 0.75);
  const auto& s2 = j["scenarios"][1];
  EXPECT_TRUE(s2["failover_ms"].is_null());
  EXPECT_TRUE(s2["failover_at_ms"].is_null());
  EXPECT_EQ(s2["passed"], false);
  EXPECT_EQ(j["passed"], false);
}

/// The problems of the sample's JSON after `edit`.
std::vector<std::string> after(const std::function<void(json&)>& edit) {
  auto j = json::parse(render_json(sample()));
  edit(j);
  return validate_report_json(j.dump());
}

using problems = std::vector<std::string>;

TEST(ValidateReportJson, MissingKey_Named) {
  EXPECT_EQ(
      after([](json& j) { j["scenarios"][1]["criteria"][0].erase("passed"); }),
      problems{"scenarios[1].criteria[0].passed: missing"});
  EXPECT_EQ(after([](json& j) { j.erase("seed"); }), problems{"seed: missing"});
  EXPECT_EQ(
      after([](json& j) { j["scenarios"][0]["faults"][1].erase("at_ms"); }),
      problems{"scenarios[0].faults[1].at_ms: missing"});
}

TEST(ValidateReportJson, MemorySeries_OptionalButCheckedWhenThere) {
  EXPECT_TRUE(
      after([](json& j) { j["scenarios"][0].erase("memory"); }).empty());
  EXPECT_EQ(
      after([](json& j) { j["scenarios"][0]["memory"][1]["heap_mib"] = "x"; }),
      problems{"scenarios[0].memory[1].heap_mib: expected a number, got "
               "string \"x\""});
}

TEST(ValidateReportJson, WrongType_Named) {
  EXPECT_EQ(after([](json& j) { j["scenarios"][0]["total"]["ops"] = "400"; }),
            problems{"scenarios[0].total.ops: expected an unsigned integer, "
                     "got string \"400\""});
  EXPECT_EQ(after([](json& j) { j["scenarios"][0]["failover_ms"] = 1.5; }),
            problems{"scenarios[0].failover_ms: expected an integer or null, "
                     "got number 1.5"});
  EXPECT_EQ(after([](json& j) {
              j["scenarios"][0]["timeline"][2]["callers"]["success"] = -1;
            }),
            problems{"scenarios[0].timeline[2].callers.success: expected an "
                     "unsigned integer, got number -1"});
  EXPECT_EQ(after([](json& j) {
              j["scenarios"][0]["timeline"][2]["held"]["East US"] = -1;
            }),
            problems{"scenarios[0].timeline[2].held.East US: expected an "
                     "unsigned integer, got number -1"});
  EXPECT_EQ(after([](json& j) {
              j["scenarios"][0]["timeline"][2]["queued"]["East US"] = "many";
            }),
            problems{"scenarios[0].timeline[2].queued.East US: expected an "
                     "unsigned integer, got string \"many\""});
  // Reports written before the connection counts had none: still valid.
  EXPECT_TRUE(after([](json& j) {
                auto& b = j["scenarios"][0]["timeline"][1];
                b.erase("accepted");
                b.erase("queued");
                b.erase("open");
              }).empty());
}

TEST(ValidateReportJson, StatusKeyNotAnInteger_Named) {
  EXPECT_EQ(
      after([](json& j) { j["scenarios"][0]["backend"]["East US"]["OK"] = 1; }),
      problems{"scenarios[0].backend.East US: status key \"OK\" is not "
               "an integer"});
}

TEST(ValidateReportJson, ScenarioPassedDespiteFailedCriterion_Caught) {
  EXPECT_EQ(after([](json& j) {
              j["scenarios"][0]["criteria"][1]["passed"] = false;
            }),
            problems{"scenarios[0].passed: true, but criteria[1] (failover "
                     "within 5 s) failed"});
}

TEST(ValidateReportJson, ScenarioFailedThoughEveryCriterionPassed_Caught) {
  EXPECT_EQ(
      after([](json& j) { j["scenarios"][1]["criteria"][0]["passed"] = true; }),
      problems{"scenarios[1].passed: false, but every criterion passed"});
}

TEST(ValidateReportJson, DrillPassedDespiteFailedScenario_Caught) {
  EXPECT_EQ(after([](json& j) { j["passed"] = true; }),
            problems{"passed: true, but scenarios[1] (S2) failed"});
}

TEST(ValidateReportJson, InconsistentSuccessPct_Caught) {
  EXPECT_EQ(after([](json& j) { j["scenarios"][1]["success_pct"] = 75.02; }),
            problems{"scenarios[1].success_pct: 75.02, but total is 150 of "
                     "200 successes (75.00)"});
  // Within 0.01 is consistent.
  EXPECT_EQ(after([](json& j) { j["scenarios"][1]["success_pct"] = 75.005; }),
            problems{});
}

TEST(ValidateReportJson, NoOperations_AnyPercentInRange) {
  auto zero = [](json& j) {
    j["scenarios"][1]["total"]["ops"] = 0;
    j["scenarios"][1]["total"]["successes"] = 0;
  };
  EXPECT_EQ(after([&](json& j) {
              zero(j);
              j["scenarios"][1]["success_pct"] = 0;
            }),
            problems{});
  EXPECT_EQ(after([&](json& j) {
              zero(j);
              j["scenarios"][1]["success_pct"] = 101;
            }),
            problems{"scenarios[1].success_pct: 101.00 outside [0, 100] (no "
                     "operations)"});
}

TEST(ValidateReportJson, NotJson_OneProblem) {
  auto p = validate_report_json("{\"regions\": [");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].rfind("(top level): not valid JSON", 0), 0u) << p[0];
  EXPECT_EQ(validate_report_json("[]"),
            problems{"(top level): expected an object, got array []"});
}

// -- render_html --------------------------------------------------------------

TEST(RenderHtml, OneSvgPerScenario) {
  auto h = render_html(sample());
  EXPECT_EQ(count(h, "<svg "), 2u);
  EXPECT_EQ(count(h, "</svg>"), 2u);
  EXPECT_EQ(count(h, "<section "), 2u);
}

TEST(RenderHtml, Standalone_NoScriptNoExternalResource) {
  auto h = render_html(sample());
  EXPECT_EQ(h.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_FALSE(contains(h, "<script"));
  EXPECT_FALSE(contains(h, "src="));
  EXPECT_FALSE(contains(h, "<link"));
  EXPECT_FALSE(contains(h, "url("));
  // The only address is the SVG namespace; links stay in the page.
  EXPECT_EQ(count(h, "http"), count(h, "xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST(RenderHtml, Text_Escaped) {
  auto r = sample();
  r.scenarios[0].title = "<script>alert('x')</script> & co";
  r.scenarios[0].faults[0].label = "\"East\" <US> hangs";
  r.settings["a<b"] = "c&d";
  auto h = render_html(r);
  EXPECT_FALSE(contains(h, "<script"));
  EXPECT_TRUE(
      contains(h, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co"));
  EXPECT_TRUE(contains(h, "&quot;East&quot; &lt;US&gt; hangs"));
  EXPECT_TRUE(contains(h, "a&lt;b = c&amp;d"));
}

TEST(RenderHtml, Chart_FaultMarkersAndFailoverLabelled) {
  auto h = render_html(sample());
  EXPECT_TRUE(contains(h, ">+1.0s East US hangs</text>"));
  EXPECT_TRUE(contains(h, ">+3.0s East US recovers</text>"));
  EXPECT_TRUE(contains(h, ">+0.5s write region -&gt; East US</text>"));
  EXPECT_TRUE(contains(h, ">first success elsewhere +1.2s</text>"));
  // Two dashed fault lines in S1, one in S2.
  EXPECT_EQ(count(h, "stroke=\"#455a64\" stroke-dasharray=\"6 4\""), 3u);
  // Only S1 failed over: its line and its legend sample.
  EXPECT_EQ(count(h, "stroke=\"#1565c0\"/>"), 2u);
}

TEST(RenderHtml, Chart_BarsStackedByStatusColour) {
  auto h = render_html(sample());
  // S1: 4 seconds of West US 200s, 2 of East US; S2: none.
  EXPECT_EQ(count(h, "fill=\"#2e7d32\"/>"), 6u + 1u); // + the legend swatch
  EXPECT_TRUE(contains(h, "fill=\"#e53935\"/>"));     // S2's 503s
  EXPECT_TRUE(contains(h, "<title>West US, +1.0s: 200×300 403×3</title>"));
  // A region without responses keeps its (empty) row.
  EXPECT_TRUE(contains(h, "no response at all"));
}

TEST(RenderHtml, Summary_OneRowPerScenario) {
  auto h = render_html(sample());
  EXPECT_TRUE(contains(h, "<a href=\"#scenario-0\">S1</a>"));
  EXPECT_TRUE(contains(h, "<a href=\"#scenario-1\">S2</a>"));
  EXPECT_TRUE(contains(h, "<td class=\"n\">99.75%</td>"));
  EXPECT_TRUE(contains(h, "<td class=\"n\">3.1 / 45.6 ms</td>"));
  EXPECT_EQ(count(h, "<span class=\"v fail\">FAIL</span>"),
            1u /* page */ + 2u /* S2 summary, heading */ + 1u /* criterion */);
}

} // namespace
