// The table runner's child processes and the memory they hold: starting a run with its output to
// a log, a command's output, a process's resident set and the machine's /proc/meminfo.
#ifndef FGL_EXPERIMENTS_RUN_PROCESS_H_
#define FGL_EXPERIMENTS_RUN_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fgl::experiments {

// Starts `args` (args[0] a path) with stdout and stderr to the file `log`; its pid, -1 when it
// cannot start.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log);

// The standard output of a command (found on PATH), trimmed; empty when it cannot run or fails.
std::string CommandOutput(const std::vector<std::string>& args);

// A process's resident set now (/proc/<pid>/statm), 0 when it cannot be read.
int64_t ResidentBytes(pid_t pid);

// A field of /proc/meminfo in bytes ("MemTotal", "MemAvailable"); 0 when it cannot be read.
int64_t MemInfoBytes(const std::string& field);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_RUN_PROCESS_H_
