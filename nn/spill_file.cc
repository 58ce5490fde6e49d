#include "nn/spill_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fgl::nn {
namespace {

// The whole buffer through pwrite or pread (either may move fewer bytes than asked, or be
// interrupted).
template <typename Io, typename Byte>
bool WholeBuffer(Io io, int fd, Byte* data, int64_t bytes, int64_t offset) {
  while (bytes > 0) {
    const ssize_t n = io(fd, data, static_cast<size_t>(bytes), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;  // nothing moved: no errno of its own
    if (n <= 0) return false;
    data += n;
    bytes -= n;
    offset += n;
  }
  return true;
}

int64_t Bytes(const torch::Tensor& t) { return t.numel() * static_cast<int64_t>(t.element_size()); }

}  // namespace

absl::StatusOr<SpillFile> SpillFile::Write(const std::string& dir, const std::vector<torch::Tensor>& tensors) {
  std::string path = dir + "/fgl-spill-XXXXXX";
  const int fd = mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("cannot create a spill file in '", dir, "': ", std::strerror(errno)));
  }
  unlink(path.c_str());  // the open descriptor keeps it; the file goes with it
  SpillFile file(fd, dir, {});
  int64_t offset = 0;
  for (const torch::Tensor& t : tensors) {
    if (!t.device().is_cpu()) {
      return absl::InvalidArgumentError(absl::StrCat("spill file in '", dir, "': a tensor on ", t.device().str()));
    }
    const torch::Tensor c = t.contiguous();
    if (!WholeBuffer(pwrite, fd, static_cast<const char*>(c.data_ptr()), Bytes(c), offset)) {
      return absl::UnavailableError(
          absl::StrCat("cannot spill ", Bytes(c), " bytes to '", dir, "': ", std::strerror(errno)));
    }
    file.entries_.push_back({offset, c.sizes().vec(), c.options()});
    offset += Bytes(c);
  }
  return file;
}

absl::StatusOr<std::vector<torch::Tensor>> SpillFile::Read() const {
  std::vector<torch::Tensor> out;
  out.reserve(entries_.size());
  for (const Entry& e : entries_) {
    torch::Tensor t = torch::empty(e.sizes, e.options);
    if (!WholeBuffer(pread, fd_, static_cast<char*>(t.data_ptr()), Bytes(t), e.offset)) {
      return absl::DataLossError(
          absl::StrCat("cannot read back ", Bytes(t), " bytes spilled to '", dir_, "': ", std::strerror(errno)));
    }
    out.push_back(std::move(t));
  }
  return out;
}

SpillFile::SpillFile(SpillFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), dir_(std::move(other.dir_)), entries_(std::move(other.entries_)) {}

SpillFile& SpillFile::operator=(SpillFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    dir_ = std::move(other.dir_);
    entries_ = std::move(other.entries_);
  }
  return *this;
}

SpillFile::~SpillFile() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace fgl::nn
