"""GCFL+ (Xie et al., "Federated Graph Classification over Non-IID Graphs", NeurIPS 2021), ported
line by line to plain PyTorch for node classification on subgraphs: a test oracle.

Upstream (the authors): https://github.com/Oxfordblue7/GCFL at commit a6691ae (HEAD, 2022-07-10):
  server.py (Server: compute_pairwise_distances, min_cut, aggregate_clusterwise,
  compute_max_update_norm, compute_mean_update_norm, cache_model, flatten, reduce_add_average),
  client.py (Client_GC: download_from_server, cache_weights, reset, compute_weight_update,
  evaluate; copy, subtract_, flatten), training.py:158-221 (run_gcflplus: the round loop, the
  sequences of gradient norms, the EPS_1 / EPS_2 / seq_length split criterion), main_oneDS.py
  (defaults: seq_length 5, epsilon1 0.05, epsilon2 0.1, standardize False).
The libraries it calls, not installed here, are ported too:
  dtaidistance 2.x `dtw.distance` / `dtw.distance_matrix` (pure-Python path, default options),
  networkx 2.x-3.x `stoer_wagner` with its `BinaryHeap`, `Graph` edge iteration and
  `single_source_shortest_path_length` (on methods/reference/pyg.py's NxGraph).
Node-classification adaptation, from https://github.com/xkLi-Allen/OpenFGL at commit 5483768
(openfgl/flcore/gcfl_plus/{client,server,gcfl_plus_config}.py): the authors' GIN graph
classifier and its `train_gc` loop become OpenFGL's NodeClsTask (methods/reference/openfgl.py: a
GCN trained full-batch with a persistent Adam, CE over the train mask), so one "local epoch"
is one Adam step on the whole subgraph. OpenFGL's own GCFL+ is graph-level (it loads a GIN with
global_add_pool), so only its task/model is taken, not its round indexing (below).

Deliberate differences from upstream (nothing else is changed):
  * The shared ("gconv") parameters: upstream shares only the GIN convolutions (the server
    model `serverGIN` has just `graph_convs`); the clients keep `pre`, `post` and `readout`.
    A GCN is all graph convolutions, so every parameter is shared by default
    (`shared_keys`, default all of the GCN's).
  * Aggregation weight: upstream `client.train_size` (the number of training graphs).
    `sample_weight='num_nodes'` (default) uses OpenFGL's NodeClsTask.num_samples (ALL nodes of
    the subgraph, openfgl/task/node_cls.py:175-183), 'num_train_nodes' the train nodes.
  * The warm-up `c_round > 20` is `c_round > warmup_rounds` (default 20) so that a test can
    split within a few rounds. c_round counts from 1 as in training.py:166 (OpenFGL's port
    tests its 0-based round against 20, one round later).
  * Participating clients: upstream `random.sample(clients, n)` (training.py:173), a random
    permutation of ALL clients; it only orders the clients' (independent) local training and
    so changes nothing without dropout. Here: id order.
  * Initial weights are injected (`global_state`); CPU only; prints and pandas dropped.
  * dtaidistance: `distance_matrix` is ported as in dtaidistance >= 2.2 (full symmetric matrix,
    zero diagonal). Older releases returned only the upper triangle with inf elsewhere, where
    upstream's `np.max(d) - d` would give inf/nan edge weights.
  * Evaluation (acc_clients, cache_model): the test accuracy of NodeClsTask.evaluate on each
    client's current model (its cluster's aggregate, as upstream); the final frame's
    per-client max over the cached models is `final_accuracies()`.
"""
import heapq
import itertools
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference import openfgl  # noqa: E402
from methods.reference.pyg import NxGraph  # noqa: E402

UPSTREAM = 'Oxfordblue7/GCFL@a6691ae'
OPENFGL = 'xkLi-Allen/OpenFGL@5483768'

# Oxfordblue7/GCFL@a6691ae main_oneDS.py:135-142 (= OpenFGL gcfl_plus_config.py:1-6)
DEFAULTS = dict(seq_length=5, eps1=0.05, eps2=0.1, standardize=False)
WARMUP_ROUNDS = 20  # training.py:185 `c_round > 20`


