#pragma once

// The HTTP/1.1 client behind http_client's pimpl: one `client_core`
// (io_context, io threads, TLS context, one pool per endpoint) and one
// `connection<Tls>` object per socket (connection.hpp), in the style of the
// Beast async-ssl client example: one handler per async step, a strand per
// connection, `if (ec) return fail(ec)` first, a deadline before every step.
// The core's requests and pools are in pool.cpp, its two ways of shutting
// down in shutdown.cpp.
//
// Lifetimes. Every async handler holds a shared_ptr to its connection; the
// core outlives all of them because its destructor drains the io_context
// before any member goes away. A job (one request attempt) is owned by the
// pool queue or by exactly one connection at a time, and `complete()` is
// guarded by an atomic flag, so a callback runs at most once; shutdown
// completes whatever is left, so it runs at least once.
//
// Threads. Pool bookkeeping (idle lists, queues, slot counts) is under
// `mtx_`; socket state is touched only on the connection's strand.
// Callbacks never run with a lock held.

#include "georoute/transport/http1/errors.hpp"
#include "georoute/transport/http_client.hpp"
#include "georoute/transport/io_loop.hpp"
#include "georoute/transport/outcome.hpp"
#include "georoute/transport/url.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace georoute::transport::http1 {

/// One request attempt, from send() to its single completion.
struct job {
  request req;
  http_client::callback cb;
  steady::time_point deadline;
  // The attempt's timeline (outcome::queued_us and the rest); a phase not
  // reached stays at the epoch. Touched by the owner of the job only.
  steady::time_point created;
  steady::time_point started;   // a connection took it
  steady::time_point connected; // a fresh connection got connected
  steady::time_point written;   // the request was written
  std::atomic<bool> done{false};
  // Guarded by client_core::mtx_.
  bool queued = false;
  std::unique_ptr<net::steady_timer> queue_timer;
  // Touched only by the connection that currently owns the job.
  bool retried = false;
};

using job_ptr = std::shared_ptr<job>;

/// Fills `o`'s timeline from `j`'s, as of now (its completion).
void note_timeline(const job& j, outcome& o);

class connection_base;
using connection_ptr = std::shared_ptr<connection_base>;

/// The connections of one endpoint key (scheme, host, port). All mutable
/// fields are guarded by client_core::mtx_; `u` and `authority` never change.
struct endpoint_pool {
  url u;
  std::string authority;   ///< "host:port" for error texts
  std::string host_header; ///< the Host header's value
  size_t open = 0;         ///< connections alive or being established
  std::vector<connection_ptr> idle;
  std::deque<job_ptr> waiting;
};

using pool_ptr = std::shared_ptr<endpoint_pool>;

class client_core;

/// What the pool needs from a connection, whatever its stream type.
class connection_base : public std::enable_shared_from_this<connection_base> {
public:
  connection_base(std::shared_ptr<client_core> core, pool_ptr pool);
  virtual ~connection_base();

  connection_base(const connection_base&) = delete;
  connection_base& operator=(const connection_base&) = delete;

  /// Runs `j` on this connection: posted to its strand, or in loop mode
  /// run right here when called on the loop thread. Never under a lock.
  virtual void start(job_ptr j) = 0;

  /// Closes the socket so that a pending step fails with "client shut down".
  virtual void abort() = 0;

  /// The same, at once: loop mode, on the loop's driver thread only.
  virtual void abort_now() = 0;

  const pool_ptr& pool() const { return pool_; }

protected:
  // Shared: in loop mode the core outlives `http_client` until the last
  // aborted handler of its connections has run on the loop.
  std::shared_ptr<client_core> core_;
  pool_ptr pool_;
  /// Numbered from 1 per client, for diagnostics (`outcome::connection`).
  uint64_t id_;
};

/// What one http_client is made of: options, TLS context, io threads (or
/// a loop), one pool per endpoint, the jobs in flight. See the file comment.
class client_core : public std::enable_shared_from_this<client_core> {
public:
  explicit client_core(http_client_options opts);
  ~client_core() { shutdown(); }

  client_core(const client_core&) = delete;
  client_core& operator=(const client_core&) = delete;

  void send(request req, http_client::callback cb);
  void shutdown();

  http_client_stats stats() const {
    return {requests_.load(),     opened_.load(), reused_.load(),
            stale_unsent_.load(), resent_.load(), resend_refused_.load()};
  }
  const std::string& tls_setup_error() const { return tls_error_; }

