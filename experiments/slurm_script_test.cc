// The Slurm executor's pure parts: task states from squeue/sacct, --mem and --time, their grouping
// into arrays, the batch script.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "experiments/slurm_executor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fgl::experiments {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::Field;
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

// One array per memory class (powers of two GiB) and, within it, time class (powers of four
// hours), each asking the largest of its tasks; the smallest class first, tasks in their order.
TEST(SlurmScriptTest, GroupsRunsIntoArraysByMemoryThenTimeClass) {
  const std::vector<TaskRequest> requests = {
      {1012, 11},    // 0: a 0.4 GB run (0.4 GB x 1.25 + 512 MiB): <= 1 GiB, <= 1 h
      {20992, 11},   // 1: a 16 GiB run: <= 32 GiB
      {4096, 1440},  // 2: the defaults (4 GB, 24 h): <= 4 GiB, <= 64 h
      {700, 60},     // 3: with 0
      {1025, 30},    // 4: just over 1 GiB: <= 2 GiB
      {3000, 1500},  // 5: with 2
      {800, 61},     // 6: <= 1 GiB, but <= 4 h
      {17000, 50},   // 7: with 1
  };
  const std::vector<ArrayGroup> groups = GroupByResources(requests);
  auto group = [](int64_t mem, int64_t time, std::vector<size_t> tasks) {
    return AllOf(Field(&ArrayGroup::mem_mib, mem), Field(&ArrayGroup::time_minutes, time),
                 Field(&ArrayGroup::tasks, ElementsAreArray(tasks)));
  };
  EXPECT_THAT(groups, ElementsAre(group(1012, 60, {0, 3}), group(800, 61, {6}), group(1025, 30, {4}),
                                  group(4096, 1500, {2, 5}), group(20992, 50, {1, 7})));
  EXPECT_THAT(GroupByResources({}), ::testing::IsEmpty());
  // Equal requests make one array, however many.
  EXPECT_THAT(GroupByResources(std::vector<TaskRequest>(5, {4096, 1440})),
              ElementsAre(group(4096, 1440, {0, 1, 2, 3, 4})));
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
