// The TUN engine's status as JSON, in quicstepctl's vocabulary (client/daemon/status.cpp):
// `paths` (channel and native, packets and bytes each way), `channel_load_ratio`, `flows`,
// `watchdog`, `native_switch`; and the engine's own: `relays`, `engine` (its counters) and
// `loop` (what the descriptors refused). Answered on the control socket (`status`).
#pragma once

#include <nlohmann/json.hpp>

#include "client/tun/engine_core.hpp"

namespace quicstep::client::tun {

// `bypassed`: what left natively without crossing the engine (a kernel fast path,
// fast_path.hpp), counted in `paths.native` and the load ratio with the rest.
nlohmann::json engine_status_json(const EngineCore& engine, const TrafficCounters& bypassed = {});

}  // namespace quicstep::client::tun
