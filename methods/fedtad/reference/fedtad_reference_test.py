"""Self-checks of the FedTAD reference port against hand-computed values."""
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedtad.reference import fedtad_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402


def random_subgraph(gen, n, feat_dim, num_classes, num_edges):
    """Random undirected graph (both directions stored, no loops) with every
    split non-empty and every class present among the train nodes."""
    src = torch.randint(0, n, (num_edges,), generator=gen)
    dst = (src + torch.randint(1, n, (num_edges,), generator=gen)) % n
    y = torch.arange(n) % num_classes
    split = torch.arange(n) % 3 if n >= 3 else torch.zeros(n, dtype=torch.long)
    train = (torch.arange(n) < num_classes) | (split == 0)
    return pyg.Data(x=torch.randn(n, feat_dim, generator=gen),
                    edge_index=pyg.to_undirected(torch.stack([src, dst]), n),
                    y=y, train_idx=train, val_idx=~train & (split == 1), test_idx=~train & (split != 1))


def tiny_setup(num_classes=3, feat_dim=4, hid_dim=8, noise_dim=5):
    gen = torch.Generator().manual_seed(7)
    subgraphs = [random_subgraph(gen, 6, feat_dim, num_classes, 8),
                 random_subgraph(gen, 9, feat_dim, num_classes, 12)]
    # Initial weights and ckr come from a private generator, never from the global RNG.
    global_state = {k: torch.randn(v.shape, generator=gen) * 0.3 for k, v in
                    ref.GCN(feat_dim, hid_dim, num_classes, 0.0).state_dict().items()}
    generator_state = {k: torch.randn(v.shape, generator=gen) * 0.1 for k, v in
                       ref.FedTAD_ConGenerator(noise_dim, feat_dim, num_classes, 0).state_dict().items()}
    ckr = torch.rand(2, num_classes, generator=gen) + 0.5
    return gen, subgraphs, global_state, generator_state, ckr


