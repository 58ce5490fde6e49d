"""Checks the OpenFGL FedTGP port against values computed by hand."""
import copy
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedproto.reference.fedproto_openfgl import FedProtoOpenFgl  # noqa: E402
from methods.fedtgp.reference.fedtgp_openfgl import FedTGPOpenFgl, Trainable_prototypes  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import nested_equal, random_like_state, subgraph, tiny_setup  # noqa: E402

IDENTITY_NET = {'embedings.weight': torch.eye(2), 'middle.0.0.weight': torch.eye(2), 'middle.0.0.bias': torch.zeros(2),
                'fc.weight': torch.eye(2), 'fc.bias': torch.zeros(2)}
# (client, class) prototypes; y = [0, 1, 0, 1]
LOCAL = [{0: [1.0, 1.0], 1: [0.0, 2.0]}, {0: [3.0, 0.0], 1: [0.0, 0.0]}]


def close(a, b, atol=1e-6):
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=atol) for k in a)


def toy_server(scale=1.0, num_glb_epochs=10):
    gen = torch.Generator().manual_seed(1)
    graphs = [subgraph(gen, 4, 2, 2, 3), subgraph(gen, 4, 2, 2, 3)]
    fed = FedTGPOpenFgl(graphs, 2, None, prototype_state=IDENTITY_NET, hid_dim=2, dropout=0.0,
                        num_glb_epochs=num_glb_epochs)
    fed.message_pool["sampled_clients"] = [0, 1]
    for c in (0, 1):
        fed.message_pool[f"client_{c}"] = {"num_samples": 4, "local_prototype":
                                           {k: scale * torch.tensor(v) for k, v in LOCAL[c].items()}}
    return fed


class FedTGPOpenFglTest(unittest.TestCase):

    def test_state_dict_keys(self):
        self.assertEqual(list(Trainable_prototypes(3, 8, 4).state_dict().keys()),
                         ['embedings.weight', 'middle.0.0.weight', 'middle.0.0.bias', 'fc.weight', 'fc.bias'])

    def test_server_margin_and_first_loss_by_hand(self):
        fed = toy_server()
        fed.server.execute()
        # avg_proto is divided by 2 (clients) once per class: sums [4, 1], [0, 2] over 2^2 = 4.
        self.assertTrue(torch.allclose(fed.server.last_avg_proto, torch.tensor([[1.0, 0.25], [0.0, 0.5]])))
        margin = math.sqrt(1 + 0.25 ** 2)
        self.assertAlmostEqual(fed.server.last_gap2, margin, places=6)
        # Epoch 0: global prototypes = relu(I) = e0, e1; CE(-(dist + margin * onehot), y).
        protos, ys = [[1, 1], [0, 2], [3, 0], [0, 0]], [0, 1, 0, 1]
        g = [[1, 0], [0, 1]]
        loss = 0
        for p, y in zip(protos, ys):
            d = [math.dist(p, gk) + (margin if k == y else 0) for k, gk in enumerate(g)]
            loss += math.log(sum(math.exp(-v) for v in d)) + d[y]
        self.assertAlmostEqual(fed.server.last_glb_losses[0], loss / 4, places=5)
        self.assertEqual(len(fed.server.last_glb_losses), 10)
        # All 10 Adam steps by hand (torch.cdist, own forward).
        w = {k: v.clone().requires_grad_() for k, v in IDENTITY_NET.items()}
        opt = torch.optim.Adam(list(w.values()), lr=1e-2, weight_decay=5e-4)
        P, Y = torch.tensor(protos, dtype=torch.float), torch.tensor(ys)
        for _ in range(10):
            opt.zero_grad()
            G = torch.relu(w['embedings.weight'] @ w['middle.0.0.weight'].t() + w['middle.0.0.bias']) \
                @ w['fc.weight'].t() + w['fc.bias']
            F.cross_entropy(-(torch.cdist(P, G) + margin * F.one_hot(Y, 2)), Y).backward()
            opt.step()
        G = torch.relu(w['embedings.weight'] @ w['middle.0.0.weight'].t() + w['middle.0.0.bias']) \
            @ w['fc.weight'].t() + w['fc.bias']
        for k in (0, 1):
            self.assertTrue(torch.allclose(fed.server.global_prototype[k], G[k], atol=1e-5))

    def test_margin_is_capped_at_100(self):
        fed = toy_server(scale=1000.0, num_glb_epochs=1)
        fed.server.execute()
        self.assertEqual(fed.server.last_gap2, 100)

    def test_rounds(self):
        gen, subgraphs, state = tiny_setup(second_client_classes=[0, 1])
        client_states = [state, random_like_state(gen, state)]
        net = random_like_state(gen, Trainable_prototypes(3, 5, 5).state_dict(), 0.3)

        def make():
            return FedTGPOpenFgl(subgraphs, 3, None, client_states, prototype_state=net, hid_dim=5, dropout=0.0)
        fed = make()
        self.assertEqual(fed.config, {'fedtgp_lambda': 1})
        self.assertEqual((fed.server.num_glb_epochs, fed.server.lr_glb), (10, 1e-2))
        out0 = fed.train_round()
        self.assertNotIn('global', out0)
        # Clients are FedProto's: same local models and prototypes in round 0.
        proto = FedProtoOpenFgl(subgraphs, 3, None, client_states, hid_dim=5, dropout=0.0).train_round()
        self.assertTrue(nested_equal(out0['local'], proto['local']))
        self.assertTrue(nested_equal(out0['local_prototype'], proto['local_prototype']))
        # Global prototypes = the trained net's per-class forward.
        m = Trainable_prototypes(3, 5, 5)
        m.load_state_dict(out0['prototype_net'])
        for k in range(3):
            self.assertTrue(torch.allclose(out0['global_prototype'][k], m(k).detach(), atol=1e-6))
        self.assertFalse(nested_equal(out0['prototype_net'], net))
        sums = sum(torch.stack([out0['local_prototype'][c][k] for k in range(3)]) for c in (0, 1))
        self.assertTrue(torch.allclose(out0['avg_proto'], sums / 2 ** 3))

        before = copy.deepcopy(fed.clients[1].task)
        out1 = fed.train_round()
        self.assertTrue(nested_equal(out1['server_message']['global_prototype'], out0['global_prototype']))
        task, data, P = before, subgraphs[1], out0['global_prototype']
        task.model.train()
        for _ in range(3):
            task.optim.zero_grad()
            z, logits = task.model(data)
            loss = F.cross_entropy(logits[data.train_idx], data.y[data.train_idx])
            for k in range(2):  # client 1 has no class-2 train node
                rows = data.train_idx & (data.y == k)
                loss = loss + ((z[rows] - P[k]) ** 2).mean()
            loss.backward()
            task.optim.step()
        self.assertTrue(close(openfgl.clone_state(task.model), out1['local'][1]))

        other = make()
        self.assertTrue(nested_equal([out0, out1, fed.train_round()], [other.train_round() for _ in range(3)]))


if __name__ == '__main__':
    unittest.main()
