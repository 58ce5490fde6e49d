#include "graph/io/npy.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/io/npz_writer.h"
#include "graph/testing/tensor_values.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::NpyBytes;
using testing::NpyBytesWithDict;
using testing::NpyFromValues;
using testing::NpzBytes;

using ::fgl::graph::testing::Vec;

TEST(NpyHeaderTest, ParsesVersionsOneTwoAndThree) {
  for (int v : {1, 2, 3}) {
    const std::string bytes = NpyBytes("<i8", {2, 3}, std::string(48, '\0'), false, v);
    ASSERT_OK_AND_ASSIGN(NpyHeader h, ParseNpyHeader(bytes, "x.npy"));
    EXPECT_EQ(h.major_version, v);
    EXPECT_EQ(h.dtype, NpyDtype::kInt64);
    EXPECT_FALSE(h.fortran_order);
    EXPECT_THAT(h.shape, ElementsAre(2, 3));
    EXPECT_EQ(h.data_offset % 64, 0u);  // the writer aligns like numpy
  }
}

TEST(NpyHeaderTest, AcceptsKeysInAnyOrderScalarsAndPythonTwoLongs) {
  ASSERT_OK_AND_ASSIGN(
      NpyHeader h, ParseNpyHeader(NpyBytesWithDict("{'shape': (4L, 5L), \"fortran_order\": True,"
                                                   " 'descr': '|b1'}",
                                                   ""),
                                  "x.npy"));
  EXPECT_EQ(h.dtype, NpyDtype::kBool);
  EXPECT_TRUE(h.fortran_order);
  EXPECT_THAT(h.shape, ElementsAre(4, 5));
  ASSERT_OK_AND_ASSIGN(NpyArray scalar,
                       ParseNpy(NpyBytes("<f8", {}, std::string(8, '\0')), "s.npy"));
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.ndim(), 0);
}

