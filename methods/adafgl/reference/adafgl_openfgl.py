"""OpenFGL's AdaFGL, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768, files
openfgl/flcore/adafgl/client.py, server.py, adafgl_config.py, adafgl_models.py,
label_propagation_models.py, op.py and _utils.py, on top of methods/reference/openfgl.py.

AdaFGL has two phases. Rounds < num_rounds_vanilla (50): plain FedAvg of the GCN (CE,
persistent Adam, node-count weights). At round == num_rounds_vanilla each sampled client
switches for good: it loads the global GCN one last time, takes its eval-mode soft labels,
runs a non-parametric label propagation (on half of its train nodes, evaluated on the
other half: the "reliability" accuracy), builds a personalised propagation graph
(0.5 * A + 0.5 * [cos(softmax(soft_label)) > 0.999]), pre-propagates the features over it and
creates a local AdaFGLModel (a homophilous and a heterophilous MLP branch) with its own Adam.
From then on, every round is ONE Adam step of that model; nothing is uploaded, the server
does nothing, and evaluation uses the AdaFGL ensemble.

Draws, all injectable (constructor arguments, per client), drawn upstream at the switch round
in this order, client by client in sampled order:
  1. `random.shuffle` (Python's RNG) of the client's train node ids -> lp_orders[i]: the
     shuffled list (first int(n_train / 2) ids: LP seeds, the rest: LP evaluation nodes).
  2. torch's RNG: the HomoPropagateModel then HetePropagateModel initialisations ->
     adafgl_states[i]: the AdaFGLModel state_dict (keys below).
  3. dropout masks in every training step (the GCN's in phase 0, the AdaFGL MLPs' in phase 1):
     not injectable; `dropout` (GCN) and `adafgl_dropout` (AdaFGL MLPs) set them to 0.
`draw_lp_order` and `draw_adafgl_state` draw 1. and 2. for standalone use.

Changes from upstream (nothing else):
  * scipy is not used: sparse matrices are dense torch tensors. adj_to_symmetric_norm is
    computed in float64 (as scipy does after `+ sp.eye`); the sparse-dense product
    (upstream: libmatmul.so, float32 data, float32 output, FMA accumulation, loaded from the
    hard-coded path /home/ai2/work/OPENFGL/... -- which only exists on the authors' machine,
    so upstream raises OSError at the switch round anywhere else on Linux) is computed as
    float32(adj) x float32(feature) accumulated in float64 and rounded to float32.
  * The three dropout rates hard-coded to 0.5 in adafgl_models.py (HomoPropagateModel,
    HetePropagateModel and its HetePropagateLayer) are one argument `adafgl_dropout`.
  * The module-level `config` becomes the per-federation `self.config` (same keys/defaults,
    plus "adafgl_dropout").
  * Unused upstream code is not ported: GraphOp.res_lp_propagate, AdaFGLModel.postprocess
    (post_msg_op is None), csrc' CUDA path, BatchNorm/LayerNorm branches (bn = ln = False).
  * Values computed in locals are kept as attributes for train_round (no effect).
"""
import os
import random
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.optim import Adam

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.openfgl import (BaseClient, BaseServer, OpenFglFederation, compute_accuracy,  # noqa: E402
                                       clone_state)

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/adafgl_config.py:3-9
DEFAULT_CONFIG = {
    "prop_steps": 3,
    "num_rounds_vanilla": 50,
    "r": 0.5,
    "adafgl_lr": 1e-2,
    "adafgl_weight_decay": 5e-4,
    "adafgl_dropout": 0.5,  # port: adafgl_models.py's hard-coded nn.Dropout(0.5)s
}


# ---------------------------------------------------------------------------------------------
# _utils.py
# ---------------------------------------------------------------------------------------------

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/_utils.py:9-18
def adj_initialize(data):
    """data.adj = the dense [n, n] count matrix A[src, dst] += 1 per stored edge (scipy coo ->
    csr sums duplicates), float32 like upstream's torch.ones data."""
    n = data.x.shape[0]
    adj = torch.zeros(n, n, dtype=torch.float32)
    adj.index_put_((data.edge_index[0], data.edge_index[1]), torch.ones(data.edge_index.shape[1]), accumulate=True)
    data.adj = adj
    return data


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/_utils.py:20-32
def adj_to_symmetric_norm(adj, r):
    """(adj + I) . diag(d^(r-1)), transposed, . diag(d^-r), d = ROW sums of adj + I, in float64:
    result[i, j] = (adj+I)[j, i] * d_i^(r-1) * d_j^(-r). r = 0.5: D^-1/2 (A+I)^T D^-1/2."""
    adj = adj.double() + torch.eye(adj.shape[0], dtype=torch.float64)
    degrees = adj.sum(1)
    r_inv_sqrt_left = torch.pow(degrees, r - 1).flatten()
    r_inv_sqrt_left[torch.isinf(r_inv_sqrt_left)] = 0.
    r_inv_sqrt_right = torch.pow(degrees, -r).flatten()
    r_inv_sqrt_right[torch.isinf(r_inv_sqrt_right)] = 0.
    adj_normalized = (adj * r_inv_sqrt_left.view(1, -1)).t() * r_inv_sqrt_right.view(1, -1)
    return adj_normalized


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/_utils.py:35-65 (libmatmul.so FloatCSRMulDenseOMP)
def csr_sparse_dense_matmul(adj, feature):
    """adj [n, n] float64 -> float32 (adj.data.astype(np.float32)) times feature [n, d] float32,
    float32 result (see the module docstring for the accumulation)."""
    return (adj.float().double() @ feature.float().double()).float()


