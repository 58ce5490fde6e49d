#include "graph/io/npy.h"

#include <zip.h>

#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"
#include "graph/io/file.h"
#include "third_party/absl_ext/status_macros.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "npy.cc hands little-endian file bytes straight to the CPU");

namespace fgl::graph::io {
namespace {

constexpr absl::string_view kMagic("\x93NUMPY", 6);
// numpy >= 2.0 allows 64 dimensions; older versions 32.
constexpr int kMaxDims = 64;
// Deflate cannot expand more than ~1032:1, so a larger declared size is a corrupt directory.
constexpr uint64_t kMaxDeflateRatio = 1032;
// The end-of-central-directory record alone is 22 bytes.
constexpr size_t kMinZipBytes = 22;

struct DtypeEntry {
  absl::string_view descr;
  NpyDtype dtype;
  // The torch dtype of the same width that holds the raw bytes. Torch 1.13 has no uint32 or
  // uint64, so those are held by the signed type; IntValues() undoes the uint32 wrap.
  torch::ScalarType raw;
};

constexpr DtypeEntry kDtypes[] = {
    {"<f4", NpyDtype::kFloat32, torch::kFloat32}, {"<f8", NpyDtype::kFloat64, torch::kFloat64},
    {"|i1", NpyDtype::kInt8, torch::kInt8},       {"<i4", NpyDtype::kInt32, torch::kInt32},
    {"<i8", NpyDtype::kInt64, torch::kInt64},     {"|u1", NpyDtype::kUint8, torch::kUInt8},
    {"<u4", NpyDtype::kUint32, torch::kInt32},    {"<u8", NpyDtype::kUint64, torch::kInt64},
    {"|b1", NpyDtype::kBool, torch::kBool},
};

const DtypeEntry& Entry(NpyDtype dtype) {
  for (const DtypeEntry& e : kDtypes)
    if (e.dtype == dtype) return e;
  LOG(FATAL) << "unknown NpyDtype " << static_cast<int>(dtype);
  return kDtypes[0];  // not reached
}

absl::Status HeaderError(const std::string& source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": bad .npy header: ", what));
}

// A strict reader for the one Python literal numpy writes:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Only this grammar is accepted: string keys, a string, True/False, and a tuple of
// non-negative integers. Nothing is evaluated.
class HeaderDictParser {
 public:
  HeaderDictParser(absl::string_view text, const std::string& source) : s_(text), source_(source) {}

  absl::Status Parse(NpyHeader* header) {
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpaces();
    if (!Consume('{')) return Error("expected '{'");
    SkipSpaces();
    while (!Consume('}')) {
      std::string key;
      FGL_RETURN_IF_ERROR(ParseString(&key));
      SkipSpaces();
      if (!Consume(':')) return Error(absl::StrCat("expected ':' after '", key, "'"));
      SkipSpaces();
      if (key == "descr") {
        if (have_descr) return Error("'descr' given twice");
        have_descr = true;
        FGL_RETURN_IF_ERROR(ParseDescr(&header->dtype));
      } else if (key == "fortran_order") {
        if (have_order) return Error("'fortran_order' given twice");
        have_order = true;
        FGL_RETURN_IF_ERROR(ParseBool(&header->fortran_order));
      } else if (key == "shape") {
        if (have_shape) return Error("'shape' given twice");
        have_shape = true;
        FGL_RETURN_IF_ERROR(ParseShape(&header->shape));
      } else {
        return Error(absl::StrCat("unexpected key '", key, "'"));
      }
      SkipSpaces();
      if (Consume(',')) {
        SkipSpaces();
      } else if (Peek() != '}') {
        return Error("expected ',' or '}'");
      }
    }
    if (!have_descr || !have_order || !have_shape) {
      return Error("the dict must hold 'descr', 'fortran_order' and 'shape'");
    }
    SkipSpaces();
    if (pos_ != s_.size()) return Error("trailing characters after the dict");
    return absl::OkStatus();
  }

