#include "experiments/report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "experiments/csv_report.h"
#include "experiments/markdown_sections.h"
#include "experiments/protocol_card.h"
#include "experiments/report_cells.h"
#include "experiments/svg_figures.h"
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

// A cell: ours, then ours − the paper's, signed, and † when the caller finds it outside the rule.
TEST(ReportTest, CellsShowOursAndTheSignedDifference) {
  CellResult r;
  r.state = CellResult::State::kDone;
  r.values = {76.0, 77.0, 78.0};  // mean 77, sample std 1
  EXPECT_EQ(FormatCell(r, Paper(73.6, 0.4)), "77.0 ± 1.0 (+3.4)");
  EXPECT_EQ(FormatCell(r, Paper(73.6, 0.4), proto::Table::TEST_ACCURACY, 1, true), "77.0 ± 1.0 (+3.4)†");
  EXPECT_EQ(FormatCell(r, Paper(79.25, 0)), "77.0 ± 1.0 (-2.2)");  // below the paper: a minus
  proto::PublishedValue absent;
  EXPECT_EQ(FormatCell(r, absent), "77.0 ± 1.0");  // nothing printed: no difference
  r.values = {0.70, 0.72};
  EXPECT_EQ(FormatCell(r, Paper(0.7, 0), proto::Table::GLOBAL_TEST_ACCURACY, 3), "0.710 ± 0.014 (+0.010)");
  EXPECT_EQ(PaperValueText(Paper(73.6, 0.4)), "73.6 ± 0.4");
  EXPECT_EQ(PaperValueText(Paper(0.794, 0), proto::Table::GLOBAL_TEST_ACCURACY, 3), "0.794");
  EXPECT_EQ(PaperValueText(absent), "–");
  r.state = CellResult::State::kNotImplemented;
  EXPECT_EQ(FormatCell(r, Paper(85.1, 0.1)), "not implemented");
  r.state = CellResult::State::kDataNotPresent;
  EXPECT_EQ(FormatCell(r, Paper(85.6, 0.3)), "no data");
  r.state = CellResult::State::kStale;
  EXPECT_EQ(FormatCell(r, Paper(85.6, 0.3)), "stale");
  // A cell whose run failed is loud, never blank or a number.
  r.state = CellResult::State::kFailed;
  EXPECT_THAT(FormatCell(r, Paper(1, 0)), HasSubstr("RUN FAILED"));
}

// The one agreement rule: accuracies within max(2 points, 2 SE of the difference); a table of
// another value within its own band.
TEST(ReportTest, AgreementRuleIsTwoPointsOrTwoStandardErrors) {
  proto::Table t;
  EXPECT_TRUE(AgreementApplies(t));  // accuracies
  EXPECT_TRUE(WithinAgreement(t, Paper(80, 0), {82, 82}));  // the 2-point floor
  EXPECT_FALSE(WithinAgreement(t, Paper(80, 0), {82.1, 82.1}));
  EXPECT_FALSE(WithinAgreement(t, Paper(80, 0), {}));
  // Seeds 70 and 80 (SE² 25) against the paper's ± 3 over 3 runs (SE² 3): band 2·√28 = 10.58.
  EXPECT_TRUE(WithinAgreement(t, Paper(85, 3), {70, 80}));   // |75 − 85| = 10
  EXPECT_FALSE(WithinAgreement(t, Paper(86, 3), {70, 80}));  // 11
  t.set_paper_runs(1);  // its ± over one run: band 2·√34 = 11.66
  EXPECT_TRUE(WithinAgreement(t, Paper(86, 3), {70, 80}));
  t.set_agreement_min_points(5);  // an accuracy table's own band is ignored
  EXPECT_FALSE(WithinAgreement(t, Paper(80, 0), {84, 84}));
  proto::Table fraction;  // F1 printed as fractions: 2 points are 0.02
  fraction.set_fraction(true);
  EXPECT_TRUE(WithinAgreement(fraction, Paper(0.80, 0), {0.82, 0.82}));
  EXPECT_FALSE(WithinAgreement(fraction, Paper(0.80, 0), {0.821, 0.821}));
  proto::Table bytes;
  bytes.set_value(proto::Table::UPLOADED_MIB);
  EXPECT_FALSE(AgreementApplies(bytes));  // byte counts without a band are judged by their claims
  bytes.set_agreement_min_points(1);
  EXPECT_TRUE(AgreementApplies(bytes));
  EXPECT_TRUE(WithinAgreement(bytes, Paper(10, 0), {11}));
  EXPECT_FALSE(WithinAgreement(bytes, Paper(10, 0), {11.5}));
}

TEST(ReportTest, TensorGroupsSelectAndCostsPrintAsAmounts) {
  const std::map<std::string, int64_t> by_group = {{"reduction", 100}, {"mashed", 30}, {"body", 5}};
  EXPECT_EQ(SelectedTensorBytes(by_group, {}), 135);
  EXPECT_EQ(SelectedTensorBytes(by_group, {"mashed"}), 30);
  EXPECT_EQ(SelectedTensorBytes(by_group, {"-mashed"}), 105);
  EXPECT_EQ(SelectedTensorBytes(by_group, {"reduction", "body"}), 105);
  EXPECT_EQ(SelectedTensorBytes(by_group, {"absent"}), 0);
  CellResult r;
  r.state = CellResult::State::kDone;
  r.values = {2801.0, 2801.0};
  EXPECT_EQ(FormatCell(r, Paper(2801, 0), proto::Table::UPLOADED_TENSOR_MIB), "2801.0 (+0.0)");
  EXPECT_EQ(PaperValueText(Paper(2801, 0), proto::Table::UPLOADED_TENSOR_MIB), "2801");
  r.values = {10.0, 12.0};
  EXPECT_EQ(FormatCell(r, Paper(57.674, 0), proto::Table::TRAINING_MINUTES), "11.0 ± 1.4 (-46.7)");
  EXPECT_EQ(PaperValueText(Paper(57.674, 0), proto::Table::TRAINING_MINUTES), "57.674");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::map<std::string, std::vector<double>> reports = {{"weight_divergence", {0.2, nan, 0.4}}};
  EXPECT_DOUBLE_EQ(ClientReportValue(reports, "weight_divergence", 2), 0.4);
  EXPECT_DOUBLE_EQ(ClientReportValue(reports, "weight_divergence", -1), 0.3);  // the NaN left out
  EXPECT_TRUE(std::isnan(ClientReportValue(reports, "lambda", -1)));
  EXPECT_TRUE(std::isnan(ClientReportValue(reports, "weight_divergence", 5)));
  EXPECT_TRUE(IsAccuracy(proto::Table::GLOBAL_TEST_ACCURACY));
  EXPECT_FALSE(IsAccuracy(proto::Table::UPLOADED_TENSOR_MIB));
}

