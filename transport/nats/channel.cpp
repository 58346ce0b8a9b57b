#include "georoute/transport/nats/channel.hpp"

#include "georoute/transport/nats/nkey.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <mutex>
#include <nats/nats.h>
#include <pthread.h>
#include <system_error>
#include <thread>
#include <utility>

namespace georoute {

namespace detail {

struct nats_channel_state {
  nats_channel_options opts;
  nats_channel::message_handler on_message;
  nats_channel::status_handler on_status;

  // Made by open(), used and freed by the channel's thread.
  natsOptions* nopts = nullptr;
  natsConnection* nc = nullptr;
  natsSubscription* sub = nullptr;
  std::thread thread;

  // The publish queue.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<std::string, std::string>> queue;
  bool stop = false;
  bool hold = false;    // nats_channel_testing
  bool gave_up = false; // cnats closed the connection by itself

  // Status changes come from the channel's thread and cnats' callback
  // thread: one at a time, so that the flag and the reports agree.
  std::mutex status_mu;
  std::atomic<bool> connected{false};

  // What the teardown waits for: the subscription's last handler call
  // returned, and cnats ran the closed callback (its last one).
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool sub_complete = false;
  bool closed_seen = false;
  std::atomic<bool> was_up{false}; // this connection was up at some point

  std::atomic<uint64_t> published{0}, dropped_queue_full{0},
      dropped_not_connected{0}, publish_errors{0}, received{0},
      received_oversized{0}, dropped_slow_consumer{0}, disconnects{0},
      reconnects{0}, reopens{0}, permission_errors{0};

  ~nats_channel_state() {
    if (nopts != nullptr) natsOptions_Destroy(nopts);
  }

  void set_status(bool up, std::string what) {
    std::lock_guard<std::mutex> guard{status_mu};
    connected.store(up);
    if (up) was_up.store(true);
    if (on_status) on_status(up, std::move(what));
  }

