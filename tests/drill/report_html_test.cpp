#include "tests/drill/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

// The HTML report in a real browser: Debian's chromium takes a screenshot
// of a realistic two-scenario report, and the test finds the charts in it by
// the exact colours report_html.cpp draws them with (crisp edges, sRGB).
//
// chromium is installed with apt-get when missing and we are root; otherwise
// the test is skipped, saying why. GEOROUTE_DRILL_SCREENSHOT=<file.png>
// keeps a copy of the screenshot.

namespace {

namespace fs = std::filesystem;
using namespace georoute::drill;

// The colours report_html.cpp uses; RenderHtml_Colours below ties them to
// the page's markup, so a change there fails with a clear message.
constexpr uint32_t status_200 = 0x2e7d32;
constexpr uint32_t fault_line = 0x455a64;
constexpr uint32_t white = 0xffffff;

constexpr int shot_width = 1280;

// -- a realistic report -------------------------------------------------------

/// A deterministic jitter in [-1, 1] for (a, b).
double jitter(int a, int b) {
  return std::sin(a * 12.9898 + b * 78.233) * 0.5 +
         std::sin(a * 3.7 + b * 1.3) * 0.5;
}

uint64_t around(double v, int a, int b) {
  return static_cast<uint64_t>(
      std::max(0.0, std::round(v * (1 + 0.08 * jitter(a, b)))));
}

/// Adds the scenario's totals from its timeline and checks the verdict.
void finish(scenario_report& s) {
  for (const auto& b : s.timeline) {
    for (const auto& [region, statuses] : b.backend)
      for (const auto& [status, n] : statuses)
        s.backend[region][status] += n;
    auto get = [&](const char* k) {
      auto i = b.callers.find(k);
      return i == b.callers.end() ? 0 : i->second;
    };
    s.total.successes += get("success");
    s.total.failures += get("failure");
    s.total.timeouts += get("timeout");
  }
  s.total.ops = s.total.successes + s.total.failures + s.total.timeouts;
  auto share = [&](uint64_t n, int pct) { return n * pct / 100; };
  s.by_kind["read"] = {share(s.total.ops, 70), share(s.total.successes, 70),
                       share(s.total.failures, 70),
                       share(s.total.timeouts, 70)};
  s.by_kind["write"] = {s.total.ops - s.by_kind["read"].ops,
                        s.total.successes - s.by_kind["read"].successes,
                        s.total.failures - s.by_kind["read"].failures,
                        s.total.timeouts - s.by_kind["read"].timeouts};
  s.success_pct = 100.0 * s.total.successes / s.total.ops;
  s.passed = true;
  for (const auto& c : s.criteria)
    s.passed = s.passed && c.passed;
}

scenario_report secondary_hangs() {
  scenario_report s;
  s.id = "S1";
  s.title = "multi-write, a secondary region hangs";
  s.description = "East US accepts connections but never answers from +15 s "
                  "to +40 s. Reads and writes must move to the other regions "
                  "without a user-visible failure.";
  s.duration_ms = 60000;
  s.faults = {{15000, "East US hangs", "East US"},
              {40000, "East US recovers", "East US"}};
  s.failover_ms = 900;
  s.failover_at_ms = 15900;
  for (int t = 0; t < 60; ++t) {
    timeline_bucket b;
    b.t_ms = t * 1000;
    bool hung = t >= 15 && t < 40;
    double share = hung ? 200 : 133;
    b.backend["West US"] = {{200, around(share, t, 1)},
                            {201, around(25, t, 2)},
                            {404, around(3, t, 3)}};
    b.backend["North Europe"] = {{200, around(share, t, 4)},
                                 {201, around(18, t, 5)}};
    if (t >= 16 && t < 19) b.backend["North Europe"][429] = around(30, t, 6);
    if (!hung) {
      b.backend["East US"] = {{200, around(133, t, 7)},
                              {201, around(22, t, 8)}};
      if (t == 40 || t == 41) b.backend["East US"][503] = around(25, t, 9);
    }
    b.backend["(global)"] = {{200, t == 15 || t == 16 ? 6u : 1u}};
    b.callers["success"] = around(395, t, 10);
    b.callers["timeout"] = t == 15 ? 14 : t == 16 ? 3 : 0;
    s.timeline.push_back(b);
  }
  s.p50_ms = 2.8;
  s.p99_ms = 1480;
  s.account_refreshes = 74;
  s.served_by = {{"West US", 10400}, {"North Europe", 9800}, {"East US", 3350}};
  s.criteria = {
      {"user-visible failures = 0", "0", true},
      {"first success elsewhere within 2 s of the hang", "0.90 s", true},
      {"caller timeouts only in the hang's first 2 s",
       "17, all "
       "before +17 s",
       true}};
  s.notes = {
      "3 failover decisions, 0 pre-empted by a caller's timeout",
      "East US marked unavailable at +15.9 s, available again at +41.2 s"};
  finish(s);
  return s;
}

scenario_report write_region_lost() {
  scenario_report s;
  s.id = "S2";
  s.title = "single-write, the write region <West US> is lost";
  s.description = "West US refuses connections from +10 s on; the account "
                  "moves its write region to East US at +12 s.";
  s.duration_ms = 45000;
  s.faults = {{10000, "West US refuses connections", "West US"},
              {12000, "write region -> East US", ""}};
  s.failover_ms = 4200;
  s.failover_at_ms = 14200;
  for (int t = 0; t < 45; ++t) {
    timeline_bucket b;
    b.t_ms = t * 1000;
    bool lost = t >= 10;
    if (!lost)
      b.backend["West US"] = {{200, around(200, t, 1)},
                              {201, around(60, t, 2)}};
    b.backend["East US"] = {{200, around(lost ? 250 : 120, t, 3)}};
    if (t >= 10 && t < 14)
      b.backend["East US"][403] = around(55, t, 4);
    else if (t >= 14)
      b.backend["East US"][201] = around(60, t, 5);
    b.backend["North Europe"] = {{200, around(lost ? 95 : 80, t, 6)}};
    if (t == 14) b.backend["North Europe"][410] = 12;
    b.backend["(global)"] = {{200, t >= 10 && t < 15 ? 4u : 1u}};
    b.callers["success"] = around(t >= 10 && t < 14 ? 330 : 395, t, 7);
    b.callers["failure"] = t >= 10 && t < 14 ? around(9, t, 8) : 0;
    s.timeline.push_back(b);
  }
  s.p50_ms = 3.4;
  s.p99_ms = 2210;
  s.account_refreshes = 51;
  s.served_by = {{"East US", 12500}, {"North Europe", 3800}, {"West US", 2600}};
  s.criteria = {
      {"user-visible failures = 0", "36", false},
      {"writes succeed in East US within 5 s of the move", "2.2 s", true}};
  s.notes = {"writes failed with 403/3 (write forbidden) until the refresh"};
  finish(s);
  s.criteria[0].measured = std::to_string(s.total.failures);
  return s;
}

drill_report realistic() {
  drill_report r;
  r.regions = {"West US", "East US", "North Europe"};
  r.callers = 32;
  r.rate = 400;
  r.duration_ms = 105000;
  r.seed = 20240501;
  r.started_utc = "2024-05-01T10:00:00Z";
  r.settings = {{"account_refresh_interval", "1s"},
                {"caller_timeout", "2s"},
                {"connect_timeout", "500ms"},
                {"preferred_regions", "West US, East US, North Europe"}};
  r.scenarios = {secondary_hangs(), write_region_lost()};
  r.passed = r.scenarios[0].passed && r.scenarios[1].passed;
  return r;
}

// -- PNG ----------------------------------------------------------------------

struct image {
  uint32_t width = 0;
  uint32_t height = 0;
  std::vector<uint32_t> pixels; ///< 0xRRGGBB, row by row
};

uint32_t be32(const std::string& s, size_t at) {
  auto b = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<uint8_t>(s[at + i]));
  };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

