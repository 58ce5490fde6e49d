"""OpenFGL's FGSSL, ported line by line to plain PyTorch: a test oracle.

Upstream: https://github.com/xkLi-Allen/OpenFGL at commit 5483768, files
openfgl/flcore/fgssl/client.py, server.py, augment.py, losses.py, models.py and samplers.py
(no config file: the hyper-parameters are literals in client.py), on top of
methods/reference/openfgl.py.

What OpenFGL's FGSSL actually optimises (client.py:66-118): in every local epoch
    loss = CE(logits[train], y[train]) + 0.1 * edge_distribution_high(E, h_local, h_global)
where h_local is the LOCAL model's hidden embedding (relu(conv0), after dropout, training mode)
on the STRONG view (edges kept with prob 0.2, features masked with prob 0.5), h_global the
received GLOBAL model's hidden embedding (eval mode, no grad) on the WEAK view (edges kept
with prob 0.7, features masked with prob 0.3), and E the ORIGINAL edge list. Every other
loss the client computes (com_distillation_loss, simi_kd, Correlation, simi_kd_2, the
SingleBranchContrast InfoNCE, twice) is computed and discarded. The server is FedAvg.

Draws (torch's global RNG), per sampled client, per local epoch, in this order:
  [dropout of the main forward]  1. weak view:   torch.rand(E) >= 0.3   (edge keep mask, [E])
                                 2.              uniform_(0, 1)[F] < 0.3 (feature drop mask, [F])
                                 3. strong view: torch.rand(E) >= 0.8   ([E])
                                 4.              uniform_(0, 1)[F] < 0.5 ([F])
  [dropout of the local forward on the weak view] [dropout of the local forward on the strong view]
E counts stored (directed) edges: the two directions of an edge are dropped independently, so
the views are directed graphs. Draws 1-4 are injectable (train_round's `augmentations`; see
draw_fgssl_augmentations); the dropouts are not (`dropout` = 0 removes them).

Changes from upstream (nothing else):
  * The literal probabilities (0.3, 0.3, 0.8, 0.5) and the 0.1 weight are constructor
    arguments with those defaults.
  * The augmentation masks can be injected, and the ones used are recorded.
  * `compute_unused=False` skips the discarded losses (no numeric effect on anything; useful on
    graphs where upstream's simi_kd crashes: to_dense_adj(edge_index) without num_nodes is
    smaller than n when the highest-numbered node has no edge -> broadcast error).
  * F.kl_div's reduction='mean' warnings are silenced. Per-epoch loss values are recorded.
"""
import copy
import os
import sys
import warnings
from abc import ABC, abstractmethod
from typing import List, NamedTuple, Optional, Tuple

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.fedavg.reference.fedavg_openfgl import FedAvgClient, FedAvgServer  # noqa: E402
from methods.reference.openfgl import OpenFglFederation  # noqa: E402
from methods.reference.pyg import dropout_adj, to_dense_adj  # noqa: E402

DEFAULT_CONFIG = {
    "weak_pe": 0.3,     # client.py:50 A.EdgeRemoving(pe=0.3)
    "weak_pf": 0.3,     # client.py:50 A.FeatureMasking(pf=0.3)
    "strong_pe": 0.8,   # client.py:51 A.EdgeRemoving(pe=0.8)
    "strong_pf": 0.5,   # client.py:51 A.FeatureMasking(pf=0.5)
    "ff_weight": 0.1,   # client.py:115 loss1 + loss_ff * 0.1
}

DRAW_KEYS = ('weak_edge_keep', 'weak_feat_drop', 'strong_edge_keep', 'strong_feat_drop')