 private:
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c || pos_ >= s_.size()) return false;
    ++pos_;
    return true;
  }
  void SkipSpaces() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  absl::Status Error(absl::string_view what) const {
    return HeaderError(source_, absl::StrCat(what, " at offset ", pos_, " of '", s_, "'"));
  }

  absl::Status ParseString(std::string* out) {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    const size_t end = s_.find(quote, pos_);
    if (end == absl::string_view::npos) return Error("unterminated string");
    absl::string_view body = s_.substr(pos_, end - pos_);
    // Escapes would need a real Python lexer; numpy never writes them.
    if (absl::StrContains(body, '\\')) return Error("escape sequences are not supported");
    *out = std::string(body);
    pos_ = end + 1;
    return absl::OkStatus();
  }

  absl::Status ParseDescr(NpyDtype* dtype) {
    if (Peek() == '[') return Error("structured (record) dtypes are not supported");
    std::string descr;
    FGL_RETURN_IF_ERROR(ParseString(&descr));
    for (const DtypeEntry& e : kDtypes) {
      if (descr == e.descr) {
        *dtype = e.dtype;
        return absl::OkStatus();
      }
    }
    if (absl::StrContains(descr, 'O')) {
      return HeaderError(source_, absl::StrCat("object array ('", descr,
                                               "') refused: reading it would need pickle"));
    }
    if (!descr.empty() && descr[0] == '>') {
      return HeaderError(source_, absl::StrCat("big-endian dtype '", descr, "' is not supported"));
    }
    return HeaderError(source_, absl::StrCat("unsupported dtype '", descr,
                                             "' (supported: <f4 <f8 |i1 <i4 <i8 |u1 <u4 <u8 |b1)"));
  }

  absl::Status ParseBool(bool* out) {
    const absl::string_view rest = s_.substr(pos_);
    if (absl::StartsWith(rest, "True")) {
      *out = true;
      pos_ += 4;
    } else if (absl::StartsWith(rest, "False")) {
      *out = false;
      pos_ += 5;
    } else {
      return Error("expected True or False");
    }
    return absl::OkStatus();
  }

  absl::Status ParseShape(std::vector<int64_t>* shape) {
    shape->clear();
    if (!Consume('(')) return Error("expected '(' to open the shape");
    SkipSpaces();
    bool trailing_comma = false;
    while (!Consume(')')) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        return Error("expected a non-negative integer in the shape");
      }
      if (Peek() == '0' && pos_ + 1 < s_.size() &&
          absl::ascii_isdigit(static_cast<unsigned char>(s_[pos_ + 1]))) {
        return Error("leading zero in a shape entry");
      }
      int64_t v = 0;
      while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) {
        const int d = Peek() - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) {
          return Error("shape entry overflows int64");
        }
        v = v * 10 + d;
        ++pos_;
      }
      Consume('L');  // Python 2 numpy wrote longs as "5L"
      shape->push_back(v);
      if (shape->size() > kMaxDims) return Error(absl::StrCat("more than ", kMaxDims, " dims"));
      SkipSpaces();
      trailing_comma = Consume(',');
      SkipSpaces();
      if (!trailing_comma && Peek() != ')') return Error("expected ',' or ')' in the shape");
    }
    // "(5)" is the integer 5 in Python, not a tuple.
    if (shape->size() == 1 && !trailing_comma) return Error("a 1-d shape needs a trailing comma");
    return absl::OkStatus();
  }

  absl::string_view s_;
  size_t pos_ = 0;
  const std::string& source_;
};

// numel of `shape`, or an error when the product (or its byte size) overflows int64.
absl::StatusOr<int64_t> CheckedNumel(const std::vector<int64_t>& shape, int64_t item_size,
                                     const std::string& source) {
  int64_t numel = 1;
  bool zero = false;
  for (int64_t d : shape) {
    if (d == 0) {
      zero = true;
      continue;
    }
    if (numel > std::numeric_limits<int64_t>::max() / d) {
      return HeaderError(source, "shape overflows int64");
    }
    numel *= d;
  }
  if (numel > std::numeric_limits<int64_t>::max() / item_size) {
    return HeaderError(source, "array byte size overflows int64");
  }
  return zero ? 0 : numel;
}

