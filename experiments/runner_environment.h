// Where the table runner works (its workspace, default cache) and what it records as having
// produced new runs: the code's commit and the machine.
#ifndef FGL_EXPERIMENTS_RUNNER_ENVIRONMENT_H_
#define FGL_EXPERIMENTS_RUNNER_ENVIRONMENT_H_

#include <string>

namespace fgl::experiments {

// The workspace `bazel run` was started in ($BUILD_WORKSPACE_DIRECTORY), else the current directory.
std::string Workspace();

// `path` made absolute against the current directory.
std::string Absolute(const std::string& path);

// The result cache when --cache_dir is not given: $FGL_CACHE_DIR/results, else
// ~/.cache/fgl/results.
std::string DefaultCacheDir();

// `code_commit` when given, else the workspace's HEAD ("+dirty" when tracked files changed;
// "unknown" outside a git checkout).
std::string CodeCommit(const std::string& code_commit);

// The machine in one line: architecture, cores, CPU model, kernel and the pinned CPU kernels.
std::string MachineDescription();

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_RUNNER_ENVIRONMENT_H_