# ---------------------------------------------------------------------------------------------
# augment.py
# ---------------------------------------------------------------------------------------------

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/augment.py:6-12
class Graph(NamedTuple):
    x: torch.FloatTensor
    edge_index: torch.LongTensor
    edge_weights: Optional[torch.FloatTensor]

    def unfold(self) -> Tuple[torch.FloatTensor, torch.LongTensor, Optional[torch.FloatTensor]]:
        return self.x, self.edge_index, self.edge_weights


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/augment.py:13-26. Port: augment() takes the
# injected draw (None: draw from the global RNG) and returns it with the graph.
class Augmentor(ABC):
    """Base class for graph augmentors."""
    def __init__(self):
        pass

    @abstractmethod
    def augment(self, g: Graph, draw=None):
        raise NotImplementedError(f"GraphAug.augment should be implemented.")

    def __call__(self, x, edge_index, edge_weight=None, draws=None):
        g, used = self.augment(Graph(x, edge_index, edge_weight), draws)
        return g.unfold() + (used,)


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/augment.py:29-37
class Compose(Augmentor):
    def __init__(self, augmentors: List[Augmentor]):
        super(Compose, self).__init__()
        self.augmentors = augmentors

    def augment(self, g: Graph, draws=None):
        used = []
        for i, aug in enumerate(self.augmentors):
            g, d = aug.augment(g, None if draws is None else draws[i])
            used.append(d)
        return g, used


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/augment.py:39-47 (+ PyG dropout_adj)
class EdgeRemoving(Augmentor):
    def __init__(self, pe: float):
        super(EdgeRemoving, self).__init__()
        self.pe = pe

    def augment(self, g: Graph, keep_mask=None):
        x, edge_index, edge_weights = g.unfold()
        if keep_mask is None:
            # PyG dropout_adj's draw (no draw when p == 0)
            keep_mask = (torch.ones(edge_index.size(1), dtype=torch.bool) if self.pe == 0.0
                         else torch.rand(edge_index.size(1)) >= self.pe)
        edge_index, edge_weights = dropout_adj(edge_index, edge_attr=edge_weights, p=self.pe, keep_mask=keep_mask)
        return Graph(x=x, edge_index=edge_index, edge_weights=edge_weights), keep_mask


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/augment.py:49-54
class Identity(Augmentor):
    def __init__(self):
        super(Identity, self).__init__()

    def augment(self, g: Graph, draw=None):
        return g, None


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/augment.py:57-64
def drop_feature(x: torch.Tensor, drop_prob: float, drop_mask=None):
    """Zeroes whole feature COLUMNS (one draw per feature, shared by all nodes)."""
    if drop_mask is None:
        drop_mask = torch.empty((x.size(1),), dtype=torch.float32).uniform_(0, 1) < drop_prob
    x = x.clone()
    x[:, drop_mask] = 0

    return x, drop_mask


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/augment.py:65-73
class FeatureMasking(Augmentor):
    def __init__(self, pf: float):
        super(FeatureMasking, self).__init__()
        self.pf = pf

    def augment(self, g: Graph, drop_mask=None):
        x, edge_index, edge_weights = g.unfold()
        x, drop_mask = drop_feature(x, self.pf, drop_mask)
        return Graph(x=x, edge_index=edge_index, edge_weights=edge_weights), drop_mask


def draw_fgssl_augmentations(num_edges, feat_dim, num_epochs=3, generator=None, weak_pe=DEFAULT_CONFIG["weak_pe"],
                             weak_pf=DEFAULT_CONFIG["weak_pf"], strong_pe=DEFAULT_CONFIG["strong_pe"],
                             strong_pf=DEFAULT_CONFIG["strong_pf"]):
    """One client's augmentation draws for a round, epoch by epoch in upstream's order
    (weak edges, weak features, strong edges, strong features), from `generator` or the global
    RNG: [{'weak_edge_keep': bool [E], 'weak_feat_drop': bool [F], 'strong_edge_keep': bool [E],
    'strong_feat_drop': bool [F]}] * num_epochs. (Upstream interleaves these with the dropout
    draws of the forwards; with dropout 0 there are none.)"""
    def edges(p):
        if p == 0.0:
            return torch.ones(num_edges, dtype=torch.bool)
        return torch.rand(num_edges, generator=generator) >= p

    def feats(p):
        return torch.empty((feat_dim,), dtype=torch.float32).uniform_(0, 1, generator=generator) < p

    out = []
    for _ in range(num_epochs):
        d = {}
        d['weak_edge_keep'] = edges(weak_pe)
        d['weak_feat_drop'] = feats(weak_pf)
        d['strong_edge_keep'] = edges(strong_pe)
        d['strong_feat_drop'] = feats(strong_pf)
        out.append(d)
    return out


