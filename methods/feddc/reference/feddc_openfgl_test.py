"""Checks the OpenFGL FedDC port against values computed by hand."""
import copy
import os
import sys
import unittest

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedavg.reference.fedavg_openfgl import FedAvgOpenFgl  # noqa: E402
from methods.feddc.reference.feddc_openfgl import FedDCOpenFgl  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import nested_equal, tiny_setup  # noqa: E402


def close(a, b, atol=1e-6):
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=atol) for k in a)


class Toy(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.a = nn.Parameter(torch.tensor([a]))
        self.b = nn.Parameter(torch.tensor([b]))


class FedDCOpenFglTest(unittest.TestCase):

    def setUp(self):
        _, self.subgraphs, self.state = tiny_setup()
        self.fed = FedDCOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0)

    def test_loss_on_a_two_parameter_toy(self):
        self.assertEqual(self.fed.config, {'feddc_alpha': 0.1})
        client = self.fed.clients[0]
        client.task.model = Toy(1.0, -2.0)
        client.local_drift = [torch.tensor([0.5]), torch.tensor([0.0])]
        client.last_update = [torch.tensor([2.0]), torch.tensor([-1.0])]
        self.fed.message_pool["server"] = {"weight": [torch.tensor([0.25]), torch.tensor([1.0])],
                                           "avg_update": [torch.tensor([3.0]), torch.tensor([4.0])]}
        logits = torch.tensor([[2.0, 0.0]])
        label, mask = torch.tensor([0]), torch.tensor([True])
        ce = F.cross_entropy(logits, label).item()
        self.fed.message_pool["round"] = 0
        self.assertAlmostEqual(client.get_custom_loss_fn()(None, logits, label, mask).item(), ce, places=6)
        self.fed.message_pool["round"] = 1
        loss = client.get_custom_loss_fn()(None, logits, label, mask)
        # drift: (0.5 + 1 - 0.25)^2 + (0 - 2 - 1)^2 = 1.5625 + 9 = 10.5625, times alpha/2 = 0.05
        # grad term: (1*2 - 3) + (-2*-1 - 4) = -3, times 1/(lr*E) = 1/0.03
        self.assertAlmostEqual(loss.item(), ce + 0.05 * 10.5625 - 3 / 0.03, places=3)
        loss.backward()
        # d/dw = alpha * (h + w - w_glob) + last_update / (lr*E); avg_update has no gradient.
        self.assertAlmostEqual(client.task.model.a.grad.item(), 0.1 * 1.25 + 2 / 0.03, places=3)
        self.assertAlmostEqual(client.task.model.b.grad.item(), 0.1 * -3 - 1 / 0.03, places=3)

    def test_drift_update_lags_one_round_and_server_adds_drift(self):
        out0 = self.fed.train_round()
        avg = FedAvgOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0).train_round()
        self.assertTrue(nested_equal(out0['local'], avg['local']))   # round 0: CE only
        self.assertTrue(nested_equal(out0['global'], avg['global']))  # drift 0 in round 0
        delta0 = [{k: out0['local'][c][k] - self.state[k] for k in self.state} for c in (0, 1)]
        for c in (0, 1):
            self.assertTrue(nested_equal(out0['last_update'][c], delta0[c]))
            self.assertTrue(all(torch.count_nonzero(v) == 0 for v in out0['local_drift'][c].values()))
        self.assertTrue(close(out0['avg_update'], {k: (delta0[0][k] + delta0[1][k]) / 2 for k in self.state}))

        before = copy.deepcopy(self.fed.clients[1].task)
        out1 = self.fed.train_round()
        self.assertTrue(nested_equal(out1['server_message']['avg_update'], out0['avg_update']))
        for c in (0, 1):
            # h_i grows by the PREVIOUS update (round 0's), not y_i^1 - x^1.
            self.assertTrue(nested_equal(out1['local_drift'][c], delta0[c]))
            self.assertTrue(nested_equal(out1['last_update'][c],
                                         {k: out1['local'][c][k] - out0['global'][k] for k in self.state}))
            self.assertTrue(nested_equal(out1['uploads'][c]['local_drift'], out1['local_drift'][c]))
        for k in self.state:
            expected = 0.4 * (out1['local'][0][k] + delta0[0][k]) + 0.6 * (out1['local'][1][k] + delta0[1][k])
            self.assertTrue(torch.allclose(out1['global'][k], expected, atol=1e-6), k)

        # Client 1's round 1 by hand (Adam state kept from round 0).
        task, data = before, self.subgraphs[1]
        with torch.no_grad():
            for n, p in task.model.named_parameters():
                p.copy_(out0['global'][n])
        task.model.train()
        for _ in range(3):
            task.optim.zero_grad()
            _, logits = task.model(data)
            loss = F.cross_entropy(logits[data.train_idx], data.y[data.train_idx])
            for n, p in task.model.named_parameters():
                loss = loss + 0.05 * ((0 + p - out0['global'][n]) ** 2).sum() \
                    + ((p * delta0[1][n]).sum() - out0['avg_update'][n].sum()) / 0.03
            loss.backward()
            task.optim.step()
        self.assertTrue(close(openfgl.clone_state(task.model), out1['local'][1], atol=1e-5))

    def test_two_instances_are_bit_identical(self):
        other = FedDCOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0)
        a = [self.fed.train_round() for _ in range(3)]
        b = [other.train_round() for _ in range(3)]
        self.assertTrue(nested_equal(a, b))


if __name__ == '__main__':
    unittest.main()
