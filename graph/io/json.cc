#include "graph/io/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/charconv.h"
#include "absl/strings/str_cat.h"
#include "graph/io/file.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph::io {

const char* JsonTypeName(JsonType type) {
  switch (type) {
    case JsonType::kNull:
      return "null";
    case JsonType::kBool:
      return "a bool";
    case JsonType::kNumber:
      return "a number";
    case JsonType::kString:
      return "a string";
    case JsonType::kArray:
      return "an array";
    case JsonType::kObject:
      return "an object";
  }
  return "an unknown type";
}

// Builds a JsonDocument's records from its text. Containers are tracked on an explicit stack of
// frames, never by recursion, so the depth limit bounds memory, not the C++ stack.
class JsonParser {
 public:
  JsonParser(JsonDocument* doc, const JsonLimits& limits)
      : doc_(*doc),
        text_(doc->text_),
        limits_(limits),
        // Record sizes are uint32: never allow more values than that.
        max_values_(std::min<size_t>(limits.max_values, std::numeric_limits<uint32_t>::max())) {}

  absl::Status Run() {
    if (text_.size() > limits_.max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          doc_.source_, ": ", text_.size(), " bytes exceeds the limit of ", limits_.max_bytes));
    }
    SkipWhitespace();
    if (pos_ == text_.size()) return Truncated("expected a value");
    FGL_RETURN_IF_ERROR(ParseValue());
    while (!stack_.empty()) {
      Frame& f = stack_.back();
      const char closer = f.object ? '}' : ']';
      SkipWhitespace();
      if (pos_ == text_.size()) {
        return Truncated(f.count == 0
                             ? (f.object ? "expected a key or '}'" : "expected a value or ']'")
                             : (f.object ? "expected ',' or '}'" : "expected ',' or ']'"));
      }
      if (text_[pos_] == closer) {
        FGL_RETURN_IF_ERROR(Close());
        continue;
      }
      if (f.count > 0) {
        if (text_[pos_] != ',') {
          return Error(pos_, absl::StrCat(f.object ? "expected ',' or '}'" : "expected ',' or ']'",
                                          ", got ", Describe(pos_)));
        }
        ++pos_;
        SkipWhitespace();
        if (pos_ == text_.size()) {
          return Truncated(f.object ? "expected a key" : "expected a value");
        }
      }
      ++f.count;  // bounded by max_values_, so it fits uint32
      if (f.object) {
        if (text_[pos_] != '"') {
          return Error(pos_, absl::StrCat("expected a string key, got ", Describe(pos_)));
        }
        FGL_RETURN_IF_ERROR(ParseString());
        SkipWhitespace();
        if (pos_ == text_.size()) return Truncated("expected ':'");
        if (text_[pos_] != ':') {
          return Error(pos_, absl::StrCat("expected ':' after a key, got ", Describe(pos_)));
        }
        ++pos_;
        SkipWhitespace();
        if (pos_ == text_.size()) return Truncated("expected a value");
      }
      FGL_RETURN_IF_ERROR(ParseValue());  // may push a frame: `f` is not used after this
    }
    SkipWhitespace();
    if (pos_ != text_.size()) {
      return Error(pos_, absl::StrCat("unexpected ", Describe(pos_), " after the document"));
    }
    return absl::OkStatus();
  }

 private:
  using Kind = JsonDocument::Kind;
  struct Frame {
    size_t node;
    uint32_t count;
    bool object;
  };

  absl::Status Error(size_t at, absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(doc_.Where(at), ": ", message));
  }
  absl::Status Truncated(absl::string_view expected) const {
    return absl::DataLossError(
        absl::StrCat(doc_.Where(text_.size()), ": the text ends early (", expected, ")"));
  }

  // The byte at `at`, quoted if printable, else in hex.
  std::string Describe(size_t at) const {
    const unsigned char c = static_cast<unsigned char>(text_[at]);
    if (c >= 0x20 && c < 0x7f) return absl::StrCat("'", std::string(1, static_cast<char>(c)), "'");
    return absl::StrCat("byte 0x", absl::Hex(c, absl::kZeroPad2));
  }

  void SkipWhitespace() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++pos_;
    }
  }

  absl::StatusOr<size_t> AddNode(Kind kind, size_t offset) {
    if (doc_.nodes_.size() >= max_values_) {
      return absl::ResourceExhaustedError(
          absl::StrCat(doc_.Where(offset), ": more than ", max_values_, " values"));
    }
    doc_.nodes_.push_back(JsonDocument::Node{offset, 0, 0, kind});
    return doc_.nodes_.size() - 1;
  }

  // At a non-whitespace byte. Scalars are complete on return; a container's record is added
  // and its frame pushed.
  absl::Status ParseValue() {
    const char c = text_[pos_];
    switch (c) {
      case '[':
      case '{': {
        if (stack_.size() >= static_cast<size_t>(std::max(limits_.max_depth, 0))) {
          return absl::ResourceExhaustedError(absl::StrCat(
              doc_.Where(pos_), ": arrays and objects nested deeper than ", limits_.max_depth));
        }
        FGL_ASSIGN_OR_RETURN(const size_t node,
                             AddNode(c == '[' ? Kind::kArray : Kind::kObject, pos_));
        stack_.push_back(Frame{node, 0, c == '{'});
        ++pos_;
        return absl::OkStatus();
      }
      case '"':
        return ParseString();
      case 't':
        return ParseLiteral("true", Kind::kTrue);
      case 'f':
        return ParseLiteral("false", Kind::kFalse);
      case 'n':
        return ParseLiteral("null", Kind::kNull);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
        return Error(pos_, absl::StrCat("expected a value, got ", Describe(pos_)));
    }
  }

  absl::Status Close() {
    const Frame f = stack_.back();
    stack_.pop_back();
    ++pos_;
    JsonDocument::Node& node = doc_.nodes_[f.node];
    node.payload = doc_.nodes_.size();
    node.size = f.count;
    if (f.object) return CheckUniqueKeys(f.node);
    return absl::OkStatus();
  }

  // Refuses an object that names a key twice (Python keeps the last value silently).
  absl::Status CheckUniqueKeys(size_t object) const {
    const JsonDocument::Node& o = doc_.nodes_[object];
    if (o.size < 2) return absl::OkStatus();
    std::vector<std::pair<absl::string_view, uint64_t>> keys;
    keys.reserve(o.size);
    for (size_t i = object + 1; i < o.payload; i = doc_.End(i + 1)) {
      const JsonDocument::Node& k = doc_.nodes_[i];
      keys.emplace_back(absl::string_view(doc_.strings_).substr(k.payload, k.size), k.offset);
    }
    std::sort(keys.begin(), keys.end());
    for (size_t i = 1; i < keys.size(); ++i) {
      if (keys[i].first == keys[i - 1].first) {
        return Error(std::max(keys[i].second, keys[i - 1].second),
                     absl::StrCat("duplicate key \"", Shorten(keys[i].first), "\" in one object"));
      }
    }
    return absl::OkStatus();
  }

  static std::string Shorten(absl::string_view s) {
    constexpr size_t kMaxShown = 40;
    return s.size() <= kMaxShown ? std::string(s) : absl::StrCat(s.substr(0, kMaxShown), "...");
  }

  absl::Status ParseLiteral(absl::string_view word, Kind kind) {
    const absl::string_view rest = absl::string_view(text_).substr(pos_);
    if (rest.size() < word.size() && word.substr(0, rest.size()) == rest) {
      return Truncated(absl::StrCat("inside '", word, "'"));
    }
    if (rest.substr(0, word.size()) != word) {
      return Error(pos_, absl::StrCat("invalid literal: expected '", word, "'"));
    }
    FGL_RETURN_IF_ERROR(AddNode(kind, pos_).status());
    pos_ += word.size();
    return absl::OkStatus();
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  absl::Status ParseNumber() {
    const size_t start = pos_;
    const size_t n = text_.size();
    auto is_digit = [this](size_t i) { return text_[i] >= '0' && text_[i] <= '9'; };
    if (text_[pos_] == '-') ++pos_;
    if (pos_ == n) return Truncated("inside a number");
    if (text_[pos_] == '0') {
      ++pos_;
      if (pos_ < n && is_digit(pos_)) return Error(pos_, "a number may not have a leading zero");
    } else if (is_digit(pos_)) {
      while (pos_ < n && is_digit(pos_)) ++pos_;
    } else {
      return Error(pos_, absl::StrCat("expected a digit, got ", Describe(pos_)));
    }
    // Decimal exponent of the leading digit, to tell overflow from underflow on a range error.
    int64_t magnitude = 0;
    {
      size_t first = start + (text_[start] == '-');
      while (first < pos_ && text_[first] == '0') ++first;
      magnitude = static_cast<int64_t>(pos_ - first);  // digits before the point, without zeros
    }
    bool integer = true;
    if (pos_ < n && text_[pos_] == '.') {
      integer = false;
      ++pos_;
      if (pos_ == n) return Truncated("inside a number");
      if (!is_digit(pos_)) return Error(pos_, "expected a digit after '.'");
      const size_t frac = pos_;
      while (pos_ < n && is_digit(pos_)) ++pos_;
      if (magnitude == 0) {  // 0.000ddd: the leading digit sits after the zeros
        size_t z = frac;
        while (z < pos_ && text_[z] == '0') ++z;
        magnitude = -static_cast<int64_t>(z - frac);
      }
    }
    if (pos_ < n && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integer = false;
      ++pos_;
      bool negative = false;
      if (pos_ < n && (text_[pos_] == '+' || text_[pos_] == '-')) negative = text_[pos_++] == '-';
      if (pos_ == n) return Truncated("inside a number");
      if (!is_digit(pos_)) return Error(pos_, "expected a digit in the exponent");
      int64_t exponent = 0;
      while (pos_ < n && is_digit(pos_)) {
        exponent = std::min<int64_t>(exponent * 10 + (text_[pos_] - '0'), int64_t{1} << 40);
        ++pos_;
      }
      magnitude += negative ? -exponent : exponent;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    FGL_ASSIGN_OR_RETURN(const size_t node, AddNode(Kind::kReal, start));
    JsonDocument::Node& rec = doc_.nodes_[node];
    if (integer) {
      int64_t v = 0;
      const auto r = std::from_chars(first, last, v);
      if (r.ec == std::errc() && r.ptr == last) {
        rec.kind = Kind::kInteger;
        std::memcpy(&rec.payload, &v, sizeof(v));
        return absl::OkStatus();
      }
      // Beyond int64: keep it as a double, as Python's json would give a float for 1e19.
    }
    double d = 0;
    const auto r = absl::from_chars(first, last, d);
    if (r.ptr != last) return Error(start, "malformed number");  // not reached: grammar checked
    if (r.ec == std::errc::result_out_of_range) {
      if (magnitude > 0) {
        return Error(start, absl::StrCat("number ", Shorten(absl::string_view(first, last - first)),
                                         " is beyond the range of a double"));
      }
      d = text_[start] == '-' ? -0.0 : 0.0;  // underflow rounds to zero
    } else if (r.ec != std::errc()) {
      return Error(start, "malformed number");
    }
    std::memcpy(&rec.payload, &d, sizeof(d));
    return absl::OkStatus();
  }

  // Four hex digits at pos_ -> the code unit; pos_ moves past them.
  absl::StatusOr<uint32_t> ParseHex4() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (pos_ == text_.size()) return Truncated("inside a \\u escape");
      const char c = text_[pos_];
      uint32_t digit;
      if (c >= '0' && c <= '9') {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return Error(pos_,
                     absl::StrCat("expected a hex digit in a \\u escape, got ", Describe(pos_)));
      }
      v = v * 16 + digit;
    }
    return v;
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  // The length of the well-formed UTF-8 sequence starting at `at` (a byte >= 0x80), or 0.
  // Overlong forms, surrogates and code points above U+10FFFF are ill-formed (Unicode table 3-7).
  size_t Utf8Length(size_t at) const {
    const size_t n = text_.size();
    auto byte = [this](size_t i) { return static_cast<unsigned char>(text_[i]); };
    const unsigned char b0 = byte(at);
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      len = 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      len = 3;
      if (b0 == 0xe0) lo = 0xa0;
      if (b0 == 0xed) hi = 0x9f;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      len = 4;
      if (b0 == 0xf0) lo = 0x90;
      if (b0 == 0xf4) hi = 0x8f;
    } else {
      return 0;
    }
    if (n - at < len) return 0;
    if (byte(at + 1) < lo || byte(at + 1) > hi) return 0;
    for (size_t i = 2; i < len; ++i) {
      if (byte(at + i) < 0x80 || byte(at + i) > 0xbf) return 0;
    }
    return len;
  }

  // At the opening quote. Adds a string record holding the decoded bytes.
  absl::Status ParseString() {
    const size_t start = pos_;
    FGL_ASSIGN_OR_RETURN(const size_t node, AddNode(Kind::kString, start));
    std::string& out = doc_.strings_;
    const size_t begin = out.size();
    const size_t n = text_.size();
    ++pos_;
    while (true) {
      // Copy a run of plain ASCII bytes at once.
      size_t run = pos_;
      while (run < n) {
        const unsigned char c = static_cast<unsigned char>(text_[run]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++run;
      }
      out.append(text_, pos_, run - pos_);
      pos_ = run;
      if (pos_ == n) return Truncated("inside a string");
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        break;
      }
      if (c < 0x20) {
        return Error(
            pos_, absl::StrCat("control character ", Describe(pos_), " in a string (escape it)"));
      }
      if (c >= 0x80) {
        const size_t len = Utf8Length(pos_);
        if (len == 0) {
          // A lead byte whose sequence the end of the text cuts short: truncation, not bad UTF-8.
          const size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
          if (c >= 0xc2 && c <= 0xf4 && n - pos_ < want) return Truncated("inside a string");
          return Error(pos_, absl::StrCat("invalid UTF-8 starting with ", Describe(pos_)));
        }
        out.append(text_, pos_, len);
        pos_ += len;
        continue;
      }
      // A backslash escape.
      ++pos_;
      if (pos_ == n) return Truncated("inside a string escape");
      const char e = text_[pos_];
      ++pos_;
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          const size_t escape = pos_ - 2;
          FGL_ASSIGN_OR_RETURN(uint32_t cp, ParseHex4());
          if (cp >= 0xdc00 && cp <= 0xdfff) {
            return Error(escape, "lone low surrogate in a \\u escape");
          }
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (pos_ == n || (text_[pos_] == '\\' && pos_ + 1 == n)) {
              return Truncated("expected a low surrogate \\u escape");
            }
            if (text_[pos_] != '\\' || text_[pos_ + 1] != 'u') {
              return Error(escape, "high surrogate not followed by a \\u low surrogate");
            }
            pos_ += 2;
            FGL_ASSIGN_OR_RETURN(const uint32_t low, ParseHex4());
            if (low < 0xdc00 || low > 0xdfff) {
              return Error(escape, "high surrogate not followed by a low surrogate");
            }
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
          }
          AppendUtf8(cp, &out);
          break;
        }
        default:
          return Error(pos_ - 2, absl::StrCat("invalid escape \\", Describe(pos_ - 1)));
      }
    }
    const size_t len = out.size() - begin;
    if (len > std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError(
          absl::StrCat(doc_.Where(start), ": a string of ", len, " bytes"));
    }
    JsonDocument::Node& rec = doc_.nodes_[node];
    rec.payload = begin;
    rec.size = static_cast<uint32_t>(len);
    return absl::OkStatus();
  }

  JsonDocument& doc_;
  const std::string& text_;
  const JsonLimits limits_;
  const size_t max_values_;
  size_t pos_ = 0;
  std::vector<Frame> stack_;
};