TEST(ReportTest, MeanGainClaimAndAverageColumns) {
  proto::Table t;
  t.set_title("T");
  for (const char* r : {"ours", "base"}) t.add_rows()->set_key(r);
  for (const char* c : {"d_5", "d_10", "d_20"}) t.add_columns()->set_key(c);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  auto done = [](double v) {
    CellResult r;
    r.state = CellResult::State::kDone;
    r.values = {v};
    return r;
  };
  // Gains +3, +1 and -1: a mean of +1, so ">= 1" holds and ">= 1.5" does not.
  cells[{"ours", "d_5"}] = done(80), cells[{"base", "d_5"}] = done(77);
  cells[{"ours", "d_10"}] = done(70), cells[{"base", "d_10"}] = done(69);
  cells[{"ours", "d_20"}] = done(60), cells[{"base", "d_20"}] = done(61);
  for (double min : {1.0, 1.5}) {
    auto* c = t.add_claims();
    c->set_text(absl::StrCat("gain ", min));
    c->set_kind(proto::Claim::MEAN_GAIN_AT_LEAST);
    c->set_row("ours");
    c->set_base("base");
    c->set_min(min);
  }
  auto* avg = t.add_averages();
  avg->set_label("d Avg.");
  for (const char* c : {"d_5", "d_10", "d_20"}) avg->add_of(c);
  (*avg->mutable_paper())["ours"] = 71.5;
  const std::string md = MarkdownReport(t, cells, Provenance(), "");
  // One seed a cell: no interval, so the verdict is inconclusive; the means are still checked.
  EXPECT_THAT(md, HasSubstr("gain 1 — **inconclusive**: 0 reproduced, 0 not reproduced, 1 inconclusive of 1 "
                            "comparison; least favourable ours vs base, mean over 3 columns (gain +1.00): +1.0 over "
                            "1 seed, no interval (claimed +1.0); on our means: holds, 1 of 1"));
  EXPECT_THAT(md, HasSubstr("gain 1.5 — **inconclusive**: 0 reproduced, 0 not reproduced, 1 inconclusive of 1 "
                            "comparison; least favourable ours vs base, mean over 3 columns (gain +1.00): +1.0 over "
                            "1 seed, no interval (claimed +1.5); on our means: does not hold, 0 of 1"));
  EXPECT_THAT(md, HasSubstr("(gain +1.00)"));
  EXPECT_THAT(md, HasSubstr("| ours | **70.0** / 71.50 |"));
  EXPECT_THAT(md, HasSubstr("| base | **69.0** / – |"));
  cells.erase({"base", "d_20"});  // an incomplete average is not shown
  EXPECT_THAT(MarkdownReport(t, cells, Provenance(), ""), HasSubstr("| base | – / – |"));
}

// "Peaks around round 15, then declines", on the seeds' mean curve.
TEST(ReportTest, PeakRoundClaimReadsTheMeanCurve) {
  proto::Table t;
  t.set_title("curves");
  t.add_rows()->set_key("fedavg");
  t.add_columns()->set_key("g");
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  CellResult r;
  r.state = CellResult::State::kDone;
  r.values = {80, 80};
  r.curve_runs = 2;
  r.curve_sum = {100, 150, 160, 158, 156};  // mean 50, 75, 80, 79, 78: peaks at round 3
  cells[{"fedavg", "g"}] = r;
  for (double min : {3.0, 2.0}) {
    auto* c = t.add_claims();
    c->set_text(absl::StrCat("peak by ", min));
    c->set_kind(proto::Claim::PEAK_ROUND_AT_MOST);
    c->set_row("fedavg");
    c->set_column("g");
    c->set_min(min);
  }
  std::string md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("peak by 3 — **holds**: 2 of 2"));
  EXPECT_THAT(md, HasSubstr("peak by 2 — **does not hold**: 1 of 2"));
  cells[{"fedavg", "g"}].curve_sum = {100, 150, 160, 160, 170};  // still rising at the end
  md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("peak by 3 — **does not hold**: 0 of 2"));
}

