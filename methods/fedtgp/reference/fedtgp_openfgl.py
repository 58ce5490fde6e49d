"""OpenFGL's FedTGP, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768, files
openfgl/flcore/fedtgp/client.py, server.py and fedtgp_config.py, on top of
methods/reference/openfgl.py. As in FedProto, no model weights are exchanged: each
client trains its own model from `client_states[i]` (or `global_state` for all when
client_states is None). The server's Trainable_prototypes network is randomly
initialised upstream; here its initial state_dict is injected (`prototype_state`).
Its Adam optimizer is created once and kept across rounds, as upstream.
Additions (no effect on the computation): the server records avg_proto, the margin
gap2 and the per-epoch losses of its last execute() for the tests to check.
The module-level `config` of upstream becomes the per-federation dict `self.config`.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.openfgl import BaseClient, BaseServer, OpenFglFederation, clone_state, copy_value  # noqa: E402

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedtgp/fedtgp_config.py:1-3
DEFAULT_CONFIG = {
    "fedtgp_lambda": 1
}


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedtgp/client.py:6-93 (FedProto's client with
# config key fedtgp_lambda)
class FedTGPClient(BaseClient):
    config = DEFAULT_CONFIG

    def __init__(self, *args, **kwargs):
        # client.py:18-31
        super(FedTGPClient, self).__init__(*args, **kwargs)
        self.local_prototype = {}

    def execute(self):
        # client.py:34-41
        self.task.loss_fn = self.get_custom_loss_fn()
        self.task.train()
        self.update_local_prototype()

    def get_custom_loss_fn(self):
        # client.py:44-66: round 0: CE; later CE + lambda * sum_k MSE(z[train & y == k], P_k).
        def custom_loss_fn(embedding, logits, label, mask):
            if self.message_pool["round"] == 0 or self.task.num_samples != label.shape[0]:  # first round or eval on global
                return self.task.default_loss_fn(logits[mask], label[mask])
            else:
                loss_fedtgp = 0
                for class_i in range(self.task.num_global_classes):
                    selected_idx = self.task.train_mask & (label == class_i)
                    if selected_idx.sum() == 0:
                        continue
                    input = embedding[selected_idx]
                    target = self.message_pool["server"]["global_prototype"][class_i].expand_as(input)
                    loss_fedtgp += nn.MSELoss()(input, target)
                return self.task.default_loss_fn(logits[mask], label[mask]) + self.config["fedtgp_lambda"] * loss_fedtgp
        return custom_loss_fn

    def update_local_prototype(self):
        # client.py:70-83: mean eval-mode embedding of the class's train nodes, else zeros.
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
        # client.py:86-93
        self.message_pool[f"client_{self.client_id}"] = {
            "num_samples": self.task.num_samples,
            "local_prototype": self.local_prototype
        }


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedtgp/server.py:6-37
class Trainable_prototypes(nn.Module):
    """state_dict: embedings.weight [C, feat] (sic), middle.0.0.weight [hid, feat],
    middle.0.0.bias [hid], fc.weight [feat, hid], fc.bias [feat]; upstream uses
    feat = hid = args.hid_dim."""

    def __init__(self, num_classes, server_hidden_dim, feature_dim):
        super().__init__()

        self.embedings = nn.Embedding(num_classes, feature_dim)
        layers = [nn.Sequential(
            nn.Linear(feature_dim, server_hidden_dim),
            nn.ReLU()
        )]
        self.middle = nn.Sequential(*layers)
        self.fc = nn.Linear(server_hidden_dim, feature_dim)

    def forward(self, class_id):
        class_id = torch.tensor(class_id)

        emb = self.embedings(class_id)
        mid = self.middle(emb)
        z = self.fc(mid)
        return z


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedtgp/server.py:40-153
class FedTGPServer(BaseServer):

    def __init__(self, args, message_pool, input_dim, num_classes, fedtgp_lambda=1, num_glb_epochs=10, lr_glb=1e-2):
        # server.py:59-80 (fedtgp_lambda is stored but unused upstream)
        super(FedTGPServer, self).__init__(args, message_pool, input_dim, num_classes)

        self.fedtgp_lambda = fedtgp_lambda
        self.num_glb_epochs = num_glb_epochs
        self.lr_glb = lr_glb
        self.trainable_prototypes = Trainable_prototypes(self.task.num_global_classes, args.hid_dim, args.hid_dim)
        self.gp_optimizer = torch.optim.Adam(self.trainable_prototypes.parameters(), lr=lr_glb, weight_decay=args.weight_decay)
        self.global_prototype = {}

    def execute(self):
        # server.py:89-96: all uploaded prototypes in (client, class) order, zero ones included.
        y_list = []
        tensor_list = []
        for client_i in self.message_pool["sampled_clients"]:
            for class_i in range(self.task.num_global_classes):
                y_list.append(class_i)
                tensor_list.append(self.message_pool[f"client_{client_i}"]["local_prototype"][class_i])
        y = torch.tensor(y_list).type(torch.int64)
        all_local_prototypes = torch.cat([v.unsqueeze(0) for v in tensor_list], dim=0)
        row_id = [class_id for class_id in range(self.task.num_global_classes)]

        # server.py:99-104, kept verbatim: the loop divides the WHOLE avg_proto once per
        # class, i.e. by prod_k count(k) = (number of sampled clients) ** num_classes.
        avg_proto = torch.zeros((self.task.num_global_classes, all_local_prototypes.shape[1]))
        num_local_prototypes = len(tensor_list)
        for proto_i in range(num_local_prototypes):
            avg_proto[y_list[proto_i]] += all_local_prototypes[proto_i, :]
        for class_i in range(self.task.num_global_classes):
            avg_proto /= y_list.count(class_i)

        # server.py:107-120: gap_k = min distance to another class's avg_proto.
        gap = torch.ones(self.task.num_global_classes) * 1e9

        for k1 in range(self.task.num_global_classes):
            for k2 in range(self.task.num_global_classes):
                if k1 > k2:
                    dis = torch.norm(avg_proto[k1] - avg_proto[k2], p=2)
                    gap[k1] = torch.min(gap[k1], dis)
                    gap[k2] = torch.min(gap[k2], dis)
        min_gap = torch.min(gap)
        for i in range(len(gap)):
            if gap[i] > torch.tensor(1e8):
                gap[i] = min_gap
        max_gap = torch.max(gap)

        self.last_avg_proto = avg_proto.clone()
        self.last_gap2 = min(max_gap.item(), 100)
        self.last_glb_losses = []
        # server.py:122-142: num_glb_epochs Adam steps on CE(-(dist + margin * onehot), y),
        # dist = sqrt(|p|^2 - 2 p.G + |G|^2) between every uploaded prototype p and every
        # global prototype G (no clamp: a negative rounding error gives NaN).
        for _ in range(self.num_glb_epochs):
            self.gp_optimizer.zero_grad()
            global_prototypes = self.trainable_prototypes.forward(row_id)

            features_square = torch.sum(torch.pow(all_local_prototypes, 2), 1, keepdim=True)
            centers_square = torch.sum(torch.pow(global_prototypes, 2), 1, keepdim=True)
            features_into_centers = torch.matmul(all_local_prototypes, global_prototypes.T)
            dist = features_square - 2 * features_into_centers + centers_square.T
            dist = torch.sqrt(dist)

            one_hot = F.one_hot(y, self.task.num_global_classes)
            gap2 = min(max_gap.item(), 100)

            dist = dist + one_hot * gap2
            glb_loss = 0
            glb_loss = nn.CrossEntropyLoss()(-dist, y)

            glb_loss.backward()
            self.gp_optimizer.step()
            self.last_glb_losses.append(glb_loss.item())

        # server.py:144-145: one forward per class (a 0-d class id, 1-D activations).
        for class_i in range(self.task.num_global_classes):
            self.global_prototype[class_i] = self.trainable_prototypes.forward(class_i).detach()

    def send_message(self):
        # server.py:147-153
        self.message_pool["server"] = {
            "global_prototype": self.global_prototype
        }


class FedTGPOpenFgl(OpenFglFederation):
    """FedTGPOpenFgl(subgraphs, num_classes, global_state=None, client_states=None,
    prototype_state=None, fedtgp_lambda=1, num_glb_epochs=10, lr_glb=1e-2, **common), common
    as OpenFglFederation. prototype_state: the Trainable_prototypes initial state_dict
    (None keeps PyTorch's init).

    train_round(sampled_clients=None) returns round, sampled_clients, server_message
    {'global_prototype': {class: [hid]}} ({} in round 0), uploads {cid: {'num_samples',
    'local_prototype'}}, local, local_prototype [per client], global_prototype
    {class: [hid]}, prototype_net (Trainable_prototypes state_dict), avg_proto [C, hid],
    margin (gap2, float), glb_losses [num_glb_epochs floats]. No 'global'."""
    client_cls = FedTGPClient
    server_cls = FedTGPServer
    has_global_model = False

    def __init__(self, subgraphs, num_classes, global_state=None, client_states=None, prototype_state=None,
                 fedtgp_lambda=DEFAULT_CONFIG["fedtgp_lambda"], num_glb_epochs=10, lr_glb=1e-2, **common):
        self.config = dict(DEFAULT_CONFIG, fedtgp_lambda=fedtgp_lambda)
        self.num_glb_epochs, self.lr_glb = num_glb_epochs, lr_glb
        super().__init__(subgraphs, num_classes, global_state, client_states=client_states, **common)
        if prototype_state is not None:
            # In place: gp_optimizer keeps pointing at the same Parameters.
            self.server.trainable_prototypes.load_state_dict(prototype_state)

    def make_client(self, client_id, data, input_dim):
        client = super().make_client(client_id, data, input_dim)
        client.config = self.config
        return client

    def make_server(self, input_dim):
        return self.server_cls(self.args, self.message_pool, input_dim, self.num_classes,
                               num_glb_epochs=self.num_glb_epochs, lr_glb=self.lr_glb)

    def extra_state(self):
        return {'local_prototype': [copy_value(c.local_prototype, self.param_names) for c in self.clients],
                'global_prototype': copy_value(self.server.global_prototype, self.param_names),
                'prototype_net': clone_state(self.server.trainable_prototypes),
                'avg_proto': self.server.last_avg_proto.clone(),
                'margin': self.server.last_gap2,
                'glb_losses': list(self.server.last_glb_losses)}
