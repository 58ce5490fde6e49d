"""Plain-PyTorch FedGKC written from the paper, used as a test oracle.

FedGKC has no public code. This module follows only:
  * the paper: Lai et al., "Toward Model-centric Heterogeneous Federated Graph
    Learning: A Knowledge-driven Approach", arXiv 2501.12624 v1
    (shared/papers/000_8327de70090f2d45.txt), Sec. III-C (SMKD, Eqs. 1-5),
    Sec. III-D (KAMA, Eqs. 6-12), Algorithm 1, Sec. IV-A4 and IV-C;
  * the engineering note shared/papers/seeds_fedgkc_fedtad.md, Part A
    (A.1.2 protocol, A.1.3 SMKD procedure, A.1.4 KAMA, A.2 hyperparameters,
    A.5 Table V / Fig. 3(a) ablation semantics) and Sec. 0.4 / 0.5 (backbone,
    evaluation).
Every function names the equation or note section it implements. Where the note
marks a choice [A] / PROPOSAL, its default is implemented and the choice is
named in a comment ("CHOICE"). Choices neither source makes are marked
"CHOICE (oracle)". README.md lists them all.

Only one architecture family for now: every private model and the copilot are
2-layer GCNs. PyG primitives come from methods/reference/pyg.py.

Randomness is injected: initial weights (private_states, copilot_state) and the
augmented views (edge / feature keep masks, `views`) are inputs. The only
randomness drawn inside is dropout (torch's global RNG) when dropout > 0; for
bit-exact comparisons use dropout=0. draw_views() draws views with a torch
generator for standalone use.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Adam

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.pyg import GCNConv, scatter  # noqa: E402


# ---------------------------------------------------------------------------
# Backbone: note Sec. 0.4 (2-layer GCN) and A.1.3 (embedding definition).
# ---------------------------------------------------------------------------
class GCN(nn.Module):
    """GCNConv(F->hid) -> ReLU -> [embedding] -> Dropout -> GCNConv(hid->C).

    CHOICE (note A.1.3 [A]): the embedding e ("output of the feature
    extractor", Eqs. 1 and 4) is the hidden layer after ReLU and BEFORE
    dropout. forward returns (embedding [n, hid], logits [n, C]).
    state_dict: conv1.bias [hid], conv1.lin.weight [hid, F], conv2.bias [C],
    conv2.lin.weight [C, hid]. Dropout is standard (off in eval()) per note
    0.4 PROPOSAL (not FedTAD's always-on bug).
    """

    def __init__(self, feat_dim, hid_dim, out_dim, dropout):
        super().__init__()
        self.conv1 = GCNConv(feat_dim, hid_dim)
        self.conv2 = GCNConv(hid_dim, out_dim)
        self.dropout = dropout

    def forward(self, x, edge_index):
        embedding = F.relu(self.conv1(x, edge_index))
        h = F.dropout(embedding, p=self.dropout, training=self.training)
        logits = self.conv2(h, edge_index)
        return embedding, logits


# ---------------------------------------------------------------------------
# Loss primitives
# ---------------------------------------------------------------------------
def kl_div(teacher_logits, student_logits, temperature=1.0):
    """KL( softmax(teacher/T) || softmax(student/T) ), summed over the last
    dimension and averaged over rows ('batchmean').

    CHOICE (note A.1.3 [A]): batchmean reduction; T = 1 by default, applied as
    logits / T with NO T^2 factor (the paper has no temperature at all). The
    first argument is the teacher (the distribution the KL is taken FROM,
    paper's KL(p_teacher || p_student)).
    """
    log_t = F.log_softmax(teacher_logits / temperature, dim=-1)
    log_s = F.log_softmax(student_logits / temperature, dim=-1)
    return (log_t.exp() * (log_t - log_s)).sum(dim=-1).mean()


def closed_neighbourhood(edge_index, num_nodes):
    """Distinct (j, i) pairs with j in N(i) U {i}, as (src=j, dst=i) index
    tensors. N(i) = {j != i : some column of edge_index is (j, i)}, i.e. the
    sources of the messages node i receives (PyG flow source_to_target).

    CHOICE (oracle): N(i) is a SET: duplicate columns count once, existing
    self-loop columns are ignored and i itself is added exactly once. For the
    symmetric graphs used here (both directions stored) in- and out-neighbours
    coincide.
    """
    src, dst = edge_index[0], edge_index[1]
    keep = src != dst
    key = torch.unique(src[keep] * num_nodes + dst[keep])  # sorted, deduplicated
    loop = torch.arange(num_nodes, dtype=torch.long, device=edge_index.device)
    src = torch.cat([key // num_nodes, loop])
    dst = torch.cat([key % num_nodes, loop])
    return src, dst


def neigh_kd_loss(z_teacher, h_student, edge_index, temperature=1.0):
    """Paper Eq. 1: L_neigh = (1/N) sum_i sum_{j in N(i) U {i}} KL(sigma(z_j) || sigma(h_i)).

    z_teacher / h_student: [N, d] embeddings of the teacher / student model
    (the softmax is over the d embedding dimensions). N = number of nodes of
    the subgraph (note A.1.3: the normaliser is the node count, not a degree).
    Computed in the closed form of note A.1.3:
      (1/N) [ sum_j (|{i : j in N(i) U {i}}|) * sum_d Q_jd log Q_jd
              - sum_i sum_d (A_hat Q)_id log S_id ],  Q = sigma(z), S = sigma(h).
    Nothing is detached here; the training schedule passes a no_grad teacher.
    """
    n = h_student.size(0)
    src, dst = closed_neighbourhood(edge_index, n)
    log_q = F.log_softmax(z_teacher / temperature, dim=-1)
    log_s = F.log_softmax(h_student / temperature, dim=-1)
    q = log_q.exp()
    neg_entropy = (q * log_q).sum(dim=-1)                        # [N]
    times_teacher = scatter(torch.ones_like(src, dtype=q.dtype), src, 0, n, 'sum')  # |{i: j in N~(i)}|
    aq = scatter(q[src], dst, 0, n, 'sum')                        # (A_hat Q)_i = sum_{j in N~(i)} Q_j
    return ((times_teacher * neg_entropy).sum() - (aq * log_s).sum()) / n


def ce_loss(logits, y, train_mask):
    """alpha-term of Eqs. 2/3: -y log softmax(p), mean over the labelled
    TRAINING nodes (note A.1.3)."""
    return F.cross_entropy(logits[train_mask], y[train_mask])


def mutual_loss(student, teacher, y, train_mask, edge_index, w_ce, w_neigh, w_kl, temperature=1.0):
    """The common form of Eqs. 2 and 3 for a student being optimised and a
    (frozen) teacher, both (embedding, logits) pairs on the original graph:
      w_ce * CE(y, p_s) + w_neigh * L_neigh(z = e_t -> h = e_s) + w_kl * KL(sigma(p_t) || sigma(p_s)).
    The logit KL is over ALL nodes (note A.1.3 [A]). A term whose weight is 0
    is not computed (returned as None). Returns (total, {'ce', 'neigh', 'kl'}).
    """
    e_s, p_s = student
    e_t, p_t = teacher if teacher is not None else (None, None)
    parts = {'ce': ce_loss(p_s, y, train_mask), 'neigh': None, 'kl': None}
    total = w_ce * parts['ce']
    if w_neigh != 0:
        parts['neigh'] = neigh_kd_loss(e_t, e_s, edge_index, temperature)
        total = total + w_neigh * parts['neigh']
    if w_kl != 0:
        parts['kl'] = kl_div(p_t, p_s, temperature)
        total = total + w_kl * parts['kl']
    return total, parts


def copilot_loss(copilot_out, local_out, y, train_mask, edge_index, alpha=0.6, beta=0.2, temperature=1.0):
    """Paper Eq. 2: L_cop-mutu = a CE(y, p_c) + b L_neigh(e_l -> e_c) + (1-a-b) KL(p_l || p_c).
    The copilot is the student, the local (private) model the teacher."""
    return mutual_loss(copilot_out, local_out, y, train_mask, edge_index,
                       alpha, beta, 1.0 - alpha - beta, temperature)


def local_mutual_loss(local_out, copilot_out, y, train_mask, edge_index, alpha=0.6, beta=0.2, temperature=1.0):
    """Paper Eq. 3: L_local-mutu = a CE(y, p_l) + b L_neigh(e_c -> e_l) + (1-a-b) KL(p_c || p_l).
    The local (private) model is the student, the copilot the teacher."""
    return mutual_loss(local_out, copilot_out, y, train_mask, edge_index,
                       alpha, beta, 1.0 - alpha - beta, temperature)


def self_distill_loss(weak_out, strong_out, temperature=1.0):
    """Paper Eq. 4: MSE(e_l^weak, e_l^strong) + KL(sigma(p_l^weak) || sigma(p_l^strong)).
    The weak view is the teacher (first KL argument). CHOICE (note A.1.3 [A]):
    MSE is the mean over nodes x dimensions, KL batchmean over ALL nodes.
    Returns (total, {'sd_mse', 'sd_kl'})."""
    (e_w, p_w), (e_s, p_s) = weak_out, strong_out
    mse = F.mse_loss(e_s, e_w)
    kl = kl_div(p_w, p_s, temperature)
    return mse + kl, {'sd_mse': mse, 'sd_kl': kl}


# ---------------------------------------------------------------------------
# Augmented views (paper Sec. III-C "edge removal and feature masking"; note A.1.3)
# ---------------------------------------------------------------------------
def apply_view(x, edge_index, view):
    """view = (edge_keep [E] bool over the columns of edge_index, feature_keep
    [F] bool over feature columns). Returns (x with the dropped feature columns
    zeroed for every node, edge_index[:, edge_keep]).

    CHOICE (note A.1.3 [A]): feature masking zeroes whole columns with one mask
    shared by all nodes (GRACE style). The mask is over COLUMNS of edge_index,
    so whether the two directions of an undirected edge are dropped together
    is decided by the caller (draw_views(symmetric=True) does, as the note
    asks). GCNConv then adds self-loops to the kept edges as usual.
    """
    edge_keep, feature_keep = view
    return x * feature_keep.to(x.dtype).unsqueeze(0), edge_index[:, edge_keep]


def draw_edge_keep(edge_index, num_nodes, drop_prob, generator=None, symmetric=True):
    """Keep mask over the columns of edge_index: each edge dropped
    independently with probability drop_prob (kept iff U >= drop_prob). With
    symmetric=True one draw per unordered pair {u, v} (in increasing order of
    min*n+max), shared by all its columns, so (u, v) and (v, u) go together."""
    if symmetric:
        lo = torch.minimum(edge_index[0], edge_index[1])
        hi = torch.maximum(edge_index[0], edge_index[1])
        pairs, inverse = torch.unique(lo * num_nodes + hi, return_inverse=True)
        keep_pair = torch.rand(pairs.numel(), generator=generator) >= drop_prob
        return keep_pair[inverse]
    return torch.rand(edge_index.size(1), generator=generator) >= drop_prob


def draw_feature_keep(feat_dim, mask_prob, generator=None):
    """Keep mask over feature columns: each column zeroed with probability mask_prob."""
    return torch.rand(feat_dim, generator=generator) >= mask_prob


def draw_views(subgraphs, local_epochs, weak=(0.1, 0.1), strong=(0.5, 0.5), generator=None, symmetric=True):
    """views[k][epoch] = {'weak': (edge_keep, feature_keep), 'strong': (...)}
    for standalone use. CHOICE (note A.1.3 / A.2 [A]): weak = (edge drop 0.1,
    feature mask 0.1), strong = (0.5, 0.5), fresh masks every epoch. Draw
    order: client, epoch, weak then strong, edge mask then feature mask."""
    views = []
    for g in subgraphs:
        per_client = []
        for _ in range(local_epochs):
            v = {}
            for name, (p_edge, p_feat) in (('weak', weak), ('strong', strong)):
                v[name] = (draw_edge_keep(g.edge_index, g.x.size(0), p_edge, generator, symmetric),
                           draw_feature_keep(g.x.size(1), p_feat, generator))
            per_client.append(v)
        views.append(per_client)
    return views


# ---------------------------------------------------------------------------
# KAMA: paper Eqs. 6-12, note A.1.4
# ---------------------------------------------------------------------------
def knowledge_scores(probs, edge_index, lam=0.1, knowledge_strength=True, class_clarity=True,
                     smoothing_clarity=True, clarity_mode='literal'):
    """Per-node knowledge of a client's copilot, probs = softmax(logits) [N, M].
      Eq. 7: Q_stren_i = max_c p_ic
      Eq. 8: Q_clar_i  = (1/(M-1)) (max p_i - sum_{c != argmax} p_ic)
                         - lam (1/|N(i)|) sum_{j in N(i)} cos(p_i, p_j)
    clarity_mode='literal' (default, note A.1.4) or 'margin' ([A-alt]:
    max p_i - (sum_{c != argmax} p_ic) / (M-1)). The sum over the non-max
    classes is computed as sum_c p_ic - max_c p_ic (one maximal entry removed
    on ties). CHOICE (note A.1.4 [A]): an isolated node's neighbour term is 0.
    N(i) is the set of note closed_neighbourhood() minus i itself.
    Ablation switches (note A.5, Fig. 3(a)): knowledge_strength=False drops
    Eq. 7, class_clarity=False the first term of Eq. 8, smoothing_clarity=False
    the second. Returns (q_stren [N], q_clar [N]) with dropped terms as zeros.
    """
    n, m = probs.shape
    pmax = probs.max(dim=1).values
    others = probs.sum(dim=1) - pmax
    q_stren = pmax if knowledge_strength else torch.zeros_like(pmax)
    if not class_clarity:
        class_term = torch.zeros_like(pmax)
    elif clarity_mode == 'literal':
        class_term = (pmax - others) / (m - 1)
    elif clarity_mode == 'margin':
        class_term = pmax - others / (m - 1)
    else:
        raise ValueError(clarity_mode)
    if smoothing_clarity:
        src, dst = closed_neighbourhood(edge_index, n)
        not_self = src != dst
        src, dst = src[not_self], dst[not_self]
        norm = probs.norm(dim=1)
        cos = (probs[src] * probs[dst]).sum(dim=1) / (norm[src] * norm[dst])
        smooth = scatter(cos, dst, 0, n, 'mean')  # empty neighbourhood -> 0
        q_clar = class_term - lam * smooth
    else:
        q_clar = class_term
    return q_stren, q_clar


def knowledge_level(probs, edge_index, min_knowledge=1e-8, **kwargs):
    """Paper Eq. 9: P_k = (1/N_k) sum_i (Q_stren_i + Q_clar_i) over ALL N_k
    nodes (labelled or not). CHOICE (note A.1.4 PROPOSAL): clamped to
    >= min_knowledge (1e-8). Returns (P_k clamped, P_k raw) as Python floats."""
    q_stren, q_clar = knowledge_scores(probs, edge_index, **kwargs)
    raw = float((q_stren + q_clar).mean())
    return max(raw, min_knowledge), raw


def aggregation_weights(volumes, knowledge, kama=True):
    """Paper Eq. 6 w_vol = N_k / sum N, Eq. 10 w_know = P_k / sum P, Eq. 11
    w = (w_vol + w_know) / 2. kama=False (Table V "SMKD alone": aggregation by
    sample size) gives w = w_vol. Python floats (double). Returns (w_vol, w_know, w)."""
    total_n = float(sum(volumes))
    total_p = float(sum(knowledge))
    w_vol = [n / total_n for n in volumes]
    w_know = [p / total_p for p in knowledge]
    w = [0.5 * (a + b) for a, b in zip(w_vol, w_know)] if kama else list(w_vol)
    return w_vol, w_know, w


def aggregate(states, weights):
    """Paper Eq. 12: theta_g = sum_k w_k theta_c,k for every tensor of the
    copilot state_dict. CHOICE (oracle): accumulated in float64 in client
    order, then cast back to each tensor's dtype."""
    out = {}
    for key in states[0]:
        acc = torch.zeros(states[0][key].shape, dtype=torch.float64)
        for w, s in zip(weights, states):
            acc += w * s[key].double()
        out[key] = acc.to(states[0][key].dtype)
    return out


def _clone_state(module_or_state):
    state = module_or_state.state_dict() if isinstance(module_or_state, nn.Module) else module_or_state
    return {k: v.detach().clone() for k, v in state.items()}


def _floats(parts):
    return {k: (None if v is None else float(v)) for k, v in parts.items()}


# ---------------------------------------------------------------------------
# The federated loop: paper Algorithm 1, note A.1.2 / A.1.3
# ---------------------------------------------------------------------------
class FedGkcReference:
    """FedGKC with 2-layer-GCN private models and a 2-layer-GCN copilot, one
    communication round per train_round().

    subgraphs: objects with x [n, F] float32, edge_index [2, E] int64 (both
      directions present), y [n] int64, train_idx / val_idx / test_idx bool [n].
    private_states[k]: GCN state_dict of client k's private (local) model;
      copilot_state: the initial global copilot (note A.1.2 [A]: every client's
      copilot starts identical). None keeps PyTorch's init (global RNG).
    Ablation switches (note A.5 / Table V / Fig. 3(a), C.6):
      smkd=False        "KAMA alone": traditional dual model, i.e.
                        a CE + (1-a) KL(teacher || student) in both Eqs. 2/3,
                        no L_neigh, no self-distillation (note A.5 [A]).
      kama=False        "SMKD alone": w_k = N_k / sum N (Eq. 6 only).
      self_distillation=False   drop Eq. 4 from Eq. 5.
      mutual_distillation=False drop the L_neigh and logit-KL terms from BOTH
                        Eqs. 2 and 3 (copilot and private model learn from
                        labels only; the copilot is still federated).
                        CHOICE (oracle): the CE weight stays alpha (no
                        renormalisation); the note does not define this variant.
      knowledge_strength / class_clarity / smoothing_clarity: Eqs. 7 / 8a / 8b.
    Other choices: see the comments at each use and README.md.
    """

    def __init__(self, subgraphs, num_classes, private_states, copilot_state, hid_dim=64, dropout=0.5,
                 lr=1e-2, weight_decay=5e-4, local_epochs=3, alpha=0.6, beta=0.2, lam=0.1, temperature=1.0,
                 smkd=True, kama=True, self_distillation=True, mutual_distillation=True,
                 knowledge_strength=True, class_clarity=True, smoothing_clarity=True,
                 clarity_mode='literal', min_knowledge=1e-8, data_volume='nodes',
                 schedule='interleaved', weak_view_detached=True, persistent_optimizers=True):
        assert len(private_states) == len(subgraphs)
        assert data_volume in ('nodes', 'train_nodes') and schedule in ('interleaved', 'sequential')
        self.subgraphs = subgraphs
        self.num_clients = len(subgraphs)
        self.num_classes = num_classes
        self.lr, self.weight_decay = lr, weight_decay
        self.local_epochs = local_epochs
        self.alpha, self.beta, self.lam, self.temperature = alpha, beta, lam, temperature
        self.kama = kama
        self.self_distillation = smkd and self_distillation
        self.knowledge_kwargs = dict(lam=lam, knowledge_strength=knowledge_strength, class_clarity=class_clarity,
                                     smoothing_clarity=smoothing_clarity, clarity_mode=clarity_mode)
        self.min_knowledge = min_knowledge
        self.data_volume = data_volume
        self.schedule = schedule
        self.weak_view_detached = weak_view_detached
        self.persistent_optimizers = persistent_optimizers

        # Loss weights of Eqs. 2/3 (paper: alpha = 0.6, beta = 0.2, KL weight 1 - alpha - beta).
        self.w_ce = alpha
        if smkd:
            self.w_neigh, self.w_kl = beta, 1.0 - alpha - beta
        else:  # note A.5 [A]: "traditional dual-model" = plain mutual KD, weights a / (1 - a)
            self.w_neigh, self.w_kl = 0.0, 1.0 - alpha
        if not mutual_distillation:
            self.w_neigh, self.w_kl = 0.0, 0.0
        self.mutual = self.w_neigh != 0 or self.w_kl != 0

        # Note A.1.3: every model has hidden/embedding dim hid_dim (64), so the
        # L_neigh softmaxes of the two models range over the same dimensions.
        feat_dim = subgraphs[0].x.size(1)
        self.privates = [GCN(feat_dim, hid_dim, num_classes, dropout) for _ in range(self.num_clients)]
        for model, state in zip(self.privates, private_states):
            model.load_state_dict(state)
        self.copilots = [GCN(feat_dim, hid_dim, num_classes, dropout) for _ in range(self.num_clients)]
        if copilot_state is None:
            copilot_state = self.copilots[0].state_dict()
        self.global_state = _clone_state(copilot_state)
        for model in self.copilots:
            model.load_state_dict(self.global_state)
        # CHOICE (note A.2 [A]): one Adam per model per client (lr 1e-2, wd
        # 5e-4, PyTorch coupled L2), created once; its moments persist across
        # rounds. load_state_dict copies in place, so the broadcast below keeps
        # the copilot optimiser's parameter references (and its moments).
        # persistent_optimizers=False recreates both optimisers every round.
        self._make_optimizers()

    def _make_optimizers(self):
        self.private_opts = [Adam(m.parameters(), lr=self.lr, weight_decay=self.weight_decay) for m in self.privates]
        self.copilot_opts = [Adam(m.parameters(), lr=self.lr, weight_decay=self.weight_decay) for m in self.copilots]

    # ---- client side: SMKD (paper Sec. III-C; note A.1.3 PROPOSAL procedure) ----
    def _copilot_step(self, k):
        g, copilot, private = self.subgraphs[k], self.copilots[k], self.privates[k]
        teacher = None
        if self.mutual:
            # CHOICE (note A.1.3 [A]): the teacher (private model) in eval mode, no grad.
            private.eval()
            with torch.no_grad():
                teacher = private(g.x, g.edge_index)
        copilot.train()
        self.copilot_opts[k].zero_grad()
        student = copilot(g.x, g.edge_index)
        loss, parts = mutual_loss(student, teacher, g.y, g.train_idx, g.edge_index,  # Eq. 2
                                  self.w_ce, self.w_neigh, self.w_kl, self.temperature)
        loss.backward()
        self.copilot_opts[k].step()
        parts['total'] = loss
        return _floats(parts)

    def _private_step(self, k, view):
        g, copilot, private = self.subgraphs[k], self.copilots[k], self.privates[k]
        teacher = None
        if self.mutual:
            copilot.eval()  # teacher in eval mode, no grad (note A.1.3 [A])
            with torch.no_grad():
                teacher = copilot(g.x, g.edge_index)
        private.train()
        self.private_opts[k].zero_grad()
        student = private(g.x, g.edge_index)
        loss, parts = mutual_loss(student, teacher, g.y, g.train_idx, g.edge_index,  # Eq. 3
                                  self.w_ce, self.w_neigh, self.w_kl, self.temperature)
        parts.update({'sd_mse': None, 'sd_kl': None})
        if self.self_distillation:
            # Eq. 4 on the two augmented views of the ORIGINAL graph, forwarded
            # weak first, then strong, by the private model in train mode.
            # CHOICE (note A.1.3 [A]): the weak view is the teacher, stop-gradient.
            x_w, ei_w = apply_view(g.x, g.edge_index, view['weak'])
            x_s, ei_s = apply_view(g.x, g.edge_index, view['strong'])
            if self.weak_view_detached:
                with torch.no_grad():
                    weak = private(x_w, ei_w)
            else:
                weak = private(x_w, ei_w)
            strong = private(x_s, ei_s)
            sd, sd_parts = self_distill_loss(weak, strong, self.temperature)
            loss = loss + sd  # Eq. 5
            parts.update(sd_parts)
        loss.backward()
        self.private_opts[k].step()
        parts['total'] = loss
        return _floats(parts)

    def _train_client(self, k, client_views):
        # Algorithm 1 line 15 / note A.1.2: the copilot starts the round from the global copilot.
        self.copilots[k].load_state_dict(self.global_state)
        losses = [{} for _ in range(self.local_epochs)]
        view = (lambda e: client_views[e]) if self.self_distillation else (lambda e: None)
        if self.schedule == 'interleaved':
            # CHOICE (note A.1.3 PROPOSAL): per epoch, copilot step (Eq. 2), then
            # private step (Eq. 5) whose teacher is the copilot just updated.
            for e in range(self.local_epochs):
                losses[e]['copilot'] = self._copilot_step(k)
                losses[e]['local'] = self._private_step(k, view(e))
        else:
            # [A-alt] Algorithm 1 lines 7-8 read literally: E copilot epochs, then E private epochs.
            for e in range(self.local_epochs):
                losses[e]['copilot'] = self._copilot_step(k)
            for e in range(self.local_epochs):
                losses[e]['local'] = self._private_step(k, view(e))
        g = self.subgraphs[k]
        # Eq. 6 data volume. CHOICE (note A.1.4 PROPOSAL): number of subgraph nodes.
        volume = int(g.x.size(0)) if self.data_volume == 'nodes' else int(g.train_idx.sum())
        # Eqs. 7-9 with the TRAINED copilot in eval mode on the original graph (note A.1.4 [A]).
        self.copilots[k].eval()
        with torch.no_grad():
            probs = F.softmax(self.copilots[k](g.x, g.edge_index)[1], dim=-1)
        p_k, p_raw = knowledge_level(probs, g.edge_index, self.min_knowledge, **self.knowledge_kwargs)
        return losses, volume, p_k, p_raw

    def train_round(self, views=None):
        """One round of Algorithm 1. views[k][epoch] = {'weak': (edge_keep [E_k]
        bool, feature_keep [F] bool), 'strong': (...)}; may be None when
        self-distillation is off. Returns copies:
          copilots:   per client, the copilot state_dict after local training (uploaded)
          privates:   per client, the private model state_dict
          N:          per client, data volume N_k (int, Eq. 6)
          P:          per client, knowledge level P_k (Eq. 9, clamped); P_raw unclamped
          w_vol, w_know, w: per client aggregation weights (Eqs. 6, 10, 11)
          global_copilot: the new global copilot state_dict (Eq. 12)
          losses:     per client, per epoch {'copilot': {total, ce, neigh, kl},
                      'local': {total, ce, neigh, kl, sd_mse, sd_kl}} (None = term off)
        """
        if self.self_distillation:
            assert views is not None and len(views) == self.num_clients
        if not self.persistent_optimizers:
            self._make_optimizers()
        out = {'copilots': [], 'privates': [], 'N': [], 'P': [], 'P_raw': [], 'losses': []}
        # Clients are independent ("in parallel"); run in client order.
        for k in range(self.num_clients):
            losses, volume, p_k, p_raw = self._train_client(k, None if views is None else views[k])
            out['copilots'].append(_clone_state(self.copilots[k]))
            out['privates'].append(_clone_state(self.privates[k]))
            out['N'].append(volume)
            out['P'].append(p_k)
            out['P_raw'].append(p_raw)
            out['losses'].append(losses)
        # Server: Eqs. 6, 10, 11, 12; the broadcast happens at the start of the next round.
        out['w_vol'], out['w_know'], out['w'] = aggregation_weights(out['N'], out['P'], self.kama)
        self.global_state = aggregate(out['copilots'], out['w'])
        out['global_copilot'] = _clone_state(self.global_state)
        return out

    # ---- evaluation: note Sec. 0.5 / A.3 ----
    def evaluate(self, which='private'):
        """Accuracy (%) of each client's private model (which='private', the
        paper's metric) or of the current global copilot (which='global_copilot')
        on its own subgraph, eval mode, original graph. 'val' / 'test' are
        node-count-weighted means over clients, sum_k n_k / sum_j n_j * acc_k
        (note 0.5); '*_unweighted' the plain means. CHOICE (oracle): a client
        with an empty mask scores 0 for it and keeps its weight."""
        clients = []
        for k, g in enumerate(self.subgraphs):
            if which == 'private':
                model = self.privates[k]
            elif which == 'global_copilot':
                model = GCN(g.x.size(1), self.privates[k].conv1.lin.weight.size(0), self.num_classes, 0.0)
                model.load_state_dict(self.global_state)
            else:
                raise ValueError(which)
            model.eval()
            with torch.no_grad():
                pred = model(g.x, g.edge_index)[1].argmax(dim=1)
            r = {}
            for split, mask in (('train', g.train_idx), ('val', g.val_idx), ('test', g.test_idx)):
                count = int(mask.sum())
                r['acc_' + split] = 100.0 * int((pred[mask] == g.y[mask]).sum()) / count if count else 0.0
            clients.append(r)
        n = [g.x.size(0) for g in self.subgraphs]
        total = float(sum(n))
        out = {'clients': clients}
        for split in ('val', 'test'):
            out[split] = sum(n[k] / total * clients[k]['acc_' + split] for k in range(self.num_clients))
            out[split + '_unweighted'] = sum(c['acc_' + split] for c in clients) / self.num_clients
        return out
