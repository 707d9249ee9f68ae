#include "measurement/probe/probe_engine.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>

#include "common/dns_message.hpp"
#include "net/socket_endpoint.hpp"
#include "quic/time.hpp"

namespace quicstep::measurement::probe {

using net::parse_ip;
using net::with_port;

namespace {

constexpr std::uint64_t kMaxWaitNs = 200'000'000;

}  // namespace

// --- shared pieces ---

void SharedOutput::write_line(const std::string& line) {
  std::lock_guard lock(mutex_);
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fputc('\n', file_);
  std::fflush(file_);
}

SharedAdmission::Verdict SharedAdmission::try_admit(const sockaddr_storage& addr,
                                                    std::uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  if (!prefixes_.try_acquire(addr)) return Verdict::prefix_full;
  if (!bucket_.take(now_ns)) {
    prefixes_.release(addr);
    return Verdict::rate_limited;
  }
  return Verdict::admitted;
}

void SharedAdmission::release(const sockaddr_storage& addr) {
  std::lock_guard lock(mutex_);
  prefixes_.release(addr);
}

std::uint64_t SharedAdmission::next_token(std::uint64_t now_ns) {
  std::lock_guard lock(mutex_);
  return bucket_.next_available(now_ns);
}

// --- per-domain state ---

struct ProbeEngine::AddressTask {
  Domain* domain = nullptr;
  std::size_t name_index = 0;
  AddressRecord record;
  sockaddr_storage addr{};
  std::string sni;
  TryTally nat, port, address;
  bool first_done = false;
  TryKind kind = TryKind::nat_rebinding;
  std::unique_ptr<ProbeConnection> conn;
  bool done_listed = false;  // in done_, waiting for reap()
  // Set when an earlier name of the domain has the same address: this task is never run
  // and its record is a copy of that task's, with same_as naming the other name.
  AddressTask* same_as = nullptr;

  AddressTask(std::size_t tries) : nat(tries), port(tries), address(tries) {}
  TryTally& tally(TryKind k) {
    return k == TryKind::nat_rebinding ? nat : k == TryKind::port_migration ? port : address;
  }
};

struct ProbeEngine::Domain {
  DomainRecord record;
  std::uint64_t started = 0;
  std::size_t dns_pending = 0;
  std::vector<DnsStatus> a_status, aaaa_status;
  std::vector<std::unique_ptr<AddressTask>> tasks;
  std::size_t open_tasks = 0;
  bool finished = false;
};

ProbeEngine::ProbeEngine(const ProbeConfig& config, std::size_t max_connections,
                         SharedInput& input, SharedOutput& output, SharedAdmission& admission,
                         gnutls_certificate_credentials_t cred)
    : config_(config),
      max_connections_(std::max<std::size_t>(1, max_connections)),
      input_(input),
      output_(output),
      admission_(admission),
      cred_(cred) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ >= 0) input_.subscribe(wake_fd_);
}

ProbeEngine::~ProbeEngine() {
  for (auto& d : domains_) {
    for (auto& t : d->tasks) t->conn.reset();  // unwatches before epoll_fd_ closes
  }
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);  // precondition: the input's reader has ended
}

void ProbeEngine::watch(int fd, ProbeConnection* owner) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  fds_[fd] = owner;
}

void ProbeEngine::unwatch(int fd) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  fds_.erase(fd);
}

void ProbeEngine::take_domains(std::uint64_t now) {
  while (!input_done_ && domains_.size() < max_connections_) {
    Target target;
    switch (input_.try_next(&target)) {
      case SharedInput::Poll::target:
        start_domain(std::move(target), now);
        break;
      case SharedInput::Poll::empty:
        return;  // woken through wake_fd_ when more arrives
      case SharedInput::Poll::exhausted:
        input_done_ = true;
        return;
    }
  }
}

