// Every OpenCL call is checked with DB_CL_CHECK; failures become exceptions that name the call,
// the OpenCL error, and (through OpScope) the operation that was running.
#pragma once

#include <stdexcept>
#include <string>

#include "runtime/opencl.h"

namespace drawbridge::runtime {

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, cl_int code = CL_SUCCESS)
      : std::runtime_error(message), code_(code) {}
  cl_int code() const { return code_; }

 private:
  cl_int code_;
};

// Raised when the device cannot hold an allocation; the core layer turns it into
// torch.OutOfMemoryError after emptying its cache and retrying.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

const char* error_name(cl_int code);

// Names the operation in flight on this thread, so that an error deep in the runtime can say
// which op it belongs to. Scopes nest; the innermost label wins.
class OpScope {
 public:
  explicit OpScope(const char* label);
  ~OpScope();
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;
  static const char* current();

 private:
  const char* previous_;
};

[[noreturn]] void throw_cl_error(cl_int code, const char* call, const char* file, int line);

}  // namespace drawbridge::runtime

#define DB_CL_CHECK(call)                                                              \
  do {                                                                                 \
    cl_int db_cl_status_ = (call);                                                     \
    if (db_cl_status_ != CL_SUCCESS)                                                   \
      ::drawbridge::runtime::throw_cl_error(db_cl_status_, #call, __FILE__, __LINE__); \
  } while (0)
