"""OpenFGL's FedAvg, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768, files
openfgl/flcore/fedavg/client.py and server.py, on top of methods/reference/openfgl.py
(GCN, NodeClsTask, BaseClient/BaseServer, the trainer's round). FedAvg has no config
file and draws nothing: with dropout 0 a round is deterministic.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.openfgl import BaseClient, BaseServer, OpenFglFederation  # noqa: E402


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedavg/client.py:5-55
class FedAvgClient(BaseClient):

    def execute(self):
        # client.py:41-45: overwrite the local parameters with the global ones (the Adam
        # state of the client's optimizer is kept from its previous rounds), then train.
        with torch.no_grad():
            for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                local_param.data.copy_(global_param)

        self.task.train()

    def send_message(self):
        # client.py:52-55: num_samples = all nodes of the subgraph.
        self.message_pool[f"client_{self.client_id}"] = {
            "num_samples": self.task.num_samples,
            "weight": list(self.task.model.parameters())
        }


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedavg/server.py:4-54
class FedAvgServer(BaseServer):

    def execute(self):
        # server.py:36-45: global = sum_k (n_k / sum n) * local_k, in sampled order
        # (float64 Python weight times a float32 tensor).
        with torch.no_grad():
            num_tot_samples = sum([self.message_pool[f"client_{client_id}"]["num_samples"] for client_id in self.message_pool[f"sampled_clients"]])
            for it, client_id in enumerate(self.message_pool["sampled_clients"]):
                weight = self.message_pool[f"client_{client_id}"]["num_samples"] / num_tot_samples

                for (local_param, global_param) in zip(self.message_pool[f"client_{client_id}"]["weight"], self.task.model.parameters()):
                    if it == 0:
                        global_param.data.copy_(weight * local_param)
                    else:
                        global_param.data += weight * local_param

    def send_message(self):
        # server.py:52-54
        self.message_pool["server"] = {
            "weight": list(self.task.model.parameters())
        }


class FedAvgOpenFgl(OpenFglFederation):
    """FedAvgOpenFgl(subgraphs, num_classes, global_state, client_states=None, hid_dim=64,
    num_layers=2, dropout=0.5, lr=1e-2, weight_decay=5e-4, num_epochs=3, first_round=0,
    evaluation_mode='local_model_on_local_data').

    train_round(sampled_clients=None) returns round, sampled_clients,
    server_message {'weight': {name: tensor}}, uploads {cid: {'num_samples': int,
    'weight': {name: tensor}}}, local [state_dict], global state_dict."""
    client_cls = FedAvgClient
    server_cls = FedAvgServer
