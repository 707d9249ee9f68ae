// qs_delay_line: holds each packet of one or more nfqueues for a fixed delay, then
// accepts it, in order; optionally drops packets with a probability. The lab's netem
// replacement (this kernel has no netem). See lab/README.md for how the lab wires it and
// for its measured accuracy.
//
//   qs_delay_line --queue 1:20ms --queue 2:5ms:0.01 [--max-held N] [--fail-open]
//
// Semantics worth knowing:
//  - Packets are held in the kernel (no verdict yet); only their ids are copied to us
//    (NFQNL_COPY_META), so the cost per packet does not grow with its size. GSO packets
//    stay whole (NFQA_CFG_F_GSO).
//  - Bounded: at most --max-held packets per queue are held, in the kernel
//    (NFQA_CFG_QUEUE_MAXLEN) and here. When a queue is full the kernel drops new packets
//    (as netem's limit does) or, with --fail-open, lets them pass undelayed.
//  - Releases are batch verdicts (NFQNL_MSG_VERDICT_BATCH: every id up to N). A queue
//    message lost to ENOBUFS (counted, not fatal) is therefore released with the next
//    due packet of its queue instead of being held forever.
//  - The nft rules that feed it use `bypass`: with no delay line, packets pass undelayed.
//  - On SIGTERM/SIGINT every held packet is accepted before exit (closing the socket
//    would make the kernel drop them).
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>

#include <libmnl/libmnl.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "lab/delay_queue.hpp"
#include "net/clock.hpp"

namespace quicstep::lab {
namespace {

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Options {
  std::vector<std::string> queue_specs;
  std::size_t max_held = 20000;
  bool fail_open = false;
  std::uint64_t seed = 0;  // 0: random
  std::string stats_file;
  int rcvbuf = 8 << 20;
  int rt_priority = 0;  // SCHED_FIFO priority; 0: normal scheduling
};

// The nfqueue netlink socket: bind, receive packet ids, send verdicts. RAII.
class NfqSocket {
 public:
  using Opened = common::Result<std::unique_ptr<NfqSocket>, common::Failure>;
  // Failures: the socket's or the bind's errno text.
  static Opened open(int rcvbuf) {
    std::unique_ptr<NfqSocket> s(new NfqSocket(mnl_socket_open(NETLINK_NETFILTER)));
    if (s->nl_ == nullptr) {
      return common::Failure(std::string("mnl_socket_open: ") + strerror(errno));
    }
    if (mnl_socket_bind(s->nl_, 0, MNL_SOCKET_AUTOPID) < 0) {
      return common::Failure(std::string("mnl_socket_bind: ") + strerror(errno));
    }
    s->portid_ = mnl_socket_get_portid(s->nl_);
    // A large receive buffer makes ENOBUFS rare under bursts; FORCE needs CAP_NET_ADMIN.
    if (setsockopt(s->fd(), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) < 0) {
      setsockopt(s->fd(), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    return s;
  }
  ~NfqSocket() {
    if (nl_ != nullptr) mnl_socket_close(nl_);
  }
  NfqSocket(const NfqSocket&) = delete;
  NfqSocket& operator=(const NfqSocket&) = delete;

  int fd() const { return mnl_socket_get_fd(nl_); }

  // Failures: the kernel refusing the bind or the configuration (its errno text).
  common::Outcome bind_queue(std::uint16_t queue, std::uint32_t max_len, bool fail_open) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
    nlmsghdr* nlh = nfq_nlmsg_put(buf.data(), NFQNL_MSG_CONFIG, queue);
    nfq_nlmsg_cfg_put_cmd(nlh, AF_INET, NFQNL_CFG_CMD_BIND);
    if (auto bound = request(nlh, "bind queue " + std::to_string(queue)); !bound) return bound;

    nlh = nfq_nlmsg_put(buf.data(), NFQNL_MSG_CONFIG, queue);
    nfq_nlmsg_cfg_put_params(nlh, NFQNL_COPY_META, 0);
    std::uint32_t flags = NFQA_CFG_F_GSO | (fail_open ? NFQA_CFG_F_FAIL_OPEN : 0);
    mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(flags));
    mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_GSO | NFQA_CFG_F_FAIL_OPEN));
    mnl_attr_put_u32(nlh, NFQA_CFG_QUEUE_MAXLEN, htonl(max_len));
    return request(nlh, "configure queue " + std::to_string(queue));
  }

