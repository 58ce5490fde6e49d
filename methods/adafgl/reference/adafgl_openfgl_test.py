"""Checks the OpenFGL AdaFGL port against values computed by hand."""
import math
import os
import random
import sys
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.adafgl.reference import adafgl_openfgl as ada  # noqa: E402
from methods.adafgl.reference.adafgl_openfgl import AdaFGLOpenFgl  # noqa: E402
from methods.fedavg.reference.fedavg_openfgl import FedAvgOpenFgl  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import nested_equal, tiny_setup  # noqa: E402
from methods.reference.pyg import Data  # noqa: E402

S6 = 1 / math.sqrt(6)
PATH = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])


def allclose(a, b, atol=1e-6):
    return torch.allclose(torch.as_tensor(a).double(), torch.as_tensor(b).double(), atol=atol, rtol=1e-5)


def states_close(a, b, atol=1e-6):
    return a.keys() == b.keys() and all(allclose(a[k], b[k], atol) for k in a)


class AdaFGLPiecesTest(unittest.TestCase):

    def test_adj_initialize_counts_directed_duplicates(self):
        data = ada.adj_initialize(Data(x=torch.zeros(3, 1), edge_index=torch.tensor([[0, 0, 1], [1, 1, 2]])))
        self.assertTrue(torch.equal(data.adj, torch.tensor([[0.0, 2, 0], [0, 0, 1], [0, 0, 0]])))

    def test_adj_to_symmetric_norm_transposes_and_uses_row_degrees(self):
        # A + I = [[1, 1], [0, 1]], row sums d = [2, 1]; result[i, j] = (A+I)[j, i] d_i^(r-1) d_j^-r.
        a = torch.tensor([[0.0, 1.0], [0.0, 0.0]])
        self.assertTrue(allclose(ada.adj_to_symmetric_norm(a, 0.5), [[0.5, 0], [1 / math.sqrt(2), 1]]))
        self.assertTrue(allclose(ada.adj_to_symmetric_norm(a, 0.0), [[0.5, 0], [1, 1]]))
        self.assertEqual(ada.adj_to_symmetric_norm(a, 0.5).dtype, torch.float64)
        # symmetric path: the GCN normalisation D^-1/2 (A + I) D^-1/2, degrees [2, 3, 2]
        path = ada.adj_initialize(Data(x=torch.zeros(3, 1), edge_index=PATH)).adj
        self.assertTrue(allclose(ada.adj_to_symmetric_norm(path, 0.5),
                                 [[1 / 2, S6, 0], [S6, 1 / 3, S6], [0, S6, 1 / 2]]))

    def test_getre_scale_is_cosine_of_softmax_rows_without_diagonal(self):
        emb = torch.tensor([[0.0, 0.0], [0.0, 0.0], [math.log(3), 0.0]])  # softmax: .5 .5 / .5 .5 / .75 .25
        c = 0.5 / (math.sqrt(0.5) * math.sqrt(0.625))  # = 2 / sqrt(5)
        self.assertTrue(allclose(ada.getre_scale(emb), [[0, 1, c], [1, 0, c], [c, c, 0]]))

    def test_add_diag_keeps_the_diagonal(self):
        self.assertTrue(torch.equal(ada.add_diag(torch.tensor([[2.0, 1.0], [3.0, 4.0]])), torch.tensor([[3.0, 1.0], [3.0, 5.0]])))

    def test_non_parametric_lp_one_step_by_hand(self):
        data = ada.adj_initialize(Data(x=torch.zeros(3, 1), edge_index=PATH, y=torch.tensor([0, 1, 1])))
        train, val, test = torch.tensor([True, True, False]), torch.tensor([False, False, True]), torch.zeros(3, dtype=torch.bool)
        lp = ada.NonParaLP(prop_steps=1, num_class=2, alpha=0.5, train_mask=train, val_mask=val, test_mask=test)
        lp.preprocess(None, data, lp_order=[1, 0])  # int(2 / 2) = 1 seed: node 1; LP-eval: node 0
        self.assertTrue(torch.equal(lp.lp_train_idx, torch.tensor([False, True, False])))
        self.assertTrue(torch.equal(lp.lp_eval_idx, torch.tensor([True, False, False])))
        self.assertTrue(allclose(lp.label, [[0.5, 0.5], [0, 1], [0.5, 0.5]]))
        lp.propagate(data.adj)
        # f1 = 0.5 M L + 0.5 L, then + L on the seed row (M: the path's GCN normalisation)
        self.assertTrue(allclose(lp.output, [[0.375, 0.375 + S6 / 2], [S6 / 2, S6 / 2 + 1 / 6 + 1.5],
                                             [0.375, 0.375 + S6 / 2]]))
        self.assertEqual(lp.eval(), 0.0)  # node 0 predicted 1, label 0
        with self.assertRaises(ValueError):
            lp.preprocess(None, data, lp_order=[0, 2])

    def test_hete_layer_on_two_nodes_by_hand(self):
        torch.manual_seed(0)
        layer = ada.HetePropagateLayer(2, 3, 1, 4, 3, dropout=0.0)
        x = torch.tensor([[1.0, -2.0, 0.5, 0.0], [0.3, 0.2, -1.0, 2.0]])
        h = x
        for lin in layer.lr_hete_trans[:-1]:
            h = F.prelu(lin(h), torch.tensor([0.25]))
        e = layer.lr_hete_trans[-1](h)
        # n = 2: R = [[0, s], [s, 0]], mean s/2, max s: off-diagonal -> (s/2)/(s/2) = 1, diagonal
        # -> -(0 / (s/2)) = 0; + I -> ones. prelu(ones) = 1, prelu(-ones) = -0.25.
        srow = e.sum(0, keepdim=True)
        expected = (F.softmax(srow, 1) - F.softmax(-0.25 * srow, 1) + e) / 2
        out = layer(x, None, torch.zeros(2, 2, dtype=torch.long))
        self.assertTrue(allclose(out, expected))

    def test_draw_helpers(self):
        mask = torch.tensor([True, False, True, True, False, True])
        random.seed(5)
        a = ada.draw_lp_order(mask)
        random.seed(5)
        ids = [0, 2, 3, 5]
        random.shuffle(ids)
        self.assertEqual(a, ids)
        b = ada.draw_lp_order(mask, torch.Generator().manual_seed(1))
        self.assertEqual(sorted(b), [0, 2, 3, 5])
        s1, s2 = ada.draw_adafgl_state(4, 5, 3, seed=3), ada.draw_adafgl_state(4, 5, 3, seed=3)
        self.assertTrue(nested_equal(s1, s2))
        self.assertEqual(tuple(s1['homo_model.lr_smooth_trans.0.weight'].shape), (5, 16))
        self.assertEqual(tuple(s1['hete_model.lr_local_trans.0.weight'].shape), (5, 4))
        self.assertEqual(float(s1['hete_model.prelu.weight']), 0.25)


