"""Checks of the CNFGNN (as adapted by nFedGNN, Sec. 4.1; note B.5) reference against hand-computed values.

Run from the repository root:
    /usr/bin/python3 -m unittest methods/cnfgnn/reference/cnfgnn_reference_test.py
or as a plain script from any directory.
"""
import math
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.cnfgnn.reference import cnfgnn_reference as ref  # noqa: E402

LR, WD, EPS = 0.1, 5e-4, 1e-8


def softmax(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    return [v / sum(e) for v in e]


def adam_first_step(theta, grad):
    g = grad + WD * theta
    return theta - LR * g / (abs(g) + EPS)


def T(rows):
    return torch.tensor(rows, dtype=torch.float32)


def mask(n, ids):
    m = torch.zeros(n, dtype=torch.bool)
    m[list(ids)] = True
    return m


# Triangle {0, 1, 2} + isolated node 3: Â = blockdiag(J/3, 1).
EDGES = torch.tensor([[0, 1, 1, 2, 2, 0], [1, 0, 2, 1, 0, 2]])
X = [[1, 0], [0, 1], [1, 1], [2, 0]]
Y = torch.tensor([0, 1, 1, 0])


def shared_states():
    user = {'weight': T([[1, 0], [0, 1]]), 'bias': T([0, 0.5])}
    return {'server': {'conv2.lin.weight': T([[1, 0], [0, 1]]), 'conv2.bias': T([0, 0])},
            'users': [{k: v.clone() for k, v in user.items()} for _ in range(4)]}


def model(**kw):
    return ref.CnfgnnReference(T(X), EDGES, Y, mask(4, [0, 3]), mask(4, [1]), mask(4, [2]), 2, shared_states(),
                               hid_dim=2, dropout=0.0, **kw)


def hand_round1():
    """Xbar = X + [0, 0.5]; Â Xbar = [2/3, 7/6] (rows 0-2), [2, 1/2] (row 3), all > 0; Z = the same (W = I, b = 0).
    V_0 = {0, 3}, class 0: g = Â Â dZ -> rows 0-2 delta_0 / 3, row 3 delta_3 (lambda = 0).
    User i: dW = x_i^T g_i, db = g_i, one Adam step from the shared (I, [0, 0.5]); then the mean over users."""
    p0, p3 = softmax([2 / 3, 7 / 6]), softmax([2.0, 0.5])
    d0 = [(p0[0] - 1) / 2 / 3, p0[1] / 2 / 3]
    d3 = [(p3[0] - 1) / 2, p3[1] / 2]
    g = [d0, d0, d0, d3]
    w0, b0 = [[1.0, 0.0], [0.0, 1.0]], [0.0, 0.5]
    uploads = []
    for i in range(4):
        w = [[adam_first_step(w0[f][h], X[i][f] * g[i][h]) for h in range(2)] for f in range(2)]
        b = [adam_first_step(b0[h], g[i][h]) for h in range(2)]
        uploads.append({'weight': w, 'bias': b})
    avg = {'weight': [[sum(u['weight'][f][h] for u in uploads) / 4 for h in range(2)] for f in range(2)],
           'bias': [sum(u['bias'][h] for u in uploads) / 4 for h in range(2)]}
    return g, uploads, avg


class CnfgnnReferenceTest(unittest.TestCase):

    def assertClose(self, actual, expected, atol=1e-5):
        expected = torch.as_tensor(expected, dtype=actual.dtype)
        self.assertEqual(tuple(actual.shape), tuple(expected.shape))
        self.assertTrue(torch.allclose(actual, expected, atol=atol, rtol=1e-5), f'\n{actual}\n!=\n{expected}')

    def test_round_uploads_and_averages_user_models_by_hand(self):
        g, uploads, avg = hand_round1()
        out = model().train_round({})
        # lambda defaults to 0 (note B.5): L_reg is computed (S = 10, squared distances 2, 1, 1 -> 2*4/10)
        # but not added.
        self.assertAlmostEqual(out['losses']['reg'], 0.8, places=6)
        self.assertEqual(out['losses']['total'], out['losses']['ce'])
        self.assertClose(out['uploads'], [[1, 0.5], [0, 1.5], [1, 1.5], [2, 0.5]])
        self.assertClose(out['downloads'], g)
        for i in range(4):
            self.assertClose(out['user_model_uploads'][i]['weight'], uploads[i]['weight'])
            self.assertClose(out['user_model_uploads'][i]['bias'], uploads[i]['bias'])
        self.assertClose(out['averaged_user_state']['weight'], avg['weight'])
        self.assertClose(out['averaged_user_state']['bias'], avg['bias'])
        for i in range(4):  # broadcast: every user holds theta_bar
            self.assertTrue(torch.equal(out['user_states'][i]['weight'], out['averaged_user_state']['weight']))
            self.assertTrue(torch.equal(out['user_states'][i]['bias'], out['averaged_user_state']['bias']))
        # The isolated user 3 and the triangle users uploaded different models.
        self.assertFalse(torch.equal(out['user_model_uploads'][0]['weight'], out['user_model_uploads'][3]['weight']))

    def test_average_user_states(self):
        avg = ref.average_user_states([{'w': T([1, 2])}, {'w': T([2, 2])}, {'w': T([0, 5])}])
        self.assertClose(avg['w'], [1, 3])

    def test_adam_states_stay_local_and_persist(self):
        fl = model()
        fl.train_round({})
        out = fl.train_round({})
        self.assertEqual(out['user_adam'][0]['bias']['step'], 2.0)
        # Moments are per user (not averaged): users 0 and 3 received different gradients in both rounds.
        self.assertFalse(torch.equal(out['user_adam'][0]['bias']['exp_avg'], out['user_adam'][3]['bias']['exp_avg']))
        # Round 2 starts from theta_bar for everyone: the uploads xbar_i = x_i W_bar + b_bar.
        _, _, avg = hand_round1()
        xbar = T(X) @ T(avg['weight']) + T(avg['bias'])
        self.assertClose(out['uploads'], xbar)

    def test_communication(self):
        out = model().train_round({})
        # Per user: latent 2 + user parameters (2*2 weight + 2 bias) = 8 floats each way.
        self.assertEqual(out['comm'], {'upload_floats': 4 * 8, 'download_floats': 4 * 8})
        # Table 1 CNFGNN columns (MiB, uploads only, 200 rounds); note B.7.
        # Printed as m.mm x 10^e: equal to 3 significant digits, except Pubmed GAT (9.647e5 printed 9.64e5,
        # one unit off in the last digit, note B.7).
        for (n, d), gcn, gat in [((2708, 1433), (4.74, 4), (3.79, 5)), ((3327, 3703), (1.50, 5), (1.20, 6)),
                               ((19717, 500), (1.21, 5), (9.64, 5)), ((2277, 2325), (6.47, 4), (5.17, 5)),
                               ((5201, 2089), (1.33, 5), (1.06, 6)), ((11701, 300), (4.31, 4), (3.44, 5))]:
            for backbone, (mant, exp) in (('gcn', gcn), ('gat', gat)):
                value = ref.communication_cost_mib(n, d, backbone, 'cnfgnn') / 10 ** exp
                tol = 0.0101 if (n, backbone) == (19717, 'gat') else 0.005
                self.assertLessEqual(abs(value - mant), tol, (n, backbone, value))

    def test_deterministic_small_run_gcn_and_gat(self):
        for backbone in ('gcn', 'gat'):
            runs = []
            for _ in range(2):
                gen = torch.Generator().manual_seed(4)
                x = torch.randn(5, 3, generator=gen)
                edges = torch.tensor([[0, 1, 2, 3, 0], [1, 2, 3, 4, 4]])
                states = ref.draw_cnfgnn_initial_states(5, 3, 2, backbone, hid_dim=2, heads=2, generator=gen)
                fl = ref.CnfgnnReference(x, edges, torch.tensor([0, 1, 0, 1, 0]), mask(5, [0, 1]), mask(5, [2]),
                                         mask(5, [3, 4]), 2, states, backbone=backbone, hid_dim=2, heads=2)
                runs.append((states, [fl.train_round(fl.draw_round(gen)) for _ in range(3)]))
            (init, r1), (_, r2) = runs
            for a, b in zip(r1, r2):
                self.assertEqual(a['losses'], b['losses'])
                for k in a['averaged_user_state']:
                    self.assertTrue(torch.equal(a['averaged_user_state'][k], b['averaged_user_state'][k]))
                for k in a['server_state']:
                    self.assertTrue(torch.equal(a['server_state'][k], b['server_state'][k]))
                for st in a['user_states']:
                    self.assertTrue(torch.equal(st['weight'], a['averaged_user_state']['weight']))
            self.assertFalse(torch.equal(r1[-1]['averaged_user_state']['weight'], init['users'][0]['weight']))


if __name__ == '__main__':
    unittest.main()