  void mark_done(bool closed) {
    std::lock_guard<std::mutex> guard{done_mu};
    (closed ? closed_seen : sub_complete) = true;
    done_cv.notify_all();
  }
};

} // namespace detail

namespace {

using state = detail::nats_channel_state;

constexpr int reconnect_buffer = 4096; // 0 would be taken as is by 3.4.1

void count(std::atomic<uint64_t>& c) {
  c.fetch_add(1, std::memory_order_relaxed);
}

std::string status_text(natsStatus s) {
  std::string out = natsStatus_GetText(s);
  natsStatus last = NATS_OK;
  const char* detail = nats_GetLastError(&last);
  if (detail != nullptr && *detail != '\0' && out != detail) {
    out += " (";
    out += detail;
    out += ")";
  }
  return out;
}

std::string url_of(natsConnection* nc) {
  char buf[256] = {0};
  if (natsConnection_GetConnectedUrl(nc, buf, sizeof buf) != NATS_OK) return {};
  return buf;
}

std::string last_error_of(natsConnection* nc) {
  const char* text = nullptr;
  auto s = natsConnection_GetLastError(nc, &text);
  if (s == NATS_OK) return "no error";
  std::string out = natsStatus_GetText(s);
  if (text != nullptr && *text != '\0' && out != text)
    out += std::string{": "} + text;
  return out;
}

// -- cnats callbacks ----------------------------------------------------------
// noexcept: an exception must not unwind through cnats' C frames; a handler
// that throws ends the process, as a thread's uncaught exception would.

void on_message(natsConnection*, natsSubscription* sub, natsMsg* msg,
                void* closure) noexcept {
  auto* st = static_cast<state*>(closure);
  nats_inbound in;
  in.subject = natsMsg_GetSubject(msg);
  auto len = natsMsg_GetDataLength(msg);
  if (len < 0 || static_cast<size_t>(len) > st->opts.max_payload) {
    in.oversized = true;
    count(st->received_oversized);
  } else {
    in.payload.assign(natsMsg_GetData(msg), static_cast<size_t>(len));
  }
  natsMsg_Destroy(msg);
  count(st->received);
  // Here, unlike in the error callback, `sub` is alive.
  int64_t dropped = 0;
  if (natsSubscription_GetDropped(sub, &dropped) == NATS_OK && dropped >= 0)
    st->dropped_slow_consumer.store(static_cast<uint64_t>(dropped));
  if (st->on_message) st->on_message(std::move(in));
}

void on_sub_complete(void* closure) noexcept {
  static_cast<state*>(closure)->mark_done(false);
}

void on_connected(natsConnection* nc, void* closure) noexcept {
  static_cast<state*>(closure)->set_status(true, "connected to " + url_of(nc));
}

void on_reconnected(natsConnection* nc, void* closure) noexcept {
  auto* st = static_cast<state*>(closure);
  count(st->reconnects);
  st->set_status(true, "reconnected to " + url_of(nc));
}

void on_disconnected(natsConnection* nc, void* closure) noexcept {
  auto* st = static_cast<state*>(closure);
  count(st->disconnects);
  st->set_status(false, "disconnected: " + last_error_of(nc));
}

// Also when the channel closes the connection itself: then nobody waits
// for `gave_up` any more.
void on_closed(natsConnection* nc, void* closure) noexcept {
  auto* st = static_cast<state*>(closure);
  st->set_status(false, "closed: " + last_error_of(nc));
  {
    std::lock_guard<std::mutex> guard{st->mu};
    st->gave_up = true;
  }
  st->cv.notify_all();
  st->mark_done(true); // the last use of `st` by cnats
}

// The subscription argument is not looked at: 3.4.1 may pass one that was
// freed already.
void on_error(natsConnection*, natsSubscription*, natsStatus err,
              void* closure) noexcept {
  auto* st = static_cast<state*>(closure);
  if (err == NATS_NOT_PERMITTED) count(st->permission_errors);
}

// -- open ---------------------------------------------------------------------

std::optional<problem> readable(const char* field, const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::ifstream f{path};
  if (!f)
    return problem{std::string{"nats channel: "} + field + " " + path +
                   ": cannot be read"};
  return std::nullopt;
}

// The seed file holds the seed of `nkey_public`, in the shape cnats reads: a
// line that starts (after blanks) with "SU".
std::optional<problem> check_seed_file(const nats_channel_options& o) {
  if (o.nkey_seed_file.empty()) return std::nullopt;
  if (auto p = readable("nkey_seed_file", o.nkey_seed_file)) return p;
  std::ifstream f{o.nkey_seed_file};
  std::string line;
  while (std::getline(f, line)) {
    auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line.compare(b, 2, "SU") != 0) continue;
    // The rest of the line as cnats takes it (a trailing blank or CR would
    // make its decoding fail, so it fails here too).
    auto pair = user_nkey_from_seed(std::string_view{line}.substr(b));
    std::fill(line.begin(), line.end(), '\0');
    if (!pair)
      return problem{"nats channel: nkey_seed_file " + o.nkey_seed_file + ": " +
                     pair.error().what};
    if (pair->public_key != o.nkey_public)
      return problem{"nats channel: nkey_seed_file " + o.nkey_seed_file +
                     " holds the seed of another key than nkey_public " +
                     o.nkey_public};
    return std::nullopt;
  }
  return problem{"nats channel: nkey_seed_file " + o.nkey_seed_file +
                 ": no seed (a line starting with \"SU\")"};
}

// Every cnats option of the channel. On failure, a problem naming the first
// call that failed (the later ones are harmless on a valid options object).
std::optional<problem> make_nats_options(state& st) {
  const auto& o = st.opts;
  natsStatus s = natsOptions_Create(&st.nopts);
  if (s != NATS_OK)
    return problem{"nats channel: natsOptions_Create: " + status_text(s)};
  std::optional<problem> first;
  auto step = [&](const std::string& what, natsStatus r) {
    if (r != NATS_OK && !first)
      first = problem{"nats channel: " + what + ": " + status_text(r)};
  };
  std::vector<const char*> urls;
  for (const auto& u : o.servers)
    urls.push_back(u.c_str());
  auto* n = st.nopts;
  void* self = &st;
  step("servers",
       natsOptions_SetServers(n, urls.data(), static_cast<int>(urls.size())));
  if (!o.name.empty()) step("name", natsOptions_SetName(n, o.name.c_str()));
  step("no echo", natsOptions_SetNoEcho(n, true));
  step("reconnect", natsOptions_SetAllowReconnect(n, true));
  step("max reconnect", natsOptions_SetMaxReconnect(n, -1)); // for ever
  step("reconnect_wait",
       natsOptions_SetReconnectWait(n, o.reconnect_wait.count()));
  step("reconnect buffer",
       natsOptions_SetReconnectBufSize(n, reconnect_buffer));
  step("connect_timeout", natsOptions_SetTimeout(n, o.connect_timeout.count()));
  step("ping_interval",
       natsOptions_SetPingInterval(n, o.ping_interval.count()));
  step("max_pings_out", natsOptions_SetMaxPingsOut(n, o.max_pings_out));
  step("write_deadline",
       natsOptions_SetWriteDeadline(n, o.write_deadline.count()));
  step("pending_msgs", natsOptions_SetMaxPendingMsgs(n, o.pending_msgs));
  step("ignore discovered servers",
       natsOptions_SetIgnoreDiscoveredServers(n, true));
  // With a connected callback the first connect makes one pass over the
  // servers and then goes on in cnats' reconnect thread; without one it
  // would retry in the caller for ever.
  step("retry on failed connect",
       natsOptions_SetRetryOnFailedConnect(n, true, on_connected, self));
  step("error handler", natsOptions_SetErrorHandler(n, on_error, self));
  step("disconnected callback",
       natsOptions_SetDisconnectedCB(n, on_disconnected, self));
  step("reconnected callback",
       natsOptions_SetReconnectedCB(n, on_reconnected, self));
  step("closed callback", natsOptions_SetClosedCB(n, on_closed, self));
  if (!o.ca_file.empty()) {
    step("TLS", natsOptions_SetSecure(n, true));
    step("ca_file " + o.ca_file,
         natsOptions_LoadCATrustedCertificates(n, o.ca_file.c_str()));
    if (!o.cert_file.empty())
      step("cert_file " + o.cert_file + " / key_file " + o.key_file,
           natsOptions_LoadCertificatesChain(n, o.cert_file.c_str(),
                                             o.key_file.c_str()));
    if (!o.expected_hostname.empty())
      step("expected_hostname",
           natsOptions_SetExpectedHostname(n, o.expected_hostname.c_str()));
  }
  if (!o.nkey_public.empty())
    step("nkey", natsOptions_SetNKeyFromSeed(n, o.nkey_public.c_str(),
                                             o.nkey_seed_file.c_str()));
  return first;
}

// -- the channel's thread -----------------------------------------------------

constexpr std::chrono::milliseconds min_reopen_pause{10};
constexpr std::chrono::milliseconds max_reopen_pause{30000};

// Makes a connection (cnats goes on trying in the background) and its
// subscription. False when cnats refused at once (nothing to serve).
bool connect_and_subscribe(state& st) {
  {
    std::lock_guard<std::mutex> guard{st.mu};
    st.gave_up = false;
  }
  {
    std::lock_guard<std::mutex> guard{st.done_mu};
    st.sub_complete = false;
    st.closed_seen = false;
  }
  st.was_up.store(false);
  natsStatus s = natsConnection_Connect(&st.nc, st.nopts);
  if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED) {
    st.nc = nullptr;
    st.set_status(false, "connect failed: " + status_text(s));
    return false;
  }
  bool up_now = s == NATS_OK; // else cnats keeps trying, and on_connected says
  // The first attempt failed (refused, or timed out): said, so that nothing
  // waits for a connection that may be long in coming.
  if (!up_now)
    st.set_status(false, "not connected yet (" + status_text(s) +
                             "); trying again in the background");
  if (!st.opts.subscribe_subject.empty()) {
    auto r = natsConnection_Subscribe(
        &st.sub, st.nc, st.opts.subscribe_subject.c_str(), on_message, &st);
    if (r == NATS_OK) {
      natsSubscription_SetPendingLimits(st.sub, st.opts.pending_msgs,
                                        st.opts.pending_bytes);
      if (natsSubscription_SetOnCompleteCB(st.sub, on_sub_complete, &st) !=
          NATS_OK) {
        // Only a subscription that is closed already refuses the callback:
        // cnats gave up on its connection in the instant since it was made,
        // before a message could be delivered in practice, so there is no
        // last handler call to wait for.
        st.mark_done(false);
      }
    } else {
      st.sub = nullptr;
      st.set_status(false, "subscribe to " + st.opts.subscribe_subject +
                               " failed: " + status_text(r));
    }
  }
  if (!up_now) return true;
  // The server holds the subscription before the channel says it is up.
  if (st.sub != nullptr)
    natsConnection_FlushTimeout(st.nc, st.opts.connect_timeout.count());
  std::lock_guard<std::mutex> guard{st.status_mu};
  if (natsConnection_Status(st.nc) == NATS_CONN_STATUS_CONNECTED) {
    st.connected.store(true);
    st.was_up.store(true);
    if (st.on_status) st.on_status(true, "connected to " + url_of(st.nc));
  }
  return true;
}

