// CHECKPOINT_DIR/peak_rss_bytes: the largest resident set of a resumable run's processes, one
// decimal number. //experiments:run rewrites it after every round; the table runner reads it so
// that a resumed run's record keeps its earlier processes' peak.
#ifndef FGL_EXPERIMENTS_PEAK_FILE_H_
#define FGL_EXPERIMENTS_PEAK_FILE_H_

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

namespace fgl::experiments {

inline std::string PeakFilePath(const std::string& checkpoint_dir) { return checkpoint_dir + "/peak_rss_bytes"; }

// The recorded peak in bytes; 0 when absent or unreadable.
inline int64_t ReadPeakFile(const std::string& path) {
  std::ifstream in(path);
  int64_t bytes = 0;
  return in >> bytes && bytes > 0 ? bytes : 0;
}

// Replaces the file at once (a temporary file, then a rename); a failure is ignored: the peak is
// bookkeeping, and a full disk must not stop a run.
inline void WritePeakFile(const std::string& path, int64_t bytes) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << bytes << "\n";
    out.close();
    if (!out) return;
  }
  std::rename(tmp.c_str(), path.c_str());
}

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_PEAK_FILE_H_
