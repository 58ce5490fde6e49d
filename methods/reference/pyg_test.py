"""Checks pyg.py against values computed by hand on tiny graphs."""
import math
import os
import random
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from methods.reference import pyg  # noqa: E402

# Undirected path 0 - 1 - 2, both directions stored.
PATH = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
S6 = 1 / math.sqrt(6)  # 1 / sqrt(deg 2 * deg 3) on the path with self loops


class PygTest(unittest.TestCase):

    def assertClose(self, actual, expected):
        expected = torch.as_tensor(expected, dtype=actual.dtype)
        self.assertEqual(tuple(actual.shape), tuple(expected.shape))
        self.assertTrue(torch.allclose(actual, expected, atol=1e-6), f'{actual} != {expected}')

    def test_data(self):
        d = pyg.Data(x=torch.zeros(4, 2), edge_index=PATH, y=torch.arange(4))
        self.assertEqual(d.num_nodes, 4)
        self.assertTrue(torch.equal(d.y, torch.arange(4)))

    def test_add_self_loops_appends_loops_keeping_existing_ones(self):
        ei = torch.tensor([[0, 1, 1], [1, 0, 1]])  # has the loop (1, 1)
        out, attr = pyg.add_self_loops(ei, torch.tensor([2.0, 3.0, 4.0]), num_nodes=3)
        self.assertTrue(torch.equal(out, torch.tensor([[0, 1, 1, 0, 1, 2], [1, 0, 1, 0, 1, 2]])))
        self.assertClose(attr, [2, 3, 4, 1, 1, 1])
        out, attr = pyg.add_self_loops(PATH)  # num_nodes inferred as 3
        self.assertTrue(torch.equal(out[:, 4:], torch.tensor([[0, 1, 2], [0, 1, 2]])))
        self.assertIsNone(attr)

    def test_add_remaining_self_loops_replaces_existing_loops(self):
        ei = torch.tensor([[1, 0, 2, 1], [1, 1, 2, 2]])  # loops (1,1), (2,2)
        out, attr = pyg.add_remaining_self_loops(ei, torch.tensor([5.0, 2.0, 7.0, 3.0]), 0.5, 4)
        self.assertTrue(torch.equal(out, torch.tensor([[0, 1, 0, 1, 2, 3], [1, 2, 0, 1, 2, 3]])))
        self.assertClose(attr, [2, 3, 0.5, 5, 7, 0.5])
        out, attr = pyg.add_remaining_self_loops(ei)
        self.assertEqual(out.shape[1], 5)
        self.assertIsNone(attr)

    def test_gcn_norm_path(self):
        ei, w = pyg.gcn_norm(PATH, num_nodes=3)
        self.assertTrue(torch.equal(ei, torch.tensor([[0, 1, 1, 2, 0, 1, 2], [1, 0, 2, 1, 0, 1, 2]])))
        self.assertClose(w, [S6, S6, S6, S6, 1 / 2, 1 / 3, 1 / 2])

    def test_gcn_norm_ignores_existing_self_loops(self):
        with_loops = torch.cat([PATH, torch.tensor([[1, 1, 0], [1, 1, 0]])], dim=1)
        ei, w = pyg.gcn_norm(with_loops, num_nodes=3)
        self.assertTrue(torch.equal(ei, torch.tensor([[0, 1, 1, 2, 0, 1, 2], [1, 0, 2, 1, 0, 1, 2]])))
        self.assertClose(w, [S6, S6, S6, S6, 1 / 2, 1 / 3, 1 / 2])

    def test_gcn_norm_degree_counts_incoming_edges(self):
        # Directed 0 -> 1: in-degrees with loops are [1, 2], out-degree is not used.
        ei, w = pyg.gcn_norm(torch.tensor([[0], [1]]), num_nodes=3)
        self.assertTrue(torch.equal(ei, torch.tensor([[0, 0, 1, 2], [1, 0, 1, 2]])))
        self.assertClose(w, [1 / math.sqrt(2), 1, 1 / 2, 1])

    def test_scatter(self):
        src = torch.tensor([[1.0, -1.0], [3.0, -5.0], [4.0, 2.0]])
        index = torch.tensor([0, 0, 2])  # bucket 1 stays empty
        self.assertClose(pyg.scatter(src, index, 0, 3, 'sum'), [[4, -6], [0, 0], [4, 2]])
        self.assertClose(pyg.scatter(src, index, 0, 3, 'mean'), [[2, -3], [0, 0], [4, 2]])
        self.assertClose(pyg.scatter(src, index, 0, 3, 'max'), [[3, -1], [0, 0], [4, 2]])
        self.assertClose(pyg.scatter(src, torch.tensor([1, 0]), 1, 2, 'sum'), [[-1, 1], [-5, 3], [2, 4]])
        self.assertEqual(pyg.scatter(src, index).shape[0], 3)  # dim_size = max + 1

    def test_softmax_groups_by_index(self):
        # Groups: {0, 1} -> node 1 and {2} -> node 0; two trailing columns normalised separately.
        src = torch.tensor([[0.0, 1.0], [math.log(3.0), -1.0], [5.0, 7.0]])
        out = pyg.softmax(src, torch.tensor([1, 1, 0]), num_nodes=3)
        e = math.exp(2.0)  # e^1 / e^-1
        self.assertClose(out, [[1 / 4, e / (e + 1)], [3 / 4, 1 / (e + 1)], [1, 1]])
        # Large logits do not overflow (max subtracted); 1-D input works.
        self.assertClose(pyg.softmax(torch.tensor([1000.0, 1000.0]), torch.tensor([0, 0])), [0.5, 0.5])

    def test_to_undirected_coalesces(self):
        ei = torch.tensor([[2, 0, 0, 1], [1, 1, 1, 0]])
        self.assertTrue(torch.equal(pyg.to_undirected(ei), torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])))

    def test_dense_to_sparse_row_major(self):
        adj = torch.tensor([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0], [0.0, 4.0, 5.0]])
        ei, val = pyg.dense_to_sparse(adj)
        self.assertTrue(torch.equal(ei, torch.tensor([[0, 0, 1, 2, 2], [1, 2, 0, 1, 2]])))
        self.assertClose(val, [2, 1, 3, 4, 5])

    def test_to_dense_adj_sums_duplicates(self):
        ei = torch.tensor([[0, 1, 1, 2], [1, 2, 2, 0]])
        self.assertClose(pyg.to_dense_adj(ei), [[[0, 1, 0], [0, 0, 2], [1, 0, 0]]])
        self.assertEqual(tuple(pyg.to_dense_adj(ei, max_num_nodes=5).shape), (1, 5, 5))
        self.assertClose(pyg.to_dense_adj(ei, edge_attr=torch.tensor([1.0, 2, 3, 4]))[0, 1], [0, 0, 5])

    def test_gcnconv_state_dict_and_init(self):
        conv = pyg.GCNConv(4, 3)
        sd = conv.state_dict()
        self.assertEqual(list(sd.keys()), ['bias', 'lin.weight'])
        self.assertEqual(tuple(sd['lin.weight'].shape), (3, 4))
        self.assertTrue(torch.equal(sd['bias'], torch.zeros(3)))
        self.assertLessEqual(float(sd['lin.weight'].abs().max()), math.sqrt(6 / 7))

    def test_gcnconv_matches_dense_formula(self):
        conv = pyg.GCNConv(2, 2)
        w = torch.tensor([[1.0, 2.0], [-1.0, 0.5]])  # [out, in]
        b = torch.tensor([0.25, -1.0])
        conv.load_state_dict({'lin.weight': w, 'bias': b})
        x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]])
        # D^-1/2 (A + I) D^-1/2 of the path, degrees [2, 3, 2].
        a_hat = torch.tensor([[1 / 2, S6, 0], [S6, 1 / 3, S6], [0, S6, 1 / 2]])
        self.assertClose(conv(x, PATH), a_hat @ x @ w.t() + b)
        # Directed 0 -> 1: node 1 receives from 0, node 0 only from itself.
        out = conv(x, torch.tensor([[0], [1]]))
        xw = x @ w.t()
        self.assertClose(out, torch.stack([xw[0], xw[0] / math.sqrt(2) + xw[1] / 2, xw[2]]) + b)


    def test_degree(self):
        self.assertTrue(torch.equal(pyg.degree(torch.tensor([0, 1, 0, 2, 0]), dtype=torch.long),
                                    torch.tensor([3, 1, 1])))
        self.assertClose(pyg.degree(torch.tensor([0, 1, 0]), num_nodes=4), [2, 1, 0, 0])

    def test_dropout_adj_one_draw_per_stored_edge(self):
        ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
        attr = torch.tensor([1.0, 2.0, 3.0, 4.0])
        out, a = pyg.dropout_adj(ei, attr, p=0.3, keep_mask=torch.tensor([True, False, False, True]))
        self.assertTrue(torch.equal(out, torch.tensor([[0, 2], [1, 1]])))
        self.assertClose(a, [1, 4])
        torch.manual_seed(3)
        u = torch.rand(4)
        torch.manual_seed(3)
        out, _ = pyg.dropout_adj(ei, p=0.3)
        self.assertTrue(torch.equal(out, ei[:, u >= 0.3]))
        self.assertIs(pyg.dropout_adj(ei, p=0.0)[0], ei)  # no draw
        self.assertIs(pyg.dropout_adj(ei, p=0.3, training=False)[0], ei)

    def test_label_propagation_path(self):
        # Path 0 - 1 - 2 without self loops: degrees [1, 2, 1], every edge weight 1 / sqrt(2).
        r = 1 / math.sqrt(2)
        y = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
        mask = torch.tensor([True, False, False])
        # out0 = [[1, 0], 0, 0]; res = 0.5 * out0.
        # layer 1: A out0 = [0, (r, 0), 0] -> 0.5 * that + res = [[.5, 0], [r/2, 0], [0, 0]]
        self.assertClose(pyg.LabelPropagation(1, 0.5)(y, PATH, mask), [[0.5, 0], [r / 2, 0], [0, 0]])
        # layer 2: A out1 = [(1/4, 0), (r/2, 0), (1/4, 0)] -> [[.5 + 1/8, 0], [r/4, 0], [1/8, 0]]
        self.assertClose(pyg.LabelPropagation(2, 0.5)(y, PATH, mask), [[0.625, 0], [r / 4, 0], [0.125, 0]])
        # No mask, values clamped to [0, 1] after each layer: node 0 2 -> 1, node 1 0.5*4r -> 1.
        y = torch.tensor([[4.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
        self.assertClose(pyg.LabelPropagation(1, 0.5)(y, PATH), [[1, 0], [1, 0], [0, 0]])

    def test_random_partition_graph_draws_by_hand(self):
        # random.Random(3).random() gives 0.2380, 0.5442, 0.3700, 0.6039, 0.6257, 0.0655, 0.0132, ...
        first = random.Random(3)
        r = [first.random() for _ in range(7)]
        rng = random.Random(3)
        g = pyg.random_partition_graph([3, 2], 0.5, 0.0, seed=rng)
        # Block 0: pairs (0,1) 0.2380 < .5 yes, (0,2) 0.5442 no, (1,2) 0.3700 yes; then ONE extra
        # draw (0.6039, the sparse branch's log(random())). Block (0,1): p_out 0, no draw.
        # Block 1: pair (3,4) 0.6257 no; extra draw 0.0655. The next draw is the 7th.
        self.assertEqual(rng.random(), r[6])
        self.assertEqual(list(g.nodes), [0, 1, 2, 3, 4])
        self.assertEqual([g.nodes[n]['block'] for n in g.nodes], [0, 0, 0, 1, 1])
        self.assertEqual({n: list(a) for n, a in g.adj.items()}, {0: [1], 1: [0, 2], 2: [1], 3: [], 4: []})
        self.assertEqual(g.to_directed_edges(), [(0, 1), (1, 0), (1, 2), (2, 1)])
        self.assertEqual(g.graph['partition'], [{0, 1, 2}, {3, 4}])
        # An int seed is random.Random(seed).
        self.assertEqual(pyg.random_partition_graph([3, 2], 0.5, 0.0, seed=3).to_directed_edges(),
                         g.to_directed_edges())

    def test_random_partition_graph_between_blocks_geometric_skip(self):
        # random.Random(2): 0.9560, 0.9478, 0.0566, 0.0849, 0.8355, ...
        first = random.Random(2)
        r = [first.random() for _ in range(5)]
        rng = random.Random(2)
        g = pyg.random_partition_graph([2, 2], 0.0, 0.5, seed=rng)
        # Block 0: pair (0,1) draws 0.9560 (< 0 never); p_in 0: no extra draw.
        # Blocks (0,1), pairs (0,2),(0,3),(1,2),(1,3): skip = floor(log(.9478)/log(.5)) = 0 -> add
        # (0,2); skip = floor(log(.0566)/log(.5)) = 4 > 3 pairs left -> stop.
        # Block 1: pair (2,3) draws 0.0849 (no edge). The next draw is the 5th.
        self.assertEqual(rng.random(), r[4])
        self.assertEqual(g.to_directed_edges(), [(0, 2), (2, 0)])
        # p_in == 1: every pair is an edge; only the dense loop draws (3 draws, none extra).
        rng = random.Random(2)
        g = pyg.random_partition_graph([3], 1.0, 0.0, seed=rng)
        self.assertEqual(rng.random(), r[3])
        self.assertEqual(g.to_directed_edges(), [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)])

    def test_sageconv_mean_of_neighbours_plus_root(self):
        conv = pyg.SAGEConv(2, 2)
        self.assertEqual(list(conv.state_dict().keys()), ['lin_l.weight', 'lin_l.bias', 'lin_r.weight'])
        conv.load_state_dict({'lin_l.weight': torch.tensor([[1.0, 2.0], [-1.0, 0.5]]),
                              'lin_l.bias': torch.tensor([0.25, -1.0]),
                              'lin_r.weight': torch.tensor([[0.0, 1.0], [1.0, 1.0]])})
        x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0], [3.0, 3.0]])
        # The path plus a second copy of 0 -> 1; node 3 has no edge.
        ei = torch.tensor([[0, 1, 1, 2, 0], [1, 0, 2, 1, 1]])
        # means: node 0 [0, 1]; node 1 (x0 + x2 + x0) / 3 = [4/3, -1/3]; node 2 [0, 1]; node 3 0.
        # node 0: W_l [0, 1] + b = [2.25, -0.5], W_r x0 = [0, 1]
        # node 1: W_l m = [2/3, -3/2], + b = [11/12, -5/2], W_r x1 = [1, 1]
        # node 2: [2.25, -0.5] + W_r x2 = [-1, 1];  node 3: b + W_r x3 = [0.25, -1] + [3, 6]
        self.assertClose(conv(x, ei), [[2.25, 0.5], [23 / 12, -1.5], [1.25, 0.5], [3.25, 5.0]])

    def test_to_csc_sorts_sources_per_target_keeping_duplicates(self):
        colptr, row, perm = pyg.to_csc(torch.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 1, 2]]), 4)
        # in-neighbours: 0 <- [1]; 1 <- [0, 2, 2]; 2 <- [0, 1]; 3 <- []
        self.assertTrue(torch.equal(colptr, torch.tensor([0, 1, 4, 6, 6])))
        self.assertTrue(torch.equal(row, torch.tensor([1, 0, 2, 2, 0, 1])))
        self.assertTrue(torch.equal(perm[:2], torch.tensor([1, 0])))

    def test_neighbor_sample_dedups_and_expands_new_nodes_only(self):
        # Edges 0-1, 0-2, 1-2, 2-3, 3-4 (both directions); node 5 isolated.
        ei = pyg.to_undirected(torch.tensor([[0, 0, 1, 2, 3], [1, 2, 2, 3, 4]]), 6)
        colptr, row, _ = pyg.to_csc(ei, 6)
        draws = [torch.tensor([[2, 2], [4, 2]]), torch.tensor([[1], [3]])]
        node, r, c, sampled, expanded = pyg.neighbor_sample(colptr, row, torch.tensor([0, 3, 5]), [2, 1], draws)
        # hop 0: 0 draws 2 (new, local 3), 2; 3 draws 4 (new, local 4), 2; 5 has no neighbour.
        # hop 1: only the new nodes 2, 4 draw: 2 -> 1 (new, local 5); 4 -> 3 (local 1).
        self.assertTrue(torch.equal(node, torch.tensor([0, 3, 5, 2, 4, 1])))
        self.assertTrue(torch.equal(r, torch.tensor([3, 3, 4, 3, 5, 1])))
        self.assertTrue(torch.equal(c, torch.tensor([0, 0, 1, 1, 3, 4])))
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(sampled, draws)))
        self.assertTrue(torch.equal(expanded[0], torch.tensor([0, 3])))
        self.assertTrue(torch.equal(expanded[1], torch.tensor([2, 4])))
        with self.assertRaises(ValueError):  # 3 is not a neighbour of 0
            pyg.neighbor_sample(colptr, row, torch.tensor([0]), [2], [torch.tensor([[1, 3]])])
        with self.assertRaises(ValueError):  # one row too many
            pyg.neighbor_sample(colptr, row, torch.tensor([5]), [2], [torch.tensor([[1, 2]])])
        # Drawn: replaying the returned draws gives the same batch.
        out = pyg.neighbor_sample(colptr, row, torch.tensor([0, 3]), [2, 2],
                                  generator=torch.Generator().manual_seed(1))
        again = pyg.neighbor_sample(colptr, row, torch.tensor([0, 3]), [2, 2], out[3])
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(out[:3], again[:3])))
        self.assertEqual([tuple(s.shape) for s in out[3]], [(2, 2), (len(out[4][1]), 2)])

    def test_neighbor_loader_mask_is_ascending_and_batches_in_order(self):
        ei = pyg.to_undirected(torch.tensor([[0, 1, 2], [1, 2, 3]]), 4)
        data = pyg.Data(x=torch.arange(8.0).view(4, 2), edge_index=ei, y=torch.tensor([5, 6, 7, 8]))
        mask = torch.tensor([False, True, False, True])
        loader = pyg.NeighborLoader(data, [1], 1, mask, sampled=[[torch.tensor([[2]])], [torch.tensor([[2]])]])
        batches = list(loader)
        self.assertEqual(len(batches), 2)
        self.assertEqual([b.batch_size for b in batches], [1, 1])
        self.assertTrue(torch.equal(batches[0].n_id, torch.tensor([1, 2])))
        self.assertTrue(torch.equal(batches[1].n_id, torch.tensor([3, 2])))
        self.assertTrue(torch.equal(batches[1].y, torch.tensor([8, 7])))
        self.assertTrue(torch.equal(batches[1].x, torch.tensor([[6.0, 7.0], [4.0, 5.0]])))
        self.assertTrue(torch.equal(batches[0].edge_index, torch.tensor([[1], [0]])))


if __name__ == '__main__':
    unittest.main()
