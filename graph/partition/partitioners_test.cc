#include <algorithm>
#include <set>

#include "gmock/gmock.h"
#include "graph/csbm.h"
#include "graph/partition/louvain_partitioner.h"
#include "graph/partition/partitioner_registry.h"
#include "graph/testing/tiny_graphs.h"
#include "gtest/gtest.h"
#include "third_party/absl_ext/status_matchers.h"

namespace fgl::graph {
namespace {

using ::fgl::testing::StatusIs;
using ::testing::HasSubstr;

Dataset Csbm(int64_t n) {
  CsbmOptions o;
  o.num_nodes = n;
  auto d = MakeCsbm(o, 99);
  CHECK(d.ok());
  return *std::move(d);
}

// Every node exactly once.
void ExpectCoversOnce(const Partition& p, int64_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& c : p.clients)
    for (int64_t v : c) ++seen[v];
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), n);
}

TEST(LouvainPartitionerTest, SameSeedSameAssignmentTrianglesApart) {
  const Dataset d = testing::TinyDataset(testing::TwoTrianglesJoinedByOneEdge(), 2);
  LouvainPartitioner louvain(LouvainOptions{.resolution = 1.0, .delta = 0});
  ASSERT_OK_AND_ASSIGN(Partition a, louvain.Run(d, 2, 7));
  ASSERT_OK_AND_ASSIGN(Partition b, louvain.Run(d, 2, 7));
  EXPECT_EQ(a.clients, b.clients);
  ExpectCoversOnce(a, 6);
  // The two triangles land on different clients.
  auto client_of = [&](int64_t v) {
    for (int k = 0; k < 2; ++k)
      if (std::count(a.clients[k].begin(), a.clients[k].end(), v)) return k;
    return -1;
  };
  EXPECT_NE(client_of(0), client_of(5));
  EXPECT_EQ(client_of(0), client_of(2));
}

TEST(LouvainPartitionerTest, BalancedWithinDeltaWhenCommunitiesAreSmall) {
  // 60 tight classes of 50 nodes: Louvain communities are far below N/K - delta, so packing
  // can balance. (A graph with a few giant communities cannot be balanced by this packing:
  // the cut remainders do not fit anywhere, as in OpenFGL.)
  CsbmOptions o;
  o.num_nodes = 3000;
  o.num_classes = 60;
  o.homophily = 0.95;
  ASSERT_OK_AND_ASSIGN(const Dataset d, MakeCsbm(o, 4));
  for (int k : {5, 10, 20}) {
    ASSERT_OK_AND_ASSIGN(auto p, MakePartitioner("louvain"));
    ASSERT_OK_AND_ASSIGN(Partition part, p->Run(d, k, 2024));
    ASSERT_EQ(part.num_clients(), k);
    ExpectCoversOnce(part, 3000);
    for (const auto& c : part.clients) {
      EXPECT_LE(std::abs(static_cast<int64_t>(c.size()) - 3000 / k), 20) << "K=" << k;
    }
  }
}

TEST(LouvainPartitionerTest, LeidenSeparatesTwoTrianglesDeterministically) {
  const Dataset d = testing::TinyDataset(testing::TwoTrianglesJoinedByOneEdge(), 2);
  LouvainPartitioner leiden(LouvainOptions{
      .resolution = 1.0, .delta = 0, .algorithm = CommunityAlgorithm::kLeiden});
  ASSERT_OK_AND_ASSIGN(Partition a, leiden.Run(d, 2, 7));
  ASSERT_OK_AND_ASSIGN(Partition b, leiden.Run(d, 2, 7));
  EXPECT_EQ(a.clients, b.clients);
  ExpectCoversOnce(a, 6);
  std::vector<int64_t> first = a.clients[0];
  std::sort(first.begin(), first.end());
  EXPECT_TRUE(first == (std::vector<int64_t>{0, 1, 2}) || first == (std::vector<int64_t>{3, 4, 5}))
      << "client 0 holds " << first.size() << " nodes, not one triangle";
}

