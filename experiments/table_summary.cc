#include "experiments/table_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/markdown_sections.h"

namespace fgl::experiments {
namespace {

// Where a gain's cell is not filled: why.
std::string MissingReason(const CellResult& a, const CellResult& b) {
  for (const CellResult* r : {&a, &b}) {
    if (r->state == CellResult::State::kDataNotPresent) return "no data";
  }
  for (const CellResult* r : {&a, &b}) {
    if (r->state == CellResult::State::kStale) return "stale";
    if (r->state == CellResult::State::kFailed) return "RUN FAILED";
  }
  return "not run";
}

}  // namespace

Fill FillOf(const Cells& cells) {
  Fill f;
  for (const auto& [key, r] : cells) {
    if (r.state == CellResult::State::kDataNotPresent || r.state == CellResult::State::kNotPrinted) continue;
    ++f.present;
    f.filled += r.state == CellResult::State::kDone;
  }
  return f;
}

std::string ClaimCounts(const std::vector<ClaimJudgement>& judged) {
  if (judged.empty()) return "no claims";
  std::map<ClaimJudgement::Outcome, int> n;
  int so_far = 0;
  for (const ClaimJudgement& j : judged) {
    ++n[j.outcome];
    so_far += j.so_far;
  }
  using O = ClaimJudgement::Outcome;
  std::vector<std::string> parts;
  if (n[O::kReproduced] + n[O::kNotReproduced] + n[O::kInconclusive] > 0) {
    parts.push_back(absl::StrCat(n[O::kReproduced], " reproduced, ", n[O::kNotReproduced], " not reproduced, ",
                                 n[O::kInconclusive], " inconclusive"));
  }
  if (n[O::kHolds] + n[O::kDoesNotHold] > 0) {
    parts.push_back(absl::StrCat(n[O::kHolds], " hold", n[O::kHolds] == 1 ? "s" : "", " and ", n[O::kDoesNotHold],
                                 n[O::kDoesNotHold] == 1 ? " does" : " do", " not on our means"));
  }
  if (n[O::kNotCheckable] > 0) parts.push_back(absl::StrCat(n[O::kNotCheckable], " not checkable"));
  std::string out = absl::StrJoin(parts, "; ");
  if (so_far > 0) absl::StrAppend(&out, " (", so_far, " so far: cells they compare await runs)");
  return out;
}

std::string AgreementText(const proto::Table& t, const Cells& cells) {
  if (!AgreementApplies(t)) return "";
  const AgreementCount a = CountAgreement(t, cells);
  if (a.filled == 0) return "";
  return absl::StrFormat("%d of %d filled cells agree (%s)", a.within, a.filled, AgreementRuleText(t));
}

std::string MissingDatasets(const proto::Table& t, const Cells& cells) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by_dataset;
  for (const proto::Column& c : t.columns()) {
    bool missing = false;
    for (const auto& [key, r] : cells) missing |= key.second == c.key() && r.state == CellResult::State::kDataNotPresent;
    if (!missing) continue;
    std::string dataset = c.overrides().dataset().empty() ? t.base().dataset() : c.overrides().dataset();
    dataset = dataset.substr(0, dataset.find(':'));
    auto it = std::find_if(by_dataset.begin(), by_dataset.end(), [&](const auto& d) { return d.first == dataset; });
    if (it == by_dataset.end()) it = by_dataset.insert(by_dataset.end(), {dataset, {}});
    it->second.push_back(Label(c));
  }
  std::vector<std::string> parts;
  for (const auto& [dataset, columns] : by_dataset) {
    parts.push_back(absl::StrCat("`", dataset, "` (", absl::StrJoin(columns, ", "), ")"));
  }
  return absl::StrJoin(parts, "; ");
}

std::string CellsSentence(const proto::Table& t, const Cells& cells) {
  const Fill fill = FillOf(cells);
  std::string out = absl::StrCat(fill.filled, " of ", fill.present, " cells whose data is present are filled");
  if (const std::string agreement = AgreementText(t, cells); !agreement.empty()) absl::StrAppend(&out, "; ", agreement);
  const std::string missing = MissingDatasets(t, cells);
  absl::StrAppend(&out, "; ", missing.empty() ? "every dataset is present" : absl::StrCat("not present here: ", missing));
  return out;
}

