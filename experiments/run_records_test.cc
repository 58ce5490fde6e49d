// Issue #68 (8): a damaged, misplaced or out-of-range run record stops the table runner, naming
// the file, instead of leaving a seed out of the report ("2 of 3") or printing its number.
#include "experiments/run_records.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "experiments/spec.h"
#include "experiments/table_plan.h"
#include "fl/proto_json.h"
#include "glog/logging.h"
#include "gmock/gmock.h"
#include "graph/io/file.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::experiments {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

// One cell, three seeds, on the synthetic graph (no data files).
proto::Table OneCellTable() {
  proto::Table table;
  CHECK(google::protobuf::TextFormat::ParseFromString(R"pb(
    id: "records_test" title: "records test" paper: "none" metric: "test accuracy (%)"
    base {
      dataset: "csbm:num_nodes=600" partitioner: "louvain" clients: 3 method: "fedavg"
      model: "gcn:layers=2,hidden=16,dropout=0.5" rounds: 2 local_epochs: 1 seeds: [ 1, 2, 3 ]
    }
    rows { key: "fedavg" }
    columns { key: "c3" }
    cells { row: "fedavg" column: "c3" paper { mean: 50 present: true } }
  )pb", &table));
  return table;
}

class RunRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    ASSERT_OK(graph::io::MakeDirs(dir_ + "/results"));
    ASSERT_OK(graph::io::MakeDirs(dir_ + "/cache"));
    ASSERT_OK_AND_ASSIGN(proto::Experiment cell, CellExperiment(table_, table_.cells(0)));
    ASSERT_OK_AND_ASSIGN(resolved_, Resolve(cell, "test"));
    for (uint64_t seed : {1, 2, 3}) {
      // Seeds 1 and 2 as written now (with a checksum), seed 3 as before checksums.
      if (seed < 3) {
        ASSERT_OK(WriteRunRecord(PathOf(seed), Record(seed)));
      } else {
        ASSERT_OK(WriteRecord(PathOf(seed), Record(seed)));
      }
    }
  }

  proto::RunRecord Record(uint64_t seed) const {
    proto::RunRecord r;
    r.set_key(ResultCacheKey(resolved_, seed, kResultVersion));
    r.set_result_version(kResultVersion);
    r.set_spec(KeyedSpecText(resolved_));
    r.set_seed(seed);
    r.set_method_version(CurrentVersion("fedavg"));
    r.mutable_result()->set_test_acc(60.5 + seed);
    r.mutable_result()->set_val_acc(58.25);
    r.mutable_result()->set_wall_s(3.5);
    r.mutable_result()->set_train_s(2.5);
    r.mutable_result()->set_bytes_up(1000);
    r.mutable_result()->set_bytes_down(1000);
    for (double acc : {40.0, 60.5 + seed}) {
      r.add_test_curve(acc);
      r.add_val_curve(acc - 1);
      r.add_seconds_curve(1.25);
    }
    return r;
  }
  std::string PathOf(uint64_t seed) const {
    return absl::StrCat(dir_, "/results/", ResultCacheKey(resolved_, seed, kResultVersion), ".json");
  }
  std::string Read(const std::string& path) const { return graph::io::ReadFileBytes(path).value(); }
  void Write(const std::string& path, const std::string& text) const { std::ofstream(path, std::ios::trunc) << text; }

  // Plans the table from the records alone, as `table_runner --cached_only` does.
  absl::Status PlanCachedOnly(TablePlan& plan) const {
    PlanOptions options;
    options.table_path = "records_test.textproto";
    options.data_dir = dir_;
    options.records = dir_ + "/results";
    options.cache = dir_ + "/cache";
    options.cached_only = true;
    return PlanTable(table_, options, plan);
  }

  proto::Table table_ = OneCellTable();
  proto::Experiment resolved_;
  std::string dir_;
};

TEST_F(RunRecordsTest, GoodRecordsWithAndWithoutChecksumFillTheCell) {
  EXPECT_THAT(Read(PathOf(1)), HasSubstr(",\"checksum\":\""));
  EXPECT_THAT(Read(PathOf(3)), ::testing::Not(HasSubstr("checksum")));
  ASSERT_OK_AND_ASSIGN(proto::RunRecord one, ReadRunRecord(PathOf(1)));
  EXPECT_EQ(one.result().test_acc(), 61.5);
  TablePlan plan;
  ASSERT_OK(PlanCachedOnly(plan));
  const CellResult& cell = plan.results.at({"fedavg", "c3"});
  EXPECT_EQ(cell.state, CellResult::State::kDone);
  EXPECT_THAT(cell.values, ::testing::ElementsAre(61.5, 62.5, 63.5));
}