TEST(ReportTest, GridHeatmapLabelsEveryCellAndShadesByMean) {
  proto::Table t;
  t.set_title("alpha x beta");
  for (const char* r : {"a1", "a2"}) t.add_rows()->set_key(r);
  for (const char* c : {"b1", "b2"}) t.add_columns()->set_key(c);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  EXPECT_EQ(GridHeatmapSvg(t, cells), "");  // nothing filled, nothing drawn
  auto done = [](std::vector<double> v) {
    CellResult r;
    r.state = CellResult::State::kDone;
    r.values = std::move(v);
    return r;
  };
  cells[{"a1", "b1"}] = done({60, 62});
  cells[{"a1", "b2"}] = done({80, 80});
  cells[{"a2", "b1"}] = done({70, 70});
  const std::string svg = GridHeatmapSvg(t, cells);
  EXPECT_THAT(svg, HasSubstr(">61.0 ± 1.4<"));
  EXPECT_THAT(svg, HasSubstr(">80.0 ± 0.0<"));
  EXPECT_THAT(svg, HasSubstr(">–<"));                 // a2/b2 has no result
  // The squares (the scale's swatches have a thinner stroke): white for the lowest mean, the darkest
  // blue for the highest, the scale spanning the means' 19 points (wider than 4 seed stds or 4 points).
  EXPECT_THAT(svg, HasSubstr("fill=\"rgb(255,255,255)\" stroke=\"#999\"/>"));
  EXPECT_THAT(svg, HasSubstr("fill=\"rgb(30,100,255)\" stroke=\"#999\"/>"));
  EXPECT_THAT(svg, HasSubstr("colour scale 61.0 (white) to 80.0 (dark blue)"));
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
  const std::string md = MarkdownReport(t, cells, p, "t2.svg");
  // 81.0 − 80.6 = +0.4: within the rule's 2-point floor, so no †.
  EXPECT_THAT(md, HasSubstr("| FedAvg | 81.0 ± 1.4 (+0.4) | no data |"));
  EXPECT_THAT(md, HasSubstr("† (0 of 1 such cells): outside the agreement rule"));
  // The paper's values, folded beneath our grid.
  EXPECT_THAT(md, HasSubstr("<details><summary>The paper's values (mean ± std as printed)</summary>\n\n"
                            "| method | Cora 5 | PubMed 5 |\n|---|---|---|\n| FedAvg | 80.6 ± 0.3 | 80.6 ± 0.3 |\n"));
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
  // The fidelity figure: one point per filled cell with a paper value; none without any.
  const std::string fidelity = FidelitySvg(t, cells);
  EXPECT_EQ(std::count(fidelity.begin(), fidelity.end(), 'c') > 0, true);
  EXPECT_THAT(fidelity, HasSubstr("<circle"));
  EXPECT_EQ(fidelity.find("<circle"), fidelity.rfind("<circle"));  // exactly one
  EXPECT_EQ(FidelitySvg(t, {}), "");
}

// The paper's claims as data, each checked on our means with the counts.
TEST(ReportTest, ClaimsAreCheckedOnOurNumbers) {
  proto::Table t;
  t.set_title("T");
  for (const char* key : {"fedavg", "fedtad", "fedavg_fedtad", "nv"}) t.add_rows()->set_key(key);
  for (const char* key : {"a", "b"}) t.add_columns()->set_key(key);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  auto done = [](double v) { return CellResult{CellResult::State::kDone, {v}, "", 0}; };
  cells[{"fedavg", "a"}] = done(80);
  cells[{"fedavg", "b"}] = done(70);
  cells[{"fedtad", "a"}] = done(82);
  cells[{"fedtad", "b"}] = done(69);
  cells[{"fedavg_fedtad", "a"}] = done(81);
  cells[{"fedavg_fedtad", "b"}] = done(71);
  cells[{"nv", "a"}] = done(60);
  for (const auto& [row_col, r] : cells) {
    auto* cell = t.add_cells();
    cell->set_row(row_col.first);
    cell->set_column(row_col.second);
  }
  auto* best = t.add_claims();
  best->set_text("FedTAD beats every baseline");
  best->set_kind(proto::Claim::ROW_AT_LEAST_OTHERS);
  best->set_row("fedtad");
  auto* nv = t.add_claims();
  nv->set_text("nv is below FedTAD");
  nv->set_kind(proto::Claim::ROW_AT_LEAST_OTHERS);
  nv->set_row("fedtad");
  nv->add_others("nv");
  auto* gain = t.add_claims();
  gain->set_text("+1.7 over FedAvg on a");
  gain->set_kind(proto::Claim::GAIN_AT_LEAST);
  gain->set_row("fedtad");
  gain->set_base("fedavg");
  gain->set_column("a");
  gain->set_min(1.7);
  auto* plugin = t.add_claims();
  plugin->set_text("the plug-in improves its base");
  plugin->set_kind(proto::Claim::PLUGIN_IMPROVES_BASE);
  plugin->set_suffix("_fedtad");
  auto* none = t.add_claims();
  none->set_text("about a row we have not run");
  none->set_row("fedgkc");
  const std::string md = MarkdownReport(t, cells, Provenance(), "");
  // fedtad vs fedavg (a, b), fedavg_fedtad (a, b), nv (a): 82>=80, 69<70, 82>=81, 69<71, 82>=60.
  EXPECT_THAT(md, HasSubstr("FedTAD beats every baseline — **inconclusive**: 0 reproduced, 0 not reproduced, "
                            "5 inconclusive of 5 comparisons"));
  EXPECT_THAT(md, HasSubstr("(claimed +0.0); on our means: does not hold, 3 of 5\n"));
  EXPECT_THAT(md, HasSubstr("nv is below FedTAD — **inconclusive**: 0 reproduced, 0 not reproduced, 1 inconclusive "
                            "of 1 comparison; least favourable fedtad vs nv on a: +22.0 over 1 seed, no interval "
                            "(claimed +0.0); on our means: holds, 1 of 1\n"));
  EXPECT_THAT(md, HasSubstr("+1.7 over FedAvg on a — **inconclusive**: 0 reproduced"));
  EXPECT_THAT(md, HasSubstr("(claimed +1.7); on our means: holds, 1 of 1\n"));
  EXPECT_THAT(md, HasSubstr("the plug-in improves its base — **inconclusive**: 0 reproduced, 0 not reproduced, "
                            "2 inconclusive of 2 comparisons"));
  EXPECT_THAT(md, HasSubstr("about a row we have not run — not checkable here"));
}

