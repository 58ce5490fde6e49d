#include "experiments/svg_figures_samples.h"

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "experiments/proto/table.pb.h"
#include "experiments/report_cells.h"
#include "experiments/svg_figures.h"

namespace fgl::experiments {
namespace {

using Cells = std::map<std::pair<std::string, std::string>, CellResult>;

CellResult Done(std::vector<double> values, proto::Table::Value value = proto::Table::TEST_ACCURACY) {
  CellResult r;
  r.state = CellResult::State::kDone;
  r.values = std::move(values);
  r.value = value;
  return r;
}

// Rows × columns with the given labels and no cells.
proto::Table Grid(const std::string& title, const std::vector<std::string>& rows,
                  const std::vector<std::string>& columns) {
  proto::Table t;
  t.set_id(title);
  t.set_title(title);
  t.set_metric("test accuracy (%) of the private models, best-val round");
  for (size_t i = 0; i < rows.size(); ++i) {
    proto::Row* row = t.add_rows();
    row->set_key(absl::StrCat("r", i));
    row->set_label(rows[i]);
  }
  for (size_t j = 0; j < columns.size(); ++j) {
    proto::Column* column = t.add_columns();
    column->set_key(absl::StrCat("c", j));
    column->set_label(columns[j]);
  }
  return t;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> SampleFigures() {
  std::vector<std::pair<std::string, std::string>> out;
  // A dozen rows, three seeds each, 200 rounds, with a title and labels far too long for a line.
  std::vector<Series> curves;
  for (int i = 0; i < 12; ++i) {
    Series s;
    s.label = i == 0   ? "FedGKC with knowledge-aware aggregation, the self-distillation term, the global knowledge "
                         "cache and a few more words"
              : i == 1 ? "a<b & c>"
                       : absl::StrCat("Method ", i, " — α = 0.", i);
    for (int seed = 0; seed < 3; ++seed) {
      std::vector<std::pair<int, double>> points;
      for (int r = 1; r <= 200; ++r) points.emplace_back(r, 20 + 3 * i + 40 * (1 - std::exp(-r / 20.0)) + seed);
      s.seeds.push_back(points);
    }
    for (int r = 1; r <= 200; ++r) s.points.emplace_back(r, 21 + 3 * i + 40 * (1 - std::exp(-r / 20.0)));
    curves.push_back(std::move(s));
  }
  const std::string long_title =
      "Performance comparison of methods with clients of different model architectures (scenario 1: "
      "GCN/GAT/GraphSAGE/GIN/SGC) — test accuracy per round on Cora, 5 clients, every row (3 seeds)";
  out.emplace_back("curves_many_series.svg", AccuracySvg(long_title, curves));
  std::vector<Series> loss = {{"FedAvg", {{1, 2.0}, {2, 0.5}, {3, 0.01}}, {{{1, 2.1}, {2, 0.6}, {3, 0.02}}}}};
  out.emplace_back("curves_loss.svg",
                   CurveSvg("Cora: training loss per round", loss, /*percent=*/false, "training loss (log scale)"));
  out.emplace_back("curves_one_series.svg", AccuracySvg("a<b & c", {{"FedAvg", {{1, 50.0}, {2, 60.0}}, {}}}));

  // FedMpa Fig. 3: three rows and 27 columns, once one line 3,250 px wide.
  std::vector<std::string> columns;
  for (const char* data : {"Cora", "Citeseer", "Coauthor-phy"}) {
    for (int d = 1; d <= 9; ++d) columns.push_back(absl::StrCat(data, ", dropout 0.", d));
  }
  proto::Table wide = Grid("Accuracy against the dropout rate, M = 3 (Fig. 3)",
                           {"FedMpa", "FedAvg with a deliberately long row label that has to wrap", "LocMpa"}, columns);
  Cells wide_cells;
  for (int i = 0; i < wide.rows_size(); ++i) {
    for (int j = 0; j < wide.columns_size(); ++j) {
      if (i == 2 && j == 5) continue;  // one empty square
      wide_cells[{wide.rows(i).key(), wide.columns(j).key()}] = Done({30.0 + 2 * j + i, 31.0 + 2 * j + i});
    }
  }
  out.emplace_back("grid_wide.svg", GridHeatmapSvg(wide, wide_cells));
  // FedGKC Fig. 4(a): a 1.5-point range of means, which the scale no longer stretches end to end.
  proto::Table narrow = Grid("α × β on CS, 20 clients (Fig. 4a; the grid is the note's)",
                             {"α = 0.5", "α = 0.6", "α = 0.7", "α = 0.8"},
                             {"β = 0.05", "β = 0.1", "β = 0.2", "β = 0.3"});
  Cells narrow_cells;
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      narrow_cells[{narrow.rows(i).key(), narrow.columns(j).key()}] =
          Done({81.1 + 0.1 * (i + j), 81.5 + 0.1 * (i + j)});
    }
  }
  out.emplace_back("grid_narrow.svg", GridHeatmapSvg(narrow, narrow_cells));
  // FedEgo Fig. 5: weight divergences of a few hundredths, once all "0.0 ± 0.0".
  proto::Table small = Grid("Weight divergence per client against γ", {"γ = 0.125", "γ = 0.25"},
                            {"Cora, client C1: WD", "Cora, mean λ"});
  Cells small_cells;  // the columns' value, as FedEgo Fig. 5's columns set it
  small_cells[{"r0", "c0"}] = Done({0.021, 0.019}, proto::Table::CLIENT_REPORT);
  small_cells[{"r0", "c1"}] = Done({0.8, 0.8}, proto::Table::CLIENT_REPORT);
  small_cells[{"r1", "c0"}] = Done({0.035, 0.030}, proto::Table::CLIENT_REPORT);
  out.emplace_back("grid_small_values.svg", GridHeatmapSvg(small, small_cells));

  // Fidelity: a dozen rows (once ten colours repeated), long row labels; and a fraction table.
  proto::Table fidelity = Grid("fedtad/table2_baselines_with_a_long_identifier_that_needs_wrapping", {}, {"c0", "c1"});
  Cells fidelity_cells;
  for (int i = 0; i < 12; ++i) {
    proto::Row* row = fidelity.add_rows();
    row->set_key(absl::StrCat("r", i));
    row->set_label(i == 3 ? "FedSage+ with the reviewers' generator settings and the authors' split <long>"
                          : absl::StrCat("Baseline ", i));
    for (int j = 0; j < 2; ++j) {
      proto::Cell* cell = fidelity.add_cells();
      cell->set_row(row->key());
      cell->set_column(fidelity.columns(j).key());
      cell->mutable_paper()->set_mean(60 + 2 * i + j);
      cell->mutable_paper()->set_present(true);
      fidelity_cells[{row->key(), cell->column()}] = Done({59.0 + 2 * i + 3 * j, 61.0 + 2 * i});
    }
  }
  out.emplace_back("fidelity_many_rows.svg", FidelitySvg(fidelity, fidelity_cells));
  proto::Table fraction = fidelity;
  fraction.set_fraction(true);
  Cells fraction_cells = fidelity_cells;
  for (proto::Cell& cell : *fraction.mutable_cells()) cell.mutable_paper()->set_mean(cell.paper().mean() / 100);
  for (auto& [key, r] : fraction_cells) {
    for (double& v : r.values) v /= 100;
  }
  out.emplace_back("fidelity_fraction.svg", FidelitySvg(fraction, fraction_cells));
  return out;
}

}  // namespace fgl::experiments
