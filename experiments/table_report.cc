#include "experiments/table_report.h"

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/csv_report.h"
#include "experiments/proto/record.pb.h"
#include "experiments/report.h"
#include "experiments/svg_figures.h"
#include "graph/io/file.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::experiments {
namespace {

using Curve = google::protobuf::RepeatedField<double>;

// Each seed's curve as `Series::seeds` (the plot draws them faint beside the mean).
void AddSeedCurves(const std::vector<proto::RunRecord>& recs,
                   const std::function<const Curve&(const proto::RunRecord&)>& curve, Series& series) {
  for (const proto::RunRecord& rec : recs) {
    std::vector<std::pair<int, double>> points;
    for (int i = 0; i < curve(rec).size(); ++i) points.emplace_back(i + 1, curve(rec)[i]);
    series.seeds.push_back(std::move(points));
  }
}

// Per column, every row's mean curve over its seeds (test accuracy; training loss where recorded):
// <stem>_<column>.svg, <stem>_<column>_loss.svg and one <stem>_curves.csv. Returns the markdown
// that shows them.
absl::StatusOr<std::string> WriteColumnCurves(
    const proto::Table& table, const std::map<std::pair<std::string, std::string>, std::vector<proto::RunRecord>>& runs,
    const std::string& report_dir, const std::string& stem) {
  std::string md = absl::StrCat("\n## Curves (mean over seeds; data: [", stem, "_curves.csv](", stem, "_curves.csv))\n");
  std::ostringstream csv;
  csv << "row,column,seeds,round,test_acc_mean,loss_mean\n";
  for (const proto::Column& c : table.columns()) {
    // A global-test column (FedEgo Fig. 4 a/c) draws the shared global test graph's curve.
    const bool global = (c.has_value() ? c.value() : table.value()) == proto::Table::GLOBAL_TEST_ACCURACY;
    auto curve = [global](const proto::RunRecord& rec) -> const Curve& {
      return global ? rec.global_test_curve() : rec.test_curve();
    };
    std::vector<Series> accuracy, loss;
    for (const proto::Row& row : table.rows()) {
      auto it = runs.find({row.key(), c.key()});
      if (it == runs.end() || it->second.empty()) continue;
      const std::vector<proto::RunRecord>& recs = it->second;
      size_t rounds = curve(recs[0]).size();
      bool has_loss = true;
      for (const proto::RunRecord& rec : recs) {
        rounds = std::min<size_t>(rounds, curve(rec).size());
        has_loss &= rec.loss_curve_size() == rec.test_curve_size();
      }
      Series a{row.label().empty() ? row.key() : row.label(), {}}, l{a.label, {}};
      for (size_t i = 0; i < rounds; ++i) {
        double acc = 0, lo = 0;
        for (const proto::RunRecord& rec : recs) {
          acc += curve(rec)[i] / recs.size();
          if (has_loss) lo += rec.loss_curve(i) / recs.size();
        }
        a.points.emplace_back(i + 1, acc);
        if (has_loss) l.points.emplace_back(i + 1, lo);
        csv << row.key() << "," << c.key() << "," << recs.size() << "," << i + 1 << ","
            << absl::StrFormat("%.4f", acc) << "," << (has_loss ? absl::StrFormat("%.6g", lo) : "") << "\n";
      }
      AddSeedCurves(recs, curve, a);
      if (has_loss) {
        AddSeedCurves(recs, [](const proto::RunRecord& rec) -> const Curve& { return rec.loss_curve(); }, l);
      }
      accuracy.push_back(std::move(a));
      if (has_loss) loss.push_back(std::move(l));
    }
    if (accuracy.empty()) continue;
    const std::string label = c.label().empty() ? c.key() : c.label();
    const std::string name = absl::StrCat(stem, "_", c.key());
    FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(
        absl::StrCat(report_dir, "/", name, ".svg"),
        CurveSvg(absl::StrCat(label, global ? ": global test" : ": test", " accuracy per round, every row"), accuracy,
                 /*percent=*/true, global ? "global test accuracy (%)" : "test accuracy (%)")));
    absl::StrAppend(&md, "\n### ", label, "\n\n![", label, global ? " global" : "", " test accuracy](", name, ".svg)\n");
    if (!loss.empty()) {
      FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(
          absl::StrCat(report_dir, "/", name, "_loss.svg"),
          CurveSvg(absl::StrCat(label, ": training loss per round, every row"), loss, /*percent=*/false,
                   "training loss (log scale)")));
      absl::StrAppend(&md, "![", label, " training loss](", name, "_loss.svg)\n");
    }
  }
  FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(report_dir + "/" + stem + "_curves.csv", csv.str()));
  return md;
}

}  // namespace

