"""Plain-PyTorch nFedGNN written from the paper, used as a test oracle.

nFedGNN has no public code. This module follows only:
  * the paper: Gao, Guo, Gong, "One Node Per User: Node-Level Federated
    Learning for Graph Neural Networks" (shared/papers/002_cfd7bc2c9938d48e.txt):
    Sec. 2.1-2.3 (Eqs. 1-3), Algorithm 1 (Sec. 3.1), Sec. 3.2 (split GCN,
    Eqs. 4-5), Sec. 3.4 (graph-Laplacian regulariser, Eqs. 6-7), Sec. 4.1
    (hyper-parameters), Sec. 4.3 / Table 1 (communication), App. B (Eq. 8) and
    App. D (split GAT, Eq. 9);
  * the engineering note shared/papers/seeds_fedmpa_nodelevel.md, Part B
    (B.1 setting, B.2 splitting, B.3 losses, B.4 algorithm, B.5 CNFGNN,
    B.6 hyper-parameters, B.7 communication, B.10 ambiguities).
Every block names the equation or note section it implements. Where the note
marks a choice [P] (its "proposed" default) it is implemented and named in a
comment "CHOICE (note B.x [P])"; choices neither source makes are marked
"CHOICE (oracle)". README.md lists them all.

One node = one user. User i privately holds x_i (row i of x) and its own
user-side model theta_i^u; the server holds the topology A, the labels of the
training nodes V_0 and the server-side model theta^s. Per round a user uploads
its latent vector xbar_i and downloads dL/dxbar_i (split learning, Alg. 1).
There is no noise / DP (note B.1: "No DP or noise is used") and no client
sampling (all users every round, paper Sec. 4.1).

Randomness is injected: the initial states (server and every user:
`initial_states`, drawn by draw_initial_states()) and the dropout keep-masks of
a round (`draws`, drawn by NFedGnnReference.draw_round()). Nothing else is
random. Tests use dropout=0.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Adam

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.pyg import GCNConv, gcn_norm, scatter, softmax, to_undirected  # noqa: E402

BACKBONES = ('gcn', 'gat')


# ---------------------------------------------------------------------------
# The server's graph: paper Sec. 2.1 (N_i includes i) and Sec. 3.2 (A~ = A + I)
# ---------------------------------------------------------------------------
def server_edges(edge_index, num_nodes):
    """(src, dst) of every message the server aggregates: the coalesced,
    symmetrised A without self-loops (sorted by (src, dst), PyG to_undirected
    order), then one self-loop (i, i) per node in node order. The closed
    neighbourhood N_i = {src_e : dst_e = i} includes i (paper Sec. 2.1).

    CHOICE (oracle): the input is made undirected, unweighted and simple
    (duplicates and given self-loops dropped) before the self-loops are added:
    the paper's A is a symmetric 0/1 adjacency (Sec. 2.1) and Â uses A + I.
    """
    und = to_undirected(edge_index, num_nodes)
    und = und[:, und[0] != und[1]]
    loop = torch.arange(num_nodes, dtype=torch.long)
    return torch.cat([und[0], loop]), torch.cat([und[1], loop]), und


def apply_dropout(h, keep, p):
    """torch.nn.functional.dropout with an injected keep mask: h * (keep / (1 - p))
    (torch scales the Bernoulli noise first, then multiplies). keep None or
    p == 0: identity (eval mode / no dropout)."""
    if keep is None or p == 0:
        return h
    return h * (keep.to(h.dtype) / (1.0 - p))


# ---------------------------------------------------------------------------
# Losses: Eq. 3 (CE) and Eq. 6 (graph-Laplacian regulariser); note B.3
# ---------------------------------------------------------------------------
def ce_loss(logits, y, train_mask):
    """Eq. 3: CE over the labelled nodes V_0. CHOICE (note B.3 / B.10 #4 [P]):
    the MEAN over V_0 (F.cross_entropy default), not the paper's sum."""
    return F.cross_entropy(logits[train_mask], y[train_mask])


def laplacian_reg(xbar, src, dst):
    """Eq. 6: L_reg = (1 / sum_i |N_i|) sum_i sum_{j in N_i} ||xbar_i - xbar_j||^2,
    read literally over the closed neighbourhoods (pairs (i = dst, j = src),
    self-loops included: they contribute 0 to the sum and 1 each to the
    normaliser). CHOICE (note B.3 / B.10 #5 [P]): S = sum_i |N_i| = 2|E| + n.
    Equivalently (2/S) tr(Xbar^T L Xbar), L = D - A; dL_reg/dxbar_i =
    (4/S) sum_{j in N(i)} (xbar_i - xbar_j)."""
    diff = xbar[dst] - xbar[src]
    return (diff * diff).sum() / src.numel()


def gat_laplacian_reg(xbar, src, dst, heads, scheme='sum'):
    """App. D: the regulariser of the multi-head split GAT. xbar [n, heads*hid]
    (head-major). 'sum' (CHOICE, note B.3 / B.10 #12 [P]; the paper's "first
    scheme": every head's x'_{i,l} regularised independently) = sum over heads
    of Eq. 6 on x'_{.,l} (= Eq. 6 on the concatenation). 'mean' (CHOICE
    (oracle) alternative) = the mean over heads. 'scheme2' = Eq. 6 on the head
    average (1/L) sum_l x'_{i,l} (the paper's second scheme, not used there)."""
    n = xbar.size(0)
    per_head = xbar.view(n, heads, -1)
    if scheme == 'scheme2':
        return laplacian_reg(per_head.mean(dim=1), src, dst)
    regs = torch.stack([laplacian_reg(per_head[:, l, :], src, dst) for l in range(heads)])
    if scheme == 'sum':
        return regs.sum()
    if scheme == 'mean':
        return regs.mean()
    raise ValueError(scheme)


# ---------------------------------------------------------------------------
# User-side model f_u(theta_i^u, x_i): Sec. 3.2 (GCN), App. D (GAT); note B.2
# ---------------------------------------------------------------------------
class UserModel(nn.Module):
    """One user's model: xbar_i = dropout(x_i) @ weight (+ bias).

    GCN (Sec. 3.2, Eq. 5: xbar_i = x_i W_i^(0)): weight [F, hid]. CHOICE
    (note B.2.1 / B.10 #1 [P]): the user holds W^(0) (the paper's "W^(1)" is a
    typo). CHOICE (note B.2.1 [I] / B.10 #8): plus a bias b_i [hid] (Table 1's
    CNFGNN count has d*16 + 16 user parameters); gcn_bias='server'/'none'
    drops it here. No input dropout for GCN (note B.10 #6: DGL's GCN drops the
    hidden layer only).
    GAT (App. D: x'_{i,l} = W_i^l x_i, l = 1..L): weight [F, heads*hid], column
    block l*hid:(l+1)*hid is (W_i^l)^T, so the upload is head-major
    [x'_{i,1}, ..., x'_{i,L}] (DGL fc(...).view(-1, heads, hid)). CHOICE (note
    B.2.2 [P]): no bias (DGL GATConv's fc has none) and input dropout on x_i on
    the device (GATConv feat_drop).
    state_dict: 'weight' [F, latent], ('bias' [latent]).
    """

    def __init__(self, feat_dim, latent_dim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(feat_dim, latent_dim))
        self.bias = nn.Parameter(torch.zeros(latent_dim)) if bias else None

    def forward(self, x_i, keep=None, p=0.0):
        h = apply_dropout(x_i, keep, p).unsqueeze(0) @ self.weight
        if self.bias is not None:
            h = h + self.bias
        return h.squeeze(0)


# ---------------------------------------------------------------------------
# Server-side models f_s(theta^s, A, Xbar): Eq. 5 (GCN), Eq. 9 + GAT layer 2
# ---------------------------------------------------------------------------
class GcnServer(nn.Module):
    """Eq. 5 with the note's bias/dropout placement (note B.2.1):
      Z = Â · Dropout_p( ReLU( Â Xbar (+ bias1) ) ) · W^(1)^T + b^(1),
    Â = D~^-1/2 (A + I) D~^-1/2 (gcn_norm). CHOICE (note B.2.1 [AMB]): Eqs. 4-5
    print A~ but the normalised Â (defined just above them) is meant.
    Layer 2 is PyG GCNConv(hid, C): state_dict 'conv2.lin.weight' [C, hid],
    'conv2.bias' [C]; with gcn_bias='server' also 'bias1' [hid] (the layer-1
    bias after aggregation, as in a centralized GCN). Returns logits (the
    softmax is inside the CE)."""

    def __init__(self, hid_dim, num_classes, layer1_bias):
        super().__init__()
        self.bias1 = nn.Parameter(torch.zeros(hid_dim)) if layer1_bias else None
        self.conv2 = GCNConv(hid_dim, num_classes)

    def forward(self, xbar, graph, draws=None, p=0.0):
        src, dst, w, und = graph['src'], graph['dst'], graph['gcn_weight'], graph['und']
        h = scatter(w.view(-1, 1) * xbar[src], dst, 0, xbar.size(0), 'sum')  # Â Xbar (Agg_0, App. B)
        if self.bias1 is not None:
            h = h + self.bias1
        h = F.relu(h)
        h = apply_dropout(h, None if draws is None else draws.get('hidden'), p)  # note B.10 #6: hidden only
        return self.conv2(h, und)


def gat_attend(feat, attn_src, attn_dst, src, dst, num_nodes, negative_slope, keep=None, p=0.0):
    """One GAT aggregation (App. D, Eq. 9; DGL GATConv after its fc):
      e_ij^l = LeakyReLU( a_dst^l . x'_{i,l} + a_src^l . x'_{j,l} ),  j in N_i (self included)
      alpha_ij^l = softmax_j(e_ij^l), then attention dropout,
      out_i^l = sum_{j in N_i} alpha_ij^l x'_{j,l}.
    CHOICE (note B.2.2 [AMB]): Eq. 9 prints x'_{i,l} inside the sum; x'_{j,l}
    is meant. a = [a_dst ; a_src] is the paper's a in e_ij = a^T[W h_i || W h_j].
    feat [n, H, D]; attn_* [H, D]; keep [E, H]. Returns (out [n, H, D], alpha [E, H]
    before dropout)."""
    el = (feat * attn_src).sum(dim=-1)
    er = (feat * attn_dst).sum(dim=-1)
    e = F.leaky_relu(el[src] + er[dst], negative_slope)
    alpha = softmax(e, dst, num_nodes)
    a = apply_dropout(alpha, keep, p)
    out = scatter(a.unsqueeze(-1) * feat[src], dst, 0, num_nodes, 'sum')
    return out, alpha


class GatServer(nn.Module):
    """The server side of the split 2-layer GAT (App. D; note B.2.2).
    Layer 1 (after the users' fc): per head attention, + bias1, ELU, heads
    concatenated -> [n, heads*hid]. Layer 2 (CHOICE, note B.2.2 [P]: "same as
    the GAT model for Cora", 1 output head for every dataset): input dropout,
    fc2 (no bias), attention with 1 head, attention dropout, + bias2, mean over
    the single head, no activation -> logits [n, C].
    CHOICE (note B.6 [P]): LeakyReLU slope 0.2, ELU, no residual.
    state_dict: 'attn_src1' [H, hid], 'attn_dst1' [H, hid], 'bias1' [H*hid],
    'fc2.weight' [C, H*hid], 'attn_src2' [1, C], 'attn_dst2' [1, C], 'bias2' [C]
    (DGL names: gat1.attn_l / attn_r / bias, gat2.fc.weight / attn_l / attn_r / bias)."""

    def __init__(self, hid_dim, heads, num_classes, negative_slope):
        super().__init__()
        self.heads, self.hid_dim, self.negative_slope = heads, hid_dim, negative_slope
        self.attn_src1 = nn.Parameter(torch.zeros(heads, hid_dim))
        self.attn_dst1 = nn.Parameter(torch.zeros(heads, hid_dim))
        self.bias1 = nn.Parameter(torch.zeros(heads * hid_dim))
        self.fc2 = nn.Linear(heads * hid_dim, num_classes, bias=False)
        self.attn_src2 = nn.Parameter(torch.zeros(1, num_classes))
        self.attn_dst2 = nn.Parameter(torch.zeros(1, num_classes))
        self.bias2 = nn.Parameter(torch.zeros(num_classes))

    def forward(self, xbar, graph, draws=None, p=0.0, attn_p=0.0):
        d = draws or {}
        n, src, dst = xbar.size(0), graph['src'], graph['dst']
        out1, alpha1 = gat_attend(xbar.view(n, self.heads, self.hid_dim), self.attn_src1, self.attn_dst1,
                                  src, dst, n, self.negative_slope, d.get('attn1'), attn_p)
        h = F.elu(out1 + self.bias1.view(self.heads, self.hid_dim)).reshape(n, -1)  # Eq. 9, sigma = ELU
        h = apply_dropout(h, d.get('hidden'), p)  # layer-2 feat_drop
        feat2 = self.fc2(h).view(n, 1, -1)
        out2, alpha2 = gat_attend(feat2, self.attn_src2, self.attn_dst2, src, dst, n, self.negative_slope,
                                  d.get('attn2'), attn_p)
        self.last_attention = (alpha1.detach(), alpha2.detach())
        return (out2 + self.bias2.view(1, -1)).mean(dim=1)


# ---------------------------------------------------------------------------
# Initial states (injectable; helpers for standalone use)
# ---------------------------------------------------------------------------
def _xavier_uniform(shape, fan_in, fan_out, gain, generator, dtype):
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return (torch.rand(shape, generator=generator, dtype=dtype) * 2 - 1) * bound


def _xavier_normal(shape, fan_in, fan_out, gain, generator, dtype):
    return torch.randn(shape, generator=generator, dtype=dtype) * (gain * math.sqrt(2.0 / (fan_in + fan_out)))


def draw_initial_states(num_nodes, feat_dim, num_classes, backbone='gcn', hid_dim=16, heads=8, gcn_bias='user',
                        shared_user_init=False, generator=None, dtype=torch.float32):
    """{'server': state_dict, 'users': [state_dict] * num_nodes} for standalone use.
    CHOICE (note B.6 / B.10 #7 [P]): independent per-user init
    (shared_user_init=True: one draw copied to every user, note B.5's CNFGNN
    default). Draw order: users 0..n-1 (weight, then bias), then the server.
    GCN (DGL GraphConv reset_parameters): Glorot-uniform weights (gain 1),
    zero biases. GAT (note B.2.2 [P], DGL GATConv reset_parameters): Glorot-
    normal with gain sqrt(2) for fc (fans F, heads*hid) and the attention
    vectors (DGL [1, H, D] tensors: fan_in H*D, fan_out D), zero biases.
    The generator replaces torch.nn.init's global RNG."""
    assert backbone in BACKBONES
    latent = hid_dim if backbone == 'gcn' else heads * hid_dim

    def one_user():
        if backbone == 'gcn':
            st = {'weight': _xavier_uniform((feat_dim, latent), feat_dim, latent, 1.0, generator, dtype)}
            if gcn_bias == 'user':
                st['bias'] = torch.zeros(latent, dtype=dtype)
            return st
        return {'weight': _xavier_normal((feat_dim, latent), feat_dim, latent, math.sqrt(2.0), generator, dtype)}

    if shared_user_init:
        shared = one_user()
        users = [{k: v.clone() for k, v in shared.items()} for _ in range(num_nodes)]
    else:
        users = [one_user() for _ in range(num_nodes)]
    if backbone == 'gcn':
        server = {'conv2.lin.weight': _xavier_uniform((num_classes, hid_dim), hid_dim, num_classes, 1.0,
                                                      generator, dtype),
                  'conv2.bias': torch.zeros(num_classes, dtype=dtype)}
        if gcn_bias == 'server':
            server['bias1'] = torch.zeros(hid_dim, dtype=dtype)
    else:
        g = math.sqrt(2.0)
        server = {'attn_src1': _xavier_normal((heads, hid_dim), heads * hid_dim, hid_dim, g, generator, dtype),
                  'attn_dst1': _xavier_normal((heads, hid_dim), heads * hid_dim, hid_dim, g, generator, dtype),
                  'bias1': torch.zeros(heads * hid_dim, dtype=dtype),
                  'fc2.weight': _xavier_normal((num_classes, latent), latent, num_classes, g, generator, dtype),
                  'attn_src2': _xavier_normal((1, num_classes), num_classes, num_classes, g, generator, dtype),
                  'attn_dst2': _xavier_normal((1, num_classes), num_classes, num_classes, g, generator, dtype),
                  'bias2': torch.zeros(num_classes, dtype=dtype)}
    return {'server': server, 'users': users}


# ---------------------------------------------------------------------------
# Communication: paper Sec. 4.3 / Table 1; note B.7
# ---------------------------------------------------------------------------
def communication_cost_mib(num_nodes, feat_dim, backbone='gcn', method='nfedgnn', rounds=200, hid_dim=16, heads=8,
                           bytes_per_float=4):
    """Table 1's cumulative UPLOAD cost in MiB (note B.7 [I], verified
    arithmetic): nFedGNN counts the latent vectors (GCN hid, GAT heads*hid
    floats per user per round); CNFGNN adds the user-side parameters (GCN
    d*hid + hid bias, GAT d*heads*hid). MB = 2^20 bytes, float32."""
    latent = hid_dim if backbone == 'gcn' else heads * hid_dim
    per_user = latent
    if method == 'cnfgnn':
        per_user += feat_dim * latent + (hid_dim if backbone == 'gcn' else 0)
    elif method != 'nfedgnn':
        raise ValueError(method)
    return num_nodes * per_user * bytes_per_float * rounds / 2 ** 20


def _clone_state(module_or_state):
    state = module_or_state.state_dict() if isinstance(module_or_state, nn.Module) else module_or_state
    return {k: v.detach().clone() for k, v in state.items()}


def _adam_state(module, opt):
    """{param name: {'step', 'exp_avg', 'exp_avg_sq'}} copies (empty before the first step)."""
    out = {}
    for name, p in module.named_parameters():
        st = opt.state.get(p)
        if st:
            out[name] = {'step': float(st['step']), 'exp_avg': st['exp_avg'].clone(),
                         'exp_avg_sq': st['exp_avg_sq'].clone()}
    return out


def _accuracy(pred, y, mask):
    count = int(mask.sum())
    return 100.0 * int((pred[mask] == y[mask]).sum()) / count if count else 0.0


# ---------------------------------------------------------------------------
# The federation: paper Algorithm 1 + Eq. 7; note B.4
# ---------------------------------------------------------------------------
class NFedGnnReference:
    """nFedGNN, one communication round per train_round().

    x [N, F] (row i private to user i), edge_index [2, E] (known to the
    server; symmetrised), y [N] long, train/val/test masks bool [N] (the
    server knows y only on train_mask = V_0), num_classes,
    initial_states = {'server': state_dict, 'users': [state_dict] * N} (see
    draw_initial_states; None draws them from torch's global RNG).

    Hyper-parameters (paper Sec. 4.1; note B.6):
      backbone 'gcn' | 'gat'; hid_dim 16; heads 8 (GAT);
      dropout: None -> 0.5 (GCN) / 0.6 (GAT); attn_dropout: None -> dropout (GAT);
      lr: None -> 0.1 (GCN) / 0.01 (GAT); weight_decay 5e-4 (Adam, PyTorch
      coupled L2, server AND users); Adam betas (0.9, 0.999), eps 1e-8;
      lam = lambda of Eq. 7 (the figures vary it: {0.1, 1, 10, 100, 300} and
      {1, 10, 100, 500}; lam=0 is "nFedGNN without regularization", Fig. 3).
      CHOICE (oracle): default lam = 1.0 (neither source gives a default; it
      is in both grids).
    Switches (note B.10):
      gcn_bias 'user' (note [I] default) | 'server' | 'none';
      gat_reg 'sum' ([P]) | 'mean' | 'scheme2';
      send_reg_grad True ([P] #2: users receive d(L_CE + lam L_reg)/dxbar_i;
        False = Alg. 1 line 9 literally, dL_CE/dxbar_i only);
      server_update 'pre' ([P] #3: one backward pass with the pre-update theta^s)
        | 'post' (g_i recomputed with the updated theta^s, same dropout masks);
      skip_zero_grad_users False (note B.4 switch: a user whose received g_i is
        all zeros takes no Adam step);
      eval_each_round True (note B.4 "(eval)" line: evaluate() after each round).
    """

    def __init__(self, x, edge_index, y, train_mask, val_mask, test_mask, num_classes, initial_states=None,
                 backbone='gcn', lam=1.0, hid_dim=16, heads=8, dropout=None, attn_dropout=None, lr=None,
                 weight_decay=5e-4, betas=(0.9, 0.999), eps=1e-8, negative_slope=0.2, gcn_bias='user',
                 gat_reg='sum', send_reg_grad=True, server_update='pre', skip_zero_grad_users=False,
                 eval_each_round=True):
        assert backbone in BACKBONES and gcn_bias in ('user', 'server', 'none')
        assert server_update in ('pre', 'post') and gat_reg in ('sum', 'mean', 'scheme2')
        assert bool(train_mask.any()), 'V_0 (train_mask) must not be empty'
        n, feat_dim = x.shape
        self.n, self.feat_dim, self.num_classes = n, feat_dim, num_classes
        self.backbone, self.hid_dim, self.heads = backbone, hid_dim, heads
        self.latent_dim = hid_dim if backbone == 'gcn' else heads * hid_dim
        self.dropout = (0.5 if backbone == 'gcn' else 0.6) if dropout is None else dropout
        self.attn_dropout = self.dropout if attn_dropout is None else attn_dropout
        self.lr = (0.1 if backbone == 'gcn' else 0.01) if lr is None else lr
        self.weight_decay, self.lam = weight_decay, lam
        self.gcn_bias, self.gat_reg = gcn_bias, gat_reg
        self.send_reg_grad, self.server_update = send_reg_grad, server_update
        self.skip_zero_grad_users, self.eval_each_round = skip_zero_grad_users, eval_each_round
        self.dtype = x.dtype
        self.round = 0

        # Server's knowledge (Sec. 2.2): A and the labels of V_0 only.
        src, dst, und = server_edges(edge_index, n)
        # Â's edge weights, in (src, dst) order (add_remaining_self_loops appends the loops last).
        _, w = gcn_norm(und, torch.ones(und.size(1), dtype=x.dtype), n)
        self.graph = {'src': src, 'dst': dst, 'und': und, 'gcn_weight': w}
        self.y, self.train_mask, self.val_mask, self.test_mask = y, train_mask, val_mask, test_mask
        self.labels_v0 = torch.where(train_mask, y, torch.full_like(y, -1))  # what the server holds
        # Users' private data (Sec. 2.2): x_i never leaves user i.
        self.user_x = [x[i].clone() for i in range(n)]

        if initial_states is None:
            initial_states = draw_initial_states(n, feat_dim, num_classes, backbone, hid_dim, heads, gcn_bias,
                                                 dtype=self.dtype)
        assert len(initial_states['users']) == n
        user_bias = backbone == 'gcn' and gcn_bias == 'user'
        self.users = [UserModel(feat_dim, self.latent_dim, user_bias).to(self.dtype) for _ in range(n)]
        for model, state in zip(self.users, initial_states['users']):
            model.load_state_dict(state)
        if backbone == 'gcn':
            self.server = GcnServer(hid_dim, num_classes, gcn_bias == 'server').to(self.dtype)
        else:
            self.server = GatServer(hid_dim, heads, num_classes, negative_slope).to(self.dtype)
        self.server.load_state_dict(initial_states['server'])
        # CHOICE (note B.4 / B.10 #9 [P]): PyTorch Adam (coupled L2 weight decay),
        # one per user and one for the server, created once: moments persist.
        self.server_opt = Adam(self.server.parameters(), lr=self.lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self.user_opts = [Adam(u.parameters(), lr=self.lr, betas=betas, eps=eps, weight_decay=weight_decay)
                          for u in self.users]

    # ---- random draws of one round ----
    def draw_round(self, generator=None):
        """Dropout keep-masks of one training round (keep iff U >= p), for
        standalone use. GCN: {'hidden': [n, hid]}. GAT: {'user_input': [n, F]
        (row i drawn "on" user i), 'attn1': [E', heads], 'hidden': [n,
        heads*hid], 'attn2': [E', 1]}, E' = len(graph['src']) (self-loops
        included, server_edges order). Draw order = that key order. {} when
        dropout is 0. CHOICE (oracle): these masks stand in for torch's own
        Bernoulli draws (which cannot be injected)."""
        def keep(shape, p):
            return torch.rand(shape, generator=generator) >= p
        e = self.graph['src'].numel()
        if self.backbone == 'gcn':
            return {'hidden': keep((self.n, self.hid_dim), self.dropout)} if self.dropout > 0 else {}
        d = {}
        if self.dropout > 0:
            d['user_input'] = keep((self.n, self.feat_dim), self.dropout)
        if self.attn_dropout > 0:
            d['attn1'] = keep((e, self.heads), self.attn_dropout)
        if self.dropout > 0:
            d['hidden'] = keep((self.n, self.latent_dim), self.dropout)
        if self.attn_dropout > 0:
            d['attn2'] = keep((e, 1), self.attn_dropout)
        return d

    def draw_round_keys(self):
        """The keys draw_round() returns (the masks a training round needs)."""
        if self.backbone == 'gcn':
            return ['hidden'] if self.dropout > 0 else []
        keys = []
        for key, p in (('user_input', self.dropout), ('attn1', self.attn_dropout), ('hidden', self.dropout),
                       ('attn2', self.attn_dropout)):
            if p > 0:
                keys.append(key)
        return keys

    # ---- pieces ----
    def user_forward(self, i, draws=None, training=True):
        """Alg. 1 line 5: xbar_i = f_u(theta_i^u, x_i) on user i."""
        self.users[i].train(training)
        keep = None
        if training and draws is not None and 'user_input' in draws:
            keep = draws['user_input'][i]
        return self.users[i](self.user_x[i], keep, self.dropout if self.backbone == 'gat' else 0.0)

    def server_forward(self, xbar, draws=None, training=True):
        """Eq. 2: Z = f_s(theta^s, A, Xbar) (logits)."""
        self.server.train(training)
        d = draws if training else None
        if self.backbone == 'gcn':
            return self.server(xbar, self.graph, d, self.dropout if training else 0.0)
        return self.server(xbar, self.graph, d, self.dropout if training else 0.0,
                           self.attn_dropout if training else 0.0)

    def regulariser(self, xbar):
        """Eq. 6 on the received latent vectors (GAT: App. D scheme, gat_reg)."""
        if self.backbone == 'gcn':
            return laplacian_reg(xbar, self.graph['src'], self.graph['dst'])
        return gat_laplacian_reg(xbar, self.graph['src'], self.graph['dst'], self.heads, self.gat_reg)

    def server_loss(self, xbar, draws=None, training=True):
        """Eq. 7: L = L_CE + lam * L_reg. Returns (L, L_CE, L_reg, logits)."""
        z = self.server_forward(xbar, draws, training)
        ce = ce_loss(z, self.labels_v0, self.train_mask)
        reg = self.regulariser(xbar)
        return ce + self.lam * reg, ce, reg, z

    def _post_user_step(self, out):
        """Hook after the users' updates (CNFGNN averages the user models here)."""

    # ---- one round: Algorithm 1 lines 3-14 ----
    def train_round(self, draws=None):
        """One FL round. draws: the dropout keep-masks (draw_round()); None with
        dropout > 0 draws them from torch's global RNG. Returns copies of:
          round, draws;
          uploads  [n, latent]  xbar_i, what user i sends (row i; Alg. 1 line 6);
          logits   [n, C]  the server's training-mode Z;
          attention (GAT) (alpha1 [E', heads], alpha2 [E', 1]) before attention dropout;
          losses   {'total', 'ce', 'reg'}: L, L_CE, L_reg of that forward (pre-update);
          server_grads {name: dL/dtheta^s} (before weight decay / the step);
          downloads [n, latent]  g_i = dL/dxbar_i, what user i receives (line 9);
          user_grads [ {name: dL/dtheta_i^u} | None if the user skipped ] (line 11);
          skipped  [user ids that took no step];
          server_state / user_states: parameters after the round's updates;
          server_adam / user_adam: Adam moments after the round;
          comm {'upload_floats', 'download_floats'} of this round (all users);
          eval: evaluate() after the round (if eval_each_round).
        """
        self.round += 1
        if draws is None:
            draws = self.draw_round() if self.dropout > 0 or self.attn_dropout > 0 else {}
        missing = set(self.draw_round_keys()) - set(draws)
        assert not missing, f'dropout > 0 needs the keep-masks {sorted(missing)}'
        out = {'round': self.round, 'draws': {k: v.clone() for k, v in draws.items()}}

        # Lines 4-7: every user computes and uploads xbar_i (kept: its autograd graph stays on the device).
        user_outs = [self.user_forward(i, draws, True) for i in range(self.n)]
        uploads = torch.stack([o.detach() for o in user_outs])
        out['uploads'] = uploads.clone()

        # Lines 8-9 on the server: Eq. 7, one backward pass (note B.4 / B.10 #3 [P]).
        xbar = uploads.clone().requires_grad_(True)
        self.server_opt.zero_grad()
        loss, ce, reg, z = self.server_loss(xbar, draws, True)
        out['logits'] = z.detach().clone()
        if self.backbone == 'gat':
            out['attention'] = tuple(a.clone() for a in self.server.last_attention)
        out['losses'] = {'total': float(loss), 'ce': float(ce), 'reg': float(reg)}
        g_ce = None
        if not self.send_reg_grad:
            # Alg. 1 line 9 literally: only dL_CE/dxbar_i is sent.
            g_ce = torch.autograd.grad(ce, xbar, retain_graph=True)[0]
        loss.backward()
        out['server_grads'] = {k: p.grad.detach().clone() for k, p in self.server.named_parameters()}
        g = xbar.grad.detach().clone() if g_ce is None else g_ce.detach().clone()
        self.server_opt.step()  # line 8: Adam (lr, wd) on theta^s
        if self.server_update == 'post':
            # Alternative order of lines 8 / 9: the gradient is computed with the UPDATED theta^s.
            xbar2 = uploads.clone().requires_grad_(True)
            loss2, ce2, _, _ = self.server_loss(xbar2, draws, True)
            g = torch.autograd.grad(loss2 if self.send_reg_grad else ce2, xbar2)[0].detach().clone()
        out['downloads'] = g.clone()

        # Lines 10-13 on every user: backprop g_i through f_u, Adam step (lr, wd) on theta_i^u.
        out['user_grads'], out['skipped'] = [], []
        for i in range(self.n):
            self.user_opts[i].zero_grad()
            if self.skip_zero_grad_users and not bool(g[i].ne(0).any()):
                out['user_grads'].append(None)
                out['skipped'].append(i)
                continue
            user_outs[i].backward(g[i])
            out['user_grads'].append({k: p.grad.detach().clone() for k, p in self.users[i].named_parameters()})
            self.user_opts[i].step()

        # Sec. 4.3: per round every user uploads xbar_i and downloads g_i.
        out['comm'] = {'upload_floats': self.n * self.latent_dim, 'download_floats': self.n * self.latent_dim}
        self._post_user_step(out)
        out['server_state'] = _clone_state(self.server)
        out['user_states'] = [_clone_state(u) for u in self.users]
        out['server_adam'] = _adam_state(self.server, self.server_opt)
        out['user_adam'] = [_adam_state(u, o) for u, o in zip(self.users, self.user_opts)]
        if self.eval_each_round:
            out['eval'] = self.evaluate()
        return out

    # ---- evaluation: Sec. 4.1 ("testing accuracy"), note B.4 (eval) / B.6 ----
    @torch.no_grad()
    def evaluate(self):
        """Eval mode (no dropout): users send xbar_i (not counted as
        communication), the server computes Z; accuracy (%) of argmax Z on the
        train / val / test masks and the eval-mode L, L_CE, L_reg; also the
        logits, pred, latent (the eval uploads) and, for GAT, attention.
        CHOICE (oracle): an empty mask scores 0."""
        xbar = torch.stack([self.user_forward(i, None, False) for i in range(self.n)])
        loss, ce, reg, z = self.server_loss(xbar, None, False)
        pred = z.argmax(dim=1)
        extra = {'attention': tuple(a.clone() for a in self.server.last_attention)} if self.backbone == 'gat' else {}
        return {**extra, 'acc_train': _accuracy(pred, self.y, self.train_mask),
                'acc_val': _accuracy(pred, self.y, self.val_mask),
                'acc_test': _accuracy(pred, self.y, self.test_mask),
                'loss': float(loss), 'ce': float(ce), 'reg': float(reg),
                'logits': z.clone(), 'pred': pred.clone(), 'latent': xbar.clone()}

    def run(self, num_rounds=200, generator=None):
        """The schedule of Sec. 4.1: T rounds (200), all users every round, one
        forward/backward per round. Dropout masks from draw_round(generator).
        CHOICE (note B.6 [P]): report both the final-round and the best-round
        test accuracy. Returns per-round curves and those summaries."""
        hist = {'loss': [], 'ce': [], 'reg': [], 'acc_test': [], 'acc_val': []}
        for _ in range(num_rounds):
            draws = self.draw_round(generator) if self.dropout > 0 or self.attn_dropout > 0 else {}
            r = self.train_round(draws)
            ev = r['eval'] if 'eval' in r else self.evaluate()
            for k in ('loss', 'ce', 'reg'):
                hist[k].append(r['losses']['total' if k == 'loss' else k])
            hist['acc_test'].append(ev['acc_test'])
            hist['acc_val'].append(ev['acc_val'])
        best = max(range(num_rounds), key=lambda t: (hist['acc_test'][t], -t)) if num_rounds else None
        hist['final_test'] = hist['acc_test'][-1] if num_rounds else None
        hist['best_test'] = hist['acc_test'][best] if num_rounds else None
        hist['best_round'] = None if best is None else best + 1
        return hist