int paeth(int a, int b, int c) {
  int p = a + b - c;
  int pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/// Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what chromium writes);
/// on failure returns an empty image and says why.
image decode_png(const std::string& file, std::string& why) {
  if (file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) {
    why = "no PNG signature";
    return {};
  }
  image img;
  int channels = 0;
  std::string idat;
  bool end = false;
  for (size_t at = 8; !end;) {
    if (at + 12 > file.size()) {
      why = "truncated at byte " + std::to_string(at);
      return {};
    }
    auto len = be32(file, at);
    auto type = file.substr(at + 4, 4);
    if (at + 12 + len > file.size()) {
      why = type + " chunk truncated";
      return {};
    }
    auto crc =
        crc32(0, reinterpret_cast<const Bytef*>(file.data() + at + 4), len + 4);
    if (crc != be32(file, at + 8 + len)) {
      why = type + " chunk: bad CRC";
      return {};
    }
    auto data = file.substr(at + 8, len);
    if (type == "IHDR") {
      img.width = be32(data, 0);
      img.height = be32(data, 4);
      auto depth = data[8], colour = data[9], interlace = data[12];
      if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0) {
        why = "unsupported PNG: depth " + std::to_string(depth) + ", colour " +
              std::to_string(colour) + ", interlace " +
              std::to_string(interlace);
        return {};
      }
      channels = colour == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      idat += data;
    } else if (type == "IEND") {
      end = true;
    }
    at += 12 + len;
  }
  if (channels == 0) {
    why = "no IHDR";
    return {};
  }
  size_t stride = img.width * channels;
  std::vector<uint8_t> raw(img.height * (stride + 1));
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len,
                 reinterpret_cast<const Bytef*>(idat.data()),
                 idat.size()) != Z_OK ||
      raw_len != raw.size()) {
    why = "IDAT does not inflate to " + std::to_string(raw.size()) + " bytes";
    return {};
  }
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  img.pixels.reserve(size_t{img.width} * img.height);
  for (uint32_t y = 0; y < img.height; ++y) {
    const uint8_t* line = raw.data() + y * (stride + 1);
    int filter = line[0];
    for (size_t i = 0; i < stride; ++i) {
      int a = i >= size_t(channels) ? cur[i - channels] : 0;
      int b = prev[i];
      int c = i >= size_t(channels) ? prev[i - channels] : 0;
      int x = line[1 + i];
      switch (filter) {
      case 0:
        break;
      case 1:
        x += a;
        break;
      case 2:
        x += b;
        break;
      case 3:
        x += (a + b) / 2;
        break;
      case 4:
        x += paeth(a, b, c);
        break;
      default:
        why = "row " + std::to_string(y) + ": filter " + std::to_string(filter);
        return {};
      }
      cur[i] = static_cast<uint8_t>(x);
    }
    for (size_t i = 0; i < stride; i += channels)
      img.pixels.push_back(uint32_t{cur[i]} << 16 | uint32_t{cur[i + 1]} << 8 |
                           cur[i + 2]);
    std::swap(prev, cur);
  }
  return img;
}

