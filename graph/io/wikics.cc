#include "graph/io/wikics.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "graph/io/file.h"
#include "nlohmann/json.hpp"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::graph::io {
namespace {

using Json = nlohmann::json;

// Wiki-CS features are 300-dimensional averaged GloVe vectors.
constexpr int64_t kNumFeatures = 300;
// Larger label values mean a corrupt file, and would make per-class arrays huge.
constexpr int64_t kMaxClasses = int64_t{1} << 16;
// The real file is about 80 MB with 4.7 million values and nesting depth 3.
constexpr size_t kMaxBytes = size_t{512} << 20;
constexpr size_t kMaxDepth = 16;                // arrays and objects, the top-level object included
constexpr size_t kMaxValues = size_t{1} << 25;  // keys count too: bounds the document's memory
// Longest parser message kept: a bad token can be megabytes long.
constexpr size_t kMaxMessage = 240;

// "<path>:<line>:<column> (byte <offset>)"; lines and columns count from 1, columns in bytes.
// complexity: O(offset).
std::string Where(const std::string& path, absl::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  const absl::string_view before = text.substr(0, offset);
  const size_t line = 1 + std::count(before.begin(), before.end(), '\n');
  const size_t last_newline = before.rfind('\n');
  const size_t column =
      last_newline == absl::string_view::npos ? offset + 1 : offset - last_newline;
  return absl::StrCat(path, ":", line, ":", column, " (byte ", offset, ")");
}

// `s` with bytes outside printable ASCII as \xNN, and its middle elided past kMaxMessage bytes.
std::string Printable(absl::string_view s) {
  std::string out;
  for (const char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, "\\x", absl::Hex(u, absl::kZeroPad2));
    }
  }
  if (out.size() > kMaxMessage) {
    out = absl::StrCat(out.substr(0, kMaxMessage / 2), " ... ",
                       out.substr(out.size() - kMaxMessage / 2));
  }
  return out;
}

// nlohmann's exception text without its "[json.exception.parse_error.101] parse error at line 1,
// column 5: " prefix (we name the place ourselves), made printable and short.
std::string ParserMessage(absl::string_view what) {
  if (const size_t end = what.find("] "); !what.empty() && what[0] == '[' && end != what.npos) {
    what.remove_prefix(end + 2);
  }
  if (absl::StartsWith(what, "parse error")) {
    if (const size_t colon = what.find(": "); colon != what.npos) what.remove_prefix(colon + 2);
  }
  return Printable(what);
}

// ---- parsing with positions ----

// A pointer into the text that also records in *read how far it has been advanced. nlohmann's
// SAX events (3.11) carry no position, so the parser reads the text through these.
class TrackingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator(const char* p, const char** read) : p_(p), read_(read) {}
  reference operator*() const { return *p_; }
  TrackingIterator& operator++() {
    *read_ = ++p_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackingIterator& other) const { return p_ == other.p_; }
  bool operator!=(const TrackingIterator& other) const { return p_ != other.p_; }

 private:
  const char* p_;
  const char** read_;
};

// Base of the two SAX handlers below: runs nlohmann's strict parser (RFC 8259: no comments,
// trailing commas, NaN, leading zeros or invalid UTF-8; a leading UTF-8 BOM is skipped) over the
// text, and gives each event the byte offset where its token starts. The parser raises an event
// right after reading its token, and reads nothing past a token except one byte after a number;
// so a token starts at the first byte, from where the previous event's read ended, that is not
// whitespace, ',' or ':'. Every event must call TokenStart() exactly once.
class PositionedSax : public nlohmann::json_sax<Json> {
 public:
  explicit PositionedSax(absl::string_view text) : text_(text), read_(text.data()) {}

 protected:
  absl::string_view text() const { return text_; }

  // False if an event or parse_error() stopped the parse.
  bool Run() {
    const char* begin = text_.data();
    return Json::sax_parse(TrackingIterator(begin, &read_),
                           TrackingIterator(begin + text_.size(), &read_), this,
                           Json::input_format_t::json, /*strict=*/true,
                           /*ignore_comments=*/false);
  }

  size_t TokenStart() {
    const size_t read = static_cast<size_t>(read_ - text_.data());
    size_t at = previous_read_;
    while (at < read && (text_[at] == ' ' || text_[at] == '\t' || text_[at] == '\n' ||
                         text_[at] == '\r' || text_[at] == ',' || text_[at] == ':')) {
      ++at;
    }
    previous_read_ = read;
    return at;
  }

