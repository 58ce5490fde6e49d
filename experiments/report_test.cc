#include "experiments/report.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fgl::experiments {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

proto::PublishedValue Paper(double mean, double std) {
  proto::PublishedValue p;
  p.set_mean(mean);
  p.set_std(std);
  p.set_present(true);
  return p;
}

TEST(ReportTest, CellsShowOursPaperAndDelta) {
  CellResult r;
  r.state = CellResult::State::kDone;
  r.values = {76.0, 77.0, 78.0};  // mean 77, sample std 1
  EXPECT_EQ(FormatCell(r, Paper(73.6, 0.4)), "77.0 ± 1.0 (paper 73.6 ± 0.4, Δ +3.4)");
  r.state = CellResult::State::kNotImplemented;
  EXPECT_EQ(FormatCell(r, Paper(85.1, 0.1)), "not implemented yet (paper 85.1 ± 0.1)");
  r.state = CellResult::State::kDataNotPresent;
  EXPECT_THAT(FormatCell(r, Paper(85.6, 0.3)), HasSubstr("data not present"));
  // A cell whose run failed is loud, never blank or a number.
  r.state = CellResult::State::kFailed;
  EXPECT_THAT(FormatCell(r, Paper(1, 0)), HasSubstr("RUN FAILED"));
}

TEST(ReportTest, MarkdownAndCsvCoverEveryCell) {
  proto::Table t;
  t.set_title("T2");
  t.set_paper("P");
  t.set_metric("acc");
  auto* row = t.add_rows();
  row->set_key("fedavg");
  row->set_label("FedAvg");
  auto* col = t.add_columns();
  col->set_key("cora_5");
  col->set_label("Cora 5");
  auto* col2 = t.add_columns();
  col2->set_key("pubmed_5");
  col2->set_label("PubMed 5");
  for (const char* c : {"cora_5", "pubmed_5"}) {
    auto* cell = t.add_cells();
    cell->set_row("fedavg");
    cell->set_column(c);
    *cell->mutable_paper() = Paper(80.6, 0.3);
  }
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  cells[{"fedavg", "cora_5"}] = {CellResult::State::kDone, {80.0, 82.0}, "", 5400.0};
  cells[{"fedavg", "pubmed_5"}] = {CellResult::State::kDataNotPresent, {}, "", 999.0};
  Provenance p;
  p.commits = "abc123";
  p.protocol = "louvain";
  const std::string md = MarkdownReport(t, cells, p, "t2.svg");
  EXPECT_THAT(md, HasSubstr("| FedAvg | 81.0 ± 1.4 (paper 80.6 ± 0.3, Δ +0.4) | data not present"));
  // Only finished cells count towards the compute line (1.5 h over 2 runs).
  EXPECT_THAT(md, HasSubstr("The 2 runs behind the filled cells took 1.50 h"));
  EXPECT_THAT(md, HasSubstr("FedAvg 1.50"));
  EXPECT_THAT(md, HasSubstr("abc123"));
  EXPECT_THAT(md, HasSubstr("t2.svg"));
  const std::string csv = CsvReport(t, cells);
  EXPECT_THAT(csv, HasSubstr("fedavg,cora_5,done,81.000,1.414,2,80.6,0.3"));
  EXPECT_THAT(csv, HasSubstr("fedavg,pubmed_5,data_not_present"));
  const std::string svg = AccuracySvg("a<b", {{"FedAvg", {{1, 50.0}, {2, 60.0}}}});
  EXPECT_THAT(svg, HasSubstr("<polyline"));
  EXPECT_THAT(svg, HasSubstr("a&lt;b"));
  EXPECT_THAT(svg, Not(HasSubstr("a<b")));
}

TEST(ReportTest, GainOverFedAvgBesideThePapers) {
  proto::Table t;
  t.set_title("T");
  for (const char* key : {"fedavg", "x"}) t.add_rows()->set_key(key);
  for (const char* key : {"a", "b"}) t.add_columns()->set_key(key);
  const std::map<std::pair<std::string, std::string>, double> printed = {
      {{"fedavg", "a"}, 70}, {{"fedavg", "b"}, 60}, {{"x", "a"}, 71}, {{"x", "b"}, 65}};
  for (const auto& [cell, mean] : printed) {
    auto* c = t.add_cells();
    c->set_row(cell.first);
    c->set_column(cell.second);
    *c->mutable_paper() = Paper(mean, 0);
  }
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  cells[{"fedavg", "a"}] = {CellResult::State::kDone, {80.0}, ""};
  cells[{"x", "a"}] = {CellResult::State::kDone, {81.5}, ""};   // +1.5 vs the paper's +1: within 2
  cells[{"fedavg", "b"}] = {CellResult::State::kDone, {60.0}, ""};
  cells[{"x", "b"}] = {CellResult::State::kDone, {59.0}, ""};   // -1 vs +5: not within 2
  const std::string md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("+1.5 / +1.0 ✓"));
  EXPECT_THAT(md, HasSubstr("-1.0 / +5.0 |"));
  EXPECT_THAT(md, HasSubstr("within 2 in 1/2; ahead of FedAvg in 1/2; mean +0.25 (paper +3.00)"));
}

}  // namespace
}  // namespace fgl::experiments
