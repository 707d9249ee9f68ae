#include "server_testbed/cid_codec.hpp"

#include <algorithm>
#include <array>

namespace quicstep::server_testbed {

using common::Error;
using common::Result;

qs_steer_config to_bpf_config(const CidConfig& config, bool enabled) {
  qs_steer_config out{};
  out.enabled = enabled ? 1 : 0;
  out.worker_count = config.worker_count;
  out.config_id = config.config_id;
  out.cid_len = config.cid_len;
  out.obfuscate = config.key ? 1 : 0;
  out.key = config.key.value_or(0);
  return out;
}

Result<CidCodec> CidCodec::create(const CidConfig& config) {
  if (config.config_id >= QS_STEER_UNROUTABLE_CONFIG) return Error::bad_value;
  const std::size_t min_len = config.key ? QS_STEER_MIN_OBFUSCATED_CID_LEN : QS_STEER_MIN_CID_LEN;
  if (config.cid_len < min_len || config.cid_len > QS_STEER_MAX_CID_LEN) return Error::bad_value;
  if (config.worker_count == 0 || config.worker_count > QS_STEER_MAX_WORKERS) {
    return Error::bad_value;
  }
  return CidCodec(config);
}

void CidCodec::encode(std::uint32_t worker, std::span<const std::uint8_t> random,
                      std::span<std::uint8_t> out) const {
  const std::size_t len = config_.cid_len;
  out[0] = static_cast<std::uint8_t>(config_.config_id << 6 | (len - 1));
  std::copy_n(random.begin(), len - 2, out.begin() + 2);
  auto id = static_cast<std::uint8_t>(worker);
  if (config_.key) id ^= qs_steer_mask(*config_.key, &out[2]);
  out[1] = id;
}

Result<std::uint32_t> CidCodec::decode(std::span<const std::uint8_t> cid) const {
  if (cid.size() > QS_STEER_MAX_CID_LEN) return Error::not_found;
  // The same decision the BPF program takes, over a short-header image of the CID.
  std::array<std::uint8_t, QS_STEER_BUF_LEN> buf{};
  buf[0] = 0x40;
  std::copy(cid.begin(), cid.end(), buf.begin() + 1);
  qs_steer_config bpf = to_bpf_config(config_, true);
  if (cid.size() != config_.cid_len) return Error::not_found;
  bpf.worker_count = QS_STEER_MAX_WORKERS;  // tell "not ours" apart from "beyond workers"
  std::uint32_t worker = 0;
  const int verdict = qs_steer_decide(buf.data(), static_cast<std::uint32_t>(cid.size() + 1),
                                      &bpf, &worker);
  if (verdict != QS_STEER_WORKER) return Error::not_found;
  if (worker >= config_.worker_count) return Error::bad_value;
  return worker;
}

}  // namespace quicstep::server_testbed
