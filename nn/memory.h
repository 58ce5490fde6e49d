// How freed tensor memory is kept for reuse.
#ifndef FGL_NN_MEMORY_H_
#define FGL_NN_MEMORY_H_

namespace fgl::nn {

// glibc hands freed blocks above its mmap threshold (128 KB, raised to the largest block freed so
// far) back to the kernel and trims the heap's free top above twice that, so tensors of a few MB
// are faulted in and zero-filled by the kernel again at every allocation (8% of FedTAD's server
// step). This pins the threshold at glibc's maximum (32 MB) and keeps up to 128 MB of free heap
// top. Blocks above 32 MB (FedSage+'s generator layers) still go back to the kernel at once, so
// peak memory barely moves. Call once, first thing in main; results do not change.
void ReuseFreedTensorMemory();

}  // namespace fgl::nn

#endif  // FGL_NN_MEMORY_H_
