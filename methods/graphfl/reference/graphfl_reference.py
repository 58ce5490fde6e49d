"""Line-by-line plain-PyTorch port of GraphFL as FedEgo's baseline code runs it (test oracle).

Upstream: https://github.com/FedEgo/FedEgo at commit 534c1de ("update framework", 2022-08-25),
`--mode graphfl`. Files ported: main.py:217-224 (the support and query sets drawn once per client,
then one graphflWork call per round), utils.py:10-17 (FedAvg), utils.py:94-105 (graphflJob: E
support epochs, then in the MAML stage the query pass and the gradient), utils.py:108-172
(graphflWork, the round: every client loads the average of all clients' weights; MAML stage; the
server steps the average by the mean query gradient and every client loads it; FL stage: E more
support epochs; every client loads the average), Client.py:11-46 (the client: its own model and
ONE Adam created once), Client.py:55-76 (getMask for mode 'graphfl': 80 support and 80 query
nodes), Client.py:101-106 (getGradient), Client.py:359-380 (graphflSupport), Client.py:382-402
(graphflQuery: zero_grad inside the batch loop, no step), models.py:75-77 (the classifier's
log_softmax, fed to F.cross_entropy), options.py (lr 3e-4, client_train_epoch 5, batch_size 32).
Every block names its upstream file:line. Not ported: the evaluation and early stopping
(main.py:226-255: after the round, they never feed back into training), data loading
(dataCenter.py), the other modes.

Graph adaptation (not upstream, as the other GCN oracles: methods/reference/gcn.py): each client's
model is the 2-layer GCN run full-batch on its subgraph. A support epoch is ONE Adam step over
all support nodes (upstream: NeighborLoader([6, 6]) mini-batches of 32 support nodes, one Adam
step each, on FedEgo's ego-SAGE model, models.py:11-77). The query pass keeps upstream's batch
loop over the query nodes in ascending id order (NeighborLoader, shuffle=False), each batch's
loss on the full-graph GCN's outputs at that batch's nodes, because which batch's gradient
survives the loop is what is sent.

Deliberate differences from upstream, nothing else is changed:
  * CPU only (upstream cuda:0); clients run one after another in id order (upstream: one thread
    each; they share no state).
  * Initial weights, support and query sets are injected (upstream: kaiming inits from the global
    RNG, getMask's numpy permutation; get_mask() below ports the latter).
  * meta_lr (upstream has none: `w_avg[key] -= gradient`, i.e. 1.0, the default here).
  * No dropout (graphflSupport / graphflQuery never call the client's nn.Dropout).

Switches that select OUR GraphFL's behaviour (methods/graphfl/README.md), each defaulting to the
code's:
  * whole_query_gradient: the gradient of the loss over ALL query nodes at once (ours), instead of
    the gradient of the last query batch only (the code: zero_grad inside the loop).
  * one_initial_model: every client starts round 1 from initial_states[0] and each round starts
    from the server's model as is (ours), instead of each round's first FedAvg of the clients'
    weights, which in round 1 averages N independent initialisations (the code).
  * support_nodes / query_nodes in get_mask (the code: 80 / 80; ours: 100 / 100).
"""
import copy
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.gcn import GCN  # noqa: E402


# Client.py:55-76, the `mode == "graphfl"` branch (val_size 80, train_size 80).
def get_mask(node_num, support_nodes=80, query_nodes=80, test_num=200, rng=np.random):
    """(train_mask = support, val_mask = query, test_mask) over node_num nodes, as getMask draws
    them: a permutation of the first node_num - test_num - query_nodes ids; its first
    support_nodes are the support set, the next up to query_nodes (capped at node_num - test_num)
    the query set; the last test_num nodes are the test set. rng: numpy's global RNG upstream."""
    val_size = query_nodes                                                    # Client.py:58
    test_size = test_num                                                      # Client.py:59
    train_size = support_nodes                                                # Client.py:60
    rand_indices = rng.permutation(node_num - test_size - val_size)           # Client.py:68-69
    train_mask = torch.zeros(node_num, dtype=torch.bool)                      # Client.py:70
    train_mask[rand_indices[:train_size]] = True                              # Client.py:71
    val_mask = torch.zeros(node_num, dtype=torch.bool)                        # Client.py:72
    val_mask[rand_indices[train_size:min(train_size + val_size, node_num - test_size)]] = True  # Client.py:73-74
    test_mask = torch.zeros(node_num, dtype=torch.bool)                       # Client.py:75
    test_mask[node_num - test_size:] = True                                   # Client.py:76
    return train_mask, val_mask, test_mask