# ---------------------------------------------------------------------------------------------
# op.py
# ---------------------------------------------------------------------------------------------

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/op.py:10-60
class GraphOp:
    def __init__(self, prop_steps):
        self._prop_steps = prop_steps
        self._adj = None

    def construct_adj(self, adj):
        raise NotImplementedError

    def propagate(self, adj, feature):
        # op.py:18-37: [X, M X, M^2 X, ..., M^prop_steps X], M = construct_adj(adj).
        self.adj = self.construct_adj(adj)
        feature = feature.detach().float()
        prop_feat_list = [feature]
        for _ in range(self._prop_steps):
            feat_temp = csr_sparse_dense_matmul(self.adj, prop_feat_list[-1])
            prop_feat_list.append(feat_temp)
        return [feat.float() for feat in prop_feat_list]

    def init_lp_propagate(self, adj, feature, init_label, alpha):
        # op.py:39-60: f_{k+1} = alpha * M f_k + (1 - alpha) * f_0, then f_{k+1}[seeds] += f_0[seeds]
        # (every step), all in float32.
        self.adj = self.construct_adj(adj)
        feature = feature.detach().float()
        prop_feat_list = [feature]
        for _ in range(self._prop_steps):
            feat_temp = csr_sparse_dense_matmul(self.adj, prop_feat_list[-1])
            feat_temp = alpha * feat_temp + (1 - alpha) * feature
            feat_temp[init_label] += feature[init_label]
            prop_feat_list.append(feat_temp)
        return [feat.float() for feat in prop_feat_list]


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/op.py:83-103
class MessageOp(nn.Module):
    def __init__(self, start=None, end=None):
        super(MessageOp, self).__init__()
        self._aggr_type = None
        self._start, self._end = start, end

    @property
    def aggr_type(self):
        return self._aggr_type

    def combine(self, feat_list):
        return NotImplementedError

    def aggregate(self, feat_list):
        if not isinstance(feat_list, list):
            return TypeError("The input must be a list consists of feature matrices!")
        for feat in feat_list:
            if not isinstance(feat, Tensor):
                raise TypeError("The feature matrices must be tensors!")
        return self.combine(feat_list)


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/op.py:107-121
class LaplacianGraphOp(GraphOp):
    def __init__(self, prop_steps, r=0.5):
        super(LaplacianGraphOp, self).__init__(prop_steps)
        self.r = r

    def construct_adj(self, adj):
        return adj_to_symmetric_norm(adj, self.r)


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/op.py:124-130
class ConcatMessageOp(MessageOp):
    def __init__(self, start, end):
        super(ConcatMessageOp, self).__init__(start, end)
        self._aggr_type = "concat"

    def combine(self, feat_list):
        return torch.hstack(feat_list[self._start:self._end])


# ---------------------------------------------------------------------------------------------
# label_propagation_models.py
# ---------------------------------------------------------------------------------------------

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/label_propagation_models.py:10-13
def idx_to_mask(index, size):
    mask = torch.zeros((size, ), dtype=torch.bool)
    mask[index] = 1
    return mask


