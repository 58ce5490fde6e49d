#include "graph/io/pickle.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/io/file.h"
#include "graph/io/pickle_test_util.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph::io {
namespace {

using ::fgl::graph::io::testing::CsrPickle;
using ::fgl::graph::io::testing::FloatBytes;
using ::fgl::graph::io::testing::Int32Bytes;
using ::fgl::graph::io::testing::NdArrayPickle;
using ::fgl::graph::io::testing::PickleWriter;
using ::fgl::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace op = ::fgl::graph::io::testing::op;

TEST(UnpickleTest, Scalars) {
  ASSERT_OK_AND_ASSIGN(PickleValue none, Unpickle(PickleWriter().Op(op::kNone).Stop()));
  EXPECT_TRUE(none.is_none());
  ASSERT_OK_AND_ASSIGN(PickleValue t, Unpickle(PickleWriter().Op(op::kNewTrue).Stop()));
  ASSERT_NE(t.as_bool(), nullptr);
  EXPECT_TRUE(*t.as_bool());
  EXPECT_EQ(t.as_int(), nullptr);  // a bool is not an int here
  for (int64_t v : std::vector<int64_t>{0, 200, 1000, 65535, 70000, -7, -2147483648LL}) {
    ASSERT_OK_AND_ASSIGN(PickleValue i, Unpickle(PickleWriter().Int(v).Stop()));
    ASSERT_NE(i.as_int(), nullptr) << v;
    EXPECT_EQ(*i.as_int(), v);
  }
  const std::string long_str(300, 'z');  // BINSTRING
  for (const std::string& s : {std::string("csr"), long_str}) {
    ASSERT_OK_AND_ASSIGN(PickleValue v, Unpickle(PickleWriter().Str(s).Stop()));
    ASSERT_NE(v.as_string(), nullptr);
    EXPECT_EQ(*v.as_string(), s);
  }
  ASSERT_OK_AND_ASSIGN(PickleValue u, Unpickle(PickleWriter().Unicode("h\xc3\xa9").Stop()));
  EXPECT_EQ(*u.as_string(), "h\xc3\xa9");
}

TEST(UnpickleTest, Tuples) {
  // (), (1,), (1, 2), (1, 2, 3) and MARK 1 2 3 4 TUPLE, all inside one outer TUPLE.
  PickleWriter w;
  w.Op(op::kMark).Op(op::kEmptyTuple);
  w.Int(1).Op(op::kTuple1);
  w.Int(1).Int(2).Op(op::kTuple2);
  w.Int(1).Int(2).Int(3).Op(op::kTuple3);
  w.Op(op::kMark).Int(1).Int(2).Int(3).Int(4).Op(op::kTuple);
  w.Op(op::kTuple);
  ASSERT_OK_AND_ASSIGN(PickleValue v, Unpickle(w.Stop()));
  ASSERT_NE(v.as_tuple(), nullptr);
  EXPECT_EQ(v.as_list(), nullptr);
  const std::vector<PickleValue>& outer = *v.as_tuple();
  ASSERT_EQ(outer.size(), 5u);
  for (size_t i = 0; i < outer.size(); ++i) {
    ASSERT_NE(outer[i].as_tuple(), nullptr);
    ASSERT_EQ(outer[i].as_tuple()->size(), i);
    for (size_t j = 0; j < i; ++j) EXPECT_EQ(*(*outer[i].as_tuple())[j].as_int(), int64_t(j + 1));
  }
}

TEST(UnpickleTest, ListsShareMutationsThroughTheMemo) {
  // L = []; memo[0] = L; push memo[0]; APPEND 7 to it; MARK 8 9 APPENDS; (L, memo[0]).
  // Python's result is ([7, 8, 9], [7, 8, 9]): both names are the same list.
  PickleWriter w;
  w.Op(op::kEmptyList).Put(0).Get(0).Int(7).Op(op::kAppend);
  w.Op(op::kMark).Int(8).Int(9).Op(op::kAppends).Op(op::kTuple2);
  ASSERT_OK_AND_ASSIGN(PickleValue v, Unpickle(w.Stop()));
  ASSERT_NE(v.as_tuple(), nullptr);
  for (const PickleValue& list : *v.as_tuple()) {
    ASSERT_NE(list.as_list(), nullptr);
    std::vector<int64_t> got;
    for (const PickleValue& x : *list.as_list()) got.push_back(*x.as_int());
    EXPECT_THAT(got, ElementsAre(7, 8, 9));
  }
}

TEST(UnpickleTest, LongMemoIndices) {
  PickleWriter w;
  w.Str("far").Put(70000).Get(70000).Op(op::kTuple2);
  ASSERT_OK_AND_ASSIGN(PickleValue v, Unpickle(w.Stop()));
  ASSERT_EQ(v.as_tuple()->size(), 2u);
  EXPECT_EQ(*(*v.as_tuple())[1].as_string(), "far");
}

TEST(UnpickleTest, DictKeepsFirstPositionAndLastValue) {
  // {'a': 1, 2: 'b'} then SETITEM 'a' = 3, as Python: {'a': 3, 2: 'b'}.
  PickleWriter w;
  w.Op(op::kEmptyDict).Op(op::kMark).Str("a").Int(1).Int(2).Str("b").Op(op::kSetItems);
  w.Str("a").Int(3).Op(op::kSetItem);
  ASSERT_OK_AND_ASSIGN(PickleValue v, Unpickle(w.Stop()));
  const PickleDict* d = v.as_dict();
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->entries.size(), 2u);
  EXPECT_EQ(std::get<std::string>(d->entries[0].first), "a");
  EXPECT_EQ(*d->entries[0].second.as_int(), 3);
  EXPECT_EQ(std::get<int64_t>(d->entries[1].first), 2);
  ASSERT_NE(d->Find(PickleKey(int64_t{2})), nullptr);
  EXPECT_EQ(*d->Find(PickleKey(int64_t{2}))->as_string(), "b");
  EXPECT_EQ(d->Find(PickleKey(std::string("zz"))), nullptr);
}

