"""Line-by-line plain-PyTorch port of D-FedGNN as FedEgo's baseline code runs it (test oracle).

Upstream: https://github.com/FedEgo/FedEgo at commit 534c1de ("update framework", 2022-08-25),
`--mode dfedgnn`; the D-FedGNN block of main.py is unchanged at HEAD 88887bb, and so are the
lines of Client.py and utils.py ported here. Files ported: main.py:387-409 (the round: local
training, then every client loads the ring average of its own and its two neighbours' trained
weights), utils.py:20-40 (fedavgJob / fedavgWork: E local epochs per client),
Client.py:11-46 (the client: its own model, one Adam created once) and Client.py:278-357
(supervisedTrain, the branch every mode outside the FedEgo family takes: no dropout, plain
cross-entropy on the classifier's log_softmax), models.py:75-77 (Classification's log_softmax),
options.py (defaults: lr 3e-4, client_train_epoch 5). Every block names its upstream file:line.
Not ported: the evaluation and early stopping (main.py:411-429, after the load; they never feed
back into training), data loading and splitting (dataCenter.py), the other modes.

Graph adaptation (not upstream, as the other GCN oracles: methods/reference/gcn.py): each client's
model is the 2-layer GCN (GCNConv -> ReLU -> dropout -> GCNConv) run full-batch on its subgraph;
one local epoch is one Adam step on the whole subgraph over the train nodes. Upstream's model is
FedEgo's (Linear+ReLU, 2 x SAGEConv+ReLU, bias-free classifier; models.py:11-77) on
NeighborLoader([6, 6]) mini-batches of 32 over n // 5 random pool nodes per epoch
(Client.py:56-99); the ring averaging and the optimiser do not depend on the model.

Deliberate differences from upstream, nothing else is changed:
  * CPU only (upstream cuda:0). Clients train one after another in id order (upstream: one
    thread each, fedavgWork; the clients share no state, so the order cannot matter except for
    the global RNGs, which the full-batch GCN does not draw from with dropout 0).
  * Initial weights are injected (initial_states, one per client; upstream: each Client draws its
    own kaiming_normal init from the global RNG, so the clients start apart).
  * Dropout: upstream's dfedgnn branch never applies its nn.Dropout (Client.py:329-341), so the
    default here is 0; a positive rate draws F.dropout masks from torch's global RNG.
"""
import copy
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.gcn import GCN  # noqa: E402


class Client:
    """One client (Client.py:11-46 for mode 'dfedgnn'): its own model and ONE Adam over it,
    created once and never reset; load_state_dict only overwrites the parameter values, so the
    Adam moments and step count run on across rounds."""

    def __init__(self, data, initial_state, lr, dropout):
        self.data = data                                   # Client.py:15
        self.model = GCN.from_state(copy.deepcopy(initial_state), dropout)  # graph adaptation
        # Client.py:45: torch.optim.Adam(self.parameters(), lr=lr): no weight decay.
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)

    # Client.py:278-357, the final `else` branch (every mode but fedego/_np/_nr/_ne): no dropout
    # call, `out = self.classification(x)[:b_size]` (log_softmax, models.py:75-77), then
    # F.cross_entropy(out, y) on those log-probabilities; zero_grad, backward, step per batch.
    # Full batch here (one batch = the train nodes), so the returned epoch loss
    # total_loss / total_examples is that batch's loss.
    def supervised_train(self):
        self.model.train()                                 # Client.py:279
        g = self.data
        self.optimizer.zero_grad()                         # Client.py:331
        _, logits = self.model(g.x, g.edge_index)
        out = torch.log_softmax(logits, 1)[g.train_idx]    # models.py:76, Client.py:340
        loss = F.cross_entropy(out, g.y[g.train_idx])      # Client.py:341
        loss.backward()                                    # Client.py:351
        self.optimizer.step()                              # Client.py:352
        return float(loss)                                 # Client.py:354-357

    def state_dict(self):
        return self.model.state_dict()

    def load_state_dict(self, state):
        self.model.load_state_dict(state)


