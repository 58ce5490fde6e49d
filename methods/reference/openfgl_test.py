"""Checks the shared OpenFGL port (openfgl.py) against values computed by hand."""
import os
import sys
import unittest

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from methods.reference import openfgl  # noqa: E402
from methods.reference.openfgl_fixtures import tiny_setup  # noqa: E402


def dense_norm_adj(edge_index, n):
    """D^-1/2 (A + I) D^-1/2 with A[dst, src] = 1 (GCN normalisation, by hand)."""
    a = torch.zeros(n, n)
    a[edge_index[1], edge_index[0]] = 1
    a = a + torch.eye(n)
    d = a.sum(1).pow(-0.5)
    return d.view(-1, 1) * a * d.view(1, -1)


class NoopClient(openfgl.BaseClient):
    def execute(self):
        pass

    def send_message(self):
        self.message_pool[f"client_{self.client_id}"] = {"num_samples": self.task.num_samples,
                                                         "weight": list(self.task.model.parameters())}


class NoopServer(openfgl.BaseServer):
    def execute(self):
        pass

    def send_message(self):
        self.message_pool["server"] = {"weight": list(self.task.model.parameters())}


class NoopFederation(openfgl.OpenFglFederation):
    client_cls = NoopClient
    server_cls = NoopServer