def draw_lp_order(train_mask, generator=None):
    """The draw of label_propagation_models.py:34-37: the client's train node ids (ascending)
    shuffled. generator=None: Python's `random.shuffle`, as upstream (seeded by
    random.seed(args.seed)); a torch.Generator: a torch.randperm permutation instead."""
    train_idx_list = torch.where(train_mask == True)[0].tolist()  # noqa: E712
    if generator is None:
        random.shuffle(train_idx_list)
        return train_idx_list
    perm = torch.randperm(len(train_idx_list), generator=generator).tolist()
    return [train_idx_list[i] for i in perm]


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/label_propagation_models.py:16-54
class NonParaLP():
    def __init__(self, prop_steps, num_class, alpha, train_mask, val_mask, test_mask, r=0.5):
        self.prop_steps = prop_steps
        self.r = r
        self.num_class = num_class
        self.alpha = alpha
        self.train_mask = train_mask
        self.val_mask = val_mask
        self.test_mask = test_mask

        self.graph_op = LaplacianGraphOp(prop_steps=self.prop_steps, r=self.r)

    def preprocess(self, nodes_embedding, subgraph, lp_order=None):
        # label_propagation_models.py:28-43. Labels: one-hot of the TRUE label for the LP seeds
        # and for nodes in no split; 1/C for LP-eval, val and test nodes.
        self.subgraph = subgraph
        self.y = subgraph.y
        self.label = F.one_hot(self.y.view(-1), self.num_class).to(torch.float)
        num_nodes = len(self.train_mask)

        train_idx_list = torch.where(self.train_mask == True)[0].cpu().numpy().tolist()  # noqa: E712
        num_train = int(len(train_idx_list) / 2)

        if lp_order is None:
            random.shuffle(train_idx_list)
        else:  # port: the injected draw
            lp_order = [int(i) for i in lp_order]
            if sorted(lp_order) != train_idx_list:
                raise ValueError(f'lp_order {lp_order} is not a permutation of the train nodes {train_idx_list}')
            train_idx_list = lp_order
        self.lp_order = list(train_idx_list)
        self.lp_train_idx = idx_to_mask(train_idx_list[: num_train], num_nodes)
        self.lp_eval_idx = idx_to_mask(train_idx_list[num_train:], num_nodes)

        unlabel_idx = self.lp_eval_idx | self.val_mask.cpu() | self.test_mask.cpu()
        unlabel_init = torch.full([self.label[unlabel_idx].shape[0], self.label[unlabel_idx].shape[1]], 1 / self.num_class)
        self.label[self.lp_eval_idx + self.val_mask.cpu() + self.test_mask.cpu()] = unlabel_init

    def propagate(self, adj):
        # label_propagation_models.py:45-47: over the client's RAW adjacency (not the mixed one)
        self.output = self.graph_op.init_lp_propagate(adj, self.label, init_label=self.lp_train_idx, alpha=self.alpha)
        self.output = self.output[-1]

    def eval(self, i=None):
        # label_propagation_models.py:49-54: argmax (first index on ties) accuracy on the LP-eval
        # half, float64; nan when it is empty.
        pred = self.output.max(1)[1].type_as(self.subgraph.y)
        correct = pred[self.lp_eval_idx].eq(self.subgraph.y[self.lp_eval_idx]).double()
        correct = correct.sum()
        reliability_acc = (correct / self.subgraph.y[self.lp_eval_idx].shape[0]).item()
        return reliability_acc