void send(state& st, const std::string& subject, const std::string& payload) {
  // Nothing is left to cnats' reconnect buffer: sent now or dropped.
  if (natsConnection_Status(st.nc) != NATS_CONN_STATUS_CONNECTED) {
    count(st.dropped_not_connected);
    return;
  }
  auto s = natsConnection_Publish(st.nc, subject.c_str(), payload.data(),
                                  static_cast<int>(payload.size()));
  count(s == NATS_OK ? st.published : st.publish_errors);
}

// Sends what is queued until the channel is destroyed (true) or cnats gives
// up on the connection (false; what is queued then is dropped).
bool serve_queue(state& st) {
  for (;;) {
    std::unique_lock<std::mutex> lock{st.mu};
    st.cv.wait(lock, [&] {
      return st.stop || st.gave_up || (!st.hold && !st.queue.empty());
    });
    if (st.stop) return true; // what is still queued goes with the channel
    if (st.gave_up) {
      st.dropped_not_connected.fetch_add(st.queue.size(),
                                         std::memory_order_relaxed);
      st.queue.clear();
      return false;
    }
    auto msg = std::move(st.queue.front());
    st.queue.pop_front();
    lock.unlock();
    send(st, msg.first, msg.second);
  }
}

// Unsubscribe and wait for the handler's last call; close and wait for the
// closed callback (cnats' last call into this state); then free.
void teardown(state& st) {
  auto wait_for = [&st](auto done) {
    std::unique_lock<std::mutex> lock{st.done_mu};
    st.done_cv.wait(lock, done);
  };
  if (st.sub != nullptr && natsSubscription_Unsubscribe(st.sub) == NATS_OK)
    wait_for([&] { return st.sub_complete; });
  // Closing also ends a subscription that could not be unsubscribed (its
  // connection closed already).
  if (st.nc != nullptr) natsConnection_Close(st.nc);
  wait_for([&] {
    return (st.sub == nullptr || st.sub_complete) &&
           (st.nc == nullptr || st.closed_seen);
  });
  if (st.sub != nullptr) natsSubscription_Destroy(st.sub);
  if (st.nc != nullptr) natsConnection_Destroy(st.nc);
  st.sub = nullptr;
  st.nc = nullptr;
}