TEST(NpyHeaderTest, RefusesObjectStringAndBigEndianDtypes) {
  EXPECT_THAT(ParseNpy(NpyBytes("|O", {5}, std::string(40, 'x')), "cs.npz:class_names.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cs.npz:class_names.npy: bad .npy header: object array ('|O')")));
  EXPECT_THAT(ParseNpy(NpyBytes("<U19", {1}, std::string(76, 'x')), "a.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unsupported dtype '<U19'")));
  EXPECT_THAT(ParseNpy(NpyBytes(">f4", {1}, std::string(4, 'x')), "a.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("big-endian")));
  EXPECT_THAT(ParseNpyHeader(NpyBytesWithDict("{'descr': [('a', '<f4')], 'fortran_order': False, "
                                              "'shape': (1,), }",
                                              ""),
                             "a.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("structured")));
}

TEST(NpyHeaderTest, RefusesMalformedHeaders) {
  const auto bad = [](absl::string_view dict) {
    return ParseNpyHeader(NpyBytesWithDict(dict, ""), "h.npy").status();
  };
  EXPECT_THAT(bad("{'descr': '<f4', 'shape': (1,), }"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must hold")));
  EXPECT_THAT(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected key 'x'")));
  EXPECT_THAT(bad("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("twice")));
  EXPECT_THAT(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (3)}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("trailing comma")));
  EXPECT_THAT(bad("{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("True or False")));
  EXPECT_THAT(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,)}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-negative")));
  EXPECT_THAT(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows")));
  EXPECT_THAT(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows")));
  EXPECT_THAT(bad("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("trailing characters")));
  EXPECT_THAT(ParseNpyHeader("PK\x03\x04 not numpy", "h.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad magic")));
  std::string v4 = NpyBytes("<f4", {1}, std::string(4, '\0'));
  v4[6] = 4;
  EXPECT_THAT(ParseNpyHeader(v4, "h.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version 4.0")));
  const std::string ok = NpyBytes("<f4", {1}, std::string(4, '\0'));
  EXPECT_THAT(ParseNpyHeader(ok.substr(0, 40), "h.npy"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("h.npy: truncated .npy header")));
  EXPECT_THAT(ParseNpyHeader(ok.substr(0, 3), "h.npy"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")));
}

TEST(NpyTest, ChecksDataSizeAgainstShape) {
  EXPECT_THAT(ParseNpy(NpyBytes("<i4", {3}, std::string(11, '\0')), "a.npy"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("needs 12 bytes, file has 11")));
  EXPECT_THAT(ParseNpy(NpyBytes("<i4", {3}, std::string(13, '\0')), "a.npy"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("1 unexpected bytes")));
  // A zero dimension makes the array empty whatever the other dimensions say.
  ASSERT_OK_AND_ASSIGN(NpyArray empty, ParseNpy(NpyBytes("<f4", {0, 1000000}, ""), "e.npy"));
  EXPECT_EQ(empty.numel(), 0);
}

TEST(NpyTest, ReadsEveryDtype) {
  ASSERT_OK_AND_ASSIGN(NpyArray f4, ParseNpy(NpyFromValues<float>({2}, {1.5f, -2}), "a"));
  EXPECT_THAT(f4.values<float>(), ElementsAre(1.5f, -2.f));
  ASSERT_OK_AND_ASSIGN(NpyArray f8, ParseNpy(NpyFromValues<double>({1}, {0.25}), "a"));
  EXPECT_THAT(f8.values<double>(), ElementsAre(0.25));
  ASSERT_OK_AND_ASSIGN(NpyArray i1, ParseNpy(NpyFromValues<int8_t>({2}, {-3, 4}), "a"));
  EXPECT_THAT(i1.values<int8_t>(), ElementsAre(-3, 4));
  ASSERT_OK_AND_ASSIGN(NpyArray i4, ParseNpy(NpyFromValues<int32_t>({2}, {-7, 9}), "a"));
  EXPECT_THAT(i4.values<int32_t>(), ElementsAre(-7, 9));
  ASSERT_OK_AND_ASSIGN(NpyArray i8, ParseNpy(NpyFromValues<int64_t>({1}, {1LL << 40}), "a"));
  EXPECT_THAT(i8.values<int64_t>(), ElementsAre(1LL << 40));
  ASSERT_OK_AND_ASSIGN(NpyArray u1, ParseNpy(NpyFromValues<uint8_t>({2}, {255, 0}), "a"));
  EXPECT_THAT(u1.values<uint8_t>(), ElementsAre(255, 0));
  ASSERT_OK_AND_ASSIGN(NpyArray u4, ParseNpy(NpyFromValues<uint32_t>({1}, {4000000000u}), "a"));
  EXPECT_THAT(u4.values<uint32_t>(), ElementsAre(4000000000u));
  ASSERT_OK_AND_ASSIGN(NpyArray u8, ParseNpy(NpyFromValues<uint64_t>({1}, {1ULL << 63}), "a"));
  EXPECT_THAT(u8.values<uint64_t>(), ElementsAre(1ULL << 63));
  // numpy reads any non-zero bool byte as True; we normalise it to 1.
  ASSERT_OK_AND_ASSIGN(NpyArray b1,
                       ParseNpy(NpyBytes("|b1", {3}, std::string("\x00\x01\x07", 3)), "a"));
  EXPECT_THAT(b1.values<bool>(), ElementsAre(false, true, true));
}

TEST(NpyTest, TransposesFortranOrder) {
  // A = [[0, 1, 2], [3, 4, 5]] is stored column by column: 0 3 1 4 2 5.
  const std::string data = NpyFromValues<int32_t>({6}, {0, 3, 1, 4, 2, 5}).substr(128);
  ASSERT_OK_AND_ASSIGN(NpyArray a, ParseNpy(NpyBytes("<i4", {2, 3}, data, true), "f.npy"));
  EXPECT_THAT(a.shape, ElementsAre(2, 3));
  EXPECT_THAT(a.values<int32_t>(), ElementsAre(0, 1, 2, 3, 4, 5));
  // 3-d: B[i][j][k] = 100 i + 10 j + k with shape (2, 2, 3); Fortran order has i fastest.
  std::vector<int32_t> f;
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < 2; ++i) f.push_back(100 * i + 10 * j + k);
  const std::string fdata = NpyFromValues<int32_t>({12}, f).substr(128);
  ASSERT_OK_AND_ASSIGN(NpyArray b, ParseNpy(NpyBytes("<i4", {2, 2, 3}, fdata, true), "f.npy"));
  EXPECT_THAT(b.values<int32_t>(), ElementsAre(0, 1, 2, 10, 11, 12, 100, 101, 102, 110, 111, 112));
}

TEST(NpyTensorTest, ConvertsToFloatInt64AndBool) {
  ASSERT_OK_AND_ASSIGN(NpyArray i8, ParseNpy(NpyFromValues<int64_t>({2, 2}, {1, 2, 3, 4}), "a"));
  ASSERT_OK_AND_ASSIGN(torch::Tensor f, NpyToFloat32Tensor(i8, "a"));
  EXPECT_EQ(f.scalar_type(), torch::kFloat32);
  EXPECT_THAT(f.sizes().vec(), ElementsAre(2, 2));
  EXPECT_THAT(Vec<float>(f), ElementsAre(1, 2, 3, 4));
  ASSERT_OK_AND_ASSIGN(torch::Tensor l, NpyToInt64Tensor(i8, "a"));
  EXPECT_THAT(Vec<int64_t>(l), ElementsAre(1, 2, 3, 4));

  ASSERT_OK_AND_ASSIGN(NpyArray f4, ParseNpy(NpyFromValues<float>({1}, {1.0f}), "a"));
  EXPECT_THAT(NpyToInt64Tensor(f4, "x.npy"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                      HasSubstr("x.npy: expected an integer")));
  ASSERT_OK_AND_ASSIGN(NpyArray big, ParseNpy(NpyFromValues<uint64_t>({1}, {1ULL << 63}), "a"));
  EXPECT_THAT(NpyToInt64Tensor(big, "x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not fit int64")));

  ASSERT_OK_AND_ASSIGN(NpyArray u1, ParseNpy(NpyFromValues<uint8_t>({3}, {1, 0, 1}), "a"));
  ASSERT_OK_AND_ASSIGN(torch::Tensor m, NpyToBoolTensor(u1, "a"));
  EXPECT_EQ(m.scalar_type(), torch::kBool);
  EXPECT_THAT(Vec<bool>(m), ElementsAre(true, false, true));
  ASSERT_OK_AND_ASSIGN(NpyArray two, ParseNpy(NpyFromValues<uint8_t>({2}, {1, 2}), "a"));
  EXPECT_THAT(NpyToBoolTensor(two, "m.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("element 1 is 2")));
  EXPECT_THAT(NpyToBoolTensor(f4, "m.npy"), StatusIs(absl::StatusCode::kInvalidArgument,
                                                     HasSubstr("expected a bool or integer")));
}

// ---- Every dtype through every tensor conversion, compared bit for bit with the C++ casts ----

template <typename T>
NpyArray ArrayOf(const std::vector<T>& values) {
  absl::StatusOr<NpyArray> a =
      ParseNpy(NpyFromValues<T>({static_cast<int64_t>(values.size())}, values), "a");
  EXPECT_TRUE(a.ok()) << a.status();
  if (!a.ok()) return NpyArray{.shape = {0}};
  return *std::move(a);
}

std::vector<uint32_t> FloatBits(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  if (!v.empty()) std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
  return bits;
}

float FloatFromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// NpyToFloat32Tensor(values) must hold exactly static_cast<float>(v), bit for bit.
template <typename T>
void ExpectFloat32Exact(const std::vector<T>& values) {
  const NpyArray a = ArrayOf(values);
  ASSERT_OK_AND_ASSIGN(torch::Tensor t, NpyToFloat32Tensor(a, "a"));
  EXPECT_EQ(t.scalar_type(), torch::kFloat32);
  EXPECT_THAT(t.sizes().vec(), ElementsAre(static_cast<int64_t>(values.size())));
  std::vector<float> want;
  for (size_t i = 0; i < values.size(); ++i) want.push_back(static_cast<float>(values[i]));
  EXPECT_THAT(FloatBits(Vec<float>(t)), ElementsAreArray(FloatBits(want))) << NpyDescr(a.dtype);
}

template <typename T>
void ExpectInt64Exact(const std::vector<T>& values) {
  const NpyArray a = ArrayOf(values);
  ASSERT_OK_AND_ASSIGN(torch::Tensor t, NpyToInt64Tensor(a, "a"));
  EXPECT_EQ(t.scalar_type(), torch::kInt64);
  std::vector<int64_t> want;
  for (size_t i = 0; i < values.size(); ++i) want.push_back(static_cast<int64_t>(values[i]));
  EXPECT_THAT(Vec<int64_t>(t), ElementsAreArray(want)) << NpyDescr(a.dtype);
}

template <typename T>
void ExpectMask(const std::vector<T>& values) {
  const NpyArray a = ArrayOf(values);
  ASSERT_OK_AND_ASSIGN(torch::Tensor t, NpyToBoolTensor(a, "a"));
  EXPECT_EQ(t.scalar_type(), torch::kBool);
  std::vector<bool> want;
  for (size_t i = 0; i < values.size(); ++i) want.push_back(values[i] == 1);
  EXPECT_THAT(Vec<bool>(t), ElementsAreArray(want)) << NpyDescr(a.dtype);
}

template <typename T>
std::string MaskError(const std::vector<T>& values) {
  return NpyToBoolTensor(ArrayOf(values), "m.npy").status().ToString();
}

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kTwo63 = uint64_t{1} << 63;

TEST(NpyTensorTest, Float32FromEveryDtypeIsBitExact) {
  // float32 keeps every bit pattern: -0, denormals, infinities, quiet and signalling NaNs.
  std::vector<float> f4;
  for (uint32_t bits : {0x00000000u, 0x80000000u, 0x3fc00000u, 0x00000001u, 0x807fffffu,
                        0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x7fc12345u, 0x7f812345u})
    f4.push_back(FloatFromBits(bits));
  {
    const NpyArray a = ArrayOf(f4);
    ASSERT_OK_AND_ASSIGN(torch::Tensor t, NpyToFloat32Tensor(a, "a"));
    EXPECT_THAT(FloatBits(Vec<float>(t)), ElementsAreArray(FloatBits(f4)));
  }
  // float64 rounds to nearest, ties to even; overflow to inf, underflow to denormals or 0.
  ExpectFloat32Exact<double>({0.1, -0.0, 1.0 + 0x1p-24, 1.0 + 0x3p-24, 16777217.0, 1e300, -1e300,
                              1e-46, 1.4e-45, 3.4028235677973366e38, 0x1.fffffefffffffp127,
                              std::numeric_limits<double>::infinity(),
                              std::numeric_limits<double>::quiet_NaN(), -2.5e-40});
  ExpectFloat32Exact<int8_t>({-128, -1, 0, 1, 127});
  ExpectFloat32Exact<int32_t>({std::numeric_limits<int32_t>::min(),
                               std::numeric_limits<int32_t>::max(), 16777217, -16777217, 16777219,
                               0x7fffffbf, 0x7fffffc0, 0});
  ExpectFloat32Exact<int64_t>({kI64Min, kI64Max, (int64_t{1} << 53) + 1, -((int64_t{1} << 24) + 1),
                               (int64_t{1} << 62) + (int64_t{1} << 38),
                               (int64_t{1} << 62) + (int64_t{1} << 38) + 1, 0, -1});
  ExpectFloat32Exact<uint8_t>({0, 1, 128, 255});
  ExpectFloat32Exact<uint32_t>(
      {0u, 1u, 16777217u, 0x7fffffffu, 0x80000000u, 0x80000080u, 0x80000081u, 0x80000180u,
       0xffffff7fu, 0xffffff80u, 0xffffffffu});
  // uint64 above INT64_MAX must round as the unsigned value (no detour through double).
  ExpectFloat32Exact<uint64_t>({0, 1, static_cast<uint64_t>(kI64Max), kTwo63, kTwo63 + 1,
                                kTwo63 + (uint64_t{1} << 39), kTwo63 + (uint64_t{1} << 39) + 1,
                                kTwo63 + (uint64_t{3} << 39), kU64Max - (uint64_t{1} << 39) + 1,
                                kU64Max - (uint64_t{1} << 39), kU64Max,
                                (uint64_t{1} << 53) + 1});
  ExpectFloat32Exact<bool>({false, true, true});
}

TEST(NpyTensorTest, Int64FromEveryIntegerDtype) {
  ExpectInt64Exact<int8_t>({-128, -1, 0, 127});
  ExpectInt64Exact<int32_t>({std::numeric_limits<int32_t>::min(), -1, 0,
                             std::numeric_limits<int32_t>::max()});
  ExpectInt64Exact<int64_t>({kI64Min, -1, 0, kI64Max});
  ExpectInt64Exact<uint8_t>({0, 1, 128, 255});
  ExpectInt64Exact<uint32_t>({0u, 1u, 0x7fffffffu, 0x80000000u, 0xffffffffu});
  ExpectInt64Exact<uint64_t>({0, 1, static_cast<uint64_t>(kI64Max)});
  ExpectInt64Exact<bool>({true, false, true});

  // The first element above INT64_MAX is named, as an unsigned value.
  EXPECT_EQ(NpyToInt64Tensor(ArrayOf<uint64_t>({0, 5, kTwo63, kU64Max}), "x").status().ToString(),
            "INVALID_ARGUMENT: x: element 2 = 9223372036854775808 does not fit int64");
  EXPECT_EQ(NpyToInt64Tensor(ArrayOf<uint64_t>({kU64Max}), "x").status().ToString(),
            "INVALID_ARGUMENT: x: element 0 = 18446744073709551615 does not fit int64");
  EXPECT_EQ(NpyToInt64Tensor(ArrayOf<double>({1.0}), "x.npy").status().ToString(),
            "INVALID_ARGUMENT: x.npy: expected an integer array, got <f8");
  EXPECT_EQ(NpyToInt64Tensor(ArrayOf<float>({1.0f}), "x.npy").status().ToString(),
            "INVALID_ARGUMENT: x.npy: expected an integer array, got <f4");
}

TEST(NpyTensorTest, BoolFromEveryIntegerDtype) {
  ExpectMask<int8_t>({0, 1, 1, 0});
  ExpectMask<int32_t>({1, 0});
  ExpectMask<int64_t>({0, 1});
  ExpectMask<uint8_t>({1, 1, 0});
  ExpectMask<uint32_t>({0u, 1u});
  ExpectMask<uint64_t>({1, 0});
  ExpectMask<bool>({true, false});
  // Any non-zero bool byte is True.
  ASSERT_OK_AND_ASSIGN(NpyArray b1,
                       ParseNpy(NpyBytes("|b1", {4}, std::string("\x00\x01\x07\xff", 4)), "a"));
  ASSERT_OK_AND_ASSIGN(torch::Tensor b, NpyToBoolTensor(b1, "a"));
  EXPECT_THAT(Vec<bool>(b), ElementsAre(false, true, true, true));

  // The first element other than 0 and 1 is named, printed as int64.
  const std::string prefix = "INVALID_ARGUMENT: m.npy: a mask must hold only 0 and 1; element ";
  EXPECT_EQ(MaskError<int8_t>({1, 0, -1, 5}), prefix + "2 is -1");
  EXPECT_EQ(MaskError<int32_t>({0, 1, 2}), prefix + "2 is 2");
  EXPECT_EQ(MaskError<int64_t>({kI64Min}), prefix + "0 is -9223372036854775808");
  EXPECT_EQ(MaskError<uint8_t>({1, 255}), prefix + "1 is 255");
  EXPECT_EQ(MaskError<uint32_t>({0u, 0xffffffffu}), prefix + "1 is 4294967295");
  EXPECT_EQ(MaskError<uint64_t>({1, kTwo63, 3}), prefix + "1 is -9223372036854775808");
  EXPECT_EQ(MaskError<uint64_t>({0, 1, 2}), prefix + "2 is 2");
  EXPECT_EQ(MaskError<double>({1.0}),
            "INVALID_ARGUMENT: m.npy: expected a bool or integer mask, got <f8");
  EXPECT_EQ(MaskError<float>({1.0f}),
            "INVALID_ARGUMENT: m.npy: expected a bool or integer mask, got <f4");
}

TEST(NpyTensorTest, ConversionsKeepShapeAndOwnTheirData) {
  // Scalars and empty arrays.
  ASSERT_OK_AND_ASSIGN(NpyArray s, ParseNpy(NpyBytes("<i4", {}, std::string("\x01\0\0\0", 4)), "a"));
  ASSERT_OK_AND_ASSIGN(torch::Tensor sf, NpyToFloat32Tensor(s, "a"));
  EXPECT_EQ(sf.dim(), 0);
  EXPECT_EQ(sf.item<float>(), 1.0f);
  ASSERT_OK_AND_ASSIGN(torch::Tensor sl, NpyToInt64Tensor(s, "a"));
  EXPECT_EQ(sl.dim(), 0);
  EXPECT_EQ(sl.item<int64_t>(), 1);
  ASSERT_OK_AND_ASSIGN(torch::Tensor sb, NpyToBoolTensor(s, "a"));
  EXPECT_EQ(sb.dim(), 0);
  EXPECT_TRUE(sb.item<bool>());
  for (absl::string_view descr : {"<f4", "<f8", "|i1", "<i4", "<i8", "|u1", "<u4", "<u8", "|b1"}) {
    ASSERT_OK_AND_ASSIGN(NpyArray e, ParseNpy(NpyBytes(descr, {0, 3}, ""), "e"));
    ASSERT_OK_AND_ASSIGN(torch::Tensor ef, NpyToFloat32Tensor(e, "e"));
    EXPECT_THAT(ef.sizes().vec(), ElementsAre(0, 3)) << descr;
    if (descr[1] != 'f') {
      ASSERT_OK_AND_ASSIGN(torch::Tensor el, NpyToInt64Tensor(e, "e"));
      EXPECT_THAT(el.sizes().vec(), ElementsAre(0, 3)) << descr;
      ASSERT_OK_AND_ASSIGN(torch::Tensor eb, NpyToBoolTensor(e, "e"));
      EXPECT_THAT(eb.sizes().vec(), ElementsAre(0, 3)) << descr;
    }
  }
  // A Fortran-ordered 2x3 array: tensors and error indices follow C order.
  const std::string data = NpyFromValues<uint32_t>({6}, {0, 1, 1, 7, 0, 1}).substr(128);
  ASSERT_OK_AND_ASSIGN(NpyArray f, ParseNpy(NpyBytes("<u4", {2, 3}, data, true), "f"));
  ASSERT_OK_AND_ASSIGN(torch::Tensor ff, NpyToFloat32Tensor(f, "f"));
  EXPECT_THAT(ff.sizes().vec(), ElementsAre(2, 3));
  EXPECT_THAT(Vec<float>(ff), ElementsAre(0, 1, 0, 1, 7, 1));
  ASSERT_OK_AND_ASSIGN(torch::Tensor fl, NpyToInt64Tensor(f, "f"));
  EXPECT_THAT(Vec<int64_t>(fl), ElementsAre(0, 1, 0, 1, 7, 1));
  EXPECT_EQ(NpyToBoolTensor(f, "f").status().ToString(),
            "INVALID_ARGUMENT: f: a mask must hold only 0 and 1; element 4 is 7");
  // The tensors are copies: they outlive the array.
  torch::Tensor tf, tl, tb;
  {
    NpyArray a = ArrayOf<float>({1.5f, 2.5f});
    ASSERT_OK_AND_ASSIGN(tf, NpyToFloat32Tensor(a, "a"));
    NpyArray b = ArrayOf<int64_t>({3, 4});
    ASSERT_OK_AND_ASSIGN(tl, NpyToInt64Tensor(b, "b"));
    NpyArray c = ArrayOf<bool>({true, false});
    ASSERT_OK_AND_ASSIGN(tb, NpyToBoolTensor(c, "c"));
    a.data.assign(a.data.size(), '\0');
    b.data.assign(b.data.size(), '\0');
    c.data.assign(c.data.size(), '\0');
  }
  EXPECT_THAT(Vec<float>(tf), ElementsAre(1.5f, 2.5f));
  EXPECT_THAT(Vec<int64_t>(tl), ElementsAre(3, 4));
  EXPECT_THAT(Vec<bool>(tb), ElementsAre(true, false));
}

std::vector<testing::NpzMember> SmallMembers() {
  return {{"labels.npy", NpyFromValues<int64_t>({3}, {0, 2, 1})},
          {"x.npy", NpyFromValues<float>({2, 2}, {1, 0, 0, 1})},
          {"class_names.npy", NpyBytes("|O", {1}, "\x80\x02junk")}};
}

TEST(NpzArchiveTest, ReadsStoredAndDeflatedMembers) {
  for (bool deflate : {false, true}) {
    ASSERT_OK_AND_ASSIGN(std::string zip, NpzBytes(SmallMembers(), deflate));
    ASSERT_OK_AND_ASSIGN(NpzArchive npz, NpzArchive::FromBytes(zip, "mem.npz"));
    EXPECT_THAT(npz.keys(), ElementsAre("labels", "x", "class_names"));
    EXPECT_TRUE(npz.Contains("x"));
    EXPECT_FALSE(npz.Contains("x.npy"));
    ASSERT_OK_AND_ASSIGN(NpyArray labels, npz.ReadArray("labels"));
    EXPECT_THAT(labels.values<int64_t>(), ElementsAre(0, 2, 1));
    ASSERT_OK_AND_ASSIGN(NpyArray x, npz.ReadArray("x"));
    EXPECT_THAT(x.shape, ElementsAre(2, 2));
    // The pickled member is refused, and only when asked for.
    EXPECT_THAT(npz.ReadArray("class_names"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("mem.npz:class_names.npy: bad .npy header: object array")));
    EXPECT_THAT(
        npz.ReadArray("adj_data"),
        StatusIs(absl::StatusCode::kNotFound, HasSubstr("mem.npz: no member 'adj_data.npy'")));
  }
}

TEST(NpzArchiveTest, MovedArchiveStillReads) {
  ASSERT_OK_AND_ASSIGN(std::string zip, NpzBytes(SmallMembers(), true));
  ASSERT_OK_AND_ASSIGN(NpzArchive a, NpzArchive::FromBytes(zip, "mem.npz"));
  NpzArchive b = std::move(a);
  ASSERT_OK_AND_ASSIGN(NpyArray labels, b.ReadArray("labels"));
  EXPECT_EQ(labels.numel(), 3);
}

TEST(NpzArchiveTest, CorruptArchivesAreDataLoss) {
  EXPECT_THAT(NpzArchive::FromBytes("definitely not a zip", "bad.npz"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("bad.npz: not a valid .npz")));
  EXPECT_THAT(NpzArchive::FromBytes("", "empty.npz"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("empty.npz")));
  ASSERT_OK_AND_ASSIGN(std::string zip, NpzBytes(SmallMembers(), false));
  EXPECT_THAT(NpzArchive::FromBytes(zip.substr(0, zip.size() - 10), "cut.npz"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cut.npz")));
  // Flip one byte of the stored labels data: the CRC no longer matches.
  std::string flipped = zip;
  const size_t at = flipped.find("labels.npy") + 10 + 128 + 8;  // name, npy header, 1st label
  flipped[at] ^= 0x5a;
  ASSERT_OK_AND_ASSIGN(NpzArchive npz, NpzArchive::FromBytes(flipped, "crc.npz"));
  EXPECT_THAT(npz.ReadArray("labels"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("crc.npz:labels.npy")));
  ASSERT_OK_AND_ASSIGN(NpyArray x, npz.ReadArray("x"));  // other members are unaffected
  EXPECT_EQ(x.numel(), 4);
}

TEST(NpzArchiveTest, EnforcesMemberSizeLimit) {
  ASSERT_OK_AND_ASSIGN(std::string zip, NpzBytes(SmallMembers(), true));
  ASSERT_OK_AND_ASSIGN(NpzArchive npz,
                       NpzArchive::FromBytes(zip, "mem.npz", {.max_member_bytes = 100}));
  EXPECT_THAT(npz.ReadArray("x"), StatusIs(absl::StatusCode::kResourceExhausted,
                                           HasSubstr("mem.npz:x.npy: decompresses to 144")));
}

TEST(NpzArchiveTest, MissingFileSaysHowToGetIt) {
  EXPECT_THAT(NpzArchive::Open("/nonexistent/texas.npz", "texas"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("download_datasets.sh texas")));
}

}  // namespace
}  // namespace fgl::graph::io