# ---------------------------------------------------------------------------------------------
# losses.py, samplers.py, models.py (only the parts the client constructs or calls)
# ---------------------------------------------------------------------------------------------

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/losses.py:7-10
def _similarity(h1: torch.Tensor, h2: torch.Tensor):
    h1 = F.normalize(h1)
    h2 = F.normalize(h2)
    return h1 @ h2.t()


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/losses.py:11-18
class Loss(ABC):
    @abstractmethod
    def compute(self, anchor, sample, pos_mask, neg_mask, *args, **kwargs) -> torch.FloatTensor:
        pass

    def __call__(self, anchor, sample, pos_mask=None, neg_mask=None, *args, **kwargs) -> torch.FloatTensor:
        loss = self.compute(anchor, sample, pos_mask, neg_mask, *args, **kwargs)
        return loss


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/losses.py:19-30
class InfoNCE(Loss):
    def __init__(self, tau):
        super(InfoNCE, self).__init__()
        self.tau = tau

    def compute(self, anchor, sample, pos_mask, neg_mask, *args, **kwargs):
        sim = _similarity(anchor, sample) / self.tau
        exp_sim = torch.exp(sim) * (pos_mask + neg_mask)
        log_prob = sim - torch.log(exp_sim.sum(dim=1, keepdim=True))
        loss = log_prob * pos_mask
        loss = loss.sum(dim=1) / pos_mask.sum(dim=1)
        return -loss.mean()


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/losses.py:34-52
def bt_loss(h1: torch.Tensor, h2: torch.Tensor, lambda_, batch_norm=True, eps=1e-15, *args, **kwargs):
    batch_size = h1.size(0)
    feature_dim = h1.size(1)

    if lambda_ is None:
        lambda_ = 1. / feature_dim

    if batch_norm:
        z1_norm = (h1 - h1.mean(dim=0)) / (h1.std(dim=0) + eps)
        z2_norm = (h2 - h2.mean(dim=0)) / (h2.std(dim=0) + eps)
        c = (z1_norm.T @ z2_norm) / batch_size
    else:
        c = h1.T @ h2 / batch_size

    off_diagonal_mask = ~torch.eye(feature_dim).bool()
    loss = (1 - c.diagonal()).pow(2).sum()
    loss += lambda_ * c[off_diagonal_mask].pow(2).sum()

    return loss


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/losses.py:53-61 (constructed, never called)
class BarlowTwins(Loss):
    def __init__(self, lambda_: float = None, batch_norm: bool = True, eps: float = 1e-5):
        self.lambda_ = lambda_
        self.batch_norm = batch_norm
        self.eps = eps

    def compute(self, anchor, sample, pos_mask, neg_mask, *args, **kwargs) -> torch.FloatTensor:
        loss = bt_loss(anchor, sample, self.lambda_, self.batch_norm, self.eps)
        return loss.mean()


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/samplers.py:6-42 (mode 'L2L' only)
class Sampler(ABC):
    def __init__(self, intraview_negs=False):
        self.intraview_negs = intraview_negs

    def __call__(self, anchor, sample, *args, **kwargs):
        ret = self.sample(anchor, sample, *args, **kwargs)
        if self.intraview_negs:
            raise NotImplementedError('intraview_negs')  # False for FGSSL's only sampler
        return ret

    @abstractmethod
    def sample(self, anchor, sample, *args, **kwargs):
        pass


