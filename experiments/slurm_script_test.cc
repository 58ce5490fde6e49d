// The Slurm executor's pure parts: task states from squeue/sacct, --mem and --time, the batch script.
#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "experiments/slurm_executor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fgl::experiments {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

TEST(SlurmScriptTest, ParsesSqueueLinesAndPendingRanges) {
  EXPECT_THAT(ParseTaskStates("77_3 RUNNING\n77_[4-6,9%2] PENDING\n78_0 RUNNING\n", "77"),
              ElementsAre(Pair(3, "RUNNING"), Pair(4, "PENDING"), Pair(5, "PENDING"), Pair(6, "PENDING"),
                          Pair(9, "PENDING")));
}

TEST(SlurmScriptTest, ParsesSacctLinesAndCancelledBy) {
  EXPECT_THAT(ParseTaskStates("77_0|COMPLETED\n77_1|CANCELLED by 0\n77_2|TIMEOUT\n77|FAILED\n", "77"),
              ElementsAre(Pair(0, "COMPLETED"), Pair(1, "CANCELLED"), Pair(2, "TIMEOUT")));
}

TEST(SlurmScriptTest, MemoryAndTimeFromCostsOrDefaults) {
  EXPECT_EQ(SlurmMemoryMib(0, 4), 4096);
  EXPECT_EQ(SlurmMemoryMib(int64_t{1024} * 1024 * 1024, 4), 1024 * 5 / 4 + 512);
  EXPECT_EQ(SlurmTimeMinutes(std::nullopt, 1440), 1440);
  EXPECT_EQ(SlurmTimeMinutes(600, 1440), 25);  // 1.5 x 10 min + 10
}

TEST(SlurmScriptTest, ScriptCarriesTheResourcesAndTheRuns) {
  ArrayScript a;
  a.job_name = "fgl-t";
  a.log_pattern = "/s/arrays/x/task_%a.log";
  a.partition = "cpu";
  a.account = "lab";
  a.mem_mib = 2048;
  a.time_minutes = 30;
  a.max_parallel = 8;
  a.run_binary = "/b/run";
  a.run_args = {"--resume"};
  a.run_dirs = {"/s/runs/a", "/s/runs/it's"};
  const std::string s = BatchScript(a);
  for (const char* line : {"#SBATCH --array=0-1%8\n", "#SBATCH --cpus-per-task=1\n", "#SBATCH --mem=2048M\n",
                           "#SBATCH --time=30\n", "#SBATCH --partition=cpu\n", "#SBATCH --account=lab\n",
                           "#SBATCH --output=/s/arrays/x/task_%a.log\n", "  '/s/runs/it'\\''s'\n",
                           "exec '/b/run' --spec=\"$dir/spec.textproto\" --threads=1 --out=\"$dir/out\" --resume\n"}) {
    EXPECT_THAT(s, HasSubstr(line));
  }
  EXPECT_THAT(s, Not(HasSubstr("--qos")));
  EXPECT_THAT(s, Not(HasSubstr("--deadline")));
  a.deadline = absl::FromUnixSeconds(0);
  EXPECT_THAT(BatchScript(a), HasSubstr("#SBATCH --deadline="));
}

}  // namespace
}  // namespace fgl::experiments
