// The one error type of the wire library, and Result<T>, the value-or-error that every
// parser returns. No exceptions on the packet path.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
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

// A value of type T, or an Error. Small and copyable when T is; check ok() before value().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : error_(error) {}         // NOLINT(google-explicit-constructor)

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
  Error error() const { return error_; }

  T value_or(T fallback) const { return value_ ? *value_ : std::move(fallback); }

 private:
  std::optional<T> value_;
  Error error_ = Error::bad_value;
};

// Success without a value, or an Error.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : ok_(false), error_(error) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  Error error() const { return error_; }

 private:
  bool ok_ = true;
  Error error_ = Error::bad_value;
};

using Status = Result<void>;

}  // namespace quicstep::common
