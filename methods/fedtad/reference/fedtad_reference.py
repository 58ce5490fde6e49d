"""Line-by-line plain-PyTorch port of the authors' FedTAD, used as a test oracle.

Upstream: https://github.com/zyl24/FedTAD at commit 3285d54 (HEAD), files
model.py, util/task_util.py, train_fedtad.py, train_fedavg.py. Every port below
names its upstream file:line. Only fedtad_mode='raw_distill' (the default) is
ported. PyG primitives come from methods/reference/pyg.py.

Deliberate differences from upstream (nothing else is changed):
  * Everything runs on the CPU (upstream: cuda:{gpu_id}); `.to(device)` is dropped.
  * Initial weights of the global model and generator, the ckr matrix and the
    per-epoch noise z can be injected, so that another implementation can be
    driven from identical inputs. Printing and the best-round bookkeeping are
    dropped; the values they print are returned instead.
  * train_fedtad.py:290-293 at 3285d54 is mis-indented (an IndentationError).
    We run those four lines once, after `global_model.train()` and before the
    `for it_d` loop, which is what the commit meant. Revision 07a1617 ran them
    inside the `for client_id` loop of every it_d step instead; both give the
    same values, because the generator is in eval mode with dropout 0 and is
    not updated during that loop, and the result is detached.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Adam

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.pyg import GCNConv, Data, add_self_loops, dense_to_sparse, to_dense_adj  # noqa: E402


# zyl24/FedTAD@3285d54 model.py:6-20
class GCN(nn.Module):
    """state_dict: conv1.bias [hid], conv1.lin.weight [hid, feat],
    conv2.bias [out], conv2.lin.weight [out, hid]."""

    def __init__(self, feat_dim, hid_dim, out_dim, dropout):
        super(GCN, self).__init__()
        self.conv1 = GCNConv(feat_dim, hid_dim)
        self.conv2 = GCNConv(hid_dim, out_dim)
        self.dropout = dropout

    def forward(self, data):
        x, edge_index = data.x, data.edge_index
        x = self.conv1(x, edge_index)
        x = F.relu(x)
        # Upstream calls F.dropout without training=self.training, so dropout is
        # applied in eval() too (evaluation and distillation included). Kept.
        embedding = F.dropout(x, p=self.dropout)
        x = self.conv2(embedding, edge_index)
        return x
    # rep_forward (model.py:22-25) is only used by fedtad_mode='rep_distill'; not ported.


# zyl24/FedTAD@3285d54 model.py:28-50
class FedTAD_ConGenerator(nn.Module):
    """state_dict: emb_layer.weight [C, C], hid_layers.{0,3,6}.{weight,bias}
    ([64, noise+C], [128, 64], [256, 128]), nodes_layer.{weight [feat, 256], bias}."""

    def __init__(self, noise_dim, feat_dim, out_dim, dropout):
        super(FedTAD_ConGenerator, self).__init__()
        self.noise_dim = noise_dim
        self.emb_layer = nn.Embedding(out_dim, out_dim)
        hid_layers = []
        dims = [noise_dim + out_dim, 64, 128, 256]
        for i in range(len(dims) - 1):
            hid_layers.append(nn.Linear(dims[i], dims[i + 1]))
            hid_layers.append(nn.Tanh())
            hid_layers.append(nn.Dropout(p=dropout, inplace=False))
        self.hid_layers = nn.Sequential(*hid_layers)
        self.nodes_layer = nn.Linear(256, feat_dim)

    def forward(self, z, c):
        z_c = torch.cat((self.emb_layer.forward(c), z), dim=-1)  # label embedding first, then noise
        hid = self.hid_layers(z_c)
        node_logits = self.nodes_layer(hid)
        return node_logits


# zyl24/FedTAD@3285d54 util/task_util.py:7-11
def accuracy(pred, ground_truth):
    """Percentage of rows whose argmax equals the label (ZeroDivisionError on an empty set, as upstream)."""
    y_hat = pred.max(1)[1]
    correct = (y_hat == ground_truth).nonzero().shape[0]
    acc = correct / ground_truth.shape[0]
    return acc * 100


# zyl24/FedTAD@3285d54 util/task_util.py:34-61
class DiversityLoss(nn.Module):
    """exp(mean_{i,j}(-noise_dist[i,j] * layer_dist[i,j])), noise_dist = mean
    squared difference, layer_dist = mean absolute difference for metric 'l1'."""

    def __init__(self, metric):
        super().__init__()
        self.metric = metric
        self.cosine = nn.CosineSimilarity(dim=2)

    def compute_distance(self, tensor1, tensor2, metric):
        if metric == 'l1':
            return torch.abs(tensor1 - tensor2).mean(dim=(2,))
        elif metric == 'l2':
            return torch.pow(tensor1 - tensor2, 2).mean(dim=(2,))
        elif metric == 'cosine':
            return 1 - self.cosine(tensor1, tensor2)
        else:
            raise ValueError(metric)

    def pairwise_distance(self, tensor, how):
        n_data = tensor.size(0)
        tensor1 = tensor.expand((n_data, n_data, tensor.size(1)))
        tensor2 = tensor.unsqueeze(dim=1)
        return self.compute_distance(tensor1, tensor2, how)

    def forward(self, noises, layer):
        if len(layer.shape) > 2:
            layer = layer.view((layer.size(0), -1))
        layer_dist = self.pairwise_distance(layer, how=self.metric)
        noise_dist = self.pairwise_distance(noises, how='l2')
        return torch.exp(torch.mean(-noise_dist * layer_dist))


# zyl24/FedTAD@3285d54 util/task_util.py:64-76
def construct_graph(node_logits, adj_logits, k=5):
    """Top-k of each row of adj_logits, symmetrised, diagonal set; edge_index is
    the row-major nonzeros (so it contains each (i, i) once) followed by a
    second loop per node from add_self_loops, exactly as upstream. (GCNConv's
    gcn_norm collapses the duplicated loops into one.)"""
    adjacency_matrix = torch.zeros_like(adj_logits)
    topk_values, topk_indices = torch.topk(adj_logits, k=k, dim=1)
    for i in range(node_logits.shape[0]):
        adjacency_matrix[i, topk_indices[i]] = 1
    adjacency_matrix = adjacency_matrix + adjacency_matrix.t()
    adjacency_matrix[adjacency_matrix > 1] = 1
    adjacency_matrix.fill_diagonal_(1)
    edge = adjacency_matrix.long()
    edge_index, _ = dense_to_sparse(edge)
    edge_index = add_self_loops(edge_index)[0]
    data = Data(x=node_logits, edge_index=edge_index)
    return data


# zyl24/FedTAD@3285d54 util/task_util.py:79-88
def random_walk_with_matrix(T, walk_length, start):
    current_node = start
    walk = [current_node]
    for _ in range(walk_length - 1):
        probabilities = F.softmax(T[current_node, :], dim=0)
        probabilities /= torch.sum(probabilities)
        next_node = torch.multinomial(probabilities, 1).item()
        walk.append(next_node)
        current_node = next_node
    return walk


# zyl24/FedTAD@3285d54 util/task_util.py:93-106
def cal_topo_emb(edge_index, num_nodes, max_walk_length):
    """[num_nodes, 1+2+...+max_walk_length] int64 tensor of visited node ids,
    walks of length 1..max_walk_length from every node. Note (upstream
    behaviour, kept): `A * pinverse(D)` is an elementwise product, so T is
    diagonal (T[i,i] = 1/deg_i) and softmax(T[i]) puts weight e^(1/deg_i) on i
    and 1 on EVERY other node: the walk is not restricted to neighbours."""
    A = to_dense_adj(add_self_loops(edge_index)[0], max_num_nodes=num_nodes).squeeze()
    D = torch.diag(torch.sum(A, dim=1))
    T = A * torch.pinverse(D)
    result_each_length = []
    for i in range(1, max_walk_length + 1):
        result_per_node = []
        for start in range(num_nodes):
            result_walk = random_walk_with_matrix(T, i, start)
            result_per_node.append(torch.tensor(result_walk).view(1, -1))
        result_each_length.append(torch.vstack(result_per_node))
    topo_emb = torch.hstack(result_each_length)
    return topo_emb


def default_topo_emb(edge_index, num_nodes):
    # zyl24/FedTAD@3285d54 train_fedtad.py:99 uses max_walk_length=5.
    return cal_topo_emb(edge_index=edge_index, num_nodes=num_nodes, max_walk_length=5)


# zyl24/FedTAD@3285d54 train_fedtad.py:96-111 (the body of the `else:` branch
# that computes ckr when ./ckr/{dataset}_{partition}_{num_clients}.pt is absent).
def class_reliability(subgraphs, num_classes, topo_emb_fn=default_topo_emb):
    """Unnormalised class-wise knowledge reliability, [num_clients, num_classes]
    float32: for each train node i, (1 + sum over out-edges (i, j) of
    cos(ft_emb[i], ft_emb[j])) / (out_degree + 1), added to ckr[client, y_i];
    ft_emb = cat(x, topo_emb_fn(edge_index, num_nodes)) (int64 topo ids promote
    to float32)."""
    ckr = torch.zeros((len(subgraphs), num_classes))
    for client_id in range(len(subgraphs)):
        data = subgraphs[client_id]
        graph_emb = topo_emb_fn(data.edge_index, data.x.shape[0])
        ft_emb = torch.cat((data.x, graph_emb), dim=1)
        # Upstream iterates `nonzero().squeeze()`, which is a 0-d tensor (and a
        # TypeError) when a client has exactly one train node; view(-1) gives
        # the same nodes in the same order and also handles that case.
        for train_i in data.train_idx.nonzero().view(-1):
            neighbor = data.edge_index[1, :][data.edge_index[0, :] == train_i]
            node_all = 0
            for neighbor_j in neighbor:
                node_kr = torch.cosine_similarity(ft_emb[train_i], ft_emb[neighbor_j], dim=0)
                node_all += node_kr
            node_all += 1
            node_all /= (neighbor.shape[0] + 1)
            label = data.y[train_i]
            ckr[client_id, label] += node_all
    return ckr


def _clone_state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


class FedTadReference:
    """The authors' FedTAD server/client loop (train_fedtad.py), or with
    fedtad=False their FedAvg (train_fedavg.py), one round per train_round().

    subgraphs: objects with x [n, F] float32, edge_index [2, E] int64, y [n]
    int64, train_idx / val_idx / test_idx bool [n]. global_num_nodes is
    upstream's dataset.global_data.x.shape[0]. ckr is the UNnormalised
    [num_clients, num_classes] matrix (upstream loads it from ./ckr/*.pt or
    computes it with class_reliability); None computes it here with the
    authors' random-walk embedding (needs the torch RNG). global_state /
    generator_state are loaded at construction; None keeps PyTorch's init.
    """

    def __init__(self, subgraphs, num_classes, global_num_nodes, ckr, global_state, generator_state,
                 hid_dim=64, dropout=0.5, lr=1e-2, weight_decay=5e-4, num_epochs=3, glb_epochs=5, it_g=1, it_d=5,
                 lr_g=1e-3, lr_d=1e-3, num_gen=100, lam1=1, lam2=1, topk=5, noise_dim=32, fedtad=True,
                 diversity_once=False):
        self.subgraphs = subgraphs
        self.num_classes = num_classes
        self.num_clients = len(subgraphs)
        self.global_num_nodes = global_num_nodes
        self.num_epochs, self.glb_epochs, self.it_g, self.it_d = num_epochs, glb_epochs, it_g, it_d
        self.num_gen, self.lam1, self.lam2, self.topk, self.noise_dim = num_gen, lam1, lam2, topk, noise_dim
        self.fedtad = fedtad
        self.diversity_once = diversity_once
        self.loss_fn = nn.CrossEntropyLoss()

        # zyl24/FedTAD@3285d54 train_fedtad.py:73-86 (train_fedavg.py:71-80 for the first three)
        self.local_models = [GCN(feat_dim=subgraphs[client_id].x.shape[1], hid_dim=hid_dim,
                                 out_dim=num_classes, dropout=dropout)
                             for client_id in range(self.num_clients)]
        # Created once and kept across rounds, as upstream: Adam moments persist.
        self.local_optimizers = [Adam(self.local_models[client_id].parameters(), lr=lr, weight_decay=weight_decay)
                                 for client_id in range(self.num_clients)]
        self.global_model = GCN(feat_dim=subgraphs[0].x.shape[1], hid_dim=hid_dim,
                                out_dim=num_classes, dropout=dropout)
        # noise_dim is hard-coded to 32 upstream (here and in torch.randn((num_gen, 32))).
        # feat_dim is the raw feature dim because fedtad_mode='raw_distill'.
        self.generator = FedTAD_ConGenerator(noise_dim=noise_dim, feat_dim=subgraphs[0].x.shape[1],
                                             out_dim=num_classes, dropout=0)
        if global_state is not None:
            self.global_model.load_state_dict(global_state)
        if generator_state is not None:
            self.generator.load_state_dict(generator_state)
        # load_state_dict copies in place, so the optimizers below hold the same
        # Parameter objects the aggregation later overwrites via `.data`.
        self.global_optimizer = Adam(self.global_model.parameters(), lr=lr_d, weight_decay=weight_decay)
        self.generator_optimizer = Adam(self.generator.parameters(), lr=lr_g, weight_decay=weight_decay)

        if fedtad:
            # zyl24/FedTAD@3285d54 train_fedtad.py:92-115
            if ckr is None:
                ckr = class_reliability(subgraphs, num_classes)
            self.ckr = ckr.float()
            # Column-wise: each class's reliabilities sum to 1 over clients
            # (a class with no train node anywhere gives NaN, as upstream).
            self.normalized_ckr = self.ckr / self.ckr.sum(0)

    def _broadcast(self):
        # zyl24/FedTAD@3285d54 train_fedtad.py:125-126 (train_fedavg.py:89-90)
        for client_id in range(self.num_clients):
            self.local_models[client_id].load_state_dict(self.global_model.state_dict())

    def evaluate(self):
        """The "global eval" block at the start of an upstream round: broadcast,
        then every local model (= current global weights) in eval() on its own
        subgraph. Returns {'val', 'test': node-count-weighted accuracy in %,
        'clients': [{'acc_train', 'acc_val', 'acc_test', 'loss_train',
        'loss_val', 'loss_test'}]}. Call it before train_round() to reproduce
        upstream's RNG use when dropout > 0 (dropout stays on in eval)."""
        # zyl24/FedTAD@3285d54 train_fedtad.py:121-122 (absent from train_fedavg.py; no numeric effect)
        self.global_model.eval()
        self.generator.eval()
        self._broadcast()
        # zyl24/FedTAD@3285d54 train_fedtad.py:130-151 (train_fedavg.py:94-115)
        global_acc_val = 0
        global_acc_test = 0
        clients = []
        for client_id in range(self.num_clients):
            data = self.subgraphs[client_id]
            self.local_models[client_id].eval()
            # no_grad: upstream builds an autograd graph here but never uses it.
            with torch.no_grad():
                logits = self.local_models[client_id].forward(data)
            r = {}
            for split, mask in (('train', data.train_idx), ('val', data.val_idx), ('test', data.test_idx)):
                r['loss_' + split] = float(self.loss_fn(logits[mask], data.y[mask]))
                r['acc_' + split] = accuracy(logits[mask], data.y[mask])
            clients.append(r)
            global_acc_val += data.x.shape[0] / self.global_num_nodes * r['acc_val']
            global_acc_test += data.x.shape[0] / self.global_num_nodes * r['acc_test']
        return {'val': global_acc_val, 'test': global_acc_test, 'clients': clients}

    def train_round(self, noise=None):
        """One upstream round after its eval block. noise: glb_epochs tensors
        [num_gen, noise_dim] used for z in place of torch.randn (None draws
        them like upstream). Returns a dict of copies:
          local: per client, its state_dict after local training
          aggregated: global state_dict right after weighted aggregation
          distilled: global state_dict at the end of the round (== aggregated if fedtad=False)
          generator: generator state_dict at the end of the round (fedtad only)
          pseudo_labels: c, [num_gen] int64 (fedtad only)
          iterations: per glb_epoch, {'node_logits': [num_gen, F] pseudo features
            used by the distillation steps, 'edge_index': [2, E] pseudo graph,
            'loss_G': [it_g floats], 'loss_D': [it_d floats]} (fedtad only)
        """
        assert noise is None or len(noise) == self.glb_epochs
        self._broadcast()
        out = {}

        # local train: zyl24/FedTAD@3285d54 train_fedtad.py:167-176 (train_fedavg.py:130-139)
        for client_id in range(self.num_clients):
            data = self.subgraphs[client_id]
            for epoch_id in range(self.num_epochs):
                self.local_models[client_id].train()
                self.local_optimizers[client_id].zero_grad()
                logits = self.local_models[client_id].forward(data)
                loss_train = self.loss_fn(logits[data.train_idx], data.y[data.train_idx])
                loss_train.backward()
                self.local_optimizers[client_id].step()
        out['local'] = [_clone_state(m) for m in self.local_models]

        # global aggregation: zyl24/FedTAD@3285d54 train_fedtad.py:179-186 (train_fedavg.py:142-149)
        # Python-float weight times float32 tensor, summed in client order.
        with torch.no_grad():
            for client_id in range(self.num_clients):
                weight = self.subgraphs[client_id].x.shape[0] / self.global_num_nodes
                for (local_state, global_state) in zip(self.local_models[client_id].parameters(),
                                                       self.global_model.parameters()):
                    if client_id == 0:
                        global_state.data = weight * local_state
                    else:
                        global_state.data += weight * local_state
        out['aggregated'] = _clone_state(self.global_model)
        if not self.fedtad:
            # train_fedavg.py ends the round here.
            out['distilled'] = _clone_state(self.global_model)
            return out

        # pseudo labels: zyl24/FedTAD@3285d54 train_fedtad.py:189-207
        num_gen = self.num_gen
        c_cnt = [0] * self.num_classes
        for class_i in range(self.num_classes):
            c_cnt[class_i] = int(num_gen * 1 / self.num_classes)
        c_cnt[-1] += num_gen - sum(c_cnt)
        c = torch.zeros(num_gen).long()
        ptr = 0
        for class_i in range(self.num_classes):
            for _ in range(c_cnt[class_i]):
                c[ptr] = class_i
                ptr += 1
        each_class_idx = {}
        for class_i in range(self.num_classes):
            each_class_idx[class_i] = c == class_i
        out['pseudo_labels'] = c.clone()

        # zyl24/FedTAD@3285d54 train_fedtad.py:211-212
        for client_id in range(self.num_clients):
            self.local_models[client_id].eval()

        ckr = self.normalized_ckr
        iterations = []
        # zyl24/FedTAD@3285d54 train_fedtad.py:215
        for glb_epoch in range(self.glb_epochs):
            # zyl24/FedTAD@3285d54 train_fedtad.py:218
            z = noise[glb_epoch] if noise is not None else torch.randn((num_gen, self.noise_dim))
            it = {'loss_G': [], 'loss_D': []}

            # train generator: zyl24/FedTAD@3285d54 train_fedtad.py:222-277
            self.generator.train()
            self.global_model.eval()
            for it_g in range(self.it_g):
                loss_sem = 0
                loss_diverg = 0
                loss_div = 0
                self.generator_optimizer.zero_grad()
                for client_id in range(self.num_clients):
                    # Recomputed per client as upstream; gradients add up over clients.
                    node_logits = self.generator.forward(z=z, c=c)
                    node_norm = F.normalize(node_logits, p=2, dim=1)
                    adj_logits = torch.mm(node_norm, node_norm.t())
                    pseudo_graph = construct_graph(node_logits, adj_logits, k=self.topk)
                    local_pred = self.local_models[client_id].forward(data=pseudo_graph)
                    global_pred = self.global_model.forward(data=pseudo_graph)
                    # semantic loss (upstream also computes per-class accuracies here,
                    # only for a commented-out print; omitted, no side effects).
                    for class_i in range(self.num_classes):
                        loss_sem += ckr[client_id][class_i] * nn.CrossEntropyLoss()(
                            local_pred[each_class_idx[class_i]], c[each_class_idx[class_i]])
                    # diversity loss (same value for every client, added once per client)
                    if not self.diversity_once:
                        loss_div += DiversityLoss(metric='l1')(z.view(z.shape[0], -1), node_logits)
                    elif client_id == 0:
                        # Not upstream: the same value once, times K (rounding aside), for whole
                        # runs, where upstream's K copies of a [B, B, F] backward are 2/3 of a round.
                        loss_div = self.num_clients * DiversityLoss(metric='l1')(z.view(z.shape[0], -1), node_logits)
                    # divergence loss (maximised by the generator, hence the minus)
                    for class_i in range(self.num_classes):
                        loss_diverg += - ckr[client_id][class_i] * torch.mean(torch.mean(
                            torch.abs(global_pred[each_class_idx[class_i]]
                                      - local_pred[each_class_idx[class_i]].detach()), dim=1))
                loss_G = self.lam1 * loss_sem + loss_diverg + self.lam2 * loss_div
                # This backward also leaves gradients on the local and global
                # models; upstream clears them with zero_grad before their next use.
                loss_G.backward()
                self.generator_optimizer.step()
                it['loss_G'].append(loss_G.item())

            # train global model: zyl24/FedTAD@3285d54 train_fedtad.py:285-322
            self.generator.eval()
            self.global_model.train()
            # train_fedtad.py:290-293, mis-indented at 3285d54: run once here (see module docstring).
            node_logits = self.generator.forward(z=z, c=c)
            node_norm = F.normalize(node_logits, p=2, dim=1)
            adj_logits = torch.mm(node_norm, node_norm.t())
            pseudo_graph = construct_graph(node_logits.detach(), adj_logits.detach(), k=self.topk)
            it['node_logits'] = pseudo_graph.x.clone()
            it['edge_index'] = pseudo_graph.edge_index.clone()
            for it_d in range(self.it_d):
                self.global_optimizer.zero_grad()
                loss_D = 0
                for client_id in range(self.num_clients):
                    local_pred = self.local_models[client_id].forward(data=pseudo_graph)
                    global_pred = self.global_model.forward(data=pseudo_graph)
                    for class_i in range(self.num_classes):
                        loss_D += ckr[client_id][class_i] * torch.mean(torch.mean(
                            torch.abs(global_pred[each_class_idx[class_i]]
                                      - local_pred[each_class_idx[class_i]].detach()), dim=1))
                loss_D.backward()
                self.global_optimizer.step()
                it['loss_D'].append(loss_D.item())
            iterations.append(it)

        out['iterations'] = iterations
        out['distilled'] = _clone_state(self.global_model)
        out['generator'] = _clone_state(self.generator)
        return out
