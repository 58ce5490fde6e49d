"""Checks of the GraphFL reference port (graphfl_reference.py) against hand-computed values.

Run from the repository root:
    /usr/bin/python3 -m unittest methods/graphfl/reference/graphfl_reference_test.py
or as a plain script from any directory.
"""
import copy
import os
import sys
import unittest

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.graphfl.reference import graphfl_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402
from methods.reference.gcn import GCN  # noqa: E402

N_NODES = 60


def tiny_graph(gen, n=N_NODES, feat=3, classes=3):
    src = torch.arange(n)
    ei = pyg.to_undirected(torch.cat([torch.stack([src, (src + 1) % n]), torch.stack([src, (src + 7) % n])], 1), n)
    return pyg.Data(x=torch.randn(n, feat, generator=gen), edge_index=ei,
                    y=torch.randint(0, classes, (n,), generator=gen))


def gcn_init(gen, feat=3, hid=4, classes=3):
    return {'conv1.lin.weight': torch.randn(hid, feat, generator=gen), 'conv1.bias': torch.randn(hid, generator=gen),
            'conv2.lin.weight': torch.randn(classes, hid, generator=gen), 'conv2.bias': torch.randn(classes, generator=gen)}


def masks(lo, hi, n=N_NODES):
    m = torch.zeros(n, dtype=torch.bool)
    m[lo:hi] = True
    return m


def loss_at(model, g, nodes):
    return F.cross_entropy(torch.log_softmax(model(g.x, g.edge_index)[1], 1)[nodes], g.y[nodes])


class GetMaskTest(unittest.TestCase):
    def test_code_sizes_and_layout(self):
        rng = np.random.RandomState(0)
        train, val, test = ref.get_mask(500, rng=rng)
        self.assertEqual((int(train.sum()), int(val.sum()), int(test.sum())), (80, 80, 200))
        self.assertFalse(bool((train & val).any()))
        self.assertTrue(bool(test[300:].all()))
        # The permutation is over the first 500 - 200 - 80 = 220 ids only.
        self.assertFalse(bool((train | val)[220:].any()))
        # The same draw as Client.py:68-74 on numpy's RNG.
        perm = np.random.RandomState(0).permutation(220)
        self.assertEqual(sorted(train.nonzero().view(-1).tolist()), sorted(perm[:80].tolist()))
        self.assertEqual(sorted(val.nonzero().view(-1).tolist()), sorted(perm[80:160].tolist()))

    def test_small_client_caps_the_query_set(self):
        # 300 nodes: a permutation of 20 ids, all of them support; the query slice is empty.
        train, val, _ = ref.get_mask(300, rng=np.random.RandomState(1))
        self.assertEqual((int(train.sum()), int(val.sum())), (20, 0))

    def test_our_sizes(self):
        train, val, _ = ref.get_mask(700, support_nodes=100, query_nodes=100, rng=np.random.RandomState(2))
        self.assertEqual((int(train.sum()), int(val.sum())), (100, 100))


class FedAvgTest(unittest.TestCase):
    def test_mean_of_three(self):
        w = [{'w': torch.tensor([1.0, 2.0])}, {'w': torch.tensor([2.0, 4.0])}, {'w': torch.tensor([6.0, 0.0])}]
        self.assertEqual(ref.fed_avg(w)['w'].tolist(), [3.0, 2.0])
        self.assertEqual(w[0]['w'].tolist(), [1.0, 2.0])  # the inputs are not changed


class QueryTest(unittest.TestCase):
    def setUp(self):
        gen = torch.Generator().manual_seed(0)
        self.g = tiny_graph(gen)
        self.init = gcn_init(gen)
        self.query = masks(10, 50)  # 40 nodes: batches of 32 and 8

    def gradient(self, whole):
        c = ref.Client(self.g, masks(0, 10), self.query, self.init, 0.1, 32, whole)
        loss = c.graphfl_query()
        return c.get_gradient(), loss

    def expected(self, nodes):
        model = GCN.from_state(copy.deepcopy(self.init), 0.0)
        loss = loss_at(model, self.g, nodes)
        loss.backward()
        return {n: p.grad for n, p in model.named_parameters()}, float(loss)

    def test_the_code_sends_only_the_last_batch(self):
        got, loss = self.gradient(False)
        want, _ = self.expected(torch.arange(42, 50))  # the last 8 of 40 ascending ids
        for n in want:
            self.assertTrue(torch.allclose(got[n], want[n], atol=1e-6), n)
        # The returned loss is the example-weighted mean over both batches, i.e. the whole set's.
        self.assertAlmostEqual(loss, self.expected(torch.arange(10, 50))[1], places=5)

    def test_ours_sends_the_whole_query_set(self):
        got, _ = self.gradient(True)
        want, _ = self.expected(torch.arange(10, 50))
        last, _ = self.expected(torch.arange(42, 50))
        for n in want:
            self.assertTrue(torch.allclose(got[n], want[n], atol=1e-6), n)
        self.assertGreater(max(float((got[n] - last[n]).abs().max()) for n in want), 1e-3)