// The head of a report says what the table comes to before its numbers: the verdict, the claims,
// the key gain, then our grid with each cell's signed difference; the run keys come last, folded.
TEST(ReportTest, VerdictAndKeyGainComeFirstAndRunKeysFoldAway) {
  proto::Table t;
  t.set_title("T");
  t.set_paper("P, Table 1");
  t.set_metric("accuracy (%)");
  for (const auto& [key, label] : {std::pair{"fedavg", "FedAvg"}, std::pair{"x", "X"}}) {
    proto::Row* r = t.add_rows();
    r->set_key(key);
    r->set_label(label);
  }
  for (const char* key : {"a", "b"}) t.add_columns()->set_key(key);
  auto cell = [&](const char* row, const char* col, double mean, double std) {
    proto::Cell* c = t.add_cells();
    c->set_row(row);
    c->set_column(col);
    *c->mutable_paper() = Paper(mean, std);
  };
  cell("fedavg", "a", 70, 1);  // ours 70.5: within the paper's ± 1
  cell("fedavg", "b", 60, 1);  // ours 62.5: 2.5 above, outside
  cell("x", "a", 75, 0.5);     // ours 72.0: 3.0 below, outside
  cell("x", "b", 65, 4);       // ours 62.0: 3.0 below, within ± 4
  proto::Claim* claim = t.add_claims();
  claim->set_text("X gains 5 over FedAvg");
  claim->set_kind(proto::Claim::GAIN_AT_LEAST);
  claim->set_row("x");
  claim->set_base("fedavg");
  claim->set_min(5);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  auto done = [](std::vector<double> v) { return CellResult{CellResult::State::kDone, std::move(v), "", 0}; };
  cells[{"fedavg", "a"}] = done({70, 71});
  cells[{"fedavg", "b"}] = done({62, 63});
  cells[{"x", "a"}] = done({72, 72});
  cells[{"x", "b"}] = done({62, 62});
  Provenance p;
  p.spec_hashes = {{"fedavg/a/seed 1", "k1"}, {"fedavg/a/seed 2", "k2"}, {"x/a/seed 1", "k3"}};
  const std::string md = MarkdownReport(t, cells, p, "");
  EXPECT_THAT(md, HasSubstr("# T\n\nP, Table 1 — accuracy (%).\n\n**Verdict**: its 1 claim: 0 reproduced, "));
  EXPECT_THAT(md, HasSubstr("**Cells**: 4 of 4 cells whose data is present are filled; 2 of 4 filled cells agree "
                            "(|ours − paper| ≤ max(2 points, 2 SE of the difference))"));
  EXPECT_THAT(md, HasSubstr("| method | a | b |\n|---|---|---|\n"
                            "| FedAvg | 70.5 ± 0.7 (+0.5) | 62.5 ± 0.7 (+2.5)† |\n"
                            "| X | 72.0 ± 0.0 (-3.0)† | 62.0 ± 0.0 (-3.0) |\n"));
  EXPECT_THAT(md, HasSubstr("† (2 of 4 such cells): outside the agreement rule (|ours − paper| ≤ max(2 points, 2 SE "
                            "of the difference); the SE from our seeds and the paper's ± over 3 runs)."));
  const std::vector<std::string> order = {"**Verdict**", "**Claims**", "**Key gain: X − FedAvg**",
                                          "**Our numbers against the paper's**", "The paper's values",
                                          "**Gain over FedAvg**", "**Provenance.**", "<summary>Run keys (3)</summary>"};
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    ASSERT_NE(md.find(order[i]), std::string::npos) << order[i];
    EXPECT_LT(md.find(order[i]), md.find(order[i + 1])) << order[i] << " before " << order[i + 1];
  }
  // Every run key sits inside the details block.
  const size_t open = md.find("<details><summary>Run keys (3)</summary>");
  const size_t close = md.find("</details>", open);
  for (const char* key : {"- fedavg/a/seed 1: `k1`", "- fedavg/a/seed 2: `k2`", "- x/a/seed 1: `k3`"}) {
    const size_t at = md.find(key);
    EXPECT_GT(at, open) << key;
    EXPECT_LT(at, close) << key;
  }
}

// A wide grid splits by columns into grids whose lines fit, each repeating the row labels.
TEST(ReportTest, WideGridsSplitIntoGridsThatFit) {
  std::vector<std::string> header = {"method"};
  std::vector<std::vector<std::string>> rows = {{"FedTAD (10% Noise)"}, {"FedAvg"}};
  for (int c = 0; c < 18; ++c) {
    header.push_back("Col " + std::to_string(c));
    for (auto& row : rows) row.push_back("82.9 ± 0.8 (+2.3)†");
  }
  const std::string md = MarkdownGrid(header, rows);
  // 18 columns of 18 characters: 6 a grid (148 characters a line); 9 would take 211.
  size_t grids = 0, pos = 0;
  while ((pos = md.find("| method |", pos)) != std::string::npos) ++grids, ++pos;
  EXPECT_EQ(grids, 3u);
  for (int c = 0; c < 18; ++c) {
    const std::string inner = " Col " + std::to_string(c) + " |";
    EXPECT_NE(md.find(inner), std::string::npos) << c;
  }
  EXPECT_THAT(md, HasSubstr("| method | Col 0 | Col 1 | Col 2 | Col 3 | Col 4 | Col 5 |\n|---|---|---|---|---|---|---|\n"));
  EXPECT_THAT(md, HasSubstr("\n\n| method | Col 6 |"));
  EXPECT_THAT(md, HasSubstr("\n\n| method | Col 12 |"));
  size_t start = 0;
  while (start < md.size()) {
    const size_t end = md.find('\n', start);
    const std::string line = md.substr(start, end - start);
    const size_t width = std::count_if(line.begin(), line.end(), [](char ch) { return (ch & 0xC0) != 0x80; });
    EXPECT_LE(width, 200u) << line;
    start = end + 1;
  }
  // A narrow one stays whole.
  EXPECT_EQ(MarkdownGrid({"method", "a"}, {{"x", "1"}}), "| method | a |\n|---|---|\n| x | 1 |\n");
}