# ---------------------------------------------------------------------------------------------
# adafgl_models.py
# ---------------------------------------------------------------------------------------------

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/adafgl_models.py:324-331
def getre_scale(emb):
    """Cosine similarity of the rows of softmax(emb) (denominator clamped at 1e-9), diagonal 0."""
    emb_softmax = nn.Softmax(dim=1)(emb)
    re = torch.mm(emb_softmax, emb_softmax.transpose(0, 1))
    re_self = torch.unsqueeze(torch.diag(re), 1)
    scaling = torch.mm(re_self, torch.transpose(re_self, 0, 1))
    re = re / torch.max(torch.sqrt(scaling), 1e-9 * torch.ones_like(scaling))
    re = re - torch.diag(torch.diag(re))
    return re


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/adafgl_models.py:333-338
def add_diag(re_matrix, device=None):
    """Returns re_matrix + I: the diagonal removal computed on the way is discarded (upstream)."""
    re_diag = torch.diag(re_matrix)
    re_diag_matrix = torch.diag_embed(re_diag)
    re = re_matrix - re_diag_matrix
    re = re_matrix + torch.eye(re.shape[0])
    return re


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/adafgl_models.py:112-185
class HetePropagateLayer(nn.Module):
    def __init__(self, feat_dim, output_dim, prop_steps, hidden_dim, num_layers, dropout=0.5, beta=0, bn=False, ln=False):
        super(HetePropagateLayer, self).__init__()
        self.num_layers = num_layers
        self.feat_dim = feat_dim
        self.prop_steps = prop_steps
        self.hidden_dim = hidden_dim
        self.output_dim = output_dim
        self.dropout = nn.Dropout(dropout)
        self.bn = bn
        self.ln = ln
        self.beta = beta

        self.lr_hete_trans = nn.ModuleList()
        self.lr_hete_trans.append(nn.Linear((self.prop_steps + 1) * self.feat_dim, self.hidden_dim))
        for _ in range(num_layers - 2):
            self.lr_hete_trans.append(nn.Linear(self.hidden_dim, self.hidden_dim))
        self.lr_hete_trans.append(nn.Linear(self.hidden_dim, self.output_dim))

        self.norms = nn.ModuleList()  # bn = ln = False upstream: stays empty

        self.softmax = nn.Softmax(dim=1)
        self.prelu = nn.PReLU()
        self.relu = nn.ReLU()
        self.reset_parameters()

    def reset_parameters(self):
        gain = nn.init.calculate_gain("relu")
        for lr_hete_tran in self.lr_hete_trans:
            nn.init.xavier_uniform_(lr_hete_tran.weight, gain=gain)
            nn.init.zeros_(lr_hete_tran.bias)

    def forward(self, feature, device, learnable_re=None):
        # adafgl_models.py:150-185. MLP (prelu, dropout after each hidden layer) -> E [n, C];
        # R = beta * universal_re + (1 - beta) * getre_scale(E) (beta = 0: universal_re unused);
        # centred at its mean m over all n*n entries; entries > 0 divided by (max - m), the others
        # mapped to -(R_orig / m); + I; Z = (softmax(prelu(R) E) - softmax(prelu(-R) E) + E) / 2
        # with this layer's own PReLU (also the hidden-layer activation).
        for i in range(self.num_layers - 1):
            feature = self.lr_hete_trans[i](feature)
            feature = self.prelu(feature)
            feature = self.dropout(feature)
        feature_emb = self.lr_hete_trans[-1](feature)

        feature_emb_re = getre_scale(feature_emb)
        learnable_re = self.beta * learnable_re + (1 - self.beta) * feature_emb_re
        learnable_re_mean = torch.mean(learnable_re)
        learnable_re_max = torch.max(learnable_re)

        learnable_re_pos_min = 0
        learnable_re_pos_difference = learnable_re_max - learnable_re_mean - learnable_re_pos_min

        learnable_re_neg_min = -learnable_re_mean
        learnable_re_neg_difference = 0 - learnable_re_neg_min

        learnable_re = learnable_re - learnable_re_mean
        learnable_re = torch.where(learnable_re > 0, (learnable_re - learnable_re_pos_min) / learnable_re_pos_difference, -((learnable_re - learnable_re_neg_min) / learnable_re_neg_difference))

        learnable_re = add_diag(learnable_re, device)

        pos_signal = self.prelu(learnable_re)
        neg_signal = self.prelu(-learnable_re)

        prop_pos = self.softmax(torch.mm(pos_signal, feature_emb))
        prop_neg = self.softmax(torch.mm(neg_signal, feature_emb))

        local_message_propagation = ((prop_pos - prop_neg) + feature_emb) / 2

        return local_message_propagation


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/adafgl_models.py:187-266
class HetePropagateModel(nn.Module):
    def __init__(self, num_layers, feat_dim, hidden_dim, output_dim, prop_steps, dropout=0.5, bn=False, ln=False):
        super(HetePropagateModel, self).__init__()
        self.num_layers = num_layers
        self.feat_dim = feat_dim
        self.prop_steps = prop_steps
        self.hidden_dim = hidden_dim
        self.output_dim = output_dim
        self.bn = bn
        self.ln = ln
        self.dropout = nn.Dropout(dropout)
        self.prelu = nn.PReLU()  # ONE PReLU shared by both branches' hidden layers
        self.softmax = nn.Softmax(dim=1)

        self.lr_smooth_trans = nn.ModuleList()
        self.lr_smooth_trans.append(nn.Linear((self.prop_steps + 1) * self.feat_dim, self.hidden_dim))
        for _ in range(num_layers - 2):
            self.lr_smooth_trans.append(nn.Linear(self.hidden_dim, self.hidden_dim))
        self.lr_smooth_trans.append(nn.Linear(self.hidden_dim, self.output_dim))

        self.lr_local_trans = nn.ModuleList()
        self.lr_local_trans.append(nn.Linear(self.feat_dim, self.hidden_dim))
        for _ in range(num_layers - 2):
            self.lr_local_trans.append(nn.Linear(self.hidden_dim, self.hidden_dim))
        self.lr_local_trans.append(nn.Linear(self.hidden_dim, self.output_dim))

        # upstream passes no dropout (HetePropagateLayer's default 0.5 == this model's 0.5);
        # the port passes this model's rate so that one argument sets all of them.
        self.hete_propagation = HetePropagateLayer(self.feat_dim, self.output_dim, self.prop_steps, self.hidden_dim, self.num_layers, dropout=dropout)

        self.norms = nn.ModuleList()  # bn = ln = False upstream
        self.reset_parameters()

    def reset_parameters(self):
        gain = nn.init.calculate_gain("relu")
        for lr_local_tran in self.lr_local_trans:
            nn.init.xavier_uniform_(lr_local_tran.weight, gain=gain)
            nn.init.zeros_(lr_local_tran.bias)

        for lr_smooth_tran in self.lr_smooth_trans:
            nn.init.xavier_uniform_(lr_smooth_tran.weight, gain=gain)
            nn.init.zeros_(lr_smooth_tran.bias)

    def forward(self, ori_feature, smoothed_feature, processed_feature, universal_re, device=None):
        input_prop_feature = smoothed_feature
        learnable_re = universal_re

        for i in range(self.num_layers - 1):
            smoothed_feature = self.lr_smooth_trans[i](smoothed_feature)
            smoothed_feature = self.prelu(smoothed_feature)
            smoothed_feature = self.dropout(smoothed_feature)
        local_smooth_emb = self.lr_smooth_trans[-1](smoothed_feature)

        for i in range(self.num_layers - 1):
            ori_feature = self.lr_local_trans[i](ori_feature)
            ori_feature = self.prelu(ori_feature)
            ori_feature = self.dropout(ori_feature)
        local_ori_emb = self.lr_local_trans[-1](ori_feature)

        local_message_propagation = self.hete_propagation(input_prop_feature, device, learnable_re)

        return local_ori_emb, local_smooth_emb, local_message_propagation


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/adafgl_models.py:271-320
class HomoPropagateModel(nn.Module):
    def __init__(self, num_layers, feat_dim, hidden_dim, output_dim, prop_steps, dropout=0.5, bn=False, ln=False):
        super(HomoPropagateModel, self).__init__()
        self.num_layers = num_layers
        self.dropout = dropout

        self.lr_smooth_trans = nn.ModuleList()
        self.lr_smooth_trans.append(nn.Linear((prop_steps + 1) * feat_dim, hidden_dim))
        for _ in range(num_layers - 2):
            self.lr_smooth_trans.append(nn.Linear(hidden_dim, hidden_dim))
        self.lr_smooth_trans.append(nn.Linear(hidden_dim, output_dim))

        self.bn = bn
        self.ln = ln
        self.norms = nn.ModuleList()  # bn = ln = False upstream

        self.dropout = nn.Dropout(dropout)
        self.prelu = nn.PReLU()
        self.reset_parameters()

    def reset_parameters(self):
        gain = nn.init.calculate_gain("relu")
        for lr_smooth_tran in self.lr_smooth_trans:
            nn.init.xavier_uniform_(lr_smooth_tran.weight, gain=gain)
            nn.init.zeros_(lr_smooth_tran.bias)

    def forward(self, smoothed_feature, global_logits, device=None):
        # the "global logits" are returned untouched: they are the soft labels (probabilities)
        for i in range(self.num_layers - 1):
            smoothed_feature = self.lr_smooth_trans[i](smoothed_feature)
            smoothed_feature = self.prelu(smoothed_feature)
            smoothed_feature = self.dropout(smoothed_feature)

        local_smooth_logits = self.lr_smooth_trans[-1](smoothed_feature)

        return local_smooth_logits, global_logits


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/adafgl_models.py:13-101
class AdaFGLModel(nn.Module):
    """state_dict after non_para_lp (hid = hidden_dim, P = prop_steps, F = feat_dim, C):
      homo_model.lr_smooth_trans.0.{weight [hid, (P+1)F], bias}, .1.{weight [C, hid], bias},
      homo_model.prelu.weight [1],
      hete_model.prelu.weight [1],
      hete_model.lr_smooth_trans.{0: [hid, (P+1)F], 1: [hid, hid], 2: [C, hid]}.{weight, bias},
      hete_model.lr_local_trans.{0: [hid, F], 1: [hid, hid], 2: [C, hid]}.{weight, bias},
      hete_model.hete_propagation.lr_hete_trans.{0: [hid, (P+1)F], 1, 2}.{weight, bias},
      hete_model.hete_propagation.prelu.weight [1]."""

    def __init__(self, prop_steps, feat_dim, hidden_dim, output_dim, train_mask, val_mask, test_mask, alpha=0.5, r=0.5, dropout=0.5):
        super(AdaFGLModel, self).__init__()
        self.prop_steps = prop_steps
        self.feat_dim = feat_dim
        self.hidden_dim = hidden_dim
        self.output_dim = output_dim
        self.alpha = alpha
        self.dropout_rate = dropout  # port

        # NonParaLP: 10 steps and alpha = AdaFGLModel's alpha (0.5, not a config value)
        self.NonPLP = NonParaLP(prop_steps=10, num_class=self.output_dim, alpha=alpha, train_mask=train_mask, val_mask=val_mask, test_mask=test_mask, r=r)
        self.pre_graph_op = LaplacianGraphOp(prop_steps=self.prop_steps, r=r)
        self.post_graph_op = LaplacianGraphOp(prop_steps=100, r=r)
        self.post_msg_op = None

    def homo_init(self):
        self.homo_model = HomoPropagateModel(num_layers=2,
                                             feat_dim=self.feat_dim,
                                             hidden_dim=self.hidden_dim,
                                             output_dim=self.output_dim,
                                             dropout=self.dropout_rate,
                                             prop_steps=self.prop_steps,
                                             bn=False,
                                             ln=False)

    def hete_init(self):
        self.hete_model = HetePropagateModel(num_layers=3,
                                             feat_dim=self.feat_dim,
                                             hidden_dim=self.hidden_dim,
                                             output_dim=self.output_dim,
                                             dropout=self.dropout_rate,
                                             prop_steps=self.prop_steps,
                                             bn=False,
                                             ln=False)

    def non_para_lp(self, subgraph, soft_label, x, lp_order=None):
        # adafgl_models.py:53-60: LP (shuffle draw), then homo and hete initialisations (torch draws)
        self.soft_label = soft_label
        self.ori_feature = x
        self.NonPLP.preprocess(self.soft_label, subgraph, lp_order)
        self.NonPLP.propagate(adj=subgraph.adj)
        self.reliability_acc = self.NonPLP.eval()
        self.homo_init()
        self.hete_init()

    def preprocess(self, adj):
        # adafgl_models.py:63-83
        self.pre_msg_op = ConcatMessageOp(start=0, end=self.prop_steps + 1)
        self.universal_re = getre_scale(self.soft_label)
        self.universal_re_smooth = torch.where(self.universal_re > 0.999, 1, 0)
        self.universal_re = torch.where(self.universal_re > 0.999, 1, 0)
        n = self.soft_label.shape[0]
        universal_re_smooth_adj = torch.zeros(n, n, dtype=torch.float32)
        universal_re_smooth_adj[self.universal_re_smooth != 0] = 1.0
        self.adj = self.alpha * adj + (1 - self.alpha) * universal_re_smooth_adj  # float32, as scipy's

        self.processed_feat_list = self.pre_graph_op.propagate(self.adj, self.ori_feature)
        self.smoothed_feature = self.pre_msg_op.aggregate(self.processed_feat_list)
        self.processed_feature = self.soft_label

    def homo_forward(self, device=None):
        local_smooth_logits, global_logits = self.homo_model(
            smoothed_feature=self.smoothed_feature,
            global_logits=self.processed_feature,
            device=device
        )
        return local_smooth_logits, global_logits

    def hete_forward(self, device=None):
        local_ori_logits, local_smooth_logits, local_message_propagation = self.hete_model(
            ori_feature=self.ori_feature,
            smoothed_feature=self.smoothed_feature,
            processed_feature=self.processed_feature,
            universal_re=self.universal_re,
            device=device)
        return local_ori_logits, local_smooth_logits, local_message_propagation