class OpenFglTest(unittest.TestCase):

    def test_defaults_are_openfgl_config(self):
        args = openfgl.make_args()
        self.assertEqual((args.lr, args.weight_decay, args.num_epochs, args.dropout, args.hid_dim,
                          args.num_layers, args.optim, args.evaluation_mode),
                         (1e-2, 5e-4, 3, 0.5, 64, 2, 'adam', 'local_model_on_local_data'))

    def test_gcn_state_dict_keys_and_parameter_order(self):
        m = openfgl.GCN(4, 8, 3, num_layers=2, dropout=0.5)
        keys = ['layers.0.bias', 'layers.0.lin.weight', 'layers.1.bias', 'layers.1.lin.weight']
        self.assertEqual(list(m.state_dict().keys()), keys)
        self.assertEqual([n for n, _ in m.named_parameters()], keys)
        self.assertEqual([tuple(p.shape) for p in m.parameters()], [(8,), (8, 4), (3,), (3, 8)])
        self.assertEqual(list(openfgl.GCN(4, 8, 3, num_layers=3).state_dict().keys())[2:4],
                         ['layers.1.bias', 'layers.1.lin.weight'])

    def test_gcn_forward_returns_hidden_embedding_and_logits(self):
        _, subgraphs, state = tiny_setup()
        data = subgraphs[1]
        m = openfgl.GCN(4, 5, 3, dropout=0.5)
        m.load_state_dict(state)
        m.eval()
        emb, logits = m(data)
        a = dense_norm_adj(data.edge_index, data.x.shape[0])
        h = torch.relu(a @ data.x @ state['layers.0.lin.weight'].t() + state['layers.0.bias'])
        self.assertTrue(torch.allclose(emb, h, atol=1e-6))
        self.assertTrue(torch.allclose(logits, a @ h @ state['layers.1.lin.weight'].t() + state['layers.1.bias'],
                                       atol=1e-6))
        # Training mode: dropout acts on the embedding (after relu), and the returned
        # embedding is the dropped one that feeds the last layer; logits are not dropped.
        m.train()
        torch.manual_seed(0)
        emb_d, logits_d = m(data)
        kept = emb_d != 0
        self.assertTrue(torch.allclose(emb_d[kept], 2 * h[kept], atol=1e-6))
        self.assertLess(int(kept.sum()), int((h != 0).sum()))
        self.assertTrue(torch.allclose(logits_d, a @ emb_d @ state['layers.1.lin.weight'].t()
                                       + state['layers.1.bias'], atol=1e-6))

    def test_train_epoch_is_an_adam_step_on_train_mask_cross_entropy(self):
        _, subgraphs, state = tiny_setup()
        data = subgraphs[0]
        args = openfgl.make_args(hid_dim=5, dropout=0.0, num_epochs=1)
        task = openfgl.NodeClsTask(args, 0, data, 4, 3)
        task.model.load_state_dict(state)
        task.train()
        # By hand: first Adam step is p - lr * g / (|g| + eps), g = dCE/dp + wd * p.
        ref = openfgl.GCN(4, 5, 3, dropout=0.0)
        ref.load_state_dict(state)
        _, logits = ref(data)
        loss = F.cross_entropy(logits[data.train_idx], data.y[data.train_idx])
        grads = torch.autograd.grad(loss, list(ref.parameters()))
        for (name, p), g in zip(ref.named_parameters(), grads):
            g = g + 5e-4 * p.detach()
            expected = p.detach() - 1e-2 * g / (g.abs() + 1e-8)
            self.assertTrue(torch.allclose(task.model.state_dict()[name], expected, atol=1e-6), name)
        # Labels outside the train mask do not matter.
        other = openfgl.NodeClsTask(args, 0, data, 4, 3)
        other.model.load_state_dict(state)
        other.data.y = data.y.clone()
        other.data.y[~data.train_idx] = (other.data.y[~data.train_idx] + 1) % 3
        other.train()
        for k, v in task.model.state_dict().items():
            self.assertTrue(torch.equal(v, other.model.state_dict()[k]))

    def test_adam_is_created_once_and_keeps_its_moments(self):
        _, subgraphs, state = tiny_setup()
        args = openfgl.make_args(hid_dim=5, dropout=0.0)
        task = openfgl.NodeClsTask(args, 0, subgraphs[0], 4, 3)
        task.model.load_state_dict(state)
        optim = task.optim
        task.train()
        with torch.no_grad():  # what a client's execute() does between rounds
            for p, s in zip(task.model.parameters(), state.values()):
                p.data.copy_(s)
        task.train()
        self.assertIs(task.optim, optim)
        steps = {float(optim.state[p]['step']) for p in task.model.parameters()}
        self.assertEqual(steps, {6.0})
        fresh = openfgl.NodeClsTask(args, 0, subgraphs[0], 4, 3)
        fresh.model.load_state_dict(state)
        fresh.train()
        self.assertFalse(torch.equal(fresh.model.layers[0].lin.weight, task.model.layers[0].lin.weight))

    def test_accuracy_argmax_first_on_ties(self):
        logits = torch.tensor([[1.0, 2.0], [3.0, 0.0], [0.0, 0.0]])
        self.assertAlmostEqual(openfgl.compute_accuracy(logits, torch.tensor([1, 0, 1])), 2 / 3)
        self.assertAlmostEqual(openfgl.compute_accuracy(logits, torch.tensor([1, 0, 0])), 1.0)

    def test_evaluate_weights_clients_by_node_count_and_keeps_best_by_val(self):
        _, subgraphs, state = tiny_setup()
        fed = NoopFederation(subgraphs, 3, state, hid_dim=5, dropout=0.0)
        fed.train_round()
        fake = [{'accuracy_val': 0.5, 'accuracy_test': 1.0}, {'accuracy_val': 0.0, 'accuracy_test': 0.25}]
        for c, r in zip(fed.clients, fake):
            c.task.evaluate = lambda r=r: dict(r)
        out = fed.evaluate()
        self.assertAlmostEqual(out['current_val_accuracy'], (0.5 * 6 + 0.0 * 9) / 15)
        self.assertAlmostEqual(out['current_test_accuracy'], (1.0 * 6 + 0.25 * 9) / 15)
        self.assertEqual(out['best']['best_round'], 0)
        fed.train_round()
        out = fed.evaluate()  # same val: not strictly greater, best stays at round 0
        self.assertEqual((out['current_round'], out['best']['best_round']), (1, 0))

    def test_real_evaluate_uses_each_clients_local_model(self):
        _, subgraphs, state = tiny_setup()
        fed = NoopFederation(subgraphs, 3, state, hid_dim=5, dropout=0.0)
        fed.message_pool["round"] = 0
        r = fed.clients[1].task.evaluate()
        _, logits = fed.clients[1].task.model(subgraphs[1])
        m = subgraphs[1].val_idx
        self.assertAlmostEqual(r['accuracy_val'], (logits[m].argmax(1) == subgraphs[1].y[m]).float().mean().item())
        self.assertFalse(fed.clients[1].task.model.training)

    def test_round_messages_are_named_copies(self):
        _, subgraphs, state = tiny_setup()
        fed = NoopFederation(subgraphs, 3, state, hid_dim=5, dropout=0.0)
        out = fed.train_round()
        self.assertEqual(out['uploads'][1]['num_samples'], 9)
        self.assertEqual(list(out['uploads'][0]['weight'].keys()), list(state.keys()))
        self.assertEqual(list(out['server_message']['weight'].keys()), list(state.keys()))
        w = out['uploads'][0]['weight']['layers.0.bias']
        with torch.no_grad():
            fed.clients[0].task.model.layers[0].bias.add_(1.0)
        self.assertTrue(torch.equal(w, state['layers.0.bias']))


if __name__ == '__main__':
    unittest.main()