# utils.py:20-24
def fedavg_job(client, client_train_epoch):
    """client_train_epoch epochs of supervisedTrain; the per-epoch losses."""
    return [client.supervised_train() for _ in range(client_train_epoch)]


# utils.py:27-40 (threads -> id order; the loss queue's ordering quirk is dropped: its list is
# never used by the dfedgnn round)
def fedavg_work(clients, client_train_epoch):
    return [fedavg_job(c, client_train_epoch) for c in clients]


# main.py:392-405
@torch.no_grad()
def ring_average(w_last):
    """w_load[cid][k] = (w_last[cid][k] + w_last[cid-1][k] + w_last[cid+1][k]) / 3, indices mod N,
    summed in that order into a deep copy of the client's own tensor, then torch.div by 3. Not
    deduplicated: with N = 2 the other client is added twice, with N = 1 the client three times.
    Every w_load is computed before any client loads (main.py:407), so no average sees an
    already-averaged neighbour."""
    client_num = len(w_last)
    w_load = []
    for cid in range(client_num):
        cur_load = copy.deepcopy(w_last[cid])                                       # main.py:397
        for k in cur_load.keys():                                                   # main.py:398
            for i in range(-1, 2):                                                  # main.py:399
                if i == 0:                                                          # main.py:400
                    continue
                cur_load[k] += w_last[(cid + i + client_num) % client_num][k]       # main.py:402-403
            cur_load[k] = torch.div(cur_load[k], 3)                                 # main.py:404
        w_load += [cur_load]                                                        # main.py:405
    return w_load


class DFedGnnReference:
    """FedEgo's `--mode dfedgnn` federation (main.py:387-409) on the GCN adaptation.

    subgraphs: objects with x [n, F], edge_index [2, E], y [n], train_idx (bool) (trace.Subgraph).
    initial_states: one GCN state_dict per client (conv1.lin.weight [h, F], conv1.bias,
    conv2.lin.weight [C, h], conv2.bias)."""

    def __init__(self, subgraphs, initial_states, lr=3e-4, client_train_epoch=5, dropout=0.0):
        assert len(subgraphs) == len(initial_states)
        self.clients = [Client(g, s, lr, dropout) for g, s in zip(subgraphs, initial_states)]  # main.py:131-134
        self.client_train_epoch = client_train_epoch
        self.round = 0

    def train_round(self):
        """One `for epoch` iteration of main.py:388-409. Returns copies: 'round'; 'start' (each
        client's weights before training: its initial state in round 1, else the previous round's
        ring average); 'losses' [N][E] (per-epoch train losses); 'trained' (each client's weights
        after local training: what its neighbours average); 'ring' (each client's ring average,
        w_load, which it loads and is evaluated on); 'adam' (each client's Adam state after
        training, keyed by the GCN's parameter names: exp_avg, exp_avg_sq, step)."""
        self.round += 1
        start = [copy.deepcopy(c.state_dict()) for c in self.clients]
        losses = fedavg_work(self.clients, self.client_train_epoch)            # main.py:389-390
        with torch.no_grad():                                                  # main.py:392
            w_last = [c.state_dict() for c in self.clients]                    # main.py:394 (live tensors)
            trained = copy.deepcopy(w_last)
            w_load = ring_average(w_last)                                      # main.py:395-405
            for cid, c in enumerate(self.clients):                             # main.py:407-409
                c.load_state_dict(w_load[cid])
                # main.py:409 `clients[cid].init_model = w_load[cid]` is read only by fedprox's
                # proximal term (Client.py:115-121): no effect here.
        adam = []
        for c in self.clients:
            names = {p: n for n, p in c.model.named_parameters()}
            a = {}
            for p, st in c.optimizer.state.items():
                for key, value in st.items():
                    a.setdefault(key, {})[names[p]] = torch.as_tensor(value, dtype=torch.float32).clone()
            adam.append(a)
        return {'round': self.round, 'start': start, 'losses': losses, 'trained': trained,
                'ring': copy.deepcopy(w_load), 'adam': adam}