// "Optimal with α in [0.6, 0.7] and β in [0.1, 0.2]": the region's best cell against every cell
// outside it, paired by seed.
TEST(ReportTest, BestInRegionClaimComparesTheRegionsBestWithEveryOtherCell) {
  proto::Table t;
  for (const char* key : {"a1", "a2", "a3"}) t.add_rows()->set_key(key);
  for (const char* key : {"b1", "b2"}) t.add_columns()->set_key(key);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  auto done = [](std::vector<double> v) {
    CellResult r{CellResult::State::kDone, std::move(v), "", 0};
    r.seeds = {1, 2, 3};
    return r;
  };
  // The region is a2 × {b1, b2}; its best is a2/b2 (mean 81).
  cells[{"a1", "b1"}] = done({70, 71, 72});
  cells[{"a1", "b2"}] = done({75, 76, 77});
  cells[{"a2", "b1"}] = done({78, 79, 80});
  cells[{"a2", "b2"}] = done({80, 81, 82});
  cells[{"a3", "b1"}] = done({79, 80, 82});  // differences +1, +1, 0: inconclusive
  cells[{"a3", "b2"}].state = CellResult::State::kNotRun;
  proto::Claim* claim = t.add_claims();
  claim->set_text("optimal at a2");
  claim->set_kind(proto::Claim::BEST_IN_REGION);
  claim->add_region_rows("a2");
  claim->add_region_columns("b1");
  claim->add_region_columns("b2");
  std::string md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("optimal at a2 — **inconclusive so far**: 2 reproduced, 0 not reproduced, 1 inconclusive of 3 "
                            "comparisons; least favourable a2/b2 (the region's best) vs a3/b1: +0.7 [-0.8, +2.1] over "
                            "3 seeds (claimed +0.0); on our means: holds, 3 of 3; 1 cell it compares still awaits runs"));
  // A cell outside the region that is clearly better refutes the claim.
  cells[{"a3", "b2"}] = done({90, 91, 92});
  md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("optimal at a2 — **not reproduced**: 2 reproduced, 1 not reproduced, 1 inconclusive of 4 "
                            "comparisons; least favourable a2/b2 (the region's best) vs a3/b2: -10.0 [-10.0, -10.0]"));
  // A region cell awaiting runs may become the best: the verdict is only "so far".
  cells[{"a3", "b2"}].state = CellResult::State::kNotRun;
  cells[{"a2", "b1"}].state = CellResult::State::kStale;
  md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("optimal at a2 — **inconclusive so far**: "));
  EXPECT_THAT(md, HasSubstr("2 cells it compares still await runs"));
}

// A cell with some of its seeds recorded says how many, not "not run"; the legend explains it only
// when such a cell is in the table.
TEST(ReportTest, CellWithSomeSeedsRecordedSaysHowMany) {
  proto::Table t;
  t.add_rows()->set_key("ours");
  t.add_columns()->set_key("a");
  t.add_columns()->set_key("b");
  for (const char* column : {"a", "b"}) {
    proto::Cell* cell = t.add_cells();
    cell->set_row("ours");
    cell->set_column(column);
  }
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  cells[{"ours", "a"}].state = CellResult::State::kNotRun;
  cells[{"ours", "b"}].state = CellResult::State::kNotRun;
  std::string md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("| ours | not run | not run |"));
  EXPECT_THAT(md, Not(HasSubstr("k of n seeds")));
  cells[{"ours", "b"}].seeds_wanted = 4;
  cells[{"ours", "b"}].seeds_recorded = 1;
  md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("| ours | not run | 1 of 4 seeds |"));
  EXPECT_THAT(md, HasSubstr("\"k of n seeds\": k of its n seeds recorded"));
}

// A verdict on some of a claim's cells while others still await runs says "so far" and how many
// cells are missing; data that is not present does not count as missing.
TEST(ReportTest, ClaimOnPartlyFilledCellsHoldsOnlySoFar) {
  proto::Table t;
  for (const char* key : {"ours", "base"}) t.add_rows()->set_key(key);
  for (const char* key : {"a", "b", "c"}) t.add_columns()->set_key(key);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  auto with = [](CellResult::State s, std::vector<double> v) { return CellResult{s, std::move(v), "", 0}; };
  // Two seeds a cell (paired by position: these cells carry no seeds).
  cells[{"ours", "a"}] = with(CellResult::State::kDone, {80, 81});
  cells[{"base", "a"}] = with(CellResult::State::kDone, {70, 70.5});
  cells[{"ours", "b"}] = with(CellResult::State::kNotRun, {});
  cells[{"base", "b"}] = with(CellResult::State::kStale, {});
  cells[{"ours", "c"}] = with(CellResult::State::kDataNotPresent, {});
  cells[{"base", "c"}] = with(CellResult::State::kDataNotPresent, {});
  auto* best = t.add_claims();
  best->set_text("ours is best");
  best->set_kind(proto::Claim::ROW_AT_LEAST_OTHERS);
  best->set_row("ours");
  auto* gain = t.add_claims();
  gain->set_text("mean gain 20");
  gain->set_kind(proto::Claim::MEAN_GAIN_AT_LEAST);
  gain->set_row("ours");
  gain->set_base("base");
  gain->set_min(20);
  auto* worse = t.add_claims();
  worse->set_text("base is best");
  worse->set_kind(proto::Claim::ROW_AT_LEAST_OTHERS);
  worse->set_row("base");
  std::string md = MarkdownReport(t, cells, Provenance(), "");
  // ours − base on a: +10 and +10.5, interval [+7.1, +13.4].
  EXPECT_THAT(md, HasSubstr("ours is best — **reproduced so far**: 1 reproduced, 0 not reproduced, 0 inconclusive of "
                            "1 comparison; least favourable ours vs base on a: "));
  EXPECT_THAT(md, HasSubstr("over 2 seeds (claimed +0.0); on our means: holds, 1 of 1; 2 cells it compares still "
                            "await runs"));
  // A mean over columns may still change with the missing ones.
  EXPECT_THAT(md, HasSubstr("mean gain 20 — **not reproduced so far**: 0 reproduced, 1 not reproduced"));
  // One comparison that is not reproduced refutes an "in every column" claim whatever the missing
  // cells hold.
  EXPECT_THAT(md, HasSubstr("base is best — **not reproduced**: 0 reproduced, 1 not reproduced, 0 inconclusive of 1 "
                            "comparison"));
  EXPECT_THAT(md, HasSubstr("2 cells it compares still await runs\n- mean gain"));
  // ours − base on b: +1 and +1.3, interval [−0.8, +3.1]: holds on the means, inconclusive.
  cells[{"ours", "b"}] = with(CellResult::State::kDone, {75, 75.5});
  cells[{"base", "b"}] = with(CellResult::State::kDone, {74, 74.2});
  md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("ours is best — **inconclusive**: 1 reproduced, 0 not reproduced, 1 inconclusive of 2 "
                            "comparisons; least favourable ours vs base on b: +1.1 [-0.8, +3.1] over 2 seeds (claimed "
                            "+0.0); on our means: holds, 2 of 2\n"));
  // Each claim is also checked on the paper's printed means, which may contradict it.
  for (const auto& [row, col, mean] : std::vector<std::tuple<std::string, std::string, double>>{
           {"ours", "a", 81}, {"base", "a", 79}, {"ours", "b", 70}, {"base", "b", 72.5}}) {
    auto* cell = t.add_cells();
    cell->set_row(row);
    cell->set_column(col);
    cell->mutable_paper()->set_mean(mean);
    cell->mutable_paper()->set_present(true);
  }
  // The paper's "+2.004" from cells it prints rounded (81 − 79 = 2) holds to its printed precision.
  auto* rounded = t.add_claims();
  rounded->set_text("gain of 2.004 on a");
  rounded->set_kind(proto::Claim::GAIN_AT_LEAST);
  rounded->set_row("ours");
  rounded->set_base("base");
  rounded->set_column("a");
  rounded->set_min(2.004);
  md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("gain of 2.004 on a — **reproduced**: 1 reproduced, 0 not reproduced, 0 inconclusive of "
                            "1 comparison;"));
  EXPECT_THAT(md, HasSubstr("(claimed +2.0); on our means: holds, 1 of 1 (on the paper's own numbers: holds, 1 of 1)"));
  EXPECT_THAT(md, HasSubstr("on our means: holds, 2 of 2 (on the paper's own numbers: does not hold, "
                            "1 of 2; worst ours vs base on b: 70.00 vs 72.50)\n"));
  EXPECT_THAT(md, HasSubstr("base is best — **not reproduced**: 0 reproduced, 1 not reproduced, 1 inconclusive of 2 "
                            "comparisons; least favourable base vs ours on a: "));
  EXPECT_THAT(md, HasSubstr("on our means: does not hold, 0 of 2 (on the paper's own numbers: does not hold, 1 of 2"));
}

