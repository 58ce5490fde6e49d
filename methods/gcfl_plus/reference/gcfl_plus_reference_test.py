"""Checks the GCFL+ port (gcfl_plus_reference.py) against values computed by hand."""
import math
import os
import sys
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.gcfl_plus.reference import gcfl_plus_reference as ref  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import subgraph  # noqa: E402
from methods.reference.pyg import NxGraph  # noqa: E402


class FakeClient:
    """What the server reads of a client: W, dW (one parameter 'w'), train_size."""

    def __init__(self, cid, dw, w=(0.0, 0.0), size=1):
        self.id = cid
        self.W = {'w': torch.tensor(w, dtype=torch.float32)}
        self.dW = {'w': torch.tensor(dw, dtype=torch.float32)}
        self.train_size = size


class FakeFederation(ref.GcflPlusFederation):
    """cluster_step on fake clients, with a server whose W is the single key 'w'."""

    def __init__(self, clients, seqs, cluster_indices, eps1=0.05, eps2=0.1, seq_length=3, warmup_rounds=20):
        self.clients = clients
        self.server = ref.Server(torch.nn.Linear(2, 1, bias=False))
        self.server.W = {'w': None}
        self.seqs_grads = seqs
        self.cluster_indices = cluster_indices
        self.EPS_1, self.EPS_2, self.seq_length, self.standardize = eps1, eps2, seq_length, False
        self.warmup_rounds = warmup_rounds
        self.acc_clients = [0.5] * len(clients)


# dW [1, 0], [-1, 0], [0, 0.03]: mean [0, 0.01] -> ||.|| = 0.01 < 0.05; max ||dW|| = 1 > 0.1.
SPLITTABLE = ([1.0, 0.0], [-1.0, 0.0], [0.0, 0.03])
# Sequences: d01 = sqrt(0.01) = 0.1, d02 = sqrt(3 * 16) = 6.928, d12 = sqrt(16 + 16 + 15.21) = 6.871.
SEQS = {0: [1.0, 1.0, 1.0], 1: [1.0, 1.0, 1.1], 2: [5.0, 5.0, 5.0]}


class DtwTest(unittest.TestCase):

    def test_distance_by_hand(self):
        # [0, 1, 2] vs [0, 2]: squared costs rows (0: 0 4) (1: 1 1) (2: 4 0); accumulated
        # D = (0 4) (1 1) (5 1): sqrt(1) = 1.
        self.assertAlmostEqual(ref.dtw_distance([0, 1, 2], [0, 2]), 1.0, places=12)
        self.assertAlmostEqual(ref.dtw_distance([1, 1, 1], [2, 2, 2]), math.sqrt(3), places=12)
        self.assertEqual(ref.dtw_distance([1, 2, 3], [1, 2, 3]), 0.0)
        # Warping: [0, 0, 1] vs [0, 1, 1] aligns exactly.
        self.assertEqual(ref.dtw_distance([0, 0, 1], [0, 1, 1]), 0.0)
        self.assertAlmostEqual(ref.dtw_distance([1, 1, 1.1], [5, 5, 5]), math.sqrt(47.21), places=12)

    def test_matrix_is_symmetric_with_zero_diagonal(self):
        d = ref.dtw_distance_matrix([SEQS[0], SEQS[1], SEQS[2]])
        expected = np.array([[0, 0.1, math.sqrt(48)], [0.1, 0, math.sqrt(47.21)],
                             [math.sqrt(48), math.sqrt(47.21), 0]])
        np.testing.assert_allclose(d, expected, rtol=0, atol=1e-12)

    def test_standardize_divides_by_population_std(self):
        server = ref.Server(torch.nn.Linear(1, 1))
        # [1, 3] / std 1 and [2, 6] / std 2 are both [1, 3]; [0, 4] / std 2 = [0, 2]:
        # DTW([1, 3], [0, 2]) = sqrt(1 + 1).
        d = server.compute_pairwise_distances([[1.0, 3.0], [2.0, 6.0], [0.0, 4.0]], standardize=True)
        self.assertEqual(d[0, 1], 0.0)
        self.assertAlmostEqual(d[0, 2], math.sqrt(2), places=12)
        d = server.compute_pairwise_distances([[1.0, 3.0], [2.0, 6.0]], standardize=False)
        self.assertAlmostEqual(d[0, 1], math.sqrt(1 + 9), places=12)


