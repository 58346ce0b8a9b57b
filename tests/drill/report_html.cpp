#include "tests/drill/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

// The HTML page of a drill report: no script, no external resource, one
// inline SVG per scenario. The chart is a column of small multiples sharing
// the time axis: one row per region (responses the emulator sent each second,
// stacked by status), then two rows for the callers (operations that ended
// each second: the successes, then the failures and timeouts on their own
// scale, so that a handful among hundreds still shows). Fault markers and the
// failover instant are vertical lines across every row, labelled in a band
// above them.
//
// The colours are exact (shape-rendering="crispEdges"): the browser test
// finds the 200 bars and the fault lines in a screenshot by their colour.

namespace georoute::drill {

namespace {

// -- text ---------------------------------------------------------------------

/// Text for HTML content and attribute values (also inside inline SVG).
/// C0 controls other than tab and newline are not allowed in either.
std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t')
        out += c;
      else
        out += "\xEF\xBF\xBD"; // U+FFFD
    }
  }
  return out;
}

std::string fixed(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

/// An SVG coordinate: one decimal is finer than a pixel.
std::string num(double v) {
  return fixed(v, 1);
}

/// "+5.0s": an instant since the scenario started.
std::string at_text(int64_t ms) {
  return (ms < 0 ? "-" : "+") + fixed(std::abs(ms) / 1000.0, 1) + "s";
}

std::string seconds_text(int64_t ms) {
  return fixed(ms / 1000.0, ms < 10000 ? 2 : 1) + " s";
}

std::string pct_text(const scenario_report& s) {
  return s.total.ops == 0 ? "-" : fixed(s.success_pct, 2) + "%";
}

std::string verdict(bool passed) {
  return passed ? "<span class=\"v pass\">PASS</span>"
                : "<span class=\"v fail\">FAIL</span>";
}

// -- colours ------------------------------------------------------------------

/// 2xx greens, 3xx grey-blue, 4xx oranges, 410 brown, 429 purple, 5xx reds.
const char* status_colour(int status) {
  switch (status) {
  case 200:
    return "#2e7d32";
  case 201:
    return "#43a047";
  case 204:
    return "#66bb6a";
  case 403:
    return "#ef6c00";
  case 404:
    return "#fb8c00";
  case 409:
    return "#ffa726";
  case 412:
    return "#ffb74d";
  case 410:
    return "#795548";
  case 429:
    return "#7b1fa2";
  case 500:
    return "#b71c1c";
  case 503:
    return "#e53935";
  default:
    break;
  }
  if (status >= 200 && status < 300) return "#a5d6a7";
  if (status >= 300 && status < 400) return "#90a4ae";
  if (status >= 400 && status < 500) return "#ffcc80";
  if (status >= 500 && status < 600) return "#ef9a9a";
  return "#9e9e9e";
}

struct outcome {
  const char* key;
  const char* label;
  const char* colour;
};

/// The callers' outcomes, stacked bottom-up in this order.
const outcome outcomes[] = {{"success", "success", "#64b5f6"},
                            {"failure", "user-visible failure", "#d32f2f"},
                            {"timeout", "caller timeout", "#616161"}};

/// Hedged operations, stacked the same way (their own row, shown only when
/// a scenario hedged at all); engine events of the breaker likewise.
const outcome hedge_outcomes[] = {
    {"hedge_won", "hedged, a hedge won", "#00897b"},
    {"hedged", "hedged, the primary won", "#80cbc4"},
    {"breaker_opened", "breaker opened", "#ef6c00"},
    {"breaker_closed", "breaker closed after a probe", "#6a1b9a"}};

constexpr const char* fault_colour = "#455a64";
constexpr const char* failover_colour = "#1565c0";
constexpr const char* grid_colour = "#e4e4e4";

// -- chart geometry -----------------------------------------------------------

constexpr double chart_w = 1200;
constexpr double left = 56; // y tick labels
constexpr double right = 16;
constexpr double plot_w = chart_w - left - right;
constexpr double row_h = 80;   // one region
constexpr double row_gap = 24; // the row's title above it
constexpr double callers_h = 56;
constexpr double level_h = 15; // one line of marker labels
// Text widths are estimated (no script measures them): 11px DejaVu Sans,
// generous averages per character, bold and regular.
constexpr double bold_w = 7.0;
constexpr double text_w = 5.3;

/// A step of 1, 2 or 5 times a power of ten, at least 1, that divides
/// [0, max] into at most about four intervals.
double nice_step(double max) {
  double raw = std::max(max / 4, 1.0);
  double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

double x_step(int64_t seconds) {
  for (double s : {1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1800, 3600})
    if (seconds / s <= 15) return s;
  return 3600 * std::ceil(seconds / 3600.0 / 15);
}

struct marker {
  int64_t at_ms;
  std::string label;
  const char* colour;
  bool dashed;
  // the label's placement, by build_markers
  int level = 0;
  bool anchor_end = false;
};

/// One part of a stacked bar: a status or an outcome.
struct segment {
  std::string key;
  uint64_t n;
  const char* colour;
};

/// One second of one row.
struct bar {
  int64_t t_ms;
  std::vector<segment> stack; ///< bottom-up
};

/// One row of the chart.
struct row {
  std::string title;
  std::string subtitle;
  std::vector<bar> bars;
  double y_max = 1;
  double height = 0;
  const char* empty_text = "";
};

class chart {
public:
  chart(const drill_report& r, const scenario_report& s) : s_(s) {
    int64_t end = s.duration_ms;
    for (const auto& b : s.timeline)
      end = std::max(end, b.t_ms + 1000);
    for (const auto& f : s.faults)
      end = std::max(end, f.at_ms);
    if (s.failover_at_ms) end = std::max(end, *s.failover_at_ms);
    seconds_ = std::max<int64_t>(1, (end + 999) / 1000);
    build_rows(r);
    build_markers();
  }

  std::string svg() const;

private:
  double x(double ms) const { return left + ms / 1000.0 / seconds_ * plot_w; }
  /// A marker's x: one before the start or after the end sits on the edge.
  double marker_x(int64_t ms) const {
    return std::round(std::clamp(x(ms), left, left + plot_w));
  }

  void build_rows(const drill_report& r);
  void build_markers();
  // Whether the hedging row is drawn: some second has a hedge or a breaker
  // transition.
  bool has_hedges() const {
    for (const auto& b : s_.timeline)
      for (const auto& o : hedge_outcomes) {
        auto i = b.callers.find(o.key);
        if (i != b.callers.end() && i->second > 0) return true;
      }
    return false;
  }
  void draw_row(std::ostringstream& out, std::ostringstream& titles,
                const row& rw, double top) const;
  double draw_legend(std::ostringstream& out, double top) const;

  const scenario_report& s_;
  int64_t seconds_ = 1;
  std::vector<row> rows_;
  std::vector<marker> markers_;
  int levels_ = 0;
  std::vector<int> statuses_; // every status of the scenario, ascending
};

void chart::build_rows(const drill_report& r) {
  // The drill's regions in their order (even one that never answered: its
  // empty row is the point), then any other (the account endpoint last).
  std::vector<std::string> names = r.regions;
  auto add = [&](const std::string& n) {
    if (std::find(names.begin(), names.end(), n) == names.end())
      names.push_back(n);
  };
  std::vector<std::string> extra;
  for (const auto& b : s_.timeline)
    for (const auto& [region, _] : b.backend)
      extra.push_back(region);
  for (const auto& [region, _] : s_.backend)
    extra.push_back(region);
  std::sort(extra.begin(), extra.end(), [](const auto& a, const auto& b) {
    return std::make_pair(a == "(global)", a) <
           std::make_pair(b == "(global)", b);
  });
  for (const auto& n : extra)
    add(n);

  double shared_max = 0;
  for (const auto& name : names) {
    row rw;
    rw.title = name;
    rw.subtitle = name == "(global)" ? "account endpoint, responses per second"
                                     : "responses per second";
    rw.height = row_h;
    rw.empty_text = "no response at all";
    double max = 0;
    for (const auto& b : s_.timeline) {
      auto i = b.backend.find(name);
      if (i == b.backend.end()) continue;
      bar br{b.t_ms, {}};
      uint64_t sum = 0;
      for (const auto& [status, n] : i->second) {
        if (n == 0) continue;
        br.stack.push_back({std::to_string(status), n, status_colour(status)});
        statuses_.push_back(status);
        sum += n;
      }
      max = std::max(max, static_cast<double>(sum));
      rw.bars.push_back(std::move(br));
    }
    // Regions share one scale so that traffic moving between them reads
    // true; the account endpoint, a trickle, gets its own.
    if (name == "(global)")
      rw.y_max = max;
    else
      shared_max = std::max(shared_max, max);
    rows_.push_back(std::move(rw));
  }
  for (auto& rw : rows_) {
    double max = rw.title == "(global)" ? rw.y_max : shared_max;
    double step = nice_step(max);
    rw.y_max = std::max(step, std::ceil(max / step) * step);
  }
  std::sort(statuses_.begin(), statuses_.end());
  statuses_.erase(std::unique(statuses_.begin(), statuses_.end()),
                  statuses_.end());

  auto callers_row = [&](const char* subtitle, const char* empty_text,
                         auto keep, const auto& kinds) {
    row rw;
    rw.title = "callers";
    rw.subtitle = subtitle;
    rw.height = callers_h;
    rw.empty_text = empty_text;
    double max = 0;
    for (const auto& b : s_.timeline) {
      bar br{b.t_ms, {}};
      uint64_t sum = 0;
      for (const auto& o : kinds) {
        auto i = b.callers.find(o.key);
        if (keep(o) && i != b.callers.end() && i->second > 0) {
          br.stack.push_back({o.key, i->second, o.colour});
          sum += i->second;
        }
      }
      max = std::max(max, static_cast<double>(sum));
      if (!br.stack.empty()) rw.bars.push_back(std::move(br));
    }
    double step = nice_step(max);
    rw.y_max = std::max(step, std::ceil(max / step) * step);
    rows_.push_back(std::move(rw));
  };
  auto success = [](const outcome& o) { return o.key == outcomes[0].key; };
  callers_row("successes per second", "no success at all", success, outcomes);
  callers_row(
      "user-visible failures and caller timeouts per second",
      "no failure, no timeout", [&](const outcome& o) { return !success(o); },
      outcomes);
  if (has_hedges())
    callers_row(
        "hedged operations and breaker transitions per second", "none",
        [](const outcome&) { return true; }, hedge_outcomes);
}

void chart::build_markers() {
  for (const auto& f : s_.faults)
    markers_.push_back(
        {f.at_ms, at_text(f.at_ms) + " " + f.label, fault_colour, true});
  if (s_.failover_at_ms) {
    std::string label = "first success elsewhere";
    if (s_.failover_ms)
      label += " +" + fixed(*s_.failover_ms / 1000.0, 1) + "s";
    markers_.push_back({*s_.failover_at_ms, label, failover_colour, false});
  }
  std::stable_sort(
      markers_.begin(), markers_.end(),
      [](const marker& a, const marker& b) { return a.at_ms < b.at_ms; });
  // Greedy: each label on the first line where it does not touch the one
  // before it; near the right edge it extends to the left of its line.
  std::vector<double> line_end;
  for (auto& m : markers_) {
    double mx = marker_x(m.at_ms);
    double w = m.label.size() * bold_w;
    m.anchor_end = mx + 4 + w > chart_w - right;
    double from = m.anchor_end ? mx - 4 - w : mx;
    double to = m.anchor_end ? mx : mx + 4 + w;
    size_t level = 0;
    while (level < line_end.size() && line_end[level] + 8 > from)
      ++level;
    if (level == line_end.size()) line_end.push_back(to);
    line_end[level] = to;
    m.level = static_cast<int>(level);
  }
  levels_ = static_cast<int>(line_end.size());
}

/// The row's title goes to `titles`, drawn over the marker lines.
void chart::draw_row(std::ostringstream& out, std::ostringstream& titles,
                     const row& rw, double top) const {
  double h = rw.height;
  double bottom = top + h;
  titles << "<text class=\"rt\" x=\"" << num(left) << "\" y=\"" << num(top - 7)
         << "\">" << esc(rw.title) << " <tspan class=\"rs\">"
         << esc(rw.subtitle) << "</tspan></text>\n";
  double step = nice_step(rw.y_max);
  for (double v = 0; v <= rw.y_max + 1e-9; v += step) {
    double y = std::round(bottom - v / rw.y_max * h) + 0.5;
    out << "<line x1=\"" << num(left) << "\" x2=\"" << num(chart_w - right)
        << "\" y1=\"" << num(y) << "\" y2=\"" << num(y) << "\" stroke=\""
        << (v == 0 ? "#9e9e9e" : grid_colour) << "\"/>"
        << "<text class=\"yt\" x=\"" << num(left - 6) << "\" y=\"" << num(y + 4)
        << "\">" << fixed(v, std::floor(v) == v ? 0 : 1) << "</text>\n";
  }
  if (rw.bars.empty())
    out << "<text class=\"none\" x=\"" << num(left + plot_w / 2) << "\" y=\""
        << num(top + h / 2 + 4) << "\">" << rw.empty_text << "</text>\n";
  double slot = plot_w / seconds_;
  double gap = slot >= 4 ? std::max(1.0, std::round(slot * 0.15)) : 0;
  for (const auto& b : rw.bars) {
    double x0 = std::round(x(b.t_ms) + gap / 2);
    double x1 = std::max(std::round(x(b.t_ms + 1000) - gap / 2), x0 + 1);
    std::string tip = rw.title + ", " + at_text(b.t_ms) + ":";
    for (const auto& seg : b.stack)
      tip += " " + seg.key + "×" + std::to_string(seg.n);
    out << "<g><title>" << esc(tip) << "</title>";
    double acc = 0;
    double y0 = bottom;
    for (const auto& seg : b.stack) {
      acc += seg.n;
      // At least 2 px: three 503s among 300 200s must still show.
      double y1 = std::max(
          top, std::min(y0 - 2, std::round(bottom - acc / rw.y_max * h)));
      if (y1 >= y0) break; // the row is full
      out << "<rect x=\"" << num(x0) << "\" y=\"" << num(y1) << "\" width=\""
          << num(x1 - x0) << "\" height=\"" << num(y0 - y1) << "\" fill=\""
          << seg.colour << "\"/>";
      y0 = y1;
    }
    out << "</g>\n";
  }
}

/// Returns the legend's bottom (it wraps when it is wider than the chart).
double chart::draw_legend(std::ostringstream& out, double top) const {
  double lx = left;
  double ly = top;
  auto item = [&](const std::string& label, const std::string& swatch) {
    double w = 16 + label.size() * text_w + 18;
    if (lx + w > chart_w - right) {
      lx = left;
      ly += 18;
    }
    out << "<g transform=\"translate(" << num(lx) << "," << num(ly) << ")\">"
        << swatch << "<text class=\"lg\" x=\"16\" y=\"9\">" << esc(label)
        << "</text></g>\n";
    lx += w;
  };
  auto box = [](const char* colour) {
    return std::string("<rect width=\"11\" height=\"11\" fill=\"") + colour +
           "\"/>";
  };
  for (int status : statuses_)
    item(std::to_string(status), box(status_colour(status)));
  for (const auto& o : outcomes)
    item(std::string("callers: ") + o.label, box(o.colour));
  if (has_hedges())
    for (const auto& o : hedge_outcomes)
      item(o.label, box(o.colour));
  auto line = [](const char* colour, bool dashed) {
    return std::string("<line x1=\"5\" x2=\"5\" y1=\"-1\" y2=\"12\" "
                       "stroke-width=\"2\" stroke=\"") +
           colour + "\"" + (dashed ? " stroke-dasharray=\"4 3\"" : "") + "/>";
  };
  if (!s_.faults.empty()) item("fault", line(fault_colour, true));
  if (s_.failover_at_ms) item("failover instant", line(failover_colour, false));
  return ly + 11;
}

std::string chart::svg() const {
  std::ostringstream body;
  std::ostringstream titles; // over the marker lines, with a white halo
  double band_top = 4;
  double top = band_top + levels_ * level_h + row_gap;
  for (const auto& rw : rows_) {
    draw_row(body, titles, rw, top);
    top += rw.height + row_gap;
  }
  double rows_bottom = top - row_gap;

  // The time axis: vertical grid through every row, labels under the last.
  double step = x_step(seconds_);
  for (double t = 0; t <= seconds_ + 1e-9; t += step) {
    double gx = std::round(x(t * 1000)) + 0.5;
    body << "<line x1=\"" << num(gx) << "\" x2=\"" << num(gx) << "\" y1=\""
         << num(rows_bottom) << "\" y2=\"" << num(rows_bottom + 5)
         << "\" stroke=\"#9e9e9e\"/><text class=\"xt\" x=\"" << num(gx)
         << "\" y=\"" << num(rows_bottom + 17) << "\">" << fixed(t, 0)
         << "</text>\n";
  }
  body << "<text class=\"xl\" x=\"" << num(left + plot_w / 2) << "\" y=\""
       << num(rows_bottom + 33) << "\">seconds since the scenario started"
       << "</text>\n";

  for (const auto& m : markers_) {
    double mx = marker_x(m.at_ms);
    double label_y = band_top + (m.level + 1) * level_h - 3;
    body << "<line x1=\"" << num(mx) << "\" x2=\"" << num(mx) << "\" y1=\""
         << num(label_y - 11) << "\" y2=\"" << num(rows_bottom)
         << "\" stroke-width=\"2\" stroke=\"" << m.colour << "\""
         << (m.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n";
    titles << "<text class=\"mk\" x=\"" << num(m.anchor_end ? mx - 4 : mx + 4)
           << "\" y=\"" << num(label_y) << "\" fill=\"" << m.colour << "\""
           << (m.anchor_end ? " text-anchor=\"end\"" : "") << ">"
           << esc(m.label) << "</text>\n";
  }
  body << titles.str();
  double height = draw_legend(body, rows_bottom + 46) + 8;

  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(chart_w)
      << "\" height=\"" << num(height) << "\" viewBox=\"0 0 " << num(chart_w)
      << " " << num(height) << "\" shape-rendering=\"crispEdges\" role=\"img\""
      << " aria-label=\"" << esc(s_.id + " timeline") << "\">\n"
      << body.str() << "</svg>\n";
  return out.str();
}

// -- the page -----------------------------------------------------------------

constexpr const char* style = R"(
body { font: 14px/1.45 "DejaVu Sans", "Liberation Sans", Arial, sans-serif;
       color: #222; margin: 24px auto; max-width: 1216px; padding: 0 8px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 19px; margin: 0 0 6px; }
section { border-top: 1px solid #ccc; margin-top: 28px; padding-top: 16px; }
table { border-collapse: collapse; }
th, td { padding: 3px 10px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
table.summary td, table.summary th, table.kinds td, table.kinds th {
  border-bottom: 1px solid #e6e6e6; }
table.params th { background: none; padding-left: 0; color: #555; }
.settings { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
.v { display: inline-block; padding: 0 7px; border-radius: 3px;
     color: #fff; font-weight: 700; font-size: 13px; }
.v.pass { background: #137333; }
.v.fail { background: #c5221f; }
.lead { color: #444; margin: 0 0 12px; }
.desc { max-width: 1000px; color: #333; }
ul.criteria { list-style: none; padding: 0; margin: 8px 0 14px; }
ul.criteria li { margin: 2px 0; }
ul.notes { color: #444; }
svg { display: block; margin: 8px 0; }
svg text { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; }
svg .rt { font-size: 12px; font-weight: 700; fill: #222; }
svg .rs { font-weight: 400; fill: #666; }
svg .yt { font-size: 10px; fill: #555; text-anchor: end; }
svg .xt { font-size: 10px; fill: #555; text-anchor: middle; }
svg .xl { font-size: 11px; fill: #444; text-anchor: middle; }
svg .mk { font-size: 11px; font-weight: 700; }
svg .rt, svg .mk { paint-order: stroke; stroke: #fff; stroke-width: 4px;
                   stroke-linejoin: round; }
svg .lg { font-size: 11px; fill: #333; }
svg .none { font-size: 11px; fill: #999; text-anchor: middle; }
)";

void params(std::ostringstream& out, const drill_report& r) {
  std::string regions;
  for (const auto& region : r.regions)
    regions += (regions.empty() ? "" : ", ") + region;
  auto item = [&](const char* k, const std::string& v) {
    out << "<tr><th>" << k << "</th><td>" << esc(v) << "</td></tr>\n";
  };
  out << "<table class=\"params\">\n";
  item("regions", regions);
  item("callers", std::to_string(r.callers));
  item("rate", fixed(r.rate, 0) + " operations per second, all callers");
  item("duration", seconds_text(r.duration_ms));
  item("seed", std::to_string(r.seed));
  item("started", r.started_utc);
  if (!r.settings.empty()) {
    out << "<tr><th>settings</th><td class=\"settings\">";
    bool first = true;
    for (const auto& [k, v] : r.settings) {
      out << (first ? "" : "<br>") << esc(k) << " = " << esc(v);
      first = false;
    }
    out << "</td></tr>\n";
  }
  out << "</table>\n";
}

std::string failover_text(const scenario_report& s) {
  return s.failover_ms ? seconds_text(*s.failover_ms) : "none";
}

std::string latency_text(const scenario_report& s) {
  return fixed(s.p50_ms, 1) + " / " + fixed(s.p99_ms, 1) + " ms";
}

void summary(std::ostringstream& out, const drill_report& r) {
  out << "<table class=\"summary\">\n<tr><th>scenario</th><th>verdict</th>"
         "<th class=\"n\">ops</th><th class=\"n\">success</th>"
         "<th class=\"n\">user-visible failures</th>"
         "<th class=\"n\">caller timeouts</th><th class=\"n\">failover</th>"
         "<th class=\"n\">p50 / p99</th></tr>\n";
  for (size_t i = 0; i < r.scenarios.size(); ++i) {
    const auto& s = r.scenarios[i];
    out << "<tr><td><a href=\"#scenario-" << i << "\">" << esc(s.id) << "</a> "
        << esc(s.title) << "</td><td>" << verdict(s.passed)
        << "</td><td class=\"n\">" << s.total.ops << "</td><td class=\"n\">"
        << pct_text(s) << "</td><td class=\"n\">" << s.total.failures
        << "</td><td class=\"n\">" << s.total.timeouts
        << "</td><td class=\"n\">" << failover_text(s)
        << "</td><td class=\"n\">" << latency_text(s) << "</td></tr>\n";
  }
  out << "</table>\n";
}

void kinds(std::ostringstream& out, const scenario_report& s) {
  out << "<table class=\"kinds\">\n<tr><th>kind</th><th class=\"n\">ops</th>"
         "<th class=\"n\">ok</th><th class=\"n\">user-visible failures</th>"
         "<th class=\"n\">caller timeouts</th></tr>\n";
  auto line = [&](const std::string& kind, const op_counts& c) {
    out << "<tr><td>" << esc(kind) << "</td><td class=\"n\">" << c.ops
        << "</td><td class=\"n\">" << c.successes << "</td><td class=\"n\">"
        << c.failures << "</td><td class=\"n\">" << c.timeouts
        << "</td></tr>\n";
  };
  std::vector<std::string> order;
  for (const char* k : {"read", "write", "query"})
    if (s.by_kind.count(k) != 0) order.push_back(k);
  for (const auto& [k, _] : s.by_kind)
    if (std::find(order.begin(), order.end(), k) == order.end())
      order.push_back(k);
  for (const auto& k : order)
    line(k, s.by_kind.at(k));
  line("all", s.total);
  out << "</table>\n";
}

// The change-feed consumer: one row of counts, the judgement is in the
// criteria above.
void feed_table(std::ostringstream& out, const feed_report& f) {
  std::string served;
  for (const auto& [region, n] : f.served_by)
    served += (served.empty() ? "" : ", ") + region + " " + std::to_string(n);
  out << "<table class=\"kinds\" style=\"margin-top:12px\">\n"
         "<tr><th>change feed (read through "
      << esc(f.site)
      << ")</th><th class=\"n\">pages</th><th class=\"n\">documents</th>"
         "<th class=\"n\">duplicates</th><th class=\"n\">order violations</th>"
         "<th class=\"n\">restarts</th><th class=\"n\">failed pages</th>"
         "<th class=\"n\">ranges at the end</th><th>final state</th></tr>\n"
      << "<tr><td>"
      << esc(served.empty() ? "no page" : "pages by region: " + served)
      << "</td><td class=\"n\">" << f.pages << "</td><td class=\"n\">"
      << f.documents << "</td><td class=\"n\">" << f.duplicates
      << "</td><td class=\"n\">" << f.order_violations
      << "</td><td class=\"n\">" << f.restarts << " (" << f.restarts_elsewhere
      << " elsewhere)</td><td class=\"n\">" << f.failed_pages << " ("
      << f.timed_out_pages << " timed out)</td><td class=\"n\">"
      << f.ranges_at_end << "</td><td>"
      << esc(std::to_string(f.final_documents) + " documents, " +
             std::to_string(f.final_never_seen + f.final_stale) +
             " final versions missed; " +
             std::to_string(f.acknowledged_missing) + " of " +
             std::to_string(f.acknowledged) +
             " acknowledged writes never in the feed; " +
             (f.caught_up ? "caught up" : "not caught up"))
      << "</td></tr>\n</table>\n";
}

void scenario(std::ostringstream& out, const drill_report& r, size_t i) {
  const auto& s = r.scenarios[i];
  out << "<section id=\"scenario-" << i << "\">\n<h2>" << esc(s.id) << " · "
      << esc(s.title) << " " << verdict(s.passed) << "</h2>\n";
  if (!s.description.empty())
    out << "<p class=\"desc\">" << esc(s.description) << "</p>\n";
  out << "<p class=\"lead\">" << s.total.ops << " operations, " << pct_text(s)
      << " success, failover " << failover_text(s) << ", p50 / p99 "
      << latency_text(s) << ", " << s.account_refreshes
      << " account refreshes</p>\n<ul class=\"criteria\">\n";
  for (const auto& c : s.criteria)
    out << "<li>" << verdict(c.passed) << " " << esc(c.requirement) << " — <b>"
        << esc(c.measured) << "</b></li>\n";
  out << "</ul>\n" << chart(r, s).svg();
  kinds(out, s);
  if (s.feed) feed_table(out, *s.feed);
  if (!s.notes.empty()) {
    out << "<ul class=\"notes\">\n";
    for (const auto& n : s.notes)
      out << "<li>" << esc(n) << "</li>\n";
    out << "</ul>\n";
  }
  out << "</section>\n";
}

} // namespace

std::string render_html(const drill_report& r) {
  size_t passed = 0;
  for (const auto& s : r.scenarios)
    passed += s.passed ? 1 : 0;
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">"
      << "\n<title>georoute drill: " << (r.passed ? "PASS" : "FAIL")
      << "</title>\n<style>" << style << "</style>\n</head>\n<body>\n"
      << "<h1>georoute disaster-recovery drill " << verdict(r.passed)
      << "</h1>\n<p class=\"lead\">" << passed << " of " << r.scenarios.size()
      << " scenarios passed</p>\n";
  params(out, r);
  out << "<h2 style=\"margin-top:20px\">Summary</h2>\n";
  summary(out, r);
  for (size_t i = 0; i < r.scenarios.size(); ++i)
    scenario(out, r, i);
  out << "</body>\n</html>\n";
  return out.str();
}

} // namespace georoute::drill
