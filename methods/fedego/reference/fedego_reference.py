"""Line-by-line plain-PyTorch port of the authors' FedEgo, used as a test oracle.

Upstream: https://github.com/FedEgo/FedEgo at commit 534c1de (2022-08-25, the state nearest
the arXiv paper). HEAD 88887bb adds FedSage+, a Louvain split, per-seed lamb_c maps removed
(default 0.5) and `share_x += sigma * torch.randn(43, h)` in updateShareBatch (sigma 0 by
default, still a draw); the rest of what is ported here is unchanged there. Files: models.py (LowLayer, GNNLayer, Classification), Client.py,
Server.py, utils.py (FedAvg, fedegoJob, fedegoWork) and the mode='fedego' loop of main.py, with
options.py's defaults. Every block names its upstream file:line. Only mode 'fedego' with
sageMode 'GraphSAGE' is ported. PyG primitives (SAGEConv, NeighborLoader) come from
methods/reference/pyg.py.

Deliberate differences from upstream (nothing else is changed):
  * CPU only (upstream: cuda:0); `.to(device)` is dropped.
  * Every random draw can be injected and is returned (`draws`, format in FedEgoReference),
    drawn otherwise from torch's RNG (or a given torch.Generator), not numpy's / C rand():
    each local epoch's training nodes (upstream: np.random.permutation), the server's
    per-epoch mashed graphs (np.random.permutation) and every neighbour draw of the
    NeighborLoaders (torch_sparse: C rand()). Initial weights are injected (`initial_states`,
    `draw_initial_states` draws them as upstream's constructors do). Dropout keeps torch's
    global RNG (nn.Dropout); bit-exact comparisons use dropout=0.
  * Upstream runs the clients in parallel threads that all draw from the same global RNGs and
    put their uploads into queues in completion order; here they run one after the other in
    client-id order, and the order in which the server concatenates the uploads is an
    argument (`upload_order`, default client-id order).
  * Upstream's positional split (Client.getMask: training pool = the first
    n - test_num - n//5 nodes, test = the last test_num nodes, the n//5 in between unused) is
    read from the masks: pool = train_idx, test = test_idx (val_idx is unused, as upstream's
    val_mask). With masks in upstream's layout this is identical.
  * The numpy permutation that getMask(upload=True) draws without using it is not drawn.
  * Prints, tensorboard, timing and the cost counters are dropped; values are returned instead.
    sklearn's micro-F1 is computed as accuracy (identical for single-label classes).

Hooks that are not upstream, off by default (the differential test against our C++ uses them;
methods/fedego/reference/README.md):
  * `trees` draws: explicit ego-trees (one 43-node tree per centre, ids of the graph) in place of
    a NeighborLoader batch's `neighbors` (TreeLoader), their batches in the given order. Every
    child must be an in-neighbour of its parent in the graph (ValueError otherwise). A tree that
    is the expansion of a NeighborLoader sample (tree_of_batch) computes the same as that sample.
  * `server_edge_offset=True`: the server shifts each upload's edge ids by the nodes before it in
    the concatenation (upstream does not: utils.py:86-89).
  * `loss_epsilon=None`: the clients' and the server's loss is the paper's cross-entropy (Eq. 2),
    -sum y log_softmax, instead of upstream's -sum y log(softmax + 1e-7).
"""
import copy
import os
import sys
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.pyg import Data, NeighborLoader, SAGEConv, to_csc  # noqa: E402

NUM_NEIGHBORS = [6] * 2  # Client.py:93, Server.py:46, Client.py:446 (hard-coded)
EGO_NODES = 43  # Client.py:176 (1 + 6 + 36, hard-coded)
SHALLOW_PREFIX = 'lowLayer'  # main.py:280


# FedEgo/FedEgo@534c1de models.py:11-25
class LowLayer(nn.Module):
    """The reduction layer Theta: relu(linear(x)). state_dict: linear.weight [h, F], linear.bias [h]."""

    def __init__(self, in_feats, out_feats):
        super(LowLayer, self).__init__()
        self.linear = nn.Linear(in_feats, out_feats)
        self.init_params()

    def init_params(self):
        for param in self.parameters():
            if len(param.size()) == 2:
                nn.init.kaiming_normal_(param)

    def forward(self, x):
        x = self.linear(x)
        x = F.relu(x)
        return x


# FedEgo/FedEgo@534c1de models.py:28-61 (sageMode 'GraphSAGE', layer_size 2)
class GNNLayer(nn.Module):
    """relu(sage2(act(sage1(x)))), act = relu unless `linear`; the final relu is always there.
    state_dict: sage{1,2}.lin_l.weight [h, h], sage{1,2}.lin_l.bias [h], sage{1,2}.lin_r.weight [h, h]."""

    def __init__(self, in_feats, out_feats, h_feats, linear, layer_size=2):
        super(GNNLayer, self).__init__()
        self.layer_size = layer_size
        self.linear = linear
        self.sage1 = SAGEConv(in_feats, h_feats)
        self.sage2 = SAGEConv(h_feats, out_feats)
        # models.py:37-38: `sagex` is a plain list (not registered), empty for layer_size 2.
        self.sagex = [SAGEConv(h_feats, h_feats) for layer in range(layer_size - 2)]
        self.init_params()

    def init_params(self):
        for param in self.parameters():
            if len(param.size()) == 2:
                nn.init.kaiming_normal_(param)

    def forward(self, x, edge_index):
        x = self.sage1(x, edge_index)
        if not self.linear:
            x = F.relu(x)
        for layer in range(self.layer_size - 2):
            x = self.sagex[layer](x, edge_index)
            if not self.linear:
                x = F.relu(x)
        x = self.sage2(x, edge_index)
        x = F.relu(x)
        return x


