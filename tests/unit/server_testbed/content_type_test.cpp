#include "server_testbed/content_type.hpp"

#include <gtest/gtest.h>

namespace quicstep::server_testbed {
namespace {

TEST(ContentType, APagesFilesGetTheTypesABrowserNeeds) {
  EXPECT_EQ(content_type("/corpus/p000/index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(content_type("/a/style.CSS"), "text/css");
  EXPECT_EQ(content_type("/a/app.js"), "text/javascript");
  EXPECT_EQ(content_type("/a/i.png"), "image/png");
  EXPECT_EQ(content_type("/f.woff2"), "font/woff2");
}

TEST(ContentType, AnythingElseIsOctetStream) {
  EXPECT_EQ(content_type("/bin/10M.bin"), "application/octet-stream");
  EXPECT_EQ(content_type("/no-extension"), "application/octet-stream");
  EXPECT_EQ(content_type("/dir.css/file"), "application/octet-stream");  // a dot in a folder
  EXPECT_EQ(content_type("/trailing."), "application/octet-stream");
  EXPECT_EQ(content_type(""), "application/octet-stream");
}

}  // namespace
}  // namespace quicstep::server_testbed
