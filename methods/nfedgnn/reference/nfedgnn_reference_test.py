"""Checks of the nFedGNN reference against hand-computed values and independent dense formulas.

Run from the repository root:
    /usr/bin/python3 -m unittest methods/nfedgnn/reference/nfedgnn_reference_test.py
or as a plain script from any directory.
"""
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.nfedgnn.reference import nfedgnn_reference as ref  # noqa: E402

LR, WD, EPS = 0.1, 5e-4, 1e-8


# ---- independent scalar helpers (plain Python floats) ----
def softmax(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    return [v / sum(e) for v in e]


def elu(v):
    return v if v > 0 else math.exp(v) - 1


def lrelu(v):
    return v if v > 0 else 0.2 * v


def adam_first_step(theta, grad, lr=LR, wd=WD):
    """PyTorch Adam's first step with coupled L2: m_hat = g', v_hat = g'^2, g' = g + wd theta."""
    g = grad + wd * theta
    return theta - lr * g / (abs(g) + EPS)


def T(rows, dtype=torch.float32):
    return torch.tensor(rows, dtype=dtype)


def mask(n, ids):
    m = torch.zeros(n, dtype=torch.bool)
    m[list(ids)] = True
    return m


# ---- the hand example: triangle {0, 1, 2} + isolated node 3; Â = blockdiag(J/3, 1) ----
TRI_EDGES = torch.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]])
TRI_X = T([[1, 0], [0, 1], [1, 1], [2, 0]])
TRI_Y = torch.tensor([0, 1, 1, 0])


def tri_states():
    """Per-user W_i / b_i chosen so that xbar = [[1, 0], [0, 2], [1, 1], [2, -1]]."""
    users = [{'weight': T([[1, 0], [0, 1]]), 'bias': T([0, 0])},
             {'weight': T([[2, 0], [0, 2]]), 'bias': T([0, 0])},
             {'weight': T([[0, 1], [1, 0]]), 'bias': T([0, 0])},
             {'weight': T([[1, 0], [0, 1]]), 'bias': T([0, -1])}]
    server = {'conv2.lin.weight': T([[1, 0], [0, 1]]), 'conv2.bias': T([0, 0.5])}
    return {'server': server, 'users': users}


def tri_model(lam=0.5, **kw):
    return ref.NFedGnnReference(TRI_X, TRI_EDGES, TRI_Y, mask(4, [0, 3]), mask(4, [1]), mask(4, [2]), 2,
                                tri_states(), lam=lam, hid_dim=2, dropout=0.0, **kw)


def tri_hand():
    """Hand derivation. Xbar = [[1,0],[0,2],[1,1],[2,-1]]; Â Xbar = [2/3, 1] (rows 0-2), [2, -1] (row 3);
    ReLU -> [2, 0] on row 3; Z = Â R W^T + b = [2/3, 3/2] (rows 0-2), [2, 1/2] (row 3).
    V_0 = {0, 3}, both class 0: delta_l = (softmax(Z_l) - e_0) / |V_0|.
    dL/dXbar = Â (ReLU' * Â (Â dZ) W): rows 0-2 delta_0 / 3, row 3 [delta_3[0], 0] (ReLU cut).
    L_reg: S = 2*3 + 4 = 10; pair distances 5, 1, 2 (both directions) -> 16 / 10 = 1.6;
    dL_reg/dxbar_i = (4/S) sum_j (xbar_i - xbar_j) = 0.4 * [[1,-3],[-2,3],[1,0],[0,0]]."""
    z0, z3 = [2 / 3, 1.5], [2.0, 0.5]
    p0, p3 = softmax(z0), softmax(z3)
    d0 = [(p0[0] - 1) / 2, p0[1] / 2]
    d3 = [(p3[0] - 1) / 2, p3[1] / 2]
    ce = (math.log(1 + math.exp(1.5 - 2 / 3)) + math.log(1 + math.exp(-1.5))) / 2
    g_ce = [[d0[0] / 3, d0[1] / 3]] * 3 + [[d3[0], 0.0]]
    g_reg = [[0.4, -1.2], [-0.8, 1.2], [0.4, 0.0], [0.0, 0.0]]
    return {'xbar': [[1, 0], [0, 2], [1, 1], [2, -1]], 'z': [z0, z0, z0, z3], 'd0': d0, 'd3': d3,
            'ce': ce, 'reg': 1.6, 'g_ce': g_ce, 'g_reg': g_reg}