size_t count_colour(const image& img, uint32_t rgb, uint32_t from_row = 0) {
  return static_cast<size_t>(
      std::count(img.pixels.begin() + size_t{from_row} * img.width,
                 img.pixels.end(), rgb));
}

// -- the browser --------------------------------------------------------------

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// Runs `command` through the shell; its output goes to `log`.
int run(const std::string& command, const fs::path& log) {
  int status = std::system((command + " >" + quote(log) + " 2>&1").c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string tail(const fs::path& file, size_t n = 600) {
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  return text.size() <= n ? text : "..." + text.substr(text.size() - n);
}

/// Installs Debian's chromium when missing, as root; else says why not.
bool ensure_chromium(const fs::path& dir, std::string& why) {
  if (fs::exists("/usr/bin/chromium")) return true;
  if (geteuid() != 0) {
    why = "/usr/bin/chromium is missing and only root can apt-get install it";
    return false;
  }
  const std::string apt = "DEBIAN_FRONTEND=noninteractive apt-get -q "
                          "-o DPkg::Lock::Timeout=300 ";
  auto log = dir / "apt.log";
  if (run(apt + "install -y --no-install-recommends chromium", log) == 0)
    return true;
  // Stale or missing package lists: refresh them once and retry.
  if (run(apt + "update", log) == 0 &&
      run(apt + "install -y --no-install-recommends chromium", log) == 0)
    return true;
  why = "apt-get install chromium failed: " + tail(log);
  return false;
}

/// Screenshots `html` into `png` at width x height; false and why on failure.
bool screenshot(const fs::path& html, const fs::path& png, int width,
                int height, const fs::path& dir, std::string& why) {
  auto log = dir / "chromium.log";
  std::ostringstream cmd;
  cmd << "timeout 120 chromium --headless --no-sandbox --disable-gpu "
         "--hide-scrollbars --disable-dev-shm-usage --no-first-run "
         "--force-color-profile=srgb --force-device-scale-factor=1 "
      << "--user-data-dir=" << quote(dir / "profile")
      << " --window-size=" << width << "," << height
      << " --screenshot=" << quote(png) << " "
      << quote("file://" + html.string());
  int rc = run(cmd.str(), log);
  if (rc != 0 || !fs::exists(png)) {
    why = "chromium exited with " + std::to_string(rc) +
          (rc == 124 ? " (timed out after 120 s)" : "") + ": " + tail(log);
    return false;
  }
  return true;
}

/// A generous estimate of the page's height at 1280 px: the charts' own
/// heights plus the text around them.
int page_height(const drill_report& r, const std::string& html) {
  // Title, parameters, summary.
  double h = 500 + 20.0 * r.settings.size() + 30.0 * r.scenarios.size();
  for (auto at = html.find("<svg "); at != std::string::npos;
       at = html.find("<svg ", at + 1))
    h += std::stod(html.substr(html.find(" height=\"", at) + 9));
  for (const auto& s : r.scenarios)
    h += 350 + 30.0 * (s.criteria.size() + s.notes.size() + s.by_kind.size());
  return static_cast<int>(h);
}

class temp_dir {
public:
  temp_dir() {
    auto pattern =
        (fs::temp_directory_path() / "georoute-drill-html-XXXXXX").string();
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~temp_dir() {
    if (!path_.empty() && keep_ == false) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  const fs::path& path() const { return path_; }
  void keep() { keep_ = true; }

private:
  fs::path path_;
  bool keep_ = false;
};

// -- the tests ----------------------------------------------------------------

TEST(RenderHtml, Colours_TheScreenshotTestLooksFor) {
  auto h = render_html(realistic());
  EXPECT_NE(h.find("fill=\"#2e7d32\""), std::string::npos) << "200 bars";
  EXPECT_NE(h.find("stroke=\"#455a64\" stroke-dasharray"), std::string::npos)
      << "fault lines";
  EXPECT_NE(h.find("shape-rendering=\"crispEdges\""), std::string::npos);
}

// The hedging row appears only when a scenario hedged (or its breaker
// moved), with its own legend.
TEST(RenderHtml, HedgeRow_OnlyWhenSomethingWasHedged) {
  const std::string title =
      "hedged operations and breaker transitions per second";
  auto plain = render_html(realistic());
  EXPECT_EQ(plain.find(title), std::string::npos);
  auto r = realistic();
  r.scenarios[0].timeline[16].callers["hedge_won"] = 12;
  r.scenarios[0].timeline[17].callers["hedged"] = 2;
  r.scenarios[0].timeline[18].callers["breaker_opened"] = 1;
  auto h = render_html(r);
  EXPECT_NE(h.find(title), std::string::npos);
  EXPECT_NE(h.find("fill=\"#00897b\""), std::string::npos) << "hedge won";
  EXPECT_NE(h.find("breaker opened"), std::string::npos) << "legend";
}

TEST(RenderHtmlInChromium, Screenshot_ShowsTheCharts) {
  temp_dir dir;
  ASSERT_FALSE(dir.path().empty()) << "mkdtemp failed";
  std::string why;
  if (!ensure_chromium(dir.path(), why)) GTEST_SKIP() << why;

  auto report = realistic();
  auto page = render_html(report);
  auto html = dir.path() / "report.html";
  std::ofstream(html) << page;
  auto png = dir.path() / "report.png";
  // Tall enough for the whole page: the bottom rows must come out blank.
  const int height = page_height(report, page);
  if (!screenshot(html, png, shot_width, height, dir.path(), why)) {
    dir.keep();
    FAIL() << why << "\n(kept " << dir.path() << ")";
  }
  if (const char* copy = std::getenv("GEOROUTE_DRILL_SCREENSHOT"))
    fs::copy_file(png, copy, fs::copy_options::overwrite_existing);

  std::ifstream in(png, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto img = decode_png(bytes, why);
  ASSERT_FALSE(img.pixels.empty()) << png << ": " << why;
  EXPECT_EQ(img.width, uint32_t{shot_width});
  EXPECT_EQ(img.height, uint32_t(height));

  // 200 bars: three regions, most of 105 seconds, some 40 px tall each.
  EXPECT_GT(count_colour(img, status_200), 60000u);
  // Fault lines: 2 px wide, 60 % dashes, some 480 px long: ~570 px each,
  // four of them (the legend's sample is 8 px).
  size_t faults =
      report.scenarios[0].faults.size() + report.scenarios[1].faults.size();
  EXPECT_GT(count_colour(img, fault_line), faults * 400);
  // The page ended above the bottom of the screenshot.
  EXPECT_EQ(count_colour(img, white, img.height - 24), size_t{24} * img.width)
      << "the page is taller than " << height << " px";
  if (HasFailure()) {
    dir.keep();
    ADD_FAILURE() << "kept " << dir.path();
  }
}

TEST(DecodePng, Corrupt_SaysWhy) {
  std::string why;
  EXPECT_TRUE(decode_png("GIF89a", why).pixels.empty());
  EXPECT_EQ(why, "no PNG signature");
  EXPECT_TRUE(decode_png(std::string("\x89PNG\r\n\x1a\n", 8) + "xx", why)
                  .pixels.empty());
  EXPECT_EQ(why, "truncated at byte 8");
}

} // namespace
