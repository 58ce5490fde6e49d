// The clients of a simulated federation, in this process: each task runs on a pool of `threads`
// workers (one intra-op thread each), and every message is serialised and parsed as a transport
// would, so byte counts are what goes over a wire.
#ifndef FGL_FL_IN_PROCESS_CHANNEL_H_
#define FGL_FL_IN_PROCESS_CHANNEL_H_

#include <memory>
#include <vector>

#include "fl/algorithm.h"
#include "fl/client_channel.h"
#include "fl/federation.h"

namespace fgl::fl {

class InProcessChannel final : public ClientChannel {
 public:
  // `algorithms[k]` runs on `data[k]`; `o` gives the seeds and the worker count.
  InProcessChannel(const FederationOptions& o, std::vector<std::shared_ptr<ClientData>> data,
                   std::vector<std::unique_ptr<ClientAlgorithm>> algorithms);

  int num_clients() const override { return static_cast<int>(algorithms_.size()); }
  std::vector<int> Reachable() override;
  void Exchange(const std::map<int, ClientTask>& tasks,
                const std::function<void(int, ClientAnswer&)>& on_answer) override;
  absl::Status SaveClients(CheckpointWriter& checkpoint) override;
  absl::Status RestoreClients(CheckpointReader& checkpoint) override;

 private:
  ClientAnswer Run(int k, const ClientTask& task);

  const FederationOptions& options_;
  std::vector<std::shared_ptr<ClientData>> data_;
  std::vector<std::unique_ptr<ClientAlgorithm>> algorithms_;
};

}  // namespace fgl::fl

#endif  // FGL_FL_IN_PROCESS_CHANNEL_H_
