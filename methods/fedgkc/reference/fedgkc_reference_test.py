"""Checks of the FedGKC reference against hand-computed values and independent direct formulas.

Run from the repository root:
    /usr/bin/python3 -m unittest methods/fedgkc/reference/fedgkc_reference_test.py
or as a plain script from any directory.
"""
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedgkc.reference import fedgkc_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402


# ---- independent scalar formulas (plain Python floats, no torch) ----
def softmax(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    s = sum(e)
    return [v / s for v in e]


def kl(p, q):
    """KL(p || q) of two probability lists."""
    return sum(a * (math.log(a) - math.log(b)) for a, b in zip(p, q))


def neighbour_sets(edges, n):
    """N(i) U {i} from a list of (src, dst) columns: the distinct sources j != i sending to i, plus i."""
    sets = [{i} for i in range(n)]
    for j, i in edges:
        sets[i].add(j)
    return sets


def direct_neigh(z, h, edges):
    """Eq. 1 as the literal double sum: (1/N) sum_i sum_{j in N(i) U i} KL(softmax z_j || softmax h_i)."""
    n = len(h)
    return sum(kl(softmax(z[j]), softmax(h[i])) for i, s in enumerate(neighbour_sets(edges, n)) for j in s) / n


def direct_ce(logits, y, train):
    rows = [i for i in range(len(y)) if train[i]]
    return sum(-math.log(softmax(logits[i])[y[i]]) for i in rows) / len(rows)


def direct_kl_mean(teacher, student):
    return sum(kl(softmax(t), softmax(s)) for t, s in zip(teacher, student)) / len(teacher)


def T(rows):
    return torch.tensor(rows, dtype=torch.float32)


def edge_list(edge_index):
    return [tuple(c) for c in edge_index.t().tolist()]


# ---- a tiny federated setup ----
def tiny_graph(gen, n, feat_dim, num_classes, pairs):
    src = torch.tensor([a for a, b in pairs] + [b for a, b in pairs])
    dst = torch.tensor([b for a, b in pairs] + [a for a, b in pairs])
    y = torch.arange(n) % num_classes
    train = torch.arange(n) < num_classes
    val = ~train & (torch.arange(n) % 2 == 0)
    return pyg.Data(x=torch.randn(n, feat_dim, generator=gen), edge_index=torch.stack([src, dst]), y=y,
                    train_idx=train, val_idx=val, test_idx=~train & ~val)


def tiny_setup(num_classes=3, feat_dim=5, hid_dim=8):
    gen = torch.Generator().manual_seed(11)
    subgraphs = [tiny_graph(gen, 5, feat_dim, num_classes, [(0, 1), (1, 2), (2, 0), (3, 4)]),
                 tiny_graph(gen, 7, feat_dim, num_classes, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (1, 5)])]
    shapes = {k: v.shape for k, v in ref.GCN(feat_dim, hid_dim, num_classes, 0.0).state_dict().items()}
    rand_state = lambda: {k: torch.randn(s, generator=gen) * 0.5 for k, s in shapes.items()}  # noqa: E731
    private_states = [rand_state(), rand_state()]
    copilot_state = rand_state()
    return gen, subgraphs, private_states, copilot_state


class GcnTest(unittest.TestCase):

    def test_state_dict_and_embedding_is_relu_before_dropout(self):
        model = ref.GCN(4, 8, 3, 0.9)
        self.assertEqual(list(model.state_dict().keys()),
                         ['conv1.bias', 'conv1.lin.weight', 'conv2.bias', 'conv2.lin.weight'])
        self.assertEqual(tuple(model.conv1.lin.weight.shape), (8, 4))
        x = torch.randn(3, 4)
        ei = torch.tensor([[0, 1], [1, 0]])
        # Dense GCN: D^-1/2 (A + I) D^-1/2 X W^T + b; degrees (with loop) 2, 2, 1.
        a_hat = torch.tensor([[1, 1, 0], [1, 1, 0], [0, 0, 1.0]])
        d = torch.diag(a_hat.sum(1).pow(-0.5))
        norm = d @ a_hat @ d
        sd = model.state_dict()
        emb = torch.relu(norm @ x @ sd['conv1.lin.weight'].t() + sd['conv1.bias'])
        logits = norm @ emb @ sd['conv2.lin.weight'].t() + sd['conv2.bias']
        model.eval()
        e, p = model(x, ei)
        self.assertTrue(torch.allclose(e, emb, atol=1e-6))
        self.assertTrue(torch.allclose(p, logits, atol=1e-6))
        model.train()  # dropout 0.9 is applied after the embedding, not to it
        e_train, p_train = model(x, ei)
        self.assertTrue(torch.allclose(e_train, emb, atol=1e-6))


