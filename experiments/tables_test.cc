// Every transcribed paper table loads, validates, and resolves every cell to a valid experiment.
#include <dirent.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "experiments/spec.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::experiments {
namespace {

std::vector<std::string> TableFiles() {
  std::vector<std::string> out;
  for (const char* paper : {"fedtad", "fedgkc", "fedego", "fedmpa", "nfedgnn"}) {
    const std::string dir = std::string("experiments/") + paper;
    if (DIR* d = opendir(dir.c_str())) {
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name.size() > 10 && name.substr(name.size() - 10) == ".textproto") out.push_back(dir + "/" + name);
      }
      closedir(d);
    }
  }
  return out;
}

TEST(TablesTest, EveryTableLoadsAndEveryCellResolves) {
  const std::vector<std::string> files = TableFiles();
  EXPECT_GE(files.size(), 20u);
  int cells = 0;
  for (const std::string& f : files) {
    ASSERT_OK_AND_ASSIGN(proto::Table t, LoadTable(f));
    EXPECT_FALSE(t.title().empty()) << f;
    for (const proto::Cell& c : t.cells()) {
      ASSERT_OK_AND_ASSIGN(proto::Experiment e, CellExperiment(t, c));
      EXPECT_OK(Resolve(e, f + " " + c.row() + "/" + c.column()).status());
      // Transcribed tables hold only printed cells; a figure (no numbers printed) and a companion
      // table of our own protocol checks may hold cells without a paper value.
      const bool figure = t.id().find("_fig") != std::string::npos;
      const bool transcription = !figure && t.id() != "fedtad_table2_protocol" &&
                                 t.id() != "fedtad_table2_baselines" && t.id() != "nfedgnn_centralized" &&
                                 t.id() != "nfedgnn_review" &&
                                 t.id() != "fedgkc_photo_features" && t.id() != "fedgkc_table2_authors_options" &&
                                 t.id() != "fedtad_openfgl_baselines_reference_partitions" &&
                                 !t.curves_per_column() && !t.grid_heatmap();
      if (transcription) {
        EXPECT_TRUE(c.paper().present()) << f << " " << c.row() << "/" << c.column();
      }
      ++cells;
    }
  }
  EXPECT_GT(cells, 900);
}

// Every committed report lists the result-cache key of each run behind it. The keys the code
// computes today must be those: a change of spec encoding that moved them would silently orphan
// every cached run (and with it the reports' regeneration with --cached_only).
TEST(TablesTest, CommittedReportsKeepTheirResultCacheKeys) {
  int checked = 0;
  for (const auto& paper : std::filesystem::directory_iterator("experiments/reports")) {
    for (const auto& report : std::filesystem::directory_iterator(paper.path())) {
      if (report.path().extension() != ".md") continue;
      // Not a table's report: experiments/authors_code/report.py writes it from the records
      // (authors_code_report_test checks it).
      if (report.path().filename() == "authors_code.md") continue;
      const std::string table_path = absl::StrCat("experiments/", paper.path().filename().string(), "/",
                                                   report.path().stem().string(), ".textproto");
      ASSERT_OK_AND_ASSIGN(proto::Table table, LoadTable(table_path));
      std::ifstream in(report.path());
      bool in_hashes = false;
      for (std::string line; std::getline(in, line);) {
        if (absl::StrContains(line, "<summary>Run keys (")) in_hashes = true;
        if (absl::StrContains(line, "</details>")) in_hashes = false;
        absl::string_view rest = line;
        if (!in_hashes || !absl::ConsumePrefix(&rest, "- ")) continue;
        // "- row/column/seed 2024: `d55ff6cd4e78e6cb`"
        const std::vector<std::string> parts = absl::StrSplit(rest, absl::MaxSplits(": `", 1));
        ASSERT_EQ(parts.size(), 2u) << line;
        const std::vector<std::string> id = absl::StrSplit(parts[0], '/');
        ASSERT_EQ(id.size(), 3u) << line;
        uint64_t seed = 0;
        ASSERT_TRUE(absl::SimpleAtoi(absl::StripPrefix(id[2], "seed "), &seed)) << line;
        const proto::Cell* cell = nullptr;
        for (const proto::Cell& c : table.cells()) {
          if (c.row() == id[0] && c.column() == id[1]) cell = &c;
        }
        ASSERT_NE(cell, nullptr) << report.path() << ": " << line;
        ASSERT_OK_AND_ASSIGN(proto::Experiment e, CellExperiment(table, *cell));
        ASSERT_OK_AND_ASSIGN(proto::Experiment resolved, Resolve(e, table_path));
        EXPECT_EQ(absl::StrCat("`", ResultCacheKey(resolved, seed, kResultVersion), "`"), absl::StrCat("`", parts[1]))
            << report.path() << ": " << line;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 600);
}

}  // namespace
}  // namespace fgl::experiments
