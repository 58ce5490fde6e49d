"""Checks the OpenFGL FedGTA port against values computed by hand."""
import copy
import math
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedavg.reference.fedavg_openfgl import FedAvgOpenFgl  # noqa: E402
from methods.fedgta.reference import fedgta_openfgl as fedgta  # noqa: E402
from methods.fedgta.reference.fedgta_openfgl import FedGTAOpenFgl  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import nested_equal, tiny_setup  # noqa: E402


def close(a, b, atol=1e-6):
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=atol, rtol=1e-5) for k in a)


class FedGTAOpenFglTest(unittest.TestCase):

    def setUp(self):
        _, self.subgraphs, self.state = tiny_setup()

    def fed(self, **kw):
        return FedGTAOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0, **kw)

    def test_defaults(self):
        self.assertEqual(self.fed().config, {'prop_steps': 5, 'lp_alpha': 0.5, 'temperature': 20, 'num_moments': 10,
                                             'moment_type': 'hybrid', 'accept_alpha': 0.5})
        client = self.fed(prop_steps=2, lp_alpha=0.25).clients[1]
        self.assertEqual((client.LP.num_layers, client.LP.alpha), (2, 0.25))

    def test_info_entropy_rev(self):
        vec = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
        num_neig = torch.tensor([2, 4])
        # sum(num_neig) * C / e + 2 * (2 * 0.5 log 0.5) + 4 * (1 log 1 + 0 log eps) = 12 / e - 2 ln 2
        self.assertAlmostEqual(fedgta.info_entropy_rev(vec, num_neig).item(), 12 / math.e - 2 * math.log(2), places=5)

    def test_compute_moment_hybrid(self):
        x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
        m = fedgta.compute_moment(x, num_moments=2, dim='v', moment_type='hybrid')
        # raw: E[x] = [2/3, 1/3], E[x^2] = [2/3, 1/3]; central: E[x - mu] = 0,
        # E[(x - mu)^2] = (2 * (1/3)^2 + (2/3)^2) / 3 = 2/9 in both columns.
        expected = torch.tensor([[2 / 3, 1 / 3], [2 / 3, 1 / 3], [0, 0], [2 / 9, 2 / 9]])
        self.assertTrue(torch.allclose(m, expected, atol=1e-6))
        self.assertTrue(torch.allclose(m.view(-1), expected.view(-1), atol=1e-6))  # row-major, as uploaded
        self.assertEqual(tuple(fedgta.compute_moment(x, 3, 'v', 'raw').shape), (3, 2))

    def test_num_neig_is_in_plus_out_degree(self):
        client = self.fed().clients[0]
        ei = self.subgraphs[0].edge_index
        deg = torch.zeros(6, dtype=torch.long).index_add_(0, ei[1], torch.ones(ei.shape[1], dtype=torch.long))
        self.assertTrue(torch.equal(client.num_neig, 2 * deg))
        self.assertEqual(client.num_neig.dtype, torch.long)

    def test_postprocess_matches_dense_label_propagation(self):
        fed = self.fed()
        out = fed.train_round()
        data = self.subgraphs[1]
        model = openfgl.GCN(4, 5, 3, dropout=0.0)
        model.load_state_dict(out['local'][1])
        model.eval()
        soft = F.softmax(model(data)[1], 1)
        self.assertTrue(torch.allclose(out['soft_label'][1], soft, atol=1e-6))
        # Dense LP without self loops: A[dst, src] = 1, D^-1/2 A D^-1/2, seeds = soft labels of the
        # train nodes, 5 steps of 0.5 * A Y + 0.5 * Y0, clamped to [0, 1].
        n, m = 9, data.train_idx
        a = torch.zeros(n, n)
        a[data.edge_index[1], data.edge_index[0]] = 1
        d = a.sum(1).pow(-0.5)
        d[torch.isinf(d)] = 0
        a = d.view(-1, 1) * a * d.view(1, -1)
        y0 = torch.zeros(n, 3)
        y0[m] = soft[m]
        y = y0
        for _ in range(5):
            y = (0.5 * a @ y + 0.5 * y0).clamp(0, 1)
        self.assertTrue(torch.allclose(out['lp_output'][1], y, atol=1e-6))
        onehot = F.one_hot(data.y[m], 3).float()
        raw, dis = F.softmax(y, 1), F.softmax(y / 20, 1)
        raw[m], dis[m] = onehot, onehot
        self.assertTrue(torch.allclose(out['output_raw'][1], raw, atol=1e-6))
        self.assertTrue(torch.allclose(out['output_dis'][1], dis, atol=1e-6))
        moments = torch.cat([torch.stack([(raw ** p).mean(0) for p in range(1, 11)]),
                             torch.stack([((raw - raw.mean(0)) ** p).mean(0) for p in range(1, 11)])]).view(-1)
        self.assertTrue(torch.allclose(out['uploads'][1]['lp_moment_v'], moments, atol=1e-6))
        num_neig = fed.clients[1].num_neig.float()
        agg_w = num_neig.sum() * 3 / math.e + (num_neig * (dis * torch.log(dis + 1e-8)).sum(1)).sum()
        self.assertAlmostEqual(out['uploads'][1]['agg_w'].item(), agg_w.item(), places=4)

    def test_server_similarity_threshold_and_weighted_personalised_aggregation(self):
        pool = {}
        server = fedgta.FedGTAServer(openfgl.make_args(num_clients=3, hid_dim=2), pool, 2, 2)
        server.config = dict(fedgta.DEFAULT_CONFIG)
        names = [n for n, _ in server.task.model.named_parameters()]
        shapes = [p.shape for p in server.task.model.parameters()]
        # cos(v0, v1) = cos(v1, v2) = 1/sqrt(2) > 0.5, cos(v0, v2) = 0: 0 and 2 do not see each other.
        moments = [torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0]), torch.tensor([0.0, 1.0])]
        for c in range(3):
            pool[f'client_{c}'] = {'num_samples': 1, 'lp_moment_v': moments[c], 'agg_w': torch.tensor(float(c + 1)),
                                   'weight': [torch.full(s, 10.0 ** c) for s in shapes]}
        pool['sampled_clients'] = [0, 1, 2]
        before = openfgl.clone_state(server.task.model)
        server.execute()
        self.assertEqual(server.last_agg_client_list, {0: [0, 1], 1: [0, 1, 2], 2: [1, 2]})
        r = 1 / math.sqrt(2)
        self.assertTrue(torch.allclose(server.last_sim[1], torch.tensor([r, 1.0, r])))
        # agg_w 1, 2, 3; weights 1, 10, 100
        expected = [(1 + 2 * 10) / 3, (1 + 2 * 10 + 3 * 100) / 6, (2 * 10 + 3 * 100) / 5]
        for c in range(3):
            for n, p in server.aggregated_models[c].named_parameters():
                self.assertTrue(torch.allclose(p, torch.full_like(p, expected[c])), (c, n))
        self.assertTrue(openfgl.clone_state(server.task.model).keys() == before.keys())
        self.assertTrue(nested_equal(openfgl.clone_state(server.task.model), before))  # never updated
        # Messages: round 0 the global weights only; later the sampled clients' aggregates only.
        pool['round'] = 0
        server.send_message()
        self.assertEqual(list(pool['server']), ['weight'])
        pool['round'], pool['sampled_clients'] = 4, [0, 2]
        server.send_message()
        self.assertEqual(list(pool['server']), ['personalized_0', 'personalized_2'])
        self.assertIs(pool['server']['personalized_2'][0], list(server.aggregated_models[2].parameters())[0])
        self.assertEqual(len(names), 4)

    def test_rounds(self):
        fed = self.fed()
        out0 = fed.train_round()
        # Round 0: every client starts from the global weights and trains with plain CE: FedAvg's
        # local models; the server model is never updated.
        avg = FedAvgOpenFgl(self.subgraphs, 3, self.state, hid_dim=5, dropout=0.0).train_round()
        self.assertTrue(nested_equal(out0['local'], avg['local']))
        self.assertTrue(nested_equal(out0['global'], self.state))
        self.assertEqual(out0['accepted'], {0: [0, 1], 1: [0, 1]})  # similar moments on this toy
        w = [out0['uploads'][c]['agg_w'] for c in (0, 1)]
        for c in (0, 1):
            expected = {k: w[0] / (w[0] + w[1]) * out0['uploads'][0]['weight'][k]
                        + w[1] / (w[0] + w[1]) * out0['uploads'][1]['weight'][k] for k in self.state}
            self.assertTrue(close(out0['personalized'][c], expected))
        # Round 1: client 1 starts from ITS personalised aggregate, with its Adam kept from round 0.
        task = copy.deepcopy(fed.clients[1].task)
        out1 = fed.train_round()
        self.assertEqual(sorted(out1['server_message']), ['personalized_0', 'personalized_1'])
        self.assertTrue(nested_equal(out1['server_message']['personalized_1'], out0['personalized'][1]))
        with torch.no_grad():
            for n, p in task.model.named_parameters():
                p.copy_(out0['personalized'][1][n])
        task.train()
        self.assertTrue(nested_equal(openfgl.clone_state(task.model), out1['local'][1]))

    def test_rejected_client_is_not_aggregated(self):
        # Nothing passes, not even the client itself (sim 1): the loop body never runs and the
        # aggregate keeps its previous value (here the initial global state).
        out = self.fed(accept_alpha=1.5).train_round()
        self.assertEqual(out['accepted'], {0: [], 1: []})
        self.assertTrue(nested_equal(out['personalized'], [self.state, self.state]))
        fed = self.fed(accept_alpha=0.99)
        out = fed.train_round()
        self.assertEqual(out['accepted'], {0: [0], 1: [1]})
        self.assertTrue(close(out['personalized'][1], out['uploads'][1]['weight']))

    def test_two_instances_are_bit_identical(self):
        fa, fb = self.fed(), self.fed()
        a = [fa.train_round() for _ in range(3)]
        b = [fb.train_round() for _ in range(3)]
        self.assertTrue(nested_equal(a, b))
        self.assertFalse(nested_equal(a[1]['local'], a[2]['local']))


if __name__ == '__main__':
    unittest.main()
