"""Checks of the LG-FedAvg reference port against hand-computed values and an independent re-simulation.

Run from the repository root:
    /usr/bin/python3 -m unittest methods/lg_fedavg/reference/lg_fedavg_reference_test.py
or as a plain script from any directory.
"""
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.lg_fedavg.reference import lg_fedavg_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402

KEYS = ['conv1.bias', 'conv1.lin.weight', 'conv2.bias', 'conv2.lin.weight']


def dense_norm_adj(edge_index, n):
    a = torch.zeros(n, n)
    a[edge_index[1], edge_index[0]] = 1.0
    a = a + torch.eye(n)
    d = a.sum(1).pow(-0.5)
    return d.view(-1, 1) * a * d.view(1, -1)


def functional_gcn(p, x, a_hat):
    h = torch.relu(a_hat @ (x @ p['conv1.lin.weight'].t()) + p['conv1.bias'])
    return a_hat @ (h @ p['conv2.lin.weight'].t()) + p['conv2.bias']


def random_subgraph(gen, n, feat_dim, num_classes, num_edges):
    src = torch.randint(0, n, (num_edges,), generator=gen)
    dst = (src + torch.randint(1, n, (num_edges,), generator=gen)) % n
    train = torch.arange(n) < n // 2 + 1
    return pyg.Data(x=torch.randn(n, feat_dim, generator=gen), edge_index=pyg.to_undirected(torch.stack([src, dst]), n),
                    y=torch.arange(n) % num_classes, train_idx=train, val_idx=~train & (torch.arange(n) % 2 == 0),
                    test_idx=~train & (torch.arange(n) % 2 == 1))


def gcn_state(gen, feat_dim, hid, num_classes, scale=0.5):
    shapes = {'conv1.bias': (hid,), 'conv1.lin.weight': (hid, feat_dim),
              'conv2.bias': (num_classes,), 'conv2.lin.weight': (num_classes, hid)}
    return {k: torch.randn(s, generator=gen) * scale for k, s in shapes.items()}


def tiny_setup(num_clients=3):
    gen = torch.Generator().manual_seed(3)
    sizes = [5, 7, 6]
    subgraphs = [random_subgraph(gen, sizes[i], 4, 3, sizes[i] + 2) for i in range(num_clients)]
    local_states = [gcn_state(gen, 4, 3, 3) for _ in range(num_clients)]
    return subgraphs, local_states


