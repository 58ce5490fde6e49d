"""Checks of the FedKD reference port against hand-computed values and an independent re-simulation.

Run from the repository root:
    /usr/bin/python3 -m unittest methods/fedkd/reference/fedkd_reference_test.py
or as a plain script from any directory.
"""
import math
import os
import sys
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedkd.reference import fedkd_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402


def softmax(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    return [v / sum(e) for v in e]


def kl(p, q):
    return sum(a * (math.log(a) - math.log(b)) for a, b in zip(p, q))


def dense_norm_adj(edge_index, n):
    a = torch.zeros(n, n)
    a[edge_index[1], edge_index[0]] = 1.0
    a = a + torch.eye(n)
    d = a.sum(1).pow(-0.5)
    return d.view(-1, 1) * a * d.view(1, -1)


def functional_gcn(p, x, a_hat):
    h = torch.relu(a_hat @ (x @ p['conv1.lin.weight'].t()) + p['conv1.bias'])
    return h, a_hat @ (h @ p['conv2.lin.weight'].t()) + p['conv2.bias']


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


def tiny_setup():
    gen = torch.Generator().manual_seed(5)
    subgraphs = [random_subgraph(gen, 5, 4, 3, 6), random_subgraph(gen, 7, 4, 3, 9)]
    mentor_states = [gcn_state(gen, 4, 3, 3), gcn_state(gen, 4, 3, 3)]
    mentee_state = gcn_state(gen, 4, 3, 3)
    return subgraphs, mentor_states, mentee_state


class FedKdReferenceTest(unittest.TestCase):

    def test_state_dict_keys(self):
        self.assertEqual(list(ref.GCN(4, 8, 3, 0.5).state_dict().keys()),
                         ['conv1.bias', 'conv1.lin.weight', 'conv2.bias', 'conv2.lin.weight'])

    def test_losses_by_hand(self):
        mentor = [[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]]
        mentee = [[0.0, 1.0, 0.0], [1.0, 1.0, -2.0]]
        h_mentor = [[1.0, 0.0], [2.0, 1.0]]
        h_mentee = [[0.0, 0.5], [2.0, 3.0]]
        y = [0, 2]
        out = ref.fedkd_losses(torch.tensor(mentor), torch.tensor(mentee), torch.tensor(y),
                               torch.tensor(h_mentor), torch.tensor(h_mentee))
        l1 = sum(-math.log(softmax(r)[c]) for r, c in zip(mentor, y)) / 2
        l2 = sum(-math.log(softmax(r)[c]) for r, c in zip(mentee, y)) / 2
        # KLDivLoss() 'mean': divided by rows * classes = 6, not by rows
        kl_mentor = sum(kl(softmax(s), softmax(t)) for t, s in zip(mentor, mentee)) / 6  # KL(p_mentee || p_mentor)
        kl_mentee = sum(kl(softmax(t), softmax(s)) for t, s in zip(mentor, mentee)) / 6  # KL(p_mentor || p_mentee)
        mse = ((0 - 1) ** 2 + 0.5 ** 2 + 0 ** 2 + 2 ** 2) / 4
        s = l1 + l2
        expected = {'ce_mentor': l1, 'ce_mentee': l2, 'kl_mentor': kl_mentor, 'kl_mentee': kl_mentee, 'mse': mse,
                    'loss3': kl_mentor / s, 'loss4': kl_mentee / s,
                    'total': l1 + l2 + (kl_mentor + kl_mentee + 2 * mse) / s}  # MSE counted twice
        for name, value in expected.items():
            self.assertAlmostEqual(float(out[name]), value, places=6, msg=name)

    def test_gradient_by_hand_nothing_detached(self):
        zt = torch.tensor([[0.3, -0.4, 1.1]], requires_grad=True)  # mentor logits, one row
        zs = torch.tensor([[1.0, 0.2, -0.5]], requires_grad=True)  # mentee logits
        ht = torch.tensor([[0.7, 0.0]], requires_grad=True)
        hs = torch.tensor([[0.2, 0.4]], requires_grad=True)
        y = 1
        out = ref.fedkd_losses(zt, zs, torch.tensor([y]), ht, hs)
        out['total'].backward()
        pt, ps = softmax(zt[0].tolist()), softmax(zs[0].tolist())
        l1, l2 = -math.log(pt[y]), -math.log(ps[y])
        s, c = l1 + l2, 3
        k3 = kl(ps, pt) / c
        k4 = kl(pt, ps) / c
        m = ((0.2 - 0.7) ** 2 + 0.4 ** 2) / 2
        big = k3 + k4 + 2 * m
        kl_tp = kl(pt, ps)
        for j in range(3):
            dl1 = pt[j] - (1.0 if j == y else 0.0)
            dk3 = (pt[j] - ps[j]) / c  # through log_softmax(mentor)
            dk4 = pt[j] * ((math.log(pt[j]) - math.log(ps[j])) - kl_tp) / c  # through the TARGET softmax(mentor)
            g = dl1 + (dk3 + dk4) / s - big / s ** 2 * dl1  # the denominator l1 + l2 is not detached
            self.assertAlmostEqual(float(zt.grad[0, j]), g, places=6)
        for k, (a, b) in enumerate(zip([0.2, 0.4], [0.7, 0.0])):
            self.assertAlmostEqual(float(ht.grad[0, k]), 2 / s * (-(a - b)), places=6)  # 2 * d/dh_t MSE / s
            self.assertAlmostEqual(float(hs.grad[0, k]), 2 / s * (a - b), places=6)

    def test_energy_schedule(self):
        self.assertAlmostEqual(ref.svd_energy(0, 1), 0.98, places=12)
        self.assertAlmostEqual(ref.svd_energy(0, 2), 0.965, places=12)
        self.assertAlmostEqual(ref.svd_energy(1, 2), 0.98, places=12)
        self.assertAlmostEqual(ref.svd_energy(0, 100), 0.9503, places=12)

    def test_client_compression_thresholds_by_hand(self):
        # sigma = (3, 1, 0.5): energies 9, 10, 10.25; 0.95 * 10.25 = 9.7375 -> top-2 (10 > 9.7375)
        d = np.diag(np.array([3.0, 1.0, 0.5], dtype=np.float32))
        kind, (u, s, v) = ref.compress_client(d, 0.95)
        self.assertEqual((kind, len(s)), ('svd', 2))
        self.assertTrue(np.allclose(ref.reconstruct((kind, (u, s, v))), np.diag([3.0, 1.0, 0.0]), atol=1e-6))
        # sigma = (1, 1), energy 0.5: the client needs top-k > 1; k = 1 gives 1 (not >), k = 2 is never tried:
        # rank 0, the update is sent as ZERO. The server's '>=' accepts k = 1.
        eye = np.eye(2, dtype=np.float32)
        kind, (u, s, v) = ref.compress_client(eye, 0.5)
        self.assertEqual(len(s), 0)
        self.assertTrue(np.array_equal(ref.reconstruct((kind, (u, s, v))), np.zeros((2, 2), dtype=np.float32)))
        kind, (u, s, v) = ref.compress_client(eye, 0.5, zero_fallback=False)
        self.assertEqual(len(s), 2)
        self.assertTrue(np.allclose(ref.reconstruct((kind, (u, s, v))), eye, atol=1e-6))
        kind, (u, s, v) = ref.compress_server(eye, 0.5)
        self.assertEqual(len(s), 1)
        self.assertAlmostEqual(float(np.square(ref.reconstruct((kind, (u, s, v)))).sum()), 1.0, places=6)
        # A single-row matrix has one singular value: range(1) only tries k = 0, so it is always zeroed.
        kind, (u, s, v) = ref.compress_client(np.array([[1.0, 2.0, 3.0]], dtype=np.float32), 0.5)
        self.assertTrue(np.array_equal(ref.reconstruct((kind, (u, s, v))), np.zeros((1, 3), dtype=np.float32)))
        # rank-1 update: kept exactly with rank 1
        r1 = np.array([[3.0, 0.0], [0.0, 0.0]], dtype=np.float32)
        kind, (u, s, v) = ref.compress_client(r1, 0.98)
        self.assertEqual(len(s), 1)
        self.assertTrue(np.allclose(ref.reconstruct((kind, (u, s, v))), r1, atol=1e-6))
        # all-zero matrices and vectors travel raw
        z = np.zeros((2, 3), dtype=np.float32)
        self.assertEqual(ref.compress_client(z, 0.95)[0], 'raw')
        self.assertEqual(ref.compress_server(z, 0.95)[0], 'raw')
        b = np.array([1.0, -2.0, 3.0], dtype=np.float32)  # 3 entries: upstream's len()==3 test would misfire
        self.assertEqual(ref.compress_client(b, 0.95), ('raw', b))
        self.assertTrue(np.array_equal(ref.reconstruct(('raw', b)), b))

    def simulate(self, subgraphs, mentor_states, mentee_state, rounds, steps, lr):
        """Independent re-simulation with svd=False: functional GCNs and a hand-written Adam
        (betas 0.9 / 0.999, eps 1e-8, no weight decay) whose moments persist across rounds, also for
        the mentee whose values the server overwrites with start + mean update."""
        b1, b2, eps = 0.9, 0.999, 1e-8
        adj = [dense_norm_adj(g.edge_index, g.x.size(0)) for g in subgraphs]
        models = [{'t': {k: v.clone() for k, v in mentor_states[i].items()},
                   's': {k: v.clone() for k, v in mentee_state.items()}} for i in range(len(subgraphs))]
        adam = [{} for _ in subgraphs]
        history = []
        for _ in range(rounds):
            starts = [{k: v.clone() for k, v in m['s'].items()} for m in models]
            for i, g in enumerate(subgraphs):
                for _ in range(steps):
                    pt = {k: v.clone().requires_grad_() for k, v in models[i]['t'].items()}
                    ps = {k: v.clone().requires_grad_() for k, v in models[i]['s'].items()}
                    (ht, zt), (hs, zs) = functional_gcn(pt, g.x, adj[i]), functional_gcn(ps, g.x, adj[i])
                    t = g.train_idx
                    yt = g.y[t]
                    lt, ls = torch.log_softmax(zt[t], 1), torch.log_softmax(zs[t], 1)
                    l1 = -lt[torch.arange(len(yt)), yt].mean()
                    l2 = -ls[torch.arange(len(yt)), yt].mean()
                    k3 = (ls.exp() * (ls - lt)).mean()
                    k4 = (lt.exp() * (lt - ls)).mean()
                    mse = ((hs[t] - ht[t]) ** 2).mean()
                    loss = l1 + l2 + (k3 + k4 + 2 * mse) / (l1 + l2)
                    names = [('t', k) for k in pt] + [('s', k) for k in ps]
                    grads = torch.autograd.grad(loss, list(pt.values()) + list(ps.values()))
                    for (w, k), gr in zip(names, grads):
                        st = adam[i].setdefault((w, k), {'m': torch.zeros_like(gr), 'v': torch.zeros_like(gr), 't': 0})
                        st['t'] += 1
                        st['m'] = b1 * st['m'] + (1 - b1) * gr
                        st['v'] = b2 * st['v'] + (1 - b2) * gr * gr
                        mhat = st['m'] / (1 - b1 ** st['t'])
                        vhat = st['v'] / (1 - b2 ** st['t'])
                        models[i][w][k] = models[i][w][k] - lr * mhat / (vhat.sqrt() + eps)
            trained = [{k: v.clone() for k, v in m['s'].items()} for m in models]
            mean_update = {k: sum(trained[i][k] - starts[i][k] for i in range(len(models))) / len(models)
                           for k in mentee_state}
            for i in range(len(models)):
                models[i]['s'] = {k: starts[i][k] + mean_update[k] for k in mentee_state}
            history.append({'mentor': [dict(m['t']) for m in models], 'mentee': [dict(m['s']) for m in models],
                            'mentee_trained': trained})
        return history

    def test_two_rounds_without_svd_match_independent_simulation(self):
        subgraphs, mentor_states, mentee_state = tiny_setup()
        fl = ref.FedKdReference(subgraphs, 3, mentor_states, mentee_state, dropout=0.0, lr=0.05, local_steps=2,
                                num_rounds=2, svd=False)
        rounds = [fl.train_round() for _ in range(2)]
        sim = self.simulate(subgraphs, mentor_states, mentee_state, 2, 2, 0.05)
        for r, s in zip(rounds, sim):
            for key in ('mentor', 'mentee', 'mentee_trained'):
                for i in range(2):
                    for name, v in r[key][i].items():
                        self.assertTrue(torch.allclose(v, s[key][i][name], atol=2e-6), (key, i, name))
            # mentee = round-start mentee + (update_0 + update_1) / 2, in float32
            for name, upd in r['global_update'].items():
                self.assertTrue(torch.equal(upd, (r['updates'][0][name] + r['updates'][1][name]) / 2), name)
                self.assertTrue(torch.equal(r['uploads'][0][name], r['updates'][0][name]))
        with self.assertRaises(ValueError):
            fl.train_round()  # upstream never runs past R

    def test_round_with_svd_and_per_client_mentee_starts(self):
        subgraphs, mentor_states, mentee_state = tiny_setup()
        gen = torch.Generator().manual_seed(9)
        starts = [mentee_state, gcn_state(gen, 4, 3, 3)]
        fl = ref.FedKdReference(subgraphs, 3, mentor_states, starts, dropout=0.0, lr=0.05, local_steps=2, num_rounds=3)
        r = fl.train_round()
        self.assertAlmostEqual(r['energy'], 0.96, places=12)  # 0.95 + (1/3) * 0.03
        for i in range(2):
            self.assertEqual(sorted(r['ranks'][i]), ['conv1.lin.weight', 'conv2.lin.weight'])
            for name, rank in r['ranks'][i].items():
                self.assertLess(rank, min(r['updates'][i][name].shape))  # rank <= len(sigma) - 1 always
            for name in ('conv1.bias', 'conv2.bias'):
                self.assertTrue(torch.equal(r['uploads'][i][name], r['updates'][i][name]))  # biases raw
            for name, v in r['mentee'][i].items():
                # each client adds the SAME global update to ITS OWN round-start mentee
                self.assertTrue(torch.equal(v, starts[i][name] + r['global_update'][name]), name)
        for name, msg in r['uploads'][0].items():
            if isinstance(msg, dict):
                rec = msg['u'] @ torch.diag(msg['sigma']) @ msg['v']
                self.assertEqual(tuple(rec.shape), tuple(r['updates'][0][name].shape))

    def test_round_is_deterministic_with_dropout_zero(self):
        subgraphs, mentor_states, mentee_state = tiny_setup()
        runs = []
        for _ in range(2):
            fl = ref.FedKdReference(subgraphs, 3, mentor_states, mentee_state, dropout=0.0, lr=0.05, local_steps=2,
                                    num_rounds=2)
            runs.append([fl.train_round() for _ in range(2)])
        for a, b in zip(*runs):
            self.assertEqual(a['losses'], b['losses'])
            self.assertEqual(a['ranks'], b['ranks'])
            for name in a['global_update']:
                self.assertTrue(torch.equal(a['global_update'][name], b['global_update'][name]))
            for i in range(2):
                for key in ('mentor', 'mentee'):
                    for name in a[key][i]:
                        self.assertTrue(torch.equal(a[key][i][name], b[key][i][name]))
        self.assertEqual(sorted(runs[0][0]['losses'][0][0]),
                         ['ce_mentee', 'ce_mentor', 'kl_mentee', 'kl_mentor', 'loss3', 'loss4', 'mse', 'total'])
        fl = ref.FedKdReference(subgraphs, 3, mentor_states, mentee_state, dropout=0.0)
        self.assertEqual(len(fl.evaluate()['clients']), 2)


if __name__ == '__main__':
    unittest.main()
