"""nfedgnn_batched_oracle.py against the per-user oracle it batches, round by round, on a small synthetic
graph (no data files, no trace binary): both built as independent_runs builds them for the rows
nfedgnn_l0 and nfedgnn_l10 with the same seed, they must draw identical dropout masks and agree on the
logits (training and eval) within 1e-5, with equal accuracies.

  /usr/bin/python3 experiments/authors_code/nfedgnn_batched_oracle_test.py
"""
import os
import sys
import unittest

import torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..')))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import independent_runs as ir  # noqa: E402

TOLERANCE = 1e-5
ROUNDS = 5
SEED = 2024


def synthetic_data(n=40, feat=24, classes=3, seed=0):
    """(x, edge_index, y, train, val, test, classes) as nfedgnn_data returns them: sparse non-negative
    row-normalised features (two users without any), random directed edges (duplicates and self-loops
    included; the oracle symmetrises them), an isolated node, a few labels per class for training."""
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, feat, generator=g) * (torch.rand(n, feat, generator=g) < 0.15)
    x[3] = 0.0
    x[17] = 0.0
    x = x / x.sum(1, keepdim=True).clamp(min=1e-12)
    edges = torch.randint(0, n - 1, (2, 3 * n), generator=g)  # node n-1 stays isolated
    y = torch.randint(0, classes, (n,), generator=g)
    perm = torch.randperm(n, generator=g)
    train, val, test = (torch.zeros(n, dtype=torch.bool) for _ in range(3))
    train[perm[:12]] = True
    val[perm[12:24]] = True
    test[perm[24:]] = True
    return x, edges, y, train, val, test, classes


class BatchedOracleTest(unittest.TestCase):
    max_diff = {}

    def check(self, method):
        data = synthetic_data()
        torch.manual_seed(SEED)
        oracle, g_oracle = ir.nfedgnn_oracle(method, data, SEED)
        batched, g_batched = ir.nfedgnn_oracle(method, data, SEED, batched=True)
        self.assertEqual(batched.lam, ir.NFEDGNN_METHODS[method])
        worst = 0.0
        for r in range(1, ROUNDS + 1):
            d_oracle, d_batched = oracle.draw_round(g_oracle), batched.draw_round(g_batched)
            self.assertTrue(torch.equal(d_oracle['hidden'], d_batched['hidden']), f'round {r}: dropout masks')
            out = oracle.train_round(d_oracle)
            loss = batched.train_round(d_batched)
            self.assertAlmostEqual(out['losses']['total'], loss, delta=TOLERANCE, msg=f'round {r}: training loss')
            e_oracle, e_batched = oracle.evaluate(), batched.evaluate()
            for key in ('logits', 'latent'):
                diff = float((e_oracle[key] - e_batched[key]).abs().max())
                self.assertLess(diff, TOLERANCE, f'round {r}: eval {key}')
                worst = max(worst, diff)
            for key in ('acc_train', 'acc_val', 'acc_test'):
                self.assertEqual(e_oracle[key], e_batched[key], f'round {r}: {key}')
            self.assertAlmostEqual(e_oracle['loss'], e_batched['loss'], delta=TOLERANCE, msg=f'round {r}: loss')
        # The users' maps on their non-zero features and their biases are the oracle's.
        for i, user in enumerate(oracle.users):
            rows = (batched.user_of == i).nonzero().squeeze(1)
            cols = batched.feature_of[rows]
            worst = max(worst, float((user.weight.detach()[cols] - batched.weight.detach()[rows]).abs().max())
                        if rows.numel() else 0.0)
            worst = max(worst, float((user.bias.detach() - batched.bias.detach()[i]).abs().max()))
        self.assertLess(worst, TOLERANCE)
        self.max_diff[method] = worst

    def test_lambda_0(self):
        self.check('nfedgnn_l0')

    def test_lambda_10(self):
        self.check('nfedgnn_l10')

    def test_cnfgnn_has_no_batched_runner(self):
        with self.assertRaises(ValueError):
            ir.nfedgnn_oracle('cnfgnn', synthetic_data(), SEED, batched=True)

    @classmethod
    def tearDownClass(cls):
        for method, diff in sorted(cls.max_diff.items()):
            print(f'{method}: max |oracle - batched| over {ROUNDS} rounds (eval logits, latents, maps) {diff:.3g}')


if __name__ == '__main__':
    torch.set_num_threads(1)
    unittest.main()
