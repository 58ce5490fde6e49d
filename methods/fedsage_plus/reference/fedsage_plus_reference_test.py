"""Self-checks of the FedSage+ reference port against hand-computed values."""
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedsage_plus.reference import fedsage_plus_reference as ref  # noqa: E402


def path_owner(hide=(2,), train=(1, 3), num_pred=2, dropout=0.0, **kw):
    """Path 0-1-2-3 (+ edge 3-4), features x_i = [i, -i], labels i % 2."""
    x = torch.tensor([[float(i), -float(i)] for i in range(5)])
    edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    hide_mask = torch.zeros(5, dtype=torch.bool)
    hide_mask[list(hide)] = True
    cfg = ref.make_config(num_pred=num_pred, dropout=dropout, hidden=3, latent_dim=4, **kw)
    torch.manual_seed(0)
    return ref.LocalOwner(x, edge_index, torch.arange(5) % 2, hide_mask, list(train), 2, cfg)


class FedSagePlusReferenceTest(unittest.TestCase):

    def test_get_adj_max_symmetrises_sums_duplicates_row_normalises(self):
        # (1, 2) stored twice: coo sums it to 2; max(A, A^T) keeps 2 both ways; + I; D^-1.
        adj = ref.get_adj(torch.tensor([[0, 1], [1, 2], [1, 2]]), 3)
        expected = torch.tensor([[1 / 2, 1 / 2, 0], [1 / 4, 1 / 4, 2 / 4], [0, 2 / 3, 1 / 3]])
        self.assertTrue(torch.allclose(adj, expected))
        self.assertEqual(adj.dtype, torch.float32)

    def test_graph_convolution_init_uses_output_width(self):
        torch.manual_seed(1)
        gc = ref.GraphConvolution(100, 4)
        self.assertLessEqual(float(gc.weight.abs().max()), 0.5)  # 1/sqrt(4), not 1/sqrt(100)
        self.assertGreater(float(gc.weight.abs().max()), 0.4)

    def test_greedy_loss_compares_against_f_times_current(self):
        # F = 2, true neighbours t0, t1, t2, prediction p = [1, 1]. Start: mse(p, t2) = 0.0225;
        # k=0: 0.01 < 2 * 0.0225 -> 0.01; k=1: 0.0144 < 2 * 0.01 -> 0.0144 (larger!);
        # k=2: 0.0225 < 2 * 0.0144 -> 0.0225. A true minimum would give 0.01.
        pred = torch.tensor([[[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]])
        true = torch.tensor([[[1.1, 1.1], [1.12, 1.12], [1.15, 1.15]]])
        loss = ref.greedy_loss(pred, true, torch.tensor([[1.9]]), torch.tensor([[3]]), 3)
        self.assertAlmostEqual(float(loss[0, 0, 0]), 0.0225, places=6)
        self.assertAlmostEqual(float(loss[0, 0, 1]), 0.0225, places=6)  # broadcast over F
        self.assertEqual(float(loss[0, 1:].abs().sum()), 0.0)  # int(1.9) = 1 prediction only

    def test_greedy_loss_picks_and_skips(self):
        pred = torch.tensor([[[0.0, 0.0], [1.0, 1.0]], [[5.0, 5.0], [5.0, 5.0]]])
        true = torch.tensor([[[1.0, 1.0], [3.0, 3.0]], [[0.0, 0.0], [0.0, 0.0]]])
        loss = ref.greedy_loss(pred, true, torch.tensor([[2.0], [2.0]]), torch.tensor([[7], [0]]), 2)
        # Node 0 (true count clipped to 2): row 0 starts at mse to t1 = 9, then t0: 1 < 18 -> 1,
        # t1: 9 < 2 -> no. Row 1: 4, then 0 < 8 -> 0. Node 1 has no true neighbour: 0.
        self.assertEqual(loss[:, :, 0].tolist(), [[1.0, 0.0], [0.0, 0.0]])
        self.assertAlmostEqual(float(loss.unsqueeze(0).mean()), 0.25)

    def test_mend_graph_truncates_degree_and_appends_all_rows(self):
        mend = ref.MendGraph(node_len=2, num_pred=2, feat_shape=1)
        feats, adj = mend(torch.tensor([[1.0], [2.0]]), torch.tensor([[0, 1]]),
                          torch.tensor([[1.7], [0.2]]), torch.tensor([[3.0, 4.0], [5.0, 6.0]]))
        self.assertEqual(feats.view(-1).tolist(), [1, 2, 3, 4, 5, 6])
        # Edges 0-1 and 0-2 (node 0's first generated row); rows 3-5 only have self loops.
        self.assertTrue(torch.allclose(adj[0], torch.tensor([1 / 3, 1 / 3, 1 / 3, 0, 0, 0])))
        self.assertEqual(adj[2].tolist(), [0.5, 0, 0.5, 0, 0, 0])
        self.assertEqual(adj[5].tolist(), [0, 0, 0, 0, 0, 1])

    def test_local_owner_targets_and_impaired_graph(self):
        o = path_owner()
        self.assertEqual(o.all_ids, [0, 1, 3, 4])
        self.assertEqual(o.all_targets_missing.view(-1).tolist(), [0, 1, 1, 0])
        self.assertEqual(o.all_targets_feat[1].tolist(), [[2.0, -2.0], [0.0, 0.0]])
        self.assertEqual(o.edges.tolist(), [[0, 1], [2, 3]])
        self.assertEqual(o.train_ilocs.tolist(), [1, 2])
        # Upstream's label rows are impaired-graph ilocs into the all-node label list.
        self.assertEqual(o.label_rows.tolist(), [1, 2])
        self.assertEqual(path_owner().__class__(o.subG_x, o.subG_edge_index, o.y, o.hide_mask, [1, 3], 2,
                                                o.cfg, align_labels=True).label_rows.tolist(), [1, 3])

    def test_local_losses_by_hand(self):
        o = path_owner()
        n = 4
        degree = torch.tensor([[0.5], [3.0], [0.0], [0.0]])
        feat = torch.zeros(n, 2 * 2)
        feat[1] = torch.tensor([2.0, -2.0, 9.0, 9.0])
        feat[2] = torch.tensor([1.0, -1.0, 0.0, 0.0])
        nc = torch.zeros(n * 3, 2)
        nc[1] = torch.tensor([1.0, 0.0])
        nc[2] = torch.tensor([0.0, 1.0])
        out = o.local_losses(degree, feat, nc)
        # smooth_l1 over train ilocs 1, 2: |3 - 1| -> 1.5, |0 - 1| -> 0.5; mean 1.0.
        self.assertAlmostEqual(float(out['missing']), 1.0)
        # node 1 predicts 2 (clipped) rows vs its one true [2, -2]: 0 and mse([9, 9], [2, -2]) = 85;
        # node 2 predicts 0 rows; mean over 2 * 2 rows = 85 / 4.
        self.assertAlmostEqual(float(out['feat']), 85 / 4, places=4)
        # labels: rows 1, 2 of y = [0, 1, 0, 1, 0] -> 1, 0 (misaligned: node 3's own label is 1).
        expected = F.cross_entropy(nc[[1, 2]], torch.tensor([1, 0]))
        self.assertAlmostEqual(float(out['label']), float(expected), places=6)
        self.assertAlmostEqual(float(out['loss']), 1.0 + 85 / 4 + float(expected), places=4)

    def test_train_fedgen_updates_only_generators_and_scales_by_owners(self):
        owners = [path_owner(), path_owner(hide=(1,), train=(0, 3))]
        noises = [[torch.zeros(4, 4), torch.zeros(4, 4)]]
        targets = [[{1: torch.tensor([[0, 0], [1, 1]])}, {0: torch.tensor([[4, 4], [4, 4]])}]]
        before = [{k: v.clone() for k, v in o.neighgen.state_dict().items()} for o in owners]
        hist = ref.train_fedgen(owners, num_epochs=1, other_targets=targets, noises=noises)
        for o, b in zip(owners, before):
            for k, v in o.neighgen.state_dict().items():
                changed = not torch.equal(v, b[k])
                self.assertEqual(changed, k.startswith('gen.'), k)
        h = hist[0][0]
        self.assertAlmostEqual(float(h['loss']), float((h['local'] + h['others'][1]) / 2), places=6)

    def test_train_fedgen_other_loss_uses_other_owners_features(self):
        o0, o1 = path_owner(train=(1,)), path_owner(train=(1,))
        with torch.no_grad():  # a generator that predicts exactly 1 missing neighbour: all 0.5
            for p in o0.neighgen.reg_model.parameters():
                p.zero_()
            o0.neighgen.reg_model.reg_1.bias.fill_(1.5)
            for p in o0.neighgen.gen.parameters():
                p.zero_()
            o0.neighgen.gen.fc_flat.bias.fill_(math.atanh(0.5))
        # owner 1's node 3 has features [3, -3]: mse([.5, .5], [3, -3]) = (6.25 + 12.25) / 2.
        hist = ref.train_fedgen([o0, o1], num_epochs=1, noises=[[torch.zeros(4, 4)] * 2],
                                other_targets=[[{1: torch.tensor([[3, 3]])}, {0: torch.tensor([[0, 0]])}]])
        # one predicted row of two (num_pred 2): mean over 2 rows = 9.25 / 2.
        self.assertAlmostEqual(float(hist[0][0]['others'][1]), 9.25 / 2, places=5)

    def test_draw_other_targets_only_picks_neighbours(self):
        owners = [path_owner(), path_owner()]
        g = torch.Generator().manual_seed(3)
        drawn = ref.draw_other_targets_for(owners, 0, g)
        self.assertEqual(list(drawn), [1])
        self.assertEqual(tuple(drawn[1].shape), (2, 2))
        self.assertTrue(all(0 <= v <= 4 for v in drawn[1].view(-1).tolist()))

    def test_fill_graph_restores_hidden_nodes_and_truncates(self):
        o = path_owner()
        feats = torch.arange(4 * 2 * 2, dtype=torch.float32).view(4, 4)
        x, edge_index, nbrs = ref.fill_graph(o, torch.tensor([[1.9], [0.0], [2.5], [0.3]]), feats)
        self.assertEqual(x.shape[0], 5 + 1 + 2)
        self.assertEqual(x[5].tolist(), [0.0, 1.0])   # node 0's first generated row
        self.assertEqual(x[6].tolist(), [8.0, 9.0])   # impaired node 2 = local node 3
        self.assertEqual(x[7].tolist(), [10.0, 11.0])
        self.assertEqual(nbrs[2], [1, 3])  # hidden node 2 and its edges are back
        self.assertEqual(nbrs[3], [2, 4, 6, 7])

    def test_keras_adam_first_step(self):
        w = torch.nn.Parameter(torch.tensor([1.0]))
        w.grad = torch.tensor([2.0])
        opt = ref.KerasAdam([w], lr=0.1)
        opt.step()
        lr_t = 0.1 * math.sqrt(1 - 0.999) / (1 - 0.9)
        expected = 1.0 - lr_t * 0.2 / (math.sqrt(0.001 * 4) + 1e-7)
        self.assertAlmostEqual(float(w), expected, places=6)

    def test_sage_classifier_by_hand(self):
        m = ref.SageClassifier(1, 2, layer_sizes=(2, 2))
        with torch.no_grad():
            m.agg0.w_g0.fill_(1.0)
            m.agg0.w_g1.fill_(-1.0)
            m.agg0.bias.zero_()
            m.agg1.w_g0.copy_(torch.tensor([[1.0], [0.0]]))
            m.agg1.w_g1.copy_(torch.tensor([[0.0], [1.0]]))
            m.agg1.bias.zero_()
            m.kernel.copy_(torch.eye(2))
            m.dense_bias.zero_()
        # head 2, hop-1 {1, 3} (mean 2), hop-2 of 1: {0, 0}, of 3: {1, 1}.
        x0 = torch.tensor([[2.0]])
        x1 = torch.tensor([[[1.0], [3.0]]])
        x2 = torch.tensor([[[0.0], [0.0], [1.0], [1.0]]])
        # layer 0: head -> relu([2, -2]) = [2, 0]; hop1 node 1 -> [1, 0]; node 3 -> relu([3, -1]) = [3, 0]
        # layer 1: [h0 . [1, 0], mean(h1) . [0, 1]] = [2, 0]; l2 -> [1, 0]; logits [1, 0].
        self.assertTrue(torch.allclose(m(x0, x1, x2), torch.tensor([[1.0, 0.0]])))
        self.assertEqual([n for n, _ in m.named_parameters()],
                         ['kernel', 'dense_bias', 'agg0.w_g0', 'agg0.w_g1', 'agg0.bias',
                          'agg1.w_g0', 'agg1.w_g1', 'agg1.bias'])

    def test_gather_pads_placeholders_with_zeros(self):
        x = torch.tensor([[1.0], [2.0]])
        self.assertEqual(ref.gather(x, torch.tensor([[1, -1]])).view(-1).tolist(), [2.0, 0.0])

    def test_fedsage_pc_mean_of_uploads_and_shared_adam(self):
        o = path_owner()
        filled = [ref.fill_graph(o, torch.zeros(4, 1), torch.zeros(4, 4))] * 2
        labels = [(o.y, [0, 1, 3]), (o.y, [2, 4])]
        torch.manual_seed(0)
        init = [ref.SageClassifier(2, 2).state_dict() for _ in range(2)]
        hist = ref.train_fedsage_pc(filled, labels, 2, init, num_rounds=2,
                                    cfg=ref.make_config(batch_size=2),
                                    generator=torch.Generator().manual_seed(1))
        for r in hist:
            for k, v in r['global_state'].items():
                self.assertTrue(torch.allclose(v, (r['uploads'][0][k] + r['uploads'][1][k]) / 2))
        # batches per round: 2 (owner 0: 3 nodes) + 1 (owner 1: 2 nodes) losses, one Adam.
        self.assertEqual([len(l) for l in hist[0]['losses']], [2, 1])


if __name__ == '__main__':
    unittest.main()
