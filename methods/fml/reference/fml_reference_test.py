"""Checks of the FML reference port against hand-computed values and an independent re-simulation.

Run from the repository root:
    /usr/bin/python3 -m unittest methods/fml/reference/fml_reference_test.py
or as a plain script from any directory.
"""
import math
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fml.reference import fml_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402


# ---- independent scalar formulas (plain Python floats) ----
def softmax(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    return [v / sum(e) for v in e]


def kl(p, q):
    """KL(p || q)."""
    return sum(a * (math.log(a) - math.log(b)) for a, b in zip(p, q))


def ce(rows, y):
    return sum(-math.log(softmax(r)[c]) for r, c in zip(rows, y)) / len(rows)


# ---- an independent functional GCN (dense normalised adjacency, no pyg.py) ----
def dense_norm_adj(edge_index, n):
    a = torch.zeros(n, n)
    a[edge_index[1], edge_index[0]] = 1.0  # message src -> dst lands in row dst
    a = a + torch.eye(n)
    d = a.sum(1).pow(-0.5)
    return d.view(-1, 1) * a * d.view(1, -1)


def functional_gcn(p, x, a_hat):
    h = torch.relu(a_hat @ (x @ p['conv1.lin.weight'].t()) + p['conv1.bias'])
    return a_hat @ (h @ p['conv2.lin.weight'].t()) + p['conv2.bias']


def random_subgraph(gen, n, feat_dim, num_classes, num_edges):
    src = torch.randint(0, n, (num_edges,), generator=gen)
    dst = (src + torch.randint(1, n, (num_edges,), generator=gen)) % n
    y = torch.arange(n) % num_classes
    train = torch.arange(n) < n // 2 + 1
    return pyg.Data(x=torch.randn(n, feat_dim, generator=gen), edge_index=pyg.to_undirected(torch.stack([src, dst]), n),
                    y=y, train_idx=train, val_idx=~train & (torch.arange(n) % 2 == 0),
                    test_idx=~train & (torch.arange(n) % 2 == 1))


def gcn_state(gen, feat_dim, hid, num_classes, scale=0.5):
    shapes = {'conv1.bias': (hid,), 'conv1.lin.weight': (hid, feat_dim),
              'conv2.bias': (num_classes,), 'conv2.lin.weight': (num_classes, hid)}
    return {k: torch.randn(s, generator=gen) * scale for k, s in shapes.items()}


def tiny_setup():
    gen = torch.Generator().manual_seed(11)
    subgraphs = [random_subgraph(gen, 5, 4, 3, 6), random_subgraph(gen, 7, 4, 3, 9)]
    local_states = [gcn_state(gen, 4, 5, 3), gcn_state(gen, 4, 6, 3)]  # private widths differ from the meme's
    global_state = gcn_state(gen, 4, 3, 3)
    return subgraphs, local_states, global_state


def assert_states_equal(test, a, b):
    test.assertEqual(list(a.keys()), list(b.keys()))
    for k in a:
        test.assertTrue(torch.equal(a[k], b[k]), k)


class FmlReferenceTest(unittest.TestCase):

    def test_state_dict_keys(self):
        self.assertEqual(list(ref.GCN(4, 8, 3, 0.5).state_dict().keys()),
                         ['conv1.bias', 'conv1.lin.weight', 'conv2.bias', 'conv2.lin.weight'])

    def test_mutual_losses_by_hand(self):
        local = [[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]]
        meme = [[0.0, 1.0, 0.0], [1.0, 1.0, -2.0]]
        y = [0, 2]
        alpha, beta = 0.3, 0.8  # different, so a swap of the two weights shows
        out = ref.mutual_losses(torch.tensor(local), torch.tensor(meme), torch.tensor(y), alpha, beta)
        ce_l, ce_m = ce(local, y), ce(meme, y)
        # kl_local: the meme is the teacher, KL(p_meme || p_local), averaged over the 2 rows (batchmean)
        kl_l = sum(kl(softmax(m), softmax(l)) for l, m in zip(local, meme)) / 2
        kl_m = sum(kl(softmax(l), softmax(m)) for l, m in zip(local, meme)) / 2
        expected = {'ce_local': ce_l, 'kl_local': kl_l, 'ce_meme': ce_m, 'kl_meme': kl_m,
                    'loss_local': alpha * ce_l + (1 - alpha) * kl_l, 'loss_meme': beta * ce_m + (1 - beta) * kl_m}
        for name, value in expected.items():
            self.assertAlmostEqual(float(out[name]), value, places=6, msg=name)
        self.assertNotAlmostEqual(kl_l, kl_m, places=3)  # the direction matters on these numbers

    def test_teacher_is_detached_and_gradient_by_hand(self):
        local = torch.tensor([[1.0, 0.0, -1.0], [0.5, 2.0, 0.0]], requires_grad=True)
        meme = torch.tensor([[0.0, 1.0, 0.0], [1.0, 1.0, -2.0]], requires_grad=True)
        y = [0, 2]
        alpha = 0.3
        out = ref.mutual_losses(local, meme, torch.tensor(y), alpha, 0.8)
        out['loss_local'].backward()
        self.assertIsNone(meme.grad)  # the meme's logits enter loss_local detached
        # d/dz_local [a CE + (1-a) KL(p_m || p_l)] = [a (p_l - onehot) + (1-a)(p_l - p_m)] / B
        for i in range(2):
            pl, pm = softmax(local[i].tolist()), softmax(meme[i].tolist())
            for c in range(3):
                g = (alpha * (pl[c] - (1.0 if c == y[i] else 0.0)) + (1 - alpha) * (pl[c] - pm[c])) / 2
                self.assertAlmostEqual(float(local.grad[i, c]), g, places=6)
        local.grad = None
        out['loss_meme'].backward()
        self.assertIsNone(local.grad)

    def test_scheduled_lr(self):
        def schedule(num_rounds, stop_decay, rounds):
            lr, out = 0.01, []
            for r in range(rounds):
                lr = ref.scheduled_lr(r, lr, num_rounds, stop_decay)
                out.append(lr)
            return out

        # R = 6: trigger 2, decay at rounds 2 and 4.
        for got, want in zip(schedule(6, 50, 6), [1e-2, 1e-2, 1e-3, 1e-3, 1e-4, 1e-4]):
            self.assertAlmostEqual(got, want, places=15)
        # stop_decay 3: the decay at round 4 is skipped (4 >= 3).
        self.assertAlmostEqual(schedule(6, 3, 6)[-1], 1e-3, places=15)
        # Upstream defaults R = 50, stop_decay 50: trigger 16, decays at rounds 16, 32, 48.
        lrs = schedule(50, 50, 50)
        changes = [r for r in range(1, 50) if lrs[r] != lrs[r - 1]]
        self.assertEqual(changes, [16, 32, 48])
        # R = 100 (FedGKC's rounds): trigger 33; 66 >= stop_decay, so only one decay.
        lrs = schedule(100, 50, 100)
        self.assertEqual([r for r in range(1, 100) if lrs[r] != lrs[r - 1]], [33])
        # R < 3: trigger 0, upstream's `rounds % 0` raises from round 1 on.
        self.assertEqual(ref.scheduled_lr(0, 0.01, 2, 50), 0.01)
        with self.assertRaises(ZeroDivisionError):
            ref.scheduled_lr(1, 0.01, 2, 50)

    def test_merge_is_unweighted_mean_of_all_memes(self):
        subgraphs, local_states, global_state = tiny_setup()
        subgraphs.append(subgraphs[0])
        local_states.append(local_states[0])
        fl = ref.FmlReference(subgraphs, 3, local_states, global_state, dropout=0.0)
        values = [1.0, 2.0, 6.0]
        for k in range(3):
            fl.fork(k)
            with torch.no_grad():
                for p in fl.memes[k].parameters():
                    p.fill_(values[k])
        fl.merge()
        for v in fl.global_model.state_dict().values():
            self.assertTrue(torch.equal(v, torch.full_like(v, 3.0)))  # (1 + 2 + 6) / 3, not node-weighted

    def simulate(self, subgraphs, local_states, global_state, rounds, alpha, beta, lr, epochs, distill_all):
        """Independent re-simulation: functional GCNs, hand-written SGD with momentum 0.9 and L2 5e-4.
        The private model's momentum buffers persist across rounds; the meme's restart every round."""
        mom, wd = 0.9, 5e-4
        adj = [dense_norm_adj(g.edge_index, g.x.size(0)) for g in subgraphs]
        local = [{k: v.clone() for k, v in s.items()} for s in local_states]
        local_buf = [None] * len(subgraphs)
        glob = {k: v.clone() for k, v in global_state.items()}
        history = []
        for _ in range(rounds):
            memes = []
            for c, g in enumerate(subgraphs):
                meme, meme_buf = {k: v.clone() for k, v in glob.items()}, None
                for _ in range(epochs):
                    pl = {k: v.clone().requires_grad_() for k, v in local[c].items()}
                    pm = {k: v.clone().requires_grad_() for k, v in meme.items()}
                    zl, zm = functional_gcn(pl, g.x, adj[c]), functional_gcn(pm, g.x, adj[c])
                    t = g.train_idx
                    rows = slice(None) if distill_all else t
                    ql, qm = torch.log_softmax(zl[rows], 1), torch.log_softmax(zm[rows], 1)
                    n = ql.size(0)
                    kl_l = (qm.detach().exp() * (qm.detach() - ql)).sum() / n
                    kl_m = (ql.detach().exp() * (ql.detach() - qm)).sum() / n
                    ce_l = -torch.log_softmax(zl[t], 1)[torch.arange(int(t.sum())), g.y[t]].mean()
                    ce_m = -torch.log_softmax(zm[t], 1)[torch.arange(int(t.sum())), g.y[t]].mean()
                    gl = torch.autograd.grad(alpha * ce_l + (1 - alpha) * kl_l, list(pl.values()))
                    gm = torch.autograd.grad(beta * ce_m + (1 - beta) * kl_m, list(pm.values()))
                    for state, grads, bufs_owner in ((local[c], gl, 'local'), (meme, gm, 'meme')):
                        d = {k: gr + wd * state[k] for k, gr in zip(state, grads)}
                        buf = local_buf[c] if bufs_owner == 'local' else meme_buf
                        buf = d if buf is None else {k: mom * buf[k] + d[k] for k in d}
                        for k in state:
                            state[k] = state[k] - lr * buf[k]
                        if bufs_owner == 'local':
                            local_buf[c] = buf
                        else:
                            meme_buf = buf
                memes.append(meme)
            glob = {k: sum(m[k] for m in memes) / len(memes) for k in glob}
            history.append({'local': [dict(s) for s in local], 'meme': memes, 'global': dict(glob)})
        return history

    def check_against_simulation(self, distill_nodes):
        subgraphs, local_states, global_state = tiny_setup()
        alpha, beta, lr = 0.4, 0.7, 0.05
        fl = ref.FmlReference(subgraphs, 3, local_states, global_state, dropout=0.0, alpha=alpha, beta=beta,
                              local_epochs=2, lr=lr, lr_schedule=False, distill_nodes=distill_nodes)
        rounds = [fl.train_round() for _ in range(2)]
        sim = self.simulate(subgraphs, local_states, global_state, 2, alpha, beta, lr, 2, distill_nodes == 'all')
        for r, s in zip(rounds, sim):
            for c in range(2):
                for key in ('local', 'meme'):
                    for name, v in r[key][c].items():
                        self.assertTrue(torch.allclose(v, s[key][c][name], atol=1e-6), (key, c, name))
                for name, v in r['uploads'][c].items():
                    self.assertTrue(torch.equal(v, r['meme'][c][name]))
            for name, v in r['global'].items():
                self.assertTrue(torch.allclose(v, s['global'][name], atol=1e-6), name)
        return rounds

    def test_two_rounds_match_independent_simulation(self):
        rounds = self.check_against_simulation('train')
        self.assertEqual(len(rounds[0]['losses']), 2)
        self.assertEqual(sorted(rounds[0]['losses'][0][0].keys()),
                         ['ce_local', 'ce_meme', 'kl_local', 'kl_meme', 'loss_local', 'loss_meme'])

    def test_distill_over_all_nodes_matches_simulation(self):
        self.check_against_simulation('all')

    def test_round_is_deterministic_with_dropout_zero(self):
        subgraphs, local_states, global_state = tiny_setup()
        runs = []
        for _ in range(2):
            fl = ref.FmlReference(subgraphs, 3, local_states, global_state, dropout=0.0, local_epochs=2)
            runs.append([fl.train_round() for _ in range(2)])
        for a, b in zip(*runs):
            self.assertEqual(a['losses'], b['losses'])
            assert_states_equal(self, a['global'], b['global'])
            for c in range(2):
                assert_states_equal(self, a['local'][c], b['local'][c])
                assert_states_equal(self, a['uploads'][c], b['uploads'][c])
        first = runs[0][0]
        self.assertEqual(first['lr'], 0.01)
        # The private models keep their own widths; the meme keeps the global one.
        self.assertEqual(tuple(first['local'][1]['conv1.lin.weight'].shape), (6, 4))
        self.assertEqual(tuple(first['global']['conv1.lin.weight'].shape), (3, 4))
        # global = (upload_0 + upload_1) / 2, accumulated from zero in float32
        for name, v in first['global'].items():
            expected = (torch.zeros_like(v) + first['uploads'][0][name] + first['uploads'][1][name]) / 2
            self.assertTrue(torch.equal(v, expected), name)
        ev = ref.FmlReference(subgraphs, 3, local_states, global_state, dropout=0.0).evaluate()
        self.assertEqual(len(ev['clients']), 2)


if __name__ == '__main__':
    unittest.main()
