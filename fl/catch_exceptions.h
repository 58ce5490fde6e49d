// Library boundaries return absl::Status; LibTorch and the standard library throw. This turns one
// into the other where a run's stages are called.
#ifndef FGL_FL_CATCH_EXCEPTIONS_H_
#define FGL_FL_CATCH_EXCEPTIONS_H_

#include <exception>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "c10/util/Exception.h"

namespace fgl::fl {

// Runs fn() (returning Status or StatusOr); a C++ exception it throws (LibTorch's c10::Error,
// std::bad_alloc, ...) becomes an INTERNAL status naming `stage` instead of ending the process.
// `stage` is read only when an exception is caught: fn may update it as it goes.
template <typename F>
auto CatchExceptions(const std::string& stage, F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat(stage, ": ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(stage, ": ", e.what()));
  }
}

}  // namespace fgl::fl

#endif  // FGL_FL_CATCH_EXCEPTIONS_H_
