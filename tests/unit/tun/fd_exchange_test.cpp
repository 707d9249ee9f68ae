// The one-descriptor exchange (TUN fd, protect) over real AF_UNIX sockets, against peers
// written here with plain sendmsg/recvmsg, so that both sides are checked against the
// protocol and not only against each other: the descriptor that arrives is the same open
// socket (same inode), refusals and silences are reported in words, and a sender that
// breaks the protocol is refused without ending the wait.
#include "client/tun/io/fd_exchange.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "client/tun/io/protector.hpp"

namespace quicstep::client::tun {
namespace {

using namespace std::chrono_literals;

std::string temp_socket_path(const char* name) {
  static std::string dir = [] {
    char tmpl[] = "/tmp/qs-fdx-XXXXXX";
    const char* made = mkdtemp(tmpl);
    return std::string(made != nullptr ? made : "/tmp");
  }();
  return dir + "/" + name;
}

ino_t inode(int fd) {
  struct stat st{};
  fstat(fd, &st);
  return st.st_ino;
}

net::UniqueFd udp_socket() { return net::UniqueFd(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)); }

// Sends one data byte with `fds` attached (any number) on a new connection to `path`, the
// way a faulty or hostile sender might; returns the answer byte, or -1.
int raw_send(const std::string& path, const std::vector<int>& fds, bool send_byte = true) {
  net::UniqueFd s(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  if (send_byte) {
    std::uint8_t byte = 0;
    iovec iov{&byte, 1};
    std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<std::size_t>(fds.size(), 1)));
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds.empty()) {
      msg.msg_control = control.data();
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    if (sendmsg(s.get(), &msg, MSG_NOSIGNAL) != 1) return -1;
  } else {
    shutdown(s.get(), SHUT_WR);
  }
  std::uint8_t reply = 0;
  pollfd p{s.get(), POLLIN, 0};
  if (poll(&p, 1, 3000) != 1 || recv(s.get(), &reply, 1, 0) != 1) return -1;
  return reply;
}

// A protect server written against the protocol: accepts one connection, takes the
// descriptor, notes its inode, then answers `answer` (or closes, or stays silent).
enum class Behaviour { answer, close_silently, hang };
struct FakeProtectServer {
  std::string path;
  net::UniqueFd listener;
  std::thread thread;
  std::atomic<ino_t> received{0};
  std::atomic<bool> done{false};

  FakeProtectServer(const char* name, Behaviour behaviour, std::uint8_t answer) : path(temp_socket_path(name)) {
    auto l = listen_unix(path);
    EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.error().message);
    listener = std::move(*l);
    thread = std::thread([this, behaviour, answer] {
      net::UniqueFd conn(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
      std::uint8_t byte;
      iovec iov{&byte, 1};
      alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
      msghdr msg{};
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      if (recvmsg(conn.get(), &msg, MSG_CMSG_CLOEXEC) == 1) {
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        if (c != nullptr && c->cmsg_type == SCM_RIGHTS) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
          received = inode(fd);
          close(fd);
        }
      }
      if (behaviour == Behaviour::answer) send(conn.get(), &answer, 1, MSG_NOSIGNAL);
      if (behaviour == Behaviour::hang) {
        while (!done) std::this_thread::sleep_for(10ms);
      }
      done = true;
    });
  }
  ~FakeProtectServer() {
    done = true;
    thread.join();
    unlink(path.c_str());
  }
};

TEST(SocketProtector, SendsTheSocketItselfAndTakesAnswerZeroAsProtected) {
  FakeProtectServer server("protect-ok.sock", Behaviour::answer, 0);
  net::UniqueFd s = udp_socket();
  SocketProtector protector(server.path);
  EXPECT_EQ(protector.protect(s.get()), "");
  while (!server.done) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(server.received.load(), inode(s.get()));
  EXPECT_EQ(protector.describe(), "protect socket " + server.path);
}

TEST(SocketProtector, ARefusalIsAnErrorNamingTheAnswer) {
  FakeProtectServer server("protect-no.sock", Behaviour::answer, 1);
  net::UniqueFd s = udp_socket();
  const std::string error = SocketProtector(server.path).protect(s.get());
  EXPECT_NE(error.find("refused the descriptor (answer 1)"), std::string::npos) << error;
}

