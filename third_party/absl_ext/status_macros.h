// FGL_RETURN_IF_ERROR and FGL_ASSIGN_OR_RETURN: Abseil 20220623 ships no status macros.
#ifndef FGL_THIRD_PARTY_ABSL_EXT_STATUS_MACROS_H_
#define FGL_THIRD_PARTY_ABSL_EXT_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define FGL_STATUS_CONCAT_INNER_(a, b) a##b
#define FGL_STATUS_CONCAT_(a, b) FGL_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define FGL_RETURN_IF_ERROR(expr)                  \
  do {                                             \
    ::absl::Status fgl_status_ = (expr);           \
    if (!fgl_status_.ok()) return fgl_status_;     \
  } while (false)

// `FGL_ASSIGN_OR_RETURN(T x, StatusOrExpr);` declares/assigns `x` or returns the error.
#define FGL_ASSIGN_OR_RETURN(lhs, expr) \
  FGL_ASSIGN_OR_RETURN_IMPL_(FGL_STATUS_CONCAT_(fgl_statusor_, __LINE__), lhs, expr)

#define FGL_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                               \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = *std::move(statusor)

#endif  // FGL_THIRD_PARTY_ABSL_EXT_STATUS_MACROS_H_
