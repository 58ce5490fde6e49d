"""OpenFGL's FedGTA, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768, files
openfgl/flcore/fedgta/client.py, server.py, _utils.py and fedgta_config.py, on top of
methods/reference/openfgl.py (GCN, NodeClsTask, BaseClient/BaseServer) and PyG's
LabelPropagation / degree (methods/reference/pyg.py).

Nothing is drawn besides the GCN's dropout (a constructor argument; tests use 0): with
dropout 0 a round is deterministic.

Changes from upstream (nothing else):
  * The module-level `config` becomes the per-federation dict `self.config` (same keys and
    defaults), given as constructor arguments.
  * The server's personalised models (`aggregated_models`, deep copies of the server model
    made in its constructor) are copies of the INJECTED global state (upstream: of the
    seeded initial model, which is the same model); they can also be injected
    (`personalized_states`) for a federation that starts at first_round > 0.
  * The server keeps what its execute() computes in locals (the similarity vectors and the
    accepted lists) as attributes, so that train_round can return them. No effect.
"""
import copy
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.openfgl import BaseClient, BaseServer, OpenFglFederation, clone_state  # noqa: E402
from methods.reference.pyg import LabelPropagation, degree  # noqa: E402

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedgta/fedgta_config.py:1-13
supported_moment_type = ["raw", "central", "hybrid"]