class SameScaleSampler(Sampler):
    def __init__(self, *args, **kwargs):
        super(SameScaleSampler, self).__init__(*args, **kwargs)

    def sample(self, anchor, sample, *args, **kwargs):
        assert anchor.size(0) == sample.size(0)
        num_nodes = anchor.size(0)
        pos_mask = torch.eye(num_nodes, dtype=torch.float32)
        neg_mask = 1. - pos_mask
        return anchor, sample, pos_mask, neg_mask


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/samplers.py:75-81
def get_sampler(mode: str, intraview_negs: bool) -> Sampler:
    if mode in {'L2L', 'G2G'}:
        return SameScaleSampler(intraview_negs=intraview_negs)
    raise RuntimeError(f'unsupported mode: {mode}')  # 'G2L' (CrossScaleSampler) is not ported


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/models.py:9-16
def add_extra_mask(pos_mask, neg_mask=None, extra_pos_mask=None, extra_neg_mask=None):
    if extra_pos_mask is not None:
        pos_mask = torch.bitwise_or(pos_mask.bool(), extra_pos_mask.bool()).float()
    if extra_neg_mask is not None:
        neg_mask = torch.bitwise_and(neg_mask.bool(), extra_neg_mask.bool()).float()
    else:
        neg_mask = 1. - pos_mask
    return pos_mask, neg_mask


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/models.py:17-50 (mode 'L2L')
class SingleBranchContrast(torch.nn.Module):
    def __init__(self, loss: Loss, mode: str, intraview_negs: bool = False, **kwargs):
        super(SingleBranchContrast, self).__init__()
        self.loss = loss
        self.mode = mode
        self.sampler = get_sampler(mode, intraview_negs=intraview_negs)
        self.kwargs = kwargs

    def forward(self, h1=None, h2=None, g1=None, g2=None, batch=None, h3=None, h4=None,
                extra_pos_mask=None, extra_neg_mask=None):
        assert self.mode == 'L2L'
        assert h1 is not None and h2 is not None
        anchor1, sample1, pos_mask1, neg_mask1 = self.sampler(anchor=h1, sample=h2)
        anchor2, sample2, pos_mask2, neg_mask2 = self.sampler(anchor=h2, sample=h1)

        pos_mask1, neg_mask1 = add_extra_mask(pos_mask1, neg_mask1, extra_pos_mask, extra_neg_mask)
        pos_mask2, neg_mask2 = add_extra_mask(pos_mask2, neg_mask2, extra_pos_mask, extra_neg_mask)
        l1 = self.loss(anchor=anchor1, sample=sample1, pos_mask=pos_mask1, neg_mask=neg_mask1, **self.kwargs)
        l2 = self.loss(anchor=anchor2, sample=sample2, pos_mask=pos_mask2, neg_mask=neg_mask2, **self.kwargs)

        return l2 * 0.5  # (sic: l1 is dropped)


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/models.py:52-61 (constructed, never called)
class WithinEmbedContrast(torch.nn.Module):
    def __init__(self, loss: Loss, **kwargs):
        super(WithinEmbedContrast, self).__init__()
        self.loss = loss
        self.kwargs = kwargs

    def forward(self, h1, h2):
        l1 = self.loss(anchor=h1, sample=h2, **self.kwargs)
        l2 = self.loss(anchor=h2, sample=h1, **self.kwargs)
        return (l1 + l2) * 0.5


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/models.py:64-85
class Correlation(torch.nn.Module):
    """Similarity-preserving loss. My origianl own reimplementation
    based on the paper before emailing the original authors."""
    def __init__(self):
        super(Correlation, self).__init__()

    def forward(self, f_s, f_t):
        return self.similarity_loss(f_s, f_t)

    def similarity_loss(self, f_s, f_t):
        bsz = f_s.shape[0]
        f_s = f_s.view(bsz, -1)
        f_t = f_t.view(bsz, -1)

        G_s = torch.mm(f_s, torch.t(f_s))
        G_s = G_s / G_s.norm(2)
        G_t = torch.mm(f_t, torch.t(f_t))
        G_t = G_t / G_t.norm(2)

        G_diff = G_t - G_s
        loss = (G_diff * G_diff).view(-1, 1).sum(0) / (bsz * bsz)
        return loss