// Copies a Fortran-ordered array into C order. complexity: O(numel * ndim) worst case,
// O(numel) amortised.
std::string FortranToC(absl::string_view src, const std::vector<int64_t>& shape, int64_t item) {
  std::string out(src.size(), '\0');
  const size_t nd = shape.size();
  std::vector<int64_t> fstride(nd), idx(nd, 0);
  int64_t s = 1;
  for (size_t i = 0; i < nd; ++i) {
    fstride[i] = s;
    s *= shape[i];
  }
  const int64_t numel = static_cast<int64_t>(src.size()) / item;
  int64_t off = 0;  // Fortran element offset of idx
  for (int64_t c = 0; c < numel; ++c) {
    std::memcpy(&out[c * item], &src[off * item], item);
    for (size_t i = nd; i-- > 0;) {  // odometer, last index fastest (C order)
      if (++idx[i] < shape[i]) {
        off += fstride[i];
        break;
      }
      off -= fstride[i] * (shape[i] - 1);
      idx[i] = 0;
    }
  }
  return out;
}

bool IsFloat(NpyDtype dtype) { return dtype == NpyDtype::kFloat32 || dtype == NpyDtype::kFloat64; }

// The elements in a tensor of the raw dtype (a copy: from_blob only borrows `a.data`).
torch::Tensor RawTensor(const NpyArray& a) {
  return torch::from_blob(const_cast<char*>(a.data.data()), a.shape, Entry(a.dtype).raw).clone();
}

// An integer or bool array as int64: the exact values, except that uint64 above INT64_MAX
// wraps to negative (as static_cast<int64_t> does).
torch::Tensor IntValues(const NpyArray& a) {
  torch::Tensor t = RawTensor(a).to(torch::kInt64);
  if (a.dtype == NpyDtype::kUint32) t.bitwise_and_(int64_t{0xffffffff});
  return t;
}

// The C-order index of the first true element of `mask`, or -1.
int64_t FirstTrue(const torch::Tensor& mask) {
  const torch::Tensor at = mask.reshape(-1).nonzero();
  return at.numel() == 0 ? -1 : at[0][0].item<int64_t>();
}

// uint64 values held in int64 rounded to float32 exactly as static_cast<float>(uint64_t):
// a wrapped value v >= 2^63 becomes (v >> 1) | (v & 1), whose low bit keeps the rounding
// sticky, converted and doubled, so it rounds once and never through double.
torch::Tensor Uint64ToFloat32(const torch::Tensor& raw) {
  const torch::Tensor halved = raw.bitwise_right_shift(1)
                                   .bitwise_and(std::numeric_limits<int64_t>::max())
                                   .bitwise_or(raw.bitwise_and(1));
  return torch::where(raw.lt(0), halved.to(torch::kFloat32).mul(2), raw.to(torch::kFloat32));
}

}  // namespace

namespace internal {
void CheckNpyDtype(NpyDtype have, NpyDtype want) {
  CHECK(have == want) << "NpyArray holds " << NpyDescr(have) << ", read as " << NpyDescr(want);
}
}  // namespace internal

int64_t NpyItemSize(NpyDtype dtype) {
  return static_cast<int64_t>(c10::elementSize(Entry(dtype).raw));
}
absl::string_view NpyDescr(NpyDtype dtype) { return Entry(dtype).descr; }