# ---- independent dense implementations (for the end-to-end gradient checks) ----
def dense_adj(edges, n):
    a = torch.zeros(n, n, dtype=torch.float64)
    for s, d in edges:
        if s != d:
            a[s, d] = a[d, s] = 1.0
    return a


def dense_gcn_loss(a, x, users, server, y, train, lam, hidden_keep=None, p=0.0):
    """Eq. 5 + Eq. 7 with dense matrices: Â = D~^-1/2 (A+I) D~^-1/2, L_reg = (2/S) tr(Xbar^T (D - A) Xbar)."""
    n = a.size(0)
    at = a + torch.eye(n, dtype=a.dtype)
    dinv = at.sum(1).pow(-0.5)
    ahat = dinv[:, None] * at * dinv[None, :]
    xbar = torch.stack([x[i] @ users[i]['weight'] + users[i]['bias'] for i in range(n)])
    h = torch.relu(ahat @ xbar)
    if hidden_keep is not None:
        h = h * (hidden_keep.to(h.dtype) / (1 - p))
    z = ahat @ (h @ server['conv2.lin.weight'].t()) + server['conv2.bias']
    lap = torch.diag(a.sum(1)) - a
    s = a.sum() + n
    reg = 2.0 / s * torch.trace(xbar.t() @ lap @ xbar)
    return F.cross_entropy(z[train], y[train]) + lam * reg, xbar


def dense_gat_loss(a, x, users, server, y, train, lam, heads, keeps=None, p=0.0):
    """Split GAT (App. D + GAT layer 2) with dense masked attention matrices; L_reg summed over heads."""
    n = a.size(0)
    nbr = (a + torch.eye(n, dtype=a.dtype)) > 0  # nbr[i, j]: j in N_i
    k = keeps or {}

    def drop(t, key):
        return t if key not in k else t * (k[key].to(t.dtype) / (1 - p))

    xin = drop(x, 'user_input')
    xbar = torch.stack([xin[i] @ users[i]['weight'] for i in range(n)])

    def layer(feat, a_src, a_dst, attn_key):  # feat [n, H, D]
        hh = feat.size(1)
        e = (feat * a_dst).sum(-1).t()[:, :, None] + (feat * a_src).sum(-1).t()[:, None, :]  # [H, i, j]
        e = F.leaky_relu(e, 0.2).masked_fill(~nbr, float('-inf'))
        att = torch.softmax(e, dim=2)
        if attn_key in k:  # keep mask per stored edge (server_edges order) -> dense [H, i, j]
            src, dst = edges_with_loops(a)
            dense_keep = torch.zeros(hh, n, n, dtype=att.dtype)
            for idx, (s_, d_) in enumerate(zip(src, dst)):
                dense_keep[:, d_, s_] = k[attn_key][idx].to(att.dtype)
            att = att * (dense_keep / (1 - p))
        return torch.einsum('hij,jhd->ihd', att, feat)

    h1 = layer(xbar.view(n, heads, -1), server['attn_src1'], server['attn_dst1'], 'attn1')
    h1 = F.elu(h1 + server['bias1'].view(heads, -1)).reshape(n, -1)
    h1 = drop(h1, 'hidden')
    z = layer((h1 @ server['fc2.weight'].t()).view(n, 1, -1), server['attn_src2'], server['attn_dst2'], 'attn2')
    z = (z + server['bias2'].view(1, 1, -1)).mean(1)
    lap = torch.diag(a.sum(1)) - a
    reg = 2.0 / (a.sum() + n) * torch.trace(xbar.t() @ lap @ xbar)
    return F.cross_entropy(z[train], y[train]) + lam * reg, xbar


def edges_with_loops(a):
    """server_edges order written out independently: off-diagonal pairs sorted by (src, dst), then loops."""
    n = a.size(0)
    pairs = [(s, d) for s in range(n) for d in range(n) if s != d and a[s, d] > 0]
    return [s for s, _ in pairs] + list(range(n)), [d for _, d in pairs] + list(range(n))