void ProbeEngine::start_domain(Target target, std::uint64_t now) {
  auto owned = std::make_unique<Domain>();
  Domain& d = *owned;
  domains_.push_back(std::move(owned));
  d.started = now;
  d.record.input_line = target.input_line;
  d.record.rank = target.rank;
  d.record.domain = target.domain;
  for (auto& name : names_to_probe(target.domain, config_.with_www)) {
    NameRecord n;
    n.name = std::move(name);
    d.record.names.push_back(std::move(n));
  }
  const std::size_t count = d.record.names.size();
  d.a_status.assign(count, DnsStatus::no_answer);
  d.aaaa_status.assign(count, DnsStatus::no_answer);
  d.dns_pending = count * ((config_.ipv4 ? 1 : 0) + (config_.ipv6 ? 1 : 0));
  for (std::size_t i = 0; i < count; ++i) resolve_name(d, i, now);
  if (d.dns_pending == 0) on_name_resolved(d);
}

void ProbeEngine::resolve_name(Domain& d, std::size_t i, std::uint64_t now) {
  NameRecord& name = d.record.names[i];
  if (config_.static_hosts) {
    auto it = config_.static_hosts->find(name.name);
    auto settle = [&](std::vector<std::string>* out, DnsStatus* status,
                      const std::vector<std::string>* found) {
      *status = it == config_.static_hosts->end() ? DnsStatus::nxdomain
                : found->empty()                  ? DnsStatus::no_answer
                                                  : DnsStatus::ok;
      if (it != config_.static_hosts->end()) *out = *found;
      --d.dns_pending;
    };
    const StaticHostAddresses empty;
    const StaticHostAddresses& found = it == config_.static_hosts->end() ? empty : it->second;
    if (config_.ipv4) settle(&name.a, &d.a_status[i], &found.a);
    if (config_.ipv6) settle(&name.aaaa, &d.aaaa_status[i], &found.aaaa);
    return;
  }
  Domain* dp = &d;
  auto ask = [&](std::uint16_t qtype, std::vector<std::string>* out, DnsStatus* status) {
    dns_->resolve(name.name, qtype, now, [this, dp, out, status](const DnsAnswer& answer) {
      *status = answer.status;
      *out = answer.addresses;
      if (--dp->dns_pending == 0) on_name_resolved(*dp);
    });
  };
  if (config_.ipv4) ask(common::dns_type::kA, &name.a, &d.a_status[i]);
  if (config_.ipv6) ask(common::dns_type::kAaaa, &name.aaaa, &d.aaaa_status[i]);
}

void ProbeEngine::on_name_resolved(Domain& d) {
  std::unordered_map<std::string, AddressTask*> probed;  // address → its task in this domain
  for (std::size_t i = 0; i < d.record.names.size(); ++i) {
    NameRecord& name = d.record.names[i];
    const DnsStatus a = d.a_status[i], aaaa = d.aaaa_status[i];
    name.dns_status = config_.ipv4 && config_.ipv6 ? combine_status(a, aaaa)
                      : config_.ipv4               ? a
                                                   : aaaa;
    auto add = [&](const std::vector<std::string>& ips, int family) {
      const bool second = family == 4 ? config_.second_local4.has_value()
                                      : config_.second_local6.has_value();
      for (std::size_t k = 0; k < ips.size() && k < config_.max_addresses; ++k) {
        auto ip = parse_ip(ips[k]);
        if (!ip) continue;
        auto task = std::make_unique<AddressTask>(config_.tries);
        task->domain = &d;
        task->name_index = i;
        task->record.ip = ips[k];
        task->record.family = family;
        task->addr = net::with_port(*ip, config_.port);
        task->sni = name.name;
        if (auto [it, fresh] = probed.emplace(task->record.ip, task.get()); !fresh) {
          task->same_as = it->second;  // probed once, for the first name that has it
          d.tasks.push_back(std::move(task));
          continue;
        }
        ++d.open_tasks;
        if (!second) task->address.set_untried(Label::not_run);
        ready_.push_back(task.get());
        d.tasks.push_back(std::move(task));
      }
    };
    if (config_.ipv4) add(name.a, 4);
    if (config_.ipv6) add(name.aaaa, 6);
  }
  if (d.open_tasks == 0) finish_domain(d, quic::now());
}