TEST(SocketProtector, AServerThatClosesWithoutAnAnswerIsAnError) {
  FakeProtectServer server("protect-close.sock", Behaviour::close_silently, 0);
  net::UniqueFd s = udp_socket();
  const std::string error = SocketProtector(server.path).protect(s.get());
  EXPECT_NE(error.find("closed the connection without an answer"), std::string::npos) << error;
}

TEST(SocketProtector, ASilentServerTimesOut) {
  FakeProtectServer server("protect-hang.sock", Behaviour::hang, 0);
  net::UniqueFd s = udp_socket();
  const auto started = std::chrono::steady_clock::now();
  const std::string error = SocketProtector(server.path, 200ms).protect(s.get());
  EXPECT_NE(error.find("no answer within 200 ms"), std::string::npos) << error;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  server.done = true;
}

TEST(SocketProtector, NoServerIsAnErrorNamingThePath) {
  const std::string path = temp_socket_path("nobody.sock");
  net::UniqueFd s = udp_socket();
  const std::string error = SocketProtector(path).protect(s.get());
  EXPECT_NE(error.find("connect " + path), std::string::npos) << error;
}

TEST(FdExchange, APathTooLongForSunPathIsRefusedBeforeAnySocket) {
  const std::string path = "/tmp/" + std::string(120, 'x');
  EXPECT_FALSE(listen_unix(path).ok());
  const common::Outcome sent = send_fd(path, 0, 100ms);
  ASSERT_FALSE(sent.ok());
  EXPECT_NE(sent.error().message.find("is not 1-107 bytes"), std::string::npos);
}

TEST(FdExchange, ReceiveRefusesSendersWithoutExactlyOneDescriptorAndKeepsWaiting) {
  const std::string path = temp_socket_path("tun.sock");
  auto listener = listen_unix(path);
  ASSERT_TRUE(listener.ok());
  net::UniqueFd tun_stand_in = udp_socket();
  net::UniqueFd extra = udp_socket();
  std::vector<int> answers;
  std::thread senders([&] {
    answers.push_back(raw_send(path, {}));                                   // no descriptor
    answers.push_back(raw_send(path, {tun_stand_in.get(), extra.get()}));    // two
    answers.push_back(raw_send(path, {}, false));                            // nothing at all
    answers.push_back(raw_send(path, {tun_stand_in.get()}));                 // the right one
  });
  auto got = receive_fd(listener->get(), 500ms, [] { return true; });
  senders.join();
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(inode(got->get()), inode(tun_stand_in.get()));
  EXPECT_EQ(answers, (std::vector<int>{1, 1, 1, 0}));
  EXPECT_NE(fcntl(got->get(), F_GETFD) & FD_CLOEXEC, 0);
  unlink(path.c_str());
}

TEST(FdExchange, ReceiveEndsWhenToldToStop) {
  const std::string path = temp_socket_path("tun-stop.sock");
  auto listener = listen_unix(path);
  ASSERT_TRUE(listener.ok());
  int asked = 0;
  auto got = receive_fd(listener->get(), 500ms, [&] { return ++asked < 3; });
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().message, "stopped");
  EXPECT_EQ(asked, 3);
  unlink(path.c_str());
}

TEST(FdExchange, SendAndReceiveRoundTrip) {
  const std::string path = temp_socket_path("round.sock");
  auto listener = listen_unix(path);
  ASSERT_TRUE(listener.ok());
  net::UniqueFd s = udp_socket();
  common::Outcome sent;
  std::thread sender([&] { sent = send_fd(path, s.get(), 2s); });
  auto got = receive_fd(listener->get(), 2s, [] { return true; });
  sender.join();
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(sent.ok()) << sent.error().message;
  EXPECT_EQ(inode(got->get()), inode(s.get()));
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);  // the socket file is the owner's only
  unlink(path.c_str());
}

}  // namespace
}  // namespace quicstep::client::tun