class RoundTest(unittest.TestCase):
    def setUp(self):
        gen = torch.Generator().manual_seed(1)
        self.graphs = [tiny_graph(gen) for _ in range(2)]
        self.inits = [gcn_init(gen) for _ in range(2)]
        self.supports = [masks(0, 20), masks(5, 25)]
        self.queries = [masks(20, 60), masks(25, 45)]

    def resimulate(self, start, epochs, lr, meta_lr, whole):
        """An independent re-simulation of one round from `start` (one Adam per client)."""
        models = [GCN.from_state(copy.deepcopy(start), 0.0) for _ in range(2)]
        opts = [torch.optim.Adam(m.parameters(), lr=lr) for m in models]
        grads = []
        for m, o, g, s, q in zip(models, opts, self.graphs, self.supports, self.queries):
            for _ in range(epochs):
                o.zero_grad()
                loss_at(m, g, s).backward()
                o.step()
            ids = q.nonzero().view(-1)
            o.zero_grad()
            loss_at(m, g, ids if whole else ids[(ids.numel() - 1) // 32 * 32:]).backward()
            grads.append({n: p.grad.clone() for n, p in m.named_parameters()})
        u = {n: start[n] - meta_lr * (grads[0][n] + grads[1][n]) / 2 for n in start}
        for m, o, g, s in zip(models, opts, self.graphs, self.supports):
            m.load_state_dict(u)
            for _ in range(epochs):
                o.zero_grad()
                loss_at(m, g, s).backward()
                o.step()
        trained = [m.state_dict() for m in models]
        return grads, u, trained, {n: (trained[0][n] + trained[1][n]) / 2 for n in u}

    def check(self, whole, one):
        port = ref.GraphFlReference(self.graphs, self.supports, self.queries, self.inits, lr=0.05,
                                    client_train_epoch=2, meta_lr=0.7, whole_query_gradient=whole,
                                    one_initial_model=one)
        got = port.train_round()
        start = self.inits[0] if one else {n: (self.inits[0][n] + self.inits[1][n]) / 2 for n in self.inits[0]}
        for n in start:
            self.assertTrue(torch.allclose(got['start'][n], start[n], atol=1e-6), n)
        grads, u, trained, average = self.resimulate(start, 2, 0.05, 0.7, whole)
        for n in u:
            for k in range(2):
                self.assertTrue(torch.allclose(got['gradients'][k][n], grads[k][n], atol=1e-5), n)
                self.assertTrue(torch.allclose(got['trained'][k][n], trained[k][n], atol=1e-5), n)
                self.assertTrue(torch.equal(port.clients[k].state_dict()[n], got['average'][n]))
            self.assertTrue(torch.allclose(got['meta'][n], u[n], atol=1e-5), n)
            self.assertTrue(torch.allclose(got['average'][n], average[n], atol=1e-5), n)
        # One Adam over both stages: 2 x 2 steps.
        self.assertEqual(float(got['adam'][0]['step']['conv1.bias']), 4.0)
        return port, got

    def test_the_codes_round(self):
        self.check(whole=False, one=False)

    def test_our_round(self):
        self.check(whole=True, one=True)

    def test_the_next_round_starts_from_the_average_and_adam_runs_on(self):
        port, first = self.check(whole=False, one=False)
        second = port.train_round()
        for n, t in first['average'].items():
            self.assertTrue(torch.allclose(second['start'][n], t, atol=1e-6), n)
        self.assertEqual(float(second['adam'][1]['step']['conv2.bias']), 8.0)


if __name__ == '__main__':
    unittest.main()
