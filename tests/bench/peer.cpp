#include "tests/bench/peer.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <poll.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace georoute::bench {

namespace {

using namespace std::chrono_literals;

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::string read_all(const std::string& path) {
  std::ifstream in{path, std::ios::binary};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool copy_file(const std::string& from, const std::string& to) {
  auto text = read_all(from);
  if (text.empty()) return false;
  if (read_all(to) == text) return true;
  std::ofstream out{to + ".tmp", std::ios::binary};
  out << text;
  out.close();
  return out.good() && std::rename((to + ".tmp").c_str(), to.c_str()) == 0;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
  return out + "'";
}

std::string tail(const std::string& text, size_t lines) {
  size_t pos = text.size();
  for (size_t i = 0; i <= lines && pos > 0; ++i)
    pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos ? text : text.substr(pos + 1);
}

/// The first executable `name` on PATH, or "".
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t pos = 0;
  while (pos <= dirs.size()) {
    auto colon = dirs.find(':', pos);
    if (colon == std::string::npos) colon = dirs.size();
    auto candidate = dirs.substr(pos, colon - pos) + "/" + name;
    if (colon > pos && access(candidate.c_str(), X_OK) == 0) return candidate;
    pos = colon + 1;
  }
  return {};
}

/// Installs @azure/cosmos into work_dir unless it is there; "" when ready.
std::string install(const std::string& source_dir,
                    const std::string& work_dir) {
  if (on_path("node").empty()) return "node is not installed";
  std::string conformance = source_dir + "/tests/conformance";
  if (std::system(("mkdir -p " + quote(work_dir)).c_str()) != 0)
    return "cannot create " + work_dir;
  bool same_lock = read_all(conformance + "/package-lock.json") ==
                   read_all(work_dir + "/package-lock.json");
  if (!same_lock ||
      !exists(work_dir + "/node_modules/@azure/cosmos/package.json")) {
    if (on_path("npm").empty())
      return "npm is not installed, so @azure/cosmos cannot be installed";
    if (!copy_file(conformance + "/package.json", work_dir + "/package.json") ||
        !copy_file(conformance + "/package-lock.json",
                   work_dir + "/package-lock.json"))
      return "cannot copy the package files into " + work_dir;
    std::fprintf(stderr, "georoute bench: installing @azure/cosmos into %s\n",
                 work_dir.c_str());
    auto log = work_dir + "/npm-ci.log";
    auto rc = std::system(("cd " + quote(work_dir) +
                           " && npm ci --no-audit --no-fund --fetch-retries=1 "
                           "--fetch-timeout=30000 >" +
                           quote(log) + " 2>&1")
                              .c_str());
    if (rc != 0)
      return "npm ci failed (the registry may be unreachable): " +
             tail(read_all(log), 3) + " (log: " + log + ")";
  }
  if (!copy_file(source_dir + "/tests/bench/peer.mjs", work_dir + "/peer.mjs"))
    return "cannot copy peer.mjs into " + work_dir;
  return {};
}

} // namespace

result<std::unique_ptr<node_peer>>
node_peer::start(const std::string& source_dir, const std::string& work_dir) {
  if (auto why = install(source_dir, work_dir); !why.empty())
    return problem{why};
  int to_child[2];
  int from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0)
    return problem{std::string{"pipe: "} + std::strerror(errno)};
  auto script = work_dir + "/peer.mjs";
  // Resolved before fork: the child only calls async-signal-safe functions.
  auto node = on_path("node");
  auto parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return problem{std::string{"fork: "} + std::strerror(errno)};
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    dup2(to_child[0], STDIN_FILENO);
    dup2(from_child[1], STDOUT_FILENO);
    close(to_child[0]);
    close(to_child[1]);
    close(from_child[0]);
    close(from_child[1]);
    if (chdir(work_dir.c_str()) != 0) _exit(126);
    execl(node.c_str(), "node", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  std::unique_ptr<node_peer> p{new node_peer};
  p->pid_ = pid;
  p->in_fd_ = to_child[1];
  p->out_fd_ = from_child[0];
  return p;
}

node_peer::~node_peer() {
  if (in_fd_ >= 0) {
    std::string quit = "{\"cmd\":\"quit\"}\n";
    auto ignored = write(in_fd_, quit.data(), quit.size());
    (void)ignored;
    close(in_fd_);
  }
  if (pid_ > 0) {
    int status = 0;
    bool gone = false;
    for (int i = 0; i < 500 && !gone; ++i) {
      gone = waitpid(pid_, &status, WNOHANG) == pid_;
      if (!gone) std::this_thread::sleep_for(10ms);
    }
    if (!gone) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
  }
  if (out_fd_ >= 0) close(out_fd_);
}

result<nlohmann::json> node_peer::call(const nlohmann::json& cmd,
                                       std::chrono::milliseconds timeout) {
  auto line = cmd.dump() + "\n";
  size_t off = 0;
  while (off < line.size()) {
    auto n = write(in_fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return problem{"the node peer is gone (write failed)"};
    off += static_cast<size_t>(n);
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto eol = pending_.find('\n');
    if (eol != std::string::npos) {
      auto reply = pending_.substr(0, eol);
      pending_.erase(0, eol + 1);
      auto j = nlohmann::json::parse(reply, nullptr, false);
      if (j.is_discarded())
        return problem{"the node peer answered something else than JSON: " +
                       reply.substr(0, 200)};
      if (j.contains("error"))
        return problem{"the node peer failed: " +
                       j["error"].get<std::string>()};
      return j;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0)
      return problem{"no answer from the node peer within " +
                     std::to_string(timeout.count()) + " ms"};
    pollfd p{out_fd_, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[8192];
    auto got = read(out_fd_, buf, sizeof buf);
    if (got <= 0) return problem{"the node peer exited"};
    pending_.append(buf, static_cast<size_t>(got));
  }
}

} // namespace georoute::bench
