"""Checks the OpenFGL FedProx port against values computed by hand."""
import os
import sys
import unittest

import torch
import torch.nn as nn
from torch.optim import Adam

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedavg.reference.fedavg_openfgl import FedAvgOpenFgl  # noqa: E402
from methods.fedprox.reference.fedprox_openfgl import FedProxOpenFgl  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import nested_equal, tiny_setup  # noqa: E402


class Toy(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.a = nn.Parameter(torch.tensor([a]))
        self.b = nn.Parameter(torch.tensor([b]))


class FedProxOpenFglTest(unittest.TestCase):

    def test_defaults(self):
        _, subgraphs, state = tiny_setup()
        self.assertEqual(FedProxOpenFgl(subgraphs, 3, state, hid_dim=5).config, {'fedprox_mu': 1e-3})

    def test_proximal_term_on_a_two_parameter_toy(self):
        _, subgraphs, state = tiny_setup()
        fed = FedProxOpenFgl(subgraphs, 3, state, fedprox_mu=0.5, hid_dim=5, dropout=0.0)
        client = fed.clients[0]
        client.task.model = Toy(1.0, -2.0)
        fed.message_pool["server"] = {"weight": [torch.tensor([0.5]), torch.tensor([1.0])]}
        logits = torch.tensor([[2.0, 0.0], [0.0, 1.0]])
        label, mask = torch.tensor([0, 0]), torch.tensor([True, False])
        loss = client.get_custom_loss_fn()(None, logits, label, mask)
        ce = -torch.log_softmax(logits[0], 0)[0]
        # mu/2 * ((1 - 0.5)^2 + (-2 - 1)^2) = 0.25 * 9.25
        self.assertAlmostEqual(loss.item(), ce.item() + 0.25 * 9.25, places=5)
        loss.backward()
        # d/dw = mu * (w - w_global) = 0.5 * 0.5, 0.5 * -3
        self.assertAlmostEqual(client.task.model.a.grad.item(), 0.25, places=6)
        self.assertAlmostEqual(client.task.model.b.grad.item(), -1.5, places=6)

    def test_mu_zero_and_single_epoch_equal_fedavg(self):
        _, subgraphs, state = tiny_setup()
        for kw in (dict(fedprox_mu=0.0), dict(fedprox_mu=0.5, num_epochs=1)):
            epochs = kw.get('num_epochs', 3)
            prox = FedProxOpenFgl(subgraphs, 3, state, hid_dim=5, dropout=0.0, **kw)
            avg = FedAvgOpenFgl(subgraphs, 3, state, hid_dim=5, dropout=0.0, num_epochs=epochs)
            # Round 0 only: at the first epoch w == w_global, so the prox gradient is exactly 0.
            self.assertTrue(nested_equal(prox.train_round(), avg.train_round()), kw)

    def test_round_matches_hand_written_prox_training(self):
        _, subgraphs, state = tiny_setup()
        mu = 0.5
        fed = FedProxOpenFgl(subgraphs, 3, state, fedprox_mu=mu, hid_dim=5, dropout=0.0)
        out = fed.train_round()
        data = subgraphs[1]
        model = openfgl.GCN(4, 5, 3, dropout=0.0)
        model.load_state_dict(state)
        opt = Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
        for _ in range(3):
            opt.zero_grad()
            _, logits = model(data)
            loss = nn.functional.cross_entropy(logits[data.train_idx], data.y[data.train_idx])
            loss = loss + mu / 2 * sum(((p - state[n]) ** 2).sum() for n, p in model.named_parameters())
            loss.backward()
            opt.step()
        for k, v in openfgl.clone_state(model).items():
            self.assertTrue(torch.allclose(out['local'][1][k], v, atol=1e-6), k)
        avg = FedAvgOpenFgl(subgraphs, 3, state, hid_dim=5, dropout=0.0).train_round()
        self.assertFalse(torch.allclose(avg['local'][1]['layers.0.lin.weight'], out['local'][1]['layers.0.lin.weight'],
                                        atol=1e-6))
        for k, v in out['global'].items():
            self.assertTrue(torch.allclose(v, 0.4 * out['uploads'][0]['weight'][k] + 0.6 * out['uploads'][1]['weight'][k],
                                           atol=1e-7))

    def test_two_instances_are_bit_identical(self):
        def go():
            _, subgraphs, state = tiny_setup()
            fed = FedProxOpenFgl(subgraphs, 3, state, fedprox_mu=0.1, hid_dim=5, dropout=0.0)
            return [fed.train_round() for _ in range(3)]
        self.assertTrue(nested_equal(go(), go()))


if __name__ == '__main__':
    unittest.main()
