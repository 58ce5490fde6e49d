// Which interrupted run the table runner may resume from its checkpoint (<cache>/<run>.ckpt), and
// the stamp that ties a checkpoint to the code's result and method versions.
#ifndef FGL_EXPERIMENTS_RUN_CHECKPOINT_H_
#define FGL_EXPERIMENTS_RUN_CHECKPOINT_H_

#include <string>

#include "experiments/proto/experiment.pb.h"

namespace fgl::experiments {

// Whether `checkpoint_dir` holds a checkpoint this runner may resume, and the stamp it writes
// there: the checkpoint must come from the same result and method versions (a change of numerics
// bumps one of them; a fingerprint alone would not see it), and a checkpoint that two runs in a
// row could not get past (an out-of-memory kill while resuming, a crash) is dropped.
std::string CheckpointStamp(const proto::Experiment& resolved);
// Drops (deletes) a checkpoint it may not resume, and counts each resumption in `dir`/resumes.
bool UsableCheckpoint(const std::string& dir, const std::string& stamp);

}  // namespace fgl::experiments

#endif  // FGL_EXPERIMENTS_RUN_CHECKPOINT_H_