 private:
  absl::string_view text_;
  const char* read_;
  size_t previous_read_ = 0;
};

// Builds the document as a Json, refusing duplicate keys (Python would keep the last silently),
// nesting deeper than kMaxDepth and more than kMaxValues values. Stops at the first error. The
// parser keeps its own stack of open containers, so deep input cannot overflow the C++ stack.
class DocumentBuilder final : public PositionedSax {
 public:
  DocumentBuilder(const std::string& path, absl::string_view text)
      : PositionedSax(text), path_(path) {}

  absl::StatusOr<Json> Build() && {
    if (!Run() && status_.ok()) {  // not reached: every stop sets status_
      status_ = absl::InternalError(absl::StrCat(path_, ": the JSON parser stopped early"));
    }
    if (!status_.ok()) return status_;
    return std::move(root_);
  }

  bool null() override { return Add(Json(nullptr)); }
  bool boolean(bool v) override { return Add(Json(v)); }
  bool number_integer(number_integer_t v) override { return Add(Json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Add(Json(v)); }
  bool number_float(number_float_t v, const string_t& /*text*/) override { return Add(Json(v)); }
  bool string(string_t& v) override { return Add(Json(std::move(v))); }
  bool binary(binary_t& /*v*/) override {  // CBOR and the like only, never JSON text
    return Fail(absl::InvalidArgumentError(
        absl::StrCat(Where(path_, text(), TokenStart()), ": unexpected binary value")));
  }
  bool start_object(size_t /*elements*/) override { return Open(Json::value_t::object); }
  bool start_array(size_t /*elements*/) override { return Open(Json::value_t::array); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool key(string_t& key) override {
    const size_t at = TokenStart();
    if (!Count(at)) return false;
    Json::object_t& members = open_.back()->get_ref<Json::object_t&>();
    const auto [it, inserted] = members.try_emplace(key, nullptr);
    if (!inserted) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          Where(path_, text(), at), ": duplicate key \"", Printable(key), "\" in one object")));
    }
    member_ = &it->second;
    return true;
  }

  // `position` counts the bytes read, the one that failed included, with the end of the text as
  // one more: so `position - 1` is the offset of the failing byte, the text's size at the end.
  bool parse_error(size_t position, const std::string& /*last_token*/,
                   const Json::exception& error) override {
    const size_t offset = std::min(position > 0 ? position - 1 : 0, text().size());
    const std::string where = Where(path_, text(), offset);
    const std::string message = ParserMessage(error.what());
    return Fail(
        offset == text().size()
            ? absl::DataLossError(absl::StrCat(where, ": the text ends early (", message, ")"))
            : absl::InvalidArgumentError(absl::StrCat(where, ": ", message)));
  }

 private:
  bool Fail(absl::Status status) {
    status_ = std::move(status);
    return false;
  }

  bool Count(size_t at) {
    if (++values_ <= kMaxValues) return true;
    return Fail(absl::ResourceExhaustedError(
        absl::StrCat(Where(path_, text(), at), ": more than ", kMaxValues, " values")));
  }

  // Stores `value` as the root, the next element of the open array or the member just keyed.
  Json* Place(Json value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Json& container = *open_.back();
    if (container.is_array()) {
      Json::array_t& elements = container.get_ref<Json::array_t&>();
      elements.push_back(std::move(value));
      return &elements.back();
    }
    *member_ = std::move(value);
    return member_;
  }

  bool Add(Json value) {
    if (!Count(TokenStart())) return false;
    Place(std::move(value));
    return true;
  }

  // An open container is not moved while open: only its own elements are appended until it
  // closes, so the pointers in open_ stay valid.
  bool Open(Json::value_t type) {
    const size_t at = TokenStart();
    if (!Count(at)) return false;
    if (open_.size() >= kMaxDepth) {
      return Fail(absl::ResourceExhaustedError(absl::StrCat(
          Where(path_, text(), at), ": arrays and objects nested deeper than ", kMaxDepth)));
    }
    open_.push_back(Place(Json(type)));
    return true;
  }

  bool Close() {
    TokenStart();
    open_.pop_back();
    return true;
  }

  const std::string& path_;
  Json root_;
  std::vector<Json*> open_;
  Json* member_ = nullptr;
  size_t values_ = 0;
  absl::Status status_;
};