DEFAULT_CONFIG = {
    "prop_steps": 5,
    "lp_alpha": 0.5,
    "temperature": 20,
    "num_moments": 10,
    "moment_type": "hybrid",
    "accept_alpha": 0.5
}


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedgta/_utils.py:4-5
def info_entropy_rev(vec, num_neig, eps=1e-8):
    """sum(num_neig) * C / e + sum_i num_neig_i * sum_c vec_ic * log(vec_ic + eps).
    num_neig is a long tensor: the first term is an exact integer times exp(-1) in float32."""
    return (num_neig.sum()) * vec.shape[1] * math.exp(-1) + torch.sum(torch.multiply(num_neig, torch.sum(torch.multiply(vec, torch.log(vec + eps)), dim=1)))


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedgta/_utils.py:8-10
def raw_moment(x: torch.Tensor, moment, dim=0):
    tmp = torch.pow(x, moment)
    return torch.mean(tmp, dim=dim)


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedgta/_utils.py:12-19
def central_moment(x: torch.Tensor, moment, dim=0):
    tmp = torch.mean(x, dim=dim)
    if dim == 0:
        tmp = x - tmp.view(1, -1)
    else:
        tmp = x - tmp.view(-1, 1)
    tmp = torch.pow(tmp, moment)
    return torch.mean(tmp, dim=dim)


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedgta/_utils.py:23-55
def compute_moment(x, num_moments=5, dim="h", moment_type="raw"):
    """dim 'v': moments over the nodes (dim 0) -> [num_moments, C] (row p-1 = p-th moment);
    'hybrid' stacks raw then central -> [2 * num_moments, C]."""
    if moment_type == "raw":
        if dim not in ["h", "v"]:
            raise ValueError
        else:
            if dim == "h":
                dim = 1
            else:
                dim = 0
        moment_type = raw_moment
        moment_list = []
        for p in range(num_moments):
            moment_list.append(moment_type(x, moment=p + 1, dim=dim).view(1, -1))
        moment_tensor = torch.cat(moment_list)
        return moment_tensor
    elif moment_type == "central":
        if dim not in ["h", "v"]:
            raise ValueError
        else:
            if dim == "h":
                dim = 1
            else:
                dim = 0
        moment_type = central_moment
        moment_list = []
        for p in range(num_moments):
            moment_list.append(moment_type(x, moment=p + 1, dim=dim).view(1, -1))
        moment_tensor = torch.cat(moment_list)
        return moment_tensor
    elif moment_type == "hybrid":
        o_ = compute_moment(x, num_moments, dim, moment_type="raw")
        m_ = compute_moment(x, num_moments, dim, moment_type="central")
        return torch.cat((o_, m_))


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedgta/client.py:13-100
class FedGTAClient(BaseClient):
    config = DEFAULT_CONFIG

    def __init__(self, args, client_id, data, message_pool, input_dim, num_classes):
        # client.py:28-43 (personalized=True). self.config is the federation's: make_client
        # builds the client from a subclass whose class attribute `config` is that dict.
        super(FedGTAClient, self).__init__(args, client_id, data, message_pool, input_dim, num_classes, personalized=True)
        self.LP = LabelPropagation(num_layers=self.config["prop_steps"], alpha=self.config["lp_alpha"])
        # out-degree + in-degree (2 * degree for a graph stored in both directions), long
        self.num_neig = degree(data.edge_index[0], num_nodes=data.x.shape[0], dtype=torch.long) + degree(data.edge_index[1], num_nodes=data.x.shape[0], dtype=torch.long)
        self.train_label_onehot = F.one_hot(self.task.data.y[self.task.train_mask].view(-1), self.task.num_global_classes).to(torch.float)
        # filled by fedgta_postprocess (the last three are kept for inspection only)
        self.lp_moment_v = None
        self.agg_w = None
        self.soft_label = None
        self.lp_output = None
        self.output_raw = None
        self.output_dis = None

    def execute(self):
        # client.py:47-63: the personalised aggregate when the server sent one, else the
        # global weights (round 0, the only round whose message has "weight").
        if f"personalized_{self.client_id}" in self.message_pool["server"]:
            with torch.no_grad():
                for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"][f"personalized_{self.client_id}"]):
                    local_param.data.copy_(global_param)
        else:
            with torch.no_grad():
                for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                    local_param.data.copy_(global_param)

        self.task.train()
        self.fedgta_postprocess()

    def fedgta_postprocess(self):
        # client.py:67-86. Eval-mode logits of the model AFTER local training; LP seeds are the
        # model's soft labels of the train nodes (not the true labels); the true one-hot labels
        # overwrite the train rows only after the LP and the softmaxes.
        logits = self.task.evaluate(mute=True)["logits"]
        soft_label = F.softmax(logits.detach(), dim=1)
        output = self.LP.forward(y=soft_label, edge_index=self.task.data.edge_index, mask=self.task.train_mask)
        output_raw = F.softmax(output, dim=1)
        output_dis = F.softmax(output / self.config["temperature"], dim=1)

        output_raw[self.task.train_mask] = self.train_label_onehot
        output_dis[self.task.train_mask] = self.train_label_onehot
        lp_moment_v = compute_moment(x=output_raw, num_moments=self.config["num_moments"], dim="v", moment_type=self.config["moment_type"])
        self.lp_moment_v = lp_moment_v.view(-1)
        self.agg_w = info_entropy_rev(output_dis, self.num_neig)
        # (port only) kept for inspection
        self.soft_label, self.lp_output, self.output_raw, self.output_dis = soft_label, output, output_raw, output_dis

    def send_message(self):
        # client.py:90-100
        self.message_pool[f"client_{self.client_id}"] = {
            "num_samples": self.task.num_samples,
            "weight": list(self.task.model.parameters()),
            "lp_moment_v": self.lp_moment_v,
            "agg_w": self.agg_w
        }


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fedgta/server.py:7-97
class FedGTAServer(BaseServer):
    config = DEFAULT_CONFIG

    def __init__(self, args, message_pool, input_dim, num_classes):
        # server.py:20-32
        super(FedGTAServer, self).__init__(args, message_pool, input_dim, num_classes, personalized=True)
        self.aggregated_models = [copy.deepcopy(self.task.model) for _ in range(self.args.num_clients)]
        # (port only) the locals of the last execute()
        self.last_sim = {}
        self.last_agg_client_list = {}

    def switch_personalized_global_model(self, client_id):
        # server.py:36-52 (never called by the trainer; ported for completeness)
        if f"personalized_{client_id}" in self.message_pool["server"]:
            with torch.no_grad():
                for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"][f"personalized_{client_id}"]):
                    local_param.data.copy_(global_param)
        else:
            with torch.no_grad():
                for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                    local_param.data.copy_(global_param)

    def execute(self):
        # server.py:55-81. For each sampled src: sim[t] = cos(moments_src, moments_t) over the
        # sampled t (itself included, sim 1), accepted iff sim > accept_alpha (strict), in sampled
        # order; aggregated_models[src] = sum_t agg_w_t / sum(agg_w) * weight_t (python sum
        # 0 + w_0 + w_1 ..., float32 0-dim tensors). The server's own model is never touched.
        agg_client_list = {}
        self.last_sim = {}
        for client_id in self.message_pool["sampled_clients"]:
            agg_client_list[client_id] = []
            sim = torch.tensor([torch.cosine_similarity(self.message_pool[f"client_{client_id}"]["lp_moment_v"],
                                                        self.message_pool[f"client_{target_id}"]["lp_moment_v"], dim=0)
                                for target_id in self.message_pool["sampled_clients"]])
            accept_idx = torch.where(sim > self.config["accept_alpha"])
            agg_client_list[client_id] = [self.message_pool["sampled_clients"][idx] for idx in accept_idx[0].tolist()]
            self.last_sim[client_id] = sim
        self.last_agg_client_list = agg_client_list

        for src, clients_list in agg_client_list.items():
            with torch.no_grad():
                tot_w = [self.message_pool[f"client_{client_id}"]["agg_w"] for client_id in clients_list]
                for it, client_id in enumerate(clients_list):
                    weight = tot_w[it] / sum(tot_w)
                    for (local_param, global_param) in zip(self.message_pool[f"client_{client_id}"]["weight"], self.aggregated_models[src].parameters()):
                        if it == 0:
                            global_param.data.copy_(weight * local_param)
                        else:
                            global_param.data += weight * local_param

    def send_message(self):
        # server.py:84-97: round 0 -> {"weight"}; later rounds -> {"personalized_<id>"} for the
        # round's sampled clients only (no "weight" key any more).
        if self.message_pool["round"] == 0:
            self.message_pool["server"] = {
                "weight": list(self.task.model.parameters())
            }
        else:
            self.message_pool["server"] = {}
            for client_id in self.message_pool["sampled_clients"]:
                self.message_pool["server"][f'personalized_{client_id}'] = list(self.aggregated_models[client_id].parameters())