absl::StatusOr<JsonDocument> JsonDocument::Parse(std::string text, std::string source,
                                                 const JsonLimits& limits) {
  JsonDocument doc;
  doc.text_ = std::move(text);
  doc.source_ = std::move(source);
  JsonParser parser(&doc, limits);
  FGL_RETURN_IF_ERROR(parser.Run());
  return doc;
}

std::string JsonDocument::Where(size_t offset) const {
  offset = std::min(offset, text_.size());
  const absl::string_view before = absl::string_view(text_).substr(0, offset);
  const size_t line = 1 + std::count(before.begin(), before.end(), '\n');
  const size_t last_newline = before.rfind('\n');
  const size_t column =
      last_newline == absl::string_view::npos ? offset + 1 : offset - last_newline;
  return absl::StrCat(source_, ":", line, ":", column, " (byte ", offset, ")");
}

size_t JsonDocument::End(size_t index) const {
  const Node& node = nodes_[index];
  return node.kind == kArray || node.kind == kObject ? node.payload : index + 1;
}

JsonType JsonValue::type() const {
  switch (doc_->nodes_[index_].kind) {
    case JsonDocument::kNull:
      return JsonType::kNull;
    case JsonDocument::kFalse:
    case JsonDocument::kTrue:
      return JsonType::kBool;
    case JsonDocument::kInteger:
    case JsonDocument::kReal:
      return JsonType::kNumber;
    case JsonDocument::kString:
      return JsonType::kString;
    case JsonDocument::kArray:
      return JsonType::kArray;
    case JsonDocument::kObject:
      return JsonType::kObject;
  }
  return JsonType::kNull;
}