class FedTadReferenceTest(unittest.TestCase):

    def test_state_dict_keys(self):
        self.assertEqual(list(ref.GCN(4, 8, 3, 0.5).state_dict().keys()),
                         ['conv1.bias', 'conv1.lin.weight', 'conv2.bias', 'conv2.lin.weight'])
        shapes = {k: tuple(v.shape) for k, v in ref.FedTAD_ConGenerator(32, 10, 3, 0).state_dict().items()}
        self.assertEqual(shapes, {
            'emb_layer.weight': (3, 3),
            'hid_layers.0.weight': (64, 35), 'hid_layers.0.bias': (64,),
            'hid_layers.3.weight': (128, 64), 'hid_layers.3.bias': (128,),
            'hid_layers.6.weight': (256, 128), 'hid_layers.6.bias': (256,),
            'nodes_layer.weight': (10, 256), 'nodes_layer.bias': (10,)})

    def test_construct_graph_topk_symmetric_with_self_loops(self):
        # Angles (degrees) and radii: top-k uses cosine, so radius must not matter.
        # Euclidean-nearest of point 2 is point 0, cosine-nearest is point 1.
        angles = [0, 10, 25, 60, 80, 90]
        radii = [1, 3, 0.5, 2, 1, 4]
        x = torch.tensor([[r * math.cos(math.radians(a)), r * math.sin(math.radians(a))]
                          for a, r in zip(angles, radii)])
        norm = F.normalize(x, p=2, dim=1)
        g = ref.construct_graph(x, norm @ norm.t(), k=2)
        # k=2 picks itself and its nearest angle: 0->1, 1->0, 2->1, 3->4, 4->5, 5->4.
        # Symmetrised: 0-1, 1-2, 3-4, 4-5; then the diagonal; row-major; then
        # add_self_loops appends a second loop per node.
        expected = torch.tensor([[0, 0, 1, 1, 1, 2, 2, 3, 3, 4, 4, 4, 5, 5, 0, 1, 2, 3, 4, 5],
                                 [0, 1, 0, 1, 2, 1, 2, 3, 4, 3, 4, 5, 4, 5, 0, 1, 2, 3, 4, 5]])
        self.assertTrue(torch.equal(g.edge_index, expected), g.edge_index)
        self.assertIs(g.x, x)
        dense = pyg.to_dense_adj(g.edge_index, 6)[0]
        self.assertTrue(torch.equal(dense, dense.t()))
        self.assertTrue(torch.equal(dense.diagonal(), torch.full((6,), 2.0)))

    def test_diversity_loss_by_hand(self):
        noises = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
        layer = torch.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, 3.0], [4.0, 2.0, 0.0]])
        # noise mean-squared distances: d01 = 1/2, d02 = 2, d12 = 5/2
        # layer mean-absolute distances: d01 = 2/3, d02 = 2, d12 = 8/3
        # mean over the 9 pairs of -product: -2 * (1/3 + 4 + 20/3) / 9 = -22/9
        loss = ref.DiversityLoss('l1')(noises, layer)
        self.assertAlmostEqual(loss.item(), math.exp(-22 / 9), places=6)

    def test_class_reliability_by_hand(self):
        # Client 0: path 0 - 1 - 2, all train, labels [0, 1, 1].
        # ft_emb rows: [1,0 | 2], [0,1 | 0], [1,1 | 1].
        # cos(f0, f1) = 0, cos(f1, f2) = 1/sqrt(3).
        # node 0: (0 + 1) / 2; node 1: (0 + 1/sqrt3 + 1) / 3; node 2: (1/sqrt3 + 1) / 2.
        c0 = pyg.Data(x=torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
                      edge_index=torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]]),
                      y=torch.tensor([0, 1, 1]), train_idx=torch.tensor([True, True, True]))
        # Client 1: one isolated train node of class 1 (-> 1), one non-train node.
        # Upstream's `.squeeze()` would fail on a single train node; see the port.
        c1 = pyg.Data(x=torch.tensor([[3.0, 4.0], [1.0, 1.0]]), edge_index=torch.zeros(2, 0, dtype=torch.long),
                      y=torch.tensor([1, 0]), train_idx=torch.tensor([True, False]))
        topo = {id(c0.edge_index): torch.tensor([[2], [0], [1]]), id(c1.edge_index): torch.tensor([[5], [6]])}
        seen = []

        def topo_emb_fn(edge_index, num_nodes):
            seen.append(num_nodes)
            return topo[id(edge_index)]

        ckr = ref.class_reliability([c0, c1], 2, topo_emb_fn)
        s3 = 1 / math.sqrt(3)
        expected = torch.tensor([[1 / 2, (1 + s3) / 3 + (1 + s3) / 2], [0.0, 1.0]])
        self.assertEqual(seen, [3, 2])
        self.assertEqual(ckr.dtype, torch.float32)
        self.assertTrue(torch.allclose(ckr, expected, atol=1e-6), ckr)

    def test_cal_topo_emb_shape(self):
        torch.manual_seed(0)
        emb = ref.cal_topo_emb(torch.tensor([[0, 1], [1, 0]]), 3, max_walk_length=5)
        self.assertEqual(tuple(emb.shape), (3, 15))  # walks of length 1..5
        self.assertEqual(emb.dtype, torch.int64)
        for start, col in enumerate([0, 1, 3, 6, 10]):  # every walk starts at its node
            self.assertTrue(torch.equal(emb[:, col], torch.arange(3)), (start, emb))

    def test_fedavg_aggregation_is_node_weighted_mean(self):
        _, subgraphs, global_state, _, _ = tiny_setup()
        n = [g.x.shape[0] for g in subgraphs]
        fl = ref.FedTadReference(subgraphs, 3, sum(n), None, global_state, None, hid_dim=8, dropout=0.0,
                                 fedtad=False)
        ev = fl.evaluate()
        self.assertAlmostEqual(ev['val'], sum(n[k] / sum(n) * ev['clients'][k]['acc_val'] for k in range(2)))
        out = fl.train_round()
        self.assertEqual(set(out), {'local', 'aggregated', 'distilled'})
        for key in global_state:
            l0, l1 = out['local'][0][key], out['local'][1][key]
            self.assertFalse(torch.equal(l0, global_state[key]))  # local training moved the weights
            self.assertFalse(torch.equal(l0, l1))
            mean = (n[0] * l0 + n[1] * l1) / sum(n)
            self.assertTrue(torch.allclose(out['aggregated'][key], mean, atol=1e-6), key)
            self.assertTrue(torch.equal(out['distilled'][key], out['aggregated'][key]))
            self.assertTrue(torch.equal(fl.global_model.state_dict()[key], out['aggregated'][key]))
        # Next round starts from the aggregate: broadcast copies it into every client.
        fl.evaluate()
        for key in global_state:
            self.assertTrue(torch.equal(fl.local_models[1].state_dict()[key], out['aggregated'][key]))

    def test_fedtad_round_runs_deterministically_and_distills(self):
        gen, subgraphs, global_state, generator_state, ckr = tiny_setup()
        num_gen, noise_dim, glb_epochs, it_d = 10, 5, 2, 3
        noise = [torch.randn(num_gen, noise_dim, generator=gen) for _ in range(glb_epochs)]

        def run(seed):
            torch.manual_seed(seed)  # results must not depend on the global RNG
            fl = ref.FedTadReference(subgraphs, 3, 15, ckr, global_state, generator_state, hid_dim=8,
                                     dropout=0.0, num_epochs=2, glb_epochs=glb_epochs, it_g=1, it_d=it_d,
                                     num_gen=num_gen, topk=3, noise_dim=noise_dim)
            return [fl.train_round(noise), fl.train_round(noise)]

        a, b = run(1), run(2)
        for ra, rb in zip(a, b):
            for name in ('aggregated', 'distilled', 'generator'):
                for key in ra[name]:
                    self.assertTrue(torch.equal(ra[name][key], rb[name][key]), (name, key))
            for ia, ib in zip(ra['iterations'], rb['iterations']):
                self.assertTrue(torch.equal(ia['node_logits'], ib['node_logits']))
                self.assertTrue(torch.equal(ia['edge_index'], ib['edge_index']))
                self.assertEqual(ia['loss_G'], ib['loss_G'])
                self.assertEqual(ia['loss_D'], ib['loss_D'])

        r = a[0]
        self.assertTrue(torch.equal(r['pseudo_labels'], torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])))
        self.assertTrue(any(not torch.equal(r['distilled'][k], r['aggregated'][k]) for k in global_state))
        self.assertTrue(any(not torch.equal(r['generator'][k], generator_state[k]) for k in generator_state))
        self.assertEqual(len(r['iterations']), glb_epochs)
        for it in r['iterations']:
            self.assertEqual(tuple(it['node_logits'].shape), (num_gen, 4))
            self.assertEqual(len(it['loss_G']), 1)
            self.assertEqual(len(it['loss_D']), it_d)
            self.assertTrue(all(math.isfinite(v) for v in it['loss_G'] + it['loss_D']))
            dense = pyg.to_dense_adj(it['edge_index'], num_gen)[0]
            self.assertTrue(torch.equal(dense, dense.t()))
            self.assertTrue(torch.equal(dense.diagonal(), torch.full((num_gen,), 2.0)))
        # Distillation reduces the divergence on a fixed pseudo graph.
        self.assertLess(r['iterations'][0]['loss_D'][-1], r['iterations'][0]['loss_D'][0])


if __name__ == '__main__':
    unittest.main()
