"""Checks the OpenFGL FedProto port against values computed by hand."""
import copy
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedproto.reference.fedproto_openfgl import FedProtoOpenFgl  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import nested_equal, random_like_state, subgraph, tiny_setup  # noqa: E402


def close(a, b, atol=1e-6):
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=atol) for k in a)


def setup(**kw):
    # Client 1 has no node of class 2.
    gen, subgraphs, state = tiny_setup(second_client_classes=[0, 1])
    client_states = [state, random_like_state(gen, state)]
    return subgraphs, client_states, FedProtoOpenFgl(subgraphs, 3, None, client_states, hid_dim=5, dropout=0.0, **kw)


class FedProtoOpenFglTest(unittest.TestCase):

    def test_prototype_loss_on_hand_made_embeddings(self):
        gen = torch.Generator().manual_seed(1)
        fed = FedProtoOpenFgl([subgraph(gen, 4, 2, 3, 3)], 3, None, hid_dim=2, dropout=0.0, fedproto_lambda=0.5)
        client = fed.clients[0]
        client.task.train_mask = torch.tensor([True, True, True, False])
        label = torch.tensor([0, 0, 1, 1])  # class 2 has no train node: skipped
        z = torch.tensor([[1.0, 2.0], [3.0, 0.0], [0.0, 1.0], [9.0, 9.0]])
        fed.message_pool["server"] = {"global_prototype": {0: torch.tensor([1.0, 1.0]), 1: torch.tensor([0.0, -1.0]),
                                                           2: torch.tensor([5.0, 5.0])}}
        logits = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
        mask = torch.tensor([True, False, True, False])
        ce = F.cross_entropy(logits[mask], label[mask]).item()
        fed.message_pool["round"] = 0
        self.assertAlmostEqual(client.get_custom_loss_fn()(z, logits, label, mask).item(), ce, places=6)
        fed.message_pool["round"] = 1
        # class 0: rows (1,2),(3,0) vs (1,1): sq errs 0,1,4,1 -> mean 1.5; class 1: (0,1) vs (0,-1): 0,4 -> 2
        self.assertAlmostEqual(client.get_custom_loss_fn()(z, logits, label, mask).item(), ce + 0.5 * 3.5, places=5)

    def test_prototype_aggregation_and_rounds(self):
        subgraphs, client_states, fed = setup()
        self.assertEqual(fed.config, {'fedproto_lambda': 1})
        out0 = fed.train_round()
        self.assertEqual(out0['server_message'], {'global_prototype': {}})
        self.assertNotIn('global', out0)
        protos = []
        for c in (0, 1):
            # Round 0: plain CE training from the client's OWN initial weights.
            task = openfgl.NodeClsTask(openfgl.make_args(hid_dim=5, dropout=0.0), c, subgraphs[c], 4, 3)
            task.model.load_state_dict(client_states[c])
            task.train()
            self.assertTrue(nested_equal(openfgl.clone_state(task.model), out0['local'][c]))
            task.model.eval()
            emb = task.model(subgraphs[c])[0].detach()
            p = {}
            for k in range(3):
                rows = subgraphs[c].train_idx & (subgraphs[c].y == k)
                p[k] = emb[rows].mean(0) if rows.any() else torch.zeros(5)
            protos.append(p)
            self.assertTrue(close(out0['local_prototype'][c], p))
            self.assertTrue(nested_equal(out0['uploads'][c]['local_prototype'], out0['local_prototype'][c]))
        self.assertTrue(torch.equal(out0['local_prototype'][1][2], torch.zeros(5)))
        # Weighted by node count (6, 9), the zero prototype of client 1 included.
        self.assertTrue(close(out0['global_prototype'], {k: 0.4 * protos[0][k] + 0.6 * protos[1][k] for k in range(3)}))
        self.assertTrue(torch.allclose(out0['global_prototype'][2], 0.4 * protos[0][2]))

        before = copy.deepcopy(fed.clients[0].task)
        out1 = fed.train_round()
        self.assertTrue(nested_equal(out1['server_message']['global_prototype'], out0['global_prototype']))
        # Client 0's round 1 by hand: continues from its own round-0 model and Adam state.
        task, data, P = before, subgraphs[0], out0['global_prototype']
        task.model.train()
        for _ in range(3):
            task.optim.zero_grad()
            z, logits = task.model(data)
            loss = F.cross_entropy(logits[data.train_idx], data.y[data.train_idx])
            for k in range(3):
                rows = data.train_idx & (data.y == k)
                loss = loss + ((z[rows] - P[k]) ** 2).mean()
            loss.backward()
            task.optim.step()
        self.assertTrue(close(openfgl.clone_state(task.model), out1['local'][0]))
        plain = copy.deepcopy(before)
        del plain.loss_fn  # back to NodeClsTask.loss_fn: CE only
        plain.train()
        self.assertFalse(close(openfgl.clone_state(plain.model), out1['local'][0]))

    def test_two_instances_are_bit_identical(self):
        a = setup()[2]
        b = setup()[2]
        self.assertTrue(nested_equal([a.train_round() for _ in range(3)], [b.train_round() for _ in range(3)]))


if __name__ == '__main__':
    unittest.main()