int64_t NpyArray::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view bytes, const std::string& source) {
  if (!absl::StartsWith(bytes, kMagic)) {
    if (absl::StartsWith(kMagic, bytes)) {
      return absl::DataLossError(absl::StrCat(source, ": truncated .npy header"));
    }
    return HeaderError(source, "not a .npy file (bad magic)");
  }
  if (bytes.size() < 10) {
    return absl::DataLossError(absl::StrCat(source, ": truncated .npy header"));
  }
  NpyHeader h;
  const unsigned char major = static_cast<unsigned char>(bytes[6]);
  const unsigned char minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) {
    return HeaderError(source, absl::StrCat("unsupported format version ", major, ".", minor));
  }
  h.major_version = major;
  uint64_t header_len = 0;
  size_t prefix = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) |
                 (static_cast<uint64_t>(static_cast<unsigned char>(bytes[9])) << 8);
    prefix = 10;
  } else {
    if (bytes.size() < 12) {
      return absl::DataLossError(absl::StrCat(source, ": truncated .npy header"));
    }
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    }
    prefix = 12;
  }
  if (header_len > bytes.size() - prefix) {
    return absl::DataLossError(absl::StrCat(source, ": truncated .npy header (", header_len,
                                            " header bytes declared, ", bytes.size() - prefix,
                                            " present)"));
  }
  absl::string_view text = bytes.substr(prefix, header_len);
  if (text.empty() || text.back() != '\n') return HeaderError(source, "must end with a newline");
  text.remove_suffix(1);
  for (char c : text) {
    // v3 allows UTF-8, but numpy only needs it for field names of structured dtypes.
    if (c < 0x20 || c > 0x7e) return HeaderError(source, "non-printable or non-ASCII character");
  }
  FGL_RETURN_IF_ERROR(HeaderDictParser(text, source).Parse(&h));
  FGL_RETURN_IF_ERROR(CheckedNumel(h.shape, NpyItemSize(h.dtype), source).status());
  h.data_offset = prefix + header_len;
  return h;
}

absl::StatusOr<NpyArray> ParseNpy(std::string bytes, const std::string& source) {
  FGL_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(bytes, source));
  const int64_t item = NpyItemSize(h.dtype);
  FGL_ASSIGN_OR_RETURN(const int64_t numel, CheckedNumel(h.shape, item, source));
  const uint64_t want = static_cast<uint64_t>(numel) * item;
  const uint64_t have = bytes.size() - h.data_offset;
  if (have < want) {
    return absl::DataLossError(absl::StrCat(source, ": truncated .npy data: shape needs ", want,
                                            " bytes, file has ", have));
  }
  if (have > want) {
    return absl::DataLossError(
        absl::StrCat(source, ": ", have - want, " unexpected bytes after the .npy data"));
  }
  NpyArray a;
  a.dtype = h.dtype;
  a.shape = std::move(h.shape);
  if (h.fortran_order && a.shape.size() > 1 && numel > 0) {
    a.data = FortranToC(absl::string_view(bytes).substr(h.data_offset), a.shape, item);
  } else {
    bytes.erase(0, h.data_offset);
    a.data = std::move(bytes);
  }
  if (a.dtype == NpyDtype::kBool) {
    // A bool byte other than 0/1 is undefined behaviour once read as C++ bool.
    for (char& c : a.data) c = (c != 0);
  }
  return a;
}

absl::StatusOr<NpyArray> ReadNpyFile(const std::string& path, const std::string& dataset) {
  FGL_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path, dataset));
  return ParseNpy(std::move(bytes), path);
}

absl::StatusOr<torch::Tensor> NpyToFloat32Tensor(const NpyArray& a, const std::string& source) {
  if (a.dtype == NpyDtype::kUint32) return IntValues(a).to(torch::kFloat32);
  if (a.dtype == NpyDtype::kUint64) return Uint64ToFloat32(RawTensor(a));
  return RawTensor(a).to(torch::kFloat32);
}

absl::StatusOr<torch::Tensor> NpyToInt64Tensor(const NpyArray& a, const std::string& source) {
  if (IsFloat(a.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": expected an integer array, got ", NpyDescr(a.dtype)));
  }
  torch::Tensor t = IntValues(a);
  if (a.dtype == NpyDtype::kUint64) {
    if (const int64_t i = FirstTrue(t.lt(0)); i >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": element ", i, " = ",
                       static_cast<uint64_t>(t.reshape(-1)[i].item<int64_t>()),
                       " does not fit int64"));
    }
  }
  return t;
}