def draw_adafgl_state(feat_dim, hid_dim, num_classes, prop_steps=DEFAULT_CONFIG["prop_steps"], seed=None):
    """The torch draws of AdaFGLModel.non_para_lp (homo_init then hete_init: nn.Linear's
    default init, then the xavier_uniform(gain sqrt(2)) resets, biases 0, PReLUs 0.25), from the
    global torch RNG, or from a private one seeded with `seed`. Returns the state_dict."""
    def build():
        model = nn.Module()
        model.homo_model = HomoPropagateModel(2, feat_dim, hid_dim, num_classes, prop_steps)
        model.hete_model = HetePropagateModel(3, feat_dim, hid_dim, num_classes, prop_steps)
        return clone_state(model)
    if seed is None:
        return build()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


# ---------------------------------------------------------------------------------------------
# client.py / server.py
# ---------------------------------------------------------------------------------------------

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/client.py:11-191
class AdaFGLClient(BaseClient):
    config = DEFAULT_CONFIG

    def __init__(self, args, client_id, data, message_pool, input_dim, num_classes):
        # client.py:22-36
        super(AdaFGLClient, self).__init__(args, client_id, data, message_pool, input_dim, num_classes, personalized=True)
        self.phase = 0
        # port: injected draws (None: drawn at the switch round, as upstream) and a record
        self.lp_order = None
        self.adafgl_state = None
        self.adafgl_model = None
        self.last_losses = None

    def execute(self):
        # client.py:40-79
        # switch phase (only AT round num_rounds_vanilla: a client not sampled in that round never
        # switches, and later fails upstream on the missing "weight")
        if self.message_pool["round"] == self.config["num_rounds_vanilla"]:
            self.phase = 1
            self.adafgl_model = AdaFGLModel(prop_steps=self.config["prop_steps"], feat_dim=self.task.data.x.shape[1], hidden_dim=self.args.hid_dim, output_dim=self.task.num_global_classes, train_mask=self.task.train_mask, val_mask=self.task.val_mask, test_mask=self.task.test_mask, r=self.config["r"], dropout=self.config["adafgl_dropout"])
            self.task.data = adj_initialize(self.task.data)

            # last time download global model
            with torch.no_grad():
                for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                    local_param.data.copy_(global_param)

            # initialize adafgl model (soft labels: eval-mode GCN, no grad)
            eval_output = self.task.evaluate()
            node_logits = eval_output["logits"]
            soft_label = nn.Softmax(dim=1)(node_logits)
            self.adafgl_model.non_para_lp(subgraph=self.task.data, soft_label=soft_label, x=self.task.data.x, lp_order=self.lp_order)
            if self.adafgl_state is not None:  # port: the injected initialisation
                self.adafgl_model.load_state_dict(self.adafgl_state, strict=True)
            self.adafgl_model.preprocess(adj=self.task.data.adj)

            # create optimizer
            self.adafgl_optimizer = Adam(self.adafgl_model.parameters(), lr=self.config["adafgl_lr"], weight_decay=self.config["adafgl_weight_decay"])

            # override evaluation
            self.task.override_evaluate = self.get_adafgl_override_evaluate()

        # execute
        if self.phase == 0:
            with torch.no_grad():
                for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                    local_param.data.copy_(global_param)
            self.task.train()
        else:
            self.adafgl_postprocess()

    def send_message(self):
        # client.py:83-94
        if self.phase == 0:
            self.message_pool[f"client_{self.client_id}"] = {
                "num_samples": self.task.num_samples,
                "weight": list(self.task.model.parameters())
            }
        else:
            self.message_pool[f"client_{self.client_id}"] = {}

    def adafgl_postprocess(self, loss_ce_fn=nn.CrossEntropyLoss()):
        # client.py:96-124: ONE optimizer step per round (not num_epochs), on
        #   CE(homo[train]) + MSE(homo, soft_label) (all nodes, all classes)
        #   + CE(hete_ori[train]) + CE(hete_smooth[train]) + CE(hete_msg[train]).
        self.adafgl_model.train()
        self.adafgl_optimizer.zero_grad()

        # homo forward
        local_smooth_logits, global_logits = self.adafgl_model.homo_forward()
        loss_train1 = loss_ce_fn(local_smooth_logits[self.task.train_mask], self.task.data.y[self.task.train_mask])
        loss_train2 = nn.MSELoss()(local_smooth_logits, global_logits)
        loss_train_homo = loss_train1 + loss_train2
        losses = {'homo_ce': loss_train1.item(), 'homo_mse': loss_train2.item()}  # port: record

        # hete forward
        local_ori_logits, local_smooth_logits, local_message_propagation = self.adafgl_model.hete_forward()
        loss_train1 = loss_ce_fn(local_ori_logits[self.task.train_mask], self.task.data.y[self.task.train_mask])
        loss_train2 = loss_ce_fn(local_smooth_logits[self.task.train_mask], self.task.data.y[self.task.train_mask])
        loss_train3 = loss_ce_fn(local_message_propagation[self.task.train_mask], self.task.data.y[self.task.train_mask])
        loss_train_hete = loss_train1 + loss_train2 + loss_train3

        # final loss
        loss_final = loss_train_homo + loss_train_hete
        losses.update(hete_ori_ce=loss_train1.item(), hete_smooth_ce=loss_train2.item(),
                      hete_msg_ce=loss_train3.item(), total=loss_final.item())
        self.last_losses = losses

        loss_final.backward()
        self.adafgl_optimizer.step()

    def get_adafgl_override_evaluate(self):
        # client.py:127-191 (metrics = ['accuracy'])
        def override_evaluate(splitted_data=None, mute=False):
            assert splitted_data is None, "AdaFGL doesn't support global data evaluation."
            splitted_data = self.task.splitted_data

            eval_output = {}
            self.adafgl_model.eval()

            # homo eval: NOTE softmax of the soft labels (already probabilities)
            with torch.no_grad():
                local_smooth_logits, global_logits = self.adafgl_model.homo_forward()
                output_homo = (F.softmax(local_smooth_logits.data, 1) + F.softmax(global_logits.data, 1)) / 2

                # hete eval
                local_ori_logits, local_smooth_logits, local_message_propagation = self.adafgl_model.hete_forward()
                output_hete = (F.softmax(local_ori_logits.data, 1) + F.softmax(local_smooth_logits.data, 1) + F.softmax(
                    local_message_propagation.data, 1)) / 3

                # merge
                homo_weight = self.adafgl_model.reliability_acc
                embedding = None
                logits = homo_weight * output_homo + (1 - homo_weight) * output_hete

                loss_train = self.task.loss_fn(embedding, logits, splitted_data["data"].y, splitted_data["train_mask"])
                loss_val = self.task.loss_fn(embedding, logits, splitted_data["data"].y, splitted_data["val_mask"])
                loss_test = self.task.loss_fn(embedding, logits, splitted_data["data"].y, splitted_data["test_mask"])

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

        return override_evaluate


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/adafgl/server.py:12-75
class AdaFGLServer(BaseServer):
    config = DEFAULT_CONFIG

    def __init__(self, args, message_pool, input_dim, num_classes):
        # server.py:25-37
        super(AdaFGLServer, self).__init__(args, message_pool, input_dim, num_classes, personalized=True)
        self.phase = 0

    def execute(self):
        # server.py:39-63: phase 0 = FedAvg; switches AFTER its send_message of round
        # num_rounds_vanilla (which still carried the weights), then does nothing.
        if self.message_pool["round"] == self.config["num_rounds_vanilla"]:
            self.phase = 1

        if self.phase == 0:
            with torch.no_grad():
                num_tot_samples = sum([self.message_pool[f"client_{client_id}"]["num_samples"] for client_id in self.message_pool[f"sampled_clients"]])
                for it, client_id in enumerate(self.message_pool["sampled_clients"]):
                    weight = self.message_pool[f"client_{client_id}"]["num_samples"] / num_tot_samples

                    for (local_param, global_param) in zip(self.message_pool[f"client_{client_id}"]["weight"], self.task.model.parameters()):
                        if it == 0:
                            global_param.data.copy_(weight * local_param)
                        else:
                            global_param.data += weight * local_param
        else:
            pass  # do nothing

    def send_message(self):
        # server.py:65-75
        if self.phase == 0:
            self.message_pool["server"] = {
                "weight": list(self.task.model.parameters())
            }
        else:
            self.message_pool["server"] = {}