absl::StatusOr<bool> WriteTableReport(const proto::Table& table, const TablePlan& plan, const std::string& report_dir,
                                      const std::string& stem) {
  const std::map<std::pair<std::string, std::string>, CellResult>& results = plan.results;
  // The plot: on the first column with a finished cell, every row's seeds (faint) and their mean
  // (bold) over the rounds all of them recorded.
  std::vector<Series> series;
  std::string plot_column;
  size_t plot_seeds = 0;
  for (const proto::Column& c : table.columns()) {
    for (const proto::Row& row : table.rows()) {
      auto it = plan.all_runs.find({row.key(), c.key()});
      if (it == plan.all_runs.end() || it->second.empty()) continue;
      const std::vector<proto::RunRecord>& recs = it->second;
      plot_column = Label(c);
      plot_seeds = std::max(plot_seeds, recs.size());
      Series s;
      s.label = Label(row);
      int rounds = recs[0].test_curve_size();
      for (const proto::RunRecord& rec : recs) rounds = std::min(rounds, rec.test_curve_size());
      for (int i = 0; i < rounds; ++i) {
        double sum = 0;
        for (const proto::RunRecord& rec : recs) sum += rec.test_curve(i);
        s.points.emplace_back(i + 1, sum / recs.size());
      }
      AddSeedCurves(recs, [](const proto::RunRecord& rec) -> const Curve& { return rec.test_curve(); }, s);
      series.push_back(std::move(s));
    }
    if (!series.empty()) break;
  }
  std::string curves_md;
  if (table.curves_per_column()) {
    FGL_ASSIGN_OR_RETURN(curves_md, WriteColumnCurves(table, plan.all_runs, report_dir, stem));
  }
  std::string svg_name;
  if (!series.empty()) {
    svg_name = stem + ".svg";
    FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(
        report_dir + "/" + svg_name,
        AccuracySvg(absl::StrCat(table.title(), " — test accuracy per round on ", plot_column, ", every row (",
                                 plot_seeds, plot_seeds == 1 ? " seed)" : " seeds)"),
                    series)));
  }
  Provenance prov;
  prov.spec_hashes = plan.spec_hashes;
  prov.seeds = absl::StrJoin(plan.seeds_used, ", ");
  prov.commits = absl::StrJoin(plan.commits, ", ");
  prov.machines = absl::StrJoin(plan.machines, "; ");
  std::string grid_md;
  if (const std::string grid = table.grid_heatmap() ? GridHeatmapSvg(table, results) : ""; !grid.empty()) {
    FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(report_dir + "/" + stem + "_grid.svg", grid));
    grid_md = absl::StrCat("\n![", table.title(), ": the cells as a grid](", stem, "_grid.svg)\n");
  }
  std::string fidelity_name;
  if (const std::string fidelity = table.value() == proto::Table::TEST_ACCURACY ? FidelitySvg(table, results) : "";
      !fidelity.empty()) {
    fidelity_name = stem + "_fidelity.svg";
    FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(report_dir + "/" + fidelity_name, fidelity));
  }
  FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(
      report_dir + "/" + stem + ".md",
      absl::StrCat(MarkdownReport(table, results, prov, svg_name, fidelity_name, plan.spread), grid_md, curves_md)));
  FGL_RETURN_IF_ERROR(graph::io::WriteFileAtomically(report_dir + "/" + stem + ".csv", CsvReport(table, results)));
  return !svg_name.empty();
}

}  // namespace fgl::experiments
