"""Line-by-line plain-PyTorch port of the authors' LG-FedAvg, used as a test oracle.

Upstream: https://github.com/pliang279/LG-FedAvg (Liang et al., "Think Locally, Act Globally:
Federated Learning with Local and Global Representations", 2020), HEAD commit
7af0568b2cae88922ebeacc021b1679815092f4e ("7af0568" below). Files ported: main_lg.py (the LG
round: which keys are global, local training of the sampled clients, averaging, broadcast),
models/Update.py (LocalUpdate.train), models/Nets.py (the weight_keys convention),
utils/options.py (defaults). Every block names its upstream file:line.

Graph adaptation (not upstream): each client's model is a 2-layer GCN (GCNConv -> ReLU -> dropout
-> GCNConv, methods/reference/pyg.py) run full-batch on its subgraph; one local epoch is one SGD
step on the whole subgraph (upstream: one pass of size-10 mini-batches), CE over the train nodes.
weight_keys follows models/Nets.py:22-27 (MLP: one [weight, bias] pair per layer, input to
output): [['conv1.lin.weight', 'conv1.bias'], ['conv2.lin.weight', 'conv2.bias']]. The global
(shared) keys are the LAST num_layers_keep pairs (main_lg.py:45-47); the default 1 shares conv2,
the classifier, which is FedGKC's "same classifier for all clients" (FedGKC Sec. IV-A2); conv1
(the representation) stays private.

Deliberate differences from upstream, nothing else is changed:
  * CPU only. Initial weights are injected (local_states): upstream starts every client from a
    copy of a FedAvg-pretrained model (main_lg.py:40-43, 59-62, --load_fed is required); that
    pretraining run (main_fed.py) is not ported; pass identical states to mimic it.
  * The sampled clients are an argument of train_round (upstream np.random.choice of
    max(int(frac * num_users), 1) clients, main_lg.py:87-88; default here: all, in id order).
  * The evaluation / best-model bookkeeping of main_lg.py:119-150 never feeds back into training
    and is not ported (evaluate() gives per-client accuracies instead).
  * weighting='nodes' (not upstream; the FedGKC note's PROPOSAL) averages the global keys with
    node-count weights in OpenFGL's FedAvg form; the default 'uniform' is upstream.
  * Dropout draws from torch's global RNG; bit-exact comparisons use dropout=0.
  * head='linear' (not upstream; the FedGKC note's PROPOSAL, which our C++ takes: a GCN layer and
    a shared Linear(hid -> C) head, our "gcn:layers=2,jk=last") puts a plain linear layer in
    conv2's place, under the same keys (conv2.lin.weight [C, hid], conv2.bias [C]); the default
    'conv' keeps the GCNConv.
"""
import copy
import itertools
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))


# The graph adaptation (methods/reference/gcn.py).
from methods.reference.gcn import GCN, evaluate_clients  # noqa: E402

# Its layers, input first: the graph counterpart of @7af0568 models/Nets.py:22-27.
GCN_WEIGHT_KEYS = [['conv1.lin.weight', 'conv1.bias'],
                   ['conv2.lin.weight', 'conv2.bias']]


class LinearHead(nn.Module):
    """head='linear': x W^T + b without propagation, under GCNConv's keys lin.weight [C, hid], bias [C]."""

    def __init__(self, hid_dim, out_dim):
        super().__init__()
        self.lin = nn.Linear(hid_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))

    def forward(self, x, edge_index):
        return self.lin(x) + self.bias


def make_gcn(state, dropout, head='conv'):
    """GCN.from_state, with head='linear' a LinearHead as conv2 (see the module docstring)."""
    if head == 'conv':
        return GCN.from_state(state, dropout)
    assert head == 'linear', head
    hid, feat = state['conv1.lin.weight'].shape
    model = GCN(feat, hid, state['conv2.lin.weight'].shape[0], dropout)
    model.conv2 = LinearHead(hid, state['conv2.lin.weight'].shape[0])
    model.load_state_dict(state)
    return model


# @7af0568 main_lg.py:45-47
def global_keys(weight_keys, num_layers_keep):
    """The keys of the last num_layers_keep layers of weight_keys, flattened in order."""
    total_num_layers = len(weight_keys)
    w_glob_keys = weight_keys[total_num_layers - num_layers_keep:]
    return list(itertools.chain.from_iterable(w_glob_keys))


# @7af0568 models/Update.py:25-58 LocalUpdate
class LocalUpdate:
    """CrossEntropyLoss; train(): net.train(), a NEW SGD(lr, momentum=0.5) every call (momentum is
    hard-coded: args.momentum is unused; no weight decay), local_ep epochs of zero_grad / forward /
    CE / backward / step over ALL parameters (global and local keys alike). Returns
    (net.state_dict(), mean over epochs of the mean batch loss)."""

    def __init__(self, subgraph, local_ep):
        self.loss_func = nn.CrossEntropyLoss()
        self.subgraph = subgraph
        self.local_ep = local_ep

    def train(self, net, lr=0.1):
        net.train()
        optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.5)
        g = self.subgraph
        epoch_loss = []
        for _ in range(self.local_ep):
            batch_loss = []
            # graph adaptation: the one batch is the whole subgraph; CE over its train nodes
            net.zero_grad()
            log_probs = net(g.x, g.edge_index)[1]
            loss = self.loss_func(log_probs[g.train_idx], g.y[g.train_idx])
            loss.backward()
            optimizer.step()
            batch_loss.append(loss.item())
            epoch_loss.append(sum(batch_loss) / len(batch_loss))
        return net.state_dict(), sum(epoch_loss) / len(epoch_loss)


