"""Checks of the D-FedGNN reference port (d_fedgnn_reference.py) against hand-computed values.

Run from the repository root:
    /usr/bin/python3 -m unittest methods/d_fedgnn/reference/d_fedgnn_reference_test.py
or as a plain script from any directory.
"""
import copy
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.d_fedgnn.reference import d_fedgnn_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402
from methods.reference.gcn import GCN  # noqa: E402


def scalars(values):
    return [{'w': torch.tensor([float(v)])} for v in values]


def tiny_graph(gen, n=6, feat=3, classes=2):
    src = torch.arange(n)
    ei = pyg.to_undirected(torch.stack([src, (src + 1) % n]), n)
    train = torch.arange(n) < 4
    return pyg.Data(x=torch.randn(n, feat, generator=gen), edge_index=ei, y=torch.arange(n) % classes,
                    train_idx=train, val_idx=~train, test_idx=~train)


def gcn_init(gen, feat=3, hid=4, classes=2):
    return {'conv1.lin.weight': torch.randn(hid, feat, generator=gen), 'conv1.bias': torch.randn(hid, generator=gen),
            'conv2.lin.weight': torch.randn(classes, hid, generator=gen), 'conv2.bias': torch.randn(classes, generator=gen)}


class RingAverageTest(unittest.TestCase):
    def test_four_clients_average_self_and_both_neighbours(self):
        w = scalars([1, 2, 4, 8])
        got = [float(s['w']) for s in ref.ring_average(w)]
        # (self + left + right) / 3, indices mod 4: client 0's left is client 3.
        self.assertEqual(got, [float(torch.tensor(11.) / 3), float(torch.tensor(7.) / 3),
                               float(torch.tensor(14.) / 3), float(torch.tensor(13.) / 3)])
        self.assertEqual([float(s['w']) for s in w], [1, 2, 4, 8])  # the inputs are not changed

    def test_two_clients_count_the_other_twice(self):
        got = [float(s['w']) for s in ref.ring_average(scalars([1, 4]))]
        self.assertEqual(got, [3.0, 2.0])  # (1 + 4 + 4) / 3, (4 + 1 + 1) / 3

    def test_one_client_keeps_its_weights(self):
        self.assertEqual(float(ref.ring_average(scalars([5]))[0]['w']), 5.0)


class RoundTest(unittest.TestCase):
    def setUp(self):
        gen = torch.Generator().manual_seed(0)
        self.graphs = [tiny_graph(gen) for _ in range(3)]
        self.inits = [gcn_init(gen) for _ in range(3)]

    def test_round_trains_then_loads_the_ring_average(self):
        port = ref.DFedGnnReference(self.graphs, self.inits, lr=0.1, client_train_epoch=2)
        got = port.train_round()
        for k in range(3):
            # Round 1 trains each client's own initialisation.
            for n, t in self.inits[k].items():
                self.assertTrue(torch.equal(got['start'][k][n], t))
            # Independent re-simulation of one client: 2 Adam steps of CE on log_softmax.
            model = GCN.from_state(copy.deepcopy(self.inits[k]), 0.0)
            opt = torch.optim.Adam(model.parameters(), lr=0.1)
            g = self.graphs[k]
            for _ in range(2):
                opt.zero_grad()
                loss = F.cross_entropy(torch.log_softmax(model(g.x, g.edge_index)[1], 1)[g.train_idx], g.y[g.train_idx])
                loss.backward()
                opt.step()
            for n, t in model.state_dict().items():
                self.assertTrue(torch.allclose(got['trained'][k][n], t, atol=1e-6), n)
            self.assertAlmostEqual(got['losses'][k][-1], float(loss), places=6)
        # With 3 clients every ring average is (own + left + right) / 3 of all three, and the
        # clients load it.
        for k in range(3):
            for n in got['trained'][0]:
                t = got['trained']
                want = (t[k][n] + t[(k - 1) % 3][n] + t[(k + 1) % 3][n]) / 3
                self.assertTrue(torch.allclose(got['ring'][k][n], want, atol=1e-6))
                self.assertTrue(torch.equal(port.clients[k].state_dict()[n], got['ring'][k][n]))

    def test_adam_is_never_reset(self):
        port = ref.DFedGnnReference(self.graphs, self.inits, lr=0.1, client_train_epoch=2)
        first = port.train_round()
        got = port.train_round()
        # Client.py:45 creates the Adam once: 2 rounds x 2 epochs = 4 steps on the same moments.
        self.assertEqual(float(got['adam'][1]['step']['conv1.bias']), 4.0)
        self.assertGreater(float(got['adam'][1]['exp_avg_sq']['conv1.bias'].abs().max()), 0.0)
        # Round 2 starts from round 1's ring average.
        for n, t in first['ring'][1].items():
            self.assertTrue(torch.equal(got['start'][1][n], t), n)


if __name__ == '__main__':
    unittest.main()
