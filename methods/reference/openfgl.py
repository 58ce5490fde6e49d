"""What every OpenFGL method shares, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768 (HEAD), files
openfgl/model/gcn.py (GCN), openfgl/task/base.py + openfgl/task/node_cls.py
(NodeClsTask: model, Adam, loss, train and evaluate loops), openfgl/utils/metrics.py
(accuracy), openfgl/flcore/base.py (BaseClient / BaseServer), openfgl/flcore/trainer.py
(one round of FGLTrainer.train and FGLTrainer.evaluate), openfgl/config.py (defaults).
Every port names its upstream `file:line`. The methods' own client.py / server.py are
ported in methods/<m>/reference/<m>_openfgl.py on top of this module.

Deliberate differences from upstream (nothing else is changed):
  * CPU only (upstream: cuda:{gpuid} when available); `.to(device)` is dropped.
  * The clients' subgraphs and train/val/test masks are given (upstream loads them from
    its dataset directory, splitting at random on first use). Only the defaults
    scenario='subgraph_fl', task='node_cls', processing='raw' (so processed_data is
    splitted_data), dp_mech='no_dp', optim='adam', model=['gcn'] are ported.
  * Initial weights are injected: the server's global model from `global_state`, each
    client's own model from `client_states[i]` (or `global_state` when that is None).
    Upstream draws all of them from the seeded torch RNG.
  * The sampled clients of a round are an argument (default: all, sorted, which is what
    upstream's `sorted(random.sample(range(n), int(n * client_frac)))` gives for the
    default client_frac=1.0).
  * Prints, the logger and file output are dropped; the values are returned instead.
  * Evaluation is ported for the 'accuracy' metric (README's `args.metrics = ["accuracy"]`)
    and the modes local_model_on_local_data (the default) and global_model_on_local_data;
    the two *_on_global_data modes need upstream's global graph and are not ported.
"""
import argparse
import copy
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Adam

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from methods.reference.pyg import Data, GCNConv  # noqa: E402

UPSTREAM = 'xkLi-Allen/OpenFGL@5483768'

# xkLi-Allen/OpenFGL@5483768 openfgl/config.py:59-94 (the training/model defaults used here)
DEFAULTS = dict(
    num_epochs=3,        # config.py:79
    dropout=0.5,         # config.py:80
    lr=1e-2,             # config.py:81
    optim='adam',        # config.py:82 (the only optimizer NodeClsTask knows)
    weight_decay=5e-4,   # config.py:83
    num_layers=2,        # config.py:89
    hid_dim=64,          # config.py:90
    evaluation_mode='local_model_on_local_data',  # config.py:94
)


def make_args(**overrides):
    """An `args` namespace with upstream's attribute names, as the ported code reads them."""
    values = dict(DEFAULTS)
    values.update(dp_mech='no_dp', metrics=['accuracy'], processing='raw', client_frac=1.0)
    unknown = set(overrides) - set(values) - {'num_clients'}
    if unknown:
        raise TypeError(f'unknown args: {sorted(unknown)}')
    values.update(overrides)
    return argparse.Namespace(**values)


# xkLi-Allen/OpenFGL@5483768 openfgl/model/gcn.py:5-30
class GCN(nn.Module):
    """state_dict (num_layers=2): layers.0.bias [hid], layers.0.lin.weight [hid, in],
    layers.1.bias [out], layers.1.lin.weight [out, hid]; parameters() yields them in
    that order. forward returns (embedding, logits): embedding is the input of the last
    layer, i.e. relu(conv0(x)) AFTER dropout (identity in eval mode); with num_layers=1
    it is the raw input x."""

    def __init__(self, input_dim, hid_dim, output_dim, num_layers=2, dropout=0.5):
        super(GCN, self).__init__()
        self.num_layers = num_layers
        self.dropout = dropout

        self.layers = nn.ModuleList()
        if num_layers > 1:
            self.layers.append(GCNConv(input_dim, hid_dim))
            for _ in range(num_layers - 2):
                self.layers.append(GCNConv(hid_dim, hid_dim))
            self.layers.append(GCNConv(hid_dim, output_dim))
        else:
            self.layers.append(GCNConv(input_dim, output_dim))

    def forward(self, data):
        x, edge_index = data.x, data.edge_index

        for i, layer in enumerate(self.layers[:-1]):
            x = layer(x, edge_index)
            x = F.relu(x)
            x = F.dropout(x, p=self.dropout, training=self.training)

        logits = self.layers[-1](x, edge_index)

        return x, logits