// Where a value sits: keys and array indices from the root; {} is the root itself.
using JsonPath = std::vector<std::variant<std::string, int64_t>>;

// "links[7][2]".
std::string PathName(const JsonPath& at) {
  std::string out;
  for (const auto& step : at) {
    if (const std::string* key = std::get_if<std::string>(&step)) {
      absl::StrAppend(&out, out.empty() ? "" : ".", Printable(*key));
    } else {
      absl::StrAppend(&out, "[", std::get<int64_t>(step), "]");
    }
  }
  return out;
}

// Finds the offset where the value at a path starts, by parsing the text again: errors are rare,
// and this keeps offsets out of the document.
class Locator final : public PositionedSax {
 public:
  Locator(absl::string_view text, const JsonPath& target) : PositionedSax(text), target_(target) {}

  // 0 if the text has no such value (not reached for a path into the parsed document).
  size_t Find() && {
    Run();
    return found_;
  }

  bool null() override { return Value(); }
  bool boolean(bool /*v*/) override { return Value(); }
  bool number_integer(number_integer_t /*v*/) override { return Value(); }
  bool number_unsigned(number_unsigned_t /*v*/) override { return Value(); }
  bool number_float(number_float_t /*v*/, const string_t& /*text*/) override { return Value(); }
  bool string(string_t& /*v*/) override { return Value(); }
  bool binary(binary_t& /*v*/) override { return Value(); }
  bool start_object(size_t /*elements*/) override { return Open(/*array=*/false); }
  bool start_array(size_t /*elements*/) override { return Open(/*array=*/true); }
  bool key(string_t& key) override {
    TokenStart();
    frames_.back().key = key;
    return true;
  }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool parse_error(size_t /*position*/, const std::string& /*last_token*/,
                   const Json::exception& /*error*/) override {
    return false;
  }

 private:
  struct Frame {
    bool array;
    int64_t index = -1;  // arrays: the index of the current element
    std::string key;     // objects: the key of the current member
  };

  // At the start of a value: stops the parse if it is the target.
  bool Value() {
    const size_t at = TokenStart();
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
    if (IsTarget()) {
      found_ = at;
      return false;
    }
    return true;
  }

  bool IsTarget() const {
    if (frames_.size() != target_.size()) return false;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      if (f.array) {
        const int64_t* index = std::get_if<int64_t>(&target_[i]);
        if (index == nullptr || *index != f.index) return false;
      } else {
        const std::string* key = std::get_if<std::string>(&target_[i]);
        if (key == nullptr || *key != f.key) return false;
      }
    }
    return true;
  }

  bool Open(bool array) {
    if (!Value()) return false;
    frames_.push_back(Frame{array});
    return true;
  }

  bool Close() {
    TokenStart();
    frames_.pop_back();
    return true;
  }

  const JsonPath& target_;
  std::vector<Frame> frames_;
  size_t found_ = 0;
};

// ---- reading the parsed file; nothing in it is trusted ----

struct Document {
  std::string path;
  std::string text;
  Json root;

  // InvalidArgument "<path>:<line>:<column> (byte <offset>): <PathName(at)>: <message>".
  // complexity: O(|text|).
  absl::Status Error(const JsonPath& at, absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(Where(path, text, Locator(text, at).Find()),
                                                   ": ", at.empty() ? "" : PathName(at) + ": ",
                                                   message));
  }
};

// "null", "a bool", "a number", "a string", "an array", "an object": for error messages.
const char* TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::binary:
      return "binary data";
    case Json::value_t::discarded:
      break;
  }
  return "nothing";
}

// A number as JSON writes it (reals in shortest round-trip form: "1e+39", "1.0"); else the type.
std::string Describe(const Json& v) { return v.is_number() ? v.dump() : TypeName(v); }

// The value of an integer (a number written without fraction or exponent) that fits int64.
std::optional<int64_t> ToInt64(const Json& v) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  return std::nullopt;
}

// Only after v.is_array().
const Json::array_t& Elements(const Json& v) { return v.get_ref<const Json::array_t&>(); }

// The array under `key` in the top-level object.
absl::StatusOr<const Json*> ArrayMember(const Document& doc, const std::string& key) {
  const auto it = doc.root.find(key);
  if (it == doc.root.end()) {
    return doc.Error({}, absl::StrCat("the top-level object has no \"", key, "\""));
  }
  if (!it->is_array()) {
    return doc.Error({key}, absl::StrCat("expected an array, got ", TypeName(*it)));
  }
  return &*it;
}