// Claims pair the seeds both cells recorded, whatever order or extra seeds the cells hold.
TEST(ReportTest, GainClaimsPairCellsBySeed) {
  proto::Table t;
  for (const char* key : {"ours", "base"}) t.add_rows()->set_key(key);
  t.add_columns()->set_key("a");
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  CellResult ours{CellResult::State::kDone, {71, 75, 73, 90}, "", 0};
  ours.seeds = {1, 3, 2, 9};  // seed 9 has no partner
  CellResult base{CellResult::State::kDone, {70, 71, 73}, "", 0};
  base.seeds = {1, 2, 3};
  cells[{"ours", "a"}] = ours;
  cells[{"base", "a"}] = base;
  auto* gain = t.add_claims();
  gain->set_text("gain of 1");
  gain->set_kind(proto::Claim::GAIN_AT_LEAST);
  gain->set_row("ours");
  gain->set_base("base");
  gain->set_min(1);
  // Paired: +1 (seed 1), +2 (seed 2), +2 (seed 3): mean +1.67, sd 0.577, half-width 4.3027 x 0.333.
  const std::string md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("gain of 1 — **reproduced**: 1 reproduced, 0 not reproduced, 0 inconclusive of 1 "
                            "comparison; least favourable ours vs base on a: +1.7 [+0.2, +3.1] over 3 seeds (claimed "
                            "+1.0)"));
}

// A claim about a setting: one column against the others, in every row (or one).
TEST(ReportTest, ColumnClaimComparesWithinRows) {
  proto::Table t;
  for (const char* key : {"x", "y"}) t.add_rows()->set_key(key);
  for (const char* key : {"h16", "h64", "h128"}) t.add_columns()->set_key(key);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  auto done = [](double v) { return CellResult{CellResult::State::kDone, {v}, "", 0}; };
  cells[{"x", "h16"}] = done(60);
  cells[{"x", "h64"}] = done(65);
  cells[{"x", "h128"}] = done(64);
  cells[{"y", "h16"}] = done(70);
  cells[{"y", "h64"}] = done(68);
  for (const auto& [row_col, r] : cells) {
    auto* cell = t.add_cells();
    cell->set_row(row_col.first);
    cell->set_column(row_col.second);
  }
  auto* all = t.add_claims();
  all->set_text("h64 is optimal");
  all->set_kind(proto::Claim::COLUMN_AT_LEAST_OTHERS);
  all->set_column("h64");
  auto* one = t.add_claims();
  one->set_text("h64 beats h128 for x");
  one->set_kind(proto::Claim::COLUMN_AT_LEAST_OTHERS);
  one->set_column("h64");
  one->set_row("x");
  one->add_others("h128");
  const std::string md = MarkdownReport(t, cells, Provenance(), "");
  // x: 65>=60, 65>=64; y: 68<70 (y has no h128).
  EXPECT_THAT(md, HasSubstr("h64 is optimal — **inconclusive**: 0 reproduced, 0 not reproduced, 3 inconclusive of 3 "
                            "comparisons; least favourable y: h64 vs h16: -2.0 over 1 seed, no interval (claimed "
                            "+0.0); on our means: does not hold, 2 of 3"));
  EXPECT_THAT(md, HasSubstr("h64 beats h128 for x — **inconclusive**: 0 reproduced, 0 not reproduced, 1 inconclusive "
                            "of 1 comparison"));
  auto* bound = t.add_claims();
  bound->set_text("x stays at most 64");
  bound->set_kind(proto::Claim::CELLS_AT_MOST);
  bound->set_row("x");
  bound->set_min(64);
  EXPECT_THAT(MarkdownReport(t, cells, Provenance(), ""),
              HasSubstr("x stays at most 64 — **does not hold**: 2 of 3 comparisons; worst x on h64 (bound vs value): "
                        "64.0 vs 65.0"));
}

