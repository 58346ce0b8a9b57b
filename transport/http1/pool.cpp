// client_core: its setup, and a request's way from send() through the
// endpoint's pool to its one completion.

#include "georoute/transport/http1/pool.hpp"

#include "georoute/transport/http1/connection.hpp"
#include "georoute/transport/http1/response.hpp"
#include "georoute/transport/io_loop_asio.hpp"
#include "georoute/transport/request_checks.hpp"
#include "georoute/transport/url.hpp"

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <variant>

namespace georoute::transport::http1 {

using request_checks::authority_of;
using request_checks::request_problem;

client_core::client_core(http_client_options opts)
    : opts_(std::move(opts)), loop_(std::move(opts_.loop)) {
  opts_.loop = nullptr;
  if (loop_)
    ioc_ = &io_context_of(*loop_);
  else
    ioc_ = &own_ioc_.emplace();
  opts_.max_connections_per_endpoint =
      std::max<size_t>(1, opts_.max_connections_per_endpoint);
  opts_.io_threads = std::max<size_t>(1, opts_.io_threads);
  error_code ec;
  tls_ctx_.set_options(ssl::context::default_workarounds |
                           ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                           ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                       ec);
  tls_ctx_.set_verify_mode(ssl::verify_peer, ec);
  if (ec) tls_error_ = "cannot enable TLS peer verification: " + ec.message();
  if (!opts_.tls_ca_file.empty()) {
    tls_ctx_.load_verify_file(opts_.tls_ca_file, ec);
    if (ec) {
      std::error_code fs_ec;
      bool exists = std::filesystem::is_regular_file(opts_.tls_ca_file, fs_ec);
      tls_error_ = "cannot load TLS CA file '" + opts_.tls_ca_file + "': " +
                   (exists ? "no PEM certificate in it (" + ec.message() + ")"
                           : std::string{"no such file"}) +
                   "; check tls_ca_file";
    }
  } else {
    tls_ctx_.set_default_verify_paths(ec);
    if (ec)
      tls_error_ = "cannot load the system's TLS CA paths: " + ec.message();
  }
  if (loop_) return; // the loop's driver runs the handlers
  guard_.emplace(net::make_work_guard(*ioc_));
  for (size_t i = 0; i < opts_.io_threads; ++i)
    threads_.emplace_back([this] {
      for (;;) {
        try {
          ioc_->run();
          return;
        } catch (...) { // handlers are guarded; keep the thread alive anyway
        }
      }
    });
}

void client_core::send(request req, http_client::callback cb) {
  if (loop_ && !loop_->on_loop_thread()) {
    // Loop mode, another thread: the pool and the sockets belong to the
    // loop thread.
    net::post(*ioc_, [self = shared_from_this(), req = std::move(req),
                      cb = std::move(cb)]() mutable {
      self->send_now(std::move(req), std::move(cb));
    });
    return;
  }
  send_now(std::move(req), std::move(cb));
}

void client_core::send_now(request req, http_client::callback cb) {
  ++requests_;
  auto j = std::make_shared<job>();
  j->created = steady::now();
  j->deadline = j->created + req.timeout;
  j->req = std::move(req);
  j->cb = std::move(cb);
  {
    std::lock_guard<std::mutex> guard{jobs_mtx_};
    live_jobs_.emplace(j.get(), j);
  }
  if (auto problem = request_problem(j->req); !problem.empty())
    return post_complete(
        j, failed(failure::protocol, "request not sent: " + problem));
  std::unique_lock<std::mutex> lock{mtx_};
  if (stopping_) {
    lock.unlock();
    return complete(j, failed(failure::reset, shut_down_text));
  }
  // The endpoint strings seen so far map straight to their pools: the URL
  // is parsed once per endpoint, not once per request.
  pool_ptr p;
  if (auto known = pools_by_endpoint_.find(j->req.endpoint);
      known != pools_by_endpoint_.end()) {
    p = known->second;
  } else {
    lock.unlock();
    auto parsed = parse_url(j->req.endpoint);
    if (auto* err = std::get_if<std::string>(&parsed))
      return post_complete(
          j, failed(failure::protocol,
                    "bad endpoint '" + j->req.endpoint + "': " + *err));
    auto& u = std::get<url>(parsed);
    lock.lock();
    if (stopping_) {
      lock.unlock();
      return complete(j, failed(failure::reset, shut_down_text));
    }
    auto& slot = pools_[endpoint_key(u)];
    if (!slot) {
      slot = std::make_shared<endpoint_pool>();
      slot->u = u;
      slot->authority = authority_of(u);
      slot->host_header = u.host_header();
    }
    p = slot;
    // Bounded: spellings of endpoints are few in practice, but a caller
    // could invent them without end.
    if (pools_by_endpoint_.size() < 4096)
      pools_by_endpoint_.emplace(j->req.endpoint, p);
  }
  if (p->u.tls() && !tls_error_.empty()) {
    lock.unlock();
    return post_complete(j, failed(failure::tls, tls_error_));
  }
  auto c = dispatch_locked(p, j);
  lock.unlock();
  if (c) c->start(j);
}

connection_ptr client_core::dispatch_locked(const pool_ptr& p,
                                            const job_ptr& j) {
  if (!p->idle.empty()) {
    auto c = std::move(p->idle.back());
    p->idle.pop_back();
    return c;
  }
  if (p->open < opts_.max_connections_per_endpoint) {
    ++p->open;
    return make_connection_locked(p);
  }
  {
    // All connections busy: wait in FIFO order, but not past the deadline.
    j->queued = true;
    p->waiting.push_back(j);
    j->queue_timer = std::make_unique<net::steady_timer>(*ioc_, j->deadline);
    j->queue_timer->async_wait([self = shared_from_this(), p, j](error_code) {
      self->on_queue_timeout(p, j);
    });
  }
  return nullptr;
}

void client_core::on_queue_timeout(const pool_ptr& p, const job_ptr& j) {
  size_t busy = 0;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!j->queued) return; // a connection took it (or shutdown did)
    j->queued = false;
    auto& w = p->waiting;
    w.erase(std::remove(w.begin(), w.end(), j), w.end());
    busy = p->open;
  }
  complete(j, failed(failure::timeout,
                     "no free connection to " + p->authority + " within " +
                         std::to_string(j->req.timeout.count()) + " ms (" +
                         std::to_string(busy) + " busy)"));
}

