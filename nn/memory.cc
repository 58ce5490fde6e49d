#include "nn/memory.h"

#include <malloc.h>

namespace fgl::nn {

void ReuseFreedTensorMemory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 128 << 20);
}

}  // namespace fgl::nn