std::optional<KeyGain> KeyGainOf(const proto::Table& t, const Cells& cells, const PartitionSpread& spread) {
  for (const proto::Claim& claim : t.claims()) {
    std::string base;
    if ((claim.kind() == proto::Claim::GAIN_AT_LEAST || claim.kind() == proto::Claim::MEAN_GAIN_AT_LEAST)) {
      base = claim.base();
    } else if (claim.kind() == proto::Claim::ROW_AT_LEAST_OTHERS && claim.others_size() == 1) {
      base = claim.others(0);
    }
    if (base.empty() || claim.row().empty() || !claim.column().empty()) continue;
    KeyGain gain{claim.row(), base, claim.text(), {}};
    std::map<std::pair<std::string, std::string>, proto::PublishedValue> paper;
    for (const proto::Cell& c : t.cells()) paper[{c.row(), c.column()}] = c.paper();
    const auto& spread_rows = t.partition_spread().rows();
    const bool with_spread = std::count(spread_rows.begin(), spread_rows.end(), gain.row) > 0 &&
                        std::count(spread_rows.begin(), spread_rows.end(), gain.base) > 0;
    for (const proto::Column& column : t.columns()) {
      GainColumn c;
      c.label = Label(column);
      const auto p_row = paper.find({gain.row, column.key()}), p_base = paper.find({gain.base, column.key()});
      c.has_paper = p_row != paper.end() && p_base != paper.end() && p_row->second.present() &&
                    p_base->second.present();
      if (c.has_paper) c.paper = p_row->second.mean() - p_base->second.mean();
      const CellResult& a = Lookup(cells, gain.row, column.key());
      const CellResult& b = Lookup(cells, gain.base, column.key());
      double ours_row, ours_base;
      c.filled = OurMean(cells, gain.row, column.key(), &ours_row) && OurMean(cells, gain.base, column.key(), &ours_base);
      if (!c.filled && !c.has_paper) continue;  // neither side has a number here
      if (c.filled) {
        c.ours = ours_row - ours_base;
        std::vector<double> differences;
        for (const auto& [seed, value] : PairedDifferences(a.values, a.seeds, b.values, b.seeds)) {
          differences.push_back(value);
        }
        c.interval = IntervalOf(differences);
        // The gain on each partition: the table's own, then the spread's (all of them, or no range).
        if (with_spread) {
          std::vector<double> gains = {c.ours};
          for (uint64_t seed : t.partition_spread().partition_seeds()) {
            const auto it_row = spread.find({gain.row, column.key()});
            const auto it_base = spread.find({gain.base, column.key()});
            if (it_row == spread.end() || it_base == spread.end() || !it_row->second.count(seed) ||
                !it_base->second.count(seed)) {
              continue;
            }
            const CellResult& sr = it_row->second.at(seed);
            const CellResult& sb = it_base->second.at(seed);
            if (sr.state != CellResult::State::kDone || sb.state != CellResult::State::kDone || sr.values.empty() ||
                sb.values.empty()) {
              continue;
            }
            gains.push_back(MeanStd(sr.values).first - MeanStd(sb.values).first);
          }
          if (gains.size() == static_cast<size_t>(t.partition_spread().partition_seeds_size()) + 1) {
            c.partitions = static_cast<int>(gains.size());
            c.partition_low = *std::min_element(gains.begin(), gains.end());
            c.partition_high = *std::max_element(gains.begin(), gains.end());
          }
        }
      } else {
        c.missing = MissingReason(a, b);
      }
      gain.columns.push_back(std::move(c));
    }
    return gain;
  }
  return std::nullopt;
}

std::string KeyGainBlock(const proto::Table& t, const KeyGain& g) {
  const int d = AccuracyDecimals(t);
  const double tolerance = t.fraction() ? 0.02 : 2;
  const std::string row = RowLabel(t, g.row), base = RowLabel(t, g.base);
  bool spread = false;
  for (const GainColumn& c : g.columns) spread |= c.partitions > 1;
  std::string md = absl::StrCat(
      "\n**Key gain: ", row, " − ", base, "** (the rows of the claim \"", g.claim,
      "\"). Ours: the mean over the seeds both cells recorded, with its paired 95% interval; the paper's: "
      "the difference of its printed means; the verdict on reaching the paper's gain as for a claim; ✓: within ",
      t.fraction() ? "0.02" : "2 points", " of the paper's gain",
      spread ? "; the gain on each partition of the table's partition spread as lowest to highest" : "", ".\n\n",
      "| dataset | ours | the paper's | ours − paper's | paper's gain reached? |", spread ? " gain over partitions |" : "",
      "\n|---|---|---|---|---|", spread ? "---|" : "", "\n");
  int n = 0, within = 0, ahead = 0;
  double sum_ours = 0, sum_paper = 0;
  std::map<Verdict, int> verdicts;
  for (const GainColumn& c : g.columns) {
    std::vector<std::string> line = {c.label};
    if (!c.filled) {
      line.push_back(c.missing);
    } else if (c.interval.has_interval) {
      line.push_back(absl::StrFormat("%+.*f [%+.*f, %+.*f] (n=%d)", d, c.ours, d, c.interval.low, d,
                                     c.interval.high, c.interval.n));
    } else {
      line.push_back(absl::StrFormat("%+.*f (n=%d, no interval)", d, c.ours, c.interval.n));
    }
    line.push_back(c.has_paper ? absl::StrFormat("%+.*f", d, c.paper) : "–");
    if (c.filled && c.has_paper) {
      const bool ok = std::abs(c.ours - c.paper) <= tolerance;
      const Verdict v = Judge(c.interval, c.paper);
      ++verdicts[v];
      ++n;
      within += ok;
      ahead += c.ours > 0;
      sum_ours += c.ours;
      sum_paper += c.paper;
      line.push_back(absl::StrFormat("%+.*f%s", d, c.ours - c.paper, ok ? " ✓" : ""));
      line.push_back(VerdictName(v));
    } else {
      line.push_back("–");
      line.push_back("–");
    }
    if (spread) {
      line.push_back(c.partitions > 1 ? absl::StrFormat("%+.*f to %+.*f (%d partitions)", d, c.partition_low, d,
                                                        c.partition_high, c.partitions)
                                      : "–");
    }
    absl::StrAppend(&md, "| ", absl::StrJoin(line, " | "), " |\n");
  }
  if (n > 0) {
    absl::StrAppend(
        &md, "\n", absl::StrFormat(
                       "Over the %d datasets with both: mean gain %+.*f ours against %+.*f the paper's; ours ahead of "
                       "%s in %d, within %s of the paper's gain in %d; the paper's gain reached in %d (reproduced), "
                       "missed in %d (not reproduced), undecided in %d (inconclusive).\n",
                       n, d + 1, sum_ours / n, d + 1, sum_paper / n, base, ahead, t.fraction() ? "0.02" : "2 points",
                       within, verdicts[Verdict::kReproduced], verdicts[Verdict::kNotReproduced],
                       verdicts[Verdict::kInconclusive]));
  }
  return md;
}

}  // namespace fgl::experiments
