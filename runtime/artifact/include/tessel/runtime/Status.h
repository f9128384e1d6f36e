//===- Status.h - Error reporting for the Tessel runtime --------*- C++ -*-===//
//
// The runtime never throws through its public API and never asserts on user
// input: every fallible call returns a Status carrying one readable message.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_STATUS_H
#define TESSEL_RUNTIME_STATUS_H

#include <string>
#include <utility>

namespace tessel::runtime {

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.msg = std::move(message);
    return s;
  }

  bool isOk() const { return !failed; }
  explicit operator bool() const { return !failed; }
  const std::string &message() const { return msg; }

  /// Prefixes the message with `context: ` (no-op on success).
  Status &withContext(const std::string &context) {
    if (failed)
      msg = context + ": " + msg;
    return *this;
  }

private:
  bool failed = false;
  std::string msg;
};

} // namespace tessel::runtime

#define TSL_RETURN_IF_ERROR(expr)                                              \
  do {                                                                         \
    ::tessel::runtime::Status tslStatus_ = (expr);                             \
    if (!tslStatus_)                                                           \
      return tslStatus_;                                                       \
  } while (false)

#endif // TESSEL_RUNTIME_STATUS_H