// False when the channel is destroyed meanwhile.
bool pause_unless_stopped(state& st, std::chrono::milliseconds pause) {
  std::unique_lock<std::mutex> lock{st.mu};
  return !st.cv.wait_for(lock, pause, [&] { return st.stop; });
}

// cnats 3.4.1 gives up on a connection for good when the first attempt
// reached a server but failed (credentials refused, no INFO from a hung
// server, a TLS failure), and after the same refusal twice in a row. It
// also leaves the signature out of 1 connect in 256 (its base64 encoder
// takes a leading zero byte for an empty input: fixed in 3.8.0), which the
// server refuses. So the channel makes a new connection after a pause that
// starts at `reconnect_wait` and doubles, up to 30 s, while new ones fail.
void run(state& st) {
  pthread_setname_np(pthread_self(), "georoute.nats");
  auto first_pause = std::max(st.opts.reconnect_wait, min_reopen_pause);
  auto pause = first_pause;
  for (;;) {
    bool stopping = connect_and_subscribe(st) && serve_queue(st);
    teardown(st);
    if (stopping) return;
    pause = st.was_up.load() ? first_pause : pause;
    if (!pause_unless_stopped(st, pause)) return;
    pause = std::min(2 * pause, max_reopen_pause);
    count(st.reopens);
  }
}

} // namespace