// The agreement count per row, by the one rule (one seed each: the paper's ± alone sets the SE).
TEST(ReportTest, AgreementCountsCellsWithinTheRule) {
  proto::Table t;
  for (const char* key : {"x", "y"}) t.add_rows()->set_key(key);
  t.add_columns()->set_key("a");
  t.add_columns()->set_key("b");
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  auto done = [](double v) { return CellResult{CellResult::State::kDone, {v}, "", 0}; };
  auto cell = [&](const char* row, const char* col, double paper_mean, double paper_std) {
    auto* c = t.add_cells();
    c->set_row(row);
    c->set_column(col);
    c->mutable_paper()->set_present(true);
    c->mutable_paper()->set_mean(paper_mean);
    c->mutable_paper()->set_std(paper_std);
  };
  cell("x", "a", 70, 1);   // ours 74: outside max(2, 2·1/√3)
  cell("x", "b", 70, 8);   // ours 62: inside 2·8/√3 = 9.24
  cell("y", "a", 70, 1);   // ours 80: outside
  cell("y", "b", 70, 1);   // not run: not counted
  cells[{"x", "a"}] = done(74);
  cells[{"x", "b"}] = done(62);
  cells[{"y", "a"}] = done(80);
  EXPECT_THAT(MarkdownReport(t, cells, Provenance(), ""),
              HasSubstr("**Agreement with the paper** (|ours − paper| ≤ max(2 points, 2 SE of the difference)): 1 of 3 "
                        "filled cells. Per row: x 1/2, y 0/1."));
  t.set_value(proto::Table::UPLOADED_MIB);  // bytes without a band of their own: no agreement section
  EXPECT_THAT(MarkdownReport(t, cells, Provenance(), ""), Not(HasSubstr("Agreement with the paper")));
}

TEST(ReportTest, CommunicationCellsMatchThePaperToItsPrintedPrecision) {
  proto::Table t;
  t.set_title("T");
  t.set_value(proto::Table::UPLOADED_MIB);
  t.add_rows()->set_key("nfedgnn");
  for (const char* key : {"cora", "citeseer", "big"}) t.add_columns()->set_key(key);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  auto done = [](double v) {
    CellResult c;
    c.state = CellResult::State::kDone;
    c.values = {v};
    c.traffic_mib = {2 * v};
    return c;
  };
  const std::pair<const char*, std::pair<double, double>> data[] = {
      {"cora", {33.0566, 34.06}}, {"citeseer", {40.6128, 40.61}}, {"big", {47440.4, 4.74e4}}};
  for (const auto& [col, ours_paper] : data) {
    cells[{"nfedgnn", col}] = done(ours_paper.first);
    auto* cell = t.add_cells();
    cell->set_row("nfedgnn");
    cell->set_column(col);
    cell->mutable_paper()->set_mean(ours_paper.second);
    cell->mutable_paper()->set_present(true);
  }
  auto* claim = t.add_claims();
  claim->set_text("Table 1 reproduced");
  claim->set_kind(proto::Claim::MATCHES_PAPER);
  const std::string md = MarkdownReport(t, cells, Provenance(), "");
  // 40.6128 rounds to 40.61 and 47440 to 4.74e4; 33.06 is not 34.06.
  EXPECT_THAT(md, HasSubstr("Table 1 reproduced — **does not hold**: 2 of 3 comparisons; worst nfedgnn on cora: "
                            "ours 33.0566 vs the paper's 34.06"));
  // Byte counts: the difference as the paper prints amounts, no agreement marker (claims judge them).
  EXPECT_THAT(md, HasSubstr("| 33.06 (-1.00), up+down 66.11 |"));
  EXPECT_THAT(md, HasSubstr("| 4.744e+04 (+40.40), up+down 9.488e+04 |"));
  EXPECT_THAT(md, Not(HasSubstr("†")));
}

TEST(ReportTest, ProtocolCardPerRowWithColumnExceptions) {
  proto::Experiment e;
  e.set_model("gcn");
  e.set_split("stratified:train=0.2,val=0.4");
  e.set_partitioner("louvain");
  e.set_rounds(100);
  e.set_local_epochs(3);
  e.mutable_eval()->set_model(fl::proto::EvalProtocol::LOCAL);
  e.mutable_eval()->set_dropout_at_eval(true);
  e.mutable_fedtad()->set_reliability_noise(0.1);
  const std::string card = ProtocolCard(e);
  EXPECT_THAT(card, HasSubstr("local model"));
  EXPECT_THAT(card, HasSubstr("dropout at evaluation on"));
  EXPECT_THAT(card, HasSubstr("100 rounds × 3 local epochs; lr"));
  e.mutable_eval()->mutable_early_stop()->set_after_round(100);
  e.mutable_eval()->mutable_early_stop()->set_loss_ratio(1.3);
  EXPECT_THAT(ProtocolCard(e), HasSubstr("100 rounds × 3 local epochs, stopping at the first round past 100 whose "
                                         "clients' mean local-test loss exceeds 1.3 × its minimum so far; lr"));
  e.mutable_eval()->clear_early_stop();
  EXPECT_EQ(MethodParamsText(e), "fedtad { reliability_noise: 0.1 }");
  proto::Table t;
  for (const char* key : {"r", "s"}) t.add_rows()->set_key(key);
  for (const char* key : {"a", "b", "c"}) t.add_columns()->set_key(key);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  for (const char* row : {"r", "s"}) {
    for (const char* col : {"a", "b"}) cells[{row, col}].protocol = "card one";
  }
  cells[{"r", "c"}].protocol = "card two";
  cells[{"s", "c"}].protocol = "card one";
  cells[{"s", "a"}].params = "moon { mu: 2 }";
  // A figure setting parameters per cell: each set is listed with its columns.
  cells[{"r", "a"}].params = "fedmpa { reconstruction_weight: 0.1 }";
  cells[{"r", "b"}].params = "fedmpa { reconstruction_weight: 5 }";
  cells[{"r", "c"}].params = "fedmpa { reconstruction_weight: 0.1 }";
  const std::string md = MarkdownReport(t, cells, Provenance(), "");
  EXPECT_THAT(md, HasSubstr("**Protocol** (every cell unless listed below; dataset and clients are the column's): card one."));
  EXPECT_THAT(md, HasSubstr("- r:\n  - a, c: `fedmpa { reconstruction_weight: 0.1 }`\n"
                            "  - b: `fedmpa { reconstruction_weight: 5 }`\n  - c: card two\n"));
  EXPECT_THAT(md, HasSubstr("- s: `moon { mu: 2 }`\n"));
}