# ----------------------------------------------------------------------------------------------
# dtaidistance (2.x), dtw.py, pure-Python path with the defaults upstream uses
# (window=None, max_dist=None, max_step=None, max_length_diff=None, penalty=None, psi=None,
# use_pruning=False, inner_dist='squared euclidean').

def dtw_distance(s1, s2):
    """dtaidistance.dtw.distance(s1, s2): sqrt of the least sum of squared differences along a
    warping path from (0, 0) to (r-1, c-1) (steps (1,0), (0,1), (1,1)), in float64. Each cell is
    d + min(diagonal, up + penalty, left + penalty) with penalty 0."""
    r, c = len(s1), len(s2)
    inf = float('inf')
    dtw = [[inf] * (c + 1) for _ in range(r + 1)]
    dtw[0][0] = 0.0
    for i in range(r):
        for j in range(c):
            d = (float(s1[i]) - float(s2[j])) ** 2
            dtw[i + 1][j + 1] = d + min(dtw[i][j], dtw[i][j + 1], dtw[i + 1][j])
    return float(np.sqrt(dtw[r][c]))


def dtw_distance_matrix(s):
    """dtaidistance.dtw.distance_matrix(s) (compact=False, only_triu=False, block=None):
    the distances of the pairs r < c (np.triu_indices order), mirrored, zero diagonal."""
    n = len(s)
    dists = np.full((n, n), np.inf, dtype=np.double)
    for r in range(n):
        for c in range(r + 1, n):
            dists[r, c] = dtw_distance(s[r], s[c])
            dists[c, r] = dists[r, c]
    np.fill_diagonal(dists, 0)
    return dists


# ----------------------------------------------------------------------------------------------
# networkx (2.x-3.x): utils/heaps.py BinaryHeap, classes/reportviews.py EdgeDataView.__iter__,
# classes/graph.py remove_node, algorithms/shortest_paths/unweighted.py
# single_source_shortest_path_length, algorithms/connectivity/stoer_wagner.py.

class BinaryHeap:
    """networkx.utils.heaps.BinaryHeap: a min-heap of key -> value with lazy deletion; among
    equal values the earliest (re)insertion comes first. insert() only lowers a value."""

    def __init__(self):
        self._dict = {}
        self._heap = []
        self._count = itertools.count()

    def min(self):
        while True:
            value, _, key = self._heap[0]
            if key in self._dict and value == self._dict[key]:
                break
            heapq.heappop(self._heap)
        return (key, value)

    def pop(self):
        while True:
            value, _, key = self._heap[0]
            heapq.heappop(self._heap)
            if key in self._dict and value == self._dict[key]:
                break
        del self._dict[key]
        return (key, value)

    def get(self, key, default=None):
        return self._dict.get(key, default)

    def insert(self, key, value, allow_increase=False):
        if key in self._dict:
            old_value = self._dict[key]
            if value < old_value or (allow_increase and value > old_value):
                self._dict[key] = value
                heapq.heappush(self._heap, (value, next(self._count), key))
                return value < old_value
            return False
        self._dict[key] = value
        heapq.heappush(self._heap, (value, next(self._count), key))
        return True


def _edges_with_data(g):
    """networkx Graph.edges(data=True): each undirected edge once, from the first of its ends
    in node order (self loops included)."""
    seen = {}
    for n, nbrs in g.adj.items():
        for nbr, dd in nbrs.items():
            if nbr not in seen:
                yield n, nbr, dd
        seen[n] = 1


def _remove_node(g, n):
    """networkx Graph.remove_node."""
    nbrs = list(g.adj[n])
    del g.nodes[n]
    for u in nbrs:
        del g.adj[u][n]
    del g.adj[n]


def _single_source_shortest_path_length(g, source):
    """networkx single_source_shortest_path_length(G, source): {node: hops}, in BFS order."""
    seen = {source}
    nextlevel = [source]
    out = {source: 0}
    level = 0
    n = len(g.adj)
    while nextlevel:
        level += 1
        thislevel = nextlevel
        nextlevel = []
        for v in thislevel:
            for w in g.adj[v]:
                if w not in seen:
                    seen.add(w)
                    nextlevel.append(w)
                    out[w] = level
            if len(seen) == n:
                return out
    return out