result<std::unique_ptr<nats_channel>>
nats_channel::open(nats_channel_options opts, message_handler on_message,
                   status_handler on_status) {
  if (auto p = opts.validate()) return *p;
  for (auto [field, path] : {std::pair{"ca_file", &opts.ca_file},
                             std::pair{"cert_file", &opts.cert_file},
                             std::pair{"key_file", &opts.key_file}})
    if (auto p = readable(field, *path)) return *p;
  if (auto p = check_seed_file(opts)) return *p;

  auto st = std::make_unique<state>();
  st->opts = std::move(opts);
  st->on_message = std::move(on_message);
  st->on_status = std::move(on_status);
  if (auto p = make_nats_options(*st)) return *p;
  try {
    st->thread = std::thread{run, std::ref(*st)};
  } catch (const std::system_error& e) {
    return problem{std::string{"nats channel: cannot start its thread: "} +
                   e.what()};
  }
  return std::unique_ptr<nats_channel>{new nats_channel{std::move(st)}};
}

nats_channel::nats_channel(std::unique_ptr<state> st) : st_(std::move(st)) {}

nats_channel::~nats_channel() {
  {
    std::lock_guard<std::mutex> guard{st_->mu};
    st_->stop = true;
  }
  st_->cv.notify_all();
  st_->thread.join();
}

bool nats_channel::publish(std::string subject, std::string payload) {
  auto& st = *st_;
  if (!st.connected.load()) {
    count(st.dropped_not_connected);
    return false;
  }
  {
    std::lock_guard<std::mutex> guard{st.mu};
    if (st.queue.size() >= st.opts.publish_queue) {
      count(st.dropped_queue_full);
      return false;
    }
    st.queue.emplace_back(std::move(subject), std::move(payload));
  }
  st.cv.notify_one();
  return true;
}

bool nats_channel::connected() const {
  return st_->connected.load();
}

nats_channel_counters nats_channel::counters() const {
  const auto& st = *st_;
  auto get = [](const std::atomic<uint64_t>& c) {
    return c.load(std::memory_order_relaxed);
  };
  nats_channel_counters c;
  c.published = get(st.published);
  c.dropped_queue_full = get(st.dropped_queue_full);
  c.dropped_not_connected = get(st.dropped_not_connected);
  c.publish_errors = get(st.publish_errors);
  c.received = get(st.received);
  c.received_oversized = get(st.received_oversized);
  c.dropped_slow_consumer = get(st.dropped_slow_consumer);
  c.disconnects = get(st.disconnects);
  c.reconnects = get(st.reconnects);
  c.reopens = get(st.reopens);
  c.permission_errors = get(st.permission_errors);
  return c;
}

void nats_channel_testing::hold_publisher(nats_channel& ch, bool hold) {
  {
    std::lock_guard<std::mutex> guard{ch.st_->mu};
    ch.st_->hold = hold;
  }
  ch.st_->cv.notify_all();
}

} // namespace georoute
