"""Checks of the FedMpa reference against hand-computed values and independent dense formulas.

Run from the repository root:
    /usr/bin/python3 -m unittest methods/fedmpa/reference/fedmpa_reference_test.py
or as a plain script from any directory.
"""
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedmpa.reference import fedmpa_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402

S6 = 1 / math.sqrt(6)  # 1 / sqrt((deg 1 + 1)(deg 2 + 1)) on the path 0 - 1 - 2
PATH3 = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])


def sigmoid(v):
    return 1 / (1 + math.exp(-v))


# ---- independent dense formulas (no oracle code) ----
def dense_a_tilde(n, pairs):
    """Paper Eq. 2 literally: A_hat = A + I, D_hat = diag(row sums of A_hat), D^-1/2 A_hat D^-1/2."""
    a = torch.zeros(n, n, dtype=torch.float64)
    for u, v in pairs:
        a[u, v] = a[v, u] = 1.0
    a_hat = a + torch.eye(n, dtype=torch.float64)
    d = a_hat.sum(1).rsqrt()
    return (d.view(-1, 1) * a_hat * d.view(1, -1)), a


def dense_mlp(state, x, num_layers):
    h = x
    for j in range(num_layers):
        h = h @ state['layers.%d.weight' % j].t() + state['layers.%d.bias' % j]
        if j < num_layers - 1:
            h = h.clamp(min=0)
    return h


def dense_appnp(state, x, p, K, alpha, num_layers):
    h0 = dense_mlp(state, x, num_layers)
    h = h0
    for _ in range(K):
        h = (1 - alpha) * (p @ h) + alpha * h0
    return h


def direct_ce(logits, y, mask):
    rows = [i for i in range(len(y)) if mask[i]]
    total = 0.0
    for i in rows:
        row = logits[i]
        m = max(row)
        lse = m + math.log(sum(math.exp(v - m) for v in row))
        total += lse - row[y[i]]
    return total / len(rows)


def first_adam_step(p, g, lr, eps=1e-8):
    """Torch Adam, step 1, by hand: m_hat = g, v_hat = g^2, p - lr g / (|g| + eps)."""
    return p - lr * g / (g.abs() + eps)


# ---- a tiny federated setup ----
PAIRS0 = [(0, 1), (1, 2), (2, 0), (3, 4)]
PAIRS1 = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (1, 5)]


def tiny_graph(gen, n, feat_dim, num_classes, pairs):
    src = torch.tensor([a for a, b in pairs] + [b for a, b in pairs])
    dst = torch.tensor([b for a, b in pairs] + [a for a, b in pairs])
    y = torch.arange(n) % num_classes
    train = torch.arange(n) < num_classes
    val = ~train & (torch.arange(n) % 2 == 0)
    return pyg.Data(x=torch.randn(n, feat_dim, generator=gen), edge_index=torch.stack([src, dst]), y=y,
                    train_idx=train, val_idx=val, test_idx=~train & ~val)


def label_graph(gen, n, pairs):
    """3 classes; features = 0.3 one-hot(y) + noise, plus a noise column; train = first 3 nodes, val = test = rest."""
    y = torch.arange(n) % 3
    x = torch.cat([F.one_hot(y, 3).float() * 0.3 + torch.randn(n, 3, generator=gen), torch.randn(n, 1, generator=gen)], 1)
    src = torch.tensor([a for a, b in pairs] + [b for a, b in pairs])
    dst = torch.tensor([b for a, b in pairs] + [a for a, b in pairs])
    train = torch.arange(n) < 3
    return pyg.Data(x=x, edge_index=torch.stack([src, dst]), y=y, train_idx=train, val_idx=~train, test_idx=~train)


HID = (6, 5)


def tiny_setup(num_classes=3, feat_dim=4):
    gen = torch.Generator().manual_seed(7)
    subgraphs = [tiny_graph(gen, 5, feat_dim, num_classes, PAIRS0), tiny_graph(gen, 7, feat_dim, num_classes, PAIRS1)]
    server = ref.glorot_mlp_state(feat_dim, HID, num_classes, gen)
    clients = [ref.glorot_mlp_state(feat_dim, HID, num_classes, gen) for _ in range(2)]
    for s in [server] + clients:  # non-zero biases so that they are exercised too
        for k in s:
            if k.endswith('bias'):
                s[k] = torch.randn(s[k].shape, generator=gen) * 0.1
    return subgraphs, {'server': server, 'clients': clients}


