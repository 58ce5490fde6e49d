#include "experiments/protocol_card.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace fgl::experiments {

std::string ProtocolCard(const proto::Experiment& e) {
  const std::string early_stop =
      e.eval().has_early_stop()
          ? absl::StrFormat(
                ", stopping at the first round past %d whose clients' mean local-test loss exceeds %g × "
                "its minimum so far",
                e.eval().early_stop().after_round(), e.eval().early_stop().loss_ratio())
          : "";
  // Adam, the default, is not named, so that the cards of every Adam row read as before.
  const std::string optimizer =
      e.optimizer() == fl::proto::FederationSpec::SGD ? absl::StrFormat("SGD (momentum %g), ", e.momentum()) : "";
  return absl::StrFormat(
      "%s model, %s, %s round; dropout at evaluation %s; %s; split %s; %s, partition seed %d; "
      "%d rounds × %d local epochs%s; %slr %g, weight decay %g; client fraction %g%s",
      absl::AsciiStrToLower(fl::proto::EvalProtocol::Model_Name(e.eval().model())),
      e.eval().weighting() == fl::proto::EvalProtocol::UNWEIGHTED ? "unweighted" : "node-weighted",
      absl::AsciiStrToLower(fl::proto::EvalProtocol::Round_Name(e.eval().round())),
      e.eval().dropout_at_eval() ? "on" : "off", e.model(),
      // A reference partition brings its clients' own splits; the split rule is not used.
      absl::StartsWith(e.partitioner(), "reference:") ? "the partition's own" : e.split(), e.partitioner(),
      e.partition_seed(), e.rounds(), e.local_epochs(), early_stop, optimizer, e.lr(), e.weight_decay(),
      e.client_fraction(),
      // Named only when set, so that the cards of every federated row read as before.
      e.centralized() ? "; centralized: the clients pooled into one" : "");
}

std::string MethodParamsText(const proto::Experiment& e) {
  std::vector<std::string> params;
  const google::protobuf::Reflection* r = e.GetReflection();
  std::vector<const google::protobuf::FieldDescriptor*> fields;
  r->ListFields(e, &fields);
  for (const google::protobuf::FieldDescriptor* f : fields) {
    if (f->message_type() == nullptr || f->name() == "eval") continue;
    std::string text;
    google::protobuf::TextFormat::Printer printer;
    printer.SetSingleLineMode(true);
    printer.PrintToString(r->GetMessage(e, f), &text);
    while (!text.empty() && text.back() == ' ') text.pop_back();
    params.push_back(absl::StrCat(f->name(), " { ", text, text.empty() ? "" : " ", "}"));
  }
  return absl::StrJoin(params, " ");
}

std::string ProtocolSection(const proto::Table& t,
                            const std::map<std::pair<std::string, std::string>, CellResult>& cells) {
  std::map<std::string, int> count;
  for (const auto& [key, r] : cells) {
    if (!r.protocol.empty()) ++count[r.protocol];
  }
  if (count.empty()) return "";
  const std::string shared = std::max_element(count.begin(), count.end(), [](const auto& a, const auto& b) {
                               return a.second < b.second;
                             })->first;
  std::string md = absl::StrCat("\n**Protocol** (every cell unless listed below; dataset and clients are the column's): ",
                                shared, ".\n");
  std::string rows;
  for (const proto::Row& row : t.rows()) {
    std::map<std::string, std::vector<std::string>> by_card;  // card -> columns, where not `shared`
    // params -> columns, in column order of first use (a figure may set them per cell).
    std::vector<std::pair<std::string, std::vector<std::string>>> by_params;
    for (const proto::Column& c : t.columns()) {
      const CellResult& r = Lookup(cells, row.key(), c.key());
      if (!r.protocol.empty() && r.protocol != shared) by_card[r.protocol].push_back(Label(c));
      if (r.params.empty()) continue;
      auto it = std::find_if(by_params.begin(), by_params.end(), [&](const auto& p) { return p.first == r.params; });
      if (it == by_params.end()) it = by_params.insert(by_params.end(), {r.params, {}});
      it->second.push_back(Label(c));
    }
    if (by_card.empty() && by_params.empty()) continue;
    absl::StrAppend(&rows, "- ", Label(row), ":",
                    by_params.size() == 1 ? absl::StrCat(" `", by_params[0].first, "`") : "", "\n");
    if (by_params.size() > 1) {
      for (const auto& [params, columns] : by_params) {
        absl::StrAppend(&rows, "  - ", absl::StrJoin(columns, ", "), ": `", params, "`\n");
      }
    }
    // Only the parts of a card that differ from the shared one.
    const std::vector<std::string> shared_parts = absl::StrSplit(shared, "; ");
    for (const auto& [card, columns] : by_card) {
      std::vector<std::string> differ;
      for (absl::string_view part : absl::StrSplit(card, "; ")) {
        if (std::find(shared_parts.begin(), shared_parts.end(), part) == shared_parts.end()) differ.emplace_back(part);
      }
      absl::StrAppend(&rows, "  - ", absl::StrJoin(columns, ", "), ": ", absl::StrJoin(differ, "; "), "\n");
    }
  }
  if (!rows.empty()) absl::StrAppend(&md, "\n", rows);
  return md;
}

}  // namespace fgl::experiments
