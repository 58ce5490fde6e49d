#include "fl/round_records.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "fl/run_setup.h"
#include "glog/logging.h"
#include "graph/partition/partitioner_registry.h"
#include "third_party/absl_ext/status_macros.h"

namespace fgl::fl {

absl::Status AccumulateReply(ServerAlgorithm& server, const absl::StatusOr<proto::Message>& reply,
                             ClientRecord& client, RoundRecord& round) {
  absl::Status accepted = reply.status();
  if (reply.ok()) {
    if (auto loss = reply->scalars().find("train_loss"); loss != reply->scalars().end()) {
      client.train_loss = loss->second;
    }
    accepted = server.Accumulate(*reply);
  }
  if (!accepted.ok()) {
    LOG(WARNING) << "round " << round.round << ": client " << client.id << " left out: " << accepted;
    ++round.failed_clients;
    return accepted;
  }
  ++round.participants;
  client.participated = true;
  return absl::OkStatus();
}

absl::StatusOr<std::string> ProtocolCard(const FederationOptions& o) {
  FGL_ASSIGN_OR_RETURN(auto partitioner, graph::MakePartitioner(ResolvedPartitionerSpec(o)));
  // A reference partition is named as the spec names it (relative to the data root), not by
  // where this machine keeps it.
  const std::string partition =
      partitioner->ProvidesSplits() ? o.spec.partitioner() : partitioner->Fingerprint();
  return absl::StrCat(o.eval().Card(), " shared=", o.spec.shared_group().empty() ? "all" : o.spec.shared_group(),
                      " split=", partitioner->ProvidesSplits() ? "partition" : o.spec.split(),
                      " partition=", partition, " clients=", o.spec.clients(),
                      " partition_seed=", o.spec.partition_seed());
}

void ApplyClientReports(const proto::RoundRecord& p, RoundRecord& r) {
  for (const auto& [name, values] : p.client_reports()) {
    for (size_t k = 0; k < r.clients.size() && k < static_cast<size_t>(values.values_size()); ++k) {
      if (std::isfinite(values.values(k))) r.clients[k].reports[name] = values.values(k);
    }
  }
}

RoundRecord RoundRecordFromProto(const proto::RoundRecord& p) {
  RoundRecord r;
  r.round = p.round();
  r.val_acc = p.val_acc();
  r.test_acc = p.test_acc();
  r.client_mean_test_acc = p.client_mean_test_acc();
  if (p.has_global_test_acc()) r.global_test_acc = p.global_test_acc();
  r.participants = p.participants();
  r.failed_clients = p.failed_clients();
  r.bytes_up = p.bytes_up();
  r.bytes_down = p.bytes_down();
  r.seconds = p.seconds();
  if (p.has_train_loss()) r.train_loss = p.train_loss();
  if (p.has_test_loss()) r.test_loss = p.test_loss();
  r.tensor_bytes_up.insert(p.tensor_bytes_up().begin(), p.tensor_bytes_up().end());
  for (const proto::ClientRoundRecord& q : p.clients()) {
    ClientRecord& c = r.clients.emplace_back();
    c.id = q.id();
    c.participated = q.participated();
    if (q.has_train_loss()) c.train_loss = q.train_loss();
    c.val_acc = q.val_acc();
    c.test_acc = q.test_acc();
    c.bytes_up = q.bytes_up();
    c.bytes_down = q.bytes_down();
    c.seconds = q.seconds();
  }
  ApplyClientReports(p, r);
  return r;
}

proto::RoundRecord RoundRecordToProto(const RoundRecord& r, bool with_clients) {
  proto::RoundRecord p;
  p.set_round(r.round);
  p.set_val_acc(r.val_acc);
  p.set_test_acc(r.test_acc);
  p.set_client_mean_test_acc(r.client_mean_test_acc);
  if (std::isfinite(r.global_test_acc)) p.set_global_test_acc(r.global_test_acc);
  p.set_participants(r.participants);
  p.set_failed_clients(r.failed_clients);
  p.set_bytes_up(r.bytes_up);
  p.set_bytes_down(r.bytes_down);
  p.set_seconds(r.seconds);
  if (std::isfinite(r.train_loss)) p.set_train_loss(r.train_loss);
  if (std::isfinite(r.test_loss)) p.set_test_loss(r.test_loss);
  p.mutable_tensor_bytes_up()->insert(r.tensor_bytes_up.begin(), r.tensor_bytes_up.end());
  for (size_t k = 0; k < r.clients.size(); ++k) {
    for (const auto& [name, value] : r.clients[k].reports) {
      auto& values = *(*p.mutable_client_reports())[name].mutable_values();
      while (values.size() < static_cast<int>(r.clients.size())) values.Add(std::numeric_limits<double>::quiet_NaN());
      values[k] = value;
    }
  }
  if (!with_clients) return p;
  for (const ClientRecord& c : r.clients) {
    proto::ClientRoundRecord& q = *p.add_clients();
    q.set_id(c.id);
    q.set_participated(c.participated);
    if (std::isfinite(c.train_loss)) q.set_train_loss(c.train_loss);
    q.set_val_acc(c.val_acc);
    q.set_test_acc(c.test_acc);
    q.set_bytes_up(c.bytes_up);
    q.set_bytes_down(c.bytes_down);
    q.set_seconds(c.seconds);
  }
  return p;
}

proto::RunResult RunResultToProto(const FederationOptions& o, const FederationResult& r) {
  proto::RunResult p;
  p.set_method(o.spec.method());
  p.set_dataset(o.spec.dataset());
  p.set_clients(o.spec.clients());
  p.set_partitioner(o.spec.partitioner());
  p.set_partition_seed(o.spec.partition_seed());
  p.set_seed(o.seed);
  p.set_model(o.spec.model());
  p.set_rounds(o.spec.rounds());
  p.set_local_epochs(o.spec.local_epochs());
  p.set_test_acc(r.test_acc);
  p.set_val_acc(r.val_acc);
  p.set_client_mean_test_acc(r.client_mean_test_acc);
  if (std::isfinite(r.global_test_acc)) p.set_global_test_acc(r.global_test_acc);
  p.set_best_round(r.reported_round);
  if (r.stopped_round > 0) p.set_stopped_round(r.stopped_round);
  p.set_bytes_up(r.bytes_up);
  p.set_bytes_down(r.bytes_down);
  p.set_preparation_bytes_up(r.preparation_bytes_up);
  int64_t tensor_bytes = 0;
  for (const auto& [group, bytes] : r.tensor_bytes_up) {
    (*p.mutable_uploaded_tensor_bytes_by_group())[group] = bytes;
    tensor_bytes += bytes;
  }
  p.set_uploaded_tensor_bytes(tensor_bytes);
  for (const auto& [name, values] : r.final_client_reports) {
    auto& out = (*p.mutable_final_client_reports())[name];
    out.mutable_values()->Add(values.begin(), values.end());
  }
  p.set_wall_s(r.wall_s);
  p.set_train_s(r.train_s);
  p.set_protocol(r.protocol);
  for (int64_t n : r.client_sizes) p.add_client_sizes(n);
  *p.mutable_spec() = o.spec;
  p.mutable_spec()->clear_data_dir();  // where this machine keeps the data is not the run's
  return p;
}

}  // namespace fgl::fl
