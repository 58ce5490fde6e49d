"""Checks the OpenFGL SCAFFOLD port against values computed by hand."""
import copy
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedavg.reference.fedavg_openfgl import FedAvgOpenFgl  # noqa: E402
from methods.scaffold.reference.scaffold_openfgl import ScaffoldOpenFgl  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import nested_equal, tiny_setup  # noqa: E402


def close(a, b, atol=1e-5):
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=atol, rtol=1e-5) for k in a)


class ScaffoldOpenFglTest(unittest.TestCase):

    def setUp(self):
        _, self.subgraphs, self.state = tiny_setup()
        self.fed = ScaffoldOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0)

    def test_step_preprocess_adds_global_minus_local_control(self):
        client = self.fed.clients[0]
        params = list(client.task.model.parameters())
        grads = [torch.full_like(p, 1.0) for p in params]
        for p, g in zip(params, grads):
            p.grad = g.clone()
        client.local_control = [torch.full_like(p, 0.25) for p in params]
        self.fed.message_pool["server"] = {"global_control": [torch.full_like(p, -2.0) for p in params]}
        client.step_preprocess()
        for p in params:
            self.assertTrue(torch.equal(p.grad, torch.full_like(p, 1.0 - 2.0 - 0.25)))

    def test_control_variate_updates(self):
        lr_e = 1e-2 * 3
        out0 = self.fed.train_round()
        # Round 0 (c = c_i = 0) is plain FedAvg.
        avg = FedAvgOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0).train_round()
        self.assertTrue(nested_equal(out0['local'], avg['local']))
        self.assertTrue(nested_equal(out0['global'], avg['global']))
        for c in (0, 1):
            # c_i = 0 - 0 + (x - y_i) / (E * lr)
            expected = {k: (self.state[k] - out0['local'][c][k]) / lr_e for k in self.state}
            self.assertTrue(close(out0['local_control'][c], expected))
            self.assertTrue(nested_equal(out0['uploads'][c]['local_control'], out0['local_control'][c]))
        # c = unweighted mean of the c_i (x uses 6/15, 9/15).
        self.assertTrue(close(out0['global_control'],
                              {k: 0.5 * out0['local_control'][0][k] + 0.5 * out0['local_control'][1][k]
                               for k in self.state}, atol=1e-6))

        client1_before = copy.deepcopy(self.fed.clients[1].task)  # model + Adam state after round 0
        out1 = self.fed.train_round()
        self.assertTrue(nested_equal(out1['server_message']['global_control'], out0['global_control']))
        for c in (0, 1):
            expected = {k: out0['local_control'][c][k] - out0['global_control'][k]
                        + (out0['global'][k] - out1['local'][c][k]) / lr_e for k in self.state}
            self.assertTrue(close(out1['local_control'][c], expected, atol=1e-4))

        # Client 1's round 1 by hand: Adam (kept from round 0) on CE grad + c - c_1.
        task = client1_before
        with torch.no_grad():
            for n, p in task.model.named_parameters():
                p.copy_(out0['global'][n])
        task.model.train()
        for _ in range(3):
            task.optim.zero_grad()
            _, logits = task.model(self.subgraphs[1])
            m = self.subgraphs[1].train_idx
            torch.nn.functional.cross_entropy(logits[m], self.subgraphs[1].y[m]).backward()
            for n, p in task.model.named_parameters():
                p.grad += out0['global_control'][n] - out0['local_control'][1][n]
            task.optim.step()
        self.assertTrue(close(openfgl.clone_state(task.model), out1['local'][1], atol=1e-6))
        # ... and the correction matters.
        avg_fed = FedAvgOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0)
        avg_fed.train_round()
        self.assertFalse(close(avg_fed.train_round()['local'][1], out1['local'][1], atol=1e-6))

    def test_two_instances_are_bit_identical(self):
        other = ScaffoldOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0)
        a = [self.fed.train_round() for _ in range(3)]
        b = [other.train_round() for _ in range(3)]
        self.assertTrue(nested_equal(a, b))


if __name__ == '__main__':
    unittest.main()
