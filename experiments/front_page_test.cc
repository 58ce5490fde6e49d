#include "experiments/front_page.h"

#include <cmath>
#include <string>
#include <vector>

#include "experiments/report_cells.h"
#include "experiments/svg_figures.h"
#include "experiments/svg_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fgl::experiments {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using svg_testing::Dimension;
using svg_testing::ExpectTextFitsAndIsApart;

CellResult Done(std::vector<double> values, std::vector<uint64_t> seeds, const std::string& run) {
  CellResult r;
  r.state = CellResult::State::kDone;
  r.values = std::move(values);
  r.seeds = std::move(seeds);
  for (uint64_t s : r.seeds) r.recorded_runs.push_back({run + std::to_string(s), 1.0});
  return r;
}

// Paper "p", table "t": rows FedAvg and X over columns A, B and C (C's data not present), the
// paper claiming X − FedAvg >= 1 everywhere; FedAvg and X also run A on partition seed 1.
PlannedTable TinyTable() {
  PlannedTable t;
  t.paper = "p";
  t.stem = "t";
  proto::Table& table = t.table;
  table.set_title("T");
  table.set_paper("Paper P, Table 1");
  table.mutable_base()->set_dataset("a_data");
  for (const auto& [key, label] : {std::pair{"fedavg", "FedAvg"}, std::pair{"x", "X"}}) {
    proto::Row* r = table.add_rows();
    r->set_key(key);
    r->set_label(label);
  }
  for (const auto& [key, label] : {std::pair{"a", "A"}, std::pair{"b", "B"}, std::pair{"c", "C"}}) {
    proto::Column* c = table.add_columns();
    c->set_key(key);
    c->set_label(label);
  }
  table.mutable_columns(2)->mutable_overrides()->set_dataset("c_data:lcc=true");
  const std::map<std::pair<std::string, std::string>, double> printed = {
      {{"fedavg", "a"}, 70}, {{"x", "a"}, 73}, {{"fedavg", "b"}, 60}, {{"x", "b"}, 65}, {{"fedavg", "c"}, 50}, {{"x", "c"}, 52}};
  for (const auto& [cell, mean] : printed) {
    proto::Cell* c = table.add_cells();
    c->set_row(cell.first);
    c->set_column(cell.second);
    c->mutable_paper()->set_mean(mean);
    c->mutable_paper()->set_std(0.5);
    c->mutable_paper()->set_present(true);
  }
  proto::Claim* claim = table.add_claims();
  claim->set_text("X beats everything");  // no single base: not the key gain
  claim->set_kind(proto::Claim::ROW_AT_LEAST_OTHERS);
  claim->set_row("x");
  claim = table.add_claims();
  claim->set_text("X gains at least 1 over FedAvg");
  claim->set_kind(proto::Claim::GAIN_AT_LEAST);
  claim->set_row("x");
  claim->set_base("fedavg");
  claim->set_min(1);
  table.mutable_partition_spread()->add_rows("fedavg");
  table.mutable_partition_spread()->add_rows("x");
  table.mutable_partition_spread()->add_partition_seeds(1);
  // A: paired differences 2, 3, 1 (mean 2, sd 1, n 3: 2 ± 4.303/√3 = [-0.48, +4.48]); the paper's +3.
  t.cells[{"fedavg", "a"}] = Done({70, 71, 72}, {1, 2, 3}, "fa");
  t.cells[{"x", "a"}] = Done({72, 74, 73}, {1, 2, 3}, "xa");
  // B: differences -1, +1 (mean 0); the paper's +5.
  t.cells[{"fedavg", "b"}] = Done({60, 60}, {1, 2}, "fb");
  t.cells[{"x", "b"}] = Done({59, 61}, {1, 2}, "xb");
  for (const char* row : {"fedavg", "x"}) t.cells[{row, "c"}].state = CellResult::State::kDataNotPresent;
  // On partition 1, A's gain is 75 − 71 = +4: the range over partitions is +2 to +4.
  t.spread[{"x", "a"}][1] = Done({75, 75, 75}, {1, 2, 3}, "xa1");
  t.spread[{"fedavg", "a"}][1] = Done({71, 71, 71}, {1, 2, 3}, "fa1");
  return t;
}

