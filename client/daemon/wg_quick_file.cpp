#include "client/daemon/wg_quick_file.hpp"

#include <arpa/inet.h>

#include <sstream>

namespace quicstep::client::daemon {
namespace {

std::string trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return std::string(s.substr(first, last - first + 1));
}

std::vector<std::string> list(std::string_view value) {
  std::vector<std::string> items;
  std::istringstream in{std::string(value)};
  for (std::string item; std::getline(in, item, ',');) {
    if (std::string t = trim(item); !t.empty()) items.push_back(std::move(t));
  }
  return items;
}

}  // namespace

WgQuickFile split_wg_quick(std::string_view text) {
  WgQuickFile out;
  bool interface_section = false;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    const std::string_view uncommented = std::string_view(line).substr(0, line.find('#'));
    const auto eq = uncommented.find('=');
    const std::string key = trim(uncommented.substr(0, eq));
    if (!key.empty() && key.front() == '[') interface_section = key == "[Interface]";
    if (interface_section && eq != std::string_view::npos) {
      const std::string_view value = uncommented.substr(eq + 1);
      if (key == "Address") {
        for (auto& a : list(value)) out.addresses.push_back(std::move(a));
        continue;
      }
      if (key == "MTU") {
        out.mtu = trim(value);
        continue;
      }
      if (key == "DNS") {
        for (const auto& item : list(value)) {
          unsigned char bytes[16];
          char buf[INET6_ADDRSTRLEN];
          if (inet_pton(AF_INET, item.c_str(), bytes) == 1) {
            out.dns_v4.emplace_back(inet_ntop(AF_INET, bytes, buf, sizeof buf));
          } else if (inet_pton(AF_INET6, item.c_str(), bytes) == 1) {
            out.dns_v6.emplace_back(inet_ntop(AF_INET6, bytes, buf, sizeof buf));
          }
        }
        continue;
      }
      if (key == "Table" || key == "PreUp" || key == "PostUp" || key == "PreDown" ||
          key == "PostDown" || key == "SaveConfig") {
        continue;
      }
    }
    out.wg_text += line + "\n";
  }
  return out;
}

}  // namespace quicstep::client::daemon