class AdaFGLOpenFglTest(unittest.TestCase):

    def setUp(self):
        _, self.subgraphs, self.state = tiny_setup()
        self.lp_orders = [[3, 0, 2, 1], [6, 0, 2, 3, 1]]  # the train nodes are {0..3} and {0, 1, 2, 3, 6}
        self.ada_states = [ada.draw_adafgl_state(4, 5, 3, seed=10 + c) for c in (0, 1)]

    def fed(self, **kw):
        kw.setdefault('lp_orders', self.lp_orders)
        kw.setdefault('adafgl_states', self.ada_states)
        return AdaFGLOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0, adafgl_dropout=0.0,
                             num_rounds_vanilla=1, **kw)

    def test_defaults(self):
        fed = AdaFGLOpenFgl(self.subgraphs, 3, self.state, hid_dim=5)
        self.assertEqual(fed.config, {'prop_steps': 3, 'num_rounds_vanilla': 50, 'r': 0.5, 'adafgl_lr': 1e-2,
                                      'adafgl_weight_decay': 5e-4, 'adafgl_dropout': 0.5})

    def hand_step(self, client, soft, state, opt_model=None):
        """One AdaFGL step by hand, from `state` (or continuing `opt_model`)."""
        data = self.subgraphs[client]
        n, m, y = data.x.shape[0], data.train_idx, data.y
        if opt_model is None:
            model = nn.Module()
            model.homo_model = ada.HomoPropagateModel(2, 4, 5, 3, 3, dropout=0.0)
            model.hete_model = ada.HetePropagateModel(3, 4, 5, 3, 3, dropout=0.0)
            model.load_state_dict(state)
            model.opt = torch.optim.Adam(list(model.parameters()), lr=1e-2, weight_decay=5e-4)
        else:
            model = opt_model
        # personalised propagation graph and smoothed features, by hand
        p = F.softmax(soft, 1)
        p = p / p.norm(dim=1, keepdim=True)
        cos = p @ p.t()
        cos.fill_diagonal_(0)
        uni = (cos > 0.999).long()
        a = torch.zeros(n, n)
        a[data.edge_index[0], data.edge_index[1]] = 1
        adj = 0.5 * a + 0.5 * uni.float()
        a1 = adj.double() + torch.eye(n, dtype=torch.float64)
        d = a1.sum(1).pow(-0.5)
        norm = d.view(-1, 1) * a1.t() * d.view(1, -1)
        feats = [data.x]
        for _ in range(3):
            feats.append((norm @ feats[-1].double()).float())
        smooth = torch.cat(feats, 1)
        model.train()
        model.opt.zero_grad()
        homo = model.homo_model(smooth, soft)[0]
        ori, sm, msg = model.hete_model(data.x, smooth, soft, uni)
        loss = (F.cross_entropy(homo[m], y[m]) + ((homo - soft) ** 2).mean() + F.cross_entropy(ori[m], y[m])
                + F.cross_entropy(sm[m], y[m]) + F.cross_entropy(msg[m], y[m]))
        loss.backward()
        model.opt.step()
        return model, uni, adj, norm, smooth, loss.item()

    def test_phase_switch_and_personalised_steps(self):
        fed = self.fed()
        out0 = fed.train_round()
        # Phase 0 is FedAvg.
        avg = FedAvgOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0).train_round()
        self.assertTrue(nested_equal(out0['local'], avg['local']))
        self.assertTrue(nested_equal(out0['global'], avg['global']))
        self.assertEqual((out0['phase'], out0['server_phase'], out0['adafgl']), ([0, 0], 0, [None, None]))

        out1 = fed.train_round()
        # The switch round still receives the global weights, uploads nothing, the server keeps them.
        self.assertTrue(nested_equal(out1['server_message']['weight'], out0['global']))
        self.assertEqual(out1['uploads'], {0: {}, 1: {}})
        self.assertEqual((out1['phase'], out1['server_phase']), ([1, 1], 1))
        self.assertTrue(nested_equal(out1['global'], out0['global']))
        self.assertTrue(nested_equal(out1['local'], [out0['global'], out0['global']]))  # loaded, never trained

        hand = {}
        for c in (0, 1):
            rec = out1['adafgl'][c]
            gcn = openfgl.GCN(4, 5, 3, dropout=0.0)
            gcn.load_state_dict(out0['global'])
            gcn.eval()
            soft = F.softmax(gcn(self.subgraphs[c])[1], 1).detach()
            self.assertTrue(allclose(rec['soft_label'], soft))
            self.assertEqual(rec['lp_order'], self.lp_orders[c])
            half = len(self.lp_orders[c]) // 2
            self.assertEqual(rec['lp_train_mask'].nonzero().view(-1).tolist(), sorted(self.lp_orders[c][:half]))
            model, uni, adj, norm, smooth, loss = self.hand_step(c, soft, self.ada_states[c])
            hand[c] = (model, soft)
            self.assertTrue(torch.equal(rec['universal_re'], uni))
            self.assertTrue(torch.equal(rec['adj'], adj))
            self.assertTrue(allclose(rec['norm_adj'], norm, 1e-12))
            self.assertTrue(allclose(rec['smoothed_feature'], smooth))
            self.assertAlmostEqual(rec['losses']['total'], loss, places=5)
            self.assertAlmostEqual(rec['losses']['total'], sum(v for k, v in rec['losses'].items() if k != 'total'), places=5)
            self.assertTrue(states_close(rec['model'], {k: v for k, v in openfgl.clone_state(model).items()}))

        out2 = fed.train_round()
        self.assertEqual(out2['server_message'], {})
        for c in (0, 1):
            model, soft = hand[c]
            self.hand_step(c, soft, None, model)  # the same Adam, second step
            self.assertTrue(states_close(out2['adafgl'][c]['model'], openfgl.clone_state(model)))
            self.assertTrue(nested_equal(out2['adafgl'][c]['smoothed_feature'], out1['adafgl'][c]['smoothed_feature']))

    def test_override_evaluate_merges_by_reliability(self):
        fed = self.fed()
        fed.train_round()
        out = fed.train_round()
        client = fed.clients[1]
        m = client.adafgl_model
        m.eval()
        with torch.no_grad():
            homo = (F.softmax(m.homo_forward()[0], 1) + F.softmax(m.soft_label, 1)) / 2
            o, s, g = m.hete_forward()
            hete = (F.softmax(o, 1) + F.softmax(s, 1) + F.softmax(g, 1)) / 3
        r = out['adafgl'][1]['reliability_acc']
        logits = r * homo + (1 - r) * hete
        ev = client.task.evaluate()
        self.assertIsNone(ev['embedding'])
        self.assertTrue(allclose(ev['logits'], logits))
        d = self.subgraphs[1]
        self.assertAlmostEqual(ev['loss_val'].item(), F.cross_entropy(logits[d.val_idx], d.y[d.val_idx]).item(), places=5)
        # reliability by hand: LP-eval accuracy of the 10-step LP output
        pred = out['adafgl'][1]['lp_output'].argmax(1)
        ev_mask = out['adafgl'][1]['lp_eval_mask']
        self.assertEqual(r, (pred[ev_mask] == d.y[ev_mask]).double().mean().item())

    def test_undrawn_matches_drawn_in_upstream_order(self):
        fed = self.fed(lp_orders=None, adafgl_states=None)  # (its GCNs' init draws come first)
        random.seed(11)
        torch.manual_seed(11)
        a = [fed.train_round() for _ in range(2)]
        random.seed(11)
        torch.manual_seed(11)
        orders, states = [], []
        for c in (0, 1):  # client by client: the shuffle, then the model initialisation
            orders.append(ada.draw_lp_order(self.subgraphs[c].train_idx))
            states.append(ada.draw_adafgl_state(4, 5, 3))
        fed_b = self.fed(lp_orders=orders, adafgl_states=states)
        b = [fed_b.train_round() for _ in range(2)]
        self.assertTrue(nested_equal(a, b))

    def test_two_instances_are_bit_identical(self):
        fa, fb = self.fed(), self.fed()
        a = [fa.train_round() for _ in range(3)]
        b = [fb.train_round() for _ in range(3)]
        self.assertTrue(nested_equal(a, b))
        self.assertFalse(nested_equal(a[1]['adafgl'][0]['model'], a[2]['adafgl'][0]['model']))


if __name__ == '__main__':
    unittest.main()
