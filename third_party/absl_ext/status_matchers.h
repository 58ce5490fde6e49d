// GoogleTest matchers for absl::Status / StatusOr: IsOk, StatusIs, ASSERT_OK_AND_ASSIGN.
#ifndef FGL_THIRD_PARTY_ABSL_EXT_STATUS_MATCHERS_H_
#define FGL_THIRD_PARTY_ABSL_EXT_STATUS_MATCHERS_H_

#include <ostream>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fgl::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& s = ::fgl::testing::GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s;
  return s.ok();
}

// StatusIs(code, message_matcher): e.g. StatusIs(kInvalidArgument, HasSubstr("num_nodes")).
MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + ::testing::PrintToString(code) + " and a matching message") {
  const absl::Status& s = ::fgl::testing::GetStatus(arg);
  *result_listener << "status is " << s;
  return s.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(s.message()),
                                       result_listener);
}

}  // namespace fgl::testing

#define FGL_MATCHERS_CONCAT_INNER_(a, b) a##b
#define FGL_MATCHERS_CONCAT_(a, b) FGL_MATCHERS_CONCAT_INNER_(a, b)

#define EXPECT_OK(expr) EXPECT_THAT((expr), ::fgl::testing::IsOk())
#define ASSERT_OK(expr) ASSERT_THAT((expr), ::fgl::testing::IsOk())

#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(FGL_MATCHERS_CONCAT_(fgl_statusor_, __LINE__), lhs, expr)
#define ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                               \
  ASSERT_TRUE(statusor.ok()) << statusor.status();      \
  lhs = std::move(statusor).value()

#endif  // FGL_THIRD_PARTY_ABSL_EXT_STATUS_MATCHERS_H_