class LossTest(unittest.TestCase):

    def test_eq1_neigh_against_direct_double_sum(self):
        # 5 nodes: triangle 0-1-2 (with a duplicated column and a self-loop
        # column, which must not count twice), edge 3 -> ... only one direction
        # 1 -> 3 (node 3 receives from 1; node 1 does NOT receive from 3), node 4 isolated.
        ei = torch.tensor([[0, 1, 1, 2, 2, 0, 0, 2, 1],
                           [1, 0, 2, 1, 0, 2, 1, 2, 3]])
        g = torch.Generator().manual_seed(3)
        z, h = torch.randn(5, 4, generator=g), torch.randn(5, 4, generator=g)
        got = ref.neigh_kd_loss(z, h, ei).item()
        expected = direct_neigh(z.tolist(), h.tolist(), edge_list(ei))
        self.assertAlmostEqual(got, expected, places=5)
        # Sanity of the set semantics: N(3) U {3} = {1, 3}; N(4) U {4} = {4}; N(1) U {1} = {0, 1, 2}.
        sets = neighbour_sets(edge_list(ei), 5)
        self.assertEqual(sets, [{0, 1, 2}, {0, 1, 2}, {0, 1, 2}, {1, 3}, {4}])
        # Swapping teacher and student changes the value (the KL is directed).
        self.assertGreater(abs(ref.neigh_kd_loss(h, z, ei).item() - got), 1e-3)
        # Temperature: softmax(z / T) on both sides.
        got_t = ref.neigh_kd_loss(z, h, ei, temperature=2.0).item()
        self.assertAlmostEqual(got_t, direct_neigh((z / 2).tolist(), (h / 2).tolist(), edge_list(ei)), places=5)

    def test_eq2_eq3_by_hand(self):
        # 3 nodes, path 0 - 1 - 2; node 0 and 2 are training nodes.
        ei = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
        edges = edge_list(ei)
        y, train = [1, 0, 0], [True, False, True]
        e_c, p_c = [[0.5, -1.0], [2.0, 0.0], [0.0, 0.3]], [[1.0, 0.0], [0.2, 0.4], [-0.5, 1.5]]
        e_l, p_l = [[1.5, 0.5], [-0.2, 0.1], [0.7, 0.7]], [[-1.0, 2.0], [0.3, 0.3], [2.0, -1.0]]
        yt, mask = torch.tensor(y), torch.tensor(train)
        cop, loc = (T(e_c), T(p_c)), (T(e_l), T(p_l))
        # Eq. 2: the copilot is the student: CE on p_c, L_neigh(e_l -> e_c), KL(p_l || p_c).
        exp2 = (0.6 * direct_ce(p_c, y, train) + 0.2 * direct_neigh(e_l, e_c, edges)
                + 0.2 * direct_kl_mean(p_l, p_c))
        got2, parts2 = ref.copilot_loss(cop, loc, yt, mask, ei)
        self.assertAlmostEqual(got2.item(), exp2, places=5)
        self.assertAlmostEqual(parts2['kl'].item(), direct_kl_mean(p_l, p_c), places=5)
        self.assertAlmostEqual(parts2['neigh'].item(), direct_neigh(e_l, e_c, edges), places=5)
        # Eq. 3: the local model is the student: CE on p_l, L_neigh(e_c -> e_l), KL(p_c || p_l).
        exp3 = (0.6 * direct_ce(p_l, y, train) + 0.2 * direct_neigh(e_c, e_l, edges)
                + 0.2 * direct_kl_mean(p_c, p_l))
        got3, _ = ref.local_mutual_loss(loc, cop, yt, mask, ei)
        self.assertAlmostEqual(got3.item(), exp3, places=5)
        # The reversed KL directions give clearly different numbers, so these checks can fail.
        wrong2 = (0.6 * direct_ce(p_c, y, train) + 0.2 * direct_neigh(e_c, e_l, edges)
                  + 0.2 * direct_kl_mean(p_c, p_l))
        self.assertGreater(abs(wrong2 - exp2), 1e-2)
        self.assertGreater(abs(direct_kl_mean(p_l, p_c) - direct_kl_mean(p_c, p_l)), 1e-2)
        # One number fully by hand: node 0's CE term, -log softmax([1, 0])[1] = log(1 + e).
        self.assertAlmostEqual(-math.log(softmax(p_c[0])[1]), math.log(1 + math.e), places=12)
        # Gradients flow only into the student.
        cop_g, loc_g = (T(e_c).requires_grad_(), T(p_c).requires_grad_()), (T(e_l).requires_grad_(),
                                                                            T(p_l).requires_grad_())
        ref.copilot_loss(cop_g, tuple(t.detach() for t in loc_g), yt, mask, ei)[0].backward()
        self.assertIsNotNone(cop_g[0].grad)
        self.assertIsNotNone(cop_g[1].grad)

    def test_eq4_self_distillation_by_hand(self):
        e_w, p_w = [[1.0, 0.0, 2.0], [0.5, 0.5, 0.0]], [[2.0, 0.0], [0.0, 1.0]]
        e_s, p_s = [[0.0, 0.0, 1.0], [0.5, 1.5, 0.0]], [[0.0, 0.0], [1.0, -1.0]]
        # MSE over 2 x 3 entries: (1 + 0 + 1 + 0 + 1 + 0) / 6 = 0.5
        mse = 0.5
        kl_ws = (kl(softmax(p_w[0]), softmax(p_s[0])) + kl(softmax(p_w[1]), softmax(p_s[1]))) / 2
        # Node 0 by hand: softmax([2,0]) = (s, 1-s), s = e^2/(1+e^2); softmax([0,0]) = (1/2, 1/2).
        s = math.exp(2) / (1 + math.exp(2))
        self.assertAlmostEqual(kl(softmax(p_w[0]), softmax(p_s[0])),
                               s * math.log(2 * s) + (1 - s) * math.log(2 * (1 - s)), places=12)
        got, parts = ref.self_distill_loss((T(e_w), T(p_w)), (T(e_s), T(p_s)))
        self.assertAlmostEqual(parts['sd_mse'].item(), mse, places=6)
        self.assertAlmostEqual(parts['sd_kl'].item(), kl_ws, places=6)
        self.assertAlmostEqual(got.item(), mse + kl_ws, places=6)
        # The weak view is the teacher: reversing gives a different KL.
        kl_sw = (kl(softmax(p_s[0]), softmax(p_w[0])) + kl(softmax(p_s[1]), softmax(p_w[1]))) / 2
        self.assertGreater(abs(kl_sw - kl_ws), 1e-2)


