#include "experiments/report.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "experiments/claims.h"
#include "experiments/markdown_sections.h"
#include "experiments/protocol_card.h"
#include "experiments/table_summary.h"

namespace fgl::experiments {

namespace {

// The grid of our cells, each with its signed difference from the paper's value and † outside the
// agreement rule, then the legend, then the paper's own values folded away.
std::string ResultGrid(const proto::Table& t, const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::map<std::pair<std::string, std::string>, proto::PublishedValue> paper;
  for (const proto::Cell& c : t.cells()) paper[{c.row(), c.column()}] = c.paper();
  const bool rule_applies = AgreementApplies(t);
  std::vector<std::string> header = {"method"};
  for (const proto::Column& c : t.columns()) header.push_back(Label(c));
  std::vector<std::vector<std::string>> ours, theirs;
  int printed = 0, filled = 0, outside = 0;
  for (const proto::Row& r : t.rows()) {
    std::vector<std::string> line = {Label(r)}, paper_line = {Label(r)};
    for (const proto::Column& c : t.columns()) {
      const proto::Table::Value value = c.has_value() ? c.value() : t.value();
      auto it = paper.find({r.key(), c.key()});
      if (it == paper.end()) {
        line.push_back("–");
        paper_line.push_back("–");
        continue;
      }
      printed += it->second.present();
      double mean;
      const bool compared = it->second.present() && OurMean(cells, r.key(), c.key(), &mean);
      const bool out = rule_applies && compared && !WithinAgreement(t, it->second, Lookup(cells, r.key(), c.key()).values);
      filled += compared;
      outside += out;
      line.push_back(FormatCell(Lookup(cells, r.key(), c.key()), it->second, value, AccuracyDecimals(t), out));
      paper_line.push_back(PaperValueText(it->second, value, AccuracyDecimals(t)));
    }
    ours.push_back(std::move(line));
    theirs.push_back(std::move(paper_line));
  }
  const bool some_seeds_recorded = std::any_of(cells.begin(), cells.end(), [](const auto& c) {
    return c.second.state == CellResult::State::kNotRun && c.second.seeds_recorded > 0;
  });
  std::string md = absl::StrCat(printed > 0 ? "\n**Our numbers against the paper's**\n\n" : "\n**Our numbers**\n\n",
                                MarkdownGrid(header, ours), "\n");
  bool amounts = false, traffic = false;  // columns of MiB (deterministic: no ±), with up+down beside them
  for (const proto::Column& c : t.columns()) {
    const proto::Table::Value value = c.has_value() ? c.value() : t.value();
    amounts |= value == proto::Table::UPLOADED_MIB || value == proto::Table::UPLOADED_TENSOR_MIB;
    traffic |= value == proto::Table::UPLOADED_MIB;
  }
  absl::StrAppend(&md, "Each cell: our mean ± std over seeds",
                  amounts ? " (MiB: the mean alone, as every seed sends the same bytes unless the cell says otherwise)"
                          : "");
  if (filled > 0) {
    absl::StrAppend(&md, ", then (ours − the paper's mean) where the paper prints a value");
    if (rule_applies) {
      absl::StrAppend(&md, absl::StrFormat("; † (%d of %d such cells): outside the agreement rule (%s; the SE from "
                                           "our seeds and the paper's ± over %d runs)",
                                           outside, filled, AgreementRuleText(t), t.paper_runs() > 0 ? t.paper_runs() : 3));
    }
  }
  absl::StrAppend(&md, traffic ? "; \"up+down\": the MiB uploaded and downloaded" : "",
                  ". \"stale\": recorded with an older method version; \"not run\": no record yet; ",
                  some_seeds_recorded ? "\"k of n seeds\": k of its n seeds recorded, the value waits for the rest; " : "",
                  "\"no data\": the dataset is not on this machine; \"–\": the paper has no such cell.\n");
  if (printed > 0) {
    absl::StrAppend(&md, "\n<details><summary>The paper's values (mean ± std as printed)</summary>\n\n",
                    MarkdownGrid(header, theirs), "\n</details>\n");
  }
  return md;
}

}  // namespace

std::string MarkdownReport(const proto::Table& t,
                           const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                           const Provenance& p, const std::string& svg_name,
                           const std::string& fidelity_svg_name, const PartitionSpread& spread) {
  // The head: what the table is, then what it comes to (verdicts, key gain), then the numbers.
  std::string md = absl::StrCat("# ", t.title(), "\n\n", t.paper(), " — ", t.metric(), ".\n");
  const std::vector<ClaimJudgement> judged = JudgeClaims(t, cells);
  absl::StrAppend(&md, "\n",
                  judged.empty() ? "" : absl::StrCat("**Verdict**: its ", judged.size(),
                                                     judged.size() == 1 ? " claim: " : " claims: ", ClaimCounts(judged),
                                                     ". "),
                  "**Cells**: ", CellsSentence(t, cells), ".\n");
  absl::StrAppend(&md, ClaimsSection(t, cells));
  if (const std::optional<KeyGain> gain = KeyGainOf(t, cells, spread); gain.has_value()) {
    absl::StrAppend(&md, KeyGainBlock(t, *gain));
  }
  absl::StrAppend(&md, ResultGrid(t, cells));
  std::map<std::pair<std::string, std::string>, proto::PublishedValue> paper;
  for (const proto::Cell& c : t.cells()) paper[{c.row(), c.column()}] = c.paper();
  absl::StrAppend(&md, AgreementSection(t, cells));
  absl::StrAppend(&md, AveragesSection(t, cells));
  absl::StrAppend(&md, GainSection(t, cells, paper, ""));
  if (!t.gain_plugin_suffix().empty()) absl::StrAppend(&md, GainSection(t, cells, paper, t.gain_plugin_suffix()));
  absl::StrAppend(&md, SpreadSection(t, cells, paper, spread));
  absl::StrAppend(&md, ProtocolSection(t, cells));
  absl::StrAppend(&md, RoundsRunSection(t, cells));
  // The transcription's working notes stay in the table's textproto: what ran is in the cards.
  if (!t.notes().empty()) {
    absl::StrAppend(&md, "\nNotes on the transcription and the protocol choices: the table's textproto (`notes`).\n");
  }
  if (!fidelity_svg_name.empty()) {
    absl::StrAppend(&md, "\n![ours against the paper, per filled cell](", fidelity_svg_name, ")\n");
  }
  if (!svg_name.empty()) absl::StrAppend(&md, "\n![accuracy against round](", svg_name, ")\n");
  absl::StrAppend(&md, ComputeLine(t, cells));
  absl::StrAppend(&md, "\n**Provenance.** Generated from the run records in `experiments/results/` (one file per run, ",
                  "named by the keys below), produced by commit(s) ", p.commits.empty() ? "–" : p.commits, " on ",
                  p.machines.empty() ? "–" : p.machines, "; seeds ", p.seeds, ". Source: ", t.source(), ".\n");
  if (!p.spec_hashes.empty()) {
    // One line per cell and seed: a run that several columns read is listed under each.
    absl::StrAppend(&md, "\n<details><summary>Run keys (", p.spec_hashes.size(), ")</summary>\n\n",
                    "Result cache keys, one per cell and seed (`experiments/results/<key>.json`).\n\n");
    for (const auto& [cell, key] : p.spec_hashes) absl::StrAppend(&md, "- ", cell, ": `", key, "`\n");
    absl::StrAppend(&md, "\n</details>\n");
  }
  return md;
}

}  // namespace fgl::experiments