// `louvain:algorithm=leiden` only swaps the community detection: its clients are exactly
// PackCommunities of Leiden's communities (the multilevel path's packing), so they obey the same
// invariants: K clients, every node once, N/K ± delta when communities are small, one partition
// per seed.
TEST(LouvainPartitionerTest, LeidenPacksClientsAsMultilevelDoes) {
  CsbmOptions o;
  o.num_nodes = 3000;
  o.num_classes = 60;
  o.homophily = 0.95;
  ASSERT_OK_AND_ASSIGN(const Dataset d, MakeCsbm(o, 4));
  const LouvainPartitioner leiden(LouvainOptions{.algorithm = CommunityAlgorithm::kLeiden});
  const LouvainPartitioner multilevel;
  for (int k : {5, 10, 20}) {
    ASSERT_OK_AND_ASSIGN(auto spec, MakePartitioner("louvain:algorithm=leiden"));
    ASSERT_OK_AND_ASSIGN(Partition part, spec->Run(d, k, 2024));
    ASSERT_EQ(part.num_clients(), k);
    ExpectCoversOnce(part, 3000);
    EXPECT_OK(ValidatePartition(part, 3000, /*disjoint=*/true));
    for (const auto& c : part.clients) {
      EXPECT_LE(std::abs(static_cast<int64_t>(c.size()) - 3000 / k), 20) << "K=" << k;
    }
    ASSERT_OK_AND_ASSIGN(Partition again, spec->Run(d, k, 2024));
    EXPECT_EQ(part.clients, again.clients) << "K=" << k;
    // The same packing as the multilevel path, applied to Leiden's communities.
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> communities, leiden.Communities(d, 2024));
    ASSERT_OK_AND_ASSIGN(Partition packed, PackCommunities(communities, k, 20, true));
    EXPECT_EQ(part.clients, packed.clients) << "K=" << k;
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> ml_communities, multilevel.Communities(d, 2024));
    ASSERT_OK_AND_ASSIGN(Partition ml_packed, PackCommunities(ml_communities, k, 20, true));
    ASSERT_OK_AND_ASSIGN(Partition ml, multilevel.Run(d, k, 2024));
    EXPECT_EQ(ml.clients, ml_packed.clients) << "K=" << k;
  }
  // The seed reaches igraph's RNG: some other seed gives other communities.
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> c1, leiden.Communities(d, 1));
  bool differs = false;
  for (uint64_t seed = 2; seed < 6 && !differs; ++seed) {
    ASSERT_OK_AND_ASSIGN(std::vector<int64_t> c, leiden.Communities(d, seed));
    differs = c != c1;
  }
  EXPECT_TRUE(differs);
}

// Multilevel specs keep the fingerprint (the cache key and the run records' protocol) they had
// before Leiden existed; Leiden's options appear only with algorithm=leiden.
TEST(LouvainPartitionerTest, FingerprintChangesOnlyForLeiden) {
  for (const std::string spec : {"louvain", "louvain:algorithm=multilevel"}) {
    ASSERT_OK_AND_ASSIGN(auto p, MakePartitioner(spec));
    EXPECT_EQ(p->Fingerprint(), "louvain(resolution=1,delta=20,rebalance=1,class_coverage_fix=0)");
  }
  ASSERT_OK_AND_ASSIGN(auto fix,
                       MakePartitioner("louvain:class_coverage_fix=true,rebalance=false"));
  EXPECT_EQ(fix->Fingerprint(), "louvain(resolution=1,delta=20,rebalance=0,class_coverage_fix=1)");
  ASSERT_OK_AND_ASSIGN(auto leiden, MakePartitioner("louvain:algorithm=leiden"));
  EXPECT_EQ(leiden->Fingerprint(),
            "louvain(resolution=1,delta=20,rebalance=1,class_coverage_fix=0,algorithm=leiden,"
            "beta=0.01,iterations=2)");
  ASSERT_OK_AND_ASSIGN(auto tuned,
                       MakePartitioner("louvain:algorithm=leiden,resolution=0.5,iterations=3"));
  EXPECT_EQ(tuned->Fingerprint(),
            "louvain(resolution=0.5,delta=20,rebalance=1,class_coverage_fix=0,algorithm=leiden,"
            "beta=0.01,iterations=3)");
  EXPECT_THAT(MakePartitioner("louvain:algorithm=infomap"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("infomap")));
  EXPECT_THAT(MakePartitioner("louvain:iterations=3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("algorithm=leiden")));
  for (const std::string bad : {"0", "-1"}) {
    EXPECT_THAT(MakePartitioner("louvain:algorithm=leiden,iterations=" + bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(">= 1")));
  }
}

TEST(PackCommunitiesTest, CutsLargeGroupsAndDealsLargestFirst) {
  // 12 nodes, communities {0..7} (8 nodes) and {8..11}; K = 3, delta = 1:
  // group_len_max = 12/3 - 1 = 3 -> groups [0,1,2] [8,9,10] [3,4,5] [11] [6,7] ... sizes <= 3.
  std::vector<int64_t> community = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1};
  // Groups: [0,1,2] [8,9,10] [3,4,5] [11] [6,7]; by size: the three 3s go to owners 0, 1, 2;
  // [6,7] fits nowhere (3 + 2 >= cap 4 + delta 1) and goes to the smallest owner (0);
  // owner 0 is then full and retired, and [11] goes to owner 1.
  ASSERT_OK_AND_ASSIGN(Partition p, PackCommunities(community, 3, 1, /*rebalance=*/false));
  ExpectCoversOnce(p, 12);
  EXPECT_EQ(p.clients[0], (std::vector<int64_t>{0, 1, 2, 6, 7}));
  EXPECT_EQ(p.clients[1], (std::vector<int64_t>{8, 9, 10, 11}));
  EXPECT_EQ(p.clients[2], (std::vector<int64_t>{3, 4, 5}));
}

TEST(PackCommunitiesTest, RebalanceTopsUpShortClients) {
  // 21 nodes in communities of 12, 7, 1 and 1; K = 3 (cap 7), delta = 1. Whatever the plain
  // packing gives, rebalancing must leave 7 ± 1 nodes per client and keep coverage.
  std::vector<int64_t> community = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 3};
  for (bool rebalance : {false, true}) {
    ASSERT_OK_AND_ASSIGN(Partition p, PackCommunities(community, 3, 1, rebalance));
    ExpectCoversOnce(p, 21);
    if (rebalance) {
      for (const auto& c : p.clients) EXPECT_NEAR(static_cast<double>(c.size()), 7.0, 1.0);
    }
  }
}