// Early-stopped cells say how many rounds their seeds ran; other reports say nothing of it.
TEST(ReportTest, RoundsRunOfEarlyStoppedCells) {
  proto::Table t;
  t.add_rows()->set_key("r");
  for (const char* key : {"a", "b"}) t.add_columns()->set_key(key);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  for (const char* col : {"a", "b"}) {
    CellResult& c = cells[{"r", col}];
    c.state = CellResult::State::kDone;
    c.values = {70, 71};
    c.protocol = "card, stopping at the first round past 100 whose clients' mean local-test loss exceeds 1.3 × its minimum so far";
  }
  cells[{"r", "a"}].rounds_run = {101, 130};
  cells[{"r", "b"}].rounds_run = {200, 200};
  EXPECT_THAT(MarkdownReport(t, cells, Provenance(), ""),
              HasSubstr("**Rounds run** (early stop; min–max over the seeds): r, a: 101–130; r, b: 200.\n"));
  for (auto& [key, c] : cells) c.protocol = "card";
  EXPECT_THAT(MarkdownReport(t, cells, Provenance(), ""), Not(HasSubstr("Rounds run")));
}

// A run that several columns read (Table 7: accuracies, costs, minutes) is one run in the compute
// line, not one per column; cells without record keys count their own runs.
TEST(ReportTest, ComputeLineCountsARunReadBySeveralColumnsOnce) {
  proto::Table t;
  for (const char* key : {"r", "s"}) t.add_rows()->set_key(key);
  for (const char* key : {"global", "local", "minutes"}) t.add_columns()->set_key(key);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  for (const char* col : {"global", "local", "minutes"}) {
    CellResult& c = cells[{"r", col}];
    c.state = CellResult::State::kDone;
    c.values = {0.7, 0.8};
    c.run_seconds = 3600 + 1800;
    c.recorded_runs = {{"k1", 3600}, {"k2", 1800}};
  }
  CellResult& old = cells[{"s", "global"}];  // no record keys
  old.state = CellResult::State::kDone;
  old.values = {0.5};
  old.run_seconds = 720;
  EXPECT_THAT(MarkdownReport(t, cells, Provenance(), ""),
              HasSubstr("The 3 runs behind the filled cells took 1.70 h of wall time"));
  EXPECT_THAT(MarkdownReport(t, cells, Provenance(), ""), HasSubstr("By row, in hours: r 1.50; s 0.20."));
}

TEST(ReportTest, PluginGainAndPartitionSpread) {
  proto::Table t;
  for (const char* key : {"fedavg", "x", "x_fedtad"}) t.add_rows()->set_key(key);
  t.add_columns()->set_key("a");
  t.set_gain_plugin_suffix("_fedtad");
  t.mutable_partition_spread()->add_rows("fedavg");
  t.mutable_partition_spread()->add_partition_seeds(1);
  t.mutable_partition_spread()->add_partition_seeds(2);
  std::map<std::pair<std::string, std::string>, CellResult> cells;
  auto done = [](std::vector<double> v) { return CellResult{CellResult::State::kDone, std::move(v), "", 0}; };
  cells[{"fedavg", "a"}] = done({70, 72});  // mean 71
  cells[{"x", "a"}] = done({75});
  cells[{"x_fedtad", "a"}] = done({78});
  for (const char* row : {"fedavg", "x", "x_fedtad"}) {
    auto* cell = t.add_cells();
    cell->set_row(row);
    cell->set_column("a");
    *cell->mutable_paper() = Paper(row == std::string("x_fedtad") ? 80 : 76, 0.5);
  }
  PartitionSpread spread;
  spread[{"fedavg", "a"}][1] = done({68});
  spread[{"fedavg", "a"}][2] = done({74, 74});
  const std::string md = MarkdownReport(t, cells, Provenance(), "", "", spread);
  // x_fedtad - x: ours +3.0, the paper's 80 - 76 = +4.0.
  EXPECT_THAT(md, HasSubstr("**Gain over its base method**"));
  EXPECT_THAT(md, HasSubstr("| x_fedtad | +3.0 / +4.0 ✓ |"));
  // Partition means 71, 68 and 74: 68.0–74.0, range 6.0, beside the paper's ± 0.5.
  EXPECT_THAT(md, HasSubstr("| fedavg | 68.0–74.0 (6.0) / ± 0.5 |"));
  spread[{"fedavg", "a"}].erase(2);  // a partition not run yet: no range
  EXPECT_THAT(MarkdownReport(t, cells, Provenance(), "", "", spread), HasSubstr("| fedavg | – |"));
}

TEST(ReportTest, GainOverFedAvgBesideThePapers) {
  proto::Table t;
  t.set_title("T");
  for (const char* key : {"fedavg", "x"}) t.add_rows()->set_key(key);
  t.mutable_rows(0)->set_label("FedGCN");  // FedMpa's Table 2 prints FedAvg of a GCN as "FedGCN"
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
  // The summary names the base row as the table prints it, not "FedAvg".
  EXPECT_THAT(md, HasSubstr("**Gain over FedGCN**"));
  EXPECT_THAT(md, HasSubstr("- x: within 2 in 1/2; ahead of FedGCN in 1/2; mean +0.25 (paper +3.00)\n"));
}

}  // namespace
}  // namespace fgl::experiments