# xkLi-Allen/OpenFGL@5483768 openfgl/utils/metrics.py:10-47 (multi-class logits, 'accuracy' only)
def compute_accuracy(logits, labels):
    """sklearn accuracy_score(labels, argmax): fraction in [0, 1] (not %). torch.max
    picks the first index among ties. An empty mask gives nan here."""
    if labels.numel() == 0:
        return float('nan')
    _, preds = torch.max(logits, 1)
    return (preds == labels).double().mean().item()


class NodeClsTask:
    """openfgl/task/base.py BaseTask + openfgl/task/node_cls.py NodeClsTask.

    data: an object with x [n, F] float32, edge_index [2, E] int64, y [n] int64 and
    bool masks train_idx / val_idx / test_idx; None for the server (model only).
    Created once per client: the Adam optimizer and its moments live as long as the
    client (they are NOT reset between rounds)."""

    def __init__(self, args, client_id, data, input_dim, num_classes):
        # xkLi-Allen/OpenFGL@5483768 openfgl/task/base.py:30-45
        self.client_id = client_id
        self.args = args
        self.num_global_classes = num_classes  # node_cls.py:195-203 (data.num_global_classes)
        self.data = None
        if data is not None:
            self.data = Data(x=data.x, edge_index=data.edge_index, y=data.y)
            self.load_train_val_test_split(data)
        # Upstream builds the model and optimizer only when data is not None; the server
        # always has its global_data, so its task has a model (and an unused optimizer) too.
        self.model = self.default_model(input_dim)
        self.optim = Adam(self.model.parameters(), lr=self.args.lr, weight_decay=self.args.weight_decay)

        self.override_evaluate = None
        self.step_preprocess = None

    # xkLi-Allen/OpenFGL@5483768 openfgl/task/node_cls.py:262-346, with the masks given.
    def load_train_val_test_split(self, data):
        self.train_mask = data.train_idx.bool()
        self.val_mask = data.val_idx.bool()
        self.test_mask = data.test_idx.bool()
        self.splitted_data = {
            "data": self.data,
            "train_mask": self.train_mask,
            "val_mask": self.val_mask,
            "test_mask": self.test_mask
        }
        # processing='raw': processed_data is splitted_data (openfgl/data/processing.py:30-31)
        self.processed_data = self.splitted_data

    # xkLi-Allen/OpenFGL@5483768 openfgl/task/node_cls.py:48-79 (dp_mech='no_dp')
    def train(self, splitted_data=None):
        if splitted_data is None:
            splitted_data = self.processed_data  # use processed_data to train model
        else:
            names = ["data", "train_mask", "val_mask", "test_mask"]
            for name in names:
                assert name in splitted_data

        self.model.train()
        for _ in range(self.args.num_epochs):
            self.optim.zero_grad()
            embedding, logits = self.model.forward(splitted_data["data"])
            loss_train = self.loss_fn(embedding, logits, splitted_data["data"].y, splitted_data["train_mask"])
            loss_train.backward()

            if self.step_preprocess is not None:
                self.step_preprocess()

            self.optim.step()

    # xkLi-Allen/OpenFGL@5483768 openfgl/task/node_cls.py:82-136 (metrics=['accuracy'], mute)
    def evaluate(self, splitted_data=None, mute=True):
        """Current model in eval() on the whole graph under no_grad. Returns embedding,
        logits, loss_{train,val,test} (via self.loss_fn, i.e. a method's custom loss
        once it has installed one) and accuracy_{train,val,test}."""
        if self.override_evaluate is None:
            if splitted_data is None:
                splitted_data = self.splitted_data  # use splitted_data to evaluate model
            else:
                names = ["data", "train_mask", "val_mask", "test_mask"]
                for name in names:
                    assert name in splitted_data

            eval_output = {}
            self.model.eval()
            with torch.no_grad():
                embedding, logits = self.model.forward(splitted_data["data"])
                loss_train = self.loss_fn(embedding, logits, splitted_data["data"].y, splitted_data["train_mask"])
                loss_val = self.loss_fn(embedding, logits, splitted_data["data"].y, splitted_data["val_mask"])
                loss_test = self.loss_fn(embedding, logits, splitted_data["data"].y, splitted_data["test_mask"])

            eval_output["embedding"] = embedding
            eval_output["logits"] = logits
            eval_output["loss_train"] = loss_train
            eval_output["loss_val"] = loss_val
            eval_output["loss_test"] = loss_test

            y = splitted_data["data"].y
            for suffix in ("train", "val", "test"):
                mask = splitted_data[f"{suffix}_mask"]
                eval_output[f"accuracy_{suffix}"] = compute_accuracy(logits[mask], y[mask])
            return eval_output
        else:
            return self.override_evaluate(splitted_data, mute)

    # xkLi-Allen/OpenFGL@5483768 openfgl/task/node_cls.py:138-151. A method replaces it
    # by assigning `task.loss_fn = ...` (an instance attribute), as upstream does.
    def loss_fn(self, embedding, logits, label, mask):
        return self.default_loss_fn(logits[mask], label[mask])

    # xkLi-Allen/OpenFGL@5483768 openfgl/task/node_cls.py:153-161 + utils/task_utils.py:44-70
    def default_model(self, input_dim):
        return GCN(input_dim=input_dim, hid_dim=self.args.hid_dim, output_dim=self.num_global_classes,
                   num_layers=self.args.num_layers, dropout=self.args.dropout)

    # xkLi-Allen/OpenFGL@5483768 openfgl/task/node_cls.py:175-183: ALL nodes of the
    # subgraph, not the train nodes. This is every method's aggregation weight.
    @property
    def num_samples(self):
        return self.data.x.shape[0]

    # xkLi-Allen/OpenFGL@5483768 openfgl/task/node_cls.py:205-216 (dp_mech='no_dp')
    @property
    def default_loss_fn(self):
        return nn.CrossEntropyLoss()


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/base.py:6-48
class BaseClient:
    def __init__(self, args, client_id, data, message_pool, input_dim, num_classes, personalized=False):
        self.args = args
        self.client_id = client_id
        self.message_pool = message_pool
        self.task = NodeClsTask(args, client_id, data, input_dim, num_classes)
        self.personalized = personalized

    def execute(self):
        raise NotImplementedError

    def send_message(self):
        raise NotImplementedError


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/base.py:52-92
class BaseServer:
    def __init__(self, args, message_pool, input_dim, num_classes, personalized=False):
        self.args = args
        self.message_pool = message_pool
        self.task = NodeClsTask(args, None, None, input_dim, num_classes)
        self.personalized = personalized

    def execute(self):
        raise NotImplementedError

    def send_message(self):
        raise NotImplementedError


