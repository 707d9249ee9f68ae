#include "server_testbed/stats_file.hpp"

#include <cstdio>
#include <fstream>

namespace quicstep::server_testbed {

void write_stats(const std::string& path, const nlohmann::json& j) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(2) << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace quicstep::server_testbed