FrontPageInput TinyInput() {
  FrontPageInput in;
  in.papers = {{"p", "Paper P", "t", "its only table."}};
  in.tables = {TinyTable()};
  ReportFile generated;
  generated.paper = "p";
  generated.path = "p/t.md";
  generated.title = "T";
  generated.from_records = true;
  ReportFile authors;
  authors.paper = "p";
  authors.path = "p/authors_code.md";
  authors.title = "P against its authors' code";
  authors.generator = "`report.py`";
  ReportFile legacy;
  legacy.paper = "p";
  legacy.path = "p/old.md";
  legacy.title = "Old";
  in.reports = {authors, legacy, generated};
  return in;
}

TEST(FrontPageTest, KeyGainIsTheFirstClaimThatSetsOneRowAgainstAnother) {
  const std::optional<KeyGain> gain = KeyGainOf(TinyTable());
  ASSERT_TRUE(gain.has_value());
  EXPECT_EQ(gain->row, "x");
  EXPECT_EQ(gain->base, "fedavg");
  ASSERT_EQ(gain->columns.size(), 3u);
  const GainColumn& a = gain->columns[0];
  EXPECT_TRUE(a.filled);
  EXPECT_DOUBLE_EQ(a.ours, 2);
  EXPECT_DOUBLE_EQ(a.paper, 3);
  ASSERT_TRUE(a.interval.has_interval);
  EXPECT_EQ(a.interval.n, 3);
  EXPECT_NEAR(a.interval.low, 2 - 4.3027 / std::sqrt(3.0), 1e-3);
  EXPECT_EQ(a.partitions, 2);
  EXPECT_DOUBLE_EQ(a.partition_low, 2);
  EXPECT_DOUBLE_EQ(a.partition_high, 4);
  EXPECT_EQ(gain->columns[1].partitions, 0);  // B was not run on partition 1
  EXPECT_FALSE(gain->columns[2].filled);
  EXPECT_EQ(gain->columns[2].missing, "no data");
  EXPECT_DOUBLE_EQ(gain->columns[2].paper, 2);
}

TEST(FrontPageTest, PageShowsVerdictsGainCellsAndEveryReport) {
  const std::string md = FrontPageMarkdown(TinyInput());
  // The overview: the claims' verdicts and the key gain's means over A and B (+2, 0 / +3, +5).
  EXPECT_THAT(md, HasSubstr("| Paper P | [`p/t`](p/t.md) | 0 reproduced, 0 not reproduced, 2 inconclusive | "
                            "X − FedAvg: +1.00 / +4.00 (2 datasets) | 4 / 4 |"));
  // The verdict block: each claim with the claims engine's line, the gain per dataset, the cells.
  EXPECT_THAT(md, HasSubstr("- X gains at least 1 over FedAvg — **inconclusive**: 0 reproduced, 0 not reproduced, "
                            "2 inconclusive of 2 comparisons"));
  EXPECT_THAT(md, HasSubstr("| A | +2.0 [-0.5, +4.5] (n=3) | +3.0 | -1.0 ✓ | inconclusive | +2.0 to +4.0 (2 partitions) |"));
  EXPECT_THAT(md, HasSubstr("| C | no data | +2.0 | – | – | – |"));
  EXPECT_THAT(md, HasSubstr("ours ahead of FedAvg in 1, within 2 points of the paper's gain in 1"));
  EXPECT_THAT(md, HasSubstr("**Cells**: 4 of 4 cells whose data is present are filled; 3 of 4 filled cells agree "
                            "(|ours − paper| ≤ max(2 points, 2 SE of the difference))"));
  EXPECT_THAT(md, HasSubstr("not present here: `c_data` (C)."));
  EXPECT_THAT(md, HasSubstr("**Against the authors' code**: [P against its authors' code](p/authors_code.md)"));
  // One line per report: the generated one with its counts, the others as what they are.
  EXPECT_THAT(md, HasSubstr("- [`p/t`](p/t.md) T: 4 / 4 filled; 3 / 4 agree; claims: "));
  EXPECT_THAT(md, HasSubstr("- [`p/authors_code`](p/authors_code.md) P against its authors' code: not a table "
                            "report (generated by `report.py`).\n"));
  EXPECT_THAT(md, HasSubstr("- [`p/old`](p/old.md) Old: legacy report, not generated from the run records.\n"));
  EXPECT_THAT(md, HasSubstr("](front_page_cells.svg)"));
  EXPECT_THAT(md, HasSubstr("](front_page_gains.svg)"));
}