class KamaTest(unittest.TestCase):
    # Path 0 - 1 - 2, node 3 isolated; M = 3 classes.
    P = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]]
    EI = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])

    @staticmethod
    def cos(a, b):
        return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    def hand(self, lam=0.1, strength=True, clar=True, smooth=True, margin=False):
        p = self.P
        stren = [0.7, 0.5, 0.8, 1 / 3] if strength else [0] * 4
        if not clar:
            cl = [0] * 4
        elif margin:  # max - (1 - max) / 2
            cl = [0.7 - 0.3 / 2, 0.5 - 0.5 / 2, 0.8 - 0.2 / 2, 1 / 3 - (2 / 3) / 2]
        else:  # (max - (1 - max)) / (M - 1)
            cl = [(0.7 - 0.3) / 2, (0.5 - 0.5) / 2, (0.8 - 0.2) / 2, (1 / 3 - 2 / 3) / 2]
        c01, c12 = self.cos(p[0], p[1]), self.cos(p[1], p[2])
        sm = [c01, (c01 + c12) / 2, c12, 0.0] if smooth else [0] * 4  # isolated node 3 -> 0
        return [a + b - lam * c for a, b, c in zip(stren, cl, sm)]

    def test_eq7_eq8_eq9_by_hand(self):
        # cos(p0, p1) = (0.14 + 0.10 + 0.03) / sqrt(0.54 * 0.38)
        self.assertAlmostEqual(self.cos(self.P[0], self.P[1]), 0.27 / math.sqrt(0.54 * 0.38), places=12)
        probs = T(self.P)
        q_stren, q_clar = ref.knowledge_scores(probs, self.EI)
        per_node = (q_stren + q_clar).tolist()
        for got, exp in zip(per_node, self.hand()):
            self.assertAlmostEqual(got, exp, places=6)
        p_k, p_raw = ref.knowledge_level(probs, self.EI)
        self.assertAlmostEqual(p_raw, sum(self.hand()) / 4, places=6)
        self.assertEqual(p_k, p_raw)
        # Isolated node 3: strength 1/3, clarity -1/6, no smoothing term.
        self.assertAlmostEqual(per_node[3], 1 / 3 - 1 / 6, places=6)
        for kwargs, hand_kwargs in (({'knowledge_strength': False}, {'strength': False}),
                                    ({'class_clarity': False}, {'clar': False}),
                                    ({'smoothing_clarity': False}, {'smooth': False}),
                                    ({'clarity_mode': 'margin'}, {'margin': True}),
                                    ({'lam': 0.5}, {'lam': 0.5})):
            _, raw = ref.knowledge_level(probs, self.EI, **kwargs)
            self.assertAlmostEqual(raw, sum(self.hand(**hand_kwargs)) / 4, places=6, msg=str(kwargs))

    def test_eq9_floor(self):
        # Flat predictions, no strength: clarity 0 - lam * 1 < 0 -> clamped to 1e-8.
        probs = torch.full((2, 2), 0.5)
        p_k, p_raw = ref.knowledge_level(probs, torch.tensor([[0, 1], [1, 0]]), knowledge_strength=False)
        self.assertAlmostEqual(p_raw, -0.1, places=6)
        self.assertEqual(p_k, 1e-8)

    def test_eq11_eq12_aggregation_two_clients(self):
        w_vol, w_know, w = ref.aggregation_weights([30, 10], [0.4, 0.6])
        self.assertEqual(w_vol, [0.75, 0.25])
        for a, b in zip(w_know, [0.4, 0.6]):
            self.assertAlmostEqual(a, b, places=15)
        for a, b in zip(w, [0.575, 0.425]):
            self.assertAlmostEqual(a, b, places=15)
        self.assertEqual(ref.aggregation_weights([30, 10], [0.4, 0.6], kama=False)[2], [0.75, 0.25])
        s0 = {'a': T([[1.0, 2.0]]), 'b': T([4.0])}
        s1 = {'a': T([[3.0, -2.0]]), 'b': T([0.0])}
        g = ref.aggregate([s0, s1], w)
        self.assertTrue(torch.allclose(g['a'], T([[0.575 + 3 * 0.425, 1.15 - 0.85]]), atol=1e-6))
        self.assertTrue(torch.allclose(g['b'], T([2.3]), atol=1e-6))
        self.assertEqual(g['a'].dtype, torch.float32)