def stoer_wagner(graph, weight='weight'):
    """networkx.stoer_wagner(G) with the default BinaryHeap. Returns (cut_value, partition):
    partition[0] is the side holding the node removed in the best phase, both as lists in
    CPython set order (as networkx returns them)."""
    n = len(graph.nodes)
    if n < 2:
        raise ValueError('graph has less than two nodes.')
    if len(_single_source_shortest_path_length(graph, next(iter(graph.nodes)))) != n:
        raise ValueError('graph is not connected.')

    # Make a copy of the graph for internal use (self loops dropped).
    G = NxGraph()
    for u, v, e in _edges_with_data(graph):
        if u != v:
            G.add_edge(u, v, weight=e.get(weight, 1))

    for u, v, e in _edges_with_data(G):
        if e['weight'] < 0:
            raise ValueError('graph has a negative-weighted edge.')

    cut_value = float('inf')
    nodes = set(G.nodes)
    contractions = []  # contracted node pairs

    # Repeatedly pick a pair of nodes to contract until only one node is left.
    for i in range(n - 1):
        # Pick an arbitrary node u (networkx arbitrary_element: the first) and create A = {u}.
        u = next(iter(G.nodes))
        A = {u}
        # Repeatedly add the node most tightly connected to A.
        h = BinaryHeap()  # min-heap emulating a max-heap
        for v, e in G.adj[u].items():
            h.insert(v, -e['weight'])
        for j in range(n - i - 2):
            u = h.pop()[0]
            A.add(u)
            for v, e in G.adj[u].items():
                if v not in A:
                    h.insert(v, h.get(v, 0) - e['weight'])
        # A and the remaining node v define a cut of the phase.
        v, w = h.min()
        w = -w
        if w < cut_value:
            cut_value = w
            best_phase = i
        # Contract v and the last node added to A.
        contractions.append((u, v))
        for w, e in G.adj[v].items():
            if w != u:
                if w not in G.adj[u]:
                    G.add_edge(u, w, weight=e['weight'])
                else:
                    G.adj[u][w]['weight'] += e['weight']
        _remove_node(G, v)

    # Recover the optimal partitioning from the contractions.
    G = NxGraph()
    for a, b in itertools.islice(contractions, best_phase):
        G.add_edge(a, b)
    v = contractions[best_phase][1]
    G.add_node(v)
    reachable = set(_single_source_shortest_path_length(G, v))
    partition = (list(reachable), list(nodes - reachable))

    return cut_value, partition


# ----------------------------------------------------------------------------------------------
# Oxfordblue7/GCFL@a6691ae server.py

def flatten(source):
    # server.py:99-100 (= client.py:111-112)
    return torch.cat([value.flatten() for value in source.values()])


def reduce_add_average(targets, sources, total_size):
    # server.py:112-116: every target += sum_k size_k * dW_k / total_size (float32, stacked in
    # cluster order).
    for target in targets:
        for name in target:
            tmp = torch.div(torch.sum(torch.stack([torch.mul(source[0][name].data, source[1]) for source in sources]), dim=0), total_size).clone()
            target[name].data += tmp


