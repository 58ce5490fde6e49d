// The clients another system saved (torch.save files in its repository), used as they are:
// the papers' own partitions, so that a run here can use exactly the clients their code used.
#ifndef FGL_GRAPH_PARTITION_REFERENCE_PARTITIONER_H_
#define FGL_GRAPH_PARTITION_REFERENCE_PARTITIONER_H_

#include <string>

#include "graph/partition/partitioner.h"

namespace fgl::graph {

// Reads one of two layouts from `dir` (../shared/data/README.md, "Reference partitions"):
//  * FedTAD: `data<k>.pt`, a PyG Data with x, edge_index, y, local train/val/test_idx masks and
//    global_{train,val,test}_idx masks over the whole graph. The files carry no node ids: each
//    node is found by its (x row, y) among the dataset's nodes, restricted to the global mask of
//    its split and to nodes not yet taken; nodes still ambiguous are settled by their stored
//    edges, and exact twins (equal rows, labels and neighbours, e.g. Cora's 1033 and 1586, which
//    no stored field tells apart and which give the same client data either way) by id order.
//  * OpenFGL: `data_<k>.pt` (x, edge_index, y, global_map: local -> global id) and
//    `node_cls/{train,val,test}_<k>.pt` (local masks) with `node_cls/glb_*_<k>.pkl` (the same
//    nodes as global ids, cross-checked).
// Each client keeps its stored local node order, and Partition::client_splits its stored masks.
// Every client is checked against `dataset`: x rows and labels equal the dataset's at the
// mapped ids, and the stored edges equal the dataset's edges among the client's nodes, exactly
// (all three sets on this machine match with no difference, so none is tolerated); any
// difference is InvalidArgument naming the file, the client and the first differing node or
// edge, with the counts. Clients must be disjoint; they need not cover the graph. `num_clients`
// must be the number of client files; the seed is unused. Not cached (Cacheable() is false):
// loading is cheap and the cache format holds no splits. complexity: O(file sizes + N F + E log E).
class ReferencePartitioner final : public Partitioner {
 public:
  explicit ReferencePartitioner(std::string dir) : dir_(std::move(dir)) {}
  absl::StatusOr<Partition> Run(const Dataset& dataset, int num_clients,
                                uint64_t seed) const override;
  std::string Fingerprint() const override { return "reference(dir=" + dir_ + ")"; }
  bool Cacheable() const override { return false; }
  bool ProvidesSplits() const override { return true; }

 private:
  std::string dir_;
};

}  // namespace fgl::graph

#endif  // FGL_GRAPH_PARTITION_REFERENCE_PARTITIONER_H_
