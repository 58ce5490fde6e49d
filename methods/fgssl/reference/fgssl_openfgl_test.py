"""Checks the OpenFGL FGSSL port against values computed by hand."""
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedavg.reference.fedavg_openfgl import FedAvgOpenFgl  # noqa: E402
from methods.fgssl.reference import fgssl_openfgl as fgssl  # noqa: E402
from methods.fgssl.reference.fgssl_openfgl import FgsslOpenFgl  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import nested_equal, tiny_setup  # noqa: E402
from methods.reference.pyg import Data  # noqa: E402


def states_close(a, b, atol=1e-6):
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=atol, rtol=1e-5) for k in a)


class FgsslPiecesTest(unittest.TestCase):

    def test_edge_distribution_high_by_hand(self):
        # One edge 0 -> 1. |feats diff| / 0.1 = [1, 0] -> P = [1, 0] - log(1 + e);
        # out diff 0 -> Q = log [.5, .5]; sum exp(Q) (Q - P) / 1 edge = log((1 + e) / 2) - 1/2.
        feats = torch.tensor([[0.0, 0.0], [0.1, 0.0]])
        out = torch.zeros(2, 2)
        loss = fgssl.edge_distribution_high(torch.tensor([[0], [1]]), feats, out)
        self.assertAlmostEqual(loss.item(), math.log((1 + math.e) / 2) - 0.5, places=5)
        # batchmean divides by the number of edges: the same edge twice gives the same value.
        loss2 = fgssl.edge_distribution_high(torch.tensor([[0, 0], [1, 1]]), feats, out)
        self.assertAlmostEqual(loss2.item(), loss.item(), places=6)

    def test_augmentors_apply_masks(self):
        x = torch.arange(6.0).view(2, 3)
        ei = torch.tensor([[0, 1, 1], [1, 0, 1]])
        aug = fgssl.Compose([fgssl.EdgeRemoving(pe=0.3), fgssl.FeatureMasking(pf=0.3)])
        keep, drop = torch.tensor([False, True, True]), torch.tensor([True, False, True])
        x2, ei2, w2, used = aug(x, ei, draws=[keep, drop])
        self.assertTrue(torch.equal(ei2, torch.tensor([[1, 1], [0, 1]])))
        self.assertTrue(torch.equal(x2, torch.tensor([[0.0, 1.0, 0.0], [0.0, 4.0, 0.0]])))  # whole columns
        self.assertTrue(torch.equal(x, torch.arange(6.0).view(2, 3)))  # not in place
        self.assertIsNone(w2)
        self.assertTrue(torch.equal(used[0], keep) and torch.equal(used[1], drop))

    def test_draw_order_matches_the_augmentors(self):
        ei = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
        x = torch.ones(4, 5)
        weak = fgssl.Compose([fgssl.EdgeRemoving(pe=0.3), fgssl.FeatureMasking(pf=0.3)])
        strong = fgssl.Compose([fgssl.EdgeRemoving(pe=0.8), fgssl.FeatureMasking(pf=0.5)])
        torch.manual_seed(4)
        used = []
        for _ in range(2):
            used.append(weak(x, ei)[3] + strong(x, ei)[3])
        torch.manual_seed(4)
        drawn = fgssl.draw_fgssl_augmentations(6, 5, num_epochs=2)
        for epoch in range(2):
            for k, t in zip(fgssl.DRAW_KEYS, used[epoch]):
                self.assertTrue(torch.equal(drawn[epoch][k], t), (epoch, k))
        torch.manual_seed(4)
        u = torch.rand(6)
        self.assertTrue(torch.equal(drawn[0]['weak_edge_keep'], u >= 0.3))
        g1 = fgssl.draw_fgssl_augmentations(6, 5, 3, torch.Generator().manual_seed(2))
        g2 = fgssl.draw_fgssl_augmentations(6, 5, 3, torch.Generator().manual_seed(2))
        self.assertTrue(nested_equal(g1, g2))
        self.assertEqual(len(g1), 3)


