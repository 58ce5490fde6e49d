#include "experiments/report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "experiments/claims.h"
#include "experiments/markdown_sections.h"
#include "experiments/protocol_card.h"

namespace fgl::experiments {

std::string MarkdownReport(const proto::Table& t,
                           const std::map<std::pair<std::string, std::string>, CellResult>& cells,
                           const Provenance& p, const std::string& svg_name,
                           const std::string& fidelity_svg_name, const PartitionSpread& spread) {
  const bool some_seeds_recorded = std::any_of(cells.begin(), cells.end(), [](const auto& c) {
    return c.second.state == CellResult::State::kNotRun && c.second.seeds_recorded > 0;
  });
  std::string md = absl::StrCat("# ", t.title(), "\n\n", t.paper(), " — ", t.metric(),
                                ". Each cell: **ours** mean ± std over seeds / the paper's mean ± std. \"stale\": recorded with an older "
                                "method version; \"not run\": no record yet; ",
                                some_seeds_recorded ? "\"k of n seeds\": k of its n seeds recorded, the value waits for the rest; " : "",
                                "\"no data\": the dataset is not on this machine.\n\n");
  std::vector<std::string> header = {"method"};
  for (const proto::Column& c : t.columns()) header.push_back(Label(c));
  absl::StrAppend(&md, "| ", absl::StrJoin(header, " | "), " |\n|", std::string(""), "");
  for (size_t i = 0; i < header.size(); ++i) absl::StrAppend(&md, "---|");
  absl::StrAppend(&md, "\n");
  std::map<std::pair<std::string, std::string>, proto::PublishedValue> paper;
  for (const proto::Cell& c : t.cells()) paper[{c.row(), c.column()}] = c.paper();
  for (const proto::Row& r : t.rows()) {
    std::vector<std::string> line = {Label(r)};
    for (const proto::Column& c : t.columns()) {
      auto it = paper.find({r.key(), c.key()});
      line.push_back(it == paper.end() ? "–"
                                       : FormatCell(Lookup(cells, r.key(), c.key()), it->second,
                                                    c.has_value() ? c.value() : t.value(), AccuracyDecimals(t)));
    }
    absl::StrAppend(&md, "| ", absl::StrJoin(line, " | "), " |\n");
  }
  absl::StrAppend(&md, AgreementSection(t, cells));
  absl::StrAppend(&md, AveragesSection(t, cells));
  absl::StrAppend(&md, GainSection(t, cells, paper, ""));
  if (!t.gain_plugin_suffix().empty()) absl::StrAppend(&md, GainSection(t, cells, paper, t.gain_plugin_suffix()));
  absl::StrAppend(&md, ClaimsSection(t, cells));
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
    absl::StrAppend(&md, "\n<details><summary>Spec hashes (result cache keys)</summary>\n\n");
    for (const auto& [cell, key] : p.spec_hashes) absl::StrAppend(&md, "- ", cell, ": `", key, "`\n");
    absl::StrAppend(&md, "\n</details>\n");
  }
  return md;
}

}  // namespace fgl::experiments