class StoerWagnerTest(unittest.TestCase):

    def test_two_tight_pairs_traced_by_hand(self):
        # w01 = w23 = 10, w02 = w13 = 1, w03 = w12 = 0. Phase 0 from node 0 adds 1, then 2
        # (tie -1 vs -1: 2 was inserted first), cut-of-phase {3} = 11, contract 3 into 2;
        # phase 1 adds 1, cut-of-phase {2, 3} = 2 (best), contract 2 into 1; phase 2: 11.
        # The best phase removed node 2, whose side is {2, 3}: partition ([2, 3], [0, 1]).
        sim = np.array([[0, 10, 1, 0], [10, 0, 0, 1], [1, 0, 0, 10], [0, 1, 10, 0]], dtype=float)
        g = NxGraph()
        for i in range(4):
            for j in range(4):
                g.add_edge(i, j, weight=sim[i][j])
        cut, partition = ref.stoer_wagner(g)
        self.assertEqual(cut, 2)
        self.assertEqual(partition, ([2, 3], [0, 1]))
        c1, c2 = ref.Server(torch.nn.Linear(1, 1)).min_cut(sim, [5, 6, 7, 8])
        self.assertEqual((c1, c2), ([7, 8], [5, 6]))

    def test_networkx_docstring_example(self):
        g = NxGraph()
        for u, v, w in [('x', 'a', 3), ('x', 'b', 1), ('a', 'c', 3), ('b', 'c', 5), ('b', 'd', 4),
                        ('d', 'e', 2), ('c', 'y', 2), ('e', 'y', 3)]:
            g.add_edge(u, v, weight=w)
        cut, (a, b) = ref.stoer_wagner(g)
        self.assertEqual(cut, 4)  # networkx's docstring
        crossing = sum(e['weight'] for u, nbrs in g.adj.items() for v, e in nbrs.items() if u in a and v in b)
        self.assertEqual(crossing, 4)
        self.assertEqual(set(a) | set(b), set(g.nodes))

    def test_heap_ties_go_to_the_earliest_insertion(self):
        h = ref.BinaryHeap()
        h.insert('a', -1)
        h.insert('b', -2)
        h.insert('c', -2)
        self.assertFalse(h.insert('a', -1))  # not lowered: unchanged
        self.assertTrue(h.insert('a', -2))   # lowered: re-inserted after b and c
        self.assertEqual([h.pop()[0] for _ in range(3)], ['b', 'c', 'a'])

    def test_rejects_a_disconnected_graph(self):
        g = NxGraph()
        g.add_edge(0, 1, weight=1)
        g.add_edge(2, 3, weight=1)
        with self.assertRaises(ValueError):
            ref.stoer_wagner(g)


class ClusterStepTest(unittest.TestCase):

    def fed(self, **kw):
        clients = [FakeClient(i, dw) for i, dw in enumerate(SPLITTABLE)]
        return FakeFederation(clients, {k: list(v) for k, v in SEQS.items()}, [[0, 1, 2]], **kw)

    def test_norms_by_hand(self):
        fed = self.fed()
        self.assertAlmostEqual(fed.server.compute_mean_update_norm(fed.clients), 0.01, places=7)
        self.assertEqual(fed.server.compute_max_update_norm(fed.clients), 1.0)

    def test_split_by_dtw_min_cut(self):
        # sim = max(d) - d: w01 = 6.828, w02 = 0, w12 = 0.0575; the min cut isolates client 2
        # (phase 0 from node 0 adds 1, the cut of the phase {2} = 0.0575 is the best).
        fed = self.fed()
        splits, norms = fed.cluster_step(c_round=21)
        self.assertEqual(fed.cluster_indices, [[2], [0, 1]])
        self.assertEqual(len(splits), 1)
        self.assertAlmostEqual(splits[0]['dtw'][0, 2], math.sqrt(48), places=12)
        self.assertEqual(fed.seqs_grads, {0: [], 1: [], 2: []})  # every sequence restarts
        self.assertEqual(len(fed.server.model_cache), 1)  # the pre-split model is cached

    def test_each_criterion_blocks_the_split(self):
        cases = {
            'mean norm not below eps1': dict(kw=dict(eps1=0.005)),         # 0.01 < 0.005 fails
            'max norm not above eps2': dict(kw=dict(eps2=1.0)),            # 1.0 > 1.0 fails
            'warm-up (c_round > 20)': dict(round=20),
            'a sequence too short': dict(kw=dict(seq_length=4)),
        }
        for what, case in cases.items():
            fed = self.fed(**case.get('kw', {}))
            splits, _ = fed.cluster_step(c_round=case.get('round', 21))
            self.assertEqual(splits, [], what)
            self.assertEqual(fed.cluster_indices, [[0, 1, 2]], what)
            self.assertEqual(len(fed.seqs_grads[0]), 3, what)

    def test_a_cluster_of_two_never_splits(self):
        clients = [FakeClient(i, dw) for i, dw in enumerate(([1.0, 0.0], [-1.0, 0.0]))]
        fed = FakeFederation(clients, {0: [1.0] * 3, 1: [2.0] * 3}, [[0, 1]])
        self.assertEqual(fed.cluster_step(c_round=21)[0], [])

    def test_a_short_sequence_outside_the_cluster_blocks_too(self):
        clients = [FakeClient(i, dw) for i, dw in enumerate(SPLITTABLE + ([0.0, 0.0],))]
        seqs = {k: list(v) for k, v in SEQS.items()}
        seqs[3] = [1.0]
        fed = FakeFederation(clients, seqs, [[0, 1, 2], [3]])
        self.assertEqual(fed.cluster_step(c_round=21)[0], [])

    def test_at_most_one_split_per_round(self):
        # Two identical splittable clusters: the first splits and empties every sequence, so
        # the second fails the sequence-length test in the same round.
        clients = [FakeClient(i, SPLITTABLE[i % 3]) for i in range(6)]
        seqs = {i: list(SEQS[i % 3]) for i in range(6)}
        fed = FakeFederation(clients, seqs, [[0, 1, 2], [3, 4, 5]])
        splits, norms = fed.cluster_step(c_round=21)
        self.assertEqual(len(splits), 1)
        self.assertEqual(len(norms), 2)
        self.assertEqual(fed.cluster_indices, [[2], [0, 1], [3, 4, 5]])


