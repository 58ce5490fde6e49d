"""Checks the OpenFGL MOON port against values computed by hand."""
import copy
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedavg.reference.fedavg_openfgl import FedAvgOpenFgl  # noqa: E402
from methods.moon.reference.moon_openfgl import MoonOpenFgl  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import nested_equal, subgraph, tiny_setup  # noqa: E402


def close(a, b, atol=1e-6):
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=atol) for k in a)


class MoonOpenFglTest(unittest.TestCase):

    def test_contrastive_loss_on_three_hand_made_embeddings(self):
        gen = torch.Generator().manual_seed(1)
        g3 = subgraph(gen, 3, 2, 2, 2)
        fed = MoonOpenFgl([g3], 2, None, hid_dim=2, dropout=0.0)
        client = fed.clients[0]
        client.global_embedding = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
        client.prev_local_embedding = torch.tensor([[0.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
        z = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        logits = torch.tensor([[0.0, 1.0], [2.0, 0.0], [0.0, 0.0]])
        label, mask = torch.tensor([1, 1, 0]), torch.tensor([True, True, False])
        task = F.cross_entropy(logits[:2], label[:2]).item()
        loss_fn = client.get_custom_loss_fn()
        fed.message_pool["round"] = 0
        self.assertAlmostEqual(loss_fn(z, logits, label, mask).item(), task, places=6)
        fed.message_pool["round"] = 1
        # cos(z, glob) = [1, 0, 1/sqrt2], cos(z, prev) = [0, 1, 1]; / T = 0.5; target 0.
        contrastive = (math.log(1 + math.exp(-2)) + math.log(1 + math.exp(2))
                       + math.log(1 + math.exp(2 - math.sqrt(2)))) / 3
        self.assertAlmostEqual(loss_fn(z, logits, label, mask).item(), task + contrastive, places=5)
        client.config = dict(client.config, moon_mu=0.25, temperature=1.0)
        contrastive = (math.log(1 + math.exp(-1)) + math.log(1 + math.exp(1))
                       + math.log(1 + math.exp(1 - 1 / math.sqrt(2)))) / 3
        self.assertAlmostEqual(loss_fn(z, logits, label, mask).item(), task + 0.25 * contrastive, places=5)

    def test_rounds(self):
        _, subgraphs, state = tiny_setup()
        fed = MoonOpenFgl(subgraphs, 3, state, hid_dim=5, dropout=0.0)
        self.assertEqual(fed.config, {'moon_mu': 1, 'temperature': 0.5})
        out0 = fed.train_round()
        avg = FedAvgOpenFgl(subgraphs, 3, state, hid_dim=5, dropout=0.0)
        self.assertTrue(nested_equal(out0['local'], avg.train_round()['local']))  # round 0: CE only
        for c in (0, 1):
            ref = openfgl.GCN(4, 5, 3, dropout=0.0)
            ref.eval()
            ref.load_state_dict(state)
            self.assertTrue(torch.allclose(out0['global_embedding'][c], ref(subgraphs[c])[0], atol=1e-6))
            ref.load_state_dict(out0['local'][c])
            self.assertTrue(torch.allclose(out0['prev_local_embedding'][c], ref(subgraphs[c])[0], atol=1e-6))

        before = copy.deepcopy(fed.clients[1].task)
        out1 = fed.train_round()
        # Client 1's round 1 by hand, with its Adam state kept from round 0.
        task, data = before, subgraphs[1]
        with torch.no_grad():
            for n, p in task.model.named_parameters():
                p.copy_(out0['global'][n])
        task.model.eval()
        z_glob = task.model(data)[0].detach()
        self.assertTrue(torch.allclose(z_glob, out1['global_embedding'][1], atol=1e-6))
        z_prev = out0['prev_local_embedding'][1]
        task.model.train()
        for _ in range(3):
            task.optim.zero_grad()
            z, logits = task.model(data)
            sims = torch.stack([F.cosine_similarity(z, z_glob, dim=-1), F.cosine_similarity(z, z_prev, dim=-1)], 1)
            loss = F.cross_entropy(logits[data.train_idx], data.y[data.train_idx]) \
                + F.cross_entropy(sims / 0.5, torch.zeros(z.shape[0], dtype=torch.long))
            loss.backward()
            task.optim.step()
        self.assertTrue(close(openfgl.clone_state(task.model), out1['local'][1]))
        self.assertFalse(close(avg.train_round()['local'][1], out1['local'][1]))
        for k, v in out1['global'].items():
            self.assertTrue(torch.allclose(v, 0.4 * out1['uploads'][0]['weight'][k]
                                           + 0.6 * out1['uploads'][1]['weight'][k], atol=1e-7))

    def test_two_instances_are_bit_identical(self):
        def go():
            _, subgraphs, state = tiny_setup()
            fed = MoonOpenFgl(subgraphs, 3, state, hid_dim=5, dropout=0.0)
            return [fed.train_round() for _ in range(3)]
        self.assertTrue(nested_equal(go(), go()))


if __name__ == '__main__':
    unittest.main()
