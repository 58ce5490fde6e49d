"""OpenFGL's FedProx, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768, files
openfgl/flcore/fedprox/client.py, server.py and fedprox_config.py, on top of
methods/reference/openfgl.py. Nothing is drawn: with dropout 0 a round is deterministic.
The module-level `config` of upstream becomes the per-federation dict `self.config`.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedavg.reference.fedavg_openfgl import FedAvgClient, FedAvgServer  # noqa: E402
from methods.reference.openfgl import OpenFglFederation  # noqa: E402

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedprox/fedprox_config.py:1-3
DEFAULT_CONFIG = {
    "fedprox_mu": 1e-3
}


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedprox/client.py:8-85
class FedProxClient(FedAvgClient):
    config = DEFAULT_CONFIG

    def get_custom_loss_fn(self):
        # client.py:36-51: CE over the train mask + sum over parameter tensors of
        # mu/2 * ||w - w_global||_2^2 (norm(2)**2, so the gradient at w == w_global is 0).
        # w_global are the server model's live Parameters (upstream's backward also puts a
        # gradient into them; it is never used).
        def custom_loss_fn(embedding, logits, label, mask):
            loss_fedprox = 0
            for local_param, global_param in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                loss_fedprox += self.config["fedprox_mu"] / 2 * (local_param - global_param).norm(2)**2
            return self.task.default_loss_fn(logits[mask], label[mask]) + loss_fedprox

        return custom_loss_fn

    def execute(self):
        # client.py:55-67
        with torch.no_grad():
            for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                local_param.data.copy_(global_param)

        self.task.loss_fn = self.get_custom_loss_fn()
        self.task.train()

    # client.py:72-85 send_message: FedAvg's, verbatim (inherited).


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedprox/server.py:6-63 (identical to FedAvg's)
# FedAvg's server, verbatim (upstream repeats it).
FedProxServer = FedAvgServer


class FedProxOpenFgl(OpenFglFederation):
    """FedProxOpenFgl(subgraphs, num_classes, global_state, fedprox_mu=1e-3, **common), common
    as OpenFglFederation (client_states=None, hid_dim=64, num_layers=2, dropout=0.5, lr=1e-2,
    weight_decay=5e-4, num_epochs=3, first_round=0, evaluation_mode=...).

    train_round(sampled_clients=None) returns what FedAvg's does: round, sampled_clients,
    server_message {'weight'}, uploads {cid: {'num_samples', 'weight'}}, local, global."""
    client_cls = FedProxClient
    server_cls = FedProxServer

    def __init__(self, subgraphs, num_classes, global_state=None, fedprox_mu=DEFAULT_CONFIG["fedprox_mu"], **common):
        self.config = dict(DEFAULT_CONFIG, fedprox_mu=fedprox_mu)
        super().__init__(subgraphs, num_classes, global_state, **common)

    def make_client(self, client_id, data, input_dim):
        client = super().make_client(client_id, data, input_dim)
        client.config = self.config
        return client