# FedEgo/FedEgo@534c1de models.py:64-77
class Classification(nn.Module):
    """log_softmax(W x^T)^T, no bias. state_dict: weight [C, h]."""

    def __init__(self, in_feats, num_classes):
        super(Classification, self).__init__()
        self.weight = nn.Parameter(torch.FloatTensor(num_classes, in_feats))
        self.init_params()

    def init_params(self):
        for param in self.parameters():
            if len(param.size()) == 2:
                nn.init.kaiming_normal_(param)

    def forward(self, embeds):
        logists = torch.log_softmax(self.weight.mm(embeds.t()).t(), 1)
        return logists


def _loss(out, y_one_hot, epsilon=0.0000001):
    # Client.py:108-113 and Server.py:62-67: softmax of the log_softmax output, + 1e-7 inside the log.
    # epsilon=None (not upstream): Eq. 2's cross-entropy, -sum y * log_softmax(out).
    if epsilon is None:
        return -torch.mean(torch.sum(y_one_hot * torch.log_softmax(out, dim=1), dim=1), dim=0)
    x = F.softmax(out, dim=1)
    loss = y_one_hot * torch.log(x + epsilon)
    loss = -torch.mean(torch.sum(loss, dim=1), dim=0)
    return loss


def _neighbor_draws(draws, key):
    return None if draws is None else draws.get(key)


def _tree_parent(p):
    """The parent position of position p >= 1 of a 43-node ego-tree (children of v: 6v+1..6v+6)."""
    return (p - 1) // NUM_NEIGHBORS[0]


class TreeLoader:
    """Not upstream: batches of explicit ego-trees instead of NeighborLoader's deduplicated
    samples. trees: one LongTensor [b, 43] per batch, row i = centre i's tree (position 0 the
    centre, children of position v at 6v+1..6v+6) as node ids of `data`; every child must be an
    in-neighbour of its parent (ValueError). Each batch is a Data as NeighborLoader yields: the b
    centres first (local ids 0..b-1), then each tree's positions 1..42 as nodes of their own
    (local id b + 42 i + p - 1), edges child -> parent per tree, parent and child ascending, x, y
    the rows of `data`, `sampled` the tree tensor. SAGE on it is the tree computation; a node at
    several positions appears once per position."""

    def __init__(self, data, trees):
        self.data = data
        self.trees = [torch.as_tensor(t, dtype=torch.long) for t in trees]
        n = data.x.size(0)
        colptr, row, _ = to_csc(data.edge_index, n)
        self.colptr, self.row = colptr.tolist(), row.tolist()

    def __len__(self):
        return len(self.trees)

    def __iter__(self):
        size = EGO_NODES
        for t in self.trees:
            if t.dim() != 2 or t.size(1) != size:
                raise ValueError(f'trees must be [b, {size}], got {tuple(t.shape)}')
            b = t.size(0)
            ids = t.tolist()
            for i in range(b):
                for p in range(1, size):
                    w = ids[i][_tree_parent(p)]
                    if ids[i][p] not in self.row[self.colptr[w]:self.colptr[w + 1]]:
                        raise ValueError(f'tree {i}: node {ids[i][p]} at position {p} is not an in-neighbour of {w}')

            def local(i, p):
                return i if p == 0 else b + i * (size - 1) + p - 1
            rows, cols = [], []
            for i in range(b):
                for p in range(1, size):
                    rows.append(local(i, p))
                    cols.append(local(i, _tree_parent(p)))
            node = torch.cat([t[:, 0], t[:, 1:].reshape(-1)])
            yield Data(x=self.data.x[node], y=self.data.y[node],
                       edge_index=torch.tensor([rows, cols], dtype=torch.long), batch_size=b, n_id=node,
                       sampled=t.clone())


def tree_of_batch(batch):
    """The explicit ego-trees [b, 43] (ids of the loader's graph) of a NeighborLoader batch, as
    updateShareBatch aligns them: position 1+j = the centre's j-th draw, 7+6j+k = the k-th draw
    of that neighbour (a node's ONE list, shared wherever it appears). ValueError if a node on
    the way has no list (no in-neighbour)."""
    lists = defaultdict(list)
    src, dst = batch.edge_index[0].tolist(), batch.edge_index[1].tolist()
    for u, v in zip(src, dst):
        lists[v].append(u)
    out = []
    for c in range(batch.batch_size):
        tree = [c]
        for p in range(1, EGO_NODES):
            parent = tree[_tree_parent(p)]
            children = lists[parent]
            if len(children) != NUM_NEIGHBORS[0]:
                raise ValueError(f'node {int(batch.n_id[parent])} has {len(children)} drawn neighbours')
            tree.append(children[(p - 1) % NUM_NEIGHBORS[0]])
        out.append(batch.n_id[torch.tensor(tree)])
    return torch.stack(out)


