#include "client/kernel/reverse_path_filter.hpp"

#include <fstream>
#include <sstream>

namespace quicstep::client::kernel {

std::string ReversePathFilter::read(const std::string& device) const {
  std::ifstream in(root_ + "/" + device + "/rp_filter");
  std::string value;
  in >> value;
  return value;
}

bool ReversePathFilter::write(const std::string& device, const std::string& value) const {
  std::ofstream out(root_ + "/" + device + "/rp_filter");
  out << value << "\n";
  out.flush();
  return static_cast<bool>(out);
}

bool ReversePathFilter::loosen(const std::string& device) {
  if (device.empty() || device.find('/') != std::string::npos || device == "." ||
      device == "..") {
    return false;
  }
  const std::string own = read(device);
  if (own.empty()) return false;  // no such device (or no IPv4 on it)
  const std::string all = read("all");
  // max(all, device) == 1: strict.
  const bool strict = (own == "1" && all != "2") || (all == "1" && own == "0");
  if (!strict || !write(device, "2")) return false;
  saved_.try_emplace(device, own);  // the first value seen is the device's own
  ++loosened_;
  return true;
}

void ReversePathFilter::restore() {
  for (const auto& [device, value] : saved_) {
    if (read(device) == "2") write(device, value);
  }
  saved_.clear();
}

}  // namespace quicstep::client::kernel