class Server:
    """server.py:8-97. `model`: the shared part (upstream serverGIN); W = its parameters."""

    def __init__(self, model, shared_keys=None):
        # server.py:9-12
        self.model = model
        self.W = {key: value for key, value in self.model.named_parameters()
                  if shared_keys is None or key in shared_keys}
        self.model_cache = []

    def compute_pairwise_distances(self, seqs, standardize=False):
        # server.py:34-43: DTW distances
        if standardize:
            # standardize to only focus on the trends (population std, numpy's ddof=0)
            seqs = np.array(seqs)
            seqs = seqs / seqs.std(axis=1).reshape(-1, 1)
            distances = dtw_distance_matrix(seqs)
        else:
            distances = dtw_distance_matrix(seqs)
        return distances

    def min_cut(self, similarity, idc):
        # server.py:45-53: the complete graph, self loops included (stoer_wagner drops them)
        g = NxGraph()
        for i in range(len(similarity)):
            for j in range(len(similarity)):
                g.add_edge(i, j, weight=similarity[i][j])
        cut, partition = stoer_wagner(g)
        c1 = [int(idc[x]) for x in partition[0]]
        c2 = [int(idc[x]) for x in partition[1]]
        return c1, c2

    def aggregate_clusterwise(self, client_clusters):
        # server.py:55-70
        for cluster in client_clusters:
            targs = []
            sours = []
            total_size = 0
            for client in cluster:
                W = {}
                dW = {}
                for k in self.W.keys():
                    W[k] = client.W[k]
                    dW[k] = client.dW[k]
                targs.append(W)
                sours.append((dW, client.train_size))
                total_size += client.train_size
            # pass train_size, and weighted aggregate
            reduce_add_average(targets=targs, sources=sours, total_size=total_size)

    def compute_max_update_norm(self, cluster):
        # server.py:72-81: max_k ||dW_k|| over the shared parameters (float32 norm)
        max_dW = -np.inf
        for client in cluster:
            dW = {}
            for k in self.W.keys():
                dW[k] = client.dW[k]
            update_norm = torch.norm(flatten(dW)).item()
            if update_norm > max_dW:
                max_dW = update_norm
        return max_dW

    def compute_mean_update_norm(self, cluster):
        # server.py:84-92: ||mean_k dW_k|| (UNweighted mean)
        cluster_dWs = []
        for client in cluster:
            dW = {}
            for k in self.W.keys():
                dW[k] = client.dW[k]
            cluster_dWs.append(flatten(dW))
        return torch.norm(torch.mean(torch.stack(cluster_dWs), dim=0)).item()

    def cache_model(self, idcs, params, accuracies):
        # server.py:94-97
        self.model_cache += [(list(idcs),
                              {name: params[name].data.clone() for name in params},
                              [accuracies[i] for i in idcs])]


# ----------------------------------------------------------------------------------------------
# Oxfordblue7/GCFL@a6691ae client.py

def copy(target, source, keys):
    # client.py:103-105
    for name in keys:
        target[name].data = source[name].data.clone()


def subtract_(target, minuend, subtrahend):
    # client.py:107-109: over ALL of target's keys (every parameter)
    for name in target:
        target[name].data = minuend[name].data.clone() - subtrahend[name].data.clone()


class Client:
    """client.py:4-100 (Client_GC) on OpenFGL's NodeClsTask (model + persistent Adam)."""

    def __init__(self, task, client_id, train_size):
        # client.py:5-25
        self.task = task
        self.model = task.model
        self.id = client_id
        self.train_size = train_size
        self.W = {key: value for key, value in self.model.named_parameters()}
        self.dW = {key: torch.zeros_like(value) for key, value in self.model.named_parameters()}
        self.W_old = {key: value.data.clone() for key, value in self.model.named_parameters()}
        self.gconvNames = None
        self.train_stats = None
        self.weightsNorm = 0.
        self.gradsNorm = 0.
        self.convGradsNorm = 0.
        self.convWeightsNorm = 0.
        self.convDWsNorm = 0.

    def download_from_server(self, server):
        # client.py:27-30
        self.gconvNames = server.W.keys()
        for k in server.W:
            self.W[k].data = server.W[k].data.clone()

    def cache_weights(self):
        # client.py:32-34 (FedProx only upstream; ported for completeness)
        for name in self.W.keys():
            self.W_old[name].data = self.W[name].data.clone()

    def reset(self):
        # client.py:36-37: the shared weights go back to their pre-training values
        copy(target=self.W, source=self.W_old, keys=self.gconvNames)

    def compute_weight_update(self, local_epoch):
        # client.py:55-77
        copy(target=self.W_old, source=self.W, keys=self.gconvNames)

        # client.py:59 train_gc(...) -> OpenFGL NodeClsTask.train (local_epoch full-batch Adam
        # steps; the task's num_epochs is local_epoch).
        self.task.train()

        subtract_(target=self.dW, minuend=self.W, subtrahend=self.W_old)

        self.weightsNorm = torch.norm(flatten(self.W)).item()
        weights_conv = {key: self.W[key] for key in self.gconvNames}
        self.convWeightsNorm = torch.norm(flatten(weights_conv)).item()
        dWs_conv = {key: self.dW[key] for key in self.gconvNames}
        self.convDWsNorm = torch.norm(flatten(dWs_conv)).item()
        # .grad is the gradient of the LAST backward of the local training, i.e. of the loss at
        # the weights before the last Adam step; Adam's weight decay is not in it (torch adds
        # it to a copy).
        grads = {key: value.grad for key, value in self.W.items()}
        self.gradsNorm = torch.norm(flatten(grads)).item()
        grads_conv = {key: self.W[key].grad for key in self.gconvNames}
        self.convGradsNorm = torch.norm(flatten(grads_conv)).item()

    def evaluate(self):
        # client.py:79-80 eval_gc on the test loader -> NodeClsTask.evaluate's test loss/accuracy
        out = self.task.evaluate()
        return float(out['loss_test']), out['accuracy_test']


