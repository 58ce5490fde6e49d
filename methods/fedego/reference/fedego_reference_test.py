"""Self-checks of the FedEgo reference port against hand-computed values."""
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedego.reference import fedego_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402

CLIENT_KEYS = ['lowLayer.linear.weight', 'lowLayer.linear.bias',
               'gnnLayer.sage1.lin_l.weight', 'gnnLayer.sage1.lin_l.bias', 'gnnLayer.sage1.lin_r.weight',
               'gnnLayer.sage2.lin_l.weight', 'gnnLayer.sage2.lin_l.bias', 'gnnLayer.sage2.lin_r.weight',
               'classification.weight']


def make_subgraph(gen, n, feat_dim, num_classes, test_num, chords):
    """A ring plus random chords (both directions, no loops, no isolated node), masks in
    upstream's layout: pool = the first n - test_num - n//5 nodes, then n//5 unused, then test."""
    ring = torch.stack([torch.arange(n), (torch.arange(n) + 1) % n])
    src = torch.randint(0, n, (chords,), generator=gen)
    dst = (src + torch.randint(2, n - 1, (chords,), generator=gen)) % n
    idx = torch.arange(n)
    pool = n - test_num - n // 5
    return pyg.Data(x=torch.randn(n, feat_dim, generator=gen),
                    edge_index=pyg.to_undirected(torch.cat([ring, torch.stack([src, dst])], 1), n),
                    y=torch.randint(0, num_classes, (n,), generator=gen),
                    train_idx=idx < pool, val_idx=(idx >= pool) & (idx < n - test_num),
                    test_idx=idx >= n - test_num)


def tiny_setup():
    gen = torch.Generator().manual_seed(11)
    # pools of 7 and 9 nodes -> 4 and 5 mashed graphs at batch_size 2; 9 // 5 = 1 per server epoch
    subgraphs = [make_subgraph(gen, 12, 5, 3, 3, 4), make_subgraph(gen, 15, 5, 3, 3, 5)]
    states = ref.draw_initial_states(5, 3, 2, hidden=8, seed=3)
    return subgraphs, states


def build(subgraphs, states, **kw):
    args = dict(hidden=8, batch_size=2, lamb_c=0.5, dropout=0.0, lr=1e-2)
    args.update(kw)
    return ref.FedEgoReference(subgraphs, 3, states, **args)


def flatten(obj, prefix=''):
    """Every tensor / number of a nested result, keyed by its path."""
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f'{prefix}/{k}'))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out.update(flatten(v, f'{prefix}/{i}'))
    else:
        out[prefix] = obj
    return out


