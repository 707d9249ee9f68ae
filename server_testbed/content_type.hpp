#pragma once

#include <string_view>

namespace quicstep::server_testbed {

// The content-type a served file gets, by its name's extension (case-insensitive):
// text/html, text/css, text/javascript, image/png, font/woff2 and the few others a page
// is made of; application/octet-stream for anything else. A browser needs the right one:
// it does not apply a stylesheet served as something else, and may sniff or download a
// document that has none.
std::string_view content_type(std::string_view path);

}  // namespace quicstep::server_testbed
