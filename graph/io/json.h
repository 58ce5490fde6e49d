// A strict JSON (RFC 8259) reader for untrusted dataset files. The whole text is parsed, without
// recursion and under limits on size, nesting depth and value count, into a flat array of
// 24-byte records; JsonValue is a cheap view of one of them. Errors name
// "<source>:<line>:<column> (byte <offset>)".
#ifndef FGL_GRAPH_IO_JSON_H_
#define FGL_GRAPH_IO_JSON_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fgl::graph::io {

struct JsonLimits {
  size_t max_bytes = size_t{1} << 30;   // longer text: ResourceExhausted
  int max_depth = 64;                   // arrays/objects nested deeper: ResourceExhausted
  size_t max_values = size_t{1} << 26;  // more values (keys count too): ResourceExhausted
};

enum class JsonType { kNull, kBool, kNumber, kString, kArray, kObject };

// "null", "a bool", "a number", "a string", "an array", "an object": for error messages.
const char* JsonTypeName(JsonType type);

class JsonDocument;

// One value of a JsonDocument, which must outlive it and must not move while it is in use.
// Accessors never fail: asked for the wrong type they return 0, false, "" or nothing, so callers
// check the type first and build their own message with Error().
class JsonValue {
 public:
  JsonType type() const;
  bool is_null() const { return type() == JsonType::kNull; }
  bool is_bool() const { return type() == JsonType::kBool; }
  bool is_number() const { return type() == JsonType::kNumber; }
  // A number written without fraction or exponent that fits int64 ("-12", not "12.0" or "1e3").
  bool is_integer() const;
  bool is_string() const { return type() == JsonType::kString; }
  bool is_array() const { return type() == JsonType::kArray; }
  bool is_object() const { return type() == JsonType::kObject; }

  bool bool_value() const;                 // false unless is_bool()
  int64_t int_value() const;               // 0 unless is_integer()
  double number_value() const;             // 0 unless is_number(); integers converted
  absl::string_view string_value() const;  // decoded UTF-8; empty unless is_string()

  // Elements of an array or members of an object; 0 otherwise.
  size_t size() const;
  // The elements of an array, in order; empty otherwise. complexity: O(size()).
  std::vector<JsonValue> elements() const;
  // The members of an object, in text order (keys are unique); empty otherwise.
  std::vector<std::pair<absl::string_view, JsonValue>> members() const;
  // The member named `key` of an object; nullopt if absent or not an object. complexity: O(size()).
  std::optional<JsonValue> Find(absl::string_view key) const;

  // Byte offset of the value's first character in the text.
  size_t offset() const;
  // "<source>:<line>:<column> (byte <offset>)" of the value. complexity: O(offset()).
  std::string Where() const;
  // InvalidArgument "<Where()>: <message>".
  absl::Status Error(absl::string_view message) const;

 private:
  friend class JsonDocument;
  JsonValue(const JsonDocument* doc, size_t index) : doc_(doc), index_(index) {}
  const JsonDocument* doc_;
  size_t index_;
};

class JsonDocument {
 public:
  // Parses `text`, which must hold exactly one JSON value (surrounded by optional whitespace).
  // Strict: no comments, trailing commas, NaN/Infinity, leading zeros, '+' signs, single quotes,
  // control characters or invalid UTF-8 in strings, lone surrogates, or duplicate keys in one
  // object. Numbers beyond the double range are refused; underflow gives 0. Errors:
  // InvalidArgument for malformed text, DataLoss when the text ends inside the value,
  // ResourceExhausted past `limits`; each names "<source>:<line>:<column> (byte <offset>)".
  // complexity: O(|text|) time (plus O(k log k) per object of k keys), O(values) memory.
  static absl::StatusOr<JsonDocument> Parse(std::string text, std::string source,
                                            const JsonLimits& limits = {});

  JsonDocument(JsonDocument&&) = default;
  JsonDocument& operator=(JsonDocument&&) = default;

  JsonValue root() const { return JsonValue(this, 0); }
  const std::string& source() const { return source_; }
  // Values in the document, object keys included.
  size_t num_values() const { return nodes_.size(); }
  // "<source>:<line>:<column> (byte <offset>)"; lines and columns count from 1, columns in bytes.
  // complexity: O(offset).
  std::string Where(size_t offset) const;

 private:
  friend class JsonValue;
  friend class JsonParser;

  enum Kind : uint8_t { kNull, kFalse, kTrue, kInteger, kReal, kString, kArray, kObject };
  // One value. payload: int64 or double bits (numbers), the start of the decoded bytes in
  // strings_ (strings), or the index one past the value's last descendant (arrays, objects).
  // size: string length, array elements or object members. An object's members follow it as
  // key (a string record), value, key, value, ...
  struct Node {
    uint64_t offset;
    uint64_t payload;
    uint32_t size;
    Kind kind;
  };

  JsonDocument() = default;
  size_t End(size_t index) const;  // one past the last record of the value at `index`

  std::string source_;
  std::string text_;     // kept for Where()
  std::string strings_;  // decoded string bytes
  std::vector<Node> nodes_;
};

// Reads `path` with ReadFileBytes (limit limits.max_bytes; a missing file is NotFound naming the
// file and, when `dataset` is non-empty, how to get it), then parses it with `path` as source.
absl::StatusOr<JsonDocument> ReadJsonFile(const std::string& path, const std::string& dataset = "",
                                          const JsonLimits& limits = {});

}  // namespace fgl::graph::io

#endif  // FGL_GRAPH_IO_JSON_H_
