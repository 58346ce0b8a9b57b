#include "tests/bench/child_emulator.hpp"

#include "tests/emulator/engine.hpp"
#include "georoute/transport/auth.hpp"
#include "georoute/transport/http_client.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <future>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace georoute::bench {

namespace {

using namespace std::chrono_literals;

transport::outcome blocking_send(transport::http_client& client,
                                 transport::request r) {
  std::promise<transport::outcome> p;
  auto f = p.get_future();
  client.send(std::move(r),
              [&p](transport::outcome o) { p.set_value(std::move(o)); });
  return f.get();
}

std::string describe(const transport::outcome& o) {
  if (o.error != transport::failure::none)
    return std::string{transport::to_string(o.error)} + " (" + o.error_detail +
           ")";
  return "status " + std::to_string(o.status) + " " + o.body.substr(0, 200);
}

/// Reads the banner until its last line; fills endpoints.
problem read_banner(int fd, std::string& global,
                    std::map<std::string, std::string>& regions) {
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + 15s;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) return problem{"no banner from the emulator within 15 s"};
    pollfd p{fd, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[4096];
    auto got = read(fd, buf, sizeof buf);
    if (got <= 0)
      return problem{"the emulator exited before it was ready: " + text};
    text.append(buf, static_cast<size_t>(got));
    if (text.find("stop with Ctrl-C") != std::string::npos) break;
  }
  size_t pos = 0;
  while (pos < text.size()) {
    auto eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    auto line = text.substr(pos, eol - pos);
    pos = eol + 1;
    const std::string g = "  global endpoint: ";
    const std::string r = "  region ";
    if (line.rfind(g, 0) == 0) {
      global = line.substr(g.size());
    } else if (line.rfind(r, 0) == 0) {
      auto colon = line.find(": ", r.size());
      if (colon != std::string::npos)
        regions[line.substr(r.size(), colon - r.size())] =
            line.substr(colon + 2);
    }
  }
  if (global.empty() || regions.empty())
    return problem{"unexpected emulator banner: " + text};
  return problem{};
}

} // namespace

child_emulator::child_emulator() = default;

result<std::unique_ptr<child_emulator>>
child_emulator::start(const std::string& exe,
                      const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0)
    return problem{std::string{"pipe: "} + std::strerror(errno)};
  std::vector<std::string> argv_s{exe, "emulator"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  auto parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return problem{std::string{"fork: "} + std::strerror(errno)};
  if (pid == 0) {
    // The emulator ends with this process, however it ends.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execv(exe.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<child_emulator> c{new child_emulator};
  c->pid_ = pid;
  c->out_fd_ = fds[0];
  c->key_ = emulator::default_master_key;
  if (auto p = read_banner(fds[0], c->global_, c->regions_); !p.what.empty())
    return p;
  transport::http_client_options co;
  co.max_connections_per_endpoint = 4;
  c->client_ = std::make_shared<transport::http_client>(co);
  return c;
}

child_emulator::~child_emulator() {
  client_.reset();
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 1000; ++i) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(10ms);
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  if (out_fd_ >= 0) close(out_fd_);
}

result<std::string> child_emulator::admin(const std::string& method,
                                          const std::string& path,
                                          const std::string& json_body) {
  transport::request r;
  r.method = method;
  r.endpoint = global_;
  r.target = "/_emulator/" + path;
  r.body = json_body;
  if (!json_body.empty())
    r.headers.emplace_back("content-type", "application/json");
  r.timeout = 10s;
  auto o = blocking_send(*client_, std::move(r));
  if (o.error != transport::failure::none || o.status < 200 || o.status > 299)
    return problem{"admin " + method + " /_emulator/" + path + ": " +
                   describe(o)};
  return o.body;
}

transport::outcome
child_emulator::call(const std::string& method, const std::string& endpoint,
                     const std::string& target, const std::string& body,
                     std::vector<std::pair<std::string, std::string>> headers) {
  transport::request r;
  r.method = method;
  r.endpoint = endpoint;
  r.target = target;
  r.body = body;
  r.headers = std::move(headers);
  if (!body.empty()) r.headers.emplace_back("content-type", "application/json");
  r.timeout = 10s;
  auto key = transport::parse_master_key(key_);
  if (key) transport::sign_request(r, *key, std::chrono::system_clock::now());
  return blocking_send(*client_, std::move(r));
}

std::string percent_encode(const std::string& text) {
  return transport::uri_component_encode(text);
}

} // namespace georoute::bench