class FedGTAOpenFgl(OpenFglFederation):
    """FedGTAOpenFgl(subgraphs, num_classes, global_state=None, prop_steps=5, lp_alpha=0.5,
    temperature=20, num_moments=10, moment_type='hybrid', accept_alpha=0.5,
    personalized_states=None, **common), common as OpenFglFederation (client_states=None,
    hid_dim=64, num_layers=2, dropout=0.5, lr=1e-2, weight_decay=5e-4, num_epochs=3,
    first_round=0, evaluation_mode=...). personalized_states: per client, the initial state of
    the server's aggregated_models[i] (default: global_state).

    train_round(sampled_clients=None) returns round, sampled_clients, server_message
    ({'weight'} in round 0, else {'personalized_<id>'} for the sampled ids), uploads {cid:
    {'num_samples', 'weight', 'lp_moment_v' [2 * num_moments * C], 'agg_w' (0-dim)}}, local
    (every client's GCN), global (the server GCN: never updated by FedGTA), and
      personalized: [per client the state of aggregated_models[i] after the round]
      similarity: {src: float32 [len(sampled)] cosine similarities, in sampled order}
      accepted: {src: [client ids aggregated into src's model]}
      soft_label / lp_output / output_raw / output_dis / lp_moment_v / agg_w: per client
        (None before its first training) the tensors of its last postprocess: softmax of
        the eval logits [n, C], the LP output [n, C], softmax(LP) and softmax(LP / T) with the
        train rows replaced by the one-hot labels, the moments and the aggregation weight."""
    client_cls = FedGTAClient
    server_cls = FedGTAServer

    def __init__(self, subgraphs, num_classes, global_state=None, prop_steps=DEFAULT_CONFIG["prop_steps"],
                 lp_alpha=DEFAULT_CONFIG["lp_alpha"], temperature=DEFAULT_CONFIG["temperature"],
                 num_moments=DEFAULT_CONFIG["num_moments"], moment_type=DEFAULT_CONFIG["moment_type"],
                 accept_alpha=DEFAULT_CONFIG["accept_alpha"], personalized_states=None, **common):
        assert moment_type in supported_moment_type, "Invalid value of argument 'moment_type' for FedGTA algorithm."
        self.config = dict(DEFAULT_CONFIG, prop_steps=prop_steps, lp_alpha=lp_alpha, temperature=temperature,
                           num_moments=num_moments, moment_type=moment_type, accept_alpha=accept_alpha)
        super().__init__(subgraphs, num_classes, global_state, **common)
        for i, model in enumerate(self.server.aggregated_models):
            state = personalized_states[i] if personalized_states is not None else global_state
            if state is not None:
                model.load_state_dict(state)

    def make_client(self, client_id, data, input_dim):
        cls = type('FedGTAClientWithConfig', (self.client_cls,), {'config': self.config})
        return cls(self.args, client_id, data, self.message_pool, input_dim, self.num_classes)

    def make_server(self, input_dim):
        server = super().make_server(input_dim)
        server.config = self.config
        return server

    def extra_state(self):
        def cp(t):
            return None if t is None else t.detach().clone()
        out = {'personalized': [clone_state(m) for m in self.server.aggregated_models],
               'similarity': {k: v.clone() for k, v in self.server.last_sim.items()},
               'accepted': copy.deepcopy(self.server.last_agg_client_list)}
        for key in ('soft_label', 'lp_output', 'output_raw', 'output_dis', 'lp_moment_v', 'agg_w'):
            out[key] = [cp(getattr(c, key)) for c in self.clients]
        return out
