// ProbeEngine: one event loop (epoll, one thread) carrying many domains at once. It pulls
// targets from the shared input as long as it has room, resolves their names (DNS client
// or static hosts), runs the tries of every address through ProbeConnection, and writes one
// JSON line per finished domain to the shared output. New connections pass the shared
// admission (global token bucket, per-/24 limit) and the engine's share of --concurrency.
#pragma once

#include <gnutls/gnutls.h>

#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/deadline_heap.hpp"
#include "measurement/probe/admission.hpp"
#include "measurement/probe/dns_client.hpp"
#include "measurement/probe/probe_config.hpp"
#include "measurement/probe/probe_connection.hpp"
#include "measurement/probe/shared_input.hpp"
#include "measurement/probe/target_input.hpp"

namespace quicstep::measurement::probe {

class SharedOutput {
 public:
  explicit SharedOutput(std::FILE* file) : file_(file) {}
  void write_line(const std::string& line);  // line + '\n', flushed

 private:
  std::mutex mutex_;
  std::FILE* file_;
};

class SharedAdmission {
 public:
  SharedAdmission(double rate, unsigned per_prefix)
      : bucket_(rate, rate > 0 ? std::max(1.0, rate / 20) : 1), prefixes_(per_prefix) {}
  enum class Verdict { admitted, rate_limited, prefix_full };
  Verdict try_admit(const sockaddr_storage& addr, std::uint64_t now_ns);
  void release(const sockaddr_storage& addr);
  std::uint64_t next_token(std::uint64_t now_ns);

 private:
  std::mutex mutex_;
  TokenBucket bucket_;
  PrefixLimiter prefixes_;
};

class ProbeEngine : public FdRegistry {
 public:
  ProbeEngine(const ProbeConfig& config, std::size_t max_connections, SharedInput& input,
              SharedOutput& output, SharedAdmission& admission,
              gnutls_certificate_credentials_t cred);
  // Precondition: the input's reader thread has ended (SharedInput::join), since it
  // writes to this engine's eventfd.
  ~ProbeEngine() override;
  // Runs until the input is exhausted and every domain is written. Failures: setting up the
  // loop (epoll, eventfd, the DNS socket) or waiting in it.
  common::Outcome run();

  void watch(int fd, ProbeConnection* owner) override;
  void unwatch(int fd) override;

 private:
  struct Domain;
  struct AddressTask;

  void take_domains(std::uint64_t now);
  void start_domain(Target target, std::uint64_t now);
  void resolve_name(Domain& d, std::size_t name_index, std::uint64_t now);
  void on_name_resolved(Domain& d);
  void pump(std::uint64_t now);
  void start_try(AddressTask& task, std::uint64_t now);
  void on_try_done(AddressTask& task, std::uint64_t now);
  void schedule_or_finish(AddressTask& task);
  void finish_domain(Domain& d, std::uint64_t now);
  void touch(AddressTask& task);
  std::uint64_t next_deadline(std::uint64_t now);
  void handle_expiries(std::uint64_t now);
  void reap(std::uint64_t now);

  const ProbeConfig& config_;
  std::size_t max_connections_;
  SharedInput& input_;
  SharedOutput& output_;
  SharedAdmission& admission_;
  gnutls_certificate_credentials_t cred_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: the input has targets again, or ended
  std::unique_ptr<DnsClient> dns_;
  std::vector<std::unique_ptr<Domain>> domains_;
  std::deque<AddressTask*> ready_;                       // waiting for admission
  std::size_t running_ = 0;                              // connections in flight
  std::vector<AddressTask*> done_;                       // their connection finished
  common::DeadlineHeap<AddressTask*> timers_;            // connection deadlines
  std::unordered_map<int, ProbeConnection*> fds_;
  std::unordered_map<const ProbeConnection*, AddressTask*> owners_;
  std::size_t finished_domains_ = 0;                     // written, not yet erased
  std::uint64_t admission_retry_at_ = 0;
  bool input_done_ = false;
};

}  // namespace quicstep::measurement::probe