KW = dict(hidden_dims=HID, dropout=0.0, K=3, fedmlp_rounds=2, max_epochs=8, patience=3)


def states_equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def assert_same(test, a, b, path='out'):
    """Bit-identical nested results."""
    if torch.is_tensor(a):
        test.assertTrue(torch.equal(a, b), path)
    elif isinstance(a, dict):
        test.assertEqual(a.keys(), b.keys(), path)
        for k in a:
            assert_same(test, a[k], b[k], path + '.' + str(k))
    elif isinstance(a, (list, tuple)):
        test.assertEqual(len(a), len(b), path)
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(test, x, y, '%s[%d]' % (path, i))
    else:
        test.assertEqual(a, b, path)


class FedMpaReferenceTest(unittest.TestCase):

    def assertClose(self, actual, expected, atol=1e-6):
        expected = torch.as_tensor(expected, dtype=actual.dtype)
        self.assertEqual(tuple(actual.shape), tuple(expected.shape))
        self.assertTrue(torch.allclose(actual, expected, atol=atol), f'{actual} != {expected}')

    # ---- the graph: note A.2.0, Eq. 2 ----
    def test_propagation_matrix_path_by_hand(self):
        ei, w = ref.propagation_matrix(PATH3, 3)
        dense = pyg.to_dense_adj(ei, 3, w)[0]
        self.assertClose(dense, [[1 / 2, S6, 0], [S6, 1 / 3, S6], [0, S6, 1 / 2]])

    def test_propagation_matrix_dedups_and_symmetrises(self):
        # duplicate column (0,1), self-loop column (1,1), one-way edge 2 -> 3, isolated node 4.
        ei = torch.tensor([[0, 1, 1, 2, 0, 1, 2], [1, 0, 2, 1, 1, 1, 3]])
        p, a = dense_a_tilde(5, [(0, 1), (1, 2), (2, 3)])
        e, w = ref.propagation_matrix(ei, 5)
        self.assertClose(pyg.to_dense_adj(e, 5, w)[0].double(), p)
        self.assertEqual(float(p[4, 4]), 1.0)  # isolated: only its self-loop
        self.assertClose(ref.dense_adjacency(ei, 5).double(), a)
        self.assertEqual(float(ref.dense_adjacency(ei, 5).diagonal().sum()), 0.0)

    # ---- the propagation: Eqs. 2 / 6 ----
    def test_one_step_by_hand(self):
        prop = ref.propagation_matrix(PATH3, 3)
        h0 = torch.tensor([[1.0], [0.0], [0.0]])
        self.assertTrue(torch.equal(ref.appnp_propagate(h0, prop, K=0), h0))
        h1 = ref.appnp_propagate(h0, prop, K=1, alpha=0.1)
        self.assertClose(h1, [[0.9 * 0.5 + 0.1], [0.9 * S6], [0.0]])

    def test_propagation_against_dense_iteration_and_closed_form(self):
        gen = torch.Generator().manual_seed(3)
        pairs = [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4)]
        ei = torch.tensor([[a for a, b in pairs] + [b for a, b in pairs], [b for a, b in pairs] + [a for a, b in pairs]])
        h0 = torch.randn(6, 3, generator=gen)  # node 5 isolated
        p, _ = dense_a_tilde(6, pairs)
        prop = ref.propagation_matrix(ei, 6)
        dense = h0.double()
        for _ in range(4):
            dense = 0.8 * (p @ dense) + 0.2 * h0.double()
        self.assertClose(ref.appnp_propagate(h0, prop, K=4, alpha=0.2).double(), dense, atol=1e-6)
        # K -> infinity: the PPR fixed point alpha (I - (1 - alpha) A~)^-1 H0.
        closed = 0.1 * torch.linalg.solve(torch.eye(6, dtype=torch.float64) - 0.9 * p, h0.double())
        self.assertClose(ref.appnp_propagate(h0, prop, K=250, alpha=0.1).double(), closed, atol=1e-5)
        self.assertClose(ref.appnp_propagate(h0, prop, K=250, alpha=0.1)[5], h0[5])  # isolated node

    # ---- the MLP: Eqs. 1 / 4, note A.2.1 ----
    def test_mlp_keys_forward_and_dropout_order(self):
        gen = torch.Generator().manual_seed(5)
        state = ref.glorot_mlp_state(4, (6, 5), 3, gen)
        self.assertEqual({k: tuple(v.shape) for k, v in state.items()},
                         {'layers.0.weight': (6, 4), 'layers.0.bias': (6,), 'layers.1.weight': (5, 6),
                          'layers.1.bias': (5,), 'layers.2.weight': (3, 5), 'layers.2.bias': (3,)})
        for j, (fan_in, fan_out) in enumerate([(4, 6), (6, 5), (5, 3)]):  # Glorot-uniform bound per layer
            self.assertLessEqual(float(state['layers.%d.weight' % j].abs().max()), math.sqrt(6 / (fan_in + fan_out)))
            self.assertTrue(torch.equal(state['layers.%d.bias' % j], torch.zeros(fan_out)))
        x = torch.randn(7, 4, generator=gen)
        mlp = ref.MLP(4, (6, 5), 3, dropout=0.5)
        mlp.load_state_dict(state)
        mlp.eval()
        out, hidden = mlp(x)
        self.assertClose(out, dense_mlp(state, x, 3), atol=1e-6)
        h1 = (x @ state['layers.0.weight'].t() + state['layers.0.bias']).clamp(min=0)
        self.assertClose(hidden, (h1 @ state['layers.1.weight'].t() + state['layers.1.bias']).clamp(min=0))
        relu = ref.MLP(4, (6, 5), 3, dropout=0.0, act_out='relu')
        relu.load_state_dict(state)
        self.assertClose(relu(x)[0], dense_mlp(state, x, 3).clamp(min=0))
        # Train mode: dropout before EVERY dense layer, the input included (stellargraph order).
        mlp.train()
        torch.manual_seed(123)
        got = mlp(x)[0]
        torch.manual_seed(123)
        h = x
        for j in range(3):
            h = F.dropout(h, 0.5, True) @ state['layers.%d.weight' % j].t() + state['layers.%d.bias' % j]
            h = h.clamp(min=0) if j < 2 else h
        self.assertTrue(torch.equal(got, h))

    # ---- loss terms ----
    def test_cross_entropy_by_hand(self):
        logits = torch.tensor([[0.0, 0.0], [math.log(3), 0.0], [5.0, -5.0]])
        y = torch.tensor([0, 0, 1])
        mask = torch.tensor([True, True, False])
        self.assertAlmostEqual(float(ref.ce_loss(logits, y, mask)), (math.log(2) + math.log(4 / 3)) / 2, places=6)
        self.assertEqual(float(ref.ce_loss(logits, y, torch.zeros(3, dtype=torch.bool))), 0.0)

    def test_reconstruction_mse_by_hand(self):
        a = ref.dense_adjacency(PATH3, 3)
        # Z = 0: A_bar = 1/2 everywhere, every squared error is 1/4.
        self.assertAlmostEqual(float(ref.recon_mse(ref.inner_product_decoder(torch.zeros(3, 2)), a)), 0.25, places=7)
        # n = 2, A = [[0,1],[1,0]], Z = [[1],[2]]: Z Z^T = [[1,2],[2,4]].
        z = torch.tensor([[1.0], [2.0]])
        a2 = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
        want = (sigmoid(1) ** 2 + 2 * (1 - sigmoid(2)) ** 2 + sigmoid(4) ** 2) / 4
        self.assertAlmostEqual(float(ref.recon_mse(ref.inner_product_decoder(z), a2)), want, places=6)
        total, ce, rec = ref.fedmpae_loss(torch.tensor([[math.log(3), 0.0], [0.0, 0.0]]), torch.tensor([0, 1]),
                                          torch.tensor([True, False]), z, a2, beta=2.0, gamma=3.0)
        self.assertAlmostEqual(float(ce), math.log(4 / 3), places=6)
        self.assertAlmostEqual(float(rec), want, places=6)
        self.assertAlmostEqual(float(total), 2 * math.log(4 / 3) + 3 * want, places=5)
        # Eq. 8 (super-node variant) with Frobenius norms.
        a_check = a2 + torch.eye(2)
        r, anchor, dec = ref.recon_supernode(a2, a_check, ref.inner_product_decoder(z), a=2.0, b=0.5)
        want_dec = math.sqrt((sigmoid(1) - 1) ** 2 + 2 * (sigmoid(2) - 1) ** 2 + (sigmoid(4) - 1) ** 2)
        self.assertAlmostEqual(float(anchor), math.sqrt(2), places=6)
        self.assertAlmostEqual(float(dec), want_dec, places=6)
        self.assertAlmostEqual(float(r), 2 * math.sqrt(2) + 0.5 * want_dec, places=5)

    def test_l2_kernel_penalty_by_hand(self):
        mlp = ref.MLP(2, (), 1, 0.0)
        mlp.load_state_dict({'layers.0.weight': torch.tensor([[1.0, -2.0]]), 'layers.0.bias': torch.tensor([7.0])})
        self.assertAlmostEqual(float(ref.l2_kernel_penalty(mlp, 1e-3)), 5e-3, places=8)  # bias excluded

    # ---- aggregation: Eq. 5 ----
    def test_aggregation_by_hand(self):
        out = ref.aggregate([{'w': torch.tensor([1.0, 2.0])}, {'w': torch.tensor([3.0, 6.0])}])
        self.assertTrue(torch.equal(out['w'], torch.tensor([2.0, 4.0])))
        out = ref.aggregate([{'w': torch.tensor([0.1])}, {'w': torch.tensor([0.2])}, {'w': torch.tensor([0.3])}])
        self.assertAlmostEqual(float(out['w']), 0.2, places=7)
        self.assertEqual(out['w'].dtype, torch.float32)
        out = ref.aggregate([{'w': torch.tensor([1.0])}, {'w': torch.tensor([5.0])}], [0.25, 0.75])
        self.assertEqual(float(out['w']), 4.0)

    # ---- optimiser and early stopping ----
    def test_adam_matches_torch_and_keras_by_hand(self):
        gen = torch.Generator().manual_seed(9)
        p0 = torch.randn(4, generator=gen)
        grads = [torch.randn(4, generator=gen) for _ in range(3)]
        mine, theirs = p0.clone().requires_grad_(), p0.clone().requires_grad_()
        opt, topt = ref.Adam(lr=0.01), torch.optim.Adam([theirs], lr=0.01)
        for g in grads:
            mine.grad, theirs.grad = g.clone(), g.clone()
            opt.step([('p', mine)])
            topt.step()
        self.assertTrue(torch.equal(mine, theirs))
        k = p0.clone().requires_grad_()
        k.grad = grads[0].clone()
        ref.Adam(lr=0.01, style='keras').step([('p', k)])
        lr_t = 0.01 * math.sqrt(0.001) / 0.1
        want = p0 - lr_t * 0.1 * grads[0] / ((0.001 * grads[0] ** 2).sqrt() + 1e-7)
        self.assertClose(k.detach(), want)

    def test_early_stopping_keras_semantics(self):
        es = ref.EarlyStopping(patience=2)
        trace = [es.update(e, s) for e, s in enumerate([3, 5, 5, 4], start=1)]
        self.assertEqual(trace, [(True, False), (True, False), (False, False), (False, True)])
        self.assertEqual(es.best_epoch, 2)  # a tie (epoch 3) is not an improvement
        es = ref.EarlyStopping(patience=2)
        self.assertEqual(es.update(1, 0), (True, False))  # the first epoch always improves

    # ---- the pipeline ----
    def test_stage1_round_replayed_by_hand(self):
        subgraphs, init = tiny_setup()
        fl = ref.FedMpaReference(subgraphs, 3, init, **KW)
        r1 = fl.train_round()
        self.assertEqual(r1['round'], 1)
        self.assertTrue(states_equal(r1['broadcast'], init['server']))
        uploads = []
        for k, g in enumerate(subgraphs):
            params = {n: v.clone().requires_grad_() for n, v in init['server'].items()}
            out = dense_mlp(params, g.x, 3)
            loss = -F.log_softmax(out, 1)[g.train_idx].gather(1, g.y[g.train_idx].view(-1, 1)).mean()
            loss.backward()
            self.assertAlmostEqual(r1['losses'][k][0]['ce'], direct_ce(out.tolist(), g.y.tolist(),
                                                                       g.train_idx.tolist()), places=5)
            up = {n: first_adam_step(v.detach(), v.grad, 0.01) for n, v in params.items()}
            for n in up:
                self.assertClose(r1['uploads'][k][n], up[n], atol=1e-6)
            self.assertTrue(states_equal(r1['uploads'][k], r1['clients'][k]))
            uploads.append(r1['uploads'][k])
        for n in r1['server']:  # Eq. 5, by hand: (theta_1 + theta_2) / 2
            self.assertClose(r1['server'][n], (uploads[0][n].double() + uploads[1][n].double()).float() / 2)
        r2 = fl.train_round()
        self.assertTrue(states_equal(r2['broadcast'], r1['server']))
        self.assertFalse(states_equal(r2['server'], r1['server']))

    def test_local_epoch_replayed_by_hand(self):
        subgraphs, init = tiny_setup()
        kw = dict(KW, fedmlp_rounds=1, max_epochs=1)
        for variant in ('fedmpa', 'fedmpae'):
            fl = ref.FedMpaReference(subgraphs, 3, init, variant=variant, **kw)
            theta = fl.train_round()['server']
            loc = fl.train_local()
            self.assertEqual(loc['best_epoch'], [1, 1])
            for k, (g, pairs) in enumerate(zip(subgraphs, (PAIRS0, PAIRS1))):
                self.assertTrue(states_equal(loc['start_states'][k], theta))
                p, a = dense_a_tilde(g.x.size(0), pairs)
                params = {n: v.clone().requires_grad_() for n, v in theta.items()}
                h = dense_appnp(params, g.x, p.float(), 3, 0.1, 3)
                ce = -F.log_softmax(h, 1)[g.train_idx].gather(1, g.y[g.train_idx].view(-1, 1)).mean()
                loss = ce
                self.assertAlmostEqual(loc['losses'][k][0]['ce'], direct_ce(h.tolist(), g.y.tolist(),
                                                                           g.train_idx.tolist()), places=5)
                if variant == 'fedmpae':  # Eq. 10, beta = gamma = 1, Z = R^(K)
                    rec = ((a.float() - torch.sigmoid(h @ h.t())) ** 2).sum() / g.x.size(0) ** 2
                    loss = ce + rec
                    self.assertAlmostEqual(loc['losses'][k][0]['recon'], float(rec), places=5)
                else:
                    self.assertIsNone(loc['losses'][k][0]['recon'])
                self.assertAlmostEqual(loc['losses'][k][0]['total'], float(loss), places=5)
                loss.backward()
                for n, v in params.items():
                    self.assertClose(loc['clients'][k][n], first_adam_step(v.detach(), v.grad, 0.01), atol=1e-6)

    def test_full_two_client_run_is_deterministic_and_trains(self):
        subgraphs, init = tiny_setup()
        for variant in ('fedmpa', 'fedmpae', 'locmpa', 'fedmlp'):
            a = ref.FedMpaReference(subgraphs, 3, init, variant=variant, **KW).run()
            b = ref.FedMpaReference(subgraphs, 3, init, variant=variant, **KW).run()
            assert_same(self, a, b, variant)
            if variant == 'locmpa':
                self.assertEqual(a['fedmlp'], [])
                self.assertIsNone(a['server'])
                starts = init['clients']
            else:
                self.assertEqual(len(a['fedmlp']), 2)
                self.assertFalse(states_equal(a['server'], init['server']))
                starts = [a['server'], a['server']]
            if variant == 'fedmlp':
                self.assertIsNone(a['local'])
                continue
            loc = a['local']
            for k in range(2):
                self.assertTrue(states_equal(loc['start_states'][k], starts[k]))
                self.assertFalse(states_equal(loc['clients'][k], starts[k]))
                vals = [e['val_correct'] for e in loc['losses'][k]]
                best = loc['best_epoch'][k]
                self.assertEqual(best, vals.index(max(vals)) + 1)  # first best epoch kept
                self.assertEqual(loc['epochs_run'][k], min(8, best + 3))
        with self.assertRaises(ValueError):
            ref.FedMpaReference(subgraphs, 3, init, variant='locmpa', **KW).train_round()

    def test_restore_best_equals_training_to_the_best_epoch(self):
        # Labels weakly visible in the features, so that the best val epoch is interior.
        gen = torch.Generator().manual_seed(2)
        subgraphs = [label_graph(gen, 6, [(i, i + 1) for i in range(5)]), label_graph(gen, 6, [(0, 2), (1, 3), (2, 4), (3, 5)])]
        init = {'clients': [ref.glorot_mlp_state(4, HID, 3, gen) for _ in range(2)]}
        kw = dict(KW, max_epochs=30, patience=6, lr=0.05)
        loc = ref.FedMpaReference(subgraphs, 3, init, variant='locmpa', **kw).train_local()
        self.assertEqual(loc['best_epoch'], [3, 2])  # later ties do not count as improvements
        self.assertEqual(loc['epochs_run'], [9, 8])
        for k in range(2):
            best = loc['best_epoch'][k]
            fixed = ref.FedMpaReference(subgraphs, 3, init, variant='locmpa', **dict(
                kw, max_epochs=best, early_stopping=False)).train_local()
            self.assertTrue(states_equal(fixed['clients'][k], loc['clients'][k]))
            self.assertEqual(fixed['epochs_run'][k], best)
            full = ref.FedMpaReference(subgraphs, 3, init, variant='locmpa', **dict(
                kw, max_epochs=loc['epochs_run'][k], early_stopping=False)).train_local()
            self.assertFalse(states_equal(full['clients'][k], loc['clients'][k]))  # not the last epoch's weights

    def test_adam_sharing_switch(self):
        subgraphs, init = tiny_setup()
        per = ref.FedMpaReference(subgraphs, 3, init, **KW).train_round()
        shared = ref.FedMpaReference(subgraphs, 3, init, fedmlp_adam='shared', **KW).train_round()
        self.assertTrue(states_equal(per['uploads'][0], shared['uploads'][0]))
        self.assertFalse(states_equal(per['uploads'][1], shared['uploads'][1]))  # client 1 sees client 0's moments
        # Per-client moments persist across rounds: a fresh Adam agrees in round 1, not in round 2.
        per_fl = ref.FedMpaReference(subgraphs, 3, init, **KW)
        fresh_fl = ref.FedMpaReference(subgraphs, 3, init, fedmlp_adam='fresh', **KW)
        self.assertTrue(all(states_equal(a, b) for a, b in zip(per_fl.train_round()['uploads'],
                                                               fresh_fl.train_round()['uploads'])))
        p2, f2 = per_fl.train_round(), fresh_fl.train_round()
        for k in range(2):
            self.assertFalse(states_equal(p2['uploads'][k], f2['uploads'][k]))

    def test_supernode_variant(self):
        subgraphs, init = tiny_setup()
        kw = dict(KW, fedmlp_rounds=0, max_epochs=3)
        mse = ref.FedMpaReference(subgraphs, 3, init, variant='fedmpae', **kw).train_local()
        sn_fl = ref.FedMpaReference(subgraphs, 3, init, variant='fedmpae', recon='supernode', **kw)
        sn = sn_fl.train_local()
        for k, (g, pairs) in enumerate(zip(subgraphs, (PAIRS0, PAIRS1))):
            n = g.x.size(0)
            # A_check = A + I at init: the same propagation, so the same CE at epoch 1.
            self.assertAlmostEqual(sn['losses'][k][0]['ce'], mse['losses'][k][0]['ce'], places=6)
            p, a = dense_a_tilde(n, pairs)
            h = dense_appnp(init['server'], g.x, p.float(), 3, 0.1, 3)
            dec = torch.linalg.norm(torch.sigmoid(h @ h.t()) - (a.float() + torch.eye(n)))
            self.assertAlmostEqual(sn['losses'][k][0]['recon_anchor'], math.sqrt(n), places=5)
            self.assertAlmostEqual(sn['losses'][k][0]['recon_dec'], float(dec), places=4)
            self.assertEqual(tuple(sn['adj_weights'][k].shape), (len(pairs) + n,))
            self.assertGreaterEqual(float(sn['adj_weights'][k].min()), 0.0)
            self.assertFalse(torch.equal(sn['adj_weights'][k], torch.ones(len(pairs) + n)))
        self.assertEqual(len(sn_fl.evaluate()['clients']), 2)

    def test_evaluate_micro_and_macro(self):
        subgraphs, init = tiny_setup()
        fl = ref.FedMpaReference(subgraphs, 3, init, **KW)
        fl.run()
        ev = fl.evaluate()
        correct, count, accs = 0, 0, []
        for k, (g, pairs) in enumerate(zip(subgraphs, (PAIRS0, PAIRS1))):
            p, _ = dense_a_tilde(g.x.size(0), pairs)
            pred = dense_appnp(fl.local_states[k], g.x, p.float(), 3, 0.1, 3).argmax(1)
            c = int((pred[g.test_idx] == g.y[g.test_idx]).sum())
            correct, count = correct + c, count + int(g.test_idx.sum())
            accs.append(100.0 * c / int(g.test_idx.sum()))
            self.assertAlmostEqual(ev['clients'][k]['acc_test'], accs[-1])
        self.assertAlmostEqual(ev['micro_test'], 100.0 * correct / count)
        self.assertAlmostEqual(ev['macro_test'], sum(accs) / 2)
        fm = fl.evaluate('fedmlp')  # no propagation, server MLP
        for k, g in enumerate(subgraphs):
            pred = dense_mlp(fl.server_state, g.x, 3).argmax(1)
            self.assertEqual(fm['clients'][k]['correct_test'], int((pred[g.test_idx] == g.y[g.test_idx]).sum()))


if __name__ == '__main__':
    unittest.main()
