// Result protos as JSON, through protobuf's own printer and parser (util/json_util.h): lossless
// doubles, NaN and infinities as the strings "NaN"/"Infinity", field names as declared.
#ifndef FGL_FL_PROTO_JSON_H_
#define FGL_FL_PROTO_JSON_H_

#include <google/protobuf/message.h>

#include <string>

#include "absl/status/status.h"

namespace fgl::fl {

// One line of JSON (no trailing newline).
std::string ToJsonLine(const google::protobuf::Message& message);

// Parses `json` into `message`; fields it does not know are ignored (records written by older
// code stay readable). `where` (a file name) prefixes errors.
absl::Status FromJson(const std::string& json, google::protobuf::Message* message, const std::string& where);

}  // namespace fgl::fl

#endif  // FGL_FL_PROTO_JSON_H_