def random_setup(backbone, seed=3, n=5, feat=4, classes=3, hid=3, heads=2):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, feat, generator=gen)
    edges = torch.tensor([[0, 1, 1, 2, 3, 0], [1, 2, 3, 3, 4, 4]])  # 0-1, 1-2, 1-3, 2-3, 3-4, 0-4
    y = torch.tensor([0, 1, 2, 1, 0])
    states = ref.draw_initial_states(n, feat, classes, backbone, hid, heads, generator=gen)
    if backbone == 'gcn':  # non-zero biases so that they matter
        for u in states['users']:
            u['bias'] = torch.randn(hid, generator=gen) * 0.3
        states['server']['conv2.bias'] = torch.randn(classes, generator=gen) * 0.3
    else:
        states['server']['bias1'] = torch.randn(heads * hid, generator=gen) * 0.3
        states['server']['bias2'] = torch.randn(classes, generator=gen) * 0.3
    return gen, x, edges, y, mask(n, [0, 1]), mask(n, [2]), mask(n, [3, 4]), states


class NFedGnnReferenceTest(unittest.TestCase):

    def assertClose(self, actual, expected, atol=1e-5):
        expected = torch.as_tensor(expected, dtype=actual.dtype)
        self.assertEqual(tuple(actual.shape), tuple(expected.shape))
        self.assertTrue(torch.allclose(actual, expected, atol=atol, rtol=1e-5), f'\n{actual}\n!=\n{expected}')

    def test_server_edges_closed_neighbourhoods(self):
        # One direction only, a duplicate and a self-loop: made symmetric and simple, then loops appended.
        ei = torch.tensor([[0, 1, 0, 2, 2], [1, 2, 1, 0, 2]])
        src, dst, und = ref.server_edges(ei, 4)
        self.assertEqual(list(zip(src.tolist(), dst.tolist())),
                         [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1), (0, 0), (1, 1), (2, 2), (3, 3)])
        self.assertEqual(und.size(1), 6)
        self.assertEqual(src.numel(), 2 * 3 + 4)  # S = sum_i |N_i| = 2|E| + n

    def test_laplacian_reg_value_and_gradient_by_hand(self):
        src, dst, _ = ref.server_edges(TRI_EDGES, 4)
        xbar = T(tri_hand()['xbar']).requires_grad_(True)
        reg = ref.laplacian_reg(xbar, src, dst)
        self.assertAlmostEqual(float(reg), 1.6, places=6)
        reg.backward()
        self.assertClose(xbar.grad, tri_hand()['g_reg'])

    def test_gcn_forward_losses_and_accuracy_by_hand(self):
        h = tri_hand()
        ev = tri_model(lam=0.5).evaluate()
        self.assertClose(ev['latent'], h['xbar'])
        self.assertClose(ev['logits'], h['z'])
        self.assertAlmostEqual(ev['ce'], h['ce'], places=5)
        self.assertAlmostEqual(ev['reg'], 1.6, places=5)
        self.assertAlmostEqual(ev['loss'], h['ce'] + 0.5 * 1.6, places=5)
        # pred = [1, 1, 1, 0]; y = [0, 1, 1, 0]: train {0, 3} half right, val {1} right, test {2} right.
        self.assertEqual(ev['pred'].tolist(), [1, 1, 1, 0])
        self.assertEqual((ev['acc_train'], ev['acc_val'], ev['acc_test']), (50.0, 100.0, 100.0))

    def test_gcn_round_messages_gradients_and_updates_by_hand(self):
        h = tri_hand()
        lam = 0.5
        out = tri_model(lam=lam).train_round({})
        d0, d3 = h['d0'], h['d3']
        self.assertClose(out['uploads'], h['xbar'])                      # Alg. 1 line 6
        self.assertClose(out['logits'], h['z'])
        self.assertAlmostEqual(out['losses']['total'], h['ce'] + lam * 1.6, places=5)
        self.assertAlmostEqual(out['losses']['ce'], h['ce'], places=5)
        g = [[a + lam * b for a, b in zip(rc, rr)] for rc, rr in zip(h['g_ce'], h['g_reg'])]
        self.assertClose(out['downloads'], g)                            # line 9 (CE + lam * reg part)
        # Server gradients: db = delta_0 + delta_3; dW[c, h] = delta_0[c] [2/3, 1][h] + delta_3[c] [2, 0][h].
        self.assertClose(out['server_grads']['conv2.bias'], [d0[0] + d3[0], d0[1] + d3[1]])
        self.assertClose(out['server_grads']['conv2.lin.weight'],
                         [[d0[0] * 2 / 3 + 2 * d3[0], d0[0]], [d0[1] * 2 / 3 + 2 * d3[1], d0[1]]])
        # User gradients (line 11): dW_i = x_i^T g_i, db_i = g_i. x_2 = [1, 1]; x_3 = [2, 0].
        self.assertClose(out['user_grads'][2]['weight'], [g[2], g[2]])
        self.assertClose(out['user_grads'][3]['weight'], [[2 * g[3][0], 0.0], [0.0, 0.0]])
        self.assertClose(out['user_grads'][3]['bias'], g[3])
        # Adam first steps (lines 8 and 12), weight decay 5e-4 coupled.
        self.assertClose(out['server_state']['conv2.bias'],
                         [adam_first_step(0.0, d0[0] + d3[0]), adam_first_step(0.5, d0[1] + d3[1])])
        # User 3's bias[1] gets a zero gradient: it moves only by Adam-normalised weight decay (note B.4).
        self.assertClose(out['user_states'][3]['bias'], [adam_first_step(0.0, g[3][0]), adam_first_step(-1.0, 0.0)])
        self.assertAlmostEqual(float(out['user_states'][3]['bias'][1]), -1 + LR * 5e-4 / (5e-4 + EPS), places=6)
        self.assertClose(out['user_states'][1]['weight'],
                         [[adam_first_step(2.0, 0.0), adam_first_step(0.0, 0.0)],
                          [adam_first_step(0.0, g[1][0]), adam_first_step(2.0, g[1][1])]])
        self.assertEqual(out['server_adam']['conv2.bias']['step'], 1.0)
        self.assertEqual(out['comm'], {'upload_floats': 4 * 2, 'download_floats': 4 * 2})

    def test_gcn_bias_on_server_by_hand(self):
        # gcn_bias='server': users have no bias, the server adds bias1 after Â Xbar (centralized-GCN placement).
        states = tri_states()
        for u in states['users']:
            del u['bias']
        states['server']['bias1'] = T([0, -1])
        fl = ref.NFedGnnReference(TRI_X, TRI_EDGES, TRI_Y, mask(4, [0, 3]), mask(4, [1]), mask(4, [2]), 2, states,
                                  lam=0.0, hid_dim=2, dropout=0.0, gcn_bias='server')
        ev = fl.evaluate()
        # Xbar = [[1,0],[0,2],[1,1],[2,0]]; Â Xbar + b1 = [2/3, 0] (rows 0-2), [2, -1] (row 3); ReLU; Â R + b2.
        self.assertClose(ev['latent'], [[1, 0], [0, 2], [1, 1], [2, 0]])
        self.assertClose(ev['logits'], [[2 / 3, 0.5]] * 3 + [[2, 0.5]])
        out = fl.train_round({})
        self.assertEqual(set(out['user_states'][0]), {'weight'})
        self.assertEqual(out['comm']['upload_floats'], 8)

    def test_send_reg_grad_false_sends_only_the_ce_gradient(self):
        h = tri_hand()
        lit = tri_model(lam=0.5, send_reg_grad=False).train_round({})
        self.assertClose(lit['downloads'], h['g_ce'])  # Alg. 1 line 9 read literally: lam has no effect on users
        self.assertAlmostEqual(lit['losses']['total'], h['ce'] + 0.8, places=5)
        default = tri_model(lam=0.5).train_round({})
        for k in default['server_state']:  # the server's update does not depend on the switch
            self.assertTrue(torch.equal(lit['server_state'][k], default['server_state'][k]))

    def test_server_update_post_recomputes_gradient_with_updated_server(self):
        pre = tri_model(lam=0.0).train_round({})
        post = tri_model(lam=0.0, server_update='post').train_round({})
        for k in pre['server_state']:
            self.assertTrue(torch.equal(pre['server_state'][k], post['server_state'][k]))
        # 'post': g rows 0-2 = delta'_0 / 3 with Z from the updated W, b (W stays ~I up to the Adam step).
        w, b = post['server_state']['conv2.lin.weight'], post['server_state']['conv2.bias']
        r0 = torch.tensor([2 / 3, 1.0])
        z0 = r0 @ w.t() + b
        p = torch.softmax(z0, 0)
        delta0 = (p - torch.tensor([1.0, 0.0])) / 2
        self.assertClose(post['downloads'][0], (delta0 @ w) / 3)
        self.assertFalse(torch.allclose(pre['downloads'], post['downloads']))

    def test_isolated_unlabelled_user_moves_only_by_weight_decay_unless_skipped(self):
        x = torch.cat([TRI_X, T([[1, 1]])])
        y = torch.cat([TRI_Y, torch.tensor([1])])
        states = tri_states()
        states['users'].append({'weight': T([[0.5, -2], [0, 1]]), 'bias': T([0.25, 0])})
        args = (x, TRI_EDGES, y, mask(5, [0, 3]), mask(5, [1]), mask(5, [2, 4]), 2, states)
        out = ref.NFedGnnReference(*args, lam=0.0, hid_dim=2, dropout=0.0).train_round({})
        self.assertClose(out['downloads'][4], [0.0, 0.0])
        self.assertClose(out['user_states'][4]['weight'],
                         [[adam_first_step(0.5, 0), adam_first_step(-2.0, 0)], [0.0, adam_first_step(1.0, 0)]])
        self.assertAlmostEqual(float(out['user_states'][4]['weight'][0, 1]), -2 + LR * 1e-3 / (1e-3 + EPS), places=6)
        skip = ref.NFedGnnReference(*args, lam=0.0, hid_dim=2, dropout=0.0, skip_zero_grad_users=True).train_round({})
        self.assertEqual(skip['skipped'], [4])
        self.assertIsNone(skip['user_grads'][4])
        self.assertTrue(torch.equal(skip['user_states'][4]['weight'], states['users'][4]['weight']))
        self.assertTrue(torch.equal(skip['user_states'][0]['weight'], out['user_states'][0]['weight']))

    def gat_hand_model(self, **kw):
        x = T([[1], [2], [3]])
        users = [{'weight': T([[1, -1]])}, {'weight': T([[1, 1]])}, {'weight': T([[1, 0]])}]
        server = {'attn_src1': T([[1], [-1]]), 'attn_dst1': T([[0], [0.5]]), 'bias1': T([0, -1]),
                  'fc2.weight': T([[1, 0], [0, 1]]), 'attn_src2': T([[0, 0]]), 'attn_dst2': T([[0, 0]]),
                  'bias2': T([0.1, 0])}
        return ref.NFedGnnReference(x, torch.tensor([[0], [1]]), torch.tensor([0, 1, 1]), mask(3, [0, 1]),
                                    mask(3, [2]), mask(3, [2]), 2, {'server': server, 'users': users},
                                    backbone='gat', hid_dim=1, heads=2, dropout=0.0, lam=1.0, **kw)

    def test_gat_forward_and_head_regulariser_by_hand(self):
        # x' = [[1, -1], [2, 2], [3, 0]] (head-major). N_0 = N_1 = {0, 1}, N_2 = {2}.
        # Head 0: e_ij = LReLU(x'_j) -> e = 1 (j=0), 2 (j=1) for i = 0 and 1.
        # Head 1: el_j = -x'_j = [1, -2, 0], er_i = 0.5 x'_i = [-0.5, 1, 0]:
        #   i=0: e_00 = LReLU(0.5) = 0.5, e_01 = LReLU(-2.5) = -0.5; i=1: e_10 = 2, e_11 = LReLU(-1) = -0.2.
        ev = self.gat_hand_model().evaluate()
        self.assertClose(ev['latent'], [[1, -1], [2, 2], [3, 0]])
        h0 = (math.e * 1 + math.e ** 2 * 2) / (math.e + math.e ** 2)
        h01 = (math.exp(0.5) * -1 + math.exp(-0.5) * 2) / (math.exp(0.5) + math.exp(-0.5))
        h11 = (math.exp(2) * -1 + math.exp(-0.2) * 2) / (math.exp(2) + math.exp(-0.2))
        hid = [[elu(h0), elu(h01 - 1)], [elu(h0), elu(h11 - 1)], [elu(3.0), elu(0.0 - 1)]]
        # Layer 2: fc = I, zero attention vectors -> uniform mean over N_i, + bias2.
        z01 = [(hid[0][c] + hid[1][c]) / 2 + (0.1 if c == 0 else 0) for c in range(2)]
        z2 = [hid[2][0] + 0.1, hid[2][1]]
        self.assertClose(ev['logits'], [z01, z01, z2])
        # L_reg, S = 2 + 3 = 5: head 0 2*(1-2)^2/5 = 0.4, head 1 2*(-1-2)^2/5 = 3.6.
        self.assertAlmostEqual(ev['reg'], 4.0, places=5)
        self.assertAlmostEqual(self.gat_hand_model(gat_reg='mean').evaluate()['reg'], 2.0, places=5)
        # scheme 2: head means [0, 2, 1.5] -> 2 * 4 / 5.
        self.assertAlmostEqual(self.gat_hand_model(gat_reg='scheme2').evaluate()['reg'], 1.6, places=5)
        ce = (-math.log(softmax(z01)[0]) - math.log(softmax(z01)[1])) / 2
        self.assertAlmostEqual(ev['ce'], ce, places=5)
        self.assertEqual(ev['pred'][2].item(), 0)
        # The attention coefficients of head 1 at node 1 (edges sorted, then loops: (0,1),(1,0),(0,0),(1,1),(2,2)).
        alpha1 = ev['attention'][0]
        self.assertAlmostEqual(float(alpha1[0, 1]), math.exp(2) / (math.exp(2) + math.exp(-0.2)), places=6)
        self.assertAlmostEqual(float(alpha1[3, 1]), math.exp(-0.2) / (math.exp(2) + math.exp(-0.2)), places=6)

    def check_against_dense(self, backbone, use_masks):
        gen, x, edges, y, tr, va, te, states = random_setup(backbone)
        p = 0.5 if use_masks else 0.0
        kw = dict(backbone=backbone, hid_dim=3, heads=2, dropout=p, lam=0.7)
        model = ref.NFedGnnReference(x, edges, y, tr, va, te, 3, states, **kw)
        draws = model.draw_round(gen) if use_masks else {}
        out = model.train_round(draws)
        # Independent dense float64 computation with autograd through every user's parameters.
        users = [{k: v.double().requires_grad_(True) for k, v in u.items()} for u in states['users']]
        server = {k: v.double().requires_grad_(True) for k, v in states['server'].items()}
        a = dense_adj(edges.t().tolist(), 5)
        if backbone == 'gcn':
            loss, xbar = dense_gcn_loss(a, x.double(), users, server, y, tr, 0.7, draws.get('hidden'), p)
        else:
            loss, xbar = dense_gat_loss(a, x.double(), users, server, y, tr, 0.7, 2, draws, p)
        xbar.retain_grad()
        loss.backward()
        self.assertAlmostEqual(out['losses']['total'], float(loss), places=5)
        self.assertClose(out['uploads'], xbar.detach().float())
        self.assertClose(out['downloads'], xbar.grad.float())
        for k, v in server.items():
            self.assertClose(out['server_grads'][k], v.grad.float())
        for i, u in enumerate(users):
            for k, v in u.items():
                self.assertClose(out['user_grads'][i][k], v.grad.float())

    def test_split_gcn_gradients_equal_dense_end_to_end_autograd(self):
        self.check_against_dense('gcn', use_masks=False)
        self.check_against_dense('gcn', use_masks=True)

    def test_split_gat_gradients_equal_dense_end_to_end_autograd(self):
        self.check_against_dense('gat', use_masks=False)
        self.check_against_dense('gat', use_masks=True)

    def test_draw_initial_states(self):
        st = ref.draw_initial_states(3, 4, 2, 'gcn', 5, generator=torch.Generator().manual_seed(1))
        again = ref.draw_initial_states(3, 4, 2, 'gcn', 5, generator=torch.Generator().manual_seed(1))
        self.assertTrue(torch.equal(st['users'][2]['weight'], again['users'][2]['weight']))
        self.assertFalse(torch.equal(st['users'][0]['weight'], st['users'][1]['weight']))  # independent
        self.assertEqual(tuple(st['users'][0]['weight'].shape), (4, 5))
        self.assertTrue(torch.equal(st['users'][0]['bias'], torch.zeros(5)))
        self.assertLessEqual(float(st['users'][0]['weight'].abs().max()), math.sqrt(6 / 9))  # Glorot bound
        self.assertEqual(tuple(st['server']['conv2.lin.weight'].shape), (2, 5))
        shared = ref.draw_initial_states(3, 4, 2, 'gat', 5, heads=2, shared_user_init=True)
        self.assertTrue(torch.equal(shared['users'][0]['weight'], shared['users'][2]['weight']))
        self.assertEqual(tuple(shared['users'][0]['weight'].shape), (4, 10))
        self.assertEqual(set(shared['users'][0]), {'weight'})  # GAT users have no bias
        self.assertEqual(sorted(shared['server']), ['attn_dst1', 'attn_dst2', 'attn_src1', 'attn_src2', 'bias1',
                                                    'bias2', 'fc2.weight'])

    def test_communication_matches_table1(self):
        # Paper Table 1 (MB = MiB, uploads only, 200 rounds, float32); note B.7.
        cases = [(2708, 1433, 33.06, 264.45), (3327, 3703, 40.61, 324.90), (19717, 500, 240.69, 1925.49),
                 (2277, 2325, 27.80, 222.36), (5201, 2089, 63.49, 507.91), (11701, 300, 142.83, 1142.68)]
        for n, d, gcn, gat in cases:
            self.assertAlmostEqual(ref.communication_cost_mib(n, d, 'gcn'), gcn, places=2)
            self.assertAlmostEqual(ref.communication_cost_mib(n, d, 'gat'), gat, places=2)
        self.assertAlmostEqual(ref.communication_cost_mib(2708, 1433, 'gcn', 'cnfgnn') / 1e4, 4.744, places=3)
        self.assertAlmostEqual(ref.communication_cost_mib(11701, 300, 'gcn', 'cnfgnn') / 1e4, 4.314, places=3)
        self.assertAlmostEqual(ref.communication_cost_mib(3327, 3703, 'gat', 'cnfgnn') / 1e6, 1.203, places=3)
        out = self.gat_hand_model().train_round({})
        self.assertEqual(out['comm'], {'upload_floats': 3 * 2, 'download_floats': 3 * 2})

    def test_deterministic_small_run_with_injected_dropout(self):
        for backbone in ('gcn', 'gat'):
            runs = []
            for _ in range(2):
                gen, x, edges, y, tr, va, te, states = random_setup(backbone, seed=7)
                model = ref.NFedGnnReference(x, edges, y, tr, va, te, 3, states, backbone=backbone, hid_dim=3,
                                             heads=2, lam=2.0)  # paper dropout (0.5 / 0.6), masks from gen
                runs.append([model.train_round(model.draw_round(gen)) for _ in range(4)])
            for r1, r2 in zip(*runs):
                self.assertEqual(r1['losses'], r2['losses'])
                self.assertTrue(torch.equal(r1['downloads'], r2['downloads']))
                for i in range(5):
                    for k in r1['user_states'][i]:
                        self.assertTrue(torch.equal(r1['user_states'][i][k], r2['user_states'][i][k]))
                for k in r1['server_state']:
                    self.assertTrue(torch.equal(r1['server_state'][k], r2['server_state'][k]))
            self.assertTrue(any(v.any() for v in runs[0][0]['draws'].values()))
            self.assertTrue(any((~v).any() for v in runs[0][0]['draws'].values()))
            _, _, _, _, _, _, _, init = random_setup(backbone, seed=7)
            last = runs[0][-1]
            for i in range(5):
                self.assertFalse(torch.equal(last['user_states'][i]['weight'], init['users'][i]['weight']))
            for k in init['server']:
                self.assertFalse(torch.equal(last['server_state'][k], init['server'][k]))
            self.assertEqual(last['server_adam'][next(iter(init['server']))]['step'], 4.0)

    def test_regulariser_makes_neighbour_latents_closer(self):
        # Sec. 3.4 / 4.2: a larger lambda gives smoother latents (smaller eval L_reg) after training.
        regs = []
        for lam in (0.0, 10.0):
            _, x, edges, y, tr, va, te, states = random_setup('gcn', seed=5)
            model = ref.NFedGnnReference(x, edges, y, tr, va, te, 3, states, hid_dim=3, dropout=0.0, lam=lam,
                                         eval_each_round=False)
            hist = model.run(15)
            self.assertEqual(len(hist['acc_test']), 15)
            regs.append(model.evaluate()['reg'])
        self.assertLess(regs[1], 0.5 * regs[0])


if __name__ == '__main__':
    unittest.main()
