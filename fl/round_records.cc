#include "fl/round_records.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "fl/evaluation.h"
#include "fl/run_setup.h"
#include "glog/logging.h"
#include "graph/partition/partitioner_registry.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {

proto::RoundRecord EmptyRoundRecord(int round, int num_clients) {
  proto::RoundRecord rec;
  rec.set_round(round);
  for (int k = 0; k < num_clients; ++k) rec.add_clients()->set_id(k);
  return rec;
}

absl::Status AccumulateReply(ServerAlgorithm& server, const absl::StatusOr<proto::Message>& reply,
                             proto::ClientRoundRecord& client, proto::RoundRecord& round) {
  absl::Status accepted = reply.status();
  if (reply.ok()) {
    // A loss that is not finite stays absent (the model's tensors are checked on their own).
    if (auto loss = reply->scalars().find("train_loss"); loss != reply->scalars().end() && std::isfinite(loss->second)) {
      client.set_train_loss(loss->second);
    }
    accepted = server.Accumulate(*reply);
  }
  if (!accepted.ok()) {
    LOG(WARNING) << "round " << round.round() << ": client " << client.id() << " left out: " << accepted;
    round.set_failed_clients(round.failed_clients() + 1);
    return accepted;
  }
  round.set_participants(round.participants() + 1);
  client.set_participated(true);
  return absl::OkStatus();
}

void SetClientReport(proto::RoundRecord& round, int client, const std::string& name, double value) {
  auto& values = *(*round.mutable_client_reports())[name].mutable_values();
  while (values.size() < round.clients_size()) values.Add(std::numeric_limits<double>::quiet_NaN());
  values[client] = value;
}

proto::RoundRecord WithoutClients(proto::RoundRecord round) {
  round.clear_clients();
  return round;
}

void AddRoundTraffic(const proto::RoundRecord& round, proto::RunResult& result) {
  result.set_bytes_up(result.bytes_up() + round.bytes_up());
  result.set_bytes_down(result.bytes_down() + round.bytes_down());
  for (const auto& [group, bytes] : round.tensor_bytes_up()) {
    (*result.mutable_uploaded_tensor_bytes_by_group())[group] += bytes;
  }
}

absl::StatusOr<std::string> ProtocolCard(const ResolvedOptions& resolved) {
  const FederationOptions& o = *resolved;
  FGL_ASSIGN_OR_RETURN(auto partitioner, graph::MakePartitioner(ResolvedPartitionerSpec(o)));
  // A reference partition is named as the spec names it (relative to the data root), not by
  // where this machine keeps it.
  const std::string partition =
      partitioner->ProvidesSplits() ? o.spec.partitioner() : partitioner->Fingerprint();
  return absl::StrCat(EvalCard(o.eval()), " shared=", o.spec.shared_group().empty() ? "all" : o.spec.shared_group(),
                      " split=", partitioner->ProvidesSplits() ? "partition" : o.spec.split(),
                      " partition=", partition, " clients=", o.spec.clients(),
                      " partition_seed=", o.spec.partition_seed(), o.spec.centralized() ? " centralized" : "");
}

absl::Status CompleteResult(const ResolvedOptions& resolved, proto::FederationResult& result) {
  const FederationOptions& o = *resolved;
  proto::RunResult& p = *result.mutable_result();
  p.set_method(o.spec.method());
  p.set_dataset(o.spec.dataset());
  p.set_clients(o.spec.clients());
  p.set_partitioner(o.spec.partitioner());
  p.set_partition_seed(o.spec.partition_seed());
  p.set_seed(o.seed);
  p.set_model(o.spec.model());
  p.set_rounds(o.spec.rounds());
  p.set_local_epochs(o.spec.local_epochs());
  *p.mutable_spec() = o.spec;
  p.mutable_spec()->clear_data_dir();  // where this machine keeps the data is not the run's
  int64_t tensor_bytes = 0;
  for (const auto& [group, bytes] : p.uploaded_tensor_bytes_by_group()) tensor_bytes += bytes;
  p.set_uploaded_tensor_bytes(tensor_bytes);
  SelectReportedRound(o.eval().round(), result);
  FGL_ASSIGN_OR_RETURN(*p.mutable_protocol(), ProtocolCard(resolved));
  return absl::OkStatus();
}

}  // namespace fgl::fl
