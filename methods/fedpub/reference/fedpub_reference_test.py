"""Self-checks of the FED-PUB reference port against hand-computed values."""
import math
import os
import random
import sys
import unittest

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedpub.reference import fedpub_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402

KEYS = ['conv1.mask', 'conv1.bias', 'conv1.lin.weight', 'conv2.mask', 'conv2.bias', 'conv2.lin.weight',
        'clsif.weight', 'clsif.mask', 'clsif.bias']
# Path 0 - 1 - 2 with self loops: degrees 2, 3, 2, so D^-1/2 (A + I) D^-1/2 is
S6 = 1 / math.sqrt(6)
PATH = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
PATH_NORM = torch.tensor([[1 / 2, S6, 0.0], [S6, 1 / 3, S6], [0.0, S6, 1 / 2]])


def random_subgraph(gen, n, feat_dim, num_classes, num_edges):
    """Random undirected graph (both directions stored, no loops) with every split non-empty."""
    src = torch.randint(0, n, (num_edges,), generator=gen)
    dst = (src + torch.randint(1, n, (num_edges,), generator=gen)) % n
    y = torch.arange(n) % num_classes
    split = torch.arange(n) % 3
    train = (torch.arange(n) < num_classes) | (split == 0)
    return pyg.Data(x=torch.randn(n, feat_dim, generator=gen), edge_index=pyg.to_undirected(torch.stack([src, dst]), n),
                    y=y, train_idx=train, val_idx=~train & (split == 1), test_idx=~train & (split != 1))


def hand_model():
    """F = 2, hid = 2, C = 2, l1 = 1e-3. Masks hold entries below l1 (5e-4, -9e-4: pruned in eval)
    and one at exactly l1 (kept: the test is |m| < l1)."""
    m = ref.MaskedGCN(2, 2, 2, l1=1e-3, dropout=0.0)
    sd = {
        'conv1.mask': torch.tensor([[1.0, 0.5], [5e-4, 2.0]]),
        'conv1.bias': torch.tensor([0.1, -0.2]),
        'conv1.lin.weight': torch.tensor([[1.0, 2.0], [-1.0, 1.0]]),
        'conv2.mask': torch.tensor([[1.0, -9e-4], [1e-3, 1.0]]),
        'conv2.bias': torch.tensor([0.0, 0.3]),
        'conv2.lin.weight': torch.tensor([[0.5, 100.0], [1.0, -1.0]]),
        'clsif.weight': torch.tensor([[1.0, 0.0], [2.0, -1.0]]),
        'clsif.mask': torch.tensor([[1.0, 1.0], [0.5, 1e-4]]),
        'clsif.bias': torch.tensor([[0.25, -0.25]]),
    }
    m.load_state_dict(sd)
    return m, sd


def dense_forward(sd, a_norm, x, pruned, is_proxy=False):
    """The masked GCN written as dense matrices: relu(A (x (W1*M1)^T) + b1) -> A (. (W2*M2)^T) + b2
    -> relu -> (. (W3*M3)^T) + b3."""
    def eff(w, m):
        return w * (m.masked_fill(m.abs() < 1e-3, 0) if pruned else m)
    h = torch.relu(a_norm @ (x @ eff(sd['conv1.lin.weight'], sd['conv1.mask']).t()) + sd['conv1.bias'])
    h = a_norm @ (h @ eff(sd['conv2.lin.weight'], sd['conv2.mask']).t()) + sd['conv2.bias']
    if is_proxy:
        return h
    return torch.relu(h) @ eff(sd['clsif.weight'], sd['clsif.mask']).t() + sd['clsif.bias']


