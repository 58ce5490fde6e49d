"""OpenFGL's MOON, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768, files
openfgl/flcore/moon/client.py, server.py and moon_config.py, on top of
methods/reference/openfgl.py. OpenFGL's MOON keeps no previous MODEL: it keeps the
previous local EMBEDDING (eval-mode forward after the client's last local training),
and nothing is drawn. The embeddings can be injected with `prev_local_embeddings` (for a
federation that starts at first_round > 0); round 0 never uses them.
The module-level `config` of upstream becomes the per-federation dict `self.config`.
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedavg.reference.fedavg_openfgl import FedAvgClient, FedAvgServer  # noqa: E402
from methods.reference.openfgl import OpenFglFederation  # noqa: E402

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/moon/moon_config.py:1-4
DEFAULT_CONFIG = {
    "moon_mu": 1,
    "temperature": 0.5
}


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/moon/client.py:8-94
class MoonClient(FedAvgClient):
    config = DEFAULT_CONFIG

    def __init__(self, *args, **kwargs):
        # client.py:21-35
        super(MoonClient, self).__init__(*args, **kwargs)
        self.prev_local_embedding = None
        self.global_embedding = None

    def get_custom_loss_fn(self):
        # client.py:38-61. Round 0: CE only. Later: CE over the train mask + mu * the mean
        # over ALL nodes (not only train nodes) of CE([cos(z, z_glob), cos(z, z_prev)] / T,
        # target 0). z is the training-mode embedding (after relu and dropout); z_glob and
        # z_prev are eval-mode embeddings. The `num_samples != label.shape[0]` branch is
        # upstream's guard for evaluation on the global graph.
        def custom_loss_fn(embedding, logits, label, mask):
            task_loss = self.task.default_loss_fn(logits[mask], label[mask])
            if self.message_pool["round"] == 0 or self.task.num_samples != label.shape[0]:  # first round eval on global
                return task_loss
            else:
                sim_global = torch.cosine_similarity(embedding, self.global_embedding, dim=-1).view(-1, 1)
                sim_prev = torch.cosine_similarity(embedding, self.prev_local_embedding, dim=-1).view(-1, 1)
                logits = torch.cat((sim_global, sim_prev), dim=1) / self.config["temperature"]
                lbls = torch.zeros(embedding.size(0)).long()
                contrastive_loss = nn.CrossEntropyLoss()(logits, lbls)
                moon_loss = self.config["moon_mu"] * contrastive_loss
                return task_loss + moon_loss

        return custom_loss_fn

    def execute(self):
        # client.py:65-82
        with torch.no_grad():
            for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                local_param.data.copy_(global_param)

        # eval-mode embedding of the freshly received global model (task.evaluate also
        # computes losses with the current loss_fn; they are discarded).
        self.global_embedding = self.task.evaluate(mute=True)["embedding"].detach()

        self.task.loss_fn = self.get_custom_loss_fn()
        self.task.train()

        self.prev_local_embedding = self.task.evaluate(mute=True)["embedding"].detach()

    # client.py:86-94 send_message: FedAvg's, verbatim (inherited).


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/moon/server.py:6-58 (identical to FedAvg's)
# FedAvg's server, verbatim (upstream repeats it).
MoonServer = FedAvgServer


class MoonOpenFgl(OpenFglFederation):
    """MoonOpenFgl(subgraphs, num_classes, global_state, moon_mu=1, temperature=0.5,
    prev_local_embeddings=None, **common), common as OpenFglFederation.

    train_round(sampled_clients=None) returns round, sampled_clients, server_message
    {'weight'}, uploads {cid: {'num_samples', 'weight'}}, local, global, and per client
    global_embedding [n, hid] (eval embedding of the received global model, this round)
    and prev_local_embedding [n, hid] (eval embedding after this round's training): None
    for a client that has not trained yet."""
    client_cls = MoonClient
    server_cls = MoonServer

    def __init__(self, subgraphs, num_classes, global_state=None, moon_mu=DEFAULT_CONFIG["moon_mu"],
                 temperature=DEFAULT_CONFIG["temperature"], prev_local_embeddings=None, **common):
        self.config = dict(DEFAULT_CONFIG, moon_mu=moon_mu, temperature=temperature)
        super().__init__(subgraphs, num_classes, global_state, **common)
        if prev_local_embeddings is not None:
            for client, emb in zip(self.clients, prev_local_embeddings):
                client.prev_local_embedding = None if emb is None else emb.detach().clone()

    def make_client(self, client_id, data, input_dim):
        client = super().make_client(client_id, data, input_dim)
        client.config = self.config
        return client

    def extra_state(self):
        def cp(t):
            return None if t is None else t.detach().clone()
        return {'global_embedding': [cp(c.global_embedding) for c in self.clients],
                'prev_local_embedding': [cp(c.prev_local_embedding) for c in self.clients]}