class ViewTest(unittest.TestCase):

    def test_symmetric_edge_masks_and_apply(self):
        ei = torch.tensor([[0, 1, 1, 2, 2, 3, 0, 3], [1, 0, 2, 1, 3, 2, 3, 0]])
        gen = torch.Generator().manual_seed(0)
        for _ in range(20):
            keep = ref.draw_edge_keep(ei, 4, 0.5, gen)
            kept = set(edge_list(ei[:, keep]))
            self.assertEqual(kept, {(b, a) for a, b in kept})
        x = T([[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1]])
        keep_e = torch.tensor([True, True, False, False, True, True, False, False])
        keep_f = torch.tensor([True, False, True])
        xv, eiv = ref.apply_view(x, ei, (keep_e, keep_f))
        self.assertTrue(torch.equal(xv, T([[1, 0, 3], [4, 0, 6], [7, 0, 9], [1, 0, 1]])))
        self.assertTrue(torch.equal(eiv, torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]])))
        views = ref.draw_views([pyg.Data(x=x, edge_index=ei)], 3, generator=gen)
        self.assertEqual(len(views[0]), 3)
        self.assertEqual(views[0][2]['strong'][0].shape, (8,))
        self.assertEqual(views[0][2]['weak'][1].shape, (3,))


def adam_step(params, grads, state, lr, wd, t, b1=0.9, b2=0.999, eps=1e-8):
    """The Adam update with coupled L2 (Kingma & Ba + PyTorch weight_decay), written out."""
    out = {}
    for k in params:
        g = grads[k] + wd * params[k]
        m, v = state.get(k, (torch.zeros_like(g), torch.zeros_like(g)))
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        state[k] = (m, v)
        out[k] = params[k] - lr * (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps)
    return out