void ProbeEngine::pump(std::uint64_t now) {
  std::size_t rotations = 0;
  while (!ready_.empty() && running_ < max_connections_) {
    AddressTask* t = ready_.front();
    const auto verdict = admission_.try_admit(t->addr, now);
    if (verdict == SharedAdmission::Verdict::rate_limited) {
      admission_retry_at_ = admission_.next_token(now);
      return;
    }
    ready_.pop_front();
    if (verdict == SharedAdmission::Verdict::prefix_full) {
      ready_.push_back(t);
      if (++rotations >= ready_.size()) return;
      continue;
    }
    start_try(*t, now);
  }
}

void ProbeEngine::start_try(AddressTask& t, std::uint64_t now) {
  if (!t.first_done) {
    t.kind = TryKind::nat_rebinding;
  } else if (!t.nat.decided()) {
    t.kind = TryKind::nat_rebinding;
  } else if (!t.port.decided()) {
    t.kind = TryKind::port_migration;
  } else {
    t.kind = TryKind::address_migration;
  }
  TryOptions o;
  o.server = t.addr;
  const bool v4 = t.addr.ss_family == AF_INET;
  o.local = v4 ? config_.local4 : config_.local6;
  const auto& second = v4 ? config_.second_local4 : config_.second_local6;
  if (second) o.second_local = *second;
  o.kind = t.kind;
  o.sni = t.sni;
  o.alpn = config_.alpn;
  o.step_timeout = config_.timeout_ns;
  // Only the first try of an address is cut short: a silent address is then given up on
  // early, while later tries go to an address known to answer.
  if (!t.first_done) o.first_answer_timeout = config_.first_answer_timeout_ns;
  auto started = ProbeConnection::start(o, cred_, *this, now);
  if (started) {
    t.conn = std::move(*started);
    ++running_;
    owners_[t.conn.get()] = &t;
    touch(t);
  } else {
    // No socket (descriptor limit?) or no TLS session: recorded as a failed try.
    admission_.release(t.addr);
    TryOutcome failed;
    failed.error = "local: " + started.error().message;
    failed.label = Label::handshake_failed;
    if (!t.first_done) {
      t.first_done = true;
      t.record.error = failed.error;
      t.nat.set_untried(Label::not_run);
      t.port.set_untried(Label::not_run);
      t.address.set_untried(Label::not_run);
    } else {
      t.tally(t.kind).add(failed.label);
    }
    schedule_or_finish(t);
  }
}

void ProbeEngine::on_try_done(AddressTask& t, std::uint64_t) {
  admission_.release(t.addr);
  const TryOutcome o = t.conn->outcome();
  owners_.erase(t.conn.get());
  t.conn.reset();
  --running_;
  if (!t.first_done) {
    t.first_done = true;
    if (!o.handshake_done) {
      t.record.quic = false;
      t.record.error = o.error.value_or("handshake_failed");
      t.nat.set_untried(Label::not_run);
      t.port.set_untried(Label::not_run);
      t.address.set_untried(Label::not_run);
    } else {
      t.record.quic = true;
      t.record.facts = o.facts;
      if (!o.first_response) t.record.error = o.error;
      if (o.facts.disable_active_migration) {
        t.port.set_untried(Label::refused);
        if (!t.address.decided()) t.address.set_untried(Label::refused);
      }
      t.nat.add(o.label);
    }
  } else {
    t.tally(t.kind).add(o.label);
  }
  schedule_or_finish(t);
}

void ProbeEngine::schedule_or_finish(AddressTask& t) {
  if (!t.nat.decided() || !t.port.decided() || !t.address.decided()) {
    ready_.push_back(&t);
    return;
  }
  auto fill = [](TestRecord* out, const TryTally& tally) {
    out->label = tally.label();
    out->tries = tally.tries();
  };
  fill(&t.record.nat_rebinding, t.nat);
  fill(&t.record.port_migration, t.port);
  fill(&t.record.address_migration, t.address);
  if (--t.domain->open_tasks == 0) finish_domain(*t.domain, quic::now());
}