// `list` (already known to be an array, at `at`) must have `n` entries.
absl::Status CheckLength(const Document& doc, const JsonPath& at, const Json& list, int64_t n) {
  if (static_cast<int64_t>(list.size()) != n) {
    return doc.Error(at, absl::StrCat(list.size(), " entries, but labels has ", n));
  }
  return absl::OkStatus();
}

absl::StatusOr<torch::Tensor> ReadLabels(const Document& doc, int64_t* num_classes) {
  FGL_ASSIGN_OR_RETURN(const Json* list, ArrayMember(doc, "labels"));
  const Json::array_t& items = Elements(*list);
  const int64_t n = static_cast<int64_t>(items.size());
  torch::Tensor y = torch::empty({n}, torch::kInt64);
  int64_t* out = y.data_ptr<int64_t>();
  int64_t hi = -1;
  for (int64_t v = 0; v < n; ++v) {
    const Json& item = items[v];
    if (!item.is_number_integer()) {
      return doc.Error({"labels", v}, absl::StrCat("expected an integer, got ", TypeName(item)));
    }
    const std::optional<int64_t> label = ToInt64(item);
    if (!label.has_value() || *label < 0 || *label >= kMaxClasses) {
      return doc.Error({"labels", v},
                       absl::StrCat("label ", item.dump(), " outside [0, ", kMaxClasses, ")"));
    }
    out[v] = *label;
    hi = std::max(hi, out[v]);
  }
  *num_classes = hi + 1;
  return y;
}

absl::StatusOr<torch::Tensor> ReadFeatures(const Document& doc, int64_t n) {
  FGL_ASSIGN_OR_RETURN(const Json* list, ArrayMember(doc, "features"));
  FGL_RETURN_IF_ERROR(CheckLength(doc, {"features"}, *list, n));
  const Json::array_t& rows = Elements(*list);
  torch::Tensor x = torch::empty({n, kNumFeatures}, torch::kFloat32);
  float* out = x.data_ptr<float>();
  for (int64_t v = 0; v < n; ++v) {
    const Json& row = rows[v];
    if (!row.is_array() || static_cast<int64_t>(row.size()) != kNumFeatures) {
      return doc.Error(
          {"features", v},
          absl::StrCat("expected an array of ", kNumFeatures, " numbers, got ", TypeName(row),
                       row.is_array() ? absl::StrCat(" of ", row.size()) : ""));
    }
    const Json::array_t& values = Elements(row);
    for (int64_t j = 0; j < kNumFeatures; ++j) {
      const Json& value = values[j];
      // Checked in double: a double beyond the float range has no defined float conversion. The
      // parser refuses numbers beyond the double range.
      if (!value.is_number() ||
          !(std::abs(value.get<double>()) <= std::numeric_limits<float>::max())) {
        return doc.Error({"features", v, j},
                         absl::StrCat("expected a finite float32, got ", Describe(value)));
      }
      out[v * kNumFeatures + j] = static_cast<float>(value.get<double>());
    }
  }
  return x;
}

absl::StatusOr<CsrGraph> ReadLinks(const Document& doc, int64_t n) {
  FGL_ASSIGN_OR_RETURN(const Json* list, ArrayMember(doc, "links"));
  FGL_RETURN_IF_ERROR(CheckLength(doc, {"links"}, *list, n));
  const Json::array_t& rows = Elements(*list);
  std::vector<int64_t> src, dst;
  for (int64_t v = 0; v < n; ++v) {
    const Json& row = rows[v];
    if (!row.is_array()) {
      return doc.Error({"links", v},
                       absl::StrCat("expected an array of node ids, got ", TypeName(row)));
    }
    const Json::array_t& ids = Elements(row);
    for (int64_t j = 0; j < static_cast<int64_t>(ids.size()); ++j) {
      const Json& id = ids[j];
      if (!id.is_number_integer()) {
        return doc.Error({"links", v, j}, absl::StrCat("expected a node id, got ", TypeName(id)));
      }
      const std::optional<int64_t> u = ToInt64(id);
      if (!u.has_value() || *u < 0 || *u >= n) {
        return doc.Error({"links", v, j},
                         absl::StrCat("node ", id.dump(), " outside [0, ", n, ")"));
      }
      src.push_back(v);
      dst.push_back(*u);
    }
  }
  return CsrFromEdges(n, src, dst, {}, doc.path + ": links");
}

