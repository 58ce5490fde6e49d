#include "fl/proto_json.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace fgl::fl {

std::string ToJsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  const auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  // Printing fails only for an Any whose type is not linked in: a programming error.
  CHECK(status.ok()) << status.ToString();
  return out;
}

absl::Status FromJson(const std::string& json, google::protobuf::Message* message, const std::string& where) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(json, message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", status.message().as_string()));
  }
  return absl::OkStatus();
}

}  // namespace fgl::fl
