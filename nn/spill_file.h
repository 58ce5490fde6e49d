// Tensors parked on disk while idle: written to an unnamed file (gone with the process) and read
// back bit for bit, so that state a run needs only later does not occupy memory meanwhile.
#ifndef FGL_NN_SPILL_FILE_H_
#define FGL_NN_SPILL_FILE_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace fgl::nn {

class SpillFile {
 public:
  // Writes the CPU tensors to a new unnamed file in `dir` (unlinked at once). The tensors are left
  // as they are: the caller frees them once this succeeds. Errors name the directory.
  static absl::StatusOr<SpillFile> Write(const std::string& dir, const std::vector<torch::Tensor>& tensors);

  // Fresh contiguous tensors with the written sizes, options and bytes, in the written order.
  absl::StatusOr<std::vector<torch::Tensor>> Read() const;

  SpillFile(SpillFile&& other) noexcept;
  SpillFile& operator=(SpillFile&& other) noexcept;
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;
  ~SpillFile();

 private:
  struct Entry {
    int64_t offset = 0;
    std::vector<int64_t> sizes;
    torch::TensorOptions options;
  };
  SpillFile(int fd, std::string dir, std::vector<Entry> entries)
      : fd_(fd), dir_(std::move(dir)), entries_(std::move(entries)) {}
  int fd_ = -1;
  std::string dir_;
  std::vector<Entry> entries_;
};

}  // namespace fgl::nn

#endif  // FGL_NN_SPILL_FILE_H_