// One mask at `at`: an array of N true/false or 0/1 entries.
absl::StatusOr<torch::Tensor> ReadMask(const Document& doc, const JsonPath& at, const Json& list,
                                       int64_t n) {
  if (!list.is_array()) {
    return doc.Error(at, absl::StrCat("expected an array, got ", TypeName(list)));
  }
  FGL_RETURN_IF_ERROR(CheckLength(doc, at, list, n));
  const Json::array_t& items = Elements(list);
  torch::Tensor mask = torch::empty({n}, torch::kBool);
  bool* out = mask.data_ptr<bool>();
  for (int64_t v = 0; v < n; ++v) {
    const Json& item = items[v];
    const std::optional<int64_t> i = ToInt64(item);
    if (item.is_boolean()) {
      out[v] = item.get<bool>();
    } else if (i == 0 || i == 1) {
      out[v] = i == 1;
    } else {
      JsonPath entry = at;
      entry.emplace_back(v);
      return doc.Error(entry, absl::StrCat("expected true, false, 0 or 1, got ", Describe(item)));
    }
  }
  return mask;
}

// K masks under `key`.
absl::StatusOr<std::vector<torch::Tensor>> ReadMasks(const Document& doc, const std::string& key,
                                                     int64_t n) {
  FGL_ASSIGN_OR_RETURN(const Json* list, ArrayMember(doc, key));
  const Json::array_t& items = Elements(*list);
  std::vector<torch::Tensor> masks;
  for (int64_t k = 0; k < static_cast<int64_t>(items.size()); ++k) {
    FGL_ASSIGN_OR_RETURN(torch::Tensor m, ReadMask(doc, {key, k}, items[k], n));
    masks.push_back(std::move(m));
  }
  return masks;
}

absl::StatusOr<Dataset> ReadDataset(const Document& doc, const std::string& name) {
  if (!doc.root.is_object()) {
    return doc.Error({}, absl::StrCat("expected a top-level object, got ", TypeName(doc.root)));
  }
  Dataset d;
  d.name = name;
  // Labels first: they fix N.
  FGL_ASSIGN_OR_RETURN(d.labels, ReadLabels(doc, &d.num_classes));
  const int64_t n = d.labels.size(0);
  FGL_ASSIGN_OR_RETURN(d.features, ReadFeatures(doc, n));
  FGL_ASSIGN_OR_RETURN(d.graph, ReadLinks(doc, n));

  FGL_ASSIGN_OR_RETURN(std::vector<torch::Tensor> train, ReadMasks(doc, "train_masks", n));
  FGL_ASSIGN_OR_RETURN(std::vector<torch::Tensor> val, ReadMasks(doc, "val_masks", n));
  FGL_ASSIGN_OR_RETURN(std::vector<torch::Tensor> stopping, ReadMasks(doc, "stopping_masks", n));
  FGL_ASSIGN_OR_RETURN(const Json* test_list, ArrayMember(doc, "test_mask"));
  FGL_ASSIGN_OR_RETURN(torch::Tensor test, ReadMask(doc, {"test_mask"}, *test_list, n));
  if (train.size() != val.size() || train.size() != stopping.size()) {
    return doc.Error({}, absl::StrCat(train.size(), " train_masks, ", val.size(), " val_masks and ",
                                      stopping.size(), " stopping_masks; expected equal counts"));
  }
  for (size_t k = 0; k < train.size(); ++k) {
    d.provided_splits.push_back(NodeSplit{train[k], val[k], test.clone()});
  }
  FGL_RETURN_IF_ERROR(ValidateDataset(d));
  return d;
}

}  // namespace

absl::StatusOr<Dataset> LoadWikiCs(const std::string& dir, const std::string& name) {
  Document doc;
  doc.path = dir + "/data.json";
  FGL_ASSIGN_OR_RETURN(doc.text, ReadFileBytes(doc.path, name, kMaxBytes));
  // ReadDataset checks each value's type before reading it, so nlohmann should never throw; if it
  // did, the file would still be the cause, and the caller gets a Status, not an exception.
  try {
    FGL_ASSIGN_OR_RETURN(doc.root, DocumentBuilder(doc.path, doc.text).Build());
    return ReadDataset(doc, name);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(doc.path, ": ", ParserMessage(e.what())));
  }
}

}  // namespace fgl::graph::io