TEST(UnpickleTest, NdArrayInt32) {
  // [[1, 2, 3], [4, 5, -6]] as numpy pickles an int32 array.
  ASSERT_OK_AND_ASSIGN(PickleValue v,
                       Unpickle(NdArrayPickle("i4", '<', {2, 3}, Int32Bytes({1, 2, 3, 4, 5, -6}))));
  const NdArray* a = v.as_ndarray();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, "<i4");
  EXPECT_THAT(a->shape, ElementsAre(2, 3));
  EXPECT_FALSE(a->fortran_order);
  EXPECT_EQ(a->itemsize(), 4);
  EXPECT_EQ(a->num_elements(), 6);
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> ints, NdArrayToInt64(*a));
  EXPECT_THAT(ints, ElementsAre(1, 2, 3, 4, 5, -6));
  ASSERT_OK_AND_ASSIGN(std::vector<float> floats, NdArrayToFloat(*a));
  EXPECT_THAT(floats, ElementsAre(1, 2, 3, 4, 5, -6));
}

TEST(UnpickleTest, NdArrayFortranOrderIsReturnedInCOrder) {
  // Column-major storage of [[1, 2, 3], [4, 5, 6]] is 1 4 2 5 3 6.
  ASSERT_OK_AND_ASSIGN(
      PickleValue v,
      Unpickle(NdArrayPickle("i4", '<', {2, 3}, Int32Bytes({1, 4, 2, 5, 3, 6}), true)));
  EXPECT_TRUE(v.as_ndarray()->fortran_order);
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> ints, NdArrayToInt64(*v.as_ndarray()));
  EXPECT_THAT(ints, ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(UnpickleTest, NdArrayOtherDtypes) {
  // float64 [0.5, -2], big-endian int32 [258], bool [1, 0, 1] (byte order normalised to '|').
  std::string f8(16, '\0');
  const double d[2] = {0.5, -2.0};
  std::memcpy(f8.data(), d, 16);
  ASSERT_OK_AND_ASSIGN(PickleValue v, Unpickle(NdArrayPickle("f8", '<', {2}, f8)));
  EXPECT_EQ(v.as_ndarray()->dtype, "<f8");
  ASSERT_OK_AND_ASSIGN(std::vector<float> floats, NdArrayToFloat(*v.as_ndarray()));
  EXPECT_THAT(floats, ElementsAre(0.5f, -2.0f));
  EXPECT_THAT(NdArrayToInt64(*v.as_ndarray()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("<f8")));

  ASSERT_OK_AND_ASSIGN(v, Unpickle(NdArrayPickle("i4", '>', {1}, std::string("\0\0\x01\x02", 4))));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> ints, NdArrayToInt64(*v.as_ndarray()));
  EXPECT_THAT(ints, ElementsAre(258));

  ASSERT_OK_AND_ASSIGN(v, Unpickle(NdArrayPickle("b1", '<', {3}, std::string("\x01\x00\x01", 3))));
  EXPECT_EQ(v.as_ndarray()->dtype, "|b1");
  ASSERT_OK_AND_ASSIGN(ints, NdArrayToInt64(*v.as_ndarray()));
  EXPECT_THAT(ints, ElementsAre(1, 0, 1));

  ASSERT_OK_AND_ASSIGN(v, Unpickle(NdArrayPickle("u8", '<', {1}, std::string(8, '\xff'))));
  EXPECT_THAT(NdArrayToInt64(*v.as_ndarray()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exceeds int64")));

  ASSERT_OK_AND_ASSIGN(v, Unpickle(NdArrayPickle("i8", '<', {0, 5}, "")));  // empty
  EXPECT_EQ(v.as_ndarray()->num_elements(), 0);
}

TEST(UnpickleTest, CsrMatrix) {
  // [[0, 1.5, 0], [0, 0, 0], [2, 0, 3]]: indptr [0, 1, 1, 3], indices [1, 0, 2].
  ASSERT_OK_AND_ASSIGN(PickleValue v, Unpickle(CsrPickle(3, 3, {0, 1.5, 0, 0, 0, 0, 2, 0, 3})));
  const CsrMatrix* m = v.as_csr();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->num_rows, 3);
  EXPECT_EQ(m->num_cols, 3);
  EXPECT_THAT(NdArrayToInt64(m->indptr).value(), ElementsAre(0, 1, 1, 3));
  EXPECT_THAT(NdArrayToInt64(m->indices).value(), ElementsAre(1, 0, 2));
  EXPECT_THAT(NdArrayToFloat(m->data).value(), ElementsAre(1.5f, 2.0f, 3.0f));
}

TEST(UnpickleTest, CsrMatrixFromNewScipyModule) {
  PickleWriter w;
  w.Global("scipy.sparse._csr", "csr_matrix").Op(op::kEmptyTuple).Op(op::kNewObj);
  w.Op(op::kEmptyDict).Op(op::kMark).Str("_shape").Int(1).Int(4).Op(op::kTuple2);
  w.Str("indptr").NdArray("i4", '<', {2}, Int32Bytes({0, 1}));
  w.Str("indices").NdArray("i4", '<', {1}, Int32Bytes({3}));
  w.Str("data").NdArray("f4", '<', {1}, FloatBytes({7}));
  w.Op(op::kSetItems).Op(op::kBuild);
  ASSERT_OK_AND_ASSIGN(PickleValue v, Unpickle(w.Stop()));
  ASSERT_NE(v.as_csr(), nullptr);
  EXPECT_EQ(v.as_csr()->num_cols, 4);
}

TEST(UnpickleTest, DefaultDictOfLists) {
  ASSERT_OK_AND_ASSIGN(PickleValue v,
                       Unpickle(testing::AdjacencyPickle({{0, {1, 2}}, {1, {0}}, {5, {}}})));
  const PickleDict* d = v.as_dict();
  ASSERT_NE(d, nullptr);
  ASSERT_EQ(d->entries.size(), 3u);
  EXPECT_EQ(std::get<int64_t>(d->entries[2].first), 5);
  EXPECT_EQ(d->entries[0].second.as_list()->size(), 2u);
  EXPECT_EQ(*(*d->entries[1].second.as_list())[0].as_int(), 0);
  EXPECT_TRUE(d->entries[2].second.as_list()->empty());

  PickleWriter py3;
  py3.Global("collections", "defaultdict").Global("builtins", "list").Op(op::kTuple1);
  py3.Op(op::kReduce);
  ASSERT_OK_AND_ASSIGN(v, Unpickle(py3.Stop()));
  EXPECT_NE(v.as_dict(), nullptr);
}

// The classic payload: GLOBAL module\nname\n, an argument tuple, REDUCE.
std::string CallPickle(const std::string& module, const std::string& name) {
  return PickleWriter()
      .Global(module, name)
      .Str("touch /tmp/pwned")
      .Op(op::kTuple1)
      .Op(op::kReduce)
      .Stop();
}

TEST(UnpickleTest, RefusesOtherGlobals) {
  EXPECT_THAT(Unpickle(CallPickle("os", "system"), "evil.pkl"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("evil.pkl: byte 2: GLOBAL: global 'os system' is not allowed")));
  EXPECT_THAT(Unpickle(CallPickle("builtins", "eval")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'builtins eval'")));
  EXPECT_THAT(Unpickle(CallPickle("posix", "system")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'posix system'")));
  EXPECT_THAT(Unpickle(CallPickle("numpy", "load")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'numpy load'")));
  // Odd bytes in a name are escaped, not echoed raw.
  EXPECT_THAT(Unpickle(CallPickle("os\x01", "system")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'os\\x01 system'")));
}

TEST(UnpickleTest, AllowedGlobalsOnlyTheirOwnWay) {
  // list(...) and ndarray(...) are allowed names but not allowed calls.
  EXPECT_THAT(Unpickle(CallPickle("__builtin__", "list")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("REDUCE: calling 'list' is not allowed")));
  EXPECT_THAT(
      Unpickle(
          PickleWriter().Global("numpy", "ndarray").Op(op::kEmptyTuple).Op(op::kNewObj).Stop()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NEWOBJ: only scipy")));
  EXPECT_THAT(Unpickle(PickleWriter().Str("x").Op(op::kEmptyTuple).Op(op::kReduce).Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot call a str")));
  EXPECT_THAT(Unpickle(PickleWriter()
                           .Global("collections", "defaultdict")
                           .Global("numpy", "dtype")
                           .Op(op::kTuple1)
                           .Op(op::kReduce)
                           .Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("defaultdict(list)")));
  // An object array would carry pickled objects; its dtype is refused up front.
  EXPECT_THAT(Unpickle(NdArrayPickle("O8", '|', {1}, std::string(8, '\0'))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype 'O8'")));
  // A bare global is not a value.
  EXPECT_THAT(Unpickle(PickleWriter().Global("numpy", "ndarray").Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bare 'numpy ndarray'")));
}

TEST(UnpickleTest, RefusesOtherOpcodesAndProtocols) {
  // Protocol 4 framing after a protocol-2 header.
  EXPECT_THAT(Unpickle(PickleWriter().Raw(std::string("\x95\x01\0\0\0\0\0\0\0N", 10)).Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("byte 2: FRAME: opcode 0x95 is not supported")));
  EXPECT_THAT(Unpickle(PickleWriter(4).Op(op::kNone).Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("protocol 4")));
  EXPECT_THAT(Unpickle(PickleWriter().Raw("I12\n").Stop()),  // text INT (protocol 0)
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("INT: opcode 0x49")));
  EXPECT_THAT(Unpickle(PickleWriter().Op(op::kNone).Raw("\x80\x02").Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("first opcode")));
  EXPECT_THAT(Unpickle(PickleWriter().Raw("\xff").Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown: opcode 0xff")));
}

TEST(UnpickleTest, MalformedStreams) {
  auto invalid = [](const std::string& bytes, const std::string& message) {
    EXPECT_THAT(Unpickle(bytes), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << message;
  };
  invalid(PickleWriter().Int(1).Op(op::kAppend).Stop(), "byte 4: APPEND: stack underflow");
  invalid(PickleWriter().Int(1).Op(op::kTuple).Stop(), "TUPLE: no MARK");
  invalid(PickleWriter().Op(op::kEmptyList).Int(1).Op(op::kAppends).Stop(), "APPENDS: no MARK");
  invalid(PickleWriter().Op(op::kMark).Op(op::kTuple1).Stop(), "only a MARK is left");
  invalid(PickleWriter().Get(3).Stop(), "memo index 3 was never stored");
  invalid(PickleWriter().Op(op::kEmptyDict).Op(op::kMark).Int(1).Op(op::kSetItems).Stop(),
          "odd number of items");
  invalid(PickleWriter().Op(op::kEmptyTuple).Int(1).Op(op::kAppend).Stop(),
          "cannot append to a tuple");
  invalid(PickleWriter().Op(op::kEmptyDict).Op(op::kNone).Int(1).Op(op::kSetItem).Stop(),
          "dict key must be an int or str, not None");
  invalid(PickleWriter().Op(op::kEmptyList).Op(op::kEmptyDict).Op(op::kBuild).Stop(),
          "cannot set the state of a list");
  invalid(PickleWriter().Int(1).Int(2).Stop(), "the stack holds 2 values");
  invalid(PickleWriter().Op(op::kMark).Int(1).Stop(), "a MARK is still open");
  invalid(PickleWriter().Int(1).Stop() + "xyz", "3 trailing bytes after STOP");
  invalid(PickleWriter().Raw("T\xff\xff\xff\xff").Stop(), "negative string length");
  invalid(PickleWriter().Op(op::kStop).Stop(), "STOP");  // STOP with an empty stack
}

TEST(UnpickleTest, TruncationIsDataLoss) {
  const std::string whole = CsrPickle(2, 2, {1, 0, 0, 2});
  ASSERT_OK(Unpickle(whole));
  // Every proper prefix: cut inside an opcode or between opcodes (no STOP).
  for (size_t n = 0; n < whole.size(); ++n) {
    EXPECT_THAT(Unpickle(whole.substr(0, n), "x.pkl"),
                StatusIs(absl::StatusCode::kDataLoss,
                         HasSubstr(absl::StrCat("x.pkl: truncated at byte ", n))))
        << n;
  }
  // A GLOBAL line without its newline.
  EXPECT_THAT(Unpickle(PickleWriter().Raw("cnumpy\nndarr").bytes()),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("GLOBAL at byte 2")));
}

TEST(UnpickleTest, ArrayBytesMustMatchShape) {
  EXPECT_THAT(Unpickle(NdArrayPickle("i4", '<', {2, 3}, Int32Bytes({1, 2, 3, 4, 5}))),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("shape (2, 3) and dtype <i4 needs 6 x 4 bytes but holds 20")));
  EXPECT_THAT(Unpickle(NdArrayPickle("i4", '<', {-1}, "")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ints >= 0")));
  // 2^31-1 cubed overflows int64 (claimed sizes never allocate: they must match held bytes).
  EXPECT_THAT(Unpickle(NdArrayPickle("i4", '<', {2147483647, 2147483647, 2147483647}, "")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows")));
  EXPECT_THAT(Unpickle(NdArrayPickle("i8", '<', {1LL << 30, 1LL << 30, 4}, "")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("holds 0")));
  EXPECT_THAT(Unpickle(NdArrayPickle("i4", '|', {1}, Int32Bytes({1}))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a byte order")));
}

TEST(UnpickleTest, CsrStateIsChecked) {
  PickleWriter w;
  w.Global("scipy.sparse.csr", "csr_matrix").Op(op::kEmptyTuple).Op(op::kNewObj);
  w.Op(op::kEmptyDict).Op(op::kMark).Str("_shape").Int(3).Int(4).Op(op::kTuple2);
  w.Str("indptr").NdArray("i4", '<', {2}, Int32Bytes({0, 1}));  // 2 entries for 3 rows
  w.Str("indices").NdArray("i4", '<', {1}, Int32Bytes({3}));
  w.Str("data").NdArray("f4", '<', {1}, FloatBytes({7}));
  w.Op(op::kSetItems).Op(op::kBuild);
  EXPECT_THAT(Unpickle(w.Stop()), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("indptr has 2 entries for 3 rows")));
  PickleWriter no_data;
  no_data.Global("scipy.sparse.csr", "csr_matrix").Op(op::kEmptyTuple).Op(op::kNewObj);
  no_data.Op(op::kEmptyDict).Str("_shape").Int(0).Int(0).Op(op::kTuple2).Op(op::kSetItem);
  no_data.Op(op::kBuild);
  EXPECT_THAT(Unpickle(no_data.Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no 'indptr'")));
  EXPECT_THAT(Unpickle(PickleWriter()
                           .Global("scipy.sparse.csr", "csr_matrix")
                           .Op(op::kEmptyTuple)
                           .Op(op::kNewObj)
                           .Stop()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("never received its state")));
}

TEST(UnpickleTest, DepthAndCyclesAreBounded) {
  PickleWriter deep;
  for (int i = 0; i < 100; ++i) deep.Op(op::kEmptyList);
  for (int i = 0; i < 99; ++i) deep.Op(op::kAppend);
  EXPECT_THAT(Unpickle(deep.Stop()),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("deeper than 64")));
  UnpickleOptions roomy;
  roomy.max_depth = 200;
  EXPECT_OK(Unpickle(deep.bytes(), "deep", roomy));

  // L = []; L.append(L).
  EXPECT_THAT(Unpickle(PickleWriter().Op(op::kEmptyList).Put(0).Get(0).Op(op::kAppend).Stop()),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("refer to themselves")));
}

TEST(UnpickleTest, SharedReferencesCannotBlowUp) {
  // p_0 = 'x' * 1000, p_{k+1} = (p_k, p_k) through the memo: 2^40 leaves from about 1 KB of
  // input. Each step also folds the stack into one value, x_{k+1} = (x_k, p_{k+1}).
  PickleWriter w;
  w.Str(std::string(1000, 'x')).Put(0).Op(op::kTuple1);
  for (int k = 0; k < 40; ++k) w.Get(0).Get(0).Op(op::kTuple2).Put(0).Op(op::kTuple2);
  EXPECT_THAT(Unpickle(w.Stop()),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("bytes of memory")));
}

// Real files: only with FGL_DATA_DIR (see .bazelrc).
class RealPickleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* dir = std::getenv("FGL_DATA_DIR");
    if (dir == nullptr || *dir == '\0') GTEST_SKIP() << "FGL_DATA_DIR is not set";
    dir_ = dir;
  }
  std::string Read(const std::string& rel) {
    auto bytes = ReadFileBytes(dir_ + "/" + rel);
    EXPECT_OK(bytes);
    return bytes.ok() ? *bytes : "";
  }
  std::string dir_;
};

TEST_F(RealPickleTest, CoraLabels) {
  ASSERT_OK_AND_ASSIGN(PickleValue v, Unpickle(Read("cora/ind.cora.y"), "ind.cora.y"));
  const NdArray* y = v.as_ndarray();
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->dtype, "<i4");
  EXPECT_THAT(y->shape, ElementsAre(140, 7));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> onehot, NdArrayToInt64(*y));
  for (int r = 0; r < 140; ++r) {
    int64_t sum = 0;
    for (int c = 0; c < 7; ++c) sum += onehot[r * 7 + c];
    EXPECT_EQ(sum, 1) << "row " << r;
  }
}

TEST_F(RealPickleTest, CoraFeaturesAndGraph) {
  ASSERT_OK_AND_ASSIGN(PickleValue x, Unpickle(Read("cora/ind.cora.x"), "ind.cora.x"));
  const CsrMatrix* m = x.as_csr();
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->num_rows, 140);
  EXPECT_EQ(m->num_cols, 1433);
  EXPECT_EQ(m->indptr.dtype, "<i4");
  EXPECT_EQ(m->data.dtype, "<f4");
  EXPECT_THAT(m->indices.shape, ElementsAre(2647));

  ASSERT_OK_AND_ASSIGN(PickleValue g, Unpickle(Read("cora/ind.cora.graph"), "ind.cora.graph"));
  ASSERT_NE(g.as_dict(), nullptr);
  EXPECT_EQ(g.as_dict()->entries.size(), 2708u);
  const PickleValue* first = g.as_dict()->Find(PickleKey(int64_t{0}));
  ASSERT_NE(first, nullptr);
  ASSERT_NE(first->as_list(), nullptr);
  std::vector<int64_t> n0;
  for (const PickleValue& v : *first->as_list()) n0.push_back(*v.as_int());
  EXPECT_THAT(n0, ElementsAre(633, 1862, 2582));
}

TEST_F(RealPickleTest, TruncatedRealFile) {
  const std::string bytes = Read("cora/ind.cora.x");
  EXPECT_THAT(
      Unpickle(bytes.substr(0, bytes.size() / 2), "ind.cora.x"),
      StatusIs(absl::StatusCode::kDataLoss,
               HasSubstr(absl::StrCat("ind.cora.x: truncated at byte ", bytes.size() / 2))));
}

}  // namespace
}  // namespace fgl::graph::io