# ----------------------------------------------------------------------------------------------
# Oxfordblue7/GCFL@a6691ae training.py:158-221 (run_gcflplus), one round per train_round().

def state_of(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


class GcflPlusFederation:
    """GcflPlusFederation(subgraphs, num_classes, global_state=None, hid_dim=64, num_layers=2,
    dropout=0.5, lr=1e-2, weight_decay=5e-4, local_epoch=3, eps1=0.05, eps2=0.1, seq_length=5,
    standardize=False, warmup_rounds=20, sample_weight='num_nodes', shared_keys=None).

    subgraphs: as methods/reference/openfgl.py's (x, edge_index, y, train/val/test_idx).
    global_state: the server model's initial GCN state_dict (OpenFGL names layers.{0,1}.*);
    every client starts from it too. train_round() runs one c_round (1, 2, ...)."""

    def __init__(self, subgraphs, num_classes, global_state=None, hid_dim=64, num_layers=2, dropout=0.5,
                 lr=1e-2, weight_decay=5e-4, local_epoch=3, eps1=DEFAULTS['eps1'], eps2=DEFAULTS['eps2'],
                 seq_length=DEFAULTS['seq_length'], standardize=DEFAULTS['standardize'],
                 warmup_rounds=WARMUP_ROUNDS, sample_weight='num_nodes', shared_keys=None):
        args = openfgl.make_args(hid_dim=hid_dim, num_layers=num_layers, dropout=dropout, lr=lr,
                                 weight_decay=weight_decay, num_epochs=local_epoch)
        input_dim = subgraphs[0].x.shape[1]
        self.EPS_1, self.EPS_2 = eps1, eps2
        self.seq_length, self.standardize = seq_length, standardize
        self.warmup_rounds = warmup_rounds
        self.clients = []
        for i, data in enumerate(subgraphs):
            task = openfgl.NodeClsTask(args, i, data, input_dim, num_classes)
            if global_state is not None:
                task.model.load_state_dict(global_state)
            if sample_weight == 'num_nodes':
                size = task.num_samples
            elif sample_weight == 'num_train_nodes':
                size = int(task.train_mask.sum())
            else:
                raise ValueError(f'sample_weight: {sample_weight!r}')
            self.clients.append(Client(task, i, size))  # after the load: W_old is the loaded state
        server_model = openfgl.GCN(input_dim, hid_dim, num_classes, num_layers, dropout)
        if global_state is not None:
            server_model.load_state_dict(global_state)
        self.server = Server(server_model, shared_keys)

        clients = self.clients
        # training.py:159-164
        self.cluster_indices = [list(range(len(clients)))]
        self.client_clusters = [[clients[i] for i in idcs] for idcs in self.cluster_indices]
        self.seqs_grads = {c.id: [] for c in clients}
        for client in clients:
            client.download_from_server(self.server)
        self.c_round = 0
        self.acc_clients = None

    def cluster_step(self, c_round):
        """training.py:181-200: each cluster splits in two when its mean update is small, its
        largest update large, it has > 2 clients, the warm-up is over and EVERY client (not
        only this cluster's) has seq_length gradient norms; a split empties every client's
        sequence, so at most one cluster splits per round. Returns the split records."""
        clients, server = self.clients, self.server
        splits = []
        norms = []
        cluster_indices_new = []
        for idc in self.cluster_indices:
            max_norm = server.compute_max_update_norm([clients[i] for i in idc])
            mean_norm = server.compute_mean_update_norm([clients[i] for i in idc])
            norms.append({'cluster': list(idc), 'max_norm': max_norm, 'mean_norm': mean_norm})
            if mean_norm < self.EPS_1 and max_norm > self.EPS_2 and len(idc) > 2 and c_round > self.warmup_rounds \
                    and all(len(value) >= self.seq_length for value in self.seqs_grads.values()):

                if self.acc_clients is None:  # upstream: NameError (acc_clients is set at line 204)
                    raise RuntimeError('a split before the first evaluation (c_round 1): upstream fails here')
                server.cache_model(idc, clients[idc[0]].W, self.acc_clients)

                tmp = [self.seqs_grads[id][-self.seq_length:] for id in idc]
                dtw_distances = server.compute_pairwise_distances(tmp, self.standardize)
                c1, c2 = server.min_cut(np.max(dtw_distances) - dtw_distances, idc)
                cluster_indices_new += [c1, c2]
                splits.append({'cluster': list(idc), 'seqs': tmp, 'dtw': dtw_distances, 'c1': c1, 'c2': c2})

                self.seqs_grads = {c.id: [] for c in clients}
            else:
                cluster_indices_new += [idc]

        self.cluster_indices = cluster_indices_new
        self.client_clusters = [[clients[i] for i in idcs] for idcs in self.cluster_indices]
        return splits, norms

    def train_round(self):
        """One round (training.py:166-204). Returns copies: c_round; local (each client's model
        right after local training, before reset); dW; grad_norms (convGradsNorm per client);
        seqs (every client's sequence after this round's append, before a split empties it);
        norms (per cluster checked: max/mean update norm); splits; cluster_indices (after);
        clients (each client's model after the cluster-wise aggregation); acc_clients."""
        self.c_round += 1
        c_round = self.c_round
        clients, server = self.clients, self.server
        if c_round == 1:  # training.py:169-171
            for client in clients:
                client.download_from_server(server)

        participating_clients = list(clients)  # training.py:173 (random.sample(clients, n))
        local = {}
        for client in participating_clients:  # training.py:175-179
            client.compute_weight_update(self.task_epochs(client))
            local[client.id] = state_of(client.model)
            client.reset()
            self.seqs_grads[client.id].append(client.convGradsNorm)
        seqs = {k: list(v) for k, v in self.seqs_grads.items()}

        splits, norms = self.cluster_step(c_round)

        server.aggregate_clusterwise(self.client_clusters)  # training.py:202

        self.acc_clients = [client.evaluate()[1] for client in clients]  # training.py:204
        return {
            'c_round': c_round,
            'local': [local[c.id] for c in clients],
            'dW': [{k: v.detach().clone() for k, v in c.dW.items()} for c in clients],
            'grad_norms': [c.convGradsNorm for c in clients],
            'seqs': seqs,
            'norms': norms,
            'splits': splits,
            'cluster_indices': [list(idc) for idc in self.cluster_indices],
            'clients': [state_of(c.model) for c in clients],
            'acc_clients': list(self.acc_clients),
        }

    @staticmethod
    def task_epochs(client):
        return client.task.args.num_epochs

    def final_accuracies(self):
        """training.py:206-219: cache every final cluster's model, then each client's reported
        test accuracy is the MAX over all cached models (the pre-split ones included) of its
        accuracy when that model was cached."""
        for idc in self.cluster_indices:
            self.server.cache_model(idc, self.clients[idc[0]].W, self.acc_clients)
        results = np.zeros([len(self.clients), len(self.server.model_cache)])
        for i, (idcs, W, accs) in enumerate(self.server.model_cache):
            results[idcs, i] = np.array(accs)
        return results.max(axis=1)