  // The connection side.
  const http_client_options& options() const { return opts_; }
  ssl::context& tls_context() { return tls_ctx_; }
  net::io_context& io() { return *ioc_; }
  /// Runs on an external io_loop, without threads of its own.
  bool loop_mode() const { return loop_ != nullptr; }
  /// Loop mode, on the loop thread, not inside another inline start: a
  /// connection may start its job right away instead of posting it.
  bool may_start_inline() const {
    return loop_ && inline_starts_ == 0 && loop_->on_loop_thread();
  }
  /// Counts inline starts in progress (loop thread only): a start that
  /// fails at once and hands the slot to the next queued job would
  /// otherwise recurse once per queued job.
  struct inline_start_scope {
    explicit inline_start_scope(client_core& c) : core(c) {
      ++core.inline_starts_;
    }
    ~inline_start_scope() { --core.inline_starts_; }
    client_core& core;
  };
  bool stopping() const { return stopping_flag_.load(); }
  void count_opened() { ++opened_; }
  void count_reused() { ++reused_; }
  uint64_t next_connection_id() { return ++connection_ids_; }
  void count_stale_unsent() { ++stale_unsent_; }
  void count_resent() { ++resent_; }
  void count_resend_refused() { ++resend_refused_; }

  /// Calls the job's callback unless it already ran. Never under a lock.
  void complete(const job_ptr& j, outcome o);

  /// A connection finished its job; a reusable one takes the next queued job
  /// or goes idle, a dead one gives its slot back (or to the next job).
  void release(const connection_ptr& c, bool reusable);

  /// A kept-alive socket was dead: run `j` (again, or for the first time)
  /// on a fresh connection that inherits the dead connection's slot.
  void retry(const connection_ptr& dead, job_ptr j);

  /// Live connections (loop mode: what a driverless shutdown waits for).
  size_t live_connections() {
    std::lock_guard<std::mutex> guard{conns_mtx_};
    return live_conns_.size();
  }

  void forget(const connection_base* c) {
    std::lock_guard<std::mutex> guard{conns_mtx_};
    live_conns_.erase(c);
  }

private:
  void post_complete(const job_ptr& j, outcome o) {
    net::post(*ioc_,
              [self = shared_from_this(), j, o = std::move(o)]() mutable {
                self->complete(j, std::move(o));
              });
  }
  void send_now(request req, http_client::callback cb);
  void shutdown_threads();
  void shutdown_on_loop();
  void stop_step();
  connection_ptr make_connection_locked(const pool_ptr& p);
  /// The connection that is to run `j` (started by the caller once the lock
  /// is released), or null when `j` waits in the pool's queue.
  connection_ptr dispatch_locked(const pool_ptr& p, const job_ptr& j);
  static job_ptr pop_waiting_locked(endpoint_pool& p);
  void on_queue_timeout(const pool_ptr& p, const job_ptr& j);

  // Member order is destruction order, reversed: containers holding sockets
  // or timers go before ioc_, what connection destructors touch after it.
  http_client_options opts_;
  std::string tls_error_;
  ssl::context tls_ctx_{ssl::context::tls_client};
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> opened_{0};
  std::atomic<uint64_t> reused_{0};
  std::atomic<uint64_t> connection_ids_{0};
  std::atomic<uint64_t> stale_unsent_{0};
  std::atomic<uint64_t> resent_{0};
  std::atomic<uint64_t> resend_refused_{0};
  std::atomic<bool> stopping_flag_{false};
  std::mutex conns_mtx_;
  std::unordered_map<const connection_base*, std::weak_ptr<connection_base>>
      live_conns_;
  // Loop mode: the loop whose io_context this is (it outlives the core).
  // Thread mode: the core's own io_context.
  io_loop_ptr loop_;
  std::optional<net::io_context> own_ioc_;
  net::io_context* ioc_ = nullptr;
  int inline_starts_ = 0; // loop thread only
  std::mutex mtx_;
  bool stopping_ = false;
  std::map<std::string, pool_ptr> pools_;
  std::unordered_map<std::string, pool_ptr> pools_by_endpoint_;
  std::mutex jobs_mtx_;
  std::unordered_map<const job*, job_ptr> live_jobs_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>>
      guard_;
  std::vector<std::thread> threads_;
  bool shut_ = false;
  // Loop mode: the shutdown step (stop_step) ran.
  std::mutex step_mtx_;
  std::condition_variable step_cv_;
  bool step_started_ = false;
  bool step_done_ = false;
};

} // namespace georoute::transport::http1