# utils.py:10-17
@torch.no_grad()
def fed_avg(w):
    """Deep copy of w[0], plus w[1], ..., w[N-1] in order, then torch.div by N, per key."""
    w_avg = copy.deepcopy(w[0])                                               # utils.py:12
    for k in w_avg.keys():                                                    # utils.py:13
        for i in range(1, len(w)):                                            # utils.py:14
            w_avg[k] += w[i][k]                                               # utils.py:15
        w_avg[k] = torch.div(w_avg[k], len(w))                                # utils.py:16
    return w_avg


class Client:
    """One client (Client.py:11-46 for mode 'graphfl'): its own model and ONE Adam over it (no
    weight decay), created once and never reset: both stages of every round step the same moments;
    load_state_dict overwrites only the parameter values."""

    def __init__(self, data, support, query, initial_state, lr, batch_size, whole_query_gradient):
        self.data = data                                                      # Client.py:15
        self.support = support            # train_mask (Client.py:70-71), bool [n]
        self.query = query                # val_mask (Client.py:72-74), bool [n]
        self.batch_size = batch_size
        self.whole_query_gradient = whole_query_gradient
        self.model = GCN.from_state(copy.deepcopy(initial_state), 0.0)       # graph adaptation
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)    # Client.py:45

    def _loss(self, nodes):
        """F.cross_entropy on the classifier's log_softmax (models.py:76, Client.py:373-374) at `nodes`."""
        g = self.data
        _, logits = self.model(g.x, g.edge_index)
        out = torch.log_softmax(logits, 1)[nodes]
        return F.cross_entropy(out, g.y[nodes])

    # Client.py:359-380 (one batch: all support nodes; see the module docstring)
    def graphfl_support(self):
        self.model.train()                                                    # Client.py:360
        self.optimizer.zero_grad()                                            # Client.py:364
        loss = self._loss(self.support)                                      # Client.py:371-374
        loss.backward()                                                       # Client.py:375
        self.optimizer.step()                                                 # Client.py:376
        return float(loss)                                                    # Client.py:378-380

    # Client.py:382-402. The loop zeroes the gradient before every batch and never steps, so the
    # parameters' .grad holds only the LAST batch's gradient afterwards. With whole_query_gradient
    # (ours) one batch holds every query node.
    def graphfl_query(self):
        self.model.train()                                                    # Client.py:383
        nodes = self.query.nonzero().view(-1)  # NeighborLoader: ascending ids, shuffle=False
        size = nodes.numel() if self.whole_query_gradient else self.batch_size
        total_examples = total_loss = 0
        for b in range(0, nodes.numel(), size):                              # Client.py:386
            seeds = nodes[b:b + size]
            self.optimizer.zero_grad()                                        # Client.py:387
            loss = self._loss(seeds)                                          # Client.py:394-397
            loss.backward()                                                   # Client.py:398
            total_examples += seeds.numel()                                   # Client.py:400
            total_loss += float(loss) * seeds.numel()                         # Client.py:401
        return total_loss / total_examples                                    # Client.py:402

    # Client.py:101-106 (a copy here: upstream hands out the live .grad tensors, consumed by the
    # server before the FL stage's zero_grad overwrites them)
    @torch.no_grad()
    def get_gradient(self):
        return {name: p.grad.detach().clone() for name, p in self.model.named_parameters()}

    def state_dict(self):
        return self.model.state_dict()

    def load_state_dict(self, state):
        self.model.load_state_dict(state)

    def adam_state(self):
        names = {p: n for n, p in self.model.named_parameters()}
        a = {}
        for p, st in self.optimizer.state.items():
            for key, value in st.items():
                a.setdefault(key, {})[names[p]] = torch.as_tensor(value, dtype=torch.float32).clone()
        return a


# utils.py:94-105
def graphfl_job(client, client_train_epoch, stage):
    """client_train_epoch support epochs; in the MAML stage then the query pass and the gradient.
    Returns (support losses, query loss or None, gradient or None)."""
    support_loss = [client.graphfl_support() for _ in range(client_train_epoch)]  # utils.py:95-97
    if stage == 'MAML':                                                       # utils.py:98
        val_loss = client.graphfl_query()                                     # utils.py:99
        return support_loss, val_loss, client.get_gradient()                  # utils.py:100-105
    return support_loss, None, None