class AdaFGLOpenFgl(OpenFglFederation):
    """AdaFGLOpenFgl(subgraphs, num_classes, global_state=None, prop_steps=3,
    num_rounds_vanilla=50, r=0.5, adafgl_lr=1e-2, adafgl_weight_decay=5e-4, adafgl_dropout=0.5,
    lp_orders=None, adafgl_states=None, **common), common as OpenFglFederation.

    lp_orders: per client (or None per entry) its train node ids in shuffled order (see
      draw_lp_order); adafgl_states: per client (or None) the AdaFGLModel state_dict to use
      instead of the initialisation drawn at the switch (see draw_adafgl_state).

    train_round(sampled_clients=None) returns round, sampled_clients, server_message
    ({'weight'} while the server is in phase 0, else {}), uploads ({'num_samples', 'weight'}
    in phase 0, {} in phase 1), local (every client's GCN: frozen from the switch on), global
    (server GCN: frozen from the switch on), and
      phase: [per client 0/1], server_phase
      adafgl: per client None (phase 0) or {
        'model': AdaFGLModel state_dict after the round,
        'losses': this round's step {'homo_ce', 'homo_mse', 'hete_ori_ce', 'hete_smooth_ce',
                  'hete_msg_ce', 'total'} (before the step),
        'reliability_acc': float, 'soft_label' [n, C] (softmax of the eval GCN logits),
        'lp_order': list, 'lp_train_mask' / 'lp_eval_mask' bool [n],
        'lp_label' [n, C] (LP input), 'lp_output' [n, C] (after 10 steps),
        'universal_re' int64 [n, n], 'adj' float32 [n, n] (0.5 A + 0.5 universal_re),
        'norm_adj' float64 [n, n] (its normalisation), 'smoothed_feature' [n, (P+1) F]}."""
    client_cls = AdaFGLClient
    server_cls = AdaFGLServer

    def __init__(self, subgraphs, num_classes, global_state=None, prop_steps=DEFAULT_CONFIG["prop_steps"],
                 num_rounds_vanilla=DEFAULT_CONFIG["num_rounds_vanilla"], r=DEFAULT_CONFIG["r"],
                 adafgl_lr=DEFAULT_CONFIG["adafgl_lr"], adafgl_weight_decay=DEFAULT_CONFIG["adafgl_weight_decay"],
                 adafgl_dropout=DEFAULT_CONFIG["adafgl_dropout"], lp_orders=None, adafgl_states=None, **common):
        self.config = dict(DEFAULT_CONFIG, prop_steps=prop_steps, num_rounds_vanilla=num_rounds_vanilla, r=r,
                           adafgl_lr=adafgl_lr, adafgl_weight_decay=adafgl_weight_decay, adafgl_dropout=adafgl_dropout)
        super().__init__(subgraphs, num_classes, global_state, **common)
        for i, client in enumerate(self.clients):
            client.lp_order = None if lp_orders is None else lp_orders[i]
            client.adafgl_state = None if adafgl_states is None else adafgl_states[i]

    def make_client(self, client_id, data, input_dim):
        client = super().make_client(client_id, data, input_dim)
        client.config = self.config
        return client

    def make_server(self, input_dim):
        server = super().make_server(input_dim)
        server.config = self.config
        return server

    def extra_state(self):
        out = {'phase': [c.phase for c in self.clients], 'server_phase': self.server.phase, 'adafgl': []}
        for c in self.clients:
            m = c.adafgl_model
            if m is None:
                out['adafgl'].append(None)
                continue
            out['adafgl'].append({
                'model': clone_state(m),
                'losses': dict(c.last_losses) if c.last_losses is not None else None,
                'reliability_acc': m.reliability_acc,
                'soft_label': m.soft_label.detach().clone(),
                'lp_order': list(m.NonPLP.lp_order),
                'lp_train_mask': m.NonPLP.lp_train_idx.clone(),
                'lp_eval_mask': m.NonPLP.lp_eval_idx.clone(),
                'lp_label': m.NonPLP.label.clone(),
                'lp_output': m.NonPLP.output.clone(),
                'universal_re': m.universal_re.clone(),
                'adj': m.adj.clone(),
                'norm_adj': m.pre_graph_op.adj.clone(),
                'smoothed_feature': m.smoothed_feature.clone(),
            })
        return out