# ---------------------------------------------------------------------------------------------
# client.py: the loss helpers
# ---------------------------------------------------------------------------------------------

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/client.py:148-163 (result discarded upstream)
def com_distillation_loss(t_logits, s_logits, adj_orig, adj_sampled, temp):
    s_dist = F.log_softmax(s_logits / temp, dim=-1)
    t_dist = F.softmax(t_logits / temp, dim=-1)
    kd_loss = temp * temp * F.kl_div(s_dist, t_dist.detach())

    adj = torch.triu(adj_orig).detach()
    edge_list = (adj + adj.T).nonzero().t()

    s_dist_neigh = F.log_softmax(s_logits[edge_list[0]] / temp, dim=-1)
    t_dist_neigh = F.softmax(t_logits[edge_list[1]] / temp, dim=-1)

    kd_loss += temp * temp * F.kl_div(s_dist_neigh, t_dist_neigh.detach())

    return kd_loss


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/client.py:165-180 (result discarded upstream)
def simi_kd_2(adj_orig, feats, out):
    tau = 0.1

    adj = torch.triu(adj_orig)
    edge_idx = (adj + adj.T).nonzero().t()
    feats = F.softmax(feats / tau, dim=-1)
    out = F.softmax(out / tau, dim=-1)

    src = edge_idx[0]
    dst = edge_idx[1]

    _1 = torch.cosine_similarity(feats[src], feats[dst], dim=-1)
    _2 = torch.cosine_similarity(out[src], out[dst], dim=-1)

    loss = F.kl_div(_1, _2)
    return loss


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/client.py:182-196: THE extra loss.
def edge_distribution_high(edge_idx, feats, out):
    """For each stored edge (src, dst): P = log_softmax(|feats[src] - feats[dst]| / 0.1),
    Q = log_softmax(|out[src] - out[dst]| / 0.1) over the hidden dimension;
    KLDivLoss(batchmean, log_target=True)(P, Q) = sum_e sum_h exp(Q) (Q - P) / E."""
    tau = 0.1
    src = edge_idx[0]
    dst = edge_idx[1]
    criterion_t = torch.nn.KLDivLoss(reduction="batchmean", log_target=True)

    feats_abs = torch.abs(feats[src] - feats[dst])
    e_softmax = F.log_softmax(feats_abs / tau, dim=-1)

    out_1 = torch.abs(out[src] - out[dst])
    e_softmax_2 = F.log_softmax(out_1 / tau, dim=-1)

    loss_s = criterion_t(e_softmax, e_softmax_2)
    return loss_s


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/client.py:198-215 (result discarded upstream)
def simi_kd(global_nodes, local_nodes, edge_index, temp):
    adj_orig = to_dense_adj(edge_index).squeeze(0)
    adj_orig.fill_diagonal_(True)
    local_simi = torch.cosine_similarity(local_nodes.unsqueeze(1), local_nodes.unsqueeze(0), dim=-1)
    global_simi = torch.cosine_similarity(global_nodes.unsqueeze(1), global_nodes.unsqueeze(0), dim=-1)

    local_simi = torch.where(adj_orig > 0, local_simi, torch.zeros_like(local_simi))
    global_simi = torch.where(adj_orig > 0, global_simi, torch.zeros_like(global_simi))

    s_dist_neigh = F.log_softmax(local_simi / temp, dim=-1)
    t_dist_neigh = F.softmax(global_simi / temp, dim=-1)

    kd_loss = temp * temp * F.kl_div(s_dist_neigh, t_dist_neigh.detach())

    return kd_loss


# ---------------------------------------------------------------------------------------------
# client.py / server.py
# ---------------------------------------------------------------------------------------------

# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/client.py:13-146
class FGSSLClient(FedAvgClient):
    config = DEFAULT_CONFIG
    compute_unused = True

    def __init__(self, args, client_id, data, message_pool, input_dim, num_classes):
        # client.py:33-53
        super(FGSSLClient, self).__init__(args, client_id, data, message_pool, input_dim, num_classes)
        self.global_model = copy.deepcopy(self.task.model)
        self.cos = torch.nn.CosineSimilarity(dim=-1)
        self.contrast_model = SingleBranchContrast(loss=InfoNCE(tau=0.1), mode='L2L')
        self.withcontrast_model = WithinEmbedContrast(loss=BarlowTwins())
        self.ccKD = Correlation()
        self.augNone = Identity()
        self.pending_draws = None  # port: this round's injected draws, one entry per epoch
        self.used_draws = []       # port: the draws used this round
        self.epoch_losses = []     # port: per-epoch loss values this round

    def setup_augmentors(self):
        # client.py:50-51 (built from the federation's config)
        self.augWeak = Compose([EdgeRemoving(pe=self.config["weak_pe"]), FeatureMasking(pf=self.config["weak_pf"])])
        self.augStrongF = Compose([EdgeRemoving(pe=self.config["strong_pe"]), FeatureMasking(pf=self.config["strong_pf"])])

    def get_custom_loss_fn(self):
        # client.py:57-119
        def custom_loss_fn(embedding, logits, label, mask):
            loss1 = torch.nn.functional.cross_entropy(logits[mask], label[mask])
            if self.task.model.training:

                self.global_model.eval()
                batch = self.task.splitted_data["data"]
                embedding_g, logits_g = self.global_model.forward(batch)  # unused

                batch1 = copy.deepcopy(batch)
                batch2 = copy.deepcopy(batch)

                draws = None
                if self.pending_draws:
                    d = self.pending_draws.pop(0)
                    draws = ([d['weak_edge_keep'], d['weak_feat_drop']], [d['strong_edge_keep'], d['strong_feat_drop']])
                g1, edge_index1, edge_weight1, used1 = self.augWeak(batch.x, batch.edge_index, draws=None if draws is None else draws[0])
                g2, edge_index2, edge_weight2, used2 = self.augStrongF(batch.x, batch.edge_index, draws=None if draws is None else draws[1])
                self.used_draws.append(dict(zip(DRAW_KEYS, [t.clone() for t in used1 + used2])))

                batch1.x = g1
                batch1.edge_index = edge_index1

                batch2.x = g2
                batch2.edge_index = edge_index2

                # the global model's HIDDEN embedding on the weak view (eval mode, no grad)
                with torch.no_grad():
                    pred_aug_global, globalOne = self.global_model(batch1)

                _, now2 = self.task.model(batch1)  # training mode: dropout draw; only used in dead code

                # the local model's HIDDEN embedding on the strong view (training mode)
                pred_aug_local, now = self.task.model(batch2)

                record = {}
                if self.compute_unused:
                    with warnings.catch_warnings():
                        warnings.simplefilter('ignore')
                        adj_orig = to_dense_adj(batch.edge_index, max_num_nodes=batch.x.shape[0]).squeeze(0)

                        struct_kd = com_distillation_loss(pred_aug_global, pred_aug_local, adj_orig, adj_orig, 3)
                        simi_kd_loss = simi_kd(pred_aug_global, pred_aug_local, batch.edge_index, 4)

                        cc_loss = self.ccKD(pred_aug_local, pred_aug_global)
                        loss3 = simi_kd_2(adj_orig, pred_aug_local, pred_aug_global)
                        record.update(struct_kd=struct_kd.item(), simi_kd=simi_kd_loss.item(), cc=cc_loss.item(),
                                      simi_kd_2=loss3.item())
                loss_ff = edge_distribution_high(batch.edge_index, pred_aug_local, pred_aug_global)
                if self.compute_unused:
                    globalOne = globalOne[mask]
                    now = now[mask]
                    now2 = now2[mask]
                    extra_pos_mask = torch.eq(label[mask], label[mask].unsqueeze(dim=1))
                    extra_pos_mask.fill_diagonal_(True)

                    extra_neg_mask = torch.ne(label[mask], label[mask].unsqueeze(dim=1))
                    extra_neg_mask.fill_diagonal_(False)

                    loss3 = self.contrast_model(globalOne, now, extra_pos_mask=extra_pos_mask, extra_neg_mask=extra_neg_mask)
                    loss3 = self.contrast_model(now2, now, extra_pos_mask=extra_pos_mask, extra_neg_mask=extra_neg_mask)
                    record['contrast'] = loss3.item()

                loss = loss1 + loss_ff * self.config["ff_weight"]
                record.update(ce=loss1.item(), ff=loss_ff.item(), total=loss.item())
                self.epoch_losses.append(record)
            else:
                loss = loss1
            return loss
        return custom_loss_fn

    def execute(self):
        # client.py:123-135: BOTH the local model and the frozen global copy get the weights.
        with torch.no_grad():
            for (local_param, global_param) in zip(self.task.model.parameters(), self.message_pool["server"]["weight"]):
                local_param.data.copy_(global_param)
            for (local_param, global_param) in zip(self.global_model.parameters(), self.message_pool["server"]["weight"]):
                local_param.data.copy_(global_param)

        self.used_draws, self.epoch_losses = [], []
        self.task.loss_fn = self.get_custom_loss_fn()
        self.task.train()

    # client.py:139-146 send_message: FedAvg's, verbatim (inherited).


