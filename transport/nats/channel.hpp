#pragma once

// One NATS connection with at most one subscription, for the fleet's
// region-health reports (cnats 3.4). Built so that NATS can never hold up
// the process that uses it:
//
//   - open() returns at once: it checks the options and the files they
//     name, and a thread of the channel makes the connection, in the
//     background and again and again while the server is away. Where
//     cnats gives up on a connection (it does, see run() in channel.cpp),
//     the channel makes a new one after a pause (`reconnect_wait`,
//     doubling up to 30 s while new ones fail too).
//   - publish() never blocks: it hands the message to that thread through a
//     queue of `publish_queue` messages. When the channel is not connected,
//     or the queue is full, the message is dropped (the newest one) and
//     counted. The thread drops too when the connection is not up by the
//     time it gets to a message: nothing is kept to be sent after a
//     reconnect, a late health report being worse than none.
//   - Inbound messages run `message_handler` on cnats' delivery thread, one
//     at a time. A payload over `max_payload` is not copied, only flagged.
//     The subscription holds at most `pending_msgs` / `pending_bytes` for a
//     handler that lags; what comes on top is dropped by cnats and counted.
//   - A server that hangs (TCP open, nothing answers) is found out by the
//     client's pings (`ping_interval` x `max_pings_out`); writes to it give
//     up after `write_deadline`.
//
// Threads: the channel's own ("georoute.nats": connect, publish, close),
// plus cnats' read loop, flusher and reconnect threads (made by the
// channel's thread, they carry its name too), the subscription's delivery
// thread, and the library's callback thread (status changes, errors). No
// cnats call is made on the caller's thread, except in the destructor,
// which joins the channel's thread after it closed everything.
//
// cnats 3.4.1 defects this works around: the subscription is made once and
// destroyed only after the connection is closed (destroying it while a
// message arrives could crash); the error callback never touches its
// subscription argument (it could be freed already).
//
// Library teardown: none. cnats starts global threads with the first
// channel, and they stay until the process exits; nats_CloseAndWait() is
// never called. With cnats 3.4.1 on OpenSSL 3 it makes a process that used
// TLS crash at exit (cnats' final cleanup frees OpenSSL's list of
// compression methods, which OpenSSL's own exit handler frees again); left
// open, cnats skips that cleanup. Opening the first channel also makes
// cnats ignore SIGPIPE for the whole process.

#include "georoute/actors/policy/result.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace georoute {

namespace detail {
struct nats_channel_state;
} // namespace detail

struct nats_channel_options {
  /// Server URLs, "tls://127.0.0.1:4222" or "nats://..."; required. Servers
  /// that a cluster announces are not added: list them all here.
  std::vector<std::string> servers;
  /// The connection's name as the server shows it, e.g. "georoute/p01".
  std::string name;
  /// NKey authentication: the user's public key "U..." and the file that
  /// holds its seed "SU..." (nkey.hpp). Both or neither.
  std::string nkey_public;
  std::string nkey_seed_file;
  /// TLS is on when this trust anchor is set (required for tls:// URLs);
  /// the server's certificate is always verified.
  std::string ca_file;
  /// A client certificate and its key (mutual TLS); both or neither.
  std::string cert_file;
  std::string key_file;
  /// A DNS name the server's certificate must carry; empty: the chain alone
  /// is checked.
  std::string expected_hostname;
  /// The subscription, e.g. "georoute.h1.<fleet>.<acct>.>"; empty: none.
  std::string subscribe_subject;
  /// Messages waiting for the channel's thread; a full queue drops the
  /// newest.
  std::size_t publish_queue = 64;
  /// One connect attempt (TCP, TLS, the first PING/PONG).
  std::chrono::milliseconds connect_timeout{1000};
  /// Client pings; `max_pings_out` unanswered ones end the connection.
  std::chrono::milliseconds ping_interval{2000};
  /// Between two rounds of reconnect attempts (cnats adds a jitter).
  std::chrono::milliseconds reconnect_wait{1000};
  /// How long a write may wait on a full socket.
  std::chrono::milliseconds write_deadline{500};
  int max_pings_out = 2;
  /// What the subscription may hold for a lagging handler.
  int pending_msgs = 1024;
  int pending_bytes = 1 << 20;
  /// Larger inbound payloads are flagged `oversized`, not copied.
  std::size_t max_payload = 1024;

  /// Nothing when the options are usable, else a problem naming the field.
  /// Checks values only; open() checks the files too.
  std::optional<problem> validate() const;
};

/// One inbound message.
struct nats_inbound {
  std::string subject;
  std::string payload;    ///< empty when `oversized`
  bool oversized = false; ///< the payload was over `max_payload`
};

/// What the channel did, since it opened.
struct nats_channel_counters {
  uint64_t published = 0;             ///< handed to the connection
  uint64_t dropped_queue_full = 0;    ///< publish(): queue full
  uint64_t dropped_not_connected = 0; ///< not connected, at publish() or later
  uint64_t publish_errors = 0;        ///< refused by cnats (e.g. too large)
  uint64_t received = 0;              ///< delivered to the handler, all sizes
  uint64_t received_oversized = 0;    ///< of which over `max_payload`
  uint64_t dropped_slow_consumer = 0; ///< inbound dropped over the pending
                                      ///< limits (as of the last delivery)
  uint64_t disconnects = 0;           ///< connection lost
  uint64_t reconnects = 0;            ///< connection back
  uint64_t reopens = 0;               ///< new connections after cnats gave up
  uint64_t permission_errors = 0;     ///< publishes the server refused
};

class nats_channel {
public:
  /// Runs on a cnats delivery thread, one message at a time. Must not block
  /// nor throw (an exception ends the process): the owner typically
  /// `anon_send`s the message to an actor.
  using message_handler = std::function<void(nats_inbound)>;
  /// Runs on a cnats thread (or the channel's) at each change: connected or
  /// not, and what happened ("connected to tls://...", "disconnected: ...",
  /// "closed: ..."), and once when a connection's first attempt failed and
  /// cnats goes on trying ("not connected yet ..."). Must not block nor
  /// throw. After "closed" (cnats gave up on the connection) the channel
  /// makes a new one after a pause.
  using status_handler = std::function<void(bool connected, std::string what)>;

  /// Returns at once; the channel connects in the background. A problem
  /// names a bad option or a file that cannot be read.
  static result<std::unique_ptr<nats_channel>> open(nats_channel_options opts,
                                                    message_handler on_message,
                                                    status_handler on_status);

  /// Never blocks. False (and counted) when not connected or when the queue
  /// is full; true when queued, which does not mean sent.
  bool publish(std::string subject, std::string payload);

  /// Whether the connection is up (as of the last status change).
  bool connected() const;

  nats_channel_counters counters() const;

  /// Unsubscribes (waiting for the handler's last call), closes and frees
  /// the connection, and joins the channel's thread. Blocks for that: never
  /// call it from a cnats thread (a handler).
  ~nats_channel();

  nats_channel(const nats_channel&) = delete;
  nats_channel& operator=(const nats_channel&) = delete;

private:
  explicit nats_channel(std::unique_ptr<detail::nats_channel_state> st);

  friend struct nats_channel_testing;

  std::unique_ptr<detail::nats_channel_state> st_;
};

/// For tests only: holds the channel's thread before it takes the next
/// message off the queue, so that a test can fill the queue.
struct nats_channel_testing {
  static void hold_publisher(nats_channel& ch, bool hold);
};

} // namespace georoute