absl::StatusOr<torch::Tensor> NpyToBoolTensor(const NpyArray& a, const std::string& source) {
  if (a.dtype == NpyDtype::kBool) return RawTensor(a);  // ParseNpy normalised every byte to 0/1
  if (IsFloat(a.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": expected a bool or integer mask, got ", NpyDescr(a.dtype)));
  }
  const torch::Tensor v = IntValues(a);
  if (const int64_t i = FirstTrue(v.ne(0).logical_and(v.ne(1))); i >= 0) {
    return absl::InvalidArgumentError(absl::StrCat(source,
                                                   ": a mask must hold only 0 and 1; element ", i,
                                                   " is ", v.reshape(-1)[i].item<int64_t>()));
  }
  return v.eq(1);
}

// ---------------------------------------------------------------------------------------------
// NpzArchive

struct NpzArchive::State {
  std::string bytes;  // libzip reads straight from this buffer
  zip_t* zip = nullptr;
  ~State() {
    if (zip != nullptr) zip_discard(zip);  // read-only: nothing to write back
  }
};

NpzArchive::NpzArchive(std::unique_ptr<State> state, std::string source, NpzOptions options,
                       std::vector<std::string> keys, std::vector<uint64_t> indices)
    : state_(std::move(state)),
      source_(std::move(source)),
      options_(options),
      keys_(std::move(keys)),
      indices_(std::move(indices)) {}
NpzArchive::NpzArchive(NpzArchive&&) noexcept = default;
NpzArchive& NpzArchive::operator=(NpzArchive&&) noexcept = default;
NpzArchive::~NpzArchive() = default;

absl::StatusOr<NpzArchive> NpzArchive::FromBytes(std::string bytes, std::string source,
                                                 NpzOptions options) {
  // libzip opens an empty buffer as an empty archive; numpy calls it a truncated file.
  if (bytes.size() < kMinZipBytes) {
    return absl::DataLossError(absl::StrCat(source, ": not a valid ", options.format_name,
                                            " (zip) archive: ", bytes.size(),
                                            " bytes is too short"));
  }
  auto state = std::make_unique<State>();
  state->bytes = std::move(bytes);
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t* src =
      zip_source_buffer_create(state->bytes.data(), state->bytes.size(), /*freep=*/0, &error);
  if (src == nullptr) {
    const std::string msg = zip_error_strerror(&error);
    zip_error_fini(&error);
    return absl::InternalError(absl::StrCat(source, ": libzip: ", msg));
  }
  // ZIP_CHECKCONS compares the central directory with the local headers.
  state->zip = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error);
  if (state->zip == nullptr) {
    zip_source_free(src);
    const std::string msg = zip_error_strerror(&error);
    zip_error_fini(&error);
    return absl::DataLossError(
        absl::StrCat(source, ": not a valid ", options.format_name, " (zip) archive: ", msg));
  }
  zip_error_fini(&error);
  const zip_int64_t n = zip_get_num_entries(state->zip, 0);
  if (n < 0) return absl::DataLossError(absl::StrCat(source, ": unreadable zip directory"));
  std::vector<std::string> keys;
  std::vector<uint64_t> indices;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(state->zip, i, 0, &st) != 0 || (st.valid & ZIP_STAT_NAME) == 0) {
      return absl::DataLossError(
          absl::StrCat(source, ": zip entry ", i, ": ", zip_strerror(state->zip)));
    }
    std::string key = st.name;
    if (absl::EndsWith(key, ".npy")) key.resize(key.size() - 4);
    for (const std::string& k : keys) {
      if (k == key) {
        return absl::DataLossError(absl::StrCat(source, ": member '", st.name, "' appears twice"));
      }
    }
    keys.push_back(std::move(key));
    indices.push_back(static_cast<uint64_t>(i));
  }
  return NpzArchive(std::move(state), std::move(source), options, std::move(keys),
                    std::move(indices));
}