TEST_F(RunRecordsTest, EmptyTruncatedOrGarbledRecordsNameTheFile) {
  const std::string path = PathOf(2);
  const std::string good = Read(path);
  for (const std::string& bad : {std::string(), std::string("\n"), good.substr(0, good.size() / 2), std::string("{]")}) {
    Write(path, bad);
    EXPECT_THAT(ReadRunRecord(path), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path))) << "'" << bad << "'";
    TablePlan plan;
    EXPECT_THAT(PlanCachedOnly(plan), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path)));
  }
  // A flipped digit still parses: the checksum catches it.
  std::string flipped = good;
  const size_t at = flipped.find("\"test_acc\":62.5");
  ASSERT_NE(at, std::string::npos) << good;
  flipped[at + 12] = '7';
  Write(path, flipped);
  EXPECT_THAT(ReadRunRecord(path), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum")));
  TablePlan plan;
  EXPECT_THAT(PlanCachedOnly(plan), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(path)));
}

TEST_F(RunRecordsTest, MisplacedRecordsNameTheFile) {
  // Seed 1's record under seed 2's name.
  Write(PathOf(2), Read(PathOf(1)));
  EXPECT_THAT(ReadRunRecord(PathOf(2)), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("holds the record of run")));
  TablePlan plan;
  EXPECT_THAT(PlanCachedOnly(plan), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(PathOf(2))));
  // Seed 1's record renamed to say it is seed 2's: its key is not its own spec's and seed's.
  proto::RunRecord lying = Record(1);
  lying.set_key(ResultCacheKey(resolved_, 2, kResultVersion));
  ASSERT_OK(WriteRecord(PathOf(2), lying));
  EXPECT_THAT(ReadRunRecord(PathOf(2)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not that of its own spec, seed and result version")));
  TablePlan again;
  EXPECT_THAT(PlanCachedOnly(again), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(PathOf(2))));
}

TEST_F(RunRecordsTest, OutOfRangeValuesAreRefused) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double acc : {1e308, -5.0, nan, 100.5}) {
    proto::RunRecord r = Record(2);
    r.mutable_result()->set_test_acc(acc);
    EXPECT_THAT(WriteRunRecord(PathOf(2), r), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("test_acc")));
    ASSERT_OK(WriteRecord(PathOf(2), r));  // as an old writer, or a hand, would
    EXPECT_THAT(ReadRunRecord(PathOf(2)), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("result.test_acc")));
    TablePlan plan;
    EXPECT_THAT(PlanCachedOnly(plan), StatusIs(absl::StatusCode::kDataLoss, HasSubstr(PathOf(2)))) << acc;
  }
  proto::RunRecord curve = Record(2);
  curve.set_test_curve(0, nan);
  ASSERT_OK(WriteRecord(PathOf(2), curve));
  EXPECT_THAT(ReadRunRecord(PathOf(2)), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("test_curve[0]")));
  proto::RunRecord time = Record(2);
  time.mutable_result()->set_wall_s(-1);
  ASSERT_OK(WriteRecord(PathOf(2), time));
  EXPECT_THAT(ReadRunRecord(PathOf(2)), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("result.wall_s")));
  proto::RunRecord seconds = Record(2);
  seconds.set_seconds_curve(1, -0.5);
  ASSERT_OK(WriteRecord(PathOf(2), seconds));
  EXPECT_THAT(ReadRunRecord(PathOf(2)), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("seconds_curve[1]")));
  proto::RunRecord metric = Record(2);
  (*metric.mutable_round_metrics()->mutable_curves())["some_loss"].add_values(nan);
  EXPECT_THAT(WriteRunRecord(PathOf(2), metric),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("round_metrics[some_loss][0]")));
}