def clone_state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def copy_value(value, param_names):
    """Detached copy of a message value: a tensor list parallel to model.parameters()
    becomes {param name: tensor}; dicts are copied key by key; scalars as they are."""
    if torch.is_tensor(value):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        if len(value) == len(param_names) and all(torch.is_tensor(v) for v in value):
            return {n: v.detach().clone() for n, v in zip(param_names, value)}
        return [copy_value(v, param_names) for v in value]
    if isinstance(value, dict):
        return {k: copy_value(v, param_names) for k, v in value.items()}
    return copy.deepcopy(value)


class OpenFglFederation:
    """Drives one OpenFGL method round by round (FGLTrainer.train's loop body).

    Subclasses set client_cls / server_cls (ports of the method's client.py / server.py)
    and may extend `extra_state()` with method state to return.

    subgraphs: per client, x [n, F] float32, edge_index [2, E] int64 (both directions),
      y [n] int64, train_idx / val_idx / test_idx bool [n].
    global_state: the server model's initial state_dict (GCN keys above); None keeps
      PyTorch's init. client_states: per client, its own model's initial state_dict;
      None uses global_state for every client (it only matters for methods that never
      copy the global weights into the clients: FedProto, FedTGP).
    first_round: the round id of the first train_round() (methods branch on round == 0).
    """
    client_cls = None
    server_cls = None
    has_global_model = True  # False: the server model is never updated (prototype methods)

    def __init__(self, subgraphs, num_classes, global_state=None, client_states=None, hid_dim=64,
                 num_layers=2, dropout=0.5, lr=1e-2, weight_decay=5e-4, num_epochs=3, first_round=0,
                 evaluation_mode='local_model_on_local_data'):
        self.subgraphs = subgraphs
        self.num_classes = num_classes
        self.num_clients = len(subgraphs)
        self.args = make_args(hid_dim=hid_dim, num_layers=num_layers, dropout=dropout, lr=lr,
                              weight_decay=weight_decay, num_epochs=num_epochs,
                              evaluation_mode=evaluation_mode, num_clients=len(subgraphs))
        input_dim = subgraphs[0].x.shape[1]
        # xkLi-Allen/OpenFGL@5483768 openfgl/flcore/trainer.py:31-35: clients first, then server.
        self.message_pool = {}
        self.clients = [self.make_client(client_id, subgraphs[client_id], input_dim)
                        for client_id in range(self.num_clients)]
        self.server = self.make_server(input_dim)
        # Injected initial weights (load_state_dict copies in place: the optimizers keep
        # pointing at the same Parameter objects).
        if global_state is not None:
            self.server.task.model.load_state_dict(global_state)
        for client_id, client in enumerate(self.clients):
            state = client_states[client_id] if client_states is not None else global_state
            if state is not None:
                client.task.model.load_state_dict(state)
        self.param_names = [n for n, _ in self.server.task.model.named_parameters()]
        self.round = first_round
        # xkLi-Allen/OpenFGL@5483768 openfgl/flcore/trainer.py:37-41
        self.evaluation_result = {"best_round": 0, "best_val_accuracy": 0, "best_test_accuracy": 0}

    def make_client(self, client_id, data, input_dim):
        return self.client_cls(self.args, client_id, data, self.message_pool, input_dim, self.num_classes)

    def make_server(self, input_dim):
        return self.server_cls(self.args, self.message_pool, input_dim, self.num_classes)

    def extra_state(self):
        """Method state to return after a round (control variates, prototypes, ...)."""
        return {}

    def train_round(self, sampled_clients=None):
        """One round, xkLi-Allen/OpenFGL@5483768 openfgl/flcore/trainer.py:54-63. Returns copies:
          round: the round id; sampled_clients
          server_message: message_pool['server'] as the clients received it this round
          uploads: {client_id: message_pool['client_<id>']} right after its send_message
          local: per client (all clients), its model state_dict at the end of the round
          global: the server model's state_dict after server.execute() (absent when
            has_global_model is False)
          + extra_state() of the method.
        Tensor lists parallel to model.parameters() are returned as {param name: tensor}."""
        if sampled_clients is None:
            sampled_clients = list(range(self.num_clients))
        sampled_clients = sorted(sampled_clients)
        round_id = self.round
        out = {'round': round_id, 'sampled_clients': list(sampled_clients), 'uploads': {}}
        self.message_pool["round"] = round_id
        self.message_pool["sampled_clients"] = sampled_clients
        self.server.send_message()
        out['server_message'] = copy_value(self.message_pool["server"], self.param_names)
        for client_id in sampled_clients:
            self.clients[client_id].execute()
            self.clients[client_id].send_message()
            out['uploads'][client_id] = copy_value(self.message_pool[f"client_{client_id}"], self.param_names)
        self.server.execute()
        self.round += 1
        out['local'] = [clone_state(c.task.model) for c in self.clients]
        if self.has_global_model:
            out['global'] = clone_state(self.server.task.model)
        out.update(self.extra_state())
        return out

    def evaluate(self):
        """xkLi-Allen/OpenFGL@5483768 openfgl/flcore/trainer.py:72-169 for task='node_cls',
        metrics=['accuracy'], called (upstream) right after each round's server.execute().
        Every client (sampled or not) is evaluated; val/test accuracies are averaged with
        weight = the client's node count. Returns {'current_round', 'current_val_accuracy',
        'current_test_accuracy', 'clients': [per-client task.evaluate() without the
        embedding/logits tensors], 'best': the running best (by val, strictly greater)}."""
        evaluation_result = {"current_round": self.message_pool["round"],
                             "current_val_accuracy": 0, "current_test_accuracy": 0}
        tot_samples = 0
        clients = []
        for client_id in range(self.num_clients):
            if self.args.evaluation_mode == "local_model_on_local_data":
                num_samples = self.clients[client_id].task.num_samples
                result = self.clients[client_id].task.evaluate()
            elif self.args.evaluation_mode == "global_model_on_local_data":
                num_samples = self.clients[client_id].task.num_samples
                if self.server.personalized:
                    raise ValueError("personalized algorithm doesn't support global model evaluation.")
                result = self.server.task.evaluate(self.clients[client_id].task.splitted_data)
            else:
                raise NotImplementedError(self.args.evaluation_mode)
            clients.append({k: (v.item() if torch.is_tensor(v) and v.dim() == 0 else v)
                            for k, v in result.items() if k not in ("embedding", "logits")})
            evaluation_result["current_val_accuracy"] += result["accuracy_val"] * num_samples
            evaluation_result["current_test_accuracy"] += result["accuracy_test"] * num_samples
            tot_samples += num_samples
        evaluation_result["current_val_accuracy"] /= tot_samples
        evaluation_result["current_test_accuracy"] /= tot_samples
        if evaluation_result["current_val_accuracy"] > self.evaluation_result["best_val_accuracy"]:
            self.evaluation_result["best_val_accuracy"] = evaluation_result["current_val_accuracy"]
            self.evaluation_result["best_test_accuracy"] = evaluation_result["current_test_accuracy"]
            self.evaluation_result["best_round"] = evaluation_result["current_round"]
        evaluation_result["clients"] = clients
        evaluation_result["best"] = dict(self.evaluation_result)
        return evaluation_result
