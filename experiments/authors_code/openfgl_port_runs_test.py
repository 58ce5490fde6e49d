"""Tests of openfgl_port_runs.py on tiny hand-made clients (methods/reference/openfgl_fixtures.py):

  /usr/bin/python3 experiments/authors_code/openfgl_port_runs_test.py

(not a bazel test: the ports are visible to //methods only.)"""
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..')))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openfgl_port_runs as runs  # noqa: E402
from methods.fedavg.reference.fedavg_openfgl import FedAvgOpenFgl  # noqa: E402
from methods.reference import openfgl, openfgl_fixtures  # noqa: E402


def federation(seed):
    _, subgraphs, _ = openfgl_fixtures.tiny_setup(num_classes=3)
    runs.seed_everything(seed)
    return FedAvgOpenFgl(subgraphs, num_classes=3, hid_dim=5, dropout=0.5)


class OpenFglPortRunsTest(unittest.TestCase):
    def test_scoring_with_dropout_on_leaves_the_training_unchanged(self):
        # One after the other: both draw their dropout masks from the global generator.
        plain = federation(7)
        for r in range(3):
            plain.train_round()
            runs.score(plain)
        scored = federation(7)
        for r in range(3):
            scored.train_round()
            runs.score(scored)
            with runs.gcn_dropout_on(7, r):
                runs.score(scored)
        self.assertTrue(openfgl_fixtures.states_equal(openfgl.clone_state(plain.server.task.model),
                                                      openfgl.clone_state(scored.server.task.model)))
        for a, b in zip(plain.clients, scored.clients):
            self.assertTrue(openfgl_fixtures.states_equal(openfgl.clone_state(a.task.model),
                                                          openfgl.clone_state(b.task.model)))

    def test_dropout_is_on_inside_the_context_only(self):
        port = federation(3)
        port.train_round()
        model, data = port.clients[1].task.model, port.clients[1].task.data
        model.eval()
        _, off = model(data)
        with runs.gcn_dropout_on(3, 0):
            _, on = model(data)
            _, again = model(data)
        _, after = model(data)
        self.assertFalse(torch.equal(on, off))
        self.assertFalse(torch.equal(on, again))  # fresh masks per forward
        self.assertTrue(torch.equal(after, off))
        with runs.gcn_dropout_on(3, 0):
            _, same_seed = model(data)
        self.assertTrue(torch.equal(same_seed, on))  # draws from (seed, round) only

    def test_score_keeps_the_ports_running_best(self):
        port = federation(5)
        port.train_round()
        before = dict(port.evaluation_result)
        val, test = runs.score(port)
        self.assertEqual(port.evaluation_result, before)
        self.assertTrue(0.0 <= val <= 100.0 and 0.0 <= test <= 100.0)

    def test_best_round_is_the_first_strict_maximum(self):
        self.assertEqual(runs.best_round([50.0, 70.0, 70.0, 60.0]), 1)
        self.assertEqual(runs.best_round([0.0, 0.0]), 0)
        self.assertEqual(runs.best_round([10.0, 9.0, 11.0]), 2)

    def test_seeds_of(self):
        self.assertEqual(runs.seeds_of('2024-2026,2030'), [2024, 2025, 2026, 2030])


if __name__ == '__main__':
    unittest.main()
