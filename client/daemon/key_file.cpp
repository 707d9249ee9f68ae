#include "client/daemon/key_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace quicstep::client::daemon {
namespace {

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// The descriptor closes on every path out of write_private_file.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

}  // namespace

std::optional<std::string> world_accessible_warning(const std::string& path) {
  struct stat file {};
  struct stat folder {};
  if (::stat(path.c_str(), &file) != 0) return std::nullopt;
  if (::stat(folder_of(path).c_str(), &folder) != 0) return std::nullopt;
  // wg-quick: the file grants others any of rwx, and its folder lets them in (x).
  if ((file.st_mode & 0007) == 0 || (folder.st_mode & 0001) == 0) return std::nullopt;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(file.st_mode & 07777));
  return "`" + path + "' holds a private key and is world accessible (mode " + mode +
         "); chmod 600 it";
}

common::Outcome write_private_file(const std::string& path, const std::string& text) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return common::Failure("cannot replace " + path + ": " + std::strerror(errno));
  }
  FileDescriptor fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           0600));
  if (fd.get() < 0) {
    return common::Failure("cannot create " + path + ": " + std::strerror(errno));
  }
  // The umask can only take bits away from 0600; fchmod makes the mode exact anyway.
  std::string why;
  if (::fchmod(fd.get(), 0600) != 0) why = std::string("fchmod: ") + std::strerror(errno);
  for (std::size_t done = 0; why.empty() && done < text.size();) {
    const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      why = std::string("write: ") + (n < 0 ? std::strerror(errno) : "no progress");
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (why.empty() && ::close(fd.release()) != 0) why = std::string("close: ") + std::strerror(errno);
  if (why.empty()) return {};
  ::unlink(path.c_str());
  return common::Failure("cannot write " + path + ": " + why);
}

}  // namespace quicstep::client::daemon
