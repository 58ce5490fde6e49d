"""Checks the OpenFGL FedAvg port against values computed by hand."""
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedavg.reference.fedavg_openfgl import FedAvgOpenFgl  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import nested_equal, tiny_setup  # noqa: E402


def run(rounds=2, **kw):
    _, subgraphs, state = tiny_setup()
    fed = FedAvgOpenFgl(subgraphs, 3, state, hid_dim=5, dropout=0.0, **kw)
    return subgraphs, state, fed, [fed.train_round() for _ in range(rounds)]


class FedAvgOpenFglTest(unittest.TestCase):

    def test_aggregate_is_node_count_weighted_mean_of_uploads(self):
        subgraphs, _, _, outs = run()
        for out in outs:
            up = out['uploads']
            self.assertEqual((up[0]['num_samples'], up[1]['num_samples']), (6, 9))
            for k, v in out['global'].items():
                expected = 6 / 15 * up[0]['weight'][k] + 9 / 15 * up[1]['weight'][k]
                self.assertTrue(torch.allclose(v, expected, atol=1e-7), k)
                # ... and not by train-node count (4 and 5 here).
                n_tr = [int(s.train_idx.sum()) for s in subgraphs]
                self.assertNotEqual(n_tr[0] * 9, n_tr[1] * 6)
                by_train = (n_tr[0] * up[0]['weight'][k] + n_tr[1] * up[1]['weight'][k]) / sum(n_tr)
                self.assertFalse(torch.allclose(v, by_train, atol=1e-6), k)
            for c in (0, 1):
                self.assertTrue(nested_equal(up[c]['weight'], out['local'][c]))

    def test_clients_start_from_the_global_model(self):
        subgraphs, state, _, outs = run()
        self.assertTrue(nested_equal(outs[0]['server_message']['weight'], state))
        self.assertTrue(nested_equal(outs[1]['server_message']['weight'], outs[0]['global']))
        # Round 0, client 1 == three Adam epochs of NodeClsTask from the global state.
        task = openfgl.NodeClsTask(openfgl.make_args(hid_dim=5, dropout=0.0), 1, subgraphs[1], 4, 3)
        task.model.load_state_dict(state)
        task.train()
        self.assertTrue(nested_equal(openfgl.clone_state(task.model), outs[0]['local'][1]))
        # Round 1 keeps the Adam moments of round 0: a fresh optimizer gives other weights.
        task = openfgl.NodeClsTask(openfgl.make_args(hid_dim=5, dropout=0.0), 1, subgraphs[1], 4, 3)
        task.model.load_state_dict(outs[0]['global'])
        task.train()
        self.assertFalse(nested_equal(openfgl.clone_state(task.model), outs[1]['local'][1]))

    def test_two_instances_are_bit_identical(self):
        _, _, _, a = run(rounds=3)
        _, _, _, b = run(rounds=3)
        self.assertTrue(nested_equal(a, b))

    def test_dropout_draws_from_the_global_torch_rng(self):
        def go(seed):
            _, subgraphs, state = tiny_setup()
            fed = FedAvgOpenFgl(subgraphs, 3, state, hid_dim=5, dropout=0.5)
            torch.manual_seed(seed)
            return [fed.train_round() for _ in range(2)]
        a, b = go(3), go(3)
        self.assertTrue(nested_equal(a, b))
        self.assertFalse(nested_equal(a, go(4)))
        self.assertFalse(nested_equal(a, run()[3]))

    def test_only_sampled_clients_train_and_count(self):
        _, _, fed, outs = run(rounds=1)
        out = fed.train_round(sampled_clients=[1])
        self.assertEqual(list(out['uploads']), [1])
        self.assertTrue(nested_equal(out['global'], out['local'][1]))  # weight 9/9
        self.assertTrue(nested_equal(out['local'][0], outs[0]['local'][0]))


if __name__ == '__main__':
    unittest.main()
