#pragma once

// nats-server as a child process of a test: bound to 127.0.0.1, on a port
// it picks itself the first time (port -1; the port is read from the ports
// file it writes) and on that same port when started again. Stopped with
// SIGINT and waitpid (after a SIGCONT, should it be stopped), by the
// destructor too, so a failed assertion never leaves a server behind; the
// child also gets SIGKILL should the test process die first.

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace georoute::testing {

/// The nats-server found at configure time ("" when there was none).
inline std::string nats_server_path() {
  std::string p = GEOROUTE_NATS_SERVER;
  if (p.empty() || ::access(p.c_str(), X_OK) != 0) return {};
  return p;
}

class nats_server_process {
public:
  /// `make_config(port)` gives the configuration text for a port (-1: any).
  nats_server_process(std::string dir,
                      std::function<std::string(int port)> make_config)
      : dir_(std::move(dir)), make_config_(std::move(make_config)) {}

  ~nats_server_process() { stop(); }

  nats_server_process(const nats_server_process&) = delete;
  nats_server_process& operator=(const nats_server_process&) = delete;

  /// Starts the server (on the port of the first start, if any) and waits
  /// until it accepts connections. False, with `error()` set, if it did not.
  bool start() {
    stop();
    auto config = dir_ + "/nats-server.conf";
    std::ofstream{config} << make_config_(port_);
    auto log = dir_ + "/nats-server.log";
    std::vector<std::string> args = {path_, "-c", config, "--ports_file_dir",
                                     dir_};
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (log_fd < 0) return fail("cannot open " + log);
    auto parent = ::getpid();
    pid_t pid = ::fork();
    if (pid == 0) {
      // Only async-signal-safe calls from here to exec.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(log_fd, 1);
      ::dup2(log_fd, 2);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(log_fd);
    if (pid < 0) return fail("fork failed");
    pid_ = pid;
    // Ready once it wrote its ports file, which it does once listening.
    auto ports = dir_ + "/nats-server_" + std::to_string(pid) + ".ports";
    for (int i = 0; i < 500; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return fail("nats-server exited at start; its log:\n" + log_text());
      }
      std::ifstream f{ports};
      std::stringstream text;
      text << f.rdbuf();
      auto doc = nlohmann::json::parse(text.str(), nullptr, false);
      if (!doc.is_discarded() && doc.contains("nats") &&
          doc["nats"].is_array() && !doc["nats"].empty()) {
        auto url = doc["nats"][0].get<std::string>();
        port_ = std::stoi(url.substr(url.rfind(':') + 1));
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    stop();
    return fail("nats-server not ready within 5 s; its log:\n" + log_text());
  }

  /// SIGINT, then SIGKILL if it has not gone after 5 s; waits for it.
  void stop() { end(SIGINT); }
  /// SIGKILL: the server dies without a word to its clients.
  void kill() { end(SIGKILL); }
  /// SIGSTOP / SIGCONT: the server hangs with its sockets open, and resumes.
  void pause() { signal(SIGSTOP); }
  void resume() { signal(SIGCONT); }

  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string url() const { return "tls://127.0.0.1:" + std::to_string(port_); }
  const std::string& error() const { return error_; }

  std::string log_text() const {
    std::ifstream f{dir_ + "/nats-server.log"};
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }

private:
  bool fail(std::string what) {
    error_ = std::move(what);
    return false;
  }

  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  void end(int sig) {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);
    ::kill(pid_, sig);
    for (int i = 0; i < 500; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  std::string dir_;
  std::function<std::string(int)> make_config_;
  std::string path_ = nats_server_path();
  pid_t pid_ = -1;
  int port_ = -1;
  std::string error_;
};

} // namespace georoute::testing