class AggregateTest(unittest.TestCase):

    def test_each_client_adds_its_clusters_weighted_mean_update(self):
        a = FakeClient(0, [1.0, 2.0], w=(10.0, 10.0), size=1)
        b = FakeClient(1, [4.0, -1.0], w=(10.0, 10.0), size=3)
        c = FakeClient(2, [7.0, 7.0], w=(0.0, 1.0), size=5)
        server = ref.Server(torch.nn.Linear(2, 1, bias=False))
        server.W = {'w': None}
        server.aggregate_clusterwise([[a, b], [c]])
        # (1 * [1, 2] + 3 * [4, -1]) / 4 = [3.25, -0.25]
        self.assertTrue(torch.equal(a.W['w'], torch.tensor([13.25, 9.75])))
        self.assertTrue(torch.equal(b.W['w'], torch.tensor([13.25, 9.75])))
        self.assertTrue(torch.equal(c.W['w'], torch.tensor([7.0, 8.0])))


def three_clients(seed=3):
    gen = torch.Generator().manual_seed(seed)
    subgraphs = [subgraph(gen, n, 4, 3, e) for n, e in ((6, 8), (9, 12), (8, 10))]
    shapes = openfgl.GCN(4, 5, 3, 2, 0.0).state_dict()
    state = {k: torch.randn(v.shape, generator=gen) * 0.5 for k, v in shapes.items()}
    return subgraphs, state


class ClientAndFederationTest(unittest.TestCase):

    def test_weight_update_reset_and_gradient_norm(self):
        subgraphs, state = three_clients()
        fed = ref.GcflPlusFederation(subgraphs, 3, state, hid_dim=5, dropout=0.0, local_epoch=1)
        client = fed.clients[1]
        client.compute_weight_update(1)
        # The gradient norm is that of the loss at the starting weights (one epoch: one step).
        model = openfgl.GCN(4, 5, 3, 2, 0.0)
        model.load_state_dict(state)
        data = client.task.processed_data
        _, logits = model(data['data'])
        loss = torch.nn.functional.cross_entropy(logits[data['train_mask']], data['data'].y[data['train_mask']])
        grads = torch.autograd.grad(loss, list(model.parameters()))
        expected = torch.norm(torch.cat([g.flatten() for g in grads])).item()
        self.assertAlmostEqual(client.convGradsNorm, expected, places=6)
        trained = {k: v.detach().clone() for k, v in client.W.items()}
        client.reset()
        for k, v in client.W.items():
            self.assertTrue(torch.equal(v, state[k]), k)
            self.assertTrue(torch.equal(client.dW[k], trained[k] - state[k]), k)

    def test_rounds_until_a_split(self):
        # Warm-up 0, sequences of 2 and thresholds that always hold: the split is at round 2.
        subgraphs, state = three_clients()
        fed = ref.GcflPlusFederation(subgraphs, 3, state, hid_dim=5, dropout=0.0, eps1=1e9, eps2=0.0,
                                     seq_length=2, warmup_rounds=0)
        r1 = fed.train_round()
        self.assertEqual(r1['splits'], [])
        self.assertEqual(r1['cluster_indices'], [[0, 1, 2]])
        n = [6, 9, 8]  # num_nodes weights
        for k in state:
            mean = sum(n[i] * r1['dW'][i][k] for i in range(3)) / 23
            for i in range(3):
                self.assertTrue(torch.allclose(r1['clients'][i][k], state[k] + mean, atol=1e-6), k)
                self.assertTrue(torch.equal(r1['clients'][i][k], r1['clients'][0][k]), k)
        r2 = fed.train_round()
        self.assertEqual(len(r2['splits']), 1)
        self.assertEqual(sorted(sum(r2['cluster_indices'], [])), [0, 1, 2])
        self.assertEqual(len(r2['cluster_indices']), 2)
        self.assertEqual(r2['seqs'], {i: [r1['grad_norms'][i], r2['grad_norms'][i]] for i in range(3)})
        r3 = fed.train_round()
        self.assertEqual(r3['splits'], [])  # sequences restarted: 1 < seq_length
        c1, c2 = r3['cluster_indices']
        for cluster in (c1, c2):
            for i in cluster:
                for k in state:
                    self.assertTrue(torch.equal(r3['clients'][i][k], r3['clients'][cluster[0]][k]))
        acc = fed.final_accuracies()
        self.assertEqual(acc.shape, (3,))


if __name__ == '__main__':
    unittest.main()