  // verdict for one packet (drops), or for every packet up to id (batch releases)
  bool verdict(std::uint16_t queue, std::uint32_t id, int verdict, bool batch) {
    char buf[256];
    nlmsghdr* nlh = nfq_nlmsg_put(buf, batch ? NFQNL_MSG_VERDICT_BATCH : NFQNL_MSG_VERDICT, queue);
    nfq_nlmsg_verdict_put(nlh, static_cast<int>(id), verdict);
    return mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) >= 0;
  }

  // Reads one datagram without blocking; returns bytes, 0 when none is waiting, -1 on
  // error (errno set; ENOBUFS means queue messages were lost).
  ssize_t receive(std::vector<char>& buf) {
    ssize_t n = recv(fd(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return n;
  }

  std::uint32_t portid() const { return portid_; }

 private:
  explicit NfqSocket(mnl_socket* nl) : nl_(nl) {}

  common::Outcome request(nlmsghdr* nlh, const std::string& what) {
    nlh->nlmsg_flags |= NLM_F_ACK;
    nlh->nlmsg_seq = ++seq_;
    if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) {
      return common::Failure(what + ": " + strerror(errno));
    }
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
    ssize_t n = mnl_socket_recvfrom(nl_, buf.data(), buf.size());
    if (n < 0 || mnl_cb_run(buf.data(), n, seq_, portid_, nullptr, nullptr) < 0) {
      return common::Failure(what + ": " + strerror(errno));
    }
    return {};
  }

  mnl_socket* nl_;
  std::uint32_t portid_ = 0;
  std::uint32_t seq_ = 0;
};

struct Runtime {
  DelayQueue& dq;
  NfqSocket& sock;
  std::mt19937_64 rng;
  std::uniform_real_distribution<double> coin{0.0, 1.0};
  Timestamp now{};
  std::uint64_t enobufs = 0;
  std::uint64_t send_errors = 0;
  std::uint64_t bad_messages = 0;
};

int on_packet(const nlmsghdr* nlh, void* data) {
  auto& rt = *static_cast<Runtime*>(data);
  nlattr* attr[NFQA_MAX + 1] = {};
  if (nfq_nlmsg_parse(nlh, attr) < 0 || attr[NFQA_PACKET_HDR] == nullptr) {
    ++rt.bad_messages;
    return MNL_CB_OK;
  }
  const auto* ph = static_cast<const nfqnl_msg_packet_hdr*>(mnl_attr_get_payload(attr[NFQA_PACKET_HDR]));
  const auto* nfg = static_cast<const nfgenmsg*>(mnl_nlmsg_get_payload(nlh));
  std::uint32_t id = ntohl(ph->packet_id);
  std::uint16_t queue = ntohs(nfg->res_id);
  switch (rt.dq.admit(queue, id, rt.now, rt.coin(rt.rng))) {
    case Admission::hold:
      break;
    case Admission::drop_lost:
    case Admission::drop_full:
      if (!rt.sock.verdict(queue, id, NF_DROP, false)) ++rt.send_errors;
      break;
  }
  return MNL_CB_OK;
}

void release(Runtime& rt, Timestamp now) {
  for (const auto& r : rt.dq.release_due(now))
    if (!rt.sock.verdict(r.queue, r.last_id, NF_ACCEPT, true)) ++rt.send_errors;
}

void write_stats(const Runtime& rt, const std::string& file) {
  if (file.empty()) return;
  std::ofstream out(file + ".tmp");
  out << "{\"enobufs\": " << rt.enobufs << ", \"send_errors\": " << rt.send_errors
      << ", \"bad_messages\": " << rt.bad_messages << ", \"queues\": [";
  for (std::size_t i = 0; i < rt.dq.queue_count(); ++i) {
    const auto& c = rt.dq.config(i);
    const auto& s = rt.dq.stats(i);
    out << (i ? ", " : "") << "{\"queue\": " << c.queue << ", \"delay_ns\": " << c.delay.count()
        << ", \"loss\": " << c.loss << ", \"held\": " << s.held << ", \"released\": " << s.released
        << ", \"lost\": " << s.lost << ", \"overflow\": " << s.overflow
        << ", \"batches\": " << s.batches << ", \"max_depth\": " << s.max_depth << "}";
  }
  out << "]}\n";
  out.close();
  std::rename((file + ".tmp").c_str(), file.c_str());
}

// Parses every --queue spec; refuses duplicates. Returns false after printing the error.
bool parse_queues(const std::vector<std::string>& specs, std::vector<QueueConfig>& out) {
  for (const auto& spec : specs) {
    auto parsed = parse_queue_spec(spec);
    if (!parsed.config) {
      std::fprintf(stderr, "qs_delay_line: %s\n", parsed.error.c_str());
      return false;
    }
    for (const auto& q : out)
      if (q.queue == parsed.config->queue) {
        std::fprintf(stderr, "qs_delay_line: queue %u given twice: `%s'\n", q.queue, spec.c_str());
        return false;
      }
    out.push_back(*parsed.config);
  }
  return true;
}

// Timer slack and scheduling: wake-ups to the microsecond, ahead of busy processes.
void tune_scheduling(int rt_priority) {
  // Wake-ups to the nanosecond rather than the default 50 us timer slack.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  // netem runs in the kernel's softirq context, ahead of every process; a real-time
  // priority keeps this one from waiting behind busy processes on a loaded machine. It
  // sleeps in ppoll between packets, so it cannot starve the machine (and the kernel's
  // RT throttling caps it at 95% of a CPU anyway).
  if (rt_priority > 0) {
    sched_param sp{};
    sp.sched_priority = rt_priority;
    if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
      std::fprintf(stderr, "qs_delay_line: warning: SCHED_FIFO %d: %s (running unprioritised)\n",
                   rt_priority, strerror(errno));
  }
}

