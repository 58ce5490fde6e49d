// Every transcribed paper table loads, validates, and resolves every cell to a valid experiment.
#include <dirent.h>

#include <string>
#include <vector>

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
      const bool transcription = t.id() != "fedtad_fig4" && t.id() != "fedtad_table2_protocol" &&
                                 t.id() != "fedtad_table2_baselines";
      if (transcription) EXPECT_TRUE(c.paper().present()) << f << " " << c.row() << "/" << c.column();
      ++cells;
    }
  }
  EXPECT_GT(cells, 900);
}

}  // namespace
}  // namespace fgl::experiments