class FgsslOpenFglTest(unittest.TestCase):

    def setUp(self):
        _, self.subgraphs, self.state = tiny_setup()
        gen = torch.Generator().manual_seed(9)
        self.draws = {c: fgssl.draw_fgssl_augmentations(s.edge_index.shape[1], 4, 3, gen)
                      for c, s in enumerate(self.subgraphs)}

    def fed(self, **kw):
        return FgsslOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0, **kw)

    def test_defaults(self):
        self.assertEqual(self.fed().config, {'weak_pe': 0.3, 'weak_pf': 0.3, 'strong_pe': 0.8, 'strong_pf': 0.5,
                                             'ff_weight': 0.1})

    def test_local_training_by_hand(self):
        out = self.fed().train_round(augmentations=self.draws)
        self.assertTrue(nested_equal(out['augmentations'], self.draws))
        for c in (0, 1):
            data = self.subgraphs[c]
            model = openfgl.GCN(4, 5, 3, dropout=0.0)
            model.load_state_dict(self.state)
            glob = openfgl.GCN(4, 5, 3, dropout=0.0)
            glob.load_state_dict(self.state)
            glob.eval()
            opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
            src, dst = data.edge_index
            m = data.train_idx
            for epoch, d in enumerate(self.draws[c]):
                opt.zero_grad()
                _, logits = model(data)
                ce = F.cross_entropy(logits[m], data.y[m])
                weak = Data(x=data.x * (~d['weak_feat_drop']).float(), edge_index=data.edge_index[:, d['weak_edge_keep']])
                strong = Data(x=data.x * (~d['strong_feat_drop']).float(), edge_index=data.edge_index[:, d['strong_edge_keep']])
                with torch.no_grad():
                    hg = glob(weak)[0]
                hl = model(strong)[0]
                p = F.log_softmax((hl[src] - hl[dst]).abs() / 0.1, 1)
                q = F.log_softmax((hg[src] - hg[dst]).abs() / 0.1, 1)
                ff = (q.exp() * (q - p)).sum() / src.numel()
                rec = out['losses'][c][epoch]
                self.assertAlmostEqual(rec['ce'], ce.item(), places=5)
                self.assertAlmostEqual(rec['ff'], ff.item(), places=5)
                self.assertAlmostEqual(rec['total'], ce.item() + 0.1 * ff.item(), places=5)
                (ce + 0.1 * ff).backward()
                opt.step()
            self.assertTrue(states_close(out['local'][c], openfgl.clone_state(model)), c)
        for k, v in out['global'].items():
            self.assertTrue(torch.allclose(v, 0.4 * out['uploads'][0]['weight'][k] + 0.6 * out['uploads'][1]['weight'][k],
                                           atol=1e-7))

    def test_zero_weight_is_fedavg_and_unused_losses_change_nothing(self):
        a = self.fed(ff_weight=0.0).train_round(augmentations=self.draws)
        avg = FedAvgOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0).train_round()
        self.assertTrue(all(states_close(a['local'][c], avg['local'][c], 1e-7) for c in (0, 1)))
        b = self.fed().train_round(augmentations=self.draws)
        self.assertFalse(states_close(a['local'][1], b['local'][1], 1e-6))
        c = self.fed(compute_unused=False).train_round(augmentations=self.draws)
        self.assertTrue(nested_equal(b['local'], c['local']) and nested_equal(b['global'], c['global']))
        self.assertEqual(sorted(b['losses'][0][0]), ['cc', 'ce', 'contrast', 'ff', 'simi_kd', 'simi_kd_2',
                                                     'struct_kd', 'total'])
        self.assertEqual(sorted(c['losses'][0][0]), ['ce', 'ff', 'total'])

    def test_undrawn_round_draws_in_upstream_order(self):
        fed = self.fed()
        torch.manual_seed(21)
        a = fed.train_round()
        torch.manual_seed(21)
        drawn = {c: fgssl.draw_fgssl_augmentations(s.edge_index.shape[1], 4, 3) for c, s in enumerate(self.subgraphs)}
        self.assertTrue(nested_equal(a['augmentations'], drawn))
        b = self.fed().train_round(augmentations=drawn)
        self.assertTrue(nested_equal(a, b))

    def test_upstream_simi_kd_crashes_when_the_last_node_has_no_edge(self):
        sub = self.subgraphs[0]
        keep = (sub.edge_index != 5).all(0)  # isolate node 5, the highest id
        lonely = Data(x=sub.x, edge_index=sub.edge_index[:, keep], y=sub.y, train_idx=sub.train_idx,
                      val_idx=sub.val_idx, test_idx=sub.test_idx)
        subgraphs = [lonely, self.subgraphs[1]]
        with self.assertRaisesRegex(RuntimeError, 'must match the size'):  # simi_kd's [5, 5] vs [6, 6]
            FgsslOpenFgl(subgraphs, 3, self.state, hid_dim=5, dropout=0.0).train_round()
        FgsslOpenFgl(subgraphs, 3, self.state, hid_dim=5, dropout=0.0, compute_unused=False).train_round()

    def test_two_instances_are_bit_identical(self):
        fa, fb = self.fed(), self.fed()
        a = [fa.train_round(augmentations=self.draws) for _ in range(3)]
        b = [fb.train_round(augmentations=self.draws) for _ in range(3)]
        self.assertTrue(nested_equal(a, b))
        with self.assertRaises(ValueError):
            fa.train_round(augmentations={0: self.draws[0][:2]})


if __name__ == '__main__':
    unittest.main()
