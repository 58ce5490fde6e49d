"""OpenFGL's FedDC, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768, files
openfgl/flcore/feddc/client.py, server.py and feddc_config.py, on top of
methods/reference/openfgl.py. Drift, last update and average update start at zero;
nothing is drawn. The module-level `config` of upstream becomes `self.config`.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.openfgl import BaseClient, BaseServer, OpenFglFederation, copy_value  # noqa: E402

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/feddc/feddc_config.py:3-5
DEFAULT_CONFIG = {
    "feddc_alpha": 1e-1
}


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/feddc/client.py:7-93
class FedDCClient(BaseClient):
    config = DEFAULT_CONFIG

    def __init__(self, *args, **kwargs):
        # client.py:19-34
        super(FedDCClient, self).__init__(*args, **kwargs)
        self.local_drift = [torch.zeros_like(p, requires_grad=False) for p in self.task.model.parameters()]
        self.last_update = [torch.zeros_like(p, requires_grad=False) for p in self.task.model.parameters()]

    def get_custom_loss_fn(self):
        # client.py:37-60. Round 0: CE only. Later: CE + alpha/2 * sum (h_i + w - w_glob)^2
        # + 1/(lr * E) * sum(w * last_update_i - avg_update). The avg_update term is a
        # constant: the gradient of the last term is last_update_i / (lr * E).
        def custom_loss_fn(embedding, logits, label, mask):
            task_loss = self.task.default_loss_fn(logits[mask], label[mask])

            if self.message_pool["round"] != 0:
                loss_drift = 0
                loss_grad = 0

                for local_state, global_state, drift_param, update_param, avg_param in zip(self.task.model.parameters(), self.message_pool["server"]["weight"], self.local_drift, self.last_update, self.message_pool["server"]["avg_update"]):
                    loss_drift += torch.sum(torch.pow(drift_param + local_state - global_state, 2))
                    loss_grad += torch.sum(local_state * update_param - avg_param)

                return task_loss + (self.config["feddc_alpha"] / 2) * loss_drift + (1/(self.args.lr * self.args.num_epochs)) * loss_grad
            else:
                return task_loss

        return custom_loss_fn

    def execute(self):
        # client.py:62-80
        with torch.no_grad():
            for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                local_param.data.copy_(global_param)

        self.task.loss_fn = self.get_custom_loss_fn()
        self.task.train()

        # client.py:77-80, kept verbatim: `update_param` is bound by zip BEFORE
        # last_update[it] is replaced, so the drift grows by the PREVIOUS round's update
        # (zero in the client's first round), not by this round's y_i - x.
        with torch.no_grad():
            for it, (update_param, local_state, global_state) in enumerate(zip(self.last_update, self.task.model.parameters(), self.message_pool["server"]["weight"])):
                self.last_update[it] = local_state.detach() - global_state.detach()
                self.local_drift[it] += update_param

    def send_message(self):
        # client.py:83-93
        self.message_pool[f"client_{self.client_id}"] = {
            "num_samples": self.task.num_samples,
            "weight": list(self.task.model.parameters()),
            "last_update": self.last_update,
            "local_drift": self.local_drift
        }


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/feddc/server.py:5-66
class FedDCServer(BaseServer):

    def __init__(self, *args, **kwargs):
        # server.py:17-29
        super(FedDCServer, self).__init__(*args, **kwargs)
        self.avg_update = [torch.zeros_like(p) for p in self.task.model.parameters()]

    def execute(self):
        # server.py:39-56: x <- sum_k (n_k / n) (y_k + h_k); avg_update <- UNweighted mean
        # of the sampled clients' last_update.
        with torch.no_grad():
            num_tot_samples = sum([self.message_pool[f"client_{client_id}"]["num_samples"] for client_id in self.message_pool[f"sampled_clients"]])
            for it, client_id in enumerate(self.message_pool["sampled_clients"]):
                weight = self.message_pool[f"client_{client_id}"]["num_samples"] / num_tot_samples

                for (local_param, global_param, drift_param) in zip(self.message_pool[f"client_{client_id}"]["weight"], self.task.model.parameters(), self.message_pool[f"client_{client_id}"]["local_drift"]):
                    if it == 0:
                        global_param.data.copy_(weight * (local_param + drift_param))
                    else:
                        global_param.data += weight * (local_param + drift_param)

            for it_, client_id in enumerate(self.message_pool["sampled_clients"]):
                for it, update_param in enumerate(self.message_pool[f"client_{client_id}"]["last_update"]):
                    if it_ == 0:
                        self.avg_update[it] = torch.zeros_like(update_param)
                    self.avg_update[it] += update_param
                    if it_ == len(self.message_pool["sampled_clients"]) - 1:
                        self.avg_update[it] /= len(self.message_pool["sampled_clients"])

    def send_message(self):
        # server.py:58-66
        self.message_pool["server"] = {
            "weight": list(self.task.model.parameters()),
            "avg_update": self.avg_update
        }


class FedDCOpenFgl(OpenFglFederation):
    """FedDCOpenFgl(subgraphs, num_classes, global_state, feddc_alpha=0.1, **common), common
    as OpenFglFederation.

    train_round(sampled_clients=None) returns round, sampled_clients, server_message
    {'weight', 'avg_update'}, uploads {cid: {'num_samples', 'weight', 'last_update',
    'local_drift'}}, local, global, and local_drift / last_update [per client {name: tensor}],
    avg_update {name: tensor} (end of round)."""
    client_cls = FedDCClient
    server_cls = FedDCServer

    def __init__(self, subgraphs, num_classes, global_state=None, feddc_alpha=DEFAULT_CONFIG["feddc_alpha"], **common):
        self.config = dict(DEFAULT_CONFIG, feddc_alpha=feddc_alpha)
        super().__init__(subgraphs, num_classes, global_state, **common)

    def make_client(self, client_id, data, input_dim):
        client = super().make_client(client_id, data, input_dim)
        client.config = self.config
        return client

    def extra_state(self):
        return {'local_drift': [copy_value(c.local_drift, self.param_names) for c in self.clients],
                'last_update': [copy_value(c.last_update, self.param_names) for c in self.clients],
                'avg_update': copy_value(self.server.avg_update, self.param_names)}