# FedEgo/FedEgo@534c1de Client.py:11-46 (mode 'fedego', sageMode 'GraphSAGE')
class Client(nn.Module):
    """state_dict: lowLayer.linear.{weight,bias}, gnnLayer.sage{1,2}.lin_l.{weight,bias},
    gnnLayer.sage{1,2}.lin_r.weight, classification.weight."""

    def __init__(self, data, in_feats, h_feats, num_classes, lr, dropout, mixup, linear, loss_epsilon=1e-7):
        super(Client, self).__init__()
        self.loss_epsilon = loss_epsilon  # not upstream when not 1e-7 (_loss)
        self.data = data
        self.h_feats = h_feats
        self.num_classes = num_classes
        self.node_num = self.data.x.shape[0]
        self.mixup = mixup
        self.linear = linear
        self.lowLayer = LowLayer(in_feats, h_feats)
        self.gnnLayer = GNNLayer(h_feats, h_feats, h_feats, linear, layer_size=2)
        self.classification = Classification(h_feats, num_classes)
        self.dropout = nn.Dropout(p=dropout)
        # Client.py:45: created once, never reset (load_state_dict keeps its moments and steps).
        self.optimizer = torch.optim.Adam(self.parameters(), lr=lr)
        # Client.py:50-53 (`self.cnt`) is never read: not ported.
        self.pool = self.data.train_idx.nonzero().view(-1)  # upstream: arange(n - test_num - n//5)
        self.test_mask = self.data.test_idx.clone()  # upstream: the last test_num nodes

    # Client.py:55-76 (mode != 'graphfl'); val_mask is never used and not ported.
    @torch.no_grad()
    def getMask(self, upload=False, train_nodes=None, generator=None):
        """Returns the training nodes: upload -> the whole pool; else node_num // 5 of them
        (upstream: rand_indices[:node_num // 5] of a permutation of the pool, so the whole pool
        when it is smaller). `train_nodes` injects them (local ids, any order)."""
        if upload:
            chosen = self.pool
        else:
            train_size = min(self.node_num // 5, self.pool.numel())
            if train_nodes is None:
                rand_indices = torch.randperm(self.pool.numel(), generator=generator)
                chosen = self.pool[rand_indices[:train_size]]
            else:
                chosen = torch.as_tensor(train_nodes, dtype=torch.long).view(-1)
                if (chosen.numel() != train_size or chosen.unique().numel() != train_size
                        or not bool(self.data.train_idx[chosen].all())):
                    raise ValueError(f'train_nodes must be {train_size} distinct pool nodes, got {chosen.tolist()}')
        self.train_mask = torch.zeros(self.node_num, dtype=torch.bool)
        self.train_mask[chosen] = True
        return self.train_mask.nonzero().view(-1)  # the loader's (ascending) order

    # Client.py:78-99
    @torch.no_grad()
    def getLoader(self, batch_size, mode="train", sampled=None, generator=None):
        if mode == "train":
            data = self.data
            input_nodes = self.train_mask
        elif mode in ["share"]:
            data = self.lowEmbed
            input_nodes = self.train_mask
        elif mode == "test":
            data = self.data
            input_nodes = self.test_mask
        loader = NeighborLoader(data, num_neighbors=NUM_NEIGHBORS, batch_size=batch_size,
                                input_nodes=input_nodes, replace=True, directed=True,
                                sampled=sampled, generator=generator)
        return loader

    # Client.py:108-113
    def getLoss(self, out, y):
        y_one_hot = F.one_hot(y, num_classes=self.num_classes).float()
        return _loss(out, y_one_hot, self.loss_epsilon)

    # Client.py:123-146
    @torch.no_grad()
    def initShareBatch(self, layer=3):
        self.share_x = []
        self.share_edge_index_u = []
        self.share_edge_index_v = []
        self.share_edge_index = []
        self.share_y = []
        self.share_mask = []
        self.share_node_idx = []
        self.share_node_cnt = 0
        self.map_layer = [[] for l in range(layer)]
        node_cnt = 0
        for l in range(layer):
            self.map_layer[l] = [node for node in range(node_cnt, node_cnt + 6 ** l)]
            node_cnt += 6 ** l
        self.add_u = []
        self.add_v = []
        # from u to v: positions 6v+1..6v+6 are the children of position v (v = 0..6)
        for v in range(6 + 1):
            for u in range(6 * v + 1, 6 * v + 7):
                self.add_u.append(u)
                self.add_v.append(v)

    # Client.py:148-201: the Mixup of one batch of b ego-graphs into one mashed ego-graph.
    @torch.no_grad()
    def updateShareBatch(self, batch, layer=3):
        b_size = batch.batch_size
        adj_lists = defaultdict(list)
        edge_index = batch.edge_index
        edge_cnt = edge_index.shape[1]
        x = batch.x
        y = F.one_hot(batch.y, num_classes=self.num_classes).float()

        # reconstruct the adjacency list: target local id -> its sampled sources, in draw order
        src, dst = edge_index[0].tolist(), edge_index[1].tolist()
        for i in range(edge_cnt):
            adj_lists[dst[i]].append(src[i])
        node_layer = [[] for l in range(layer)]
        # node 0, use node 0 to be uploaded if Mixup is not applied
        if self.mixup:
            node_layer[0] = list(range(b_size))
        else:
            node_layer[0] = [0] * b_size
        for l in range(1, layer):
            for node in node_layer[l - 1]:
                node_layer[l] += adj_lists[node]

        share_x = torch.zeros((EGO_NODES, self.h_feats))
        share_y = torch.zeros((EGO_NODES, self.num_classes))

        # a new ego-graph (edge ids local to this client's upload, Client.py:180-183)
        self.share_edge_index_u += [u + self.share_node_cnt for u in self.add_u]
        self.share_edge_index_v += [v + self.share_node_cnt for v in self.add_v]

        # Mixup: entry i of level l goes to position map_layer[l][i % 6**l]
        for l in range(layer):
            layer_length = len(self.map_layer[l])
            batch_layer_length = len(node_layer[l])
            pos = [[] for _ in range(layer_length)]
            for i in range(batch_layer_length):
                pos[i % layer_length].append(node_layer[l][i])
            pos = torch.tensor(pos)  # ValueError when ragged (a node without neighbour), as upstream
            for i in range(layer_length):
                share_x[self.map_layer[l][i]] = torch.sum(x[pos[i]], dim=0)
                share_y[self.map_layer[l][i]] = torch.sum(y[pos[i]], dim=0)
        share_x /= b_size
        share_y /= b_size
        self.share_x.append(share_x)
        self.share_y.append(share_y)
        self.share_node_idx.append(self.share_node_cnt)
        self.share_node_cnt += EGO_NODES

    # Client.py:228-238
    @torch.no_grad()
    def setLamb(self, global_p, lamb_c, lamb_fixed=False):
        self.p = torch.sum(F.one_hot(self.data.y, num_classes=self.num_classes).float(), axis=0)
        self.p /= self.data.y.shape[0]
        self.emd = torch.sum(abs(self.p - global_p))
        if lamb_fixed:
            self.lamb = lamb_c
        else:
            self.lamb = pow(self.emd / 2, lamb_c)  # a 0-dim float32 tensor

    # Client.py:240-249
    @torch.no_grad()
    def getLowEmbed(self):
        x = self.lowLayer(self.data.x)
        self.lowEmbed = Data(x=x, edge_index=self.data.edge_index, y=self.data.y)

    # Client.py:251-276
    @torch.no_grad()
    def getShareBatch(self, batch_size, sampled=None, generator=None, trees=None):
        """trees (not upstream): the chunks' explicit ego-trees (TreeLoader); their centres must be
        the pool in ascending order, cut into chunks of batch_size."""
        self.eval()
        self.getLowEmbed()
        chunks = self.getMask(upload=True)
        if trees is None:
            train_loader = self.getLoader(batch_size, mode="share", sampled=sampled, generator=generator)
        else:
            train_loader = TreeLoader(self.lowEmbed, trees)
            got = [torch.as_tensor(t)[:, 0] for t in trees]
            if not torch.equal(torch.cat(got), chunks) or any(g.numel() != batch_size for g in got[:-1]):
                raise ValueError('upload trees: the centres must be the pool, ascending, in chunks of batch_size')
        used = []
        for batch in train_loader:
            self.updateShareBatch(batch)
            used.append(batch.sampled)
        self.share_x = torch.cat(self.share_x, 0).detach()
        self.share_y = torch.cat(self.share_y, 0).detach()
        self.share_edge_index = torch.stack([torch.tensor(self.share_edge_index_u, dtype=torch.long),
                                             torch.tensor(self.share_edge_index_v, dtype=torch.long)], 0)
        self.share_mask = torch.zeros(self.share_node_cnt, dtype=torch.bool)
        self.share_mask[self.share_node_idx] = True
        return self.share_x, self.share_edge_index, self.share_y, self.share_mask, used

    # Client.py:278-307, 357 (mode 'fedego')
    def supervisedTrain(self, batch_size, draws=None, generator=None):
        """draws['trees'] (not upstream): the batches' explicit ego-trees, in the given order
        (TreeLoader); their centres are the epoch's training nodes."""
        self.train()
        trees = _neighbor_draws(draws, 'trees')
        if trees is not None:
            centres = torch.cat([torch.as_tensor(t, dtype=torch.long)[:, 0] for t in trees])
            if any(torch.as_tensor(t).size(0) > batch_size for t in trees):
                raise ValueError(f'trees: batches of at most {batch_size}')
            with torch.no_grad():
                train_nodes = self.getMask(train_nodes=centres)
            train_loader = TreeLoader(self.data, trees)
        else:
            with torch.no_grad():
                train_nodes = self.getMask(train_nodes=_neighbor_draws(draws, 'train_nodes'), generator=generator)
            train_loader = self.getLoader(batch_size, mode="train", sampled=_neighbor_draws(draws, 'neighbors'),
                                          generator=generator)
        total_examples = total_loss = 0
        used = []
        self.batch_losses = []  # not upstream: each batch's loss, for the differential test
        for batch in train_loader:
            used.append(batch.sampled)
            self.optimizer.zero_grad()
            b_size = batch.batch_size
            x = batch.x
            y = batch.y
            edge_index = batch.edge_index

            x = self.lowLayer(x)
            x = self.dropout(x)
            x = self.gnnLayer(x, edge_index)
            x = self.dropout(x)
            out = self.classification(x)[:b_size]
            loss = self.getLoss(out, y[:b_size])

            loss.backward()
            self.optimizer.step()

            total_examples += b_size
            total_loss += float(loss) * b_size
            self.batch_losses.append(float(loss))
        return total_loss / total_examples, {'train_nodes': train_nodes,
                                             'trees' if trees is not None else 'neighbors': used}

    def _predict(self, loader):
        # Client.py:414-437 / 456-474: eval forward, argmax, loss per batch
        pred_all, y_all, used = [], [], []
        total_examples = total_loss = 0
        for batch in loader:
            used.append(batch.sampled)
            b_size = batch.batch_size
            x = self.lowLayer(batch.x)
            x = self.gnnLayer(x, batch.edge_index)
            out = self.classification(x)[:b_size]
            pred_all += out.argmax(dim=-1).tolist()
            y_all += batch.y[:b_size].tolist()
            loss = self.getLoss(out, batch.y[:b_size])
            total_examples += b_size
            total_loss += float(loss) * b_size
        micro_f1 = sum(int(p == t) for p, t in zip(pred_all, y_all)) / len(y_all)
        return micro_f1, total_loss, total_examples, pred_all, used

    # Client.py:404-440: on the local test nodes
    @torch.no_grad()
    def evaluate(self, batch_size, sampled=None, generator=None):
        self.eval()
        loader = self.getLoader(batch_size, mode="test", sampled=sampled, generator=generator)
        micro_f1, total_loss, total_examples, pred, used = self._predict(loader)
        return micro_f1, total_loss / total_examples, pred, used

    # Client.py:442-483: on every node of the global test graph (print_y dropped)
    @torch.no_grad()
    def test(self, test_data, batch_size, sampled=None, generator=None):
        self.eval()
        loader = NeighborLoader(test_data, num_neighbors=NUM_NEIGHBORS, batch_size=batch_size,
                                input_nodes=None, replace=True, directed=True, sampled=sampled,
                                generator=generator)
        micro_f1, _, _, pred, used = self._predict(loader)
        return micro_f1, pred, used

    # Client.py:485-491
    @torch.no_grad()
    def getWD(self, global_dict):
        self.wd = 0
        local_dict = self.state_dict()
        for key in global_dict.keys():
            self.wd += np.linalg.norm(global_dict[key].cpu().numpy().flatten()
                                      - local_dict[key].cpu().numpy().flatten(), ord=2)


# FedEgo/FedEgo@534c1de Server.py:9-30 (mode 'fedego')
class Server(nn.Module):
    """The global personalisation layers Phi_g. state_dict: gnnLayer.sage{1,2}.lin_l.{weight,bias},
    gnnLayer.sage{1,2}.lin_r.weight, classification.weight (the clients' deep keys)."""

    def __init__(self, h_feats, num_classes, lr, dropout, linear, loss_epsilon=1e-7):
        super(Server, self).__init__()
        self.loss_epsilon = loss_epsilon  # not upstream when not 1e-7 (_loss)
        self.h_feats = h_feats
        self.num_classes = num_classes
        self.gnnLayer = GNNLayer(h_feats, h_feats, h_feats, linear, 2)
        self.classification = Classification(h_feats, num_classes)
        self.dropout = nn.Dropout(p=dropout)
        self.optimizer = torch.optim.Adam(self.parameters(), lr=lr)  # persists across rounds

    # Server.py:32-41
    @torch.no_grad()
    def loadData(self, share_x, share_edge_index, share_y, share_mask):
        self.data = Data(x=share_x, edge_index=share_edge_index, y=share_y)
        self.share_mask = share_mask
        self.share_nodes = torch.arange(len(self.share_mask))[self.share_mask]
        self.node_num = len(self.share_mask)
        self.share_node_num = len(self.share_nodes)

    # Server.py:43-52
    @torch.no_grad()
    def getLoader(self, batch_size, sampled=None, generator=None):
        return NeighborLoader(self.data, num_neighbors=NUM_NEIGHBORS, batch_size=batch_size,
                              input_nodes=self.train_mask, replace=True, directed=True,
                              sampled=sampled, generator=generator)

    # Server.py:54-60: share_node_num // 5 random mashed graphs; the loader takes them ascending.
    @torch.no_grad()
    def getTrainMask(self, train_graphs=None, generator=None):
        train_size = self.share_node_num // 5
        if train_graphs is None:
            rand_indices = torch.randperm(self.share_node_num, generator=generator)[:train_size]
        else:
            rand_indices = torch.as_tensor(train_graphs, dtype=torch.long).view(-1)
            if (rand_indices.numel() != train_size or rand_indices.unique().numel() != train_size
                    or bool((rand_indices < 0).any()) or bool((rand_indices >= self.share_node_num).any())):
                raise ValueError(f'train_graphs must be {train_size} distinct ids < {self.share_node_num}')
        self.train_nodes = self.share_nodes[rand_indices]
        self.train_mask = torch.zeros(self.node_num, dtype=torch.bool)
        self.train_mask[self.train_nodes] = True
        return self.train_mask[self.share_nodes].nonzero().view(-1)  # the chosen graph ids, ascending

    # Server.py:62-67
    def getLoss(self, out, y_one_hot):
        return _loss(out, y_one_hot, self.loss_epsilon)

    # Server.py:69-92, 132 (mode 'fedego'); ZeroDivisionError with < 5 mashed graphs, as upstream
    def supervisedTrain(self, batch_size, draws=None, generator=None):
        """draws['trees'] (not upstream): the batches' explicit trees on the server graph, in the
        given order (TreeLoader); their centres (share nodes) are the epoch's mashed graphs."""
        self.train()
        trees = _neighbor_draws(draws, 'trees')
        if trees is not None:
            graph_of = {int(v): j for j, v in enumerate(self.share_nodes.tolist())}
            centres = torch.cat([torch.as_tensor(t, dtype=torch.long)[:, 0] for t in trees]).tolist()
            if any(c not in graph_of for c in centres) or any(torch.as_tensor(t).size(0) > batch_size for t in trees):
                raise ValueError(f'server trees: centres must be mashed-graph centres, batches of at most {batch_size}')
            train_graphs = self.getTrainMask([graph_of[c] for c in centres])
            train_loader = TreeLoader(self.data, trees)
        else:
            train_graphs = self.getTrainMask(_neighbor_draws(draws, 'train_graphs'), generator)
            train_loader = self.getLoader(batch_size, _neighbor_draws(draws, 'neighbors'), generator)
        total_examples = total_loss = 0
        used = []
        for batch in train_loader:
            used.append(batch.sampled)
            self.optimizer.zero_grad()
            b_size = batch.batch_size
            x = self.gnnLayer(batch.x, batch.edge_index)
            x = self.dropout(x)
            out = self.classification(x)[:b_size]
            loss = self.getLoss(out, batch.y[:b_size])
            loss.backward()
            self.optimizer.step()
            total_examples += b_size
            total_loss += float(loss) * b_size
        return total_loss / total_examples, {'train_graphs': train_graphs,
                                             'trees' if trees is not None else 'neighbors': used}

    # Server.py:134-138: over ALL rows (all 43 positions of every mashed graph)
    @torch.no_grad()
    def getDistribution(self):
        self.p = torch.sum(self.data.y, axis=0)
        self.p /= self.data.y.shape[0]
        return self.p


# FedEgo/FedEgo@534c1de utils.py:10-17
@torch.no_grad()
def FedAvg(w):
    w_avg = copy.deepcopy(w[0])
    for k in w_avg.keys():
        for i in range(1, len(w)):
            w_avg[k] += w[i][k]
        w_avg[k] = torch.div(w_avg[k], len(w))
    return w_avg


def _copy(state):
    return {k: v.detach().clone() for k, v in state.items()}


def _draws_clone(obj):
    if isinstance(obj, torch.Tensor):
        return obj.clone()
    if isinstance(obj, dict):
        return {k: _draws_clone(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_draws_clone(v) for v in obj]
    return obj


def _item(draws, key, i):
    if draws is None or draws.get(key) is None:
        return None
    return draws[key][i]


def draw_initial_states(in_feats, num_classes, num_clients, hidden=512, linear=False, seed=0):
    """Initial weights with upstream's distributions, built in upstream's order (main.py:131-141:
    the clients in id order, each LowLayer, GNNLayer, Classification, then the server's
    GNNLayer and Classification): biases keep the nn.Linear / PyG Linear default
    U(+-1/sqrt(fan_in)), every 2-D parameter is then redrawn by kaiming_normal_ (fan_in, gain
    sqrt(2): N(0, 2 / fan_in)). From torch's RNG seeded with `seed` (the global RNG is restored
    afterwards); PyG's own Linear consumes its RNG differently, so this is not upstream's
    stream. Returns {'clients': [state_dict] * num_clients, 'server': state_dict}."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        clients = []
        for _ in range(num_clients):
            low = LowLayer(in_feats, hidden)
            gnn = GNNLayer(hidden, hidden, hidden, linear, layer_size=2)
            cls = Classification(hidden, num_classes)
            state = {'lowLayer.' + k: v for k, v in low.state_dict().items()}
            state.update({'gnnLayer.' + k: v for k, v in gnn.state_dict().items()})
            state.update({'classification.' + k: v for k, v in cls.state_dict().items()})
            clients.append(_copy(state))
        gnn = GNNLayer(hidden, hidden, hidden, linear, 2)
        cls = Classification(hidden, num_classes)
        server = {'gnnLayer.' + k: v for k, v in gnn.state_dict().items()}
        server.update({'classification.' + k: v for k, v in cls.state_dict().items()})
    return {'clients': clients, 'server': _copy(server)}


class FedEgoReference:
    """FedEgo (mode 'fedego') as main.py:262-386 runs it, one communication round per call.

    FedEgoReference(subgraphs, num_classes, initial_states, hidden=512, lr=3e-4, batch_size=32,
                    client_train_epoch=5, server_train_epoch=5, lamb_c=1.0, lamb_fixed=False,
                    mixup=True, linear=False, early_stopping=100, dropout=0.5,
                    server_edge_offset=False, loss_epsilon=1e-7)

    Defaults are options.py's, with main.py's per-dataset overrides where every dataset agrees
    (h_feats 512). main.py also sets lr 5e-4 for FedEgo on wiki/corafull and lamb_c per
    dataset and seed (main.py:40-78); pass them explicitly.

    Draws (train_round(draws)): a dict, any part of which may be missing (then drawn, in the
    order below, from `generator` or torch's global RNG); train_round returns the complete dict
    actually used under 'draws', in the same format, so it can be replayed:
      'upload_order': list of client ids, the order of the server's concatenation;
      'clients': one dict per client id:
         'epochs': client_train_epoch dicts {'train_nodes': LongTensor [min(n//5, |pool|)] local
                   ids (any order; returned ascending), 'neighbors': one entry per batch};
         'upload': {'neighbors': one entry per chunk of the pool (ascending, batch_size each)};
      'server': {'epochs': server_train_epoch dicts {'train_graphs': LongTensor [M // 5] ids
                 of mashed graphs in the concatenation, M = their total number (any order;
                 returned ascending), 'neighbors': one entry per batch}}.
    A 'neighbors' entry is [hop0, hop1]: hop0 LongTensor [b', 6] = the node ids drawn (with
    replacement, among the in-neighbours) by the b' batch centres that have an in-neighbour, in
    centre order; hop1 LongTensor [k, 6] = those drawn by the k nodes that hop 0 ADDED to the
    batch (not already a centre or added before), in order of first appearance (row-major over
    hop0). Ids are of the client's subgraph, or of the server's concatenated graph.
    Order upstream draws in (per client, sequentially; upstream's threads interleave clients):
    for each epoch: the training nodes, then per batch its hop-0 then hop-1 neighbours (then the
    batch's two dropout masks, global RNG); then the upload chunks' neighbours; after all
    clients, per server epoch: the graphs, then per batch its neighbours (and dropout mask).

    Not upstream (TreeLoader): in place of 'neighbors', an epoch (client or server) or the upload
    may hold 'trees': one LongTensor [b, 43] of explicit ego-trees per batch, in training order
    (a client epoch's or server epoch's centres are then its training nodes / mashed graphs and
    'train_nodes' / 'train_graphs' are not read; the upload's centres must be the pool, ascending,
    in chunks of batch_size). Server tree ids are of the concatenated graph (graph j's position p
    is node 43 j + p). `server_edge_offset=True` shifts each upload's edge ids by the rows before
    it in the concatenation (upstream does not, so its later graphs have no edges).
    `loss_epsilon=None` replaces upstream's -log(softmax + 1e-7) (clients and server) by Eq. 2's
    cross-entropy -log_softmax.
    train_round also returns 'client_batch_losses' [N][batches of the last epoch].
    """

    def __init__(self, subgraphs, num_classes, initial_states, hidden=512, lr=3e-4, batch_size=32,
                 client_train_epoch=5, server_train_epoch=5, lamb_c=1.0, lamb_fixed=False,
                 mixup=True, linear=False, early_stopping=100, dropout=0.5, server_edge_offset=False,
                 loss_epsilon=1e-7):
        self.num_classes = num_classes
        self.server_edge_offset = server_edge_offset
        self.batch_size = batch_size
        self.client_train_epoch = client_train_epoch
        self.server_train_epoch = server_train_epoch
        self.lamb_c = lamb_c
        self.lamb_fixed = lamb_fixed
        self.early_stopping = early_stopping
        self.early_stopping_bound = 1.3  # main.py:96
        in_feats = subgraphs[0].x.shape[1]
        # main.py:131-141; construction draws are discarded (the states are injected).
        with torch.random.fork_rng(devices=[]):
            self.clients = [Client(g, in_feats, hidden, num_classes, lr, dropout, mixup, linear, loss_epsilon)
                            for g in subgraphs]
            self.server = Server(hidden, num_classes, lr, dropout, linear, loss_epsilon)
        for client, state in zip(self.clients, initial_states['clients']):
            client.load_state_dict(state)
        self.server.load_state_dict(initial_states['server'])
        self.epoch = 0
        self.shallowKeys = []
        self.deepKeys = []
        # main.py:144-154
        n = len(self.clients)
        self.max_local_f1 = [0] * n
        self.max_test_f1 = [0] * n
        self.local_avg_f1, self.local_avg_loss, self.test_avg_f1 = [], [], []
        self.min_local_loss = 1e5
        self.max_local_avg_f1 = 0
        self.max_test_avg_f1 = 0

    def train_round(self, draws=None, generator=None):
        draws = draws or {}
        clients, server = self.clients, self.server
        client_num = len(clients)
        self.epoch += 1
        epoch = self.epoch
        # main.py:266-288: average ALL keys of all clients, load only the reduction layers.
        with torch.no_grad():
            w_avg = FedAvg([clients[i].state_dict() for i in range(client_num)])
            if epoch == 1:
                for key in w_avg.keys():
                    if key.startswith(SHALLOW_PREFIX):
                        self.shallowKeys.append(key)
                    else:
                        self.deepKeys.append(key)
            shallow_dict = {k: w_avg[k] for k in self.shallowKeys}
            for cid in range(client_num):
                clients[cid].load_state_dict(shallow_dict, strict=False)
        theta = _copy(shallow_dict)

        # utils.py:43-56 (fedegoJob), one client after the other
        used_clients, losses, batch_losses, uploads, trained = [], [], [], [], []
        for cid in range(client_num):
            client, cdraws = clients[cid], _item(draws, 'clients', cid) or {}
            loss, used_epochs = [], []
            client.initShareBatch()
            for i in range(self.client_train_epoch):
                value, used = client.supervisedTrain(self.batch_size, _item(cdraws, 'epochs', i), generator)
                loss.append(value)
                used_epochs.append(used)
            udraws = cdraws.get('upload') or {}
            share_x, share_edge_index, share_y, share_mask, used_upload = client.getShareBatch(
                self.batch_size, udraws.get('neighbors'), generator, udraws.get('trees'))
            losses.append(loss)
            batch_losses.append(client.batch_losses)
            state = client.state_dict()
            trained.append(_copy(state))
            uploads.append({'x': share_x.clone(), 'y': share_y.clone(), 'edge_index': share_edge_index.clone(),
                            'mask': share_mask.clone(),
                            'theta': {k: state[k].detach().clone() for k in self.shallowKeys}})
            used_clients.append({'epochs': used_epochs,
                                 'upload': {'trees' if 'trees' in udraws else 'neighbors': used_upload}})

        # utils.py:79-89 (fedegoWork): concatenated in queue order; edge ids NOT offset.
        order = list(draws.get('upload_order', range(client_num)))
        if sorted(order) != list(range(client_num)):
            raise ValueError(f'upload_order must be a permutation of the client ids, got {order}')
        with torch.no_grad():
            clients_share_x = torch.cat([uploads[c]['x'] for c in order], 0)
            clients_share_y = torch.cat([uploads[c]['y'] for c in order], 0)
            clients_share_mask = torch.cat([uploads[c]['mask'] for c in order], 0)
            clients_share_edge_index = torch.cat([uploads[c]['edge_index'] for c in order], 1)
            if self.server_edge_offset:  # not upstream: each upload's edges shifted to its rows
                starts = torch.cumsum(torch.tensor([0] + [uploads[c]['x'].shape[0] for c in order[:-1]]), 0)
                clients_share_edge_index = torch.cat(
                    [uploads[c]['edge_index'] + int(starts[i]) for i, c in enumerate(order)], 1)

        # main.py:307-319
        sdraws = draws.get('server') or {}
        with torch.no_grad():
            server.loadData(clients_share_x, clients_share_edge_index, clients_share_y, clients_share_mask)
        server_losses, used_server = [], []
        for i in range(self.server_train_epoch):
            value, used = server.supervisedTrain(self.batch_size, _item(sdraws, 'epochs', i), generator)
            server_losses.append(value)
            used_server.append(used)
        global_p = server.getDistribution()
        for cid in range(client_num):
            clients[cid].setLamb(global_p=global_p, lamb_c=self.lamb_c, lamb_fixed=self.lamb_fixed)

        # main.py:330-341: Phi_i <- lamb_i * Phi_g + (1 - lamb_i) * Phi_i on every deep key
        with torch.no_grad():
            server_dict = server.state_dict()
            server_state = _copy(server_dict)
            for cid in range(client_num):
                origin_dict = clients[cid].state_dict()
                deep_dict = {k: clients[cid].lamb * server_dict[k] + (1 - clients[cid].lamb) * origin_dict[k]
                             for k in self.deepKeys}
                clients[cid].load_state_dict(deep_dict, strict=False)

        lamb = [float(c.lamb) for c in clients]
        return {
            'round': epoch,
            'theta': theta,
            'trained': trained,
            'client_losses': losses,
            'client_batch_losses': batch_losses,
            'uploads': uploads,
            'upload_order': order,
            'server_data': {'x': clients_share_x.clone(), 'y': clients_share_y.clone(),
                            'edge_index': clients_share_edge_index.clone(), 'mask': clients_share_mask.clone()},
            'server_losses': server_losses,
            'server': server_state,
            'global_p': global_p.clone(),
            'p': [c.p.clone() for c in clients],
            'emd': [float(c.emd) for c in clients],
            'lamb': lamb,
            'server_message': [{'theta': theta, 'phi': server_state, 'global_p': global_p.clone(), 'lamb': l}
                               for l in lamb],
            'local': [_copy(c.state_dict()) for c in clients],
            'draws': _draws_clone({'upload_order': order, 'clients': used_clients,
                                   'server': {'epochs': used_server}}),
        }

    def evaluate(self, draws=None, global_test=None, generator=None):
        """main.py:343-370: each client's current model (local Theta_i, mixed Phi_i) on its local
        test nodes and, if `global_test` (a Data with x, edge_index, y) is given, on every node of
        it. draws: {'clients': [{'local': [per batch neighbours], 'global': [...]}]} (same
        'neighbors' format; drawn when missing: per client, local then global). Updates and
        returns upstream's bookkeeping, including the early-stopping test."""
        draws = draws or {}
        local_f1, local_loss, test_f1, used = [], [], [], []
        for cid, client in enumerate(self.clients):
            cdraws = _item(draws, 'clients', cid) or {}
            f1, loss, local_pred, used_local = client.evaluate(self.batch_size, cdraws.get('local'), generator)
            local_f1.append(f1)
            local_loss.append(loss)
            self.max_local_f1[cid] = max(self.max_local_f1[cid], f1)
            entry = {'local': used_local}
            if global_test is not None:
                f1_t, _, used_global = client.test(global_test, self.batch_size, cdraws.get('global'), generator)
                test_f1.append(f1_t)
                self.max_test_f1[cid] = max(self.max_test_f1[cid], f1_t)
                entry['global'] = used_global
            used.append(entry)
        self.local_avg_f1.append(np.mean(local_f1))
        self.max_local_avg_f1 = max(self.max_local_avg_f1, self.local_avg_f1[-1])
        self.local_avg_loss.append(np.mean(local_loss))
        self.min_local_loss = min(self.min_local_loss, self.local_avg_loss[-1])
        if test_f1:
            self.test_avg_f1.append(np.mean(test_f1))
            self.max_test_avg_f1 = max(self.max_test_avg_f1, self.test_avg_f1[-1])
        stop = bool(self.epoch > self.early_stopping
                    and self.local_avg_loss[-1] / self.min_local_loss > self.early_stopping_bound)
        return {'local_f1': local_f1, 'local_loss': local_loss, 'test_f1': test_f1,
                'local_avg_f1': float(self.local_avg_f1[-1]), 'local_avg_loss': float(self.local_avg_loss[-1]),
                'test_avg_f1': float(self.test_avg_f1[-1]) if test_f1 else None,
                'max_local_avg_f1': float(self.max_local_avg_f1), 'max_test_avg_f1': float(self.max_test_avg_f1),
                'max_local_f1': list(self.max_local_f1), 'max_test_f1': list(self.max_test_f1),
                'stop': stop, 'draws': _draws_clone({'clients': used})}

    def weight_divergence(self):
        """main.py:372-380 with Client.getWD: WD_i = sum_k ||Phi_g[k] - Phi_i[k]||_2 /
        sum_k ||Phi_g[k]||_2 over the server's keys (numpy float32)."""
        server_dict = self.server.state_dict()
        for client in self.clients:
            client.getWD(server_dict)
        server_norm = 0
        for key in server_dict.keys():
            server_norm += np.linalg.norm(server_dict[key].cpu().numpy().flatten(), ord=2)
        return [float(client.wd / server_norm) for client in self.clients]
