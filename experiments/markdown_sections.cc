#include "experiments/markdown_sections.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace fgl::experiments {

namespace {

// Row -> (within the agreement band, filled) over the cells the paper prints.
std::map<std::string, std::pair<int, int>> AgreementByRow(
    const proto::Table& t, const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::map<std::string, std::pair<int, int>> per_row;
  for (const proto::Cell& c : t.cells()) {
    double ours;
    if (!c.paper().present() || !OurMean(cells, c.row(), c.column(), &ours)) continue;
    auto& [within, filled] = per_row[c.row()];
    within += WithinAgreement(t, c.paper(), Lookup(cells, c.row(), c.column()).values);
    ++filled;
  }
  return per_row;
}

// Characters as a reader counts them: UTF-8 code points.
size_t Width(const std::string& s) {
  return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

}  // namespace

std::string MarkdownGrid(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                         size_t max_width) {
  if (header.empty()) return "";
  const size_t columns = header.size() - 1;
  // The widest entry of each column (label column first) over the header and the rows.
  std::vector<size_t> widest(header.size(), 0);
  for (size_t i = 0; i < header.size(); ++i) widest[i] = Width(header[i]);
  for (const std::vector<std::string>& row : rows) {
    for (size_t i = 0; i < row.size() && i < widest.size(); ++i) widest[i] = std::max(widest[i], Width(row[i]));
  }
  // Columns [begin, end) of a grid of k: near-equal counts, the first ones one larger.
  auto bounds = [&](size_t k, size_t part) {
    const size_t base = columns / k, extra = columns % k;
    const size_t begin = part * base + std::min(part, extra);
    return std::make_pair(begin, begin + base + (part < extra ? 1 : 0));
  };
  // "| label | a | b |": 4 characters around the label, 3 more per column.
  auto fits = [&](size_t k) {
    for (size_t part = 0; part < k; ++part) {
      const auto [begin, end] = bounds(k, part);
      size_t width = widest[0] + 4;
      for (size_t c = begin; c < end; ++c) width += widest[c + 1] + 3;
      if (width > max_width) return false;
    }
    return true;
  };
  size_t k = 1;
  while (k < columns && !fits(k)) ++k;
  std::string md;
  for (size_t part = 0; part < k; ++part) {
    const auto [begin, end] = bounds(k, part);
    if (part > 0) absl::StrAppend(&md, "\n");
    auto line = [&](const std::vector<std::string>& cells) {
      std::vector<std::string> out = {cells.empty() ? "" : cells[0]};
      for (size_t c = begin; c < end; ++c) out.push_back(c + 1 < cells.size() ? cells[c + 1] : "");
      return absl::StrCat("| ", absl::StrJoin(out, " | "), " |\n");
    };
    absl::StrAppend(&md, line(header), "|");
    for (size_t c = begin; c <= end; ++c) absl::StrAppend(&md, "---|");
    absl::StrAppend(&md, "\n");
    for (const std::vector<std::string>& row : rows) absl::StrAppend(&md, line(row));
  }
  return md;
}

AgreementCount CountAgreement(const proto::Table& t,
                              const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  AgreementCount count;
  for (const auto& [row, counts] : AgreementByRow(t, cells)) {
    count.within += counts.first;
    count.filled += counts.second;
  }
  return count;
}

std::string AgreementSection(const proto::Table& t,
                             const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  if (!AgreementApplies(t)) return "";
  const std::map<std::string, std::pair<int, int>> per_row = AgreementByRow(t, cells);  // row -> (within, filled)
  int within = 0, filled = 0;
  std::vector<std::string> rows;
  for (const proto::Row& r : t.rows()) {
    auto it = per_row.find(r.key());
    if (it == per_row.end()) continue;
    within += it->second.first;
    filled += it->second.second;
    rows.push_back(absl::StrCat(Label(r), " ", it->second.first, "/", it->second.second));
  }
  return absl::StrFormat(
      "\n**Agreement with the paper** (%s): %d of %d filled cells. Per row: %s.\n", AgreementRuleText(t), within,
      filled, rows.empty() ? "none filled" : absl::StrJoin(rows, ", "));
}

std::string AveragesSection(const proto::Table& t,
                            const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  if (t.averages().empty()) return "";
  std::string md = "\n**Averages** (the mean of the cells' means; ours / the paper's printed value; \"–\": a cell "
                   "it needs is not filled):\n\n| method |";
  for (const proto::Average& a : t.averages()) absl::StrAppend(&md, " ", a.label().empty() ? a.key() : a.label(), " |");
  absl::StrAppend(&md, "\n|---|");
  for (int i = 0; i < t.averages_size(); ++i) absl::StrAppend(&md, "---|");
  absl::StrAppend(&md, "\n");
  for (const proto::Row& r : t.rows()) {
    absl::StrAppend(&md, "| ", Label(r), " |");
    for (const proto::Average& a : t.averages()) {
      double sum = 0, mean = 0;
      bool complete = !a.of().empty();
      for (const std::string& col : a.of()) {
        if (!OurMean(cells, r.key(), col, &mean)) complete = false;
        sum += mean;
      }
      auto printed = a.paper().find(r.key());
      absl::StrAppend(&md, " ", complete ? absl::StrFormat("**%.1f**", sum / a.of_size()) : "–", " / ",
                      printed == a.paper().end() ? "–" : absl::StrFormat("%.2f", printed->second), " |");
    }
    absl::StrAppend(&md, "\n");
  }
  return md;
}

std::string GainSection(const proto::Table& t,
                        const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                        const std::map<std::pair<std::string, std::string>, proto::PublishedValue>& paper,
                        const std::string& plugin_suffix) {
  std::set<std::string> keys;
  for (const proto::Row& r : t.rows()) keys.insert(r.key());
  auto base_of = [&](const std::string& row) -> std::string {
    if (plugin_suffix.empty()) return keys.count("fedavg") && row != "fedavg" ? "fedavg" : "";
    if (row.size() <= plugin_suffix.size() ||
        row.compare(row.size() - plugin_suffix.size(), plugin_suffix.size(), plugin_suffix) != 0) {
      return "";
    }
    const std::string base = row.substr(0, row.size() - plugin_suffix.size());
    return keys.count(base) ? base : "";
  };
  auto mean_of = [&](const std::string& row, const std::string& col, double* ours, double* theirs) {
    const CellResult& r = Lookup(cells, row, col);
    auto it = paper.find({row, col});
    if (r.state != CellResult::State::kDone || it == paper.end() || !it->second.present() || !IsAccuracy(r.value)) {
      return false;
    }
    *ours = MeanStd(r.values).first;
    *theirs = it->second.mean();
    return true;
  };
  std::vector<std::string> header = {"method"};
  for (const proto::Column& c : t.columns()) header.push_back(Label(c));
  // The "fedavg" row under its printed label (FedMpa's Table 2 calls FedAvg of a GCN "FedGCN").
  const std::string base_name = plugin_suffix.empty() ? RowLabel(t, "fedavg") : "its base method";
  std::string md = absl::StrCat(
      "\n**Gain over ", base_name, "** (what the papers claim): ours (row − ", base_name,
      ", same partition and seeds) / the paper's, ✓ when they are within ", t.fraction() ? "0.02" : "2 points",
      ". Computed from the cells above.\n\n");
  std::vector<std::vector<std::string>> lines;
  std::vector<std::string> summaries;
  for (const proto::Row& r : t.rows()) {
    const std::string base = base_of(r.key());
    if (base.empty()) continue;
    std::vector<std::string> line = {Label(r)};
    int n = 0, within = 0, ahead = 0;
    double sum_ours = 0, sum_paper = 0;
    for (const proto::Column& c : t.columns()) {
      double ours, theirs, base_ours, base_theirs;
      if (!mean_of(r.key(), c.key(), &ours, &theirs) || !mean_of(base, c.key(), &base_ours, &base_theirs)) {
        line.push_back("–");
        continue;
      }
      const double g = ours - base_ours, gp = theirs - base_theirs;
      const bool ok = std::abs(g - gp) <= (t.fraction() ? 0.02 : 2.0);
      ++n;
      within += ok;
      ahead += g > 0;
      sum_ours += g;
      sum_paper += gp;
      const int d = AccuracyDecimals(t);
      line.push_back(absl::StrFormat("%+.*f / %+.*f%s", d, g, d, gp, ok ? " ✓" : ""));
    }
    if (n == 0) continue;
    summaries.push_back(absl::StrFormat("- %s: within %s in %d/%d; ahead of %s in %d/%d; mean %+.*f (paper %+.*f)\n",
                                        Label(r), t.fraction() ? "0.02" : "2", within, n,
                                        plugin_suffix.empty() ? base_name : "the base", ahead, n,
                                        t.fraction() ? 4 : 2, sum_ours / n, t.fraction() ? 4 : 2, sum_paper / n));
    lines.push_back(std::move(line));
  }
  if (lines.empty()) return "";
  return absl::StrCat(md, MarkdownGrid(header, lines), "\n", absl::StrJoin(summaries, ""));
}

std::string SpreadSection(const proto::Table& t,
                          const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                          const std::map<std::pair<std::string, std::string>, proto::PublishedValue>& paper,
                          const PartitionSpread& spread) {
  if (t.partition_spread().rows().empty()) return "";
  std::vector<std::string> header = {"method"};
  for (const proto::Column& c : t.columns()) header.push_back(Label(c));
  std::string md = absl::StrCat(
      "\n**Partition spread**: the mean over training seeds on each of ", t.partition_spread().partition_seeds_size() + 1,
      " partitions (partition seeds: the table's and ", absl::StrJoin(t.partition_spread().partition_seeds(), ", "),
      "), as lowest–highest (range) / the paper's ±. A range wider than the paper's ± means the partition alone "
      "moves the number more than the paper's error bar.\n\n");
  std::vector<std::vector<std::string>> lines;
  for (const std::string& row : t.partition_spread().rows()) {
    std::vector<std::string> line = {RowLabel(t, row)};
    for (const proto::Column& c : t.columns()) {
      const auto key = std::make_pair(row, c.key());
      std::vector<const CellResult*> parts = {&Lookup(cells, row, c.key())};
      auto it = spread.find(key);
      for (uint64_t seed : t.partition_spread().partition_seeds()) {
        parts.push_back(it == spread.end() || !it->second.count(seed) ? nullptr : &it->second.at(seed));
      }
      double lo = 1e9, hi = -1e9;
      bool complete = true;
      for (const CellResult* part : parts) {
        if (part == nullptr || part->state != CellResult::State::kDone || part->values.empty()) {
          complete = false;
          break;
        }
        const double mean = MeanStd(part->values).first;
        lo = std::min(lo, mean);
        hi = std::max(hi, mean);
      }
      auto published = paper.find(key);
      const std::string theirs = published != paper.end() && published->second.present()
                                     ? absl::StrFormat("± %.1f", published->second.std())
                                     : "–";
      line.push_back(complete ? absl::StrFormat("%.1f–%.1f (%.1f) / %s", lo, hi, hi - lo, theirs) : "–");
    }
    lines.push_back(std::move(line));
  }
  return absl::StrCat(md, MarkdownGrid(header, lines));
}

std::string RoundsRunSection(const proto::Table& t,
                             const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::vector<std::string> parts;
  for (const proto::Row& row : t.rows()) {
    for (const proto::Column& c : t.columns()) {
      auto it = cells.find({row.key(), c.key()});
      if (it == cells.end() || it->second.state != CellResult::State::kDone || it->second.rounds_run.empty() ||
          !absl::StrContains(it->second.protocol, "stopping at the first round")) {
        continue;
      }
      const auto [lo, hi] = std::minmax_element(it->second.rounds_run.begin(), it->second.rounds_run.end());
      parts.push_back(absl::StrCat(Label(row), ", ", Label(c), ": ",
                                   *lo == *hi ? absl::StrCat(*lo) : absl::StrCat(*lo, "–", *hi)));
    }
  }
  if (parts.empty()) return "";
  return absl::StrCat("\n**Rounds run** (early stop; min–max over the seeds): ", absl::StrJoin(parts, "; "), ".\n");
}

std::string ComputeLine(const proto::Table& t, const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  double total = 0;
  size_t runs = 0;
  std::set<std::string> counted;  // record keys
  std::vector<std::string> by_row;
  for (const proto::Row& r : t.rows()) {
    double row_s = 0;
    for (const proto::Column& c : t.columns()) {
      auto it = cells.find({r.key(), c.key()});
      if (it == cells.end() || it->second.state != CellResult::State::kDone) continue;
      const RunCost cost = UncountedRuns(it->second, counted);
      row_s += cost.seconds;
      runs += cost.runs;
    }
    total += row_s;
    if (row_s > 0) by_row.push_back(absl::StrFormat("%s %.2f", Label(r), row_s / 3600));
  }
  if (runs == 0) return "";
  return absl::StrFormat(
      "\n**Compute.** The %d runs behind the filled cells took %.2f h of wall time when they ran "
      "(each run's own log; one thread per run, so two run side by side on a 2-core machine). "
      "By row, in hours: %s.\n",
      runs, total / 3600, absl::StrJoin(by_row, "; "));
}

}  // namespace fgl::experiments