void ProbeEngine::finish_domain(Domain& d, std::uint64_t now) {
  // Copies first (the tasks they copy come earlier and are moved from below).
  for (auto& task : d.tasks) {
    if (!task->same_as) continue;
    AddressRecord copy = task->same_as->record;
    copy.same_as = d.record.names[task->same_as->name_index].name;
    task->record = std::move(copy);
  }
  for (auto& task : d.tasks) {
    d.record.names[task->name_index].addresses.push_back(std::move(task->record));
  }
  d.record.elapsed_ms = static_cast<double>(now - d.started) / 1e6;
  output_.write_line(to_json_line(d.record));
  d.finished = true;
  ++finished_domains_;
}

// After anything that may have changed a connection: its deadline moves, or it is done.
void ProbeEngine::touch(AddressTask& t) {
  if (t.conn->finished()) {
    timers_.erase(&t);
    if (!t.done_listed) {
      t.done_listed = true;
      done_.push_back(&t);
    }
  } else {
    timers_.set(&t, quic::from_ngtcp2(t.conn->next_deadline()));
  }
}

std::uint64_t ProbeEngine::next_deadline(std::uint64_t now) {
  std::uint64_t next = std::min(now + kMaxWaitNs, quic::to_ngtcp2(timers_.next()));
  if (dns_) next = std::min(next, dns_->next_deadline());
  if (!ready_.empty() && running_ < max_connections_ && admission_retry_at_ > now) {
    next = std::min(next, admission_retry_at_);
  }
  return next;
}

void ProbeEngine::handle_expiries(std::uint64_t now) {
  for (AddressTask* t : timers_.take_due(quic::from_ngtcp2(now))) {
    t->conn->on_expiry(now);
    touch(*t);
  }
  if (dns_ && dns_->next_deadline() <= now) dns_->on_expiry(now);
}

void ProbeEngine::reap(std::uint64_t now) {
  std::vector<AddressTask*> done;
  done.swap(done_);
  for (AddressTask* t : done) {
    t->done_listed = false;
    on_try_done(*t, now);
  }
  if (finished_domains_ > 0) {
    finished_domains_ = 0;
    std::erase_if(domains_, [](const std::unique_ptr<Domain>& d) { return d->finished; });
  }
}

common::Outcome ProbeEngine::run() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return common::Failure(std::string("epoll_create1: ") + std::strerror(errno));
  if (wake_fd_ < 0) return common::Failure(std::string("eventfd: ") + std::strerror(errno));
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake);
  int dns_fd = -1;
  if (!config_.static_hosts) {
    const std::size_t dns_share = std::max<std::size_t>(
        1, (config_.dns_concurrency + config_.threads - 1) / std::max<std::size_t>(1, config_.threads));
    dns_ = std::make_unique<DnsClient>(*config_.dns, config_.timeout_ns, dns_share);
    if (auto opened = dns_->open(); !opened) return opened;
    dns_fd = dns_->fd();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = dns_fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, dns_fd, &ev);
  }
  std::array<epoll_event, 256> events;
  for (;;) {
    std::uint64_t now = quic::now();
    take_domains(now);
    pump(now);
    if (input_done_ && domains_.empty()) return {};
    const std::uint64_t deadline = next_deadline(now);
    const int wait_ms =
        deadline <= now ? 0 : static_cast<int>((deadline - now + 999'999) / 1'000'000);
    const int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), wait_ms);
    if (n < 0 && errno != EINTR) {
      return common::Failure(std::string("epoll_wait: ") + std::strerror(errno));
    }
    now = quic::now();
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      if (fd == wake_fd_) {
        std::uint64_t count = 0;
        [[maybe_unused]] const auto r = ::read(wake_fd_, &count, sizeof(count));
      } else if (fd == dns_fd) {
        dns_->on_readable(now);
      } else if (auto it = fds_.find(fd); it != fds_.end()) {
        AddressTask* t = owners_.at(it->second);
        t->conn->on_readable(fd, now);
        touch(*t);
      }
    }
    handle_expiries(now);
    reap(now);
  }
}

}  // namespace quicstep::measurement::probe