class LgFedAvgReferenceTest(unittest.TestCase):

    def test_state_dict_keys(self):
        self.assertEqual(list(ref.GCN(4, 8, 3, 0.5).state_dict().keys()), KEYS)

    def test_linear_head_option(self):
        # head='linear': the same keys, relu(A_hat X W1^T + b1) W2^T + b2 (no propagation in the head).
        subgraphs, local_states = tiny_setup(1)
        g, p = subgraphs[0], local_states[0]
        model = ref.make_gcn(dict(p), 0.0, head='linear')
        self.assertEqual(sorted(model.state_dict().keys()), sorted(KEYS))
        a_hat = dense_norm_adj(g.edge_index, g.x.size(0))
        h = torch.relu(a_hat @ (g.x @ p['conv1.lin.weight'].t()) + p['conv1.bias'])
        expected = h @ p['conv2.lin.weight'].t() + p['conv2.bias']
        self.assertTrue(torch.allclose(model(g.x, g.edge_index)[1], expected, atol=1e-5))
        self.assertFalse(torch.allclose(ref.make_gcn(dict(p), 0.0)(g.x, g.edge_index)[1], expected, atol=1e-3))

    def test_global_keys_are_the_last_layers(self):
        self.assertEqual(ref.global_keys(ref.GCN_WEIGHT_KEYS, 1), ['conv2.lin.weight', 'conv2.bias'])
        self.assertEqual(ref.global_keys(ref.GCN_WEIGHT_KEYS, 2),
                         ['conv1.lin.weight', 'conv1.bias', 'conv2.lin.weight', 'conv2.bias'])
        self.assertEqual(ref.global_keys(ref.GCN_WEIGHT_KEYS, 0), [])
        # Upstream's CNNCifar lists its layers fc1, fc2, fc3, conv2, conv1 (Nets.py:90-95), so its
        # README's num_layers_keep 2 shares the two CONV layers, not the classifier.
        cifar = [['fc1.weight', 'fc1.bias'], ['fc2.weight', 'fc2.bias'], ['fc3.weight', 'fc3.bias'],
                 ['conv2.weight', 'conv2.bias'], ['conv1.weight', 'conv1.bias']]
        self.assertEqual(ref.global_keys(cifar, 2), ['conv2.weight', 'conv2.bias', 'conv1.weight', 'conv1.bias'])

    def test_local_sgd_by_hand(self):
        # One client, scalar-sized check of SGD momentum 0.5 without weight decay over 2 epochs:
        # p1 = p0 - lr g0; p2 = p1 - lr (0.5 g0 + g1).
        subgraphs, local_states = tiny_setup(1)
        g = subgraphs[0]
        lr = 0.1
        fl = ref.LgFedAvgReference(subgraphs, 3, local_states, dropout=0.0, lr=lr, local_ep=2)
        r = fl.train_round()
        a = dense_norm_adj(g.edge_index, g.x.size(0))

        def grad(p):
            q = {k: v.clone().requires_grad_() for k, v in p.items()}
            loss = torch.nn.functional.cross_entropy(functional_gcn(q, g.x, a)[g.train_idx], g.y[g.train_idx])
            return dict(zip(q, torch.autograd.grad(loss, list(q.values())))), float(loss)

        g0, loss0 = grad(local_states[0])
        p1 = {k: local_states[0][k] - lr * g0[k] for k in KEYS}
        g1, loss1 = grad(p1)
        p2 = {k: p1[k] - lr * (0.5 * g0[k] + g1[k]) for k in KEYS}
        for k in KEYS:
            self.assertTrue(torch.allclose(r['trained'][0][k], p2[k], atol=1e-6), k)
        self.assertAlmostEqual(r['losses'][0], (loss0 + loss1) / 2, places=5)

    def simulate(self, subgraphs, local_states, plan, lr, epochs):
        """Independent re-simulation: per round, each sampled client runs `epochs` SGD steps with a
        FRESH momentum-0.5 buffer on all its parameters; conv2.* of the sampled clients are averaged
        (unweighted) and written into EVERY client; conv1.* never leave the client."""
        states = [{k: v.clone() for k, v in s.items()} for s in local_states]
        adj = [dense_norm_adj(g.edge_index, g.x.size(0)) for g in subgraphs]
        history = []
        for sampled in plan:
            trained = {}
            for c in sampled:
                g, buf = subgraphs[c], None
                for _ in range(epochs):
                    q = {k: v.clone().requires_grad_() for k, v in states[c].items()}
                    loss = torch.nn.functional.cross_entropy(functional_gcn(q, g.x, adj[c])[g.train_idx],
                                                             g.y[g.train_idx])
                    grads = dict(zip(q, torch.autograd.grad(loss, list(q.values()))))
                    buf = grads if buf is None else {k: 0.5 * buf[k] + grads[k] for k in grads}
                    states[c] = {k: states[c][k] - lr * buf[k] for k in states[c]}
                trained[c] = dict(states[c])
            glob = {k: sum(trained[c][k] for c in sampled) / len(sampled) for k in ('conv2.lin.weight', 'conv2.bias')}
            for s in states:
                s.update(glob)
            history.append({'trained': trained, 'global': glob, 'local': [dict(s) for s in states]})
        return history

    def test_rounds_with_sampling_match_independent_simulation(self):
        subgraphs, local_states = tiny_setup()
        plan = [[2, 0], [1], [0, 1, 2]]
        fl = ref.LgFedAvgReference(subgraphs, 3, local_states, dropout=0.0, lr=0.2, local_ep=2)
        rounds = [fl.train_round(p) for p in plan]
        sim = self.simulate(subgraphs, local_states, plan, 0.2, 2)
        for r, s, p in zip(rounds, sim, plan):
            self.assertEqual(r['sampled_clients'], p)
            self.assertEqual(sorted(r['uploads']), sorted(p))
            for c in p:
                self.assertEqual(sorted(r['uploads'][c]), ['conv2.bias', 'conv2.lin.weight'])  # only the global layers
                for k in KEYS:
                    self.assertTrue(torch.allclose(r['trained'][c][k], s['trained'][c][k], atol=1e-6), (c, k))
            for k, v in r['global'].items():
                self.assertTrue(torch.allclose(v, s['global'][k], atol=1e-6), k)
            for c in range(3):
                for k in KEYS:
                    self.assertTrue(torch.allclose(r['local'][c][k], s['local'][c][k], atol=1e-6), (c, k))
        # Round 0: client 1 was not sampled: its private conv1 is untouched, its conv2 is the average.
        r0 = rounds[0]
        for k in ('conv1.bias', 'conv1.lin.weight'):
            self.assertTrue(torch.equal(r0['local'][1][k], local_states[1][k]))
        for k in ('conv2.bias', 'conv2.lin.weight'):
            expected = torch.div(r0['trained'][2][k] + r0['trained'][0][k], 2)  # sampled order, / m
            self.assertTrue(torch.equal(r0['global'][k], expected))
            for c in range(3):
                self.assertTrue(torch.equal(r0['local'][c][k], expected))
        # the private layers of the sampled clients keep their trained values
        self.assertTrue(torch.equal(r0['local'][0]['conv1.lin.weight'], r0['trained'][0]['conv1.lin.weight']))

    def test_node_weighting_option(self):
        subgraphs, local_states = tiny_setup()
        fl = ref.LgFedAvgReference(subgraphs, 3, local_states, dropout=0.0, lr=0.2, local_ep=1, weighting='nodes')
        r = fl.train_round([0, 2])
        for k in ('conv2.bias', 'conv2.lin.weight'):
            expected = 5 / 11 * r['trained'][0][k] + 6 / 11 * r['trained'][2][k]  # 5- and 6-node clients
            self.assertTrue(torch.allclose(r['global'][k], expected, atol=1e-7))

    def test_round_is_deterministic_with_dropout_zero(self):
        subgraphs, local_states = tiny_setup()
        runs = []
        for _ in range(2):
            fl = ref.LgFedAvgReference(subgraphs, 3, local_states, dropout=0.0, lr=0.2, local_ep=2)
            runs.append([fl.train_round() for _ in range(2)])
        for a, b in zip(*runs):
            self.assertEqual(a['losses'], b['losses'])
            for k in a['global']:
                self.assertTrue(torch.equal(a['global'][k], b['global'][k]))
            for c in range(3):
                for k in KEYS:
                    self.assertTrue(torch.equal(a['local'][c][k], b['local'][c][k]))
        self.assertEqual(runs[0][0]['global_keys'], ['conv2.lin.weight', 'conv2.bias'])
        self.assertEqual(len(fl.evaluate()['clients']), 3)


if __name__ == '__main__':
    unittest.main()