absl::StatusOr<NpzArchive> NpzArchive::Open(const std::string& path, const std::string& dataset,
                                            NpzOptions options) {
  FGL_ASSIGN_OR_RETURN(std::string bytes, ReadFileBytes(path, dataset));
  return FromBytes(std::move(bytes), path, options);
}

bool NpzArchive::Contains(absl::string_view key) const {
  for (const std::string& k : keys_)
    if (k == key) return true;
  return false;
}

absl::StatusOr<std::string> NpzArchive::ReadMemberBytes(absl::string_view key) {
  size_t pos = 0;
  while (pos < keys_.size() && keys_[pos] != key) ++pos;
  if (pos == keys_.size()) {
    return absl::NotFoundError(absl::StrCat(source_, ": no member '", key, ".npy'"));
  }
  zip_t* za = state_->zip;
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(za, indices_[pos], 0, &st) != 0) {
    return absl::DataLossError(absl::StrCat(source_, ":", key, ": ", zip_strerror(za)));
  }
  // The member's own name ("<key>.npy" in an npz, "archive/data/0" in a torch.save file).
  const std::string where =
      absl::StrCat(source_, ":", (st.valid & ZIP_STAT_NAME) ? st.name : std::string(key));
  const uint64_t need = ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
  if ((st.valid & need) != need) {
    return absl::DataLossError(absl::StrCat(where, ": incomplete zip directory entry"));
  }
  if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": encrypted members are not supported"));
  }
  if (st.comp_method == ZIP_CM_STORE) {
    if (st.size != st.comp_size) {
      return absl::DataLossError(absl::StrCat(where, ": stored member declares ", st.size,
                                              " bytes but occupies ", st.comp_size));
    }
  } else if (st.comp_method == ZIP_CM_DEFLATE) {
    if (st.size / kMaxDeflateRatio > st.comp_size) {
      return absl::DataLossError(absl::StrCat(where, ": declared size ", st.size,
                                              " is impossible for ", st.comp_size,
                                              " deflated bytes"));
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(where, ": compression method ", st.comp_method,
                                                   " (only stored and deflated are supported)"));
  }
  if (st.size > options_.max_member_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(where, ": decompresses to ", st.size,
                                                     " bytes, over the limit of ",
                                                     options_.max_member_bytes));
  }
  zip_file_t* f = zip_fopen_index(za, indices_[pos], 0);
  if (f == nullptr) return absl::DataLossError(absl::StrCat(where, ": ", zip_strerror(za)));
  std::string out(st.size, '\0');
  uint64_t got = 0;
  absl::Status status;
  while (got < st.size) {
    const zip_int64_t r = zip_fread(f, out.data() + got, st.size - got);
    if (r < 0) {
      status = absl::DataLossError(absl::StrCat(where, ": ", zip_file_strerror(f)));
      break;
    }
    if (r == 0) {
      status =
          absl::DataLossError(absl::StrCat(where, ": truncated: ", got, " of ", st.size, " bytes"));
      break;
    }
    got += static_cast<uint64_t>(r);
  }
  if (status.ok()) {
    // Reading past the end makes libzip verify the CRC; more data means a lying directory.
    char extra;
    const zip_int64_t r = zip_fread(f, &extra, 1);
    if (r < 0) {
      status = absl::DataLossError(absl::StrCat(where, ": ", zip_file_strerror(f)));
    } else if (r > 0) {
      status = absl::DataLossError(
          absl::StrCat(where, ": longer than the declared ", st.size, " bytes"));
    }
  }
  const int close_rc = zip_fclose(f);
  FGL_RETURN_IF_ERROR(status);
  if (close_rc != 0) {
    return absl::DataLossError(absl::StrCat(where, ": zip error ", close_rc, " on close"));
  }
  return out;
}

absl::StatusOr<NpyArray> NpzArchive::ReadArray(absl::string_view key) {
  FGL_ASSIGN_OR_RETURN(std::string bytes, ReadMemberBytes(key));
  return ParseNpy(std::move(bytes), absl::StrCat(source_, ":", key, ".npy"));
}

}  // namespace fgl::graph::io
