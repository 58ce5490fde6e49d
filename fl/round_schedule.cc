#include "fl/round_schedule.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "absl/strings/str_cat.h"
#include "graph/random.h"

namespace fgl::fl {

int ClientsPerRound(const FederationOptions& o, int num_clients) {
  return std::max(1, static_cast<int>(std::lround(o.spec.client_fraction() * num_clients)));
}

int ClientsPerRound(const proto::FederationSpec& spec) {
  return std::max(1, static_cast<int>(std::lround(spec.client_fraction() * spec.clients())));
}

std::vector<int> SampleClients(const FederationOptions& o, int round, int num_clients) {
  const int per_round = ClientsPerRound(o, num_clients);
  std::vector<int> sampled(num_clients);
  std::iota(sampled.begin(), sampled.end(), 0);
  if (per_round < num_clients) {
    graph::Rng rng(o.seed, absl::StrCat("sample/", round));
    rng.Shuffle(sampled);
    sampled.resize(per_round);
    std::sort(sampled.begin(), sampled.end());
  }
  return sampled;
}

RoundInfo ServerRound(const FederationOptions& o, int round, int exchange) {
  const std::string stream =
      exchange == 0 ? absl::StrCat("round/", round) : absl::StrCat("round/", round, "/exchange/", exchange);
  return RoundInfo{round, graph::Rng::Derive(o.seed, stream), exchange};
}

RoundInfo ClientRound(const RoundInfo& server_round, int client) {
  return RoundInfo{server_round.round,
                   graph::Rng::Derive(server_round.seed, absl::StrCat("client/", client)), server_round.exchange};
}

}  // namespace fgl::fl