def _clone_state(module_or_state):
    state = module_or_state.state_dict() if isinstance(module_or_state, nn.Module) else module_or_state
    return {k: v.detach().clone() for k, v in state.items()}


class LgFedAvgReference:
    """LG-FedAvg on graphs, one round (upstream `iter` of main_lg.py:84) per train_round().

    subgraphs: objects with x [n, F] float32, edge_index [2, E] int64 (both directions), y [n]
      int64, train_idx / val_idx / test_idx bool [n].
    local_states[k]: client k's initial model (net_local_list[k]); every client's global keys must
      have the same shapes (with conv2 shared: the same hidden width and class count).
    Hyper-parameters, upstream utils/options.py defaults: lr 0.01, local_ep 5, num_layers_keep 1
      (SGD momentum 0.5 is hard-coded in Update.py:36; the README runs use lr 0.05 / 0.1,
      local_ep 1, num_layers_keep 3 / 2).
    """

    def __init__(self, subgraphs, num_classes, local_states, dropout=0.5, lr=0.01, local_ep=5, num_layers_keep=1,
                 weighting='uniform', head='conv'):
        assert len(local_states) == len(subgraphs)
        assert weighting in ('uniform', 'nodes')
        self.subgraphs = subgraphs
        self.num_users = len(subgraphs)
        self.num_classes = num_classes
        self.lr = lr
        self.local_ep = local_ep
        self.weighting = weighting
        self.round = 0
        self.net_local_list = [make_gcn(_clone_state(s), dropout, head) for s in local_states]
        for net in self.net_local_list:
            assert net.conv2.lin.weight.shape[0] == num_classes
        self.w_glob_keys = global_keys(GCN_WEIGHT_KEYS, num_layers_keep)

    def train_round(self, sampled_clients=None):
        """@7af0568 main_lg.py:85-117. sampled_clients: ids in the order they train and are summed
        (default all, in id order). Returns copies:
          round, sampled_clients, global_keys,
          uploads: {cid: {global key: tensor}} the trained global layers of each sampled client,
          trained: {cid: full state_dict} of each sampled client right after local training,
          global: {global key: tensor} the average (main_lg.py:107-109),
          local: per client (ALL clients), the state_dict after the broadcast,
          losses: {cid: mean training loss} (Update.py:58).
        """
        idxs_users = list(range(self.num_users)) if sampled_clients is None else list(sampled_clients)
        m = len(idxs_users)
        w_keys_epoch = self.w_glob_keys
        w_glob = {}
        loss_locals = []
        out = {'round': self.round, 'sampled_clients': idxs_users, 'global_keys': list(w_keys_epoch),
               'uploads': {}, 'trained': {}, 'losses': {}}
        for idx in idxs_users:  # main_lg.py:91-103
            local = LocalUpdate(self.subgraphs[idx], self.local_ep)
            net_local = self.net_local_list[idx]
            w_local, loss = local.train(net=net_local, lr=self.lr)
            loss_locals.append(copy.deepcopy(loss))
            out['trained'][idx] = _clone_state(w_local)
            out['uploads'][idx] = {k: w_local[k].detach().clone() for k in w_keys_epoch}
            out['losses'][idx] = loss
            if self.weighting == 'uniform':
                # sum up weights: the first client's state is deep-copied WHOLE (its local keys
                # ride along but are never divided nor sent); later clients add the global keys.
                if len(w_glob) == 0:
                    w_glob = copy.deepcopy(w_local)
                else:
                    for k in w_keys_epoch:
                        w_glob[k] += w_local[k]
        if self.weighting == 'uniform':
            # get weighted average for global weights (main_lg.py:107-109): an UNWEIGHTED mean
            # over the sampled clients, float32 sum in sampled order then divided by m
            for k in w_keys_epoch:
                w_glob[k] = torch.div(w_glob[k], m)
        else:
            # not upstream: OpenFGL FedAvg form, w_k = n_k / sum n (Python double) times the tensor
            total = sum(self.subgraphs[i].x.size(0) for i in idxs_users)
            for j, idx in enumerate(idxs_users):
                weight = self.subgraphs[idx].x.size(0) / total
                for k in w_keys_epoch:
                    if j == 0:
                        w_glob[k] = weight * out['trained'][idx][k]
                    else:
                        w_glob[k] = w_glob[k] + weight * out['trained'][idx][k]
        # copy weights to each local model (main_lg.py:111-117): ALL users, sampled or not
        for idx in range(self.num_users):
            net_local = self.net_local_list[idx]
            w_local = net_local.state_dict()
            for k in w_keys_epoch:
                w_local[k] = w_glob[k]
            net_local.load_state_dict(w_local)
        out['global'] = {k: w_glob[k].detach().clone() for k in w_keys_epoch}
        out['local'] = [_clone_state(net) for net in self.net_local_list]
        self.round += 1
        return out

    def evaluate(self):
        """Accuracy (%) of each client's model (private layers + shared layers) on its own subgraph,
        eval mode. 'val' / 'test': node-count-weighted means; '*_unweighted': plain means (upstream
        test_img_local_all reports the plain mean over users, models/test.py:91-104)."""
        return evaluate_clients(self.net_local_list, self.subgraphs)
