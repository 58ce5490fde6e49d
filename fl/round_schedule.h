// Who trains in each round and with which seeds: the same on every side of a federation, so a run
// across processes draws exactly the simulator's numbers.
#ifndef FGL_FL_ROUND_SCHEDULE_H_
#define FGL_FL_ROUND_SCHEDULE_H_

#include <vector>

#include "fl/algorithm.h"
#include "fl/federation.h"

namespace fgl::fl {

// Number of clients sampled per round, and which ones in `round` (ascending ids).
int ClientsPerRound(const FederationOptions& o, int num_clients);
// The same for the spec's own clients: round(client_fraction × clients), at least 1. A method
// reads it from MethodConfig::spec; equal to spec.clients(), every client trains in every round,
// so state the next broadcast overwrites need not be kept (FedSage+'s NeighGen).
int ClientsPerRound(const proto::FederationSpec& spec);
std::vector<int> SampleClients(const FederationOptions& o, int round, int num_clients);

// The round's seed, and the seed client `client` trains with in that round.
RoundInfo ServerRound(const FederationOptions& o, int round, int exchange = 0);
RoundInfo ClientRound(const RoundInfo& server_round, int client);

}  // namespace fgl::fl

#endif  // FGL_FL_ROUND_SCHEDULE_H_
