"""OpenFGL's FedProto, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768, files
openfgl/flcore/fedproto/client.py, server.py and fedproto_config.py, on top of
methods/reference/openfgl.py. No model weights are exchanged: each client trains its
OWN model from its own initial weights (upstream: each client's GCN is drawn from the
seeded torch RNG; here `client_states[i]`, or `global_state` for every client when
client_states is None). Prototypes are means, nothing is drawn.
The module-level `config` of upstream becomes the per-federation dict `self.config`.
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.openfgl import BaseClient, BaseServer, OpenFglFederation, copy_value  # noqa: E402

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedproto/fedproto_config.py:1-3
DEFAULT_CONFIG = {
    "fedproto_lambda": 1
}


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedproto/client.py:6-93
class FedProtoClient(BaseClient):
    config = DEFAULT_CONFIG
    lambda_key = "fedproto_lambda"

    def __init__(self, *args, **kwargs):
        # client.py:17-30
        super(FedProtoClient, self).__init__(*args, **kwargs)
        self.local_prototype = {}

    def execute(self):
        # client.py:33-41: no download of weights; train, then recompute the prototypes.
        self.task.loss_fn = self.get_custom_loss_fn()
        self.task.train()
        self.update_local_prototype()

    def get_custom_loss_fn(self):
        # client.py:44-65. Round 0: CE only. Later: CE + lambda * sum over the classes that
        # have train nodes of MSELoss(z[train & y == k], P_k) (mean over rows and dims);
        # z is the training-mode embedding (after relu and dropout). The class rows always
        # come from task.train_mask, whatever `mask` is.
        def custom_loss_fn(embedding, logits, label, mask):
            if self.message_pool["round"] == 0 or self.task.num_samples != label.shape[0]:  # first round or eval on global
                return self.task.default_loss_fn(logits[mask], label[mask])
            else:
                loss_fedproto = 0
                for class_i in range(self.task.num_global_classes):
                    selected_idx = self.task.train_mask & (label == class_i)
                    if selected_idx.sum() == 0:
                        continue
                    input = embedding[selected_idx]
                    target = self.message_pool["server"]["global_prototype"][class_i].expand_as(input)
                    loss_fedproto += nn.MSELoss()(input, target)
                return self.task.default_loss_fn(logits[mask], label[mask]) + self.config[self.lambda_key] * loss_fedproto
        return custom_loss_fn

    def update_local_prototype(self):
        # client.py:68-81: per class, the mean eval-mode embedding of its TRAIN nodes;
        # zeros(hid_dim) for a class without train nodes (still uploaded).
        with torch.no_grad():
            embedding = self.task.evaluate(mute=True)["embedding"]
            for class_i in range(self.task.num_global_classes):
                selected_idx = self.task.train_mask & (self.task.data.y == class_i)
                if selected_idx.sum() == 0:
                    self.local_prototype[class_i] = torch.zeros(self.args.hid_dim)
                else:
                    input = embedding[selected_idx]
                    self.local_prototype[class_i] = torch.mean(input, dim=0)

    def send_message(self):
        # client.py:84-93
        self.message_pool[f"client_{self.client_id}"] = {
            "num_samples": self.task.num_samples,
            "local_prototype": self.local_prototype
        }


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedproto/server.py:4-58
class FedProtoServer(BaseServer):

    def __init__(self, *args, **kwargs):
        # server.py:16-28
        super(FedProtoServer, self).__init__(*args, **kwargs)
        self.global_prototype = {}

    def execute(self):
        # server.py:38-47: P_k = sum_i (n_i / n) p_i,k with n_i = ALL nodes of client i,
        # zero prototypes (class absent from a client's train set) included.
        with torch.no_grad():
            num_tot_samples = sum([self.message_pool[f"client_{client_id}"]["num_samples"] for client_id in self.message_pool[f"sampled_clients"]])
            for class_i in range(self.task.num_global_classes):
                for it, client_id in enumerate(self.message_pool["sampled_clients"]):
                    weight = self.message_pool[f"client_{client_id}"]["num_samples"] / num_tot_samples

                    if it == 0:
                        self.global_prototype[class_i] = weight * self.message_pool[f"client_{client_id}"]["local_prototype"][class_i]
                    else:
                        self.global_prototype[class_i] += weight * self.message_pool[f"client_{client_id}"]["local_prototype"][class_i]

    def send_message(self):
        # server.py:51-58
        self.message_pool["server"] = {
            "global_prototype": self.global_prototype
        }


class FedProtoOpenFgl(OpenFglFederation):
    """FedProtoOpenFgl(subgraphs, num_classes, global_state=None, client_states=None,
    fedproto_lambda=1, **common), common as OpenFglFederation.

    train_round(sampled_clients=None) returns round, sampled_clients, server_message
    {'global_prototype': {class: [hid]}} ({} in round 0), uploads {cid: {'num_samples',
    'local_prototype': {class: [hid]}}}, local [state_dict per client], and
    local_prototype [per client {class: [hid]}], global_prototype {class: [hid]}. No
    'global': the server's model is never trained or sent."""
    client_cls = FedProtoClient
    server_cls = FedProtoServer
    has_global_model = False

    def __init__(self, subgraphs, num_classes, global_state=None, client_states=None,
                 fedproto_lambda=DEFAULT_CONFIG["fedproto_lambda"], **common):
        self.config = dict(DEFAULT_CONFIG, fedproto_lambda=fedproto_lambda)
        super().__init__(subgraphs, num_classes, global_state, client_states=client_states, **common)

    def make_client(self, client_id, data, input_dim):
        client = super().make_client(client_id, data, input_dim)
        client.config = self.config
        return client

    def extra_state(self):
        return {'local_prototype': [copy_value(c.local_prototype, self.param_names) for c in self.clients],
                'global_prototype': copy_value(self.server.global_prototype, self.param_names)}
