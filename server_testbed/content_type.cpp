#include "server_testbed/content_type.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace quicstep::server_testbed {

std::string_view content_type(std::string_view path) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 14> kTypes{{
      {"html", "text/html; charset=utf-8"}, {"htm", "text/html; charset=utf-8"},
      {"css", "text/css"}, {"js", "text/javascript"}, {"mjs", "text/javascript"},
      {"json", "application/json"}, {"txt", "text/plain; charset=utf-8"},
      {"png", "image/png"}, {"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"},
      {"gif", "image/gif"}, {"svg", "image/svg+xml"}, {"woff2", "font/woff2"},
      {"woff", "font/woff"},
  }};
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash)) {
    return "application/octet-stream";
  }
  std::string ext(path.substr(dot + 1));
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& [e, type] : kTypes) {
    if (e == ext) return type;
  }
  return "application/octet-stream";
}

}  // namespace quicstep::server_testbed