bool JsonValue::is_integer() const { return doc_->nodes_[index_].kind == JsonDocument::kInteger; }

bool JsonValue::bool_value() const { return doc_->nodes_[index_].kind == JsonDocument::kTrue; }

int64_t JsonValue::int_value() const {
  const JsonDocument::Node& node = doc_->nodes_[index_];
  if (node.kind != JsonDocument::kInteger) return 0;
  int64_t v;
  std::memcpy(&v, &node.payload, sizeof(v));
  return v;
}

double JsonValue::number_value() const {
  const JsonDocument::Node& node = doc_->nodes_[index_];
  if (node.kind == JsonDocument::kInteger) return static_cast<double>(int_value());
  if (node.kind != JsonDocument::kReal) return 0;
  double v;
  std::memcpy(&v, &node.payload, sizeof(v));
  return v;
}

absl::string_view JsonValue::string_value() const {
  const JsonDocument::Node& node = doc_->nodes_[index_];
  if (node.kind != JsonDocument::kString) return {};
  return absl::string_view(doc_->strings_).substr(node.payload, node.size);
}

size_t JsonValue::size() const {
  const JsonDocument::Node& node = doc_->nodes_[index_];
  return node.kind == JsonDocument::kArray || node.kind == JsonDocument::kObject ? node.size : 0;
}