// SIGTERM and SIGINT are blocked except inside ppoll, so a signal can never slip in
// between the stop check and the wait. Returns the mask to wait with.
sigset_t install_signals() {
  sigset_t block, orig;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigprocmask(SIG_BLOCK, &block, &orig);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigdelset(&orig, SIGTERM);
  sigdelset(&orig, SIGINT);
  return orig;
}

// Reads what is waiting (a bounded number of datagrams) and admits each packet.
// Returns false on a fatal socket error.
bool drain(Runtime& rt, std::vector<char>& buf) {
  for (int i = 0; i < 64; ++i) {
    ssize_t n = rt.sock.receive(buf);
    if (n == 0) return true;
    if (n < 0) {
      if (errno == ENOBUFS) {  // do not fail on ENOBUFS: messages lost, packets not
        ++rt.enobufs;
        continue;
      }
      if (errno == EINTR) return true;
      std::fprintf(stderr, "qs_delay_line: recv: %s\n", strerror(errno));
      return false;
    }
    rt.now = net::monotonic_now();
    if (mnl_cb_run(buf.data(), n, 0, rt.sock.portid(), on_packet, &rt) < 0) ++rt.bad_messages;
  }
  return true;
}

// Release what is due, sleep until the next due time or a packet, repeat until a signal.
int event_loop(Runtime& rt, const std::string& stats_file, const sigset_t& wait_mask) {
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 16);
  Timestamp last_stats = net::monotonic_now();
  int status = 0;
  while (!g_stop) {
    Timestamp now = net::monotonic_now();
    release(rt, now);
    auto next = rt.dq.next_expiry();
    std::int64_t wait_ns = next ? std::max<std::int64_t>(0, (*next - now).count()) : 1'000'000'000;
    wait_ns = std::min<std::int64_t>(wait_ns, 1'000'000'000);
    timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000), static_cast<long>(wait_ns % 1'000'000'000)};
    pollfd pfd{rt.sock.fd(), POLLIN, 0};
    if (ppoll(&pfd, 1, &ts, &wait_mask) > 0 && !drain(rt, buf)) {
      status = 1;
      break;
    }
    if (!stats_file.empty() && (net::monotonic_now() - last_stats).count() > 1'000'000'000) {
      write_stats(rt, stats_file);
      last_stats = net::monotonic_now();
    }
  }
  // Let everything held go before the socket closes (the kernel would drop it).
  release(rt, Timestamp{INT64_MAX});
  write_stats(rt, stats_file);
  return status;
}

int run(const Options& opt) {
  std::vector<QueueConfig> queues;
  if (!parse_queues(opt.queue_specs, queues)) return 2;
  tune_scheduling(opt.rt_priority);
  sigset_t wait_mask = install_signals();

  DelayQueue dq(queues, opt.max_held);
  auto opened = NfqSocket::open(opt.rcvbuf);
  if (!opened) {
    std::fprintf(stderr, "qs_delay_line: %s\n", opened.error().message.c_str());
    return 1;
  }
  NfqSocket& sock = **opened;
  for (const auto& q : queues) {
    auto bound = sock.bind_queue(q.queue, static_cast<std::uint32_t>(opt.max_held), opt.fail_open);
    if (!bound) {
      std::fprintf(stderr, "qs_delay_line: %s\n", bound.error().message.c_str());
      return 1;
    }
  }
  Runtime rt{dq, sock, std::mt19937_64(opt.seed ? opt.seed : std::random_device{}())};
  std::printf("ready: %zu queue(s)\n", queues.size());
  std::fflush(stdout);
  return event_loop(rt, opt.stats_file, wait_mask);
}

}  // namespace
}  // namespace quicstep::lab

int main(int argc, char** argv) {
  quicstep::lab::Options opt;
  CLI::App app{"Holds the packets of nfqueues for a fixed delay, then accepts them in order."};
  app.add_option("-q,--queue", opt.queue_specs, "NUM:DELAY[:LOSS], e.g. 1:20ms or 2:500us:0.01")
      ->required();
  app.add_option("--max-held", opt.max_held, "packets held at most per queue (kernel and here)")
      ->check(CLI::Range(1, 1000000));
  app.add_flag("--fail-open", opt.fail_open, "when a queue is full, pass packets undelayed instead of dropping");
  app.add_option("--seed", opt.seed, "seed of the loss coin (0: random)");
  app.add_option("--stats-file", opt.stats_file, "write counters as JSON here every second and at exit");
  app.add_option("--rcvbuf", opt.rcvbuf, "netlink receive buffer, bytes")->check(CLI::Range(65536, 1 << 30));
  app.add_option("--rt-priority", opt.rt_priority, "SCHED_FIFO priority (1-99); 0: normal scheduling")
      ->check(CLI::Range(0, 99));
  CLI11_PARSE(app, argc, argv);
  return quicstep::lab::run(opt);
}
