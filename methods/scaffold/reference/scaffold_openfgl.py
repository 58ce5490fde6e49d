"""OpenFGL's SCAFFOLD, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768, files
openfgl/flcore/scaffold/client.py and server.py (no config file), on top of
methods/reference/openfgl.py. Control variates start at zero; nothing is drawn.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.openfgl import BaseClient, BaseServer, OpenFglFederation, copy_value  # noqa: E402


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/scaffold/client.py:10-83
class ScaffoldClient(BaseClient):

    def __init__(self, *args, **kwargs):
        # client.py:22-36
        super(ScaffoldClient, self).__init__(*args, **kwargs)
        self.local_control = [torch.zeros_like(p.data, requires_grad=False) for p in self.task.model.parameters()]

    def execute(self):
        # client.py:39-51
        with torch.no_grad():
            for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                local_param.data.copy_(global_param)

        self.task.step_preprocess = self.step_preprocess
        self.task.train()

        self.update_local_control()

    def step_preprocess(self):
        # client.py:54-62: after backward, before optim.step() (so before Adam adds
        # weight_decay * p and normalises): grad += c - c_i.
        for p, local_control, global_control in zip(self.task.model.parameters(), self.local_control, self.message_pool["server"]["global_control"]):
            if p.grad is None:
                continue
            p.grad.data += global_control - local_control

    def update_local_control(self):
        # client.py:64-71: c_i <- c_i - c + (x - y_i) / (num_epochs * lr), SCAFFOLD's
        # option II with K = num_epochs and the SGD step lr, although the optimizer is Adam.
        with torch.no_grad():
            for it, (local_state, global_state, global_control) in enumerate(zip(self.task.model.parameters(), self.message_pool["server"]["weight"], self.message_pool["server"]["global_control"])):
                self.local_control[it].data = self.local_control[it].data - global_control.data + (global_state.data - local_state.data) / (self.args.num_epochs * self.args.lr)

    def send_message(self):
        # client.py:74-83: the new c_i itself is uploaded (not c_i_new - c_i_old).
        self.message_pool[f"client_{self.client_id}"] = {
            "num_samples": self.task.num_samples,
            "weight": list(self.task.model.parameters()),
            "local_control": self.local_control
        }


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/scaffold/server.py:5-74
class ScaffoldServer(BaseServer):

    def __init__(self, *args, **kwargs):
        # server.py:17-29
        super(ScaffoldServer, self).__init__(*args, **kwargs)
        self.global_control = [torch.zeros_like(p.data, requires_grad=False) for p in self.task.model.parameters()]

    def execute(self):
        # server.py:38-49: x <- node-count weighted mean of the y_i (no server learning rate).
        with torch.no_grad():
            num_tot_samples = sum([self.message_pool[f"client_{client_id}"]["num_samples"] for client_id in self.message_pool[f"sampled_clients"]])
            for it, client_id in enumerate(self.message_pool["sampled_clients"]):
                weight = self.message_pool[f"client_{client_id}"]["num_samples"] / num_tot_samples

                for (local_param, global_param) in zip(self.message_pool[f"client_{client_id}"]["weight"], self.task.model.parameters()):
                    if it == 0:
                        global_param.data.copy_(weight * local_param.data)
                    else:
                        global_param.data += weight * local_param.data

        self.update_global_control()

    def send_message(self):
        # server.py:53-61
        self.message_pool["server"] = {
            "global_control": self.global_control,
            "weight": list(self.task.model.parameters())
        }

    def update_global_control(self):
        # server.py:63-74: c <- UNweighted mean of the sampled clients' c_i (replaces c;
        # not c + |S|/N * mean(delta c_i)).
        with torch.no_grad():
            for it_, client_id in enumerate(self.message_pool["sampled_clients"]):
                for it, local_param in enumerate(self.message_pool[f"client_{client_id}"]["local_control"]):
                    if it_ == 0:
                        self.global_control[it].data.copy_(1 / len(self.message_pool["sampled_clients"]) * local_param)
                    else:
                        self.global_control[it] += 1 / len(self.message_pool["sampled_clients"]) * local_param


class ScaffoldOpenFgl(OpenFglFederation):
    """ScaffoldOpenFgl(subgraphs, num_classes, global_state, **common), common as
    OpenFglFederation (client_states=None, hid_dim=64, num_layers=2, dropout=0.5, lr=1e-2,
    weight_decay=5e-4, num_epochs=3, first_round=0, evaluation_mode=...).

    train_round(sampled_clients=None) returns round, sampled_clients,
    server_message {'global_control': {name: tensor}, 'weight': {name: tensor}},
    uploads {cid: {'num_samples', 'weight', 'local_control'}}, local, global, and
    local_control [per client {name: tensor}], global_control {name: tensor} (end of round)."""
    client_cls = ScaffoldClient
    server_cls = ScaffoldServer

    def extra_state(self):
        return {'local_control': [copy_value(c.local_control, self.param_names) for c in self.clients],
                'global_control': copy_value(self.server.global_control, self.param_names)}