TEST(PartitionersTest, EachIsDeterministicAndCovers) {
  const Dataset d = Csbm(1000);
  for (const std::string spec : {"louvain", "metis", "metis:recursive_bisection=true",
                                 "label_dirichlet:alpha=0.5", "random"}) {
    ASSERT_OK_AND_ASSIGN(auto p, MakePartitioner(spec));
    ASSERT_OK_AND_ASSIGN(Partition a, p->Run(d, 10, 5));
    ASSERT_OK_AND_ASSIGN(Partition b, p->Run(d, 10, 5));
    EXPECT_EQ(a.clients, b.clients) << spec;
    ExpectCoversOnce(a, 1000);
    EXPECT_OK(ValidatePartition(a, 1000, true));
    if (spec != "louvain" && spec.rfind("label", 0) != 0) {
      ASSERT_OK_AND_ASSIGN(Partition c, p->Run(d, 10, 6));
      EXPECT_NE(a.clients, c.clients) << spec;
    }
  }
}

TEST(PartitionersTest, MetisIsBalancedAndRandomIsExact) {
  const Dataset d = Csbm(1000);
  ASSERT_OK_AND_ASSIGN(auto metis, MakePartitioner("metis"));
  ASSERT_OK_AND_ASSIGN(Partition m, metis->Run(d, 4, 1));
  for (const auto& c : m.clients) EXPECT_NEAR(c.size(), 250, 250 * 0.05);
  ASSERT_OK_AND_ASSIGN(auto random, MakePartitioner("random"));
  ASSERT_OK_AND_ASSIGN(Partition r, random->Run(d, 3, 1));
  EXPECT_EQ(r.clients[0].size(), 333u);
  EXPECT_EQ(r.clients[2].size(), 334u);
}

TEST(PartitionersTest, LabelDirichletSkewGrowsAsAlphaShrinks) {
  const Dataset d = Csbm(2000);
  auto dominant_share = [&](const std::string& spec) {
    auto p = MakePartitioner(spec);
    CHECK(p.ok());
    auto part = (*p)->Run(d, 5, 3);
    CHECK(part.ok()) << part.status();
    double share = 0;
    const int64_t* y = d.labels.data_ptr<int64_t>();
    for (const auto& c : part->clients) {
      std::vector<int64_t> counts(d.num_classes, 0);
      for (int64_t v : c) ++counts[y[v]];
      share += static_cast<double>(*std::max_element(counts.begin(), counts.end())) / c.size();
    }
    return share / part->num_clients();
  };
  EXPECT_GT(dominant_share("label_dirichlet:alpha=0.1"), dominant_share("label_dirichlet:alpha=100") + 0.2);
}