# xkLi-Allen/OpenFGL@5483768 openfgl/flcore/fgssl/server.py:4-56 (FedAvg)
# FedAvg's server, verbatim (upstream repeats it).
FGSSLServer = FedAvgServer


class FgsslOpenFgl(OpenFglFederation):
    """FgsslOpenFgl(subgraphs, num_classes, global_state=None, weak_pe=0.3, weak_pf=0.3,
    strong_pe=0.8, strong_pf=0.5, ff_weight=0.1, compute_unused=True, **common), common as
    OpenFglFederation.

    train_round(sampled_clients=None, augmentations=None): augmentations {client id: list of
    num_epochs dicts with 'weak_edge_keep' bool [E], 'weak_feat_drop' bool [F],
    'strong_edge_keep' bool [E], 'strong_feat_drop' bool [F]} (E = stored directed edges of the
    client's edge_index, F = features); a client without an entry draws from torch's global RNG
    as upstream. Returns round, sampled_clients, server_message {'weight'}, uploads {cid:
    {'num_samples', 'weight'}}, local, global, and
      augmentations: {cid: the per-epoch draws used (same layout)}
      losses: {cid: per epoch {'ce', 'ff', 'total'} + (compute_unused) the discarded
        'struct_kd', 'simi_kd', 'cc', 'simi_kd_2', 'contrast'}."""
    client_cls = FGSSLClient
    server_cls = FGSSLServer

    def __init__(self, subgraphs, num_classes, global_state=None, weak_pe=DEFAULT_CONFIG["weak_pe"],
                 weak_pf=DEFAULT_CONFIG["weak_pf"], strong_pe=DEFAULT_CONFIG["strong_pe"],
                 strong_pf=DEFAULT_CONFIG["strong_pf"], ff_weight=DEFAULT_CONFIG["ff_weight"], compute_unused=True,
                 **common):
        self.config = dict(DEFAULT_CONFIG, weak_pe=weak_pe, weak_pf=weak_pf, strong_pe=strong_pe, strong_pf=strong_pf,
                           ff_weight=ff_weight)
        self.compute_unused = compute_unused
        super().__init__(subgraphs, num_classes, global_state, **common)

    def make_client(self, client_id, data, input_dim):
        client = super().make_client(client_id, data, input_dim)
        client.config = self.config
        client.compute_unused = self.compute_unused
        client.setup_augmentors()
        return client

    def train_round(self, sampled_clients=None, augmentations=None):
        for client_id, client in enumerate(self.clients):
            draws = None if augmentations is None else augmentations.get(client_id)
            if draws is not None and len(draws) != self.args.num_epochs:
                raise ValueError(f'client {client_id}: {len(draws)} epochs of draws, expected {self.args.num_epochs}')
            client.pending_draws = None if draws is None else [dict(d) for d in draws]
        out = super().train_round(sampled_clients)
        for client in self.clients:
            client.pending_draws = None
        return out

    def extra_state(self):
        sampled = self.message_pool["sampled_clients"]
        return {'augmentations': {c: [{k: v.clone() for k, v in d.items()} for d in self.clients[c].used_draws]
                                  for c in sampled},
                'losses': {c: [dict(r) for r in self.clients[c].epoch_losses] for c in sampled}}
