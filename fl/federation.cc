#include "fl/federation.h"

#include <memory>

#include <google/protobuf/text_format.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace fgl::fl {

proto::EvalProtocol FederationOptions::eval() const {
  proto::EvalProtocol e = spec.eval();
  // Resolving fills every setting (fl/federation_spec.h); an UNSPECIFIED one here would score
  // the run under another protocol without a word (round: BEST_TEST, the optimistic one).
  CHECK(e.model() != proto::EvalProtocol::MODEL_UNSPECIFIED && e.weighting() != proto::EvalProtocol::WEIGHTING_UNSPECIFIED &&
        e.round() != proto::EvalProtocol::ROUND_UNSPECIFIED)
      << "FederationOptions::eval() on an unresolved spec";
  if (spec.method() == "local") e.set_model(proto::EvalProtocol::LOCAL);
  return e;
}

std::string FederationOptions::Fingerprint() const {
  proto::FederationSpec keyed = spec;
  keyed.clear_data_dir();
  keyed.clear_rounds();
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  UseCanonicalEvalText(&printer);  // the text of before issue #67: checkpoints written then still match
  printer.PrintToString(keyed, &text);
  return absl::StrCat(text, "|seed=", seed, "|device=", device);
}

namespace {

std::string Lowercase(const std::string& name) { return absl::AsciiStrToLower(name); }

}  // namespace

std::string EvalCard(const proto::EvalProtocol& e) {
  const proto::EarlyStop& stop = e.early_stop();
  return absl::StrCat("model=", Lowercase(proto::EvalProtocol::Model_Name(e.model())),
                      " weighting=", Lowercase(proto::EvalProtocol::Weighting_Name(e.weighting())), " round=",
                      Lowercase(proto::EvalProtocol::Round_Name(e.round())),
                      e.round() == proto::EvalProtocol::BEST_TEST ? "(optimistic)" : "",
                      " dropout_at_eval=", e.dropout_at_eval() ? "on" : "off",
                      e.global_test() == proto::EvalProtocol::WHOLE_GRAPH ? " global_test=whole_graph" : "",
                      stop.loss_ratio() > 0
                          ? absl::StrCat(" early_stop=after_", stop.after_round(), "_loss_x", stop.loss_ratio())
                          : "");
}

namespace {

using google::protobuf::TextFormat;

// An enum setting printed as the string it was: its value's lowercase name in quotes.
class QuotedLowercaseEnum : public TextFormat::FastFieldValuePrinter {
 public:
  void PrintEnum(int32_t /*val*/, const std::string& name, TextFormat::BaseTextGenerator* generator) const override {
    generator->PrintString(absl::StrCat("\"", Lowercase(name), "\""));
  }
};

void RegisterQuotedSettings(TextFormat::Printer* printer) {
  const google::protobuf::Descriptor* d = proto::EvalProtocol::descriptor();
  for (const char* name : {"model", "weighting", "round", "global_test"}) {
    CHECK(printer->RegisterFieldValuePrinter(d->FindFieldByName(name), new QuotedLowercaseEnum)) << name;
  }
}

// EvalProtocol's fields in declaration order (the enums sit where the strings were; their new
// field numbers alone would print them after dropout_at_eval and early_stop).
class EvalInDeclarationOrder : public TextFormat::MessagePrinter {
 public:
  void Print(const google::protobuf::Message& message, bool single_line_mode,
             TextFormat::BaseTextGenerator* generator) const override {
    TextFormat::Printer printer;
    printer.SetSingleLineMode(single_line_mode);
    printer.SetPrintMessageFieldsInIndexOrder(true);
    RegisterQuotedSettings(&printer);
    std::string text;
    printer.PrintToString(message, &text);
    generator->PrintString(text);
  }
};

}  // namespace

void UseCanonicalEvalText(TextFormat::Printer* printer) {
  auto eval_printer = std::make_unique<EvalInDeclarationOrder>();
  // The printer owns it once registered; false: this printer has it already.
  if (printer->RegisterMessagePrinter(proto::EvalProtocol::descriptor(), eval_printer.get())) eval_printer.release();
}

}  // namespace fgl::fl
