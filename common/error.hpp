// The error convention of the whole tree: a value or an error, Result<T, E>.
//   Result<T> / Status (E = Error)   the wire library and every packet-path parser: a small
//                                    enum, no allocation, no exceptions.
//   Result<T, Failure> / Outcome     the control plane (sockets, netlink, rules, files,
//                                    configs, command lines): a sentence for a person that
//                                    names what failed, quotes the bad value and gives the
//                                    system's reason ("bind: Address already in use").
// Exceptions appear only where a library throws them (CLI11's parse errors, toml++'s parse
// errors, std::bad_alloc) and are caught at that boundary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace quicstep::common {

enum class Error : std::uint8_t {
  truncated,       // the input ended before a field was complete
  bad_value,       // a field holds a value its format forbids (IHL < 5, CID > 20, ...)
  bad_length,      // a length field disagrees with the data around it
  unsupported,     // a version, type or feature this code does not handle
  decrypt_failed,  // AEAD authentication failed (wrong keys, or tampered bytes)
  crypto_backend,  // the crypto library refused an operation
  not_found,       // the element looked for is absent (no SNI extension, ...)
  incomplete,      // more data is needed: reassembly has not finished yet
  limit_exceeded,  // a bound on memory or count would be exceeded
};

// A short stable name, for logs and JSON ("truncated", "bad_value", ...).
std::string_view to_string(Error error);

// The control plane's error: what failed, in words, ready for a log line or stderr.
struct Failure {
  std::string message;

  Failure() = default;
  explicit Failure(std::string text) : message(std::move(text)) {}
};

namespace detail {
// The error a Result holds while it holds a value (never read: error() requires !ok()).
template <typename E>
constexpr E unset_error() {
  if constexpr (std::is_same_v<E, Error>) {
    return Error::bad_value;
  } else {
    return E{};
  }
}
}  // namespace detail

// A value of type T, or an E. Small and copyable when T and E are; check ok() before value().
template <typename T, typename E = Error>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(E error) : error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }

  // Preconditions: ok() (value) or !ok() (error).
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  const E& error() const { return error_; }

  T value_or(T fallback) const { return value_ ? *value_ : std::move(fallback); }

 private:
  std::optional<T> value_;
  E error_ = detail::unset_error<E>();
};

// Success without a value, or an E.
template <typename E>
class [[nodiscard]] Result<void, E> {
 public:
  Result() = default;
  Result(E error) : ok_(false), error_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const E& error() const { return error_; }

 private:
  bool ok_ = true;
  E error_ = detail::unset_error<E>();
};

using Status = Result<void>;
// Success, or why not: what a control-plane step returns.
using Outcome = Result<void, Failure>;

}  // namespace quicstep::common
