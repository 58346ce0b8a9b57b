#include "tests/drill/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

// The terminal table and the JSON of a drill report, and the JSON's checker.
// The table is plain UTF-8 without colours (it is often piped) and stays
// within report_width columns: long lines wrap under their own indent.

namespace georoute::drill {

namespace {

constexpr size_t report_width = 100;

std::string fixed(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

/// "+5.0s": an instant since the scenario started.
std::string at_seconds(int64_t ms) {
  return (ms < 0 ? "-" : "+") + fixed(std::abs(ms) / 1000.0, 1) + "s";
}

/// "1.23 s": a duration.
std::string duration_text(int64_t ms) {
  return fixed(ms / 1000.0, ms < 10000 ? 2 : 1) + " s";
}

std::string pct_text(uint64_t part, uint64_t whole) {
  return whole == 0 ? "-" : fixed(100.0 * part / whole, 2) + "%";
}

/// Display columns of UTF-8 text: every code point counts one ("×", "—").
size_t columns(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string pad_right(std::string s, size_t width) {
  auto n = columns(s);
  if (n < width) s.append(width - n, ' ');
  return s;
}

std::string pad_left(const std::string& s, size_t width) {
  auto n = columns(s);
  return n < width ? std::string(width - n, ' ') + s : s;
}

/// Appends `text` wrapped to report_width at its spaces: the first line
/// starts with `first`, the others with `rest` (usually as many spaces). The
/// spaces between two words stay as they are unless the line breaks there.
void wrap(std::ostringstream& out, const std::string& first,
          const std::string& rest, const std::string& text) {
  std::string line = first;
  bool empty = true; // no word on this line yet
  size_t i = text.find_first_not_of(' ');
  while (i != std::string::npos) {
    auto end = std::min(text.find(' ', i), text.size());
    auto word = text.substr(i, end - i);
    auto next = text.find_first_not_of(' ', end);
    if (!empty && columns(line) + columns(word) > report_width) {
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      out << line << '\n';
      line = rest;
    }
    line += word;
    empty = false;
    if (next != std::string::npos) line += text.substr(end, next - end);
    i = next;
  }
  out << line << '\n';
}

/// The drill's regions in their order, then any other region of `m` (the
/// account endpoint "(global)", a region the run did not list).
template <class Map>
std::vector<std::string> region_order(const std::vector<std::string>& regions,
                                      const Map& m) {
  std::vector<std::string> out;
  for (const auto& r : regions)
    if (m.count(r) != 0) out.push_back(r);
  for (const auto& [r, _] : m)
    if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  return out;
}

/// "read", "write", "query" first, then any other kind by name.
std::vector<std::string> kind_order(const std::map<std::string, op_counts>& m) {
  std::vector<std::string> out;
  for (const char* k : {"read", "write", "query"})
    if (m.count(k) != 0) out.push_back(k);
  for (const auto& [k, _] : m)
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
}

void table_counts(std::ostringstream& out, const scenario_report& s) {
  const size_t w[] = {8, 9, 9, 23, 17, 10};
  out << "  " << pad_right("kind", w[0]) << pad_left("ops", w[1])
      << pad_left("ok", w[2]) << pad_left("user-visible failures", w[3])
      << pad_left("caller timeouts", w[4]) << pad_left("success", w[5]) << '\n';
  auto row = [&](const std::string& kind, const op_counts& c,
                 const std::string& pct) {
    out << "  " << pad_right(kind, w[0])
        << pad_left(std::to_string(c.ops), w[1])
        << pad_left(std::to_string(c.successes), w[2])
        << pad_left(std::to_string(c.failures), w[3])
        << pad_left(std::to_string(c.timeouts), w[4]) << pad_left(pct, w[5])
        << '\n';
  };
  for (const auto& k : kind_order(s.by_kind)) {
    const auto& c = s.by_kind.at(k);
    row(k, c, pct_text(c.successes, c.ops));
  }
  row("all", s.total, s.total.ops == 0 ? "-" : fixed(s.success_pct, 2) + "%");
}

/// The backend view: one column per status when they fit, else a
/// "status×count" list per region.
void table_backend(std::ostringstream& out, const drill_report& r,
                   const scenario_report& s, size_t label) {
  if (s.backend.empty()) {
    out << "  backend (emulator) by region: nothing answered\n";
    return;
  }
  std::map<int, size_t> width; // status -> column width
  size_t total_width = 7;
  for (const auto& [_, statuses] : s.backend) {
    uint64_t sum = 0;
    for (const auto& [status, n] : statuses) {
      auto& w = width[status];
      w = std::max({w, size_t{7}, std::to_string(status).size() + 2,
                    std::to_string(n).size() + 2});
      sum += n;
    }
    total_width = std::max(total_width, std::to_string(sum).size() + 2);
  }
  size_t line = 4 + label + total_width;
  for (const auto& [_, w] : width)
    line += w;
  const std::string indent(4 + label, ' ');

  if (line > report_width) {
    out << "  backend (emulator) by region:\n";
    for (const auto& region : region_order(r.regions, s.backend)) {
      std::string statuses;
      uint64_t sum = 0;
      for (const auto& [status, n] : s.backend.at(region)) {
        statuses += std::to_string(status) + "×" + std::to_string(n) + "  ";
        sum += n;
      }
      wrap(out, "    " + pad_right(region, label), indent,
           statuses + "total " + std::to_string(sum));
    }
    return;
  }
  out << pad_right("  backend (emulator)", 4 + label);
  for (const auto& [status, w] : width)
    out << pad_left(std::to_string(status), w);
  out << pad_left("total", total_width) << '\n';
  for (const auto& region : region_order(r.regions, s.backend)) {
    const auto& statuses = s.backend.at(region);
    uint64_t sum = 0;
    out << "    " << pad_right(region, label);
    for (const auto& [status, w] : width) {
      auto i = statuses.find(status);
      out << pad_left(i == statuses.end() ? "-" : std::to_string(i->second), w);
      sum += i == statuses.end() ? 0 : i->second;
    }
    out << pad_left(std::to_string(sum), total_width) << '\n';
  }
}

void table_regions(std::ostringstream& out, const drill_report& r,
                   const scenario_report& s) {
  size_t label = 17; // "backend (emulator)" fits above the region names
  for (const auto& [region, _] : s.backend)
    label = std::max(label, columns(region) + 2);
  for (const auto& [region, _] : s.served_by)
    label = std::max(label, columns(region) + 2);
  table_backend(out, r, s, label);

  if (s.served_by.empty()) {
    out << "  served (callers) by region: none\n";
    return;
  }
  uint64_t served = 0;
  for (const auto& [_, n] : s.served_by)
    served += n;
  out << pad_right("  served (callers)", 4 + label) << pad_left("ok", 9)
      << pad_left("share", 9) << '\n';
  for (const auto& region : region_order(r.regions, s.served_by)) {
    auto n = s.served_by.at(region);
    out << "    " << pad_right(region, label) << pad_left(std::to_string(n), 9)
        << pad_left(pct_text(n, served), 9) << '\n';
  }
}

/// The change-feed consumer: what it read, where, and how it ended.
std::string feed_text(const feed_report& f) {
  std::string served;
  for (const auto& [region, n] : f.served_by)
    served += (served.empty() ? "" : ", ") + region + " " + std::to_string(n);
  return "read through " + f.site + ": " + std::to_string(f.pages) +
         " pages (" + std::to_string(f.pages_with_documents) +
         " with documents), " + std::to_string(f.documents) +
         " documents applied, " + std::to_string(f.duplicates) +
         " duplicates, " + std::to_string(f.order_violations) +
         " order violations; " + std::to_string(f.restarts) + " restarts (" +
         std::to_string(f.restarts_elsewhere) + " through another site, " +
         std::to_string(f.pages_discarded) + " pages dropped unapplied); " +
         std::to_string(f.failed_pages) + " failed pages (" +
         std::to_string(f.timed_out_pages) + " timed out); " +
         std::to_string(f.ranges_at_end) + " ranges at the end; " +
         (f.caught_up ? "caught up" : "NOT caught up") + " after " +
         duration_text(f.drain_ms) + "; pages served by " +
         (served.empty() ? "none" : served);
}

void table_scenario(std::ostringstream& out, const drill_report& r,
                    const scenario_report& s) {
  wrap(out, s.id + "  ", std::string(s.id.size() + 2, ' '),
       s.title + "  " + (s.passed ? "PASS" : "FAIL"));
  table_counts(out, s);

  const size_t label = 20;
  std::string failover = "none";
  if (s.failover_ms) {
    failover = duration_text(*s.failover_ms);
    if (s.failover_at_ms)
      failover +=
          " (first success elsewhere at " + at_seconds(*s.failover_at_ms) + ")";
  }
  out << "  " << pad_right("failover time", label) << failover << '\n';
  out << "  " << pad_right("latency", label) << "p50 " << fixed(s.p50_ms, 1)
      << " ms, p99 " << fixed(s.p99_ms, 1) << " ms\n";
  out << "  " << pad_right("account refreshes", label) << s.account_refreshes
      << '\n';
  out << "  " << pad_right("duration", label) << duration_text(s.duration_ms)
      << '\n';
  table_regions(out, r, s);
  if (s.feed)
    wrap(out, "  " + pad_right("change feed", label), std::string(4, ' '),
         feed_text(*s.feed));

  out << "  faults:";
  if (s.faults.empty()) out << " none";
  out << '\n';
  for (const auto& f : s.faults)
    wrap(out, "    " + pad_right(at_seconds(f.at_ms), 9), std::string(13, ' '),
         f.label);

  for (const auto& c : s.criteria)
    wrap(out, std::string("  [") + (c.passed ? "PASS" : "FAIL") + "] ",
         std::string(9, ' '), c.requirement + " — " + c.measured);
  for (const auto& n : s.notes)
    wrap(out, "  note: ", std::string(8, ' '), n);
}

} // namespace

std::string render_table(const drill_report& r) {
  std::ostringstream out;
  out << "georoute drill  started " << r.started_utc << "  seed " << r.seed
      << '\n';
  std::string regions;
  for (const auto& region : r.regions)
    regions += (regions.empty() ? "" : ", ") + region;
  wrap(out, "  regions ", "    ",
       regions + "; " + std::to_string(r.callers) + " callers at " +
           fixed(r.rate, 0) + " op/s; duration " +
           duration_text(r.duration_ms));
  if (!r.settings.empty()) {
    std::string settings;
    for (const auto& [k, v] : r.settings)
      settings += (settings.empty() ? "" : ", ") + k + "=" + v;
    wrap(out, "  settings ", "    ", settings);
  }

  size_t passed = 0;
  std::string failed;
  for (const auto& s : r.scenarios) {
    out << '\n';
    table_scenario(out, r, s);
    if (s.passed)
      ++passed;
    else
      failed += (failed.empty() ? "" : ", ") + s.id;
  }

  out << '\n';
  std::string verdict = std::to_string(passed) + " of " +
                        std::to_string(r.scenarios.size()) +
                        " scenarios passed";
  if (!failed.empty()) verdict += "; failed: " + failed;
  if (!r.passed && failed.empty()) verdict += "; FAIL";
  wrap(out, "drill: ", "  ", verdict);
  return out.str();
}

// -- JSON ---------------------------------------------------------------------

namespace {

using ojson = nlohmann::ordered_json;

ojson to_json(const op_counts& c) {
  return {{"ops", c.ops},
          {"successes", c.successes},
          {"failures", c.failures},
          {"timeouts", c.timeouts}};
}

ojson to_json(const std::map<std::string, std::map<int, uint64_t>>& m) {
  auto out = ojson::object();
  for (const auto& [region, statuses] : m) {
    auto& j = out[region] = ojson::object();
    for (const auto& [status, n] : statuses)
      j[std::to_string(status)] = n;
  }
  return out;
}

template <class T>
ojson nullable(const std::optional<T>& v) {
  return v ? ojson(*v) : ojson(nullptr);
}

ojson to_json(const scenario_report& s) {
  auto by_kind = ojson::object();
  for (const auto& [k, c] : s.by_kind)
    by_kind[k] = to_json(c);
  auto faults = ojson::array();
  for (const auto& f : s.faults)
    faults.push_back(
        {{"at_ms", f.at_ms}, {"label", f.label}, {"region", f.region}});
  auto timeline = ojson::array();
  for (const auto& b : s.timeline)
    timeline.push_back({{"t_ms", b.t_ms},
                        {"backend", to_json(b.backend)},
                        {"callers", ojson(b.callers)},
                        {"accepted", ojson(b.accepted)},
                        {"held", ojson(b.held)},
                        {"queued", ojson(b.queued)},
                        {"open", ojson(b.open)}});
  auto memory = ojson::array();
  for (const auto& m : s.memory)
    memory.push_back({{"t_ms", m.t_ms},
                      {"rss_mib", m.rss_mib},
                      {"heap_mib", m.heap_mib},
                      {"records_mib", m.records_mib},
                      {"rss_untrimmed_mib", m.rss_untrimmed_mib}});
  auto feed = ojson(nullptr);
  if (s.feed) {
    const auto& f = *s.feed;
    feed = {{"site", f.site},
            {"pages", f.pages},
            {"pages_with_documents", f.pages_with_documents},
            {"documents", f.documents},
            {"duplicates", f.duplicates},
            {"order_violations", f.order_violations},
            {"malformed", f.malformed},
            {"failed_pages", f.failed_pages},
            {"timed_out_pages", f.timed_out_pages},
            {"restarts", f.restarts},
            {"restarts_elsewhere", f.restarts_elsewhere},
            {"pages_discarded", f.pages_discarded},
            {"served_by", ojson(f.served_by)},
            {"ranges_at_end", f.ranges_at_end},
            {"caught_up", f.caught_up},
            {"drain_ms", f.drain_ms},
            {"acknowledged", f.acknowledged},
            {"acknowledged_missing", f.acknowledged_missing},
            {"final_documents", f.final_documents},
            {"final_never_seen", f.final_never_seen},
            {"final_stale", f.final_stale},
            {"phantoms", f.phantoms}};
  }
  auto criteria = ojson::array();
  for (const auto& c : s.criteria)
    criteria.push_back({{"requirement", c.requirement},
                        {"measured", c.measured},
                        {"passed", c.passed}});
  return {{"id", s.id},
          {"title", s.title},
          {"description", s.description},
          {"duration_ms", s.duration_ms},
          {"by_kind", by_kind},
          {"total", to_json(s.total)},
          {"success_pct", s.success_pct},
          {"failover_ms", nullable(s.failover_ms)},
          {"failover_at_ms", nullable(s.failover_at_ms)},
          {"p50_ms", s.p50_ms},
          {"p99_ms", s.p99_ms},
          {"account_refreshes", s.account_refreshes},
          {"backend", to_json(s.backend)},
          {"served_by", ojson(s.served_by)},
          {"faults", faults},
          {"timeline", timeline},
          {"memory", memory},
          {"feed", feed},
          {"criteria", criteria},
          {"notes", ojson(s.notes)},
          {"passed", s.passed}};
}

} // namespace

std::string render_json(const drill_report& r) {
  auto scenarios = ojson::array();
  for (const auto& s : r.scenarios)
    scenarios.push_back(to_json(s));
  ojson j = {{"regions", ojson(r.regions)},
             {"callers", r.callers},
             {"rate", r.rate},
             {"duration_ms", r.duration_ms},
             {"seed", r.seed},
             {"started_utc", r.started_utc},
             {"settings", ojson(r.settings)},
             {"scenarios", scenarios},
             {"passed", r.passed}};
  // Invalid UTF-8 in a label must not throw out of the renderer.
  return j.dump(2, ' ', false, ojson::error_handler_t::replace) + '\n';
}

// -- the JSON's checker -------------------------------------------------------

namespace {

using json = nlohmann::json;

enum class type {
  object,
  array,
  string,
  boolean,
  unsigned_int,
  integer,
  number,
  nullable_integer
};

const char* type_name(type t) {
  switch (t) {
  case type::object:
    return "an object";
  case type::array:
    return "an array";
  case type::string:
    return "a string";
  case type::boolean:
    return "a boolean";
  case type::unsigned_int:
    return "an unsigned integer";
  case type::integer:
    return "an integer";
  case type::number:
    return "a number";
  case type::nullable_integer:
    return "an integer or null";
  }
  return "?";
}

bool has_type(const json& v, type t) {
  switch (t) {
  case type::object:
    return v.is_object();
  case type::array:
    return v.is_array();
  case type::string:
    return v.is_string();
  case type::boolean:
    return v.is_boolean();
  case type::unsigned_int:
    return v.is_number_unsigned();
  case type::integer:
    return v.is_number_integer();
  case type::number:
    return v.is_number();
  case type::nullable_integer:
    return v.is_null() || v.is_number_integer();
  }
  return false;
}

std::string excerpt(const json& v) {
  auto s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() <= 40 ? s : s.substr(0, 37) + "...";
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string at(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

/// Collects the problems; every check names the path it looked at.
class checker {
public:
  std::vector<std::string> problems;

  void add(const std::string& path, const std::string& what) {
    problems.push_back(path + ": " + what);
  }

  /// The value at `path` if it has type `t`, else nullptr (and a problem).
  const json* expect(const json& v, const std::string& path, type t) {
    if (has_type(v, t)) return &v;
    add(path, std::string("expected ") + type_name(t) + ", got " +
                  v.type_name() + " " + excerpt(v));
    return nullptr;
  }

  /// Member `key` of object `obj` (at `path`) if present with type `t`.
  const json* field(const json& obj, const std::string& path, const char* key,
                    type t) {
    auto i = obj.find(key);
    if (i == obj.end()) {
      add(join(path, key), "missing");
      return nullptr;
    }
    return expect(*i, join(path, key), t);
  }

  /// Object whose every value has type `t`.
  const json* map_of(const json& obj, const std::string& path, const char* key,
                     type t) {
    auto m = field(obj, path, key, type::object);
    if (m)
      for (const auto& [k, v] : m->items())
        expect(v, join(join(path, key), k), t);
    return m;
  }

  /// Array whose every element is checked by `each(element, path)`.
  const json*
  array_of(const json& obj, const std::string& path, const char* key,
           const std::function<void(const json&, std::string)>& each) {
    auto a = field(obj, path, key, type::array);
    if (a)
      for (size_t i = 0; i < a->size(); ++i)
        each((*a)[i], at(join(path, key), i));
    return a;
  }

  void counts(const json& obj, const std::string& path) {
    for (const char* k : {"ops", "successes", "failures", "timeouts"})
      field(obj, path, k, type::unsigned_int);
  }

  /// region -> status -> count, statuses as integer keys.
  void status_map(const json& obj, const std::string& path, const char* key) {
    auto m = field(obj, path, key, type::object);
    if (!m) return;
    for (const auto& [region, statuses] : m->items()) {
      auto rp = join(join(path, key), region);
      if (!expect(statuses, rp, type::object)) continue;
      for (const auto& [status, n] : statuses.items()) {
        if (!is_integer_text(status))
          add(rp, "status key \"" + status + "\" is not an integer");
        expect(n, join(rp, status), type::unsigned_int);
      }
    }
  }

  void scenario(const json& s, const std::string& path);
  void report(const json& r);

private:
  static bool is_integer_text(const std::string& s) {
    auto digits = s.size() > 1 && s[0] == '-' ? s.substr(1) : s;
    return !digits.empty() && digits.size() <= 9 &&
           std::all_of(digits.begin(), digits.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
  }
};

void checker::scenario(const json& s, const std::string& path) {
  if (!expect(s, path, type::object)) return;
  for (const char* k : {"id", "title", "description"})
    field(s, path, k, type::string);
  field(s, path, "duration_ms", type::integer);
  if (auto by_kind = field(s, path, "by_kind", type::object))
    for (const auto& [k, c] : by_kind->items())
      if (expect(c, join(join(path, "by_kind"), k), type::object))
        counts(c, join(join(path, "by_kind"), k));
  auto total = field(s, path, "total", type::object);
  if (total) counts(*total, join(path, "total"));
  auto pct = field(s, path, "success_pct", type::number);
  for (const char* k : {"failover_ms", "failover_at_ms"})
    field(s, path, k, type::nullable_integer);
  for (const char* k : {"p50_ms", "p99_ms"})
    field(s, path, k, type::number);
  field(s, path, "account_refreshes", type::unsigned_int);
  status_map(s, path, "backend");
  map_of(s, path, "served_by", type::unsigned_int);
  array_of(s, path, "faults", [this](const json& f, const std::string& p) {
    if (!expect(f, p, type::object)) return;
    field(f, p, "at_ms", type::integer);
    field(f, p, "label", type::string);
    field(f, p, "region", type::string);
  });
  array_of(s, path, "timeline", [this](const json& b, const std::string& p) {
    if (!expect(b, p, type::object)) return;
    field(b, p, "t_ms", type::integer);
    status_map(b, p, "backend");
    map_of(b, p, "callers", type::unsigned_int);
    // Optional: reports written before them have neither.
    if (b.contains("accepted")) map_of(b, p, "accepted", type::unsigned_int);
    if (b.contains("held")) map_of(b, p, "held", type::unsigned_int);
    if (b.contains("queued")) map_of(b, p, "queued", type::unsigned_int);
    if (b.contains("open")) map_of(b, p, "open", type::unsigned_int);
  });
  // Optional: reports written before the memory series have none.
  if (s.contains("memory"))
    array_of(s, path, "memory", [this](const json& m, const std::string& p) {
      if (!expect(m, p, type::object)) return;
      field(m, p, "t_ms", type::integer);
      field(m, p, "rss_mib", type::number);
      field(m, p, "heap_mib", type::number);
      field(m, p, "records_mib", type::number);
      // Optional: reports written before it have none.
      if (m.contains("rss_untrimmed_mib"))
        field(m, p, "rss_untrimmed_mib", type::number);
    });
  // Optional as well (reports written before the change-feed consumer);
  // null when the scenario did not get as far.
  if (auto f = s.find("feed"); f != s.end() && !f->is_null()) {
    auto fp = join(path, "feed");
    if (expect(*f, fp, type::object)) {
      field(*f, fp, "site", type::string);
      for (const char* k :
           {"pages", "pages_with_documents", "documents", "duplicates",
            "order_violations", "malformed", "failed_pages", "timed_out_pages",
            "restarts", "restarts_elsewhere", "pages_discarded",
            "ranges_at_end", "acknowledged", "acknowledged_missing",
            "final_documents", "final_never_seen", "final_stale", "phantoms"})
        field(*f, fp, k, type::unsigned_int);
      map_of(*f, fp, "served_by", type::unsigned_int);
      field(*f, fp, "caught_up", type::boolean);
      field(*f, fp, "drain_ms", type::integer);
    }
  }
  bool criteria_known = true;
  bool all_passed = true;
  std::string first_failed;
  auto criteria =
      array_of(s, path, "criteria", [&](const json& c, const std::string& p) {
        if (!expect(c, p, type::object)) {
          criteria_known = false;
          return;
        }
        field(c, p, "requirement", type::string);
        field(c, p, "measured", type::string);
        auto passed = field(c, p, "passed", type::boolean);
        if (!passed)
          criteria_known = false;
        else if (!passed->get<bool>() && all_passed) {
          all_passed = false;
          auto req = c.find("requirement");
          first_failed = p.substr(path.size() + 1) +
                         (req != c.end() && req->is_string()
                              ? " (" + req->get<std::string>() + ")"
                              : "");
        }
      });
  array_of(s, path, "notes", [this](const json& n, const std::string& p) {
    expect(n, p, type::string);
  });
  auto passed = field(s, path, "passed", type::boolean);

  if (pct && total && total->contains("ops") && total->contains("successes") &&
      (*total)["ops"].is_number_unsigned() &&
      (*total)["successes"].is_number_unsigned()) {
    auto ops = (*total)["ops"].get<uint64_t>();
    auto ok = (*total)["successes"].get<uint64_t>();
    auto v = pct->get<double>();
    if (ops == 0) {
      if (!(v >= 0 && v <= 100))
        add(join(path, "success_pct"),
            fixed(v, 2) + " outside [0, 100] (no operations)");
    } else if (!(std::fabs(v - 100.0 * ok / ops) <= 0.01)) {
      add(join(path, "success_pct"), fixed(v, 2) + ", but total is " +
                                         std::to_string(ok) + " of " +
                                         std::to_string(ops) + " successes (" +
                                         fixed(100.0 * ok / ops, 2) + ")");
    }
  }
  if (passed && criteria && criteria_known && passed->get<bool>() != all_passed)
    add(join(path, "passed"), all_passed
                                  ? "false, but every criterion passed"
                                  : "true, but " + first_failed + " failed");
}

void checker::report(const json& r) {
  if (!expect(r, "(top level)", type::object)) return;
  array_of(r, "", "regions", [this](const json& v, const std::string& p) {
    expect(v, p, type::string);
  });
  field(r, "", "callers", type::unsigned_int);
  field(r, "", "rate", type::number);
  field(r, "", "duration_ms", type::integer);
  field(r, "", "seed", type::unsigned_int);
  field(r, "", "started_utc", type::string);
  map_of(r, "", "settings", type::string);
  bool known = true;
  bool all_passed = true;
  std::string first_failed;
  auto scenarios =
      array_of(r, "", "scenarios", [&](const json& s, const std::string& p) {
        scenario(s, p);
        auto passed = s.is_object() ? s.find("passed") : s.end();
        if (!s.is_object() || passed == s.end() || !passed->is_boolean())
          known = false;
        else if (!passed->get<bool>() && all_passed) {
          all_passed = false;
          auto id = s.find("id");
          first_failed = p + (id != s.end() && id->is_string()
                                  ? " (" + id->get<std::string>() + ")"
                                  : "");
        }
      });
  auto passed = field(r, "", "passed", type::boolean);
  if (passed && scenarios && known && passed->get<bool>() != all_passed)
    add("passed", all_passed ? "false, but every scenario passed"
                             : "true, but " + first_failed + " failed");
}

} // namespace

std::vector<std::string> validate_report_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return {std::string("(top level): not valid JSON: ") + e.what()};
  }
  checker c;
  c.report(j);
  return c.problems;
}

} // namespace georoute::drill