// One rule for every accuracy table, whatever band a table sets: X on B (ours 60 ± 1.4 over 2
// seeds against 65 ± 0.5 over 3 runs: band max(2, 2·√(1 + 0.083)) = 2.08) is out, the rest in.
TEST(FrontPageTest, OneAgreementRuleForEveryAccuracyTable) {
  FrontPageInput in = TinyInput();
  in.tables[0].table.set_agreement_min_points(10);  // not an accuracy band: ignored
  const std::string md = FrontPageMarkdown(in);
  EXPECT_THAT(md, HasSubstr("3 of 4 filled cells agree (|ours − paper| ≤ max(2 points, 2 SE of the difference))"));
  EXPECT_THAT(md, HasSubstr("dashed, ±2 points, the agreement rule's floor"));
  EXPECT_THAT(CellsFigureSvg(in), HasSubstr(">the agreement rule's floor</text>"));
}

TEST(FrontPageTest, FiguresDrawEachCellOnceWithALegend) {
  FrontPageInput in = TinyInput();
  PlannedTable copy = in.tables[0];  // a companion table over the same runs and paper values
  copy.stem = "t_companion";
  in.tables.push_back(copy);
  const std::string cells = CellsFigureSvg(in);
  EXPECT_THAT(cells, HasSubstr("4 cells, mean over seeds"));
  EXPECT_THAT(cells, HasSubstr(">Paper P</text>"));
  // Wider than the 800 px minimum: the legend's "the agreement rule's floor" is kept whole.
  EXPECT_THAT(cells, HasSubstr("width=\"821\""));
  const std::string gains = GainsFigureSvg(in);
  EXPECT_THAT(gains, HasSubstr(">Paper P (2)</text>"));
  EXPECT_THAT(gains, HasSubstr(">X − FedAvg</text>"));
  // No filled cell, no figure (and the page does not link one).
  for (auto& [key, r] : in.tables[0].cells) r.state = CellResult::State::kNotRun;
  for (auto& [key, r] : in.tables[1].cells) r.state = CellResult::State::kNotRun;
  EXPECT_EQ(CellsFigureSvg(in), "");
  EXPECT_EQ(GainsFigureSvg(in), "");
  EXPECT_THAT(FrontPageMarkdown(in), Not(HasSubstr(".svg")));
}

// The page's figures keep every text inside the canvas and apart by the measure every report's
// figure is held to (svg_figures_test): the canvas widens to its longest legend line, up to
// kMaxGridWidth, and a line longer than even that ends in "…".
TEST(FrontPageTest, FiguresKeepTheirTextInsideAndApart) {
  FrontPageInput in = TinyInput();
  ExpectTextFitsAndIsApart("cells", CellsFigureSvg(in));
  ExpectTextFitsAndIsApart("gains", GainsFigureSvg(in));
  // A longer paper name and key-gain rows widen both canvases.
  in.papers[0].name = "Paper P: Personalised Federated Graph Learning";
  in.tables[0].table.mutable_rows(1)->set_label("X (ours, with every module and the personalised head)");
  const std::string cells = CellsFigureSvg(in), gains = GainsFigureSvg(in);
  ExpectTextFitsAndIsApart("cells, long names", cells);
  ExpectTextFitsAndIsApart("gains, long names", gains);
  EXPECT_GT(Dimension(gains, "width"), Dimension(cells, "width"));
  EXPECT_LT(Dimension(gains, "width"), kMaxGridWidth);
  EXPECT_THAT(gains, HasSubstr(">X (ours, with every module and the personalised head) − FedAvg</text>"));
  // Too long for kMaxGridWidth: shortened, the canvas at its limit.
  in.papers[0].name = std::string(120, 'P');
  const std::string capped = CellsFigureSvg(in);
  ExpectTextFitsAndIsApart("cells, capped", capped);
  EXPECT_EQ(Dimension(capped, "width"), kMaxGridWidth);
  EXPECT_THAT(capped, HasSubstr("…</text>"));
}

}  // namespace
}  // namespace fgl::experiments
