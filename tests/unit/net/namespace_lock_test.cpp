// NamespaceLock: one holder per name and network namespace; freed when the holder goes,
// also by SIGKILL, never held by an exec'd child; a waiting caller gets it once freed.
#include "net/namespace_lock.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "unit/client/private_netns.hpp"

namespace quicstep::net {
namespace {

using namespace std::chrono_literals;

std::string unique_name(const char* what) {
  return "quicstep-test/" + std::to_string(::getpid()) + "/" + what;
}

TEST(NamespaceLock, ASecondCallerIsRefusedWithTheHoldersPid) {
  const std::string name = unique_name("second");
  EXPECT_EQ(NamespaceLock::holder(name), 0);
  std::optional<NamespaceLock> first;
  {
    auto taken = NamespaceLock::acquire(name, 0ms);
    ASSERT_TRUE(taken) << taken.error().message;
    first.emplace(std::move(*taken));
  }
  EXPECT_EQ(NamespaceLock::holder(name), ::getpid());
  auto second = NamespaceLock::acquire(name, 100ms);
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().message, "held by pid " + std::to_string(::getpid()));
  first.reset();
  EXPECT_TRUE(NamespaceLock::acquire(name, 0ms));
}

TEST(NamespaceLock, AWaitingCallerGetsItWhenTheHolderLetsGo) {
  const std::string name = unique_name("wait");
  auto taken = NamespaceLock::acquire(name, 0ms);
  ASSERT_TRUE(taken);
  std::optional<NamespaceLock> first(std::move(*taken));
  std::thread release([&] {
    std::this_thread::sleep_for(200ms);
    first.reset();
  });
  auto second = NamespaceLock::acquire(name, 3s);
  release.join();
  EXPECT_TRUE(second) << second.error().message;
}

TEST(NamespaceLock, AKilledHolderFreesItAndAnExecdChildNeverHoldsIt) {
  const std::string name = unique_name("killed");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = ::fork();
  if (holder == 0) {
    auto taken = NamespaceLock::acquire(name, 0ms);
    if (!taken) _exit(1);
    // A child that outlives its parent (a WireGuard helper): exec'd, it must not keep it.
    if (::fork() == 0) {
      ::execlp("sleep", "sleep", "5", static_cast<char*>(nullptr));
      _exit(127);
    }
    if (::write(ready[1], "x", 1) != 1) _exit(1);
    ::pause();
    _exit(0);
  }
  ::close(ready[1]);
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(NamespaceLock::holder(name), holder);
  EXPECT_FALSE(NamespaceLock::acquire(name, 0ms));
  ::kill(holder, SIGKILL);
  int status = 0;
  ::waitpid(holder, &status, 0);
  auto after = NamespaceLock::acquire(name, 1s);  // the exec'd `sleep` still runs
  EXPECT_TRUE(after) << after.error().message;
}

TEST(NamespaceLock, AnotherNetworkNamespaceHasItsOwn) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (a network namespace)";
  const std::string name = unique_name("netns");
  auto taken = NamespaceLock::acquire(name, 0ms);
  ASSERT_TRUE(taken);
  EXPECT_EQ(client::kernel::in_private_netns([&]() -> std::string {
              if (NamespaceLock::holder(name) != 0) return "held in the new namespace";
              auto own = NamespaceLock::acquire(name, 0ms);
              return own ? "" : own.error().message;
            }),
            "");
}

}  // namespace
}  // namespace quicstep::net