def tiny_federation(num_classes=3, feat_dim=4, hid_dim=8, **kwargs):
    gen = torch.Generator().manual_seed(11)
    subgraphs = [random_subgraph(gen, 6, feat_dim, num_classes, 8), random_subgraph(gen, 9, feat_dim, num_classes, 12)]
    shapes = {k: v.shape for k, v in ref.MaskedGCN(feat_dim, hid_dim, num_classes).state_dict().items()}
    global_state = {k: torch.randn(s, generator=gen) * 0.5 for k, s in shapes.items()}
    # Clients' own initial masks differ from the server's (and from each other).
    client_states = [{k: (torch.rand(s, generator=gen) + 0.5 if 'mask' in k else torch.randn(s, generator=gen))
                      for k, s in shapes.items()} for _ in range(2)]
    proxy = ref.from_networkx(pyg.random_partition_graph([5, 5], 0.5, 0.0, seed=3))
    proxy.x = torch.randn(10, feat_dim, generator=gen)
    fl_kwargs = dict(hid_dim=hid_dim, dropout=0.0, num_epochs=2, norm_scale=3.0)
    fl_kwargs.update(kwargs)
    return subgraphs, global_state, client_states, proxy, fl_kwargs


class FedPubReferenceTest(unittest.TestCase):

    def assertClose(self, actual, expected, atol=1e-6):
        expected = torch.as_tensor(expected, dtype=actual.dtype)
        self.assertEqual(tuple(actual.shape), tuple(expected.shape))
        self.assertTrue(torch.allclose(actual, expected, atol=atol), f'{actual} != {expected}')

    def test_state_dict_keys_shapes_and_init_draw_order(self):
        torch.manual_seed(0)
        sd = ref.draw_masked_gcn_state(4, 8, 3)
        self.assertEqual(list(sd), KEYS)
        self.assertEqual({k: tuple(v.shape) for k, v in sd.items()}, {
            'conv1.mask': (8, 4), 'conv1.bias': (8,), 'conv1.lin.weight': (8, 4),
            'conv2.mask': (8, 8), 'conv2.bias': (8,), 'conv2.lin.weight': (8, 8),
            'clsif.weight': (3, 8), 'clsif.mask': (3, 8), 'clsif.bias': (1, 3)})
        # Upstream's order: glorot lin.weight (thrown away), xavier mask, glorot lin.weight again
        # (reset_parameters); same for conv2; clsif weight, mask, bias all xavier_uniform_.
        torch.manual_seed(0)

        def u(shape, bound):
            return torch.empty(shape).uniform_(-bound, bound)
        glorot1, xav1 = math.sqrt(6 / 12), math.sqrt(3) * math.sqrt(2 / 12)
        glorot2, xav2 = math.sqrt(6 / 16), math.sqrt(3) * math.sqrt(2 / 16)
        u((8, 4), glorot1)
        m1, w1 = u((8, 4), xav1), u((8, 4), glorot1)
        u((8, 8), glorot2)
        m2, w2 = u((8, 8), xav2), u((8, 8), glorot2)
        w3, m3 = u((3, 8), math.sqrt(3) * math.sqrt(2 / 11)), u((3, 8), math.sqrt(3) * math.sqrt(2 / 11))
        b3 = u((1, 3), math.sqrt(3) * math.sqrt(2 / 4))
        for key, value in [('conv1.mask', m1), ('conv1.lin.weight', w1), ('conv2.mask', m2),
                           ('conv2.lin.weight', w2), ('clsif.weight', w3), ('clsif.mask', m3), ('clsif.bias', b3)]:
            self.assertClose(sd[key], value)
        self.assertTrue(torch.equal(sd['conv1.bias'], torch.zeros(8)))
        # The scripts' --laye-mask-one --clsf-mask-one: masks are ones and are not drawn.
        torch.manual_seed(0)
        sd1 = ref.draw_masked_gcn_state(4, 8, 3, laye_mask_one=True, clsf_mask_one=True)
        torch.manual_seed(0)
        u((8, 4), glorot1)
        self.assertClose(sd1['conv1.lin.weight'], u((8, 4), glorot1))
        for key in ('conv1.mask', 'conv2.mask', 'clsif.mask'):
            self.assertTrue(torch.equal(sd1[key], torch.ones_like(sd1[key])))

    def test_masked_gcn_forward_by_hand(self):
        m, sd = hand_model()
        data = pyg.Data(x=torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), edge_index=PATH)
        m.train()  # raw masks (dropout 0)
        self.assertClose(m(data), dense_forward(sd, PATH_NORM, data.x, pruned=False), atol=1e-5)
        m.eval()  # |mask| < 1e-3 zeroed
        self.assertClose(m(data), dense_forward(sd, PATH_NORM, data.x, pruned=True), atol=1e-5)
        # One value by hand: eval conv1 weight [[1, 1], [0, 2]], so x W^T = [[1, 0], [1, 2], [2, 2]];
        # node 0 = 1/2 [1, 0] + S6 [1, 2] + b1 = [0.5 + S6 + 0.1, 2 S6 - 0.2].
        h1 = F.relu(m.conv1(data.x, PATH))
        self.assertClose(h1[0], [0.6 + S6, 2 * S6 - 0.2])
        # The pruned 5e-4 and -9e-4 entries matter: train and eval differ (conv2 weight 100).
        m.train()
        self.assertFalse(torch.allclose(m(data, is_proxy=True), m.eval()(data, is_proxy=True)))

    def test_dropout_keep_masks_injected_and_drawn_like_f_dropout(self):
        m, sd = hand_model()
        m.dropout = 0.5
        data = pyg.Data(x=torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), edge_index=PATH)
        keep1 = torch.tensor([[True, False], [True, True], [False, True]])
        keep2 = torch.tensor([[True, True], [False, True], [True, False]])
        m.train()
        out = m(data, dropout_keep=(keep1, keep2))
        h = F.relu(m.conv1(data.x, PATH)) * keep1 * 2
        h = F.relu(m.conv2(h, PATH)) * keep2 * 2
        self.assertClose(out, m.clsif(h))
        # draw_dropout_masks draws exactly what F.dropout would, in forward order.
        torch.manual_seed(5)
        expected = m(data)
        torch.manual_seed(5)
        masks = ref.draw_dropout_masks([data], [0], 1, 2, 0.5)[0][0]
        self.assertTrue(torch.equal(m(data, dropout_keep=masks), expected))
        self.assertTrue(torch.equal(m.eval()(data, dropout_keep=masks), m(data)))  # eval: no dropout

    def test_functional_embedding_by_hand(self):
        m, sd = hand_model()
        client = ref.Client(0, None, m, 2, 0.01, 0.0, 1, 1e-3, 1e-3)
        # Proxy: edge 0 - 1 and an isolated node 2. Normalised: [[1/2, 1/2, 0], [1/2, 1/2, 0], [0, 0, 1]].
        proxy = pyg.Data(x=torch.tensor([[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]]),
                         edge_index=torch.tensor([[0, 1], [1, 0]]))
        a = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
        m.train()
        emb = client.get_functional_embedding(proxy)
        self.assertFalse(m.training)  # eval mode: pruned masks, no dropout
        # conv2's output WITHOUT relu, averaged over the proxy nodes.
        self.assertClose(emb, dense_forward(sd, a, proxy.x, pruned=True, is_proxy=True).mean(0), atol=1e-5)
        self.assertEqual(tuple(emb.shape), (2,))
        # The pruned -9e-4 entry of conv2.mask times weight 100 must not contribute.
        self.assertFalse(torch.allclose(emb, dense_forward(sd, a, proxy.x, pruned=False, is_proxy=True).mean(0)))

    def test_similarity_weights_exponent_by_hand(self):
        e = [torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0]), torch.tensor([0.0, 1.0])]
        r = 1 / math.sqrt(2)
        sim, w = ref.similarity_weights(e, 'exp', 3.0)
        self.assertEqual(sim.dtype, torch.float64)
        self.assertClose(sim, [[1, r, 0], [r, 1, r], [0, r, 1]])
        rows = [[math.exp(3), math.exp(3 * r), 1], [math.exp(3 * r), math.exp(3), math.exp(3 * r)],
                [1, math.exp(3 * r), math.exp(3)]]
        self.assertClose(w, [[v / sum(row) for v in row] for row in rows], atol=1e-7)
        self.assertClose(w.sum(1), [1, 1, 1], atol=1e-12)
        # agg_norm 'cosine': the similarities, row-normalised.
        _, w = ref.similarity_weights(e, 'cosine', 3.0)
        self.assertClose(w, [[1 / (1 + r), r / (1 + r), 0], [r / (1 + 2 * r), 1 / (1 + 2 * r), r / (1 + 2 * r)],
                             [0, r / (1 + r), 1 / (1 + r)]], atol=1e-7)
        # Opposite vectors: distance 2, similarity -1 (the clip does not bind).
        self.assertAlmostEqual(ref.scipy_cosine_similarity(torch.tensor([2.0, 0.0]), torch.tensor([-1.0, 0.0])), -1.0)

    def test_aggregate_rounds_weights_to_float32_and_sums_in_order(self):
        t0 = {'a': torch.tensor([1.0, 2.0]), 'm.mask': torch.tensor([[4.0]])}
        t1 = {'a': torch.tensor([3.0, -1.0]), 'm.mask': torch.tensor([[0.0]])}
        out = ref.aggregate([t0, t1], [0.25, 0.75])
        self.assertTrue(torch.equal(out['a'], torch.tensor([2.5, -0.25])))
        self.assertTrue(torch.equal(out['m.mask'], torch.tensor([[1.0]])))  # masks are aggregated too
        out = ref.aggregate([t0, t1], np.array([0.1, 0.9], dtype=np.float64))
        w0, w1 = torch.tensor(0.1, dtype=torch.float32), torch.tensor(0.9, dtype=torch.float32)
        self.assertTrue(torch.equal(out['a'], t0['a'] * w0 + t1['a'] * w1))
        self.assertTrue(torch.equal(ref.aggregate([t0, t1])['a'], torch.tensor([2.0, 0.5])))  # None: 1/K each

    def test_sparsity_terms_values_order_and_no_gradient(self):
        m, sd = hand_model()
        prev = {k: v - 0.5 for k, v in sd.items()}  # every non-mask entry moved by 0.5
        terms = ref.sparsity_terms(m, prev, 0, l1=1e-3, loc_l2=1e-2)
        # Round 0: only the masks' L1, in state_dict order.
        self.assertEqual([(n, k) for n, k, _ in terms],
                         [('conv1.mask', 'l1'), ('conv2.mask', 'l1'), ('clsif.mask', 'l1')])
        self.assertAlmostEqual(terms[0][2].item(), 1e-3 * (1 + 0.5 + 5e-4 + 2), places=9)
        self.assertAlmostEqual(terms[1][2].item(), 1e-3 * (1 + 9e-4 + 1e-3 + 1), places=9)
        self.assertAlmostEqual(terms[2][2].item(), 1e-3 * (1 + 1 + 0.5 + 1e-4), places=9)
        terms = ref.sparsity_terms(m, prev, 1, l1=1e-3, loc_l2=1e-2)
        self.assertEqual([n for n, _, _ in terms], KEYS)
        # ||theta - prev||_2 (not squared) = 0.5 sqrt(numel), times loc_l2.
        for name, kind, t in terms:
            if kind == 'loc_l2':
                self.assertAlmostEqual(t.item(), 1e-2 * 0.5 * math.sqrt(sd[name].numel()), places=7)
        # Upstream reads the parameters through state_dict(): the terms carry no gradient.
        self.assertTrue(all(not t.requires_grad for _, _, t in terms))
        data = pyg.Data(x=torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), edge_index=PATH)
        y = torch.tensor([0, 1, 1])
        m.train()
        ce = F.cross_entropy(m(data), y)
        grads_ce = torch.autograd.grad(ce, list(m.parameters()))
        loss = F.cross_entropy(m(data), y)
        for _, _, t in ref.sparsity_terms(m, prev, 1, 1e-3, 1e-2):
            loss += t
        self.assertGreater(loss.item(), ce.item() + 0.01)
        for g0, g1 in zip(grads_ce, torch.autograd.grad(loss, list(m.parameters()))):
            self.assertTrue(torch.equal(g0, g1))

    def test_get_sparsity_counts_one_extra_entry(self):
        m, _ = hand_model()
        client = ref.Client(0, None, m, 2, 0.01, 0.0, 1, 1e-3, 1e-3)
        client.masks = [v for k, v in m.state_dict().items() if 'mask' in k]
        # 12 mask entries; 5e-4, -9e-4 and 1e-4 are below l1 (1e-3 is not): (1 + 12 - 9) / (1 + 12).
        self.assertAlmostEqual(client.get_sparsity(), 4 / 13, places=6)

    def test_proxy_and_initial_draws(self):
        torch.manual_seed(1)
        p = ref.draw_proxy(3, n_proxy=2, num_nodes=5, p_in=0.5, seed=3)
        torch.manual_seed(1)
        self.assertTrue(torch.equal(p.x, torch.randn(10, 3)))  # torch.normal(0, 1) == randn
        # Edges: Python's random.Random(3), independent of torch; block diagonal, both directions,
        # no loops, rows ascending (from_networkx of the SBM gives a coalesced list here).
        g = pyg.random_partition_graph([5, 5], 0.5, 0.0, seed=3)
        self.assertTrue(torch.equal(p.edge_index, torch.tensor(g.to_directed_edges()).t()))
        self.assertTrue(torch.equal(p.edge_index, pyg.to_undirected(p.edge_index, 10)))
        self.assertTrue(bool((p.edge_index[0] // 5 == p.edge_index[1] // 5).all()))
        self.assertTrue(torch.equal(p.block, torch.tensor([0] * 5 + [1] * 5)))
        # Block 0's 10 pairs use the first 10 draws, then one extra draw; block 1 the next 10.
        r = random.Random(3)
        draws = [r.random() for _ in range(22)]
        pairs = [(a, b) for a in range(5) for b in range(a + 1, 5)]
        expected = [e for k, e in enumerate(pairs) if draws[k] < 0.5]
        expected += [(a + 5, b + 5) for k, (a, b) in enumerate(pairs) if draws[11 + k] < 0.5]
        got = [(a, b) for a, b in p.edge_index.t().tolist() if a < b]
        self.assertEqual(got, expected)
        # draw_initial_states: server model first, then the proxy features; clients copy the server.
        torch.manual_seed(2)
        gs, cs, proxy = ref.draw_initial_states(2, 3, 2, hid_dim=4, n_proxy=2, proxy_num_nodes=5)
        torch.manual_seed(2)
        gs2 = ref.draw_masked_gcn_state(3, 4, 2)
        self.assertTrue(torch.equal(proxy.x, torch.normal(mean=0, std=1, size=(10, 3))))
        for k in KEYS:
            self.assertTrue(torch.equal(gs[k], gs2[k]))
            self.assertTrue(torch.equal(cs[1][k], gs[k]))
        self.assertEqual(ref.draw_selected_clients(10, 1.0, 42, 3),
                         (np.random.seed(45), np.random.choice(10, 10, replace=False).tolist())[1])

    def test_round_is_deterministic_personalises_and_changes_models(self):
        subgraphs, global_state, client_states, proxy, kw = tiny_federation()

        def run(seed):
            torch.manual_seed(seed)  # results must not depend on the global RNG
            fl = ref.FedPubReference(subgraphs, 3, global_state, client_states, proxy, **kw)
            return fl, [fl.train_round(), fl.train_round()]

        fl, (r0, r1) = run(1)
        _, b = run(2)

        def same(x, y, path=''):
            if isinstance(x, dict):
                self.assertEqual(list(x), list(y), path)
                for k in x:
                    same(x[k], y[k], f'{path}/{k}')
            elif isinstance(x, (list, tuple)):
                self.assertEqual(len(x), len(y), path)
                for i, (u, v) in enumerate(zip(x, y)):
                    same(u, v, f'{path}[{i}]')
            elif isinstance(x, torch.Tensor):
                self.assertTrue(torch.equal(x, y), path)
            else:
                self.assertEqual(x, y, path)
        same([r0, r1], b)

        self.assertEqual((r0['round'], r1['round']), (0, 1))
        self.assertEqual(r0['order'], [0, 1])
        for c in (0, 1):
            up = r0['uploads'][c]
            self.assertEqual(list(up['model']), KEYS)
            self.assertEqual(up['train_size'], 1)
            self.assertEqual(tuple(up['functional_embedding'].shape), (8,))
            # Round 0: everyone receives the server's initial model ...
            for k in KEYS:
                self.assertTrue(torch.equal(r0['received'][c][k], global_state[k]))
                self.assertFalse(torch.equal(up['model'][k], r0['received'][c][k]), k)  # training moved it
                self.assertTrue(torch.equal(r1['received'][c][k], r0['personalized'][c][k]))
            # ... but keeps its own masks (round 0 sees no loc_l2 term).
            self.assertEqual(r0['losses'][c]['loc_l2_term'], [0, 0])
            self.assertEqual(len(r0['losses'][c]['val_acc']), 3)  # before training + 2 epochs
            # Round 1, epoch 1: the weights still equal the received ones, so loc_l2 is 0; then > 0.
            self.assertEqual(r1['losses'][c]['loc_l2_term'][0], 0.0)
            self.assertGreater(r1['losses'][c]['loc_l2_term'][1], 0.0)
            for ep in range(2):
                lg = r1['losses'][c]
                parts = lg['train_ce'][ep] + lg['l1_term'][ep] + lg['loc_l2_term'][ep]
                self.assertAlmostEqual(lg['train_loss'][ep], parts, places=5)
        w = r0['weights']
        self.assertClose(w.sum(1), [1.0, 1.0], atol=1e-12)
        self.assertClose(r0['similarity'], r0['similarity'].t(), atol=1e-12)
        self.assertClose(r0['similarity'].diagonal(), [1.0, 1.0], atol=1e-6)
        # Personalised model i = sum_j W_ij theta_j over every key, masks included; global = mean.
        ups = [r0['uploads'][c]['model'] for c in (0, 1)]
        for i in (0, 1):
            for k in KEYS:
                expected = ups[0][k] * float(w[i, 0]) + ups[1][k] * float(w[i, 1])
                self.assertClose(r0['personalized'][i][k], expected)
        for k in KEYS:
            self.assertTrue(torch.equal(r0['global'][k], ups[0][k] * 0.5 + ups[1][k] * 0.5))
            self.assertTrue(torch.equal(r1['global_message'][k], r0['global'][k]))
            self.assertTrue(torch.equal(r1['local'][0][k], r1['uploads'][0]['model'][k]))
        self.assertFalse(torch.equal(r0['personalized'][0]['conv1.lin.weight'],
                                     r0['personalized'][1]['conv1.lin.weight']))
        # A message replaces weights and biases but never the client's masks.
        client = fl.clients[0]
        own = {k: v.clone() for k, v in client.model.state_dict().items()}
        client.update(r1['personalized'][0])
        for k in KEYS:
            expected = own[k] if 'mask' in k else r1['personalized'][0][k]
            self.assertTrue(torch.equal(client.model.state_dict()[k], expected), k)
        # The client's Adam persists across rounds (2 epochs per round -> step 4).
        self.assertEqual(int(client.optimizer.state[client.model.conv1.mask]['step']), 4)


if __name__ == '__main__':
    unittest.main()
