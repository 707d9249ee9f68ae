#include "measurement/probe/static_hosts.hpp"

#include <arpa/inet.h>

#include <fstream>
#include <sstream>

#include "measurement/probe/target_input.hpp"

namespace quicstep::measurement::probe {

common::Outcome parse_static_hosts(std::string_view text, std::string_view origin,
                                   StaticHosts* hosts) {
  std::istringstream in{std::string(text)};
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    std::istringstream fields(line);
    std::string name;
    if (!(fields >> name)) continue;
    auto fail = [&](const std::string& why) {
      return common::Failure(std::string(origin) + ":" + std::to_string(number) + ": " + why);
    };
    if (!name.empty() && name.back() == '.') name.pop_back();
    for (char& c : name) {
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    if (auto valid = is_valid_domain(name); !valid) return fail(valid.error().message);
    StaticHostAddresses& entry = (*hosts)[name];
    std::string ip;
    bool any = false;
    while (fields >> ip) {
      in_addr a4{};
      in6_addr a6{};
      char canonical[INET6_ADDRSTRLEN] = {};
      if (inet_pton(AF_INET, ip.c_str(), &a4) == 1) {
        inet_ntop(AF_INET, &a4, canonical, sizeof(canonical));
        entry.a.emplace_back(canonical);
      } else if (inet_pton(AF_INET6, ip.c_str(), &a6) == 1) {
        inet_ntop(AF_INET6, &a6, canonical, sizeof(canonical));
        entry.aaaa.emplace_back(canonical);
      } else {
        return fail("not an IPv4 or IPv6 address: `" + ip + "'");
      }
      any = true;
    }
    if (!any) return fail("no address after `" + name + "'");
  }
  return {};
}

common::Outcome load_static_hosts(const std::string& file, StaticHosts* hosts) {
  std::ifstream in(file);
  if (!in) return common::Failure(file + ": cannot read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_static_hosts(text.str(), file, hosts);
}

}  // namespace quicstep::measurement::probe
