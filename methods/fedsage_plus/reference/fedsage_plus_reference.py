"""Line-by-line plain-PyTorch port of the authors' FedSage+, used as a test oracle.

Upstream: https://github.com/zkhku/fedsage at commit 5b3429ae529895b268de9093afe03e9f60c5ec98
(HEAD, 2021-12-10). Files ported: src/utils/config.py, src/models/layers.py,
src/models/models.py, src/models/feat_loss.py, src/train_locSagePlus.py (LocalOwner),
src/fedsage_plus.py (train_fedgen, train_fedSagePC), src/utils/mending_graph.py (fill_graph),
and the classifier of src/classifiers.py, which upstream builds with stellargraph 1.2.1 /
TensorFlow-Keras 2.4 (GraphSAGE + Dense softmax, Keras Adam): that model, its loss and its
optimizer are re-implemented here in PyTorch from those libraries' documented behaviour.
Every block names its upstream file:line.

Deliberate differences from upstream (nothing else is changed):
  * CPU only; `.cuda()` branches are dropped. Prints, accuracies and file I/O are dropped.
  * Subgraphs are given: per data owner its local graph (features, edges, labels), the hidden
    nodes (upstream: np.random.choice, train_locSagePlus.py:78), the NeighGen train nodes
    (upstream: sklearn train_test_split, :34) and the classifier train nodes
    (classifiers.py:23). Node order is ascending local index wherever upstream iterates a
    Python set or a stellargraph id list (an order no other implementation can reproduce).
  * Every random draw can be injected: initial weights (state dicts), the generator's
    Gaussian noise (models.py:28), the other owners' target draws of train_fedgen
    (fedsage_plus.py:71-81; `draw_other_targets_for` makes them in upstream's order, from a
    torch generator as numpy is not installed),
    dropout (use dropout=0 for exact comparisons), the classifier's batches and sampled
    neighbours (stellargraph's NodeSequence shuffle and SampledBreadthFirstWalk;
    `sample_batches` draws them with a torch generator, NOT stellargraph's RNG).
  * Upstream indexes the NeighGen labels (train_locSagePlus.py:110,206, `all_targets_subj`,
    ordered as ALL local nodes) with row numbers of the IMPAIRED graph (`train_ilocs`), so
    each train node gets the label of another node once a hidden node precedes it. This is
    kept by default (`align_labels=False`); `align_labels=True` uses the node's own label.
  * Keras' categorical_crossentropy on a Softmax output uses the logits
    (softmax_cross_entropy_with_logits); that is what is ported (no 1e-7 clipping).
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference import pyg  # noqa: E402,F401  (shared primitives; scatter used below)


# src/utils/config.py:4-40 (the hyper-parameters FedSage+ reads).
DEFAULT_CONFIG = dict(
    num_owners=3, delta=20, num_samples=[5, 5], batch_size=32, latent_dim=128, steps=10,
    epochs_local=1, lr=0.001, weight_decay=1e-4, hidden=32, dropout=0.5, gen_epochs=20,
    num_pred=5, hidden_portion=0.5, epoch_classifier=20, classifier_layer_sizes=[64, 32],
    a=1, b=1, c=1)


def make_config(**overrides):
    cfg = dict(DEFAULT_CONFIG)
    for key, value in overrides.items():
        if key not in cfg:
            raise KeyError(f'unknown FedSage+ config key {key!r}')
        cfg[key] = value
    return cfg


# ----------------------------------------------------------------------------------------------
# Adjacency: train_locSagePlus.py:83-94 + :145-151 + :179-185 (identical copies in
# models.py:74-102 and mending_graph.py:73-105).
def get_adj(edges, node_len):
    """edges: long [E, 2] (source, target rows, as stellargraph's `edges(use_ilocs=True)`).
    sp.coo_matrix(ones) sums duplicates; `adj + adj.T.multiply(adj.T > adj) - adj.multiply(adj.T
    > adj)` is the elementwise max(adj, adj.T); `+ sp.eye` (float64) promotes to float64; rows
    are divided by their sums (D^-1 (A + I)), then cast to float32. Returned dense."""
    adj = torch.zeros(node_len, node_len, dtype=torch.float64)
    if edges.numel() > 0:
        adj.index_put_((edges[:, 0].long(), edges[:, 1].long()),
                       torch.ones(edges.shape[0], dtype=torch.float64), accumulate=True)
    adj = torch.maximum(adj, adj.t())
    adj = adj + torch.eye(node_len, dtype=torch.float64)
    rowsum = adj.sum(1)
    r_inv = rowsum.pow(-1)
    r_inv[torch.isinf(r_inv)] = 0.
    return (r_inv.unsqueeze(1) * adj).float()


# ----------------------------------------------------------------------------------------------
# src/models/layers.py:8-44
class GraphConvolution(nn.Module):
    """weight [in, out], bias [out], both U(-1/sqrt(out), 1/sqrt(out)) (layers.py:27-31: stdv
    uses weight.size(1), the OUTPUT width). forward: adj @ (x @ W) + b (layers.py:33-39)."""

    def __init__(self, in_features, out_features, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(in_features, out_features))
        self.bias = nn.Parameter(torch.rand(out_features)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):  # layers.py:27-31
        stdv = 1. / (self.weight.size(1) ** 0.5)
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):  # layers.py:33-39
        support = torch.mm(input, self.weight)
        output = torch.mm(adj, support)
        return output + self.bias if self.bias is not None else output


# src/models/models.py:9-21
class GNN(nn.Module):
    """relu(gc1) -> dropout -> gc2 -> relu. The OUTPUT is relu'd too (models.py:21), also when
    it is the classifier's logits."""

    def __init__(self, nfeat, nhid, nclass, dropout):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.relu(x)


# src/models/models.py:23-32. `noise` injects the N(0, 1) draw (same shape as inputs).
class Sampling(nn.Module):
    def forward(self, inputs, noise=None):
        rand = torch.normal(0, 1, size=inputs.shape) if noise is None else noise
        return inputs + rand


# src/models/models.py:137-156
class Gen(nn.Module):
    def __init__(self, latent_dim, dropout, num_pred, feat_shape):
        super().__init__()
        self.num_pred = num_pred
        self.feat_shape = feat_shape
        self.sample = Sampling()
        self.fc1 = nn.Linear(latent_dim, 256)
        self.fc2 = nn.Linear(256, 2048)
        self.fc_flat = nn.Linear(2048, self.num_pred * self.feat_shape)
        self.dropout = dropout

    def forward(self, x, noise=None):
        x = self.sample(x, noise)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = F.dropout(x, self.dropout, training=self.training)
        x = torch.tanh(self.fc_flat(x))
        return x


# src/models/models.py:158-165
class RegModel(nn.Module):
    def __init__(self, latent_dim):
        super().__init__()
        self.reg_1 = nn.Linear(latent_dim, 1)

    def forward(self, x):
        return F.relu(self.reg_1(x))


# src/models/models.py:42-107
class MendGraph(nn.Module):
    """Appends ALL N * num_pred generated rows (node_len = N + N * num_pred); node i gets edges to
    its first min(num_pred, int(pred_degree_i)) generated rows N + i * num_pred + j. The degree
    is truncated toward zero (torch._cast_Int) and detached; org_feats are detached, gen_feats
    are not (the classifier's loss reaches the generator through them)."""

    def __init__(self, node_len, num_pred, feat_shape):
        super().__init__()
        self.num_pred = num_pred
        self.feat_shape = feat_shape
        self.org_node_len = node_len
        self.node_len = self.org_node_len + self.org_node_len * self.num_pred

    def mend_graph(self, org_feats, org_edges, pred_degree, gen_feats):  # models.py:52-72
        new_edges = []
        gen_feats = gen_feats.view(-1, self.num_pred, self.feat_shape)
        pred_degree = pred_degree.detach().to(torch.int32)
        org_feats = org_feats.detach()
        fill_feats = torch.vstack((org_feats, gen_feats.view(-1, self.feat_shape)))
        for i in range(self.org_node_len):
            for j in range(min(self.num_pred, max(0, int(pred_degree[i])))):
                new_edges.append([i, self.org_node_len + i * self.num_pred + j])
        new_edges = torch.tensor(new_edges, dtype=torch.long).reshape(-1, 2)
        if len(new_edges) > 0:
            fill_edges = torch.vstack((org_edges.long(), new_edges))
        else:
            fill_edges = torch.clone(org_edges)
        return fill_edges, fill_feats

    def forward(self, org_feats, org_edges, pred_missing, gen_feats):  # models.py:104-107
        fill_edges, fill_feats = self.mend_graph(org_feats, org_edges, pred_missing, gen_feats)
        adj = get_adj(fill_edges, self.node_len)
        return fill_feats, adj


# src/models/models.py:109-134
class LocalSagePlus(nn.Module):
    """state_dict: encoder_model.gc{1,2}.{weight,bias}, reg_model.reg_1.*, gen.fc1/fc2/fc_flat.*,
    classifier.gc{1,2}.* (upstream's names)."""

    def __init__(self, feat_shape, node_len, n_classes, cfg):
        super().__init__()
        self.encoder_model = GNN(nfeat=feat_shape, nhid=cfg['hidden'], nclass=cfg['latent_dim'],
                                 dropout=cfg['dropout'])
        self.reg_model = RegModel(latent_dim=cfg['latent_dim'])
        self.gen = Gen(latent_dim=cfg['latent_dim'], dropout=cfg['dropout'],
                       num_pred=cfg['num_pred'], feat_shape=feat_shape)
        self.mend_graph = MendGraph(node_len=node_len, num_pred=cfg['num_pred'], feat_shape=feat_shape)
        self.classifier = GNN(nfeat=feat_shape, nhid=cfg['hidden'], nclass=n_classes,
                              dropout=cfg['dropout'])

    def forward(self, feat, edges, adj, noise=None):
        x = self.encoder_model(feat, adj)
        degree = self.reg_model(x)
        gen_feat = self.gen(x, noise)
        mend_feats, mend_adj = self.mend_graph(feat, edges, degree, gen_feat)
        nc_pred = self.classifier(mend_feats, mend_adj)
        return degree, gen_feat, nc_pred


# src/models/models.py:167-186: the same modules, only the generator trainable.
def set_fed_model(neighgen):
    neighgen.encoder_model.requires_grad_(False)
    neighgen.reg_model.requires_grad_(False)
    neighgen.mend_graph.requires_grad_(False)
    neighgen.classifier.requires_grad_(False)
    return neighgen


# ----------------------------------------------------------------------------------------------
# src/models/feat_loss.py:7-45
def greedy_loss(pred_feats, true_feats, pred_missing, true_missing, num_pred):
    """Returns loss [T, num_pred, F] (feat_loss.py:11): row (i, j) holds one scalar broadcast over
    F. Kept from upstream: the comparison at :41 is `mse_k < sum(loss[i][j].data)`, i.e. against
    F TIMES the current value (the row holds F copies); the start value is the MSE to the LAST
    true neighbour (index min(true, num_pred) - 1). Counts are truncated then clipped to
    [0, num_pred] (:15-18)."""
    loss = torch.zeros(pred_feats.shape)
    pred_len = len(pred_feats)
    # numpy .astype(np.int32) truncates toward zero, as .to(torch.int32) does.
    pred_missing_np = pred_missing.detach().reshape(-1).to(torch.int32)
    true_missing_np = true_missing.detach().reshape(-1).to(torch.int32)
    true_missing_np = torch.clamp(true_missing_np, 0, num_pred).tolist()
    pred_missing_np = torch.clamp(pred_missing_np, 0, num_pred).tolist()
    for i in range(pred_len):
        for pred_j in range(min(num_pred, pred_missing_np[i])):
            if true_missing_np[i] > 0:
                true_feats_tensor = torch.as_tensor(true_feats[i][true_missing_np[i] - 1])
                loss[i][pred_j] += F.mse_loss(pred_feats[i][pred_j].unsqueeze(0).float(),
                                              true_feats_tensor.unsqueeze(0).float()).squeeze(0)
                for true_k in range(min(num_pred, true_missing_np[i])):
                    true_feats_tensor = torch.as_tensor(true_feats[i][true_k])
                    loss_ijk = F.mse_loss(pred_feats[i][pred_j].unsqueeze(0).float(),
                                          true_feats_tensor.unsqueeze(0).float()).squeeze(0)
                    if torch.sum(loss_ijk) < torch.sum(loss[i][pred_j].data):
                        loss[i][pred_j] = loss_ijk
            else:
                continue
    return loss


# ----------------------------------------------------------------------------------------------
def neighbor_lists(edge_index, n):
    """Unique neighbours of each node, ascending (stellargraph undirected `neighbors`)."""
    nbrs = [set() for _ in range(n)]
    for s, t in edge_index.t().tolist():
        if s != t:
            nbrs[s].add(t)
            nbrs[t].add(s)
        else:
            nbrs[s].add(s)
    return [sorted(v) for v in nbrs]


# src/train_locSagePlus.py:17-282
class LocalOwner:
    """One data owner's NeighGen. x: float32 [N, F] (all local nodes, `subG`), edge_index long
    [2, E] (undirected; each pair stored once or twice), y long [N], hide_mask bool [N] (nodes
    removed from the impaired graph `hasG_hide`), train_nodes: local ids of the NeighGen train
    nodes (not hidden), in the order of upstream's `train_ids`. `state`: an initial
    LocalSagePlus state_dict (else drawn from torch's global RNG like upstream)."""

    def __init__(self, x, edge_index, y, hide_mask, train_nodes, num_classes, cfg=None,
                 state=None, align_labels=False):
        self.cfg = cfg = cfg or make_config()
        self.subG_x = x
        self.subG_edge_index = edge_index
        self.subG_neighbors = neighbor_lists(edge_index, x.shape[0])
        self.y = y
        self.num_classes = num_classes
        self.feat_shape = x.shape[1]  # :30
        self.num_pred = cfg['num_pred']  # :41
        self.hide_mask = hide_mask
        # hide_graph (:65-68): induced subgraph on the nodes not hidden (ascending local ids).
        self.all_ids = [i for i in range(x.shape[0]) if not bool(hide_mask[i])]
        self.iloc_of = {nid: k for k, nid in enumerate(self.all_ids)}
        self.train_ids = list(train_nodes)
        self.align_labels = align_labels
        self.get_train_test_feat_targets()
        self.neighgen = LocalSagePlus(feat_shape=self.feat_shape, node_len=len(self.all_ids),
                                      n_classes=num_classes, cfg=cfg)  # :44-45
        if state is not None:
            self.neighgen.load_state_dict(state)
        self.optimizer = optim.Adam(self.neighgen.parameters(), lr=cfg['lr'],
                                    weight_decay=cfg['weight_decay'])  # :49-50

    def get_train_test_feat_targets(self):  # :96-143
        kept = set(self.all_ids)
        self.all_feat = self.subG_x[self.all_ids]  # :105
        targets_missing, targets_feat = [], []
        for id_i in self.all_ids:  # :112-127
            # :113 set(subG.neighbors) - set(hasG_hide.neighbors): the hidden neighbours
            # (ascending here; upstream iterates a Python set of dataset node ids).
            missing_ids = [j for j in self.subG_neighbors[id_i] if j not in kept]
            missing_len = len(missing_ids)
            feat = torch.zeros(self.num_pred, self.feat_shape, dtype=torch.float64)
            if missing_len > 0:
                take = missing_ids[:self.num_pred]
                feat[:len(take)] = self.subG_x[take].double()
            targets_missing.append(missing_len)
            targets_feat.append(feat)
        self.all_targets_missing = torch.tensor(targets_missing, dtype=torch.long).reshape(-1, 1)
        self.all_targets_feat = torch.stack(targets_feat) if targets_feat else \
            torch.zeros(0, self.num_pred, self.feat_shape, dtype=torch.float64)
        # :110,130 all_targets_subj: one-hot labels in the order of ALL local nodes (subG).
        self.all_targets_subj = F.one_hot(self.y, self.num_classes)
        # :132-134 hasG_hide.edges(use_ilocs=True): the impaired graph's edges, each pair once.
        pairs = set()
        for s, t in self.subG_edge_index.t().tolist():
            if s in kept and t in kept:
                pairs.add((min(s, t), max(s, t)))
        self.edges = torch.tensor([[self.iloc_of[s], self.iloc_of[t]] for s, t in sorted(pairs)],
                                  dtype=torch.int32).reshape(-1, 2)
        self.adj = get_adj(self.edges, len(self.all_ids))  # :133
        self.train_ilocs = torch.tensor([self.iloc_of[i] for i in self.train_ids], dtype=torch.long)
        # Label rows (see the module docstring): upstream indexes all_targets_subj with ilocs.
        self.label_rows = (torch.tensor(self.train_ids, dtype=torch.long) if self.align_labels
                           else self.train_ilocs)

    def local_losses(self, output_missing, output_feat, output_nc):
        """train_locSagePlus.py:195-215 (= fedsage_plus.py:34-58): the three losses and their sum."""
        n = len(self.all_ids)
        output_missing = torch.flatten(output_missing)
        output_feat = output_feat.view(n, self.num_pred, self.feat_shape)
        output_nc = output_nc.view(n + n * self.num_pred, self.num_classes)
        tr = self.train_ilocs
        loss_train_missing = F.smooth_l1_loss(output_missing[tr].float(),
                                              self.all_targets_missing[tr].reshape(-1).float())
        loss_train_feat = greedy_loss(output_feat[tr], self.all_targets_feat[tr], output_missing[tr],
                                      self.all_targets_missing[tr], self.num_pred).unsqueeze(0).mean().float()
        true_nc_label = torch.argmax(self.all_targets_subj[self.label_rows], dim=1).view(-1)
        loss_train_label = F.cross_entropy(output_nc[tr], true_nc_label)
        cfg = self.cfg
        loss = (cfg['a'] * loss_train_missing + cfg['b'] * loss_train_feat
                + cfg['c'] * loss_train_label).float()
        return dict(loss=loss, missing=loss_train_missing, feat=loss_train_feat,
                    label=loss_train_label, output_missing=output_missing, output_feat=output_feat)

    def train_neighgen(self, noise=None):  # :187-218 (the eval-mode metrics of :220-242 dropped)
        self.neighgen.train()
        self.optimizer.zero_grad()
        out = self.neighgen(self.all_feat, self.edges, self.adj, noise)
        losses = self.local_losses(*out)
        losses['loss'].backward()
        self.optimizer.step()
        # :220 the step ends in eval mode (train_fedgen relies on it: encoder/classifier stay eval).
        self.neighgen.eval()
        return {k: v.detach().clone() for k, v in losses.items()}

    def train(self, noises=None):  # :248-252
        out = []
        for epoch in range(self.cfg['gen_epochs']):
            out.append(self.train_neighgen(None if noises is None else noises[epoch]))
        return out


# ----------------------------------------------------------------------------------------------
def draw_other_targets_for(owners, i, generator=None):
    """fedsage_plus.py:69-83 for owner i: for each j != i, T_i centres uniform with replacement
    over j's local nodes; a centre without neighbours is replaced by a fresh uniform draw until it
    has some; then num_pred neighbours uniform with replacement. Upstream draws with np.random;
    numpy is not installed where the oracle runs, so the same draws, in the same order, come
    from torch.randint on `generator`."""
    num_pred = owners[i].num_pred
    out = {}
    for j in range(len(owners)):
        if j == i:
            continue
        n_j = owners[j].subG_x.shape[0]
        choice = torch.randint(0, n_j, (len(owners[i].train_ilocs),), generator=generator).tolist()
        rows = []
        for c_i in choice:
            nbrs = owners[j].subG_neighbors[c_i]
            while len(nbrs) == 0:
                c_i = int(torch.randint(0, n_j, (1,), generator=generator))
                nbrs = owners[j].subG_neighbors[c_i]
            picks = torch.randint(0, len(nbrs), (num_pred,), generator=generator).tolist()
            rows.append([nbrs[t] for t in picks])
        out[j] = torch.tensor(rows, dtype=torch.long).reshape(-1, num_pred)
    return out


def train_fedgen(owners, num_epochs=None, other_targets=None, noises=None, generator=None):
    """src/fedsage_plus.py:13-100. Only the generators train (a fresh Adam each, lr, wd); the
    encoder and classifier keep the mode LocalOwner.train left them in (eval). Per epoch and
    owner i: loss = (local losses + b * sum_{j != i} greedy_loss(gen_i, features of j's sampled
    neighbours, i's predicted and true counts)) / num_owners. No model is exchanged: upstream
    reads the other owners' graphs directly. other_targets[epoch][i] = {j: ids [T_i, num_pred]}
    (else drawn with `draw_other_targets_for`); noises[epoch][i]: the Gaussian noise.
    Returns per epoch and owner the losses and the generator state after the step."""
    k = len(owners)
    cfg = owners[0].cfg
    num_epochs = cfg['gen_epochs'] if num_epochs is None else num_epochs
    gens, optims = [], []
    for o in owners:  # :20-24
        set_fed_model(o.neighgen)
        gens.append(o.neighgen.gen)
        optims.append(optim.Adam(gens[-1].parameters(), lr=cfg['lr'], weight_decay=cfg['weight_decay']))
    history = []
    for epoch in range(num_epochs):  # :25
        per_owner = []
        for i in range(k):  # :26
            o = owners[i]
            gens[i].train()
            optims[i].zero_grad()
            noise = None if noises is None else noises[epoch][i]
            out = o.neighgen(o.all_feat, o.edges, o.adj, noise)  # :33
            losses = o.local_losses(*out)  # :34-58
            loss = losses['loss']
            targets = (other_targets[epoch][i] if other_targets is not None
                       else draw_other_targets_for(owners, i, generator))
            tr = o.train_ilocs
            others = {}
            for j in range(k):  # :69-92
                if j == i:
                    continue
                global_target_feat = owners[j].subG_x[targets[j]]  # [T_i, num_pred, F]
                loss_other = greedy_loss(losses['output_feat'][tr], global_target_feat,
                                         losses['output_missing'][tr], o.all_targets_missing[tr],
                                         o.num_pred).unsqueeze(0).mean().float()
                others[j] = loss_other.detach().clone()
                loss = loss + cfg['b'] * loss_other
            loss = 1.0 / k * loss  # :93
            loss.backward()
            optims[i].step()
            per_owner.append(dict(loss=loss.detach().clone(), local=losses['loss'].detach().clone(),
                                  others=others, targets=targets,
                                  gen={n: p.detach().clone() for n, p in gens[i].state_dict().items()}))
        history.append(per_owner)
    return history


# ----------------------------------------------------------------------------------------------
# src/utils/mending_graph.py:27-68
def fill_graph(owner, missing, new_feats):
    """The classifier's graph: the ORIGINAL local graph (hidden nodes and their edges restored) plus,
    for the impaired graph's node k with int(missing_k) > 0 (truncation), min(num_pred,
    int(missing_k)) generated nodes (its first generated rows) linked to it. Returns (x [N + G, F],
    edge_index [2, E'] with each new edge once, neighbour lists)."""
    num_pred, feat_shape = owner.num_pred, owner.feat_shape
    new_feats = new_feats.detach().reshape(-1, num_pred, feat_shape)
    n = owner.subG_x.shape[0]
    fill_node_feats = [owner.subG_x]
    src, dst = owner.subG_edge_index[0].tolist(), owner.subG_edge_index[1].tolist()
    nxt = n
    for new_i in range(len(missing)):  # :40-56
        m = int(float(missing[new_i]))
        if m > 0:
            for i_pred in range(min(num_pred, m)):
                fill_node_feats.append(new_feats[new_i][i_pred].reshape(1, -1))
                src.append(owner.all_ids[new_i])
                dst.append(nxt)
                nxt += 1
    x = torch.cat(fill_node_feats, 0)
    edge_index = torch.tensor([src, dst], dtype=torch.long)
    return x, edge_index, neighbor_lists(edge_index, nxt)


# ----------------------------------------------------------------------------------------------
# The classifier of classifiers.py:61-72: stellargraph 1.2.1 GraphSAGE(layer_sizes=[64, 32],
# n_samples=[5, 5]) -> Dense(C, softmax), Keras Adam(lr), categorical_crossentropy.
class MeanAggregator(nn.Module):
    """stellargraph.layer.graphsage.MeanAggregator (concat=False default => the output is the
    CONCATENATION of the self group and the neighbour group, each out // 2 wide, the remainder
    going to the self group): h = act([x_self @ w_g0, mean_s(x_neigh) @ w_g1] + bias). Keras
    weights: w_g0 [in, d0], w_g1 [in, d1], bias [out] (glorot_uniform / zeros)."""

    def __init__(self, in_dim, out_dim, act):
        super().__init__()
        d1 = out_dim // 2
        d0 = out_dim - d1
        self.w_g0 = nn.Parameter(torch.empty(in_dim, d0))
        self.w_g1 = nn.Parameter(torch.empty(in_dim, d1))
        self.bias = nn.Parameter(torch.zeros(out_dim))
        for w in (self.w_g0, self.w_g1):  # glorot_uniform over the full kernel shape
            lim = (6.0 / (w.shape[0] + w.shape[1])) ** 0.5
            nn.init.uniform_(w, -lim, lim)
        self.act = act

    def forward(self, x_self, x_neigh):
        """x_self [B, H, in], x_neigh [B, H, S, in] -> [B, H, out]."""
        h = torch.cat([x_self @ self.w_g0, x_neigh.mean(dim=2) @ self.w_g1], dim=2) + self.bias
        return F.relu(h) if self.act == 'relu' else h


class SageClassifier(nn.Module):
    """GraphSAGE([64, 32], relu then linear, l2-normalised output) + Dense softmax. `forward`
    returns LOGITS (Keras' loss uses the Softmax op's input). Keras get_weights() order is
    agg0.w_g0, agg0.w_g1, agg0.bias, agg1.*, kernel [32, C], dense_bias (named_parameters lists
    kernel and dense_bias first; only names are used here)."""

    def __init__(self, feat_dim, num_classes, layer_sizes=(64, 32)):
        super().__init__()
        self.agg0 = MeanAggregator(feat_dim, layer_sizes[0], 'relu')
        self.agg1 = MeanAggregator(layer_sizes[0], layer_sizes[1], 'linear')
        self.kernel = nn.Parameter(torch.empty(layer_sizes[1], num_classes))
        lim = (6.0 / (layer_sizes[1] + num_classes)) ** 0.5
        nn.init.uniform_(self.kernel, -lim, lim)
        self.dense_bias = nn.Parameter(torch.zeros(num_classes))

    def forward(self, x0, x1, x2):
        """x0 [B, F] heads, x1 [B, S1, F] hop-1 samples, x2 [B, S1 * S2, F] hop-2 samples (zero rows
        for stellargraph's -1 placeholders)."""
        b, s1 = x1.shape[0], x1.shape[1]
        s2 = x2.shape[1] // max(s1, 1)
        h0 = self.agg0(x0.unsqueeze(1), x1.unsqueeze(1))  # [B, 1, 64]
        h1 = self.agg0(x1, x2.reshape(b, s1, s2, -1))  # [B, S1, 64]
        out = self.agg1(h0, h1.unsqueeze(1)).squeeze(1)  # [B, 32]
        out = out / torch.sqrt(torch.clamp((out * out).sum(-1, keepdim=True), min=1e-12))  # l2
        return out @ self.kernel + self.dense_bias


def sample_batches(train_nodes, neighbors, num_samples, batch_size, generator):
    """A NodeSequence epoch: shuffled heads cut into batches of batch_size, each head's
    SampledBreadthFirstWalk (num_samples[0] neighbours with replacement, then num_samples[1] of
    each; -1 where a node has no neighbour or is itself -1). Drawn with `generator` (NOT
    stellargraph's RNG). Returns [(heads [B], hop1 [B, S1], hop2 [B, S1 * S2])]."""
    perm = torch.randperm(len(train_nodes), generator=generator).tolist()
    heads_all = [train_nodes[p] for p in perm]

    def draw(node, k):
        if node < 0 or len(neighbors[node]) == 0:
            return [-1] * k
        idx = torch.randint(0, len(neighbors[node]), (k,), generator=generator).tolist()
        return [neighbors[node][t] for t in idx]

    out = []
    for s in range(0, len(heads_all), batch_size):
        heads = heads_all[s:s + batch_size]
        hop1 = [draw(h, num_samples[0]) for h in heads]
        hop2 = [sum((draw(v, num_samples[1]) for v in row), []) for row in hop1]
        out.append((torch.tensor(heads), torch.tensor(hop1).reshape(len(heads), -1),
                    torch.tensor(hop2).reshape(len(heads), -1)))
    return out


def gather(x, ids):
    """Features of ids, zero rows for -1 (stellargraph's placeholder)."""
    pad = torch.cat([x, torch.zeros(1, x.shape[1], dtype=x.dtype)], 0)
    return pad[torch.where(ids < 0, torch.full_like(ids, x.shape[0]), ids)]


class KerasAdam:
    """tf.keras.optimizers.Adam (TF 2.4, amsgrad=False): t += 1; m = b1 m + (1 - b1) g;
    v = b2 v + (1 - b2) g^2; w -= lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps),
    eps = 1e-7 (the 'epsilon hat' form, unlike torch's)."""

    def __init__(self, params, lr=1e-3, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
        self.params = list(params)
        self.lr, self.b1, self.b2, self.eps = lr, beta_1, beta_2, epsilon
        self.t = 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    @torch.no_grad()
    def step(self):
        self.t += 1
        lr_t = self.lr * (1 - self.b2 ** self.t) ** 0.5 / (1 - self.b1 ** self.t)
        for p, m, v in zip(self.params, self.m, self.v):
            g = p.grad
            m.mul_(self.b1).add_((1 - self.b1) * g)
            v.mul_(self.b2).add_((1 - self.b2) * g * g)
            p.sub_(lr_t * m / (v.sqrt() + self.eps))


def fit_one_epoch(model, opt, x, y, batches):
    """Keras Model.fit(sequence, epochs=1, shuffle=False): one Adam step per batch on the mean
    categorical cross-entropy of the batch (classifiers.py:67-71)."""
    losses = []
    for heads, hop1, hop2 in batches:
        for p in model.parameters():
            p.grad = None
        logits = model(gather(x, heads), gather(x, hop1), gather(x, hop2))
        loss = F.cross_entropy(logits, y[heads])
        loss.backward()
        opt.step()
        losses.append(loss.detach().clone())
    return losses


def train_fedsage_pc(filled, labels, num_classes, init_states, num_rounds=None, batches=None,
                     cfg=None, generator=None):
    """src/fedsage_plus.py:104-157. filled[i] = (x, edge_index, neighbours) of owner i's filled
    graph (fill_graph), labels[i] = (y long [N_i], train node ids: the classifier's split,
    classifiers.py:23; generated nodes are never heads), init_states[i]
    the freshly built classifier of owner i. Kept from upstream: the start weights are the plain
    mean of all owners' initial weights (:111-118); ONE Keras model (owner 0's) with ONE Adam
    trains every owner in turn, so the Adam moments and step count run on across owners and
    rounds (:139-147); after each owner the weights are reset to the round's start; the server
    weight is the unweighted mean over owners, summed in owner order (:150-155).
    batches[r][i] = sample_batches(...) for round r, owner i (else drawn from `generator`).
    Returns per round {'uploads': [state per owner], 'global': state, 'losses'}."""
    cfg = cfg or make_config()
    num_rounds = cfg['epoch_classifier'] if num_rounds is None else num_rounds
    k = len(filled)
    feat_dim = filled[0][0].shape[1]
    model = SageClassifier(feat_dim, num_classes, cfg['classifier_layer_sizes'])
    names = [n for n, _ in model.named_parameters()]
    weights = [init_states[0][n].clone() for n in names]  # :111-118
    for st in init_states[1:]:
        for t, n in enumerate(names):
            weights[t] += st[n]
    weights = [1.0 / k * w for w in weights]
    set_weights(model, names, weights)
    opt = KerasAdam(model.parameters(), lr=cfg['lr'])
    history = []
    for r in range(num_rounds):  # :139
        weight_cur = [p.detach().clone() for p in model.parameters()]
        uploads, losses = [], []
        for i in range(k):  # :141-148
            x, _, nbrs = filled[i]
            y, train_nodes = labels[i]
            b = batches[r][i] if batches is not None else sample_batches(
                train_nodes, nbrs, cfg['num_samples'], cfg['batch_size'], generator)
            losses.append(fit_one_epoch(model, opt, x, y, b))
            uploads.append([p.detach().clone() for p in model.parameters()])
            set_weights(model, names, weight_cur)
        total = average_uploads(uploads)  # :150-155
        set_weights(model, names, total)
        history.append(dict(uploads=[dict(zip(names, u)) for u in uploads],
                            global_state=dict(zip(names, [t.clone() for t in total])), losses=losses))
    return history


def average_uploads(uploads):
    """src/fedsage_plus.py:150-155 (= fedsage.py:41-46): the server's weights are the UNWEIGHTED
    mean of the owners' uploads (lists of tensors, or dicts by name), summed in owner order, then
    multiplied by 1 / num_owners."""
    if isinstance(uploads[0], dict):
        names = list(uploads[0])
        return dict(zip(names, average_uploads([[u[n] for n in names] for u in uploads])))
    total = [u.clone() for u in uploads[0]]
    for up in uploads[1:]:
        for t in range(len(total)):
            total[t] += up[t]
    return [t * (1.0 / len(uploads)) for t in total]


def set_weights(model, names, values):
    with torch.no_grad():
        params = dict(model.named_parameters())
        for n, v in zip(names, values):
            params[n].copy_(v)