class GraphFlReference:
    """FedEgo's `--mode graphfl` federation (main.py:217-224, utils.py:108-172) on the GCN adaptation.

    subgraphs: objects with x [n, F], edge_index [2, E], y [n] (trace.Subgraph).
    supports, queries: one bool mask [n] per client (get_mask draws the code's).
    initial_states: one GCN state_dict per client (conv1.lin.weight [h, F], conv1.bias,
    conv2.lin.weight [C, h], conv2.bias); with one_initial_model only initial_states[0] is read.
    See the module docstring for whole_query_gradient and one_initial_model."""

    def __init__(self, subgraphs, supports, queries, initial_states, lr=3e-4, client_train_epoch=5,
                 batch_size=32, meta_lr=1.0, whole_query_gradient=False, one_initial_model=False):
        assert len(subgraphs) == len(supports) == len(queries)
        n = len(subgraphs)
        if one_initial_model:
            initial_states = [initial_states[0]] * n
        assert len(initial_states) == n
        self.clients = [Client(g, s, q, w, lr, batch_size, whole_query_gradient)      # main.py:131-134
                        for g, s, q, w in zip(subgraphs, supports, queries, initial_states)]
        self.client_train_epoch = client_train_epoch
        self.meta_lr = meta_lr
        self.one_initial_model = one_initial_model
        self.global_state = copy.deepcopy(initial_states[0])  # ours: the server's model
        self.round = 0

    def train_round(self):
        """One graphflWork call (utils.py:108-172). Returns copies: 'round'; 'start' (the model
        every client loads before the MAML stage); 'support_losses' [N][E] and 'query_losses' [N]
        (MAML stage); 'adapted' (each client's weights after the MAML stage's support epochs);
        'gradients' (each client's query gradient, sent in exchange 0); 'meta' (the server's
        meta-updated model, loaded by every client); 'fl_losses' [N][E]; 'trained' (each
        client's weights after the FL stage, sent in exchange 1); 'average' (their mean, loaded by
        every client: the round's global model); 'adam' (each client's Adam state at the end of
        the round, keyed by the GCN's parameter names: exp_avg, exp_avg_sq, step)."""
        self.round += 1
        clients = self.clients
        # Stage MAML: load the initial weights (utils.py:117-122).
        with torch.no_grad():
            if self.one_initial_model:
                w_avg = copy.deepcopy(self.global_state)
            else:
                w_avg = fed_avg([c.state_dict() for c in clients])            # utils.py:120
            for c in clients:                                                 # utils.py:121-122
                c.load_state_dict(w_avg)
        start = copy.deepcopy(w_avg)
        # Client update (utils.py:123-131, threads -> id order).
        jobs = []
        adapted = []
        for c in clients:
            jobs.append(graphfl_job(c, self.client_train_epoch, 'MAML'))
            adapted.append(copy.deepcopy(c.state_dict()))
        support_losses = [j[0] for j in jobs]                                 # utils.py:134-135
        query_losses = [j[1] for j in jobs]                                   # utils.py:136
        gradient_dict_list = [j[2] for j in jobs]                             # utils.py:137
        with torch.no_grad():
            # Server update (utils.py:138-143): w_avg -= mean gradient (meta_lr 1 upstream).
            gradient_dict = fed_avg(gradient_dict_list)                       # utils.py:139
            for key in gradient_dict.keys():                                  # utils.py:140
                if self.meta_lr == 1.0:
                    w_avg[key] -= gradient_dict[key]                          # utils.py:141
                else:
                    w_avg[key] -= self.meta_lr * gradient_dict[key]
            for c in clients:                                                 # utils.py:142-143
                c.load_state_dict(w_avg)
        meta = copy.deepcopy(w_avg)
        # Stage FL: client fine-tuning (utils.py:154-163).
        fl_losses = [graphfl_job(c, self.client_train_epoch, 'FL')[0] for c in clients]  # utils.py:167
        with torch.no_grad():
            trained = [copy.deepcopy(c.state_dict()) for c in clients]
            w_avg = fed_avg([c.state_dict() for c in clients])                # utils.py:169
            for c in clients:                                                 # utils.py:170-171
                c.load_state_dict(w_avg)
        self.global_state = copy.deepcopy(w_avg)
        return {'round': self.round, 'start': start, 'support_losses': support_losses,
                'query_losses': query_losses, 'adapted': adapted,
                'gradients': gradient_dict_list, 'meta': meta, 'fl_losses': fl_losses,
                'trained': trained, 'average': copy.deepcopy(w_avg),
                'adam': [c.adam_state() for c in clients]}
