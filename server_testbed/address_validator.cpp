#include "server_testbed/address_validator.hpp"

#include <chrono>

namespace quicstep::server_testbed {

namespace {
constexpr std::size_t kReplayCapacity = 1 << 16;     // nonces remembered per thread
constexpr std::uint64_t kRepeatWindowMs = 1000;      // client resends of the 2nd Initial
}  // namespace

nlohmann::json TokenCounters::to_json() const {
  auto g = [](const C& c) { return c.load(std::memory_order_relaxed); };
  return {{"retry_sent", g(retry_sent)},         {"token_valid", g(token_valid)},
          {"token_invalid", g(token_invalid)},   {"token_unknown_key", g(token_unknown_key)},
          {"token_expired", g(token_expired)},   {"token_replayed", g(token_replayed)},
          {"new_token_sent", g(new_token_sent)}, {"new_token_valid", g(new_token_valid)}};
}

std::uint64_t wall_clock_ms() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

AddressValidator::AddressValidator(token::TokenCodec codec, bool require_validation,
                                   TokenCounters& counters)
    : codec_(std::move(codec)), require_validation_(require_validation), counters_(counters),
      replay_(kReplayCapacity, kRepeatWindowMs,
              codec_.config().retry_lifetime_ms + codec_.config().max_clock_skew_ms) {}

AddressValidator::Outcome AddressValidator::on_initial(const ngtcp2_pkt_hd& hd,
                                                       const sockaddr_storage& from,
                                                       std::uint64_t now_ms) {
  Outcome out;
  if (!require_validation_) {
    out.action = Action::accept;
    return out;
  }
  if (hd.token.len == 0) {
    out.action = Action::send_retry;
    return out;
  }
  const auto client = token::client_address(from);
  if (!client) return out;
  const bool claims_new_token =
      hd.token.base[0] == static_cast<std::uint8_t>(token::TokenType::new_token);
  token::VerifiedToken v;
  const token::Verdict verdict =
      codec_.verify({hd.token.base, hd.token.len}, *client, {hd.dcid.data, hd.dcid.datalen},
                    now_ms, &v);
  switch (verdict) {
    case token::Verdict::valid:
      break;
    case token::Verdict::expired:
      TokenCounters::add(counters_.token_expired);
      // RFC 9000 8.1.3: a NEW_TOKEN token that does not validate is as if there were none.
      out.action = claims_new_token ? Action::send_retry : Action::drop;
      return out;
    case token::Verdict::unknown_key:
      TokenCounters::add(counters_.token_unknown_key);
      out.action = claims_new_token ? Action::send_retry : Action::drop;
      return out;
    case token::Verdict::invalid:
    case token::Verdict::malformed:
      TokenCounters::add(counters_.token_invalid);
      out.action = claims_new_token ? Action::send_retry : Action::drop;
      return out;
  }
  if (v.type == token::TokenType::retry) {
    if (replay_.check(v.nonce, now_ms) == token::ReplayGuard::Seen::replayed) {
      TokenCounters::add(counters_.token_replayed);
      return out;
    }
    out.has_odcid = true;
    out.odcid.datalen = v.odcid_len;
    std::copy(v.odcid.begin(), v.odcid.begin() + static_cast<long>(v.odcid_len), out.odcid.data);
  } else {
    out.new_token = true;
    TokenCounters::add(counters_.new_token_valid);
  }
  TokenCounters::add(counters_.token_valid);
  out.action = Action::accept;
  return out;
}

std::size_t AddressValidator::make_retry_token(std::span<std::uint8_t> out,
                                               const sockaddr_storage& to,
                                               const ngtcp2_cid& odcid, const ngtcp2_cid& rscid,
                                               std::uint64_t now_ms) {
  const auto client = token::client_address(to);
  if (!client) return 0;
  return codec_.issue_retry(out, *client, {odcid.data, odcid.datalen},
                            {rscid.data, rscid.datalen}, now_ms);
}

std::size_t AddressValidator::make_new_token(std::span<std::uint8_t> out,
                                             const sockaddr_storage& to, std::uint64_t now_ms) {
  const auto client = token::client_address(to);
  if (!client) return 0;
  return codec_.issue_new_token(out, *client, now_ms);
}

}  // namespace quicstep::server_testbed
