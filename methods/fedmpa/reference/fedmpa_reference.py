"""Plain-PyTorch FedMLP / FedMpa / FedMpae / LocMpa written from the paper, used as a test oracle.

These methods have no public code. This module follows only:
  * the paper: Tang, Chen, Wang, Xuan, Zhao, "Federated Learning with Limited
    Node Labels" (shared/papers/001_e3642237f6ef59d1.txt): Sec. 3 (Eqs. 1-3
    APPNP, Eqs. 4-5 FedMLP, Eq. 6 FedMpa, Eqs. 7-10 FedMpae), Algorithms 1 and 2,
    Sec. 4.1 "Implementation Details";
  * the engineering note shared/papers/seeds_fedmpa_nodelevel.md, Part A:
    A.2.0 (data preparation, step 4: the normalised local propagation matrix),
    A.2.1 (stage 1 FedMLP), A.2.2 (stage 2 FedMpa, LocMpa), A.2.3 (stage 3
    FedMpae, and its optional super-node variant), A.2.4 (what is communicated),
    A.3 (ambiguity table #1-#16), A.4 (hyper-parameters), A.5.3 (evaluation).
Every function names the equation or note section it implements. Where the note
marks a choice [P] (proposal) or [AMB], its default is implemented and the choice
is named in a comment ("CHOICE (note ...)"). Choices neither source makes are
marked "CHOICE (oracle)". README.md lists them all.

The partition and the 1%/20%/20% split (note A.2.0 steps 2-3) are NOT part of
the oracle: the subgraphs and their masks are inputs.

Randomness is injected: every model's initial weights are inputs
(initial_states). There is no augmentation and no sampling in these methods.
The only randomness drawn inside is dropout (torch's global RNG) when
dropout > 0; for bit-exact comparisons use dropout=0. glorot_mlp_state() draws
a Keras-default initial state with a torch generator for standalone use.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.pyg import gcn_norm, scatter  # noqa: E402

VARIANTS = ('fedmlp', 'fedmpa', 'fedmpae', 'locmpa')
FEDERATED = ('fedmlp', 'fedmpa', 'fedmpae')


# ---------------------------------------------------------------------------
# The feature transform R^(0) = MLP(X): paper Eqs. 1 and 4; note A.2.1, A.3 #1/#2
# ---------------------------------------------------------------------------
class MLP(nn.Module):
    """Dropout(p) -> Dense(h_1, relu) -> Dropout(p) -> ... -> Dense(h_L, relu)
    -> Dropout(p) -> Dense(C, act_out).

    CHOICE (note A.2.1 [AMB] / A.3 #1 [P]): "3-hidden layer network with 64
    dimensions" read as the stellargraph APPNP stack [64, 64, C], i.e.
    hidden_dims=(64, 64) (three dense layers). hidden_dims=(64, 64, 64) gives
    reading (b).
    CHOICE (note A.2.1 [I]): the stellargraph layer order, dropout BEFORE every
    dense layer (also before the first one, on the raw features).
    CHOICE (note A.3 #2 [P]): act_out='linear' (logits); 'relu' is the
    stellargraph-demo switch.
    state_dict: layers.{j}.weight [out, in] (the transpose of a Keras kernel),
    layers.{j}.bias [out], j = 0..len(hidden_dims).
    """

    def __init__(self, feat_dim, hidden_dims, num_classes, dropout=0.5, act_out='linear'):
        super().__init__()
        assert act_out in ('linear', 'relu')
        dims = [feat_dim] + list(hidden_dims) + [num_classes]
        self.layers = nn.ModuleList([nn.Linear(dims[j], dims[j + 1]) for j in range(len(dims) - 1)])
        self.dropout = dropout
        self.act_out = act_out

    def forward(self, x):
        """Returns (output [n, C], last hidden activation [n, h_L] or None).
        The last hidden is taken after its ReLU and before the dropout that
        precedes the output layer (only used by decoder_input='hidden')."""
        h, hidden = x, None
        for j, layer in enumerate(self.layers):
            h = _dropout(h, self.dropout, self.training)
            h = layer(h)
            if j < len(self.layers) - 1:
                h = F.relu(h)
                hidden = h
            elif self.act_out == 'relu':
                h = F.relu(h)
        return h, hidden


def _dropout(h, p, training):
    # Dropout is skipped entirely at p = 0 (no RNG use, exact identity).
    return F.dropout(h, p=p, training=True) if (training and p > 0) else h


def glorot_mlp_state(feat_dim, hidden_dims, num_classes, generator=None):
    """A Keras-default initial state (note A.2.1 [I]): Glorot-uniform kernels,
    U(+-sqrt(6 / (fan_in + fan_out))), zero biases; drawn layer by layer,
    weight [out, in] row-major. For standalone use; the federation itself never
    draws (its initial_states are inputs)."""
    dims = [feat_dim] + list(hidden_dims) + [num_classes]
    state = {}
    for j in range(len(dims) - 1):
        fan_in, fan_out = dims[j], dims[j + 1]
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        state['layers.%d.weight' % j] = (torch.rand(fan_out, fan_in, generator=generator) * 2 - 1) * limit
        state['layers.%d.bias' % j] = torch.zeros(fan_out)
    return state


# ---------------------------------------------------------------------------
# The local graph: note A.2.0 step 1 (undirected, unweighted, no self-loops)
# and step 4 / paper Eq. 2 (A~ = D^-1/2 (A + I) D^-1/2, D = deg + 1)
# ---------------------------------------------------------------------------
def undirected_pairs(edge_index, num_nodes):
    """The distinct unordered pairs {u, v}, u != v, of the columns of
    edge_index, as (lo, hi) with lo < hi, sorted by lo * n + hi.
    CHOICE (oracle, note A.2.0 step 1): A_i is binary and symmetric: duplicate
    columns count once, self-loop columns are dropped, and a column (u, v)
    implies the edge (v, u) (a no-op for the inputs here, which store both)."""
    src, dst = edge_index[0], edge_index[1]
    keep = src != dst
    lo = torch.minimum(src[keep], dst[keep])
    hi = torch.maximum(src[keep], dst[keep])
    key = torch.unique(lo * num_nodes + hi)
    return key // num_nodes, key % num_nodes


def symmetric_edge_index(edge_index, num_nodes):
    """Both directions of every undirected pair: the edge_index of binary A_i."""
    lo, hi = undirected_pairs(edge_index, num_nodes)
    return torch.stack([torch.cat([lo, hi]), torch.cat([hi, lo])])


def dense_adjacency(edge_index, num_nodes):
    """Binary A_i [n, n], symmetric, zero diagonal (the Eq. 9 target)."""
    lo, hi = undirected_pairs(edge_index, num_nodes)
    a = torch.zeros(num_nodes, num_nodes)
    a[lo, hi] = 1.0
    a[hi, lo] = 1.0
    return a


def propagation_matrix(edge_index, num_nodes):
    """Paper Eq. 2 / note A.2.0 step 4: A~ = D^-1/2 (A + I) D^-1/2 with D = D_A + I,
    as sparse (edge_index with one self-loop per node, weights), via PyG's
    gcn_norm on binary symmetric A_i. Being symmetric, its direction is moot."""
    return gcn_norm(symmetric_edge_index(edge_index, num_nodes), None, num_nodes)


def spmm(prop, h):
    """A~ h for prop = (edge_index, weight): out[dst] += w * h[src]. A dense
    [n, n] prop (super-node variant) is multiplied directly."""
    if torch.is_tensor(prop):
        return prop @ h
    ei, w = prop
    return scatter(w.view(-1, 1) * h[ei[0]], ei[1], 0, h.size(0), 'sum')


def appnp_propagate(h0, prop, K=10, alpha=0.1, dropout=0.0, training=False):
    """Paper Eqs. 2 / 6: R^(k) = (1 - alpha) A~ R^(k-1) + alpha R^(0), k = 1..K.
    CHOICE (note A.2.2 [I], stellargraph APPNPPropagationLayer): dropout is
    applied to R^(k-1) before every multiplication by A~, never to the
    teleport term R^(0). CHOICE (note A.3 #6 [P]): K = 10 by default.
    Returns R^(K) (pre-softmax logits; Eq. 3 softmax is inside the CE)."""
    h = h0
    for _ in range(K):
        h = (1.0 - alpha) * spmm(prop, _dropout(h, dropout, training)) + alpha * h0
    return h


def appnp_forward(mlp, x, prop, K, alpha, dropout, training):
    """Eq. 1 then Eq. 6: (R^(K), R^(0), last MLP hidden). The MLP's mode
    (train/eval) is set by the caller; `training` switches the propagation
    dropout."""
    h0, hidden = mlp(x)
    return appnp_propagate(h0, prop, K, alpha, dropout, training), h0, hidden


# ---------------------------------------------------------------------------
# Loss terms
# ---------------------------------------------------------------------------
def ce_loss(logits, y, mask):
    """Cross-entropy of softmax(logits) (Eq. 3) on the masked (train) nodes,
    mean over them (note A.2.1 / A.2.2: CE on T_i).
    CHOICE (oracle): computed as -log_softmax (no Keras 1e-7 probability
    clipping). CHOICE (oracle): a client without train nodes has CE 0 (no
    gradient); the note's split guarantees n_train >= 1."""
    if int(mask.sum()) == 0:
        return logits.sum() * 0.0
    return F.cross_entropy(logits[mask], y[mask])


def inner_product_decoder(z):
    """Paper Eq. 7 decoder: A_bar = sigmoid(Z Z^T), dense [n, n], all pairs incl. the diagonal."""
    return torch.sigmoid(z @ z.t())


def recon_mse(a_bar, target):
    """Paper Eq. 9: MSE(A, A_bar) = (1 / n^2) sum_{u,v} (A[u,v] - A_bar[u,v])^2
    (note A.2.3: mean over all n^2 entries, diagonal included)."""
    return ((target - a_bar) ** 2).mean()


def recon_supernode(target, a_check, a_bar, a=1.0, b=1.0):
    """Paper Eq. 8: a ||A - A_check||_2 + b ||A_bar - A_check||_2, with the
    norms read as Frobenius norms, NOT squared (note A.2.3 optional variant).
    Returns (total, ||A - A_check||_F, ||A_bar - A_check||_F)."""
    anchor = torch.linalg.norm(target - a_check)
    dec = torch.linalg.norm(a_bar - a_check)
    return a * anchor + b * dec, anchor, dec


def l2_kernel_penalty(mlp, l2):
    """Keras kernel_regularizer=l2(l2): l2 * sum of squared KERNEL entries of
    every dense layer (biases excluded). Note A.2.2 / A.3 #16 [P]: default 0
    (switch 1e-3, the stellargraph demo's)."""
    return l2 * sum((layer.weight ** 2).sum() for layer in mlp.layers)


def fedmpae_loss(logits, y, train_mask, z, target, beta=1.0, gamma=1.0):
    """Paper Eq. 10 as run (Eq. 9 reconstruction, A_check == A):
    beta * CE(softmax(R^(K))[T], y[T]) + gamma * MSE(A_i, sigmoid(Z Z^T)).
    Returns (total, ce, recon)."""
    ce = ce_loss(logits, y, train_mask)
    rec = recon_mse(inner_product_decoder(z), target)
    return beta * ce + gamma * rec, ce, rec


# ---------------------------------------------------------------------------
# Server aggregation: paper Eq. 5 (W = sum_i 1/|M| W_i); note A.2.4, A.3 #3
# ---------------------------------------------------------------------------
def aggregate(states, weights=None):
    """W = sum_i lambda_i W_i for every tensor of the state_dict; lambda_i =
    1/M by default (Eq. 5). CHOICE (note A.3 #3 [P]): parameters are averaged
    (FedAvg), not gradients (Algorithm 2 reads as FedSGD).
    CHOICE (oracle): accumulated in float64 in client order (lambda_i as a
    Python double), then cast back to float32."""
    if weights is None:
        weights = [1.0 / len(states)] * len(states)
    out = {}
    for key in states[0]:
        acc = torch.zeros(states[0][key].shape, dtype=torch.float64)
        for w, s in zip(weights, states):
            acc += w * s[key].double()
        out[key] = acc.to(states[0][key].dtype)
    return out


# ---------------------------------------------------------------------------
# Optimiser: note A.3 #5 [P] Adam for every stage, lr 0.01, weight decay 0
# ---------------------------------------------------------------------------
class Adam:
    """Adam whose state (m, v, step) is keyed by parameter NAME, so that one
    state can follow a client across rounds (the parameter values are
    overwritten by the broadcast in place) or be shared by several clients
    (note A.2.4 FedSage-code quirk).
    style='torch' (CHOICE (oracle) default, eps 1e-8): torch.optim.Adam 1.13,
        m_hat / (sqrt(v) / sqrt(1 - b2^t) + eps) * lr / (1 - b1^t).
    style='keras' (eps 1e-7): tf.keras Adam, lr_t = lr sqrt(1 - b2^t) / (1 - b1^t),
        p -= lr_t m / (sqrt(v) + eps).
    The note (A.4) names both epsilons without choosing. A parameter without a
    gradient takes a step with gradient 0."""

    def __init__(self, lr=0.01, betas=(0.9, 0.999), eps=None, style='torch'):
        assert style in ('torch', 'keras')
        self.lr, self.betas, self.style = lr, betas, style
        self.eps = eps if eps is not None else (1e-8 if style == 'torch' else 1e-7)
        self.state = {}

    @torch.no_grad()
    def step(self, named_params):
        b1, b2 = self.betas
        for name, p in named_params:
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            st = self.state.get(name)
            if st is None:
                st = self.state[name] = {'step': 0, 'm': torch.zeros_like(p), 'v': torch.zeros_like(p)}
            st['step'] += 1
            t = st['step']
            st['m'].mul_(b1).add_(g, alpha=1 - b1)
            st['v'].mul_(b2).addcmul_(g, g, value=1 - b2)
            if self.style == 'torch':
                denom = (st['v'].sqrt() / math.sqrt(1 - b2 ** t)).add_(self.eps)
                p.addcdiv_(st['m'], denom, value=-self.lr / (1 - b1 ** t))
            else:
                lr_t = self.lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
                p.sub_(lr_t * st['m'] / (st['v'].sqrt() + self.eps))


# ---------------------------------------------------------------------------
# Early stopping: note A.2.2 / A.3 #7 [P] (stellargraph APPNP demo:
# EarlyStopping(monitor='val_acc', patience=50) + ModelCheckpoint(save_best_only))
# ---------------------------------------------------------------------------
class EarlyStopping:
    """Keras semantics on the validation accuracy measured after each epoch's
    update: an epoch improves iff its val accuracy is STRICTLY greater than the
    best so far (the first epoch always improves: best starts at -inf); the
    weights of the first best epoch are kept (ModelCheckpoint save_best_only);
    training stops once `patience` consecutive epochs have not improved.
    Scores are compared as integer counts of correct val nodes (same order as
    the accuracy, no float ties)."""

    def __init__(self, patience):
        self.patience = patience
        self.best = None
        self.best_epoch = 0
        self.wait = 0

    def update(self, epoch, score):
        """Returns (improved, stop)."""
        improved = self.best is None or score > self.best
        if improved:
            self.best, self.best_epoch, self.wait = score, epoch, 0
        else:
            self.wait += 1
        return improved, self.wait >= self.patience


def _clone_state(module_or_state):
    state = module_or_state.state_dict() if isinstance(module_or_state, nn.Module) else module_or_state
    return {k: v.detach().clone() for k, v in state.items()}


def _correct(pred, y, mask):
    return int((pred[mask] == y[mask]).sum())


# ---------------------------------------------------------------------------
# The pipeline: paper Algorithms 1 and 2; note A.2.1 - A.2.4
# ---------------------------------------------------------------------------
class FedMpaReference:
    """FedMLP (stage 1, federated) followed by the local stage of `variant`.

    subgraphs: objects with x [n, F] float32, edge_index [2, E] int64 (both
      directions), y [n] int64, train_idx / val_idx / test_idx bool [n].
    initial_states: {'server': MLP state_dict theta^0 (required for fedmlp /
      fedmpa / fedmpae), 'clients': [M MLP state_dicts] (LocMpa's fresh local
      inits, required for locmpa)}. A bare state_dict means {'server': it}, a
      list means {'clients': it}.
    variant: 'fedmlp' (stage 1 only; evaluated without propagation),
      'fedmpa' (stage 1 then Eq. 6 fine-tuning), 'fedmpae' (stage 1 then
      Eq. 10 fine-tuning), 'locmpa' (no stage 1: Eq. 6 training from
      initial_states['clients']).
    Units: train_round() = one FedMLP communication round; train_local() =
      every client's whole local stage (<= max_epochs with early stopping);
      run() = fedmlp_rounds x train_round() then train_local().
    """

    def __init__(self, subgraphs, num_classes, initial_states, variant='fedmpa', hidden_dims=(64, 64),
                 act_out='linear', dropout=0.5, lr=0.01, K=10, alpha=0.1, fedmlp_rounds=20,
                 fedmlp_local_epochs=1, fedmlp_adam='per_client', max_epochs=200, patience=50,
                 early_stopping=True, beta=1.0, gamma=1.0, decoder_input='logits', recon_target='adj',
                 recon='mse', recon_a=1.0, recon_b=1.0, l2_kernel=0.0, adam_style='torch', adam_eps=None,
                 adam_betas=(0.9, 0.999)):
        assert variant in VARIANTS
        assert fedmlp_adam in ('per_client', 'shared', 'fresh')
        assert decoder_input in ('logits', 'softmax', 'hidden')
        assert recon_target in ('adj', 'adj_plus_i') and recon in ('mse', 'supernode')
        if isinstance(initial_states, (list, tuple)):
            initial_states = {'clients': list(initial_states)}
        elif 'server' not in initial_states and 'clients' not in initial_states:
            initial_states = {'server': initial_states}
        self.subgraphs = subgraphs
        self.num_clients = len(subgraphs)
        self.num_classes = num_classes
        self.variant = variant
        self.hidden_dims, self.act_out, self.dropout = tuple(hidden_dims), act_out, dropout
        self.lr, self.K, self.alpha = lr, K, alpha
        self.fedmlp_rounds, self.fedmlp_local_epochs, self.fedmlp_adam = fedmlp_rounds, fedmlp_local_epochs, fedmlp_adam
        self.max_epochs, self.patience, self.early_stopping = max_epochs, patience, early_stopping
        self.beta, self.gamma = beta, gamma
        self.decoder_input, self.recon_target, self.recon = decoder_input, recon_target, recon
        self.recon_a, self.recon_b = recon_a, recon_b
        self.l2_kernel = l2_kernel
        self.adam_kwargs = dict(lr=lr, betas=adam_betas, eps=adam_eps, style=adam_style)
        self.feat_dim = subgraphs[0].x.size(1)

        self.server_state = None
        if variant in FEDERATED:
            self.server_state = _clone_state(initial_states['server'])
        self.local_init_states = None
        if 'clients' in initial_states and initial_states['clients'] is not None:
            assert len(initial_states['clients']) == self.num_clients
            self.local_init_states = [_clone_state(s) for s in initial_states['clients']]
        if variant == 'locmpa':
            assert self.local_init_states is not None, "locmpa needs initial_states['clients']"

        # Stage 1 client models. Note A.2.1: every client starts each round from
        # the broadcast theta^{t-1} (Alg. 1 line 4 / Eq. 5 "W = W_1 = ... = W_M").
        self.fedmlp_models = [self._new_mlp() for _ in range(self.num_clients)]
        if self.server_state is not None:
            for m in self.fedmlp_models:
                m.load_state_dict(self.server_state)
        # CHOICE (note A.2.4 [P]): one persistent Adam per client across the
        # FedMLP rounds ('per_client'); 'shared' = one Adam object stepped by
        # every client in turn (FedSage-code quirk); 'fresh' (CHOICE (oracle)
        # extra) = a new Adam per client per round.
        shared = Adam(**self.adam_kwargs)
        self.fedmlp_opts = [shared if fedmlp_adam == 'shared' else Adam(**self.adam_kwargs)
                            for _ in range(self.num_clients)]
        self.round = 0
        # Local graph matrices, computed once per client (note A.2.0 step 4).
        self.props = [propagation_matrix(g.edge_index, g.x.size(0)) for g in subgraphs]
        self.adjs = [dense_adjacency(g.edge_index, g.x.size(0)) for g in subgraphs]
        # Results of the local stage (filled by train_local).
        self.local_states = None
        self.local_adj_weights = None
        self.local_variant = None

    def _new_mlp(self):
        return MLP(self.feat_dim, self.hidden_dims, self.num_classes, self.dropout, self.act_out)

    # ---- stage 1: FedMLP (paper Eqs. 4-5, Alg. 1 lines 1-6, Alg. 2; note A.2.1) ----
    def _fedmlp_client(self, k):
        g, model, opt = self.subgraphs[k], self.fedmlp_models[k], self.fedmlp_opts[k]
        if self.fedmlp_adam == 'fresh':
            opt = self.fedmlp_opts[k] = Adam(**self.adam_kwargs)
        # Broadcast: theta_i <- theta^{t-1}, in place (the Adam state is kept).
        model.load_state_dict(self.server_state)
        losses = []
        # CHOICE (note A.3 #4 [P]): E_loc = 1 local epoch per round; one epoch
        # is ONE full-batch step (note A.4: "Keras batch 32 >= #train nodes
        # gives one step"; mini-batches are not modelled).
        for _ in range(self.fedmlp_local_epochs):
            model.train()
            model.zero_grad()
            out, _ = model(g.x)
            ce = ce_loss(out, g.y, g.train_idx)  # CE on the local train nodes T_i
            l2 = l2_kernel_penalty(model, self.l2_kernel)
            total = ce + l2
            total.backward()
            opt.step(model.named_parameters())
            losses.append({'total': float(total), 'ce': float(ce), 'l2': float(l2)})
        return losses

    def train_round(self):
        """One FedMLP communication round (note A.2.1 pseudo-code). Returns copies:
          round:     1-based round index t
          broadcast: theta^{t-1}, the MLP state every client received
          uploads:   per client, the MLP state_dict uploaded (after local training)
          clients:   per client, the client's MLP state_dict at the end of the round
                     (= its upload; the next broadcast overwrites it)
          server:    theta^t = sum_i 1/M theta_i (Eq. 5)
          losses:    per client, per local epoch {'total', 'ce', 'l2'} (floats,
                     the loss that was back-propagated, before the step)
        """
        if self.variant not in FEDERATED:
            raise ValueError('LocMpa has no federated stage')
        self.round += 1
        out = {'round': self.round, 'broadcast': _clone_state(self.server_state), 'uploads': [], 'clients': [],
               'losses': []}
        # Clients are independent ("in parallel"); run in client order (which
        # matters only for fedmlp_adam='shared').
        for k in range(self.num_clients):
            out['losses'].append(self._fedmlp_client(k))
            out['uploads'].append(_clone_state(self.fedmlp_models[k]))
            out['clients'].append(_clone_state(self.fedmlp_models[k]))
        # Server (Alg. 2 / Eq. 5, uniform 1/M); broadcast at the next round.
        self.server_state = aggregate(out['uploads'])
        out['server'] = _clone_state(self.server_state)
        return out

    # ---- stages 2/3: FedMpa, FedMpae, LocMpa (Eqs. 6-10, Alg. 1 lines 7-23; note A.2.2/A.2.3) ----
    def _supernode_setup(self, k):
        """Note A.2.3 optional variant [P]: A_check = a learnable non-negative
        weight on the support of A_i U I, initialised to 1.
        CHOICE (oracle): one weight per undirected pair (A_check symmetric), in
        undirected_pairs order, then one per node (its self-loop): adj_weight
        [P + n]. Non-negativity by projection (clamp at 0 after each step)."""
        g = self.subgraphs[k]
        n = g.x.size(0)
        lo, hi = undirected_pairs(g.edge_index, n)
        return lo, hi, nn.Parameter(torch.ones(lo.numel() + n))

    @staticmethod
    def _dense_from_weights(lo, hi, w, n):
        p = lo.numel()
        loops = torch.arange(n)
        rows = torch.cat([lo, hi, loops])
        cols = torch.cat([hi, lo, loops])
        vals = torch.cat([w[:p], w[:p], w[p:]])
        return torch.zeros(n, n).index_put((rows, cols), vals, accumulate=True)

    @staticmethod
    def _sym_normalise(a_check):
        """D^-1/2 A_check D^-1/2, D = row sums of A_check (self-loops included);
        a zero degree gives a zero row/column (as gcn_norm)."""
        d = a_check.sum(dim=1).pow(-0.5)
        d = torch.where(torch.isinf(d), torch.zeros_like(d), d)
        return d.view(-1, 1) * a_check * d.view(1, -1)

    def _forward_local(self, k, model, adj_w, supernode_idx, training):
        g = self.subgraphs[k]
        a_check = None
        if supernode_idx is not None:
            a_check = self._dense_from_weights(supernode_idx[0], supernode_idx[1], adj_w, g.x.size(0))
            prop = self._sym_normalise(a_check)
        else:
            prop = self.props[k]
        model.train(training)
        h, h0, hidden = appnp_forward(model, g.x, prop, self.K, self.alpha, self.dropout, training)
        return h, hidden, a_check

    def _local_client(self, k, variant, start_state):
        g = self.subgraphs[k]
        n = g.x.size(0)
        model = self._new_mlp()
        model.load_state_dict(start_state)  # Alg. 1 line 8 / 15 (W_FedMpa_i <- W_i) or LocMpa's init
        mpae = variant == 'fedmpae'
        supernode = mpae and self.recon == 'supernode'
        lo = hi = adj_w = None
        if supernode:
            lo, hi, adj_w = self._supernode_setup(k)
        if mpae:
            # CHOICE (note A.3 #9 [P]): target = binary A_i, no self-loops
            # ('adj_plus_i' switch: A_i + I).
            target = self.adjs[k] + (torch.eye(n) if self.recon_target == 'adj_plus_i' else 0.0)
        # CHOICE (oracle): a fresh Adam per client per local stage (a new
        # stellargraph model is compiled; nothing says to carry stage-1 moments).
        opt = Adam(**self.adam_kwargs)

        def params():
            named = list(model.named_parameters())
            return named + ([('adj_weight', adj_w)] if supernode else [])

        stopper = EarlyStopping(self.patience)
        best_state = _clone_state(model)
        best_adj = adj_w.detach().clone() if supernode else None
        losses = []
        # CHOICE (note A.3 #7 [P]): <= max_epochs (200) full-batch epochs with
        # early stopping on local val accuracy (patience 50) and restore-best;
        # early_stopping=False: exactly max_epochs, final weights kept.
        # CHOICE (note A.2.2 [AMB] Alg. 1 "for k = 1..l"): l = training epochs,
        # K propagation steps inside every forward pass.
        for epoch in range(1, self.max_epochs + 1):
            model.zero_grad()
            if supernode:
                adj_w.grad = None
            h, hidden, a_check = self._forward_local(k, model, adj_w, (lo, hi) if supernode else None, True)
            ce = ce_loss(h, g.y, g.train_idx)  # Eq. 3 softmax + CE on T_i
            rec = anchor = dec = None
            total = self.beta * ce if mpae else ce
            if mpae:
                # CHOICE (note A.3 #9 [P]): Z = the propagated logits R^(K) of
                # THIS forward pass (Alg. 1 line 18, same tensor as the CE).
                if self.decoder_input == 'logits':
                    z = h
                elif self.decoder_input == 'softmax':
                    z = F.softmax(h, dim=1)
                else:
                    z = hidden
                a_bar = inner_product_decoder(z)
                if supernode:
                    rec, anchor, dec = recon_supernode(target, a_check, a_bar, self.recon_a, self.recon_b)
                else:
                    rec = recon_mse(a_bar, target)  # Eq. 9
                total = total + self.gamma * rec  # Eq. 10
            l2 = l2_kernel_penalty(model, self.l2_kernel)
            total = total + l2
            total.backward()
            opt.step(params())
            if supernode:
                with torch.no_grad():
                    adj_w.clamp_(min=0.0)
            # Validation after the update, eval mode (no dropout), local graph.
            with torch.no_grad():
                h_eval, _, _ = self._forward_local(k, model, adj_w, (lo, hi) if supernode else None, False)
            val_correct = _correct(h_eval.argmax(dim=1), g.y, g.val_idx)
            n_val = int(g.val_idx.sum())
            rec_f = None if rec is None else float(rec)
            losses.append({'total': float(total), 'ce': float(ce), 'recon': rec_f, 'l2': float(l2),
                           'recon_anchor': None if anchor is None else float(anchor),
                           'recon_dec': None if dec is None else float(dec),
                           'val_correct': val_correct, 'val_acc': 100.0 * val_correct / n_val if n_val else 0.0})
            if self.early_stopping:
                improved, stop = stopper.update(epoch, val_correct)
                if improved:
                    best_state = _clone_state(model)
                    best_adj = adj_w.detach().clone() if supernode else None
                if stop:
                    break
        if self.early_stopping:
            final_state, final_adj, best_epoch = best_state, best_adj, stopper.best_epoch
        else:
            final_state = _clone_state(model)
            final_adj = adj_w.detach().clone() if supernode else None
            best_epoch = len(losses)
        return final_state, final_adj, losses, best_epoch

    def train_local(self, variant=None):
        """Every client's local stage, independently, no communication (note A.2.4).
        variant defaults to the constructor's; a federated instance may also run
        'fedmpa' and 'fedmpae' from the same theta* (note A.9: they share stage 1).
        Returns copies:
          stage:        'fedmpa' | 'fedmpae' | 'locmpa'
          server:       theta* the clients started from (None for locmpa)
          start_states: per client, the MLP state_dict at the start of the stage
          clients:      per client, the final MLP state_dict (best val epoch
                        restored when early_stopping)
          adj_weights:  per client, the learned A_check weights [P + n]
                        (recon='supernode' only, else None)
          losses:       per client, per epoch {'total', 'ce', 'recon', 'l2',
                        'recon_anchor', 'recon_dec', 'val_correct', 'val_acc'}
                        (train losses before the step; val after it; None = term off)
          best_epoch:   per client, the 1-based epoch whose weights were kept
          epochs_run:   per client, the number of epochs trained
        """
        variant = variant or self.variant
        assert variant in ('fedmpa', 'fedmpae', 'locmpa'), variant
        if variant == 'locmpa':
            assert self.local_init_states is not None
            starts = [_clone_state(s) for s in self.local_init_states]  # LocMpa: fresh local init, no stage 1
            server = None
        else:
            assert self.server_state is not None
            server = _clone_state(self.server_state)
            starts = [_clone_state(server) for _ in range(self.num_clients)]  # theta* broadcast
        out = {'stage': variant, 'server': server, 'start_states': [_clone_state(s) for s in starts],
               'clients': [], 'adj_weights': [], 'losses': [], 'best_epoch': [], 'epochs_run': []}
        for k in range(self.num_clients):
            state, adj, losses, best = self._local_client(k, variant, starts[k])
            out['clients'].append(state)
            out['adj_weights'].append(adj)
            out['losses'].append(losses)
            out['best_epoch'].append(best)
            out['epochs_run'].append(len(losses))
        self.local_states = [_clone_state(s) for s in out['clients']]
        self.local_adj_weights = [None if a is None else a.clone() for a in out['adj_weights']]
        self.local_variant = variant
        return out

    def run(self):
        """The whole pipeline of `variant`: fedmlp_rounds FedMLP rounds (not for
        LocMpa), then the local stage (not for FedMLP), then evaluate()."""
        out = {'fedmlp': [], 'local': None}
        if self.variant in FEDERATED:
            for _ in range(self.fedmlp_rounds):
                out['fedmlp'].append(self.train_round())
        out['server'] = None if self.server_state is None else _clone_state(self.server_state)
        if self.variant != 'fedmlp':
            out['local'] = self.train_local()
        out['eval'] = self.evaluate('fedmlp' if self.variant == 'fedmlp' else 'local')
        return out

    # ---- evaluation: note A.5.3 [P] (local protocol) ----
    def predict(self, k, model='local'):
        """Eval-mode logits of client k. 'fedmlp': MLP(X_i; theta_server), no
        propagation (note A.2.1 baseline); 'local': the client's final local
        model with K-step propagation on its local graph (A_check for the
        super-node variant)."""
        g = self.subgraphs[k]
        mlp = self._new_mlp()
        mlp.eval()
        with torch.no_grad():
            if model == 'fedmlp':
                mlp.load_state_dict(self.server_state)
                return mlp(g.x)[0]
            mlp.load_state_dict(self.local_states[k])
            adj = self.local_adj_weights[k]
            if adj is not None:
                lo, hi = undirected_pairs(g.edge_index, g.x.size(0))
                prop = self._sym_normalise(self._dense_from_weights(lo, hi, adj, g.x.size(0)))
            else:
                prop = self.props[k]
            return appnp_forward(mlp, g.x, prop, self.K, self.alpha, self.dropout, False)[0]

    def evaluate(self, model='local'):
        """Note A.5.3 [P]: each client's own final model on its local test (and
        val, train) nodes, local graph only. 'micro_*' = sum correct / sum |mask|
        (the reported number), 'macro_*' = mean of the per-client accuracies, in %.
        CHOICE (oracle): a client with an empty mask scores 0 in the macro mean
        and keeps its weight. The FedSage 'global test on the whole graph'
        protocol needs the global graph and is not implemented."""
        clients = []
        for k, g in enumerate(self.subgraphs):
            pred = self.predict(k, model).argmax(dim=1)
            r = {}
            for split, mask in (('train', g.train_idx), ('val', g.val_idx), ('test', g.test_idx)):
                count = int(mask.sum())
                r['correct_' + split] = _correct(pred, g.y, mask)
                r['count_' + split] = count
                r['acc_' + split] = 100.0 * r['correct_' + split] / count if count else 0.0
            clients.append(r)
        out = {'clients': clients}
        for split in ('train', 'val', 'test'):
            total = sum(c['count_' + split] for c in clients)
            out['micro_' + split] = 100.0 * sum(c['correct_' + split] for c in clients) / total if total else 0.0
            out['macro_' + split] = sum(c['acc_' + split] for c in clients) / len(clients)
        return out