job_ptr client_core::pop_waiting_locked(endpoint_pool& p) {
  while (!p.waiting.empty()) {
    auto j = std::move(p.waiting.front());
    p.waiting.pop_front();
    if (!j->queued) continue;
    j->queued = false;
    if (j->queue_timer) {
      try {
        j->queue_timer->cancel();
      } catch (...) { // the handler checks `queued` anyway
      }
    }
    return j;
  }
  return nullptr;
}

connection_ptr client_core::make_connection_locked(const pool_ptr& p) {
  connection_ptr c;
  if (p->u.tls())
    c = std::make_shared<connection<true>>(shared_from_this(), p);
  else
    c = std::make_shared<connection<false>>(shared_from_this(), p);
  std::lock_guard<std::mutex> guard{conns_mtx_};
  live_conns_.emplace(c.get(), c);
  return c;
}

void client_core::release(const connection_ptr& c, bool reusable) {
  connection_ptr runner;
  job_ptr next;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    const auto& p = c->pool();
    if (stopping_) {
      // Shutdown aborts every live connection; only the count matters.
      --p->open;
      return;
    }
    next = pop_waiting_locked(*p);
    if (reusable) {
      if (next)
        runner = c;
      else
        p->idle.push_back(c);
    } else {
      --p->open;
      if (next) {
        ++p->open;
        runner = make_connection_locked(p);
      }
    }
  }
  if (runner) runner->start(std::move(next));
}

void client_core::retry(const connection_ptr& dead, job_ptr j) {
  connection_ptr fresh;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (!stopping_)
      fresh = make_connection_locked(dead->pool());
    else
      --dead->pool()->open;
  }
  if (fresh) return fresh->start(std::move(j));
  complete(j, failed(failure::reset, shut_down_text));
}

namespace {

int64_t micros_between(steady::time_point from, steady::time_point to) {
  return std::chrono::duration_cast<std::chrono::microseconds>(to - from)
      .count();
}

} // namespace

void note_timeline(const job& j, outcome& o) {
  const steady::time_point none{};
  auto now = steady::now();
  if (j.started == none) {
    o.queued_us = micros_between(j.created, now); // never left the queue
    return;
  }
  o.queued_us = micros_between(j.created, j.started);
  auto ready = j.connected == none ? j.started : j.connected;
  if (j.connected != none)
    o.connect_us = micros_between(j.started, j.connected);
  else if (o.connection_served > 0)
    o.connect_us = 0; // a kept-alive connection
  if (j.written == none) return;
  o.write_us = micros_between(ready, j.written);
  o.wait_us = micros_between(j.written, now);
}

void client_core::complete(const job_ptr& j, outcome o) {
  if (j->done.exchange(true)) return;
  job_ptr registered;
  {
    std::lock_guard<std::mutex> guard{jobs_mtx_};
    auto i = live_jobs_.find(j.get());
    if (i != live_jobs_.end()) {
      registered = std::move(i->second);
      live_jobs_.erase(i);
    }
  }
  o.endpoint = j->req.endpoint;
  note_timeline(*j, o);
  auto cb = std::move(j->cb);
  if (!cb) return;
  try {
    cb(std::move(o));
  } catch (...) { // a throwing callback must not take the io thread down
  }
}

} // namespace georoute::transport::http1