TEST(PartitionersTest, NodeLevelAndFedEgo) {
  const Dataset d = Csbm(1000);
  ASSERT_OK_AND_ASSIGN(auto node_level, MakePartitioner("node_level"));
  ASSERT_OK_AND_ASSIGN(Partition nl, node_level->Run(d, 1000, 1));
  EXPECT_TRUE(nl.server_keeps_topology);
  EXPECT_EQ(nl.clients[17], std::vector<int64_t>{17});
  EXPECT_THAT(node_level->Run(d, 10, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be 1000")));

  ASSERT_OK_AND_ASSIGN(auto fedego, MakePartitioner("fedego:local_fraction=0.3,local_test_nodes=50"));
  ASSERT_OK_AND_ASSIGN(Partition fe, fedego->Run(d, 5, 1));
  int64_t non_isolated = 0;
  for (int64_t v = 0; v < 1000; ++v) non_isolated += d.graph.degree(v) > 0;
  EXPECT_EQ(fe.server_nodes.size(), static_cast<size_t>(0.3 * non_isolated));
  std::set<int64_t> test_nodes(fe.server_nodes.begin(), fe.server_nodes.end());
  for (const auto& c : fe.clients) {
    EXPECT_LE(c.size(), 300u);
    EXPECT_GT(c.size(), 50u);
    for (size_t i = 0; i < c.size(); ++i) {
      const bool is_test = i + 50 >= c.size();
      if (is_test) {
        EXPECT_TRUE(test_nodes.insert(c[i]).second) << "test node reused " << c[i];
      }
    }
  }
  // Global test nodes never appear in a client.
  std::set<int64_t> global(fe.server_nodes.begin(), fe.server_nodes.end());
  for (const auto& c : fe.clients)
    for (int64_t v : c) EXPECT_EQ(global.count(v), 0u);
}

// Note §10.3: each client draws `major_classes` labels and takes major_rate of its nodes from
// them (capped by what is left), the rest uniformly; clients overlap outside their test sets.
TEST(PartitionersTest, FedEgoClientsAreLabelSkewedCappedAndOverlap) {
  CsbmOptions options;
  options.num_nodes = 1200;
  options.num_classes = 6;
  ASSERT_OK_AND_ASSIGN(const Dataset d, MakeCsbm(options, 11));
  const int64_t* y = d.labels.data_ptr<int64_t>();
  // A client's share of its three most frequent classes.
  auto top3_share = [&](const std::vector<int64_t>& client) {
    std::vector<int64_t> counts(d.num_classes, 0);
    for (int64_t v : client) ++counts[y[v]];
    std::sort(counts.rbegin(), counts.rend());
    return static_cast<double>(counts[0] + counts[1] + counts[2]) / client.size();
  };
  ASSERT_OK_AND_ASSIGN(auto skewed, MakePartitioner("fedego:local_fraction=0.3,local_test_nodes=20"));
  ASSERT_OK_AND_ASSIGN(const Partition s, skewed->Run(d, 5, 3));
  ASSERT_OK_AND_ASSIGN(auto flat, MakePartitioner("fedego:local_fraction=0.3,local_test_nodes=20,major_rate=0"));
  ASSERT_OK_AND_ASSIGN(const Partition u, flat->Run(d, 5, 3));
  for (int k = 0; k < 5; ++k) {
    EXPECT_GE(top3_share(s.clients[k]), 0.8) << "client " << k;  // major_rate, plus the rest's share
    EXPECT_LT(top3_share(s.clients[k]), 0.97) << "client " << k;  // the rest spans every class
    EXPECT_LT(top3_share(u.clients[k]), 0.7) << "client " << k;   // 6 balanced classes: about 1/2
  }
  // Training nodes (all but the last 20) repeat across clients.
  std::vector<int> holders(d.num_nodes(), 0);
  for (const auto& c : s.clients)
    for (size_t i = 0; i + 20 < c.size(); ++i) ++holders[c[i]];
  EXPECT_GT(std::count_if(holders.begin(), holders.end(), [](int h) { return h > 1; }), 0);

  // major_rate 1 and local_fraction 1: the major pool is smaller than the client, so the client
  // takes all of it and fills up from the rest: every node outside the global test set with a
  // neighbour outside it.
  ASSERT_OK_AND_ASSIGN(auto all, MakePartitioner("fedego:local_fraction=1,major_rate=1,local_test_nodes=20"));
  ASSERT_OK_AND_ASSIGN(const Partition a, all->Run(d, 1, 5));
  const std::set<int64_t> global(a.server_nodes.begin(), a.server_nodes.end());
  std::set<int64_t> expected;
  for (int64_t v = 0; v < d.num_nodes(); ++v) {
    if (global.count(v)) continue;
    for (int64_t w : d.graph.neighbors(v)) {
      if (!global.count(w)) {
        expected.insert(v);
        break;
      }
    }
  }
  EXPECT_EQ(std::set<int64_t>(a.clients[0].begin(), a.clients[0].end()), expected);
  EXPECT_EQ(a.clients[0].size(), expected.size());
}

TEST(PartitionersTest, ErrorsNameTheProblem) {
  const Dataset d = testing::TinyDataset(testing::PathGraph(4), 2);
  ASSERT_OK_AND_ASSIGN(auto p, MakePartitioner("louvain"));
  EXPECT_THAT(p->Run(d, 5, 1), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("num_clients = 5 exceeds the 4 nodes")));
  EXPECT_THAT(MakePartitioner("lovain"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("lovain")));
  EXPECT_THAT(MakePartitioner("louvain:delat=3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("delat")));
}

}  // namespace
}  // namespace fgl::graph