class FedEgoReferenceTest(unittest.TestCase):

    def assertClose(self, actual, expected, atol=1e-6):
        expected = torch.as_tensor(expected, dtype=actual.dtype)
        self.assertEqual(tuple(actual.shape), tuple(expected.shape))
        self.assertTrue(torch.allclose(actual, expected, atol=atol), f'{actual} != {expected}')

    def assertIdentical(self, a, b):
        fa, fb = flatten(a), flatten(b)
        self.assertEqual(list(fa), list(fb))
        for k in fa:
            if isinstance(fa[k], torch.Tensor):
                self.assertTrue(torch.equal(fa[k], fb[k]), k)
            else:
                self.assertEqual(fa[k], fb[k], k)

    def test_state_dict_keys_and_shapes(self):
        states = ref.draw_initial_states(5, 3, 2, hidden=8, seed=0)
        self.assertEqual(list(states['clients'][0]), CLIENT_KEYS)
        self.assertEqual(list(states['server']), CLIENT_KEYS[2:])
        shapes = {k: tuple(v.shape) for k, v in states['clients'][1].items()}
        self.assertEqual(shapes['lowLayer.linear.weight'], (8, 5))
        self.assertEqual(shapes['gnnLayer.sage2.lin_r.weight'], (8, 8))
        self.assertEqual(shapes['classification.weight'], (3, 8))
        self.assertFalse(torch.equal(states['clients'][0]['classification.weight'],
                                     states['clients'][1]['classification.weight']))
        subgraphs, _ = tiny_setup()
        fed = build(subgraphs, states)
        self.assertEqual(list(fed.clients[0].state_dict()), CLIENT_KEYS)
        self.assertEqual(list(fed.server.state_dict()), CLIENT_KEYS[2:])

    def test_gnn_layer_and_classifier_by_hand(self):
        # Sampled edges 1 -> 0, 2 -> 0, 2 -> 1; node 2 has no incoming edge.
        x = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
        ei = torch.tensor([[1, 2, 2], [0, 0, 1]])
        weights = {'sage1.lin_l.weight': torch.eye(2), 'sage1.lin_l.bias': torch.tensor([0.0, -2.0]),
                   'sage1.lin_r.weight': torch.tensor([[1.0, 1.0], [0.0, 1.0]]),
                   'sage2.lin_l.weight': torch.tensor([[1.0, 0.0], [0.0, -1.0]]),
                   'sage2.lin_l.bias': torch.tensor([0.5, 0.0]),
                   'sage2.lin_r.weight': torch.tensor([[0.0, 0.0], [1.0, 0.0]])}
        gnn = ref.GNNLayer(2, 2, 2, linear=False)
        gnn.load_state_dict(weights)
        # sage1: node0 mean [.5, 1.5] + b + W_r x0 = [1.5, -.5]; node1 [1, -1] + [2, 2] = [3, 1];
        # node2 (no edge) b + W_r x2 = [2, -1]. relu -> [[1.5, 0], [3, 1], [2, 0]].
        # sage2: node0 mean(h1, h2) = [2.5, .5] -> W_l [2.5, -.5] + b [3, -.5] + W_r h0 [0, 1.5] = [3, 1];
        # node1 mean(h2) = [2, 0] -> [2.5, 0] + [0, 3] = [2.5, 3]; node2 [.5, 0] + [0, 2].
        self.assertClose(gnn(x, ei), [[3.0, 1.0], [2.5, 3.0], [0.5, 2.0]])
        lin = ref.GNNLayer(2, 2, 2, linear=True)
        lin.load_state_dict(weights)
        # No relu after sage1: h1 = [[1.5, -.5], [3, 1], [2, -1]];
        # node0 mean [2.5, 0] -> [3, 0] + [0, 1.5]; node1 mean [2, -1] -> [2.5, 1] + [0, 3]; node2 as before.
        self.assertClose(lin(x, ei), [[3.0, 1.5], [2.5, 4.0], [0.5, 2.0]])
        cls = ref.Classification(2, 3)
        cls.load_state_dict({'weight': torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])})
        out = cls(torch.tensor([[3.0, 1.0]]))  # logits [3, 1, 4]
        z = math.log(math.exp(3) + math.exp(1) + math.exp(4))
        self.assertClose(out, [[3 - z, 1 - z, 4 - z]])
        # Loss: -log(softmax + 1e-7) of the label, batch mean.
        loss = ref._loss(out, torch.tensor([[0.0, 0.0, 1.0]]))
        self.assertAlmostEqual(float(loss), -math.log(math.exp(4 - z) + 1e-7), places=6)
        soft = ref._loss(torch.log(torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])),
                         torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]))
        expected = -(0.5 * math.log(0.5 + 1e-7) + 0.5 * math.log(0.25 + 1e-7) + math.log(0.8 + 1e-7)) / 2
        self.assertAlmostEqual(float(soft), expected, places=6)
        # The 1e-7 matters for a tiny probability: -log(1e-8 + 1e-7), not -log(1e-8).
        tiny = ref._loss(torch.log(torch.tensor([[1.0 - 2e-8, 1e-8, 1e-8]])), torch.tensor([[0.0, 1.0, 0.0]]))
        self.assertAlmostEqual(float(tiny), -math.log(1.1e-7), places=3)

    def mixup_client(self, mixup):
        # Complete graph K5; pool = {0, 1} -> one chunk of b = 2 centres. Theta = identity on x >= 0.
        n = 5
        ei = torch.tensor([[u, v] for u in range(n) for v in range(n) if u != v]).t()
        x = torch.tensor([[v, v * v, 1.0, 0.0, 10.0 - v] for v in range(n)], dtype=torch.float)
        mask = torch.tensor([True, True, False, False, False])
        data = pyg.Data(x=x, edge_index=ei, y=torch.tensor([0, 1, 2, 0, 1]), train_idx=mask,
                        val_idx=~mask, test_idx=torch.tensor([False] * 3 + [True] * 2))
        client = ref.Client(data, 5, 5, 3, 1e-2, 0.0, mixup, False)
        client.lowLayer.load_state_dict({'linear.weight': torch.eye(5), 'linear.bias': torch.zeros(5)})
        return client, x

    # S(v): the 6 neighbours drawn for v. Centres 0, 1 draw at hop 0; 1 is itself a centre, so
    # only the nodes hop 0 ADDED (2, 3, 4, in order of first appearance) draw at hop 1.
    S = {0: [1, 2, 1, 3, 4, 2], 1: [0, 2, 3, 3, 4, 4], 2: [0, 1, 3, 4, 0, 1],
         3: [4, 4, 4, 0, 1, 2], 4: [3, 2, 1, 0, 3, 2]}
    DRAWS = [[torch.tensor([S[0], S[1]]), torch.tensor([S[2], S[3], S[4]])]]
    # The aligned trees, written out: position 1+j = j-th draw of the centre; 7+6j+k = k-th draw
    # of that neighbour, which for a neighbour that is a centre is ITS hop-0 draw list.
    TREE0 = ([0] + [1, 2, 1, 3, 4, 2] + [0, 2, 3, 3, 4, 4] + [0, 1, 3, 4, 0, 1] + [0, 2, 3, 3, 4, 4]
             + [4, 4, 4, 0, 1, 2] + [3, 2, 1, 0, 3, 2] + [0, 1, 3, 4, 0, 1])
    TREE1 = ([1] + [0, 2, 3, 3, 4, 4] + [1, 2, 1, 3, 4, 2] + [0, 1, 3, 4, 0, 1] + [4, 4, 4, 0, 1, 2]
             + [4, 4, 4, 0, 1, 2] + [3, 2, 1, 0, 3, 2] + [3, 2, 1, 0, 3, 2])

    def test_mixup_positionwise_mean_by_hand(self):
        client, x = self.mixup_client(mixup=True)
        client.initShareBatch()
        sx, sei, sy, smask, used = client.getShareBatch(2, self.DRAWS)
        self.assertEqual(tuple(sx.shape), (43, 5))
        y1h = F.one_hot(torch.tensor([0, 1, 2, 0, 1]), 3).float()
        for p in range(43):
            self.assertClose(sx[p], (x[self.TREE0[p]] + x[self.TREE1[p]]) / 2)
            self.assertClose(sy[p], (y1h[self.TREE0[p]] + y1h[self.TREE1[p]]) / 2)
        # A few positions by hand: p 7 = (x[S(1)[0]] + x[S(0)[0]]) / 2 = (x0 + x1) / 2.
        self.assertClose(sx[7], [0.5, 0.5, 1.0, 0.0, 9.5])
        self.assertClose(sy[0], [0.5, 0.5, 0.0])
        self.assertClose(sy[25], [0.0, 1.0, 0.0])  # both trees hold node 4 (label 1) at position 25
        # 42 edges child -> parent: 1..6 -> 0, 7..12 -> 1, ..., 37..42 -> 6; centre mask.
        self.assertEqual(sei[:, :7].tolist(), [[1, 2, 3, 4, 5, 6, 7], [0, 0, 0, 0, 0, 0, 1]])
        self.assertEqual(sei[:, -1].tolist(), [42, 6])
        self.assertEqual(sei.shape[1], 42)
        self.assertEqual(smask.tolist(), [True] + [False] * 42)
        self.assertTrue(all(torch.equal(a, b) for a, b in zip(used[0], self.DRAWS[0])))

    def test_without_mixup_uploads_the_first_tree(self):
        client, x = self.mixup_client(mixup=False)
        client.initShareBatch()
        sx, _, sy, _, _ = client.getShareBatch(2, self.DRAWS)
        self.assertTrue(torch.equal(sx, x[self.TREE0]))  # (r + r) / 2 is exact

    def test_fedavg_lamb_and_distribution_by_hand(self):
        w = [{'a': torch.tensor([1.0, 2.0])}, {'a': torch.tensor([3.0, -2.0])}, {'a': torch.tensor([2.0, 3.0])}]
        self.assertClose(ref.FedAvg(w)['a'], [2.0, 1.0])
        self.assertTrue(torch.equal(w[0]['a'], torch.tensor([1.0, 2.0])))  # deep copy
        client, _ = self.mixup_client(mixup=True)  # labels [0, 1, 2, 0, 1]
        # P_i over all nodes = [.4, .4, .2]; P_g = [.2, .3, .5]; EMD = .2 + .1 + .3 = .6
        client.setLamb(torch.tensor([0.2, 0.3, 0.5]), 0.5)
        self.assertClose(client.p, [0.4, 0.4, 0.2])
        self.assertAlmostEqual(float(client.emd), 0.6, places=6)
        self.assertAlmostEqual(float(client.lamb), math.sqrt(0.3), places=6)
        client.setLamb(torch.tensor([0.2, 0.3, 0.5]), 0.25, lamb_fixed=True)
        self.assertEqual(client.lamb, 0.25)
        server = ref.Server(4, 3, 1e-2, 0.0, False)
        y = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.25, 0.75], [0.0, 0.0, 1.0]])
        server.loadData(torch.zeros(4, 4), torch.zeros(2, 0, dtype=torch.long), y,
                        torch.tensor([True, False, True, False]))
        self.assertClose(server.getDistribution(), [1.5 / 4, 0.75 / 4, 1.75 / 4])  # all rows, not centres
        self.assertEqual(server.share_nodes.tolist(), [0, 2])

    def test_two_client_round_deterministic_replayable_and_formulas(self):
        subgraphs, states = tiny_setup()
        a, b = build(subgraphs, states), build(subgraphs, states)
        ra = a.train_round(generator=torch.Generator().manual_seed(5))
        rb = b.train_round(generator=torch.Generator().manual_seed(5))
        self.assertIdentical(ra, rb)
        c = build(subgraphs, states)
        rc = c.train_round(ra['draws'])  # replay of the injected draws, no generator
        self.assertIdentical(ra, rc)

        # Round 1's Theta is the mean of the two initial reduction layers.
        for k in CLIENT_KEYS[:2]:
            self.assertTrue(torch.equal(ra['theta'][k], (states['clients'][0][k] + states['clients'][1][k]) / 2))
        # Uploads: 4 and 5 mashed graphs, local edge ids; server graph concatenated WITHOUT offsets.
        self.assertEqual([u['x'].shape[0] for u in ra['uploads']], [4 * 43, 5 * 43])
        self.assertEqual(tuple(ra['uploads'][0]['y'].shape), (4 * 43, 3))
        self.assertEqual(int(ra['uploads'][1]['edge_index'].max()), 5 * 43 - 1)
        sd = ra['server_data']
        self.assertTrue(torch.equal(sd['edge_index'], torch.cat([u['edge_index'] for u in ra['uploads']], 1)))
        self.assertEqual(sd['mask'].nonzero().view(-1).tolist(), [43 * j for j in range(9)])
        self.assertClose(ra['global_p'], sd['y'].sum(0) / (9 * 43))
        # Mashed labels are means of one-hots: each row sums to 1.
        self.assertClose(sd['y'].sum(1), torch.ones(9 * 43))
        # Server: 9 // 5 = 1 graph per epoch; graphs 0..4 have (duplicated) child edges, 5..8 none
        # (so such a centre draws no neighbour at all).
        for e in ra['draws']['server']['epochs']:
            g = e['train_graphs'].tolist()
            self.assertEqual(len(g), 1)
            hop0 = e['neighbors'][0][0]
            self.assertEqual(hop0.shape[0], 1 if g[0] < 5 else 0)
            if g[0] < 5:
                self.assertTrue(set(hop0.view(-1).tolist()) <= set(range(43 * g[0] + 1, 43 * g[0] + 7)))
        # Local epochs: n // 5 = 2 and 3 training nodes from the pools.
        self.assertEqual([len(e['train_nodes']) for e in ra['draws']['clients'][0]['epochs']], [2] * 5)
        self.assertEqual([len(e['train_nodes']) for e in ra['draws']['clients'][1]['epochs']], [3] * 5)
        # Mixing: Phi_i = lamb * Phi_g + (1 - lamb) * Phi_i(trained); Theta_i stays the trained one.
        for i in range(2):
            lamb = torch.tensor(ra['lamb'][i])
            self.assertAlmostEqual(ra['lamb'][i], (ra['emd'][i] / 2) ** 0.5, places=5)
            for k in CLIENT_KEYS[:2]:
                self.assertTrue(torch.equal(ra['local'][i][k], ra['trained'][i][k]))
                self.assertTrue(torch.equal(ra['uploads'][i]['theta'][k], ra['trained'][i][k]))
            for k in CLIENT_KEYS[2:]:
                self.assertTrue(torch.equal(ra['local'][i][k], lamb * ra['server'][k] + (1 - lamb) * ra['trained'][i][k]))
        # The models changed.
        for i in range(2):
            for k in CLIENT_KEYS:
                self.assertFalse(torch.equal(ra['trained'][i][k], states['clients'][i][k]), k)
        for k in CLIENT_KEYS[2:]:
            self.assertFalse(torch.equal(ra['server'][k], states['server'][k]), k)
        self.assertTrue(all(math.isfinite(v) for v in sum(ra['client_losses'], []) + ra['server_losses']))
        # Round 2 starts from the mean of the uploaded (trained) Theta_i.
        r2 = a.train_round(generator=torch.Generator().manual_seed(6))
        self.assertEqual(r2['round'], 2)
        for k in CLIENT_KEYS[:2]:
            self.assertTrue(torch.equal(r2['theta'][k], torch.div(ra['uploads'][0]['theta'][k]
                                                                  + ra['uploads'][1]['theta'][k], 2)))

    def test_first_local_step_loss_from_per_node_neighbour_lists(self):
        # The sampled batch is equivalent to: every node of the batch has ONE list S(v) of drawn
        # neighbours (centres: their hop-0 draws; nodes first added at hop 0: their hop-1 draws;
        # anything else: none), and SAGE averages over S(v), duplicates counted.
        subgraphs, states = tiny_setup()
        fed = build(subgraphs, states)
        r = fed.train_round(generator=torch.Generator().manual_seed(9))
        ep = r['draws']['clients'][0]['epochs'][0]
        centres = ep['train_nodes'].tolist()
        self.assertEqual(len(centres), 2)  # n // 5 = 2 = one batch
        hop0, hop1 = ep['neighbors'][0]
        added = []
        for v in hop0.view(-1).tolist():
            if v not in centres and v not in added:
                added.append(v)
        S = {c: hop0[i].tolist() for i, c in enumerate(centres)}
        S.update({u: hop1[i].tolist() for i, u in enumerate(added)})
        g, st = subgraphs[0], states['clients'][0]
        w = dict(st)
        w.update(r['theta'])  # round 1 trains from the averaged Theta

        def lin(prefix, v):
            return w[prefix + '.weight'] @ v + (w[prefix + '.bias'] if prefix + '.bias' in w else 0)

        def red(v):
            return torch.relu(lin('lowLayer.linear', g.x[v]))

        def h1(v):
            m = torch.stack([red(u) for u in S[v]]).mean(0) if v in S else torch.zeros(8)
            return torch.relu(lin('gnnLayer.sage1.lin_l', m) + lin('gnnLayer.sage1.lin_r', red(v)))

        losses = []
        for c in centres:
            m = torch.stack([h1(u) for u in S[c]]).mean(0)
            h2 = torch.relu(lin('gnnLayer.sage2.lin_l', m) + lin('gnnLayer.sage2.lin_r', h1(c)))
            prob = torch.softmax(w['classification.weight'] @ h2, 0)
            losses.append(-math.log(float(prob[g.y[c]]) + 1e-7))
        self.assertAlmostEqual(r['client_losses'][0][0], sum(losses) / 2, places=5)

    def test_upload_order_and_evaluation(self):
        subgraphs, states = tiny_setup()
        a = build(subgraphs, states)
        ra = a.train_round({'upload_order': [1, 0]}, generator=torch.Generator().manual_seed(2))
        self.assertTrue(torch.equal(ra['server_data']['x'],
                                    torch.cat([ra['uploads'][1]['x'], ra['uploads'][0]['x']])))
        ev = a.evaluate(global_test=subgraphs[0], generator=torch.Generator().manual_seed(4))
        self.assertEqual(len(ev['local_f1']), 2)
        self.assertTrue(all(0 <= f <= 1 for f in ev['local_f1'] + ev['test_f1']))
        self.assertFalse(ev['stop'])
        # Replaying the evaluation draws on an identical federation gives identical scores.
        b = build(subgraphs, states)
        b.train_round(ra['draws'])
        eb = b.evaluate(ev['draws'], global_test=subgraphs[0])
        self.assertEqual((eb['local_f1'], eb['local_loss'], eb['test_f1']),
                         (ev['local_f1'], ev['local_loss'], ev['test_f1']))
        wd = a.weight_divergence()
        self.assertEqual(len(wd), 2)
        self.assertTrue(all(w > 0 for w in wd))

    def test_explicit_trees_of_the_samples_reproduce_a_round(self):
        # The hooks the differential test uses (not upstream): TreeLoader on the expansion of
        # every NeighborLoader sample of a round (tree_of_batch) computes the same round, and the
        # server's shifted edge ids give every mashed graph its own tree.
        subgraphs, states = tiny_setup()
        a = build(subgraphs, states, server_edge_offset=True)
        ra = a.train_round(generator=torch.Generator().manual_seed(5))
        sd = ra['server_data']
        starts = [0, ra['uploads'][0]['x'].shape[0]]
        for u, start in zip(ra['uploads'], starts):
            e = sd['edge_index'][:, start // 43 * 42:(start // 43 + u['x'].shape[0] // 43) * 42]
            self.assertTrue(torch.equal(e, u['edge_index'] + start))

        def trees(data, input_nodes, sampled):
            loader = pyg.NeighborLoader(data, [6, 6], 2, input_nodes=input_nodes, sampled=sampled)
            return [ref.tree_of_batch(b) for b in loader]
        draws = {'upload_order': ra['upload_order'], 'clients': [], 'server': {'epochs': []}}
        for g, used in zip(subgraphs, ra['draws']['clients']):
            draws['clients'].append({
                'epochs': [{'trees': trees(g, e['train_nodes'], e['neighbors'])} for e in used['epochs']],
                'upload': {'trees': trees(g, g.train_idx, used['upload']['neighbors'])}})
        server_graph = pyg.Data(x=sd['x'], edge_index=sd['edge_index'], y=sd['y'])
        centres = sd['mask'].nonzero().view(-1)
        for e in ra['draws']['server']['epochs']:
            draws['server']['epochs'].append({'trees': trees(server_graph, centres[e['train_graphs']], e['neighbors'])})
        # A tree: position 1 + j is the centre's j-th draw, every child an in-neighbour.
        t = draws['clients'][0]['epochs'][0]['trees'][0]
        self.assertEqual(tuple(t.shape), (2, 43))
        self.assertEqual(t[:, 1:7].tolist(), ra['draws']['clients'][0]['epochs'][0]['neighbors'][0][0][:, :].tolist())
        b = build(subgraphs, states, server_edge_offset=True)
        rb = b.train_round(draws)
        fa, fb = flatten({k: ra[k] for k in ('trained', 'uploads', 'server', 'global_p', 'local', 'client_losses')}), \
            flatten({k: rb[k] for k in ('trained', 'uploads', 'server', 'global_p', 'local', 'client_losses')})
        self.assertEqual(list(fa), list(fb))
        for k in fa:
            x, y = torch.as_tensor(fa[k]), torch.as_tensor(fb[k])
            if x.dtype == torch.bool or x.dtype == torch.long:
                self.assertTrue(torch.equal(x, y), k)
            else:
                self.assertLessEqual(float((x - y).abs().max()), 1e-5, k)
        self.assertTrue(all(torch.equal(x, y) for x, y in zip(rb['draws']['clients'][0]['epochs'][0]['trees'],
                                                               draws['clients'][0]['epochs'][0]['trees'])))
        # A tree whose child is not a neighbour of its parent is refused.
        bad = {'clients': [{'epochs': [{'trees': [t.clone().index_fill_(1, torch.tensor([42]), 11)]}]}]}
        with self.assertRaises(ValueError):
            build(subgraphs, states).train_round(bad)
        # Upstream's unshifted edges: a tree of a later upload's graph is not a tree of the server graph.
        c = build(subgraphs, states)
        with self.assertRaises(ValueError):
            c.train_round({'upload_order': [0, 1], 'clients': draws['clients'],
                           'server': {'epochs': [{'trees': [43 * 8 + torch.arange(43)[None]]}]}})

    def test_cross_entropy_instead_of_the_codes_epsilon(self):
        out = torch.log_softmax(torch.tensor([[3.0, 1.0, 4.0], [0.0, 30.0, 0.0]]), 1)
        y = torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
        self.assertAlmostEqual(float(ref._loss(out, y, None)), float(-(y * out).sum(1).mean()), places=5)
        # The code caps a confidently wrong node's loss near -log(1e-7) (and its gradient).
        self.assertAlmostEqual(float(ref._loss(out[1:], y[1:])), -math.log(math.exp(-30) + 1e-7), places=3)
        self.assertAlmostEqual(float(ref._loss(out[1:], y[1:], None)), 30.0, places=3)

    def test_injected_draws_are_validated(self):
        subgraphs, states = tiny_setup()
        a = build(subgraphs, states)
        bad = {'clients': [{'epochs': [{'train_nodes': torch.tensor([0, 9])}]}]}  # 9 is a test node
        with self.assertRaises(ValueError):
            a.train_round(bad)
        a = build(subgraphs, states)
        with self.assertRaises(ValueError):
            a.train_round({'upload_order': [0, 0]}, generator=torch.Generator().manual_seed(1))


if __name__ == '__main__':
    unittest.main()