std::vector<JsonValue> JsonValue::elements() const {
  std::vector<JsonValue> out;
  const JsonDocument::Node& node = doc_->nodes_[index_];
  if (node.kind != JsonDocument::kArray) return out;
  out.reserve(node.size);
  for (size_t i = index_ + 1; i < node.payload; i = doc_->End(i)) out.push_back(JsonValue(doc_, i));
  return out;
}

std::vector<std::pair<absl::string_view, JsonValue>> JsonValue::members() const {
  std::vector<std::pair<absl::string_view, JsonValue>> out;
  const JsonDocument::Node& node = doc_->nodes_[index_];
  if (node.kind != JsonDocument::kObject) return out;
  out.reserve(node.size);
  for (size_t i = index_ + 1; i < node.payload; i = doc_->End(i + 1)) {
    out.emplace_back(JsonValue(doc_, i).string_value(), JsonValue(doc_, i + 1));
  }
  return out;
}

std::optional<JsonValue> JsonValue::Find(absl::string_view key) const {
  const JsonDocument::Node& node = doc_->nodes_[index_];
  if (node.kind != JsonDocument::kObject) return std::nullopt;
  for (size_t i = index_ + 1; i < node.payload; i = doc_->End(i + 1)) {
    if (JsonValue(doc_, i).string_value() == key) return JsonValue(doc_, i + 1);
  }
  return std::nullopt;
}

size_t JsonValue::offset() const { return doc_->nodes_[index_].offset; }

std::string JsonValue::Where() const { return doc_->Where(offset()); }

absl::Status JsonValue::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(Where(), ": ", message));
}

absl::StatusOr<JsonDocument> ReadJsonFile(const std::string& path, const std::string& dataset,
                                          const JsonLimits& limits) {
  FGL_ASSIGN_OR_RETURN(std::string text, ReadFileBytes(path, dataset, limits.max_bytes));
  return JsonDocument::Parse(std::move(text), path, limits);
}

}  // namespace fgl::graph::io
