// --stats-file: counters as JSON, replaced atomically (written to PATH.tmp, then renamed), so
// a reader never sees a half-written file. Shared by quicstep-server and quicstep-gate.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace quicstep::server_testbed {

// Does nothing when path is empty.
void write_stats(const std::string& path, const nlohmann::json& j);

}  // namespace quicstep::server_testbed