def functional_gcn(state, x, edge_index):
    model = ref.GCN(x.size(1), state['conv1.lin.weight'].size(0), state['conv2.lin.weight'].size(0), 0.0)
    return torch.nn.utils.stateless.functional_call(model, state, (x, edge_index))


def dense_neigh(z, h, edge_index):
    """Eq. 1 with torch ops on a dense 0/1 closed-neighbourhood matrix (differentiable, independent of the module)."""
    n = h.size(0)
    a = torch.zeros(n, n)
    for j, i in edge_list(edge_index):
        a[i, j] = 1.0  # row i: the j in N(i)
    a = a.clamp(max=1) + torch.eye(n)
    a = (a > 0).float()
    q = F.softmax(z, dim=1)
    log_s = F.log_softmax(h, dim=1)
    kl_ij = (q * q.log()).sum(1).unsqueeze(0) - log_s @ q.t()  # [i, j] = KL(q_j || s_i)
    return (a * kl_ij).sum() / n


class RoundTest(unittest.TestCase):

    def test_two_epochs_match_an_independent_replay(self):
        """Replays one client's two interleaved epochs with independent formulas
        and a hand-written Adam: checks the schedule (copilot step first with the
        private model as frozen teacher, then the private step whose teacher is
        the copilot just updated), Eq. 5 with the weak view as stop-gradient
        teacher, the reported losses, and the KAMA inputs."""
        gen, subgraphs, private_states, copilot_state = tiny_setup()
        views = ref.draw_views(subgraphs, 2, generator=gen)
        fl = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, hid_dim=8, dropout=0.0,
                                 local_epochs=2)
        out = fl.train_round(views)
        lr, wd = 1e-2, 5e-4
        for k, g in enumerate(subgraphs):
            cop = {n: v.clone() for n, v in copilot_state.items()}
            loc = {n: v.clone() for n, v in private_states[k].items()}
            st_c, st_l = {}, {}
            for t in (1, 2):
                # copilot step, Eq. 2
                with torch.no_grad():
                    e_l, p_l = functional_gcn(loc, g.x, g.edge_index)
                params = {n: v.clone().requires_grad_() for n, v in cop.items()}
                e_c, p_c = functional_gcn(params, g.x, g.edge_index)
                loss = (0.6 * F.cross_entropy(p_c[g.train_idx], g.y[g.train_idx])
                        + 0.2 * dense_neigh(e_l, e_c, g.edge_index)
                        + 0.2 * F.kl_div(F.log_softmax(p_c, 1), F.softmax(p_l, 1), reduction='batchmean'))
                grads = dict(zip(params, torch.autograd.grad(loss, list(params.values()))))
                cop = adam_step(cop, grads, st_c, lr, wd, t)
                self.assertAlmostEqual(out['losses'][k][t - 1]['copilot']['total'], loss.item(), places=5)
                # private step, Eq. 5 = Eq. 3 + Eq. 4
                with torch.no_grad():
                    e_c, p_c = functional_gcn(cop, g.x, g.edge_index)
                params = {n: v.clone().requires_grad_() for n, v in loc.items()}
                e_l, p_l = functional_gcn(params, g.x, g.edge_index)
                (ek_w, fk_w), (ek_s, fk_s) = views[k][t - 1]['weak'], views[k][t - 1]['strong']
                with torch.no_grad():
                    e_w, p_w = functional_gcn(params, g.x * fk_w.float(), g.edge_index[:, ek_w])
                e_s, p_s = functional_gcn(params, g.x * fk_s.float(), g.edge_index[:, ek_s])
                loss = (0.6 * F.cross_entropy(p_l[g.train_idx], g.y[g.train_idx])
                        + 0.2 * dense_neigh(e_c, e_l, g.edge_index)
                        + 0.2 * F.kl_div(F.log_softmax(p_l, 1), F.softmax(p_c, 1), reduction='batchmean')
                        + ((e_w - e_s) ** 2).mean()
                        + F.kl_div(F.log_softmax(p_s, 1), F.softmax(p_w, 1), reduction='batchmean'))
                grads = dict(zip(params, torch.autograd.grad(loss, list(params.values()))))
                loc = adam_step(loc, grads, st_l, lr, wd, t)
                self.assertAlmostEqual(out['losses'][k][t - 1]['local']['total'], loss.item(), places=5)
            for n in cop:
                self.assertTrue(torch.allclose(out['copilots'][k][n], cop[n], atol=2e-5), (k, n))
                self.assertTrue(torch.allclose(out['privates'][k][n], loc[n], atol=2e-5), (k, n))
            # KAMA inputs: N_k = node count; P_k from the trained copilot on the original graph.
            self.assertEqual(out['N'][k], g.x.size(0))
            with torch.no_grad():
                probs = F.softmax(functional_gcn(out['copilots'][k], g.x, g.edge_index)[1], 1)
            self.assertAlmostEqual(out['P'][k], ref.knowledge_level(probs, g.edge_index)[0], places=6)
        w_vol = [5 / 12, 7 / 12]
        w_know = [out['P'][0] / sum(out['P']), out['P'][1] / sum(out['P'])]
        for k in range(2):
            self.assertAlmostEqual(out['w'][k], (w_vol[k] + w_know[k]) / 2, places=12)
        for n in copilot_state:
            agg = out['w'][0] * out['copilots'][0][n] + out['w'][1] * out['copilots'][1][n]
            self.assertTrue(torch.allclose(out['global_copilot'][n], agg, atol=1e-6), n)

    def test_forward_order_modes_and_frozen_teachers(self):
        """Per epoch: copilot step = private teacher (eval, no grad) then copilot
        (train, grad); private step = copilot teacher (eval, no grad), then the
        private model on G, weak view (no grad) and strong view (train, grad);
        after the epochs the trained copilot in eval mode for Eqs. 7-9."""
        gen, subgraphs, private_states, copilot_state = tiny_setup()
        fl = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, hid_dim=8, dropout=0.5,
                                 local_epochs=2)
        calls = []
        for k in range(2):
            for name, model in (('private', fl.privates[k]), ('copilot', fl.copilots[k])):
                model.register_forward_hook(
                    lambda m, i, o, name=name, k=k: calls.append((k, name, m.training, torch.is_grad_enabled(),
                                                                  int(i[1].size(1)))))
        views = ref.draw_views(subgraphs, 2, generator=gen)
        fl.train_round(views)
        for k, g in enumerate(subgraphs):
            e_full = g.edge_index.size(1)
            epoch = [('private', False, False, e_full), ('copilot', True, True, e_full),
                     ('copilot', False, False, e_full), ('private', True, True, e_full)]
            expected = []
            for e in range(2):
                expected += epoch + [('private', True, False, int(views[k][e]['weak'][0].sum())),
                                     ('private', True, True, int(views[k][e]['strong'][0].sum()))]
            expected.append(('copilot', False, False, e_full))
            self.assertEqual([c[1:] for c in calls if c[0] == k], expected)

    def test_round_is_deterministic_and_changes_both_models(self):
        gen, subgraphs, private_states, copilot_state = tiny_setup()
        views = [ref.draw_views(subgraphs, 3, generator=gen) for _ in range(2)]
        runs = []
        for _ in range(2):
            fl = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, hid_dim=8, dropout=0.0)
            runs.append([fl.train_round(views[0]), fl.train_round(views[1])])
            runs[-1].append(fl.evaluate())
        a, b = runs
        for r in range(2):
            for key in ('N', 'P', 'P_raw', 'w_vol', 'w_know', 'w', 'losses'):
                self.assertEqual(a[r][key], b[r][key], key)
            for k in range(2):
                for n in copilot_state:
                    self.assertTrue(torch.equal(a[r]['copilots'][k][n], b[r]['copilots'][k][n]))
                    self.assertTrue(torch.equal(a[r]['privates'][k][n], b[r]['privates'][k][n]))
            for n in copilot_state:
                self.assertTrue(torch.equal(a[r]['global_copilot'][n], b[r]['global_copilot'][n]))
        self.assertEqual(a[2], b[2])
        first = a[0]
        for k in range(2):
            for n in copilot_state:
                self.assertFalse(torch.equal(first['copilots'][k][n], copilot_state[n]), (k, n))
                self.assertFalse(torch.equal(first['privates'][k][n], private_states[k][n]), (k, n))
        self.assertAlmostEqual(sum(first['w']), 1.0, places=12)
        self.assertTrue(all(p > 0 for p in first['P']))
        for k in range(2):
            for e in range(3):
                for part in ('ce', 'neigh', 'kl', 'sd_mse', 'sd_kl'):
                    self.assertTrue(math.isfinite(first['losses'][k][e]['local'][part]))

    def test_second_round_starts_from_global_copilot(self):
        gen, subgraphs, private_states, copilot_state = tiny_setup()
        fl = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, hid_dim=8, dropout=0.0,
                                 local_epochs=1, self_distillation=False)
        out = fl.train_round()
        # Evaluated through 'global_copilot' the clients see the aggregate.
        for n in copilot_state:
            self.assertTrue(torch.equal(fl.global_state[n], out['global_copilot'][n]))
        fl2 = ref.FedGkcReference(subgraphs, 3, out['privates'], out['global_copilot'], hid_dim=8, dropout=0.0,
                                  local_epochs=1, self_distillation=False, persistent_optimizers=False)
        fl.persistent_optimizers = False  # train_round then recreates both optimisers
        # With fresh optimisers, round 2 of fl equals round 1 of an instance built from round 1's outputs.
        r2, r1 = fl.train_round(), fl2.train_round()
        for k in range(2):
            for n in copilot_state:
                self.assertTrue(torch.equal(r2['copilots'][k][n], r1['copilots'][k][n]))

    def test_ablation_switches_change_the_losses(self):
        gen, subgraphs, private_states, copilot_state = tiny_setup()
        views = ref.draw_views(subgraphs, 1, generator=gen)
        kw = dict(hid_dim=8, dropout=0.0, local_epochs=1)
        full = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, **kw).train_round(views)
        dual = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, smkd=False, **kw).train_round(views)
        l_full, l_dual = full['losses'][0][0], dual['losses'][0][0]
        # smkd=False: 0.6 CE + 0.4 KL, no L_neigh, no self-distillation; same first-epoch CE / KL values.
        self.assertIsNone(l_dual['local']['neigh'])
        self.assertIsNone(l_dual['local']['sd_mse'])
        self.assertAlmostEqual(l_dual['copilot']['total'],
                               0.6 * l_full['copilot']['ce'] + 0.4 * l_full['copilot']['kl'], places=5)
        nomut = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, mutual_distillation=False,
                                    **kw).train_round(views)
        l_nm = nomut['losses'][0][0]
        self.assertAlmostEqual(l_nm['copilot']['total'], 0.6 * l_full['copilot']['ce'], places=5)
        self.assertAlmostEqual(l_nm['local']['total'], 0.6 * l_full['local']['ce'] + l_full['local']['sd_mse']
                               + l_full['local']['sd_kl'], places=5)
        nokama = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, kama=False,
                                     **kw).train_round(views)
        self.assertEqual(nokama['w'], [5 / 12, 7 / 12])
        seq = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, schedule='sequential',
                                  hid_dim=8, dropout=0.0, local_epochs=2)
        inter = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, hid_dim=8, dropout=0.0,
                                    local_epochs=2)
        views2 = ref.draw_views(subgraphs, 2, generator=gen)
        s, i = seq.train_round(views2), inter.train_round(views2)
        # Sequential: the second copilot step still sees the initial private model, so the losses differ.
        self.assertNotEqual(s['losses'][0][1]['copilot']['total'], i['losses'][0][1]['copilot']['total'])
        self.assertEqual(s['losses'][0][0]['copilot'], i['losses'][0][0]['copilot'])  # epoch 1 identical

    def test_evaluate_is_node_weighted(self):
        _, subgraphs, private_states, copilot_state = tiny_setup()
        fl = ref.FedGkcReference(subgraphs, 3, private_states, copilot_state, hid_dim=8, dropout=0.0)
        ev = fl.evaluate()
        for k, g in enumerate(subgraphs):
            with torch.no_grad():
                pred = functional_gcn(private_states[k], g.x, g.edge_index)[1].argmax(1)
            acc = 100.0 * (pred[g.test_idx] == g.y[g.test_idx]).float().mean().item()
            self.assertAlmostEqual(ev['clients'][k]['acc_test'], acc, places=4)
        self.assertAlmostEqual(ev['test'], (5 * ev['clients'][0]['acc_test'] + 7 * ev['clients'][1]['acc_test']) / 12)
        self.assertAlmostEqual(ev['test_unweighted'],
                               (ev['clients'][0]['acc_test'] + ev['clients'][1]['acc_test']) / 2)


if __name__ == '__main__':
    unittest.main()