// The mapping itself, on fields today's records leave out: a plain field is taken every round, a
// field with presence only from the rounds that have it.
TEST(AddRoundMetricsTest, TakesEveryFieldNotLeftOutAndSkipsAnAbsentOne) {
  fl::proto::RoundRecord first, second;
  first.set_val_acc(50);
  first.set_client_mean_test_acc(40);
  first.set_test_loss(1.5);
  second.set_val_acc(60);
  second.set_client_mean_test_acc(45);  // no test_loss
  proto::RunRecord record;
  for (const fl::proto::RoundRecord* round : {&first, &second}) AddRoundMetrics(*round, {"val_acc", "seconds"}, record);
  const auto& curves = record.round_metrics().curves();
  EXPECT_FALSE(curves.contains("val_acc"));
  EXPECT_FALSE(curves.contains("seconds"));
  EXPECT_FALSE(curves.contains("global_test_acc"));  // no round has it
  ASSERT_TRUE(curves.contains("client_mean_test_acc"));
  EXPECT_THAT(curves.at("client_mean_test_acc").values(), ::testing::ElementsAre(40, 45));
  ASSERT_TRUE(curves.contains("test_loss"));
  EXPECT_THAT(curves.at("test_loss").values(), ::testing::ElementsAre(1.5));
  ASSERT_TRUE(curves.contains("test_acc"));  // a plain field: 0 when unset
  EXPECT_THAT(curves.at("test_acc").values(), ::testing::ElementsAre(0, 0));
}

// Issue #67: a new per-round metric (a double field of fl's RoundRecord) reaches the record by
// reflection, in round_metrics; the fields today's records keep by name, or deliberately not at
// all, never do, so that a record of today's runs reads byte for byte as before.
TEST_F(RunRecordsTest, RoundMetricsTakeEveryOtherDoubleFieldOfTheRounds) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* d = fl::proto::RoundRecord::descriptor();
  std::vector<std::string> left_out = RoundFieldsWithNamedCurves();
  for (const std::string& name : RoundFieldsNotRecorded()) left_out.push_back(name);
  for (const std::string& name : left_out) {  // a renamed field would turn into a new key
    const FieldDescriptor* f = d->FindFieldByName(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->cpp_type(), FieldDescriptor::CPPTYPE_DOUBLE) << name;
  }
  // Two rounds with every double field set, except the optional ones in round 2.
  std::string rounds;
  std::map<std::string, std::vector<double>> expected;
  for (int r = 1; r <= 2; ++r) {
    fl::proto::RoundRecord round;
    round.set_round(r);
    const google::protobuf::Reflection& reflection = *round.GetReflection();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (f->is_repeated() || f->cpp_type() != FieldDescriptor::CPPTYPE_DOUBLE) continue;
      if (r == 2 && f->has_presence()) continue;
      const double value = f->number() + 0.25 * r;
      reflection.SetDouble(&round, f, value);
      if (std::find(left_out.begin(), left_out.end(), f->name()) == left_out.end()) expected[f->name()].push_back(value);
    }
    rounds += fl::ToJsonLine(round) + "\n";
  }
  const std::string rounds_path = dir_ + "/rounds.jsonl";
  Write(rounds_path, rounds);
  ASSERT_OK_AND_ASSIGN(proto::RunRecord record,
                       MakeRecord(ResultCacheKey(resolved_, 1, kResultVersion), resolved_, 1, Record(1).result(), rounds_path));
  std::map<std::string, std::vector<double>> got;
  for (const auto& [name, curve] : record.round_metrics().curves()) got[name].assign(curve.values().begin(), curve.values().end());
  EXPECT_EQ(got, expected);
  EXPECT_EQ(record.val_curve_size(), 2);
  ASSERT_OK(WriteRunRecord(PathOf(1), record));
  ASSERT_OK_AND_ASSIGN(proto::RunRecord read, ReadRunRecord(PathOf(1)));
  EXPECT_EQ(read.round_metrics().curves_size(), record.round_metrics().curves_size());
  // Printed only when there is one: none today, so no new key in today's records.
  EXPECT_EQ(absl::StrContains(Read(PathOf(1)), "round_metrics"), !expected.empty()) << Read(PathOf(1));
  EXPECT_THAT(Read(PathOf(2)), ::testing::Not(HasSubstr("round_metrics")));
}

TEST_F(RunRecordsTest, AMissingRecordLeavesTheCellNotRunWithoutError) {
  std::filesystem::remove(PathOf(2));
  EXPECT_THAT(ReadRunRecord(PathOf(2)), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  TablePlan plan;
  ASSERT_OK(PlanCachedOnly(plan));
  const CellResult& cell = plan.results.at({"fedavg", "c3"});
  EXPECT_EQ(cell.state, CellResult::State::kNotRun);  // the report says "not run (2 of 3)", and the log why
  EXPECT_EQ(cell.seeds_recorded, 2);
  EXPECT_TRUE(cell.values.empty());
}

}  // namespace
}  // namespace fgl::experiments
