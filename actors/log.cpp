#include "georoute/actors/log.hpp"

#include <mutex>
#include <ostream>

namespace georoute {

const char* to_string(log_level level) {
  switch (level) {
  case log_level::trace:
    return "trace";
  case log_level::debug:
    return "debug";
  case log_level::info:
    return "info";
  case log_level::warn:
    return "warn";
  case log_level::error:
    return "error";
  case log_level::off:
    return "off";
  }
  return "?";
}

std::optional<log_level> parse_log_level(std::string_view text) {
  for (auto l : {log_level::trace, log_level::debug, log_level::info,
                 log_level::warn, log_level::error, log_level::off})
    if (text == to_string(l)) return l;
  if (text == "warning") return log_level::warn;
  return std::nullopt;
}

std::string to_line(const log_record& r) {
  std::string line = to_string(r.level);
  line += ' ';
  line += r.component;
  line += ' ';
  line += r.event;
  line += ": ";
  line += r.message;
  return line;
}

log_sink make_stream_sink(std::ostream& out) {
  auto mtx = std::make_shared<std::mutex>();
  return [&out, mtx](const log_record& r) {
    auto line = to_line(r);
    line += '\n';
    std::lock_guard<std::mutex> guard{*mtx};
    out << line << std::flush;
  };
}

logger::logger(log_sink sink, log_level min)
    : sink_(sink ? std::make_shared<const log_sink>(std::move(sink)) : nullptr),
      min_(min) {}

void logger::log(log_level level, std::string_view component,
                 std::string_view event, std::string message) const {
  if (!enabled(level)) return;
  log_record r;
  r.level = level;
  r.component = component;
  r.event = event;
  r.message = std::move(message);
  try {
    (*sink_)(r);
  } catch (...) {
    // A host's sink must not take an actor down.
  }
}

} // namespace georoute
