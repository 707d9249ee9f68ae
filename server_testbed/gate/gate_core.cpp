#include "server_testbed/gate/gate_core.hpp"

#include <ngtcp2/ngtcp2_crypto.h>

#include "server_testbed/bpf/steering_shared.h"

namespace quicstep::server_testbed::gate {

nlohmann::json GateCounters::to_json(const TokenCounters& tokens) const {
  auto g = [](const C& c) { return c.load(std::memory_order_relaxed); };
  nlohmann::json t = tokens.to_json();
  return {{"rx_packets", g(rx_packets)},
          {"retry_sent", t["retry_sent"]},
          {"forwarded", g(forwarded)},
          {"allowlisted", g(allowlisted)},
          {"tokens",
           {{"valid", t["token_valid"]},
            {"invalid", t["token_invalid"]},
            {"unknown_key", t["token_unknown_key"]},
            {"expired", t["token_expired"]},
            {"replayed", t["token_replayed"]},
            {"new_token_valid", t["new_token_valid"]}}},
          {"dropped",
           {{"not_initial", g(drop_not_initial)},
            {"token", g(drop_token)},
            {"bad_worker", g(drop_bad_worker)},
            {"queue_full", g(drop_queue_full)},
            {"send_failed", g(drop_send_failed)}}}};
}

GateCore::GateCore(const CidCodec& codec, AddressValidator validator, GateCounters& counters)
    : codec_(codec), validator_(std::move(validator)), counters_(counters) {}

GateCore::Result GateCore::retry(const ngtcp2_pkt_hd& hd, const sockaddr_storage& from,
                                 std::uint64_t now_ms) {
  Result r;
  const std::uint32_t workers = codec_.config().worker_count;
  const std::uint32_t worker = next_worker_++ % (workers == 0 ? 1 : workers);
  std::array<std::uint8_t, QS_STEER_MAX_CID_LEN> random{};
  random_.fill(random.data(), random.size());
  ngtcp2_cid scid{};
  scid.datalen = codec_.cid_len();
  codec_.encode(worker, random, std::span<std::uint8_t>(scid.data, scid.datalen));
  std::array<std::uint8_t, token::kMaxTokenLen> tok{};
  const std::size_t toklen = validator_.make_retry_token(tok, from, hd.dcid, scid, now_ms);
  if (toklen == 0) {
    GateCounters::add(counters_.drop_not_initial);
    return r;
  }
  const auto n = retry_writer_.write(buf_.data(), buf_.size(), hd.version, &hd.scid, &scid,
                                     &hd.dcid, tok.data(), toklen);
  if (n <= 0) {
    GateCounters::add(counters_.drop_not_initial);
    return r;
  }
  TokenCounters::add(validator_.counters().retry_sent);
  r.kind = Kind::retry;
  r.out = {buf_.data(), static_cast<std::size_t>(n)};
  return r;
}

GateCore::Result GateCore::on_datagram(std::span<const std::uint8_t> data,
                                       const sockaddr_storage& from, std::uint64_t now_ms) {
  GateCounters::add(counters_.rx_packets);
  Result r;
  ngtcp2_pkt_hd hd{};
  if (data.empty() || !qs_steer_is_v1_initial(data.data(), static_cast<qs_u32>(data.size())) ||
      ngtcp2_accept(&hd, data.data(), data.size()) != 0) {
    GateCounters::add(counters_.drop_not_initial);
    return r;
  }
  const AddressValidator::Outcome outcome = validator_.on_initial(hd, from, now_ms);
  switch (outcome.action) {
    case AddressValidator::Action::send_retry:
      return retry(hd, from, now_ms);
    case AddressValidator::Action::drop:
      GateCounters::add(counters_.drop_token);
      return r;
    case AddressValidator::Action::accept:
      break;
  }
  std::uint32_t worker = 0;
  if (outcome.has_odcid) {
    auto owner = codec_.decode({hd.dcid.data, hd.dcid.datalen});
    if (!owner) {
      GateCounters::add(counters_.drop_bad_worker);
      return r;
    }
    worker = *owner;
  } else {
    std::array<std::uint8_t, QS_STEER_BUF_LEN> peek{};
    const std::size_t n = std::min<std::size_t>(data.size(), QS_STEER_PEEK_LEN);
    std::copy(data.begin(), data.begin() + static_cast<long>(n), peek.begin());
    worker = qs_steer_dcid_worker(peek.data(), static_cast<qs_u32>(data.size()),
                                  codec_.config().worker_count);
  }
  const std::size_t len = encode_forward(buf_, from, outcome.odcid.data, outcome.odcid.datalen,
                                         outcome.has_odcid, data);
  if (len == 0) {
    GateCounters::add(counters_.drop_not_initial);
    return r;
  }
  r.kind = Kind::forward;
  r.worker = worker;
  r.out = {buf_.data(), len};
  return r;
}

}  // namespace quicstep::server_testbed::gate
