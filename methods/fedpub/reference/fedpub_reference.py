"""Line-by-line plain-PyTorch port of the authors' FED-PUB, used as a test oracle.

Upstream: https://github.com/JinheonBaek/FED-PUB at commit 302980d
(302980ded3bb2b719fd0864e29607031372a3e6d, HEAD, "update scripts and results"), files
models/layers.py (gcn_norm, MaskedGCNConv, MaksedGCNLinear, MaskedLinear), models/nets.py
(MaskedGCN), models/fedpub/client.py, models/fedpub/server.py, modules/federated.py
(ServerModule.aggregate, ClientModule.validate / validation_step / accuracy), misc/utils.py
(set_state_dict / convert_np_to_tensor, from_networkx), modules/multiprocs.py (the round loop
and client selection), parser.py + main.py:set_config (defaults). Every block names its
upstream file:line. PyG (and the networkx generator) come from methods/reference/pyg.py.

Deliberate differences from upstream (nothing else is changed):
  * CPU only, one process (upstream: one server process + worker processes on CUDA, sharing a
    Manager dict; clients' states go through checkpoint files between rounds). Each client here
    keeps its own model and its own Adam, which is what upstream's save_state/load_state give.
  * Every random draw is injectable: the server's initial MaskedGCN (`global_state`), each
    client's initial MaskedGCN (`client_states`; only its masks survive the first message), the
    proxy graph (`proxy`: x and edge_index), the clients sampled each round (`sampled_clients`)
    and the dropout keep-masks (`dropout_masks`). None draws them as upstream does (see the
    draw_* helpers); `dropout` is an argument (upstream: F.dropout's default p=0.5).
  * state dicts travel as torch tensors, not numpy arrays; the server's numpy arithmetic
    (float64 similarity, float32 weighted sums) is reproduced in torch with the same dtypes.
  * prev_w (the received weights) does not require grad: upstream makes them leaves with
    requires_grad (misc/utils.py:77) so the loc_l2 term accumulates .grad on them, which is
    never read. The model's gradients are the same.
  * Logging, checkpoints and timing are dropped; the logged values are returned instead.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Parameter
from torch.optim import Adam

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.reference.pyg import Data, gcn_norm, random_partition_graph, scatter  # noqa: E402

UPSTREAM = 'JinheonBaek/FED-PUB@302980d'

# JinheonBaek/FED-PUB@302980d parser.py:10-34 and main.py:27-39 (dataset Cora, the only one
# set_config knows). hid_dim = --n-dims, num_epochs = --n-eps, lr = base_lr. Where the parser has
# no default (n_eps, frac) the values of scripts/disjoint.sh and scripts/overlapping.sh are used.
# Those scripts also pass --laye-mask-one --clsf-mask-one (masks start at 1) and --norm-scale 3
# (disjoint) / 5 (overlapping), and --seed 42; the parser defaults are kept here.
DEFAULTS = dict(
    hid_dim=128,          # parser.py:23 --n-dims
    dropout=0.5,          # nets.py:46,50 F.dropout's default p
    lr=0.01,              # main.py:39 base_lr for Cora (main.py:27 is 1e-3 otherwise)
    weight_decay=1e-6,    # main.py:30
    num_epochs=1,         # scripts/*.sh --n-eps 1 (parser.py:21 default None)
    l1=1e-3,              # parser.py:33
    loc_l2=1e-3,          # parser.py:34
    agg_norm='exp',       # parser.py:29
    norm_scale=10.0,      # parser.py:30 (scripts: 3 disjoint, 5 overlapping)
    n_proxy=5,            # parser.py:31
    proxy_num_nodes=100,  # server.py:21 (hard-coded)
    proxy_p_in=0.1,       # server.py:22 (hard-coded; p_out=0)
    seed=1234,            # parser.py:11 (scripts: 42)
    laye_mask_one=False,  # parser.py:26 (scripts: True)
    clsf_mask_one=False,  # parser.py:27 (scripts: True)
    frac=1.0,             # scripts/*.sh --frac 1.0 (parser.py:22 default None)
)


# ---------------------------------------------------------------------------------------------
# Model: models/layers.py and models/nets.py
# ---------------------------------------------------------------------------------------------

def glorot(value):
    """torch_geometric.nn.inits.glorot (PyG 2.3.0): U(-a, a), a = sqrt(6 / (rows + cols)), one
    uniform_ draw over the tensor."""
    stdv = math.sqrt(6.0 / (value.size(-2) + value.size(-1)))
    value.data.uniform_(-stdv, stdv)


def _dropout(x, p, training, keep):
    """F.dropout(x, p, training); with `keep` (bool, x's shape) the keep-mask is injected:
    x * (keep / (1 - p)), which is ATen's CPU dropout (noise.bernoulli_(1 - p).div_(1 - p))."""
    if not training or p == 0.0:
        return x
    if keep is None:
        return F.dropout(x, p=p, training=training)
    return x * keep.to(x.dtype).div_(1 - p)


# JinheonBaek/FED-PUB@302980d models/layers.py:244-356 (class MaksedGCNLinear, sic), as built by
# MaskedGCNConv: bias=False, weight_initializer='glorot' (layers.py:151). Lazy init, deepcopy
# and the load hooks (layers.py:301-309, 359-392) are not needed and not ported.
class MaskedGCNLinear(nn.Module):
    """state_dict: weight [out, in]."""

    def __init__(self, in_channels, out_channels, l1=1e-3):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.l1 = l1
        self.weight = Parameter(torch.empty(out_channels, in_channels))  # layers.py:285
        self.register_parameter('bias', None)  # layers.py:294
        self.reset_parameters()  # layers.py:299

    def reset_parameters(self):
        glorot(self.weight)  # layers.py:314-315

    # layers.py:340-345
    def prune(self, mask):
        if self.training:
            return mask
        else:
            pruned = torch.abs(mask) < self.l1
            return mask.masked_fill(pruned, 0)

    # layers.py:348-356
    def forward(self, x, m):
        w = self.weight * self.prune(m)
        return F.linear(x, w, self.bias)


# JinheonBaek/FED-PUB@302980d models/layers.py:70-221 (MaskedGCNConv(in, out, cached=False, l1,
# args); improved=False, add_self_loops=True, normalize=True, bias=True, aggr='add').
class MaskedGCNConv(nn.Module):
    """out = scatter_sum(w_e * (x (W * mask)^T)[src_e] -> dst_e) + bias over gcn_norm'ed edges
    (one self loop per node). The mask multiplies the weight elementwise; in eval() entries with
    |mask| < l1 are zeroed first. state_dict, in upstream's order: mask [out, in], bias [out],
    lin.weight [out, in].

    Draws at construction, in this order: lin.weight glorot (layers.py:151 -> 299, THROWN AWAY),
    mask xavier_uniform_ only when not mask_one_init (layers.py:155-156), lin.weight glorot
    again (reset_parameters, layers.py:164 -> 167); the bias is zeroed (layers.py:168)."""

    def __init__(self, in_channels, out_channels, l1=1e-3, mask_one_init=False):
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.l1 = l1
        self.mask_one_init = mask_one_init  # layers.py:145 args.laye_mask_one
        # layers.py:151-156
        self.lin = MaskedGCNLinear(in_channels, out_channels, l1=l1)
        self.d_o, self.d_i = self.lin.weight.size()
        self.mask = Parameter(torch.ones((self.d_o, self.d_i), dtype=torch.float32))
        if not self.mask_one_init:
            torch.nn.init.xavier_uniform_(self.mask)
        # layers.py:159-160
        self.bias = Parameter(torch.empty(out_channels))
        self.reset_parameters()  # layers.py:164

    def reset_parameters(self):
        # layers.py:166-170
        self.lin.reset_parameters()
        self.bias.data.fill_(0)  # torch_geometric.nn.inits.zeros

    def forward(self, x, edge_index, edge_weight=None):
        # layers.py:179-189 -> gcn_norm (layers.py:33-68, the Tensor branch, identical to PyG's):
        # add_remaining_self_loops with fill 1, deg over the target index, deg^-1/2 w deg^-1/2.
        edge_index, edge_weight = gcn_norm(edge_index, edge_weight, x.size(0))
        # layers.py:203-204
        curr_mask = self.mask
        x = self.lin(x, curr_mask)
        # layers.py:208-209, message (layers.py:217-218) and aggr='add': source -> target.
        out = scatter(edge_weight.view(-1, 1) * x[edge_index[0]], edge_index[1], 0, x.size(0), 'sum')
        # layers.py:211-212
        if self.bias is not None:
            out = out + self.bias
        return out


# JinheonBaek/FED-PUB@302980d models/layers.py:398-429
class MaskedLinear(nn.Module):
    """F.linear(x, W * mask, b) (mask pruned at |mask| < l1 in eval()). state_dict, in order:
    weight [out, in], mask [out, in], bias [1, out] (2-D!). Draws at construction, in order:
    weight xavier_uniform_, mask xavier_uniform_ only when not mask_one_init, bias
    xavier_uniform_ (fan_in = out, fan_out = 1: the bias is NOT zero)."""

    def __init__(self, d_i, d_o, l1=1e-3, mask_one_init=False):
        super().__init__()
        self.d_i = d_i
        self.d_o = d_o
        self.l1 = l1
        self.mask_one_init = mask_one_init  # layers.py:404 args.clsf_mask_one
        self.weight = Parameter(torch.empty((self.d_o, self.d_i), dtype=torch.float32))
        torch.nn.init.xavier_uniform_(self.weight)
        self.mask = Parameter(torch.ones((self.d_o, self.d_i), dtype=torch.float32))
        if not self.mask_one_init:
            torch.nn.init.xavier_uniform_(self.mask)
        self.bias = Parameter(torch.zeros((1, self.d_o), dtype=torch.float32))
        torch.nn.init.xavier_uniform_(self.bias)

    # layers.py:419-424
    def prune(self, mask):
        if self.training:
            return mask
        else:
            pruned = torch.abs(mask) < self.l1
            return mask.masked_fill(pruned, 0)

    # layers.py:426-429
    def forward(self, input):
        curr_mask = self.mask
        weight = self.weight * self.prune(curr_mask)
        return F.linear(input, weight, self.bias)


# JinheonBaek/FED-PUB@302980d models/nets.py:30-52
class MaskedGCN(nn.Module):
    """conv1 = MaskedGCNConv(F, hid), conv2 = MaskedGCNConv(hid, hid), clsif = MaskedLinear(hid, C).
    forward: relu(conv1) -> dropout -> conv2 -> [is_proxy: return] -> relu -> dropout -> clsif.
    state_dict keys, in order: conv1.mask, conv1.bias, conv1.lin.weight, conv2.mask, conv2.bias,
    conv2.lin.weight, clsif.weight, clsif.mask, clsif.bias."""

    def __init__(self, n_feat=10, n_dims=128, n_clss=10, l1=1e-3, laye_mask_one=False, clsf_mask_one=False,
                 dropout=0.5):
        super().__init__()
        self.n_feat = n_feat
        self.n_dims = n_dims
        self.n_clss = n_clss
        self.dropout = dropout
        # nets.py:39-41 (args.laye_mask_one / args.clsf_mask_one reach the layers through args)
        self.conv1 = MaskedGCNConv(self.n_feat, self.n_dims, l1=l1, mask_one_init=laye_mask_one)
        self.conv2 = MaskedGCNConv(self.n_dims, self.n_dims, l1=l1, mask_one_init=laye_mask_one)
        self.clsif = MaskedLinear(self.n_dims, self.n_clss, l1=l1, mask_one_init=clsf_mask_one)

    def forward(self, data, is_proxy=False, dropout_keep=None):
        """dropout_keep: None (F.dropout, global RNG) or the two keep-masks (bool [n, hid]) of the
        dropouts after relu(conv1) and after relu(conv2), in that order. Only used in train()."""
        keep1, keep2 = dropout_keep if dropout_keep is not None else (None, None)
        # nets.py:44-52
        x, edge_index, edge_weight = data.x, data.edge_index, getattr(data, 'edge_attr', None)
        x = F.relu(self.conv1(x, edge_index, edge_weight))
        x = _dropout(x, self.dropout, self.training, keep1)
        x = self.conv2(x, edge_index, edge_weight)
        if is_proxy == True:  # noqa: E712 (as upstream)
            return x
        x = F.relu(x)
        x = _dropout(x, self.dropout, self.training, keep2)
        x = self.clsif(x)
        return x


def _clone_state(module_or_state):
    state = module_or_state.state_dict() if isinstance(module_or_state, nn.Module) else module_or_state
    return {k: v.detach().clone() for k, v in state.items()}


# JinheonBaek/FED-PUB@302980d misc/utils.py:55-78 (set_state_dict -> convert_np_to_tensor)
def set_state_dict(model, state_dict, skip_stat=False, skip_mask=False):
    """Loads `state_dict` into `model`, except that with skip_mask every key containing 'mask',
    'pre' or 'pos' keeps the model's own value (and with skip_stat every 'running'/'tracked')."""
    model_sd = model.state_dict()
    _state_dict = {}
    for k, v in state_dict.items():
        if skip_stat:
            if 'running' in k or 'tracked' in k:
                _state_dict[k] = model_sd[k]
                continue
        if skip_mask:
            if 'mask' in k or 'pre' in k or 'pos' in k:
                _state_dict[k] = model_sd[k]
                continue
        _state_dict[k] = v.detach().clone()
    model.load_state_dict(_state_dict)


# ---------------------------------------------------------------------------------------------
# Draws (upstream order), for standalone use
# ---------------------------------------------------------------------------------------------

def draw_masked_gcn_state(n_feat, n_dims, n_clss, laye_mask_one=False, clsf_mask_one=False):
    """A MaskedGCN's initial state_dict drawn from torch's global RNG exactly as upstream's
    constructor draws it (nets.py:39-41): conv1 [lin.weight (discarded), mask?, lin.weight],
    conv2 [the same], clsif [weight, mask?, bias]; `mask?` only when the *_mask_one flag is False."""
    return _clone_state(MaskedGCN(n_feat, n_dims, n_clss, 1e-3, laye_mask_one, clsf_mask_one))


# JinheonBaek/FED-PUB@302980d misc/utils.py:86-167 (from_networkx), for a graph without edge
# attributes: the ports of nodes' attributes other than 'block' and of graph attributes
# ('partition', 'name', kept as Python objects upstream) are dropped; they are never read.
def from_networkx(G):
    """edge_index [2, 2E] int64: G.to_directed().edges() relabelled by node position
    (misc/utils.py:90-96), plus the node attribute `block` as a tensor (utils.py:110-136)."""
    nodes = list(G.nodes)
    mapping = dict(zip(nodes, range(len(nodes))))
    edges = G.to_directed_edges()
    edge_index = torch.empty((2, len(edges)), dtype=torch.long)
    for i, (src, dst) in enumerate(edges):
        edge_index[0, i] = mapping[src]
        edge_index[1, i] = mapping[dst]
    data = Data(x=None, edge_index=edge_index.view(2, -1))
    if nodes and 'block' in G.nodes[nodes[0]]:
        data.block = torch.tensor([G.nodes[n]['block'] for n in nodes])
    return data


# JinheonBaek/FED-PUB@302980d models/fedpub/server.py:18-24
def draw_proxy(n_feat, n_proxy=5, num_nodes=100, p_in=0.1, seed=1234):
    """The server's proxy graph: networkx.random_partition_graph([100] * n_proxy, p_in=0.1,
    p_out=0, seed=args.seed) (Python's random.Random(seed): the EDGES do not depend on torch),
    through from_networkx, then x = torch.normal(0, 1, (100 * n_proxy, n_feat)) from torch's
    global RNG. Returns Data(x [N, F] float32, edge_index [2, 2E] int64, block [N])."""
    data = from_networkx(random_partition_graph([num_nodes] * n_proxy, p_in=p_in, p_out=0, seed=seed))
    data.x = torch.normal(mean=0, std=1, size=(num_nodes * n_proxy, n_feat))
    return data


def draw_initial_states(num_clients, n_feat, n_clss, hid_dim=128, laye_mask_one=False, clsf_mask_one=False,
                        n_proxy=5, proxy_num_nodes=100, proxy_p_in=0.1, seed=1234):
    """What upstream draws before round 0, in its order (modules/multiprocs.py:19-22): the
    workers are forked BEFORE the server is built, so each worker's MaskedGCN is drawn from the
    same torch RNG state as the server's, i.e. every client's initial state (masks included)
    equals the server's; then the server draws its MaskedGCN (server.py:13) and the proxy
    features (server.py:14 -> 23). Returns (global_state, client_states, proxy)."""
    global_state = draw_masked_gcn_state(n_feat, hid_dim, n_clss, laye_mask_one, clsf_mask_one)
    proxy = draw_proxy(n_feat, n_proxy, proxy_num_nodes, proxy_p_in, seed)
    return global_state, [_clone_state(global_state) for _ in range(num_clients)], proxy


def draw_selected_clients(n_clients, frac=1.0, seed=1234, curr_rnd=0):
    """modules/multiprocs.py:43-48: np.random.seed(seed + curr_rnd); np.random.choice(n_clients,
    round(n_clients * frac), replace=False).tolist(); the clients are dispatched in this order."""
    n_connected = round(n_clients * frac)
    return np.random.RandomState(seed + curr_rnd).choice(n_clients, n_connected, replace=False).tolist()


def draw_dropout_masks(subgraphs, clients, num_epochs, hid_dim, dropout):
    """Keep-masks as ATen's CPU dropout draws them (bernoulli_(1 - p) over [n, hid]): for each
    client in `clients` order, each epoch, the dropout after conv1 then the one after conv2.
    (Upstream ran on CUDA, whose dropout RNG cannot be reproduced here.)"""
    out = {}
    for cid in clients:
        n = subgraphs[cid].x.size(0)
        out[cid] = [tuple(torch.empty(n, hid_dim).bernoulli_(1 - dropout).bool() for _ in range(2))
                    for _ in range(num_epochs)]
    return out


# ---------------------------------------------------------------------------------------------
# Losses and server arithmetic
# ---------------------------------------------------------------------------------------------

def sparsity_terms(model, prev_w, curr_rnd, l1, loc_l2):
    """The terms models/fedpub/client.py:93-98 adds to the CE, in its order, as a list of
    (name, kind, 0-d tensor): 'l1' = ||mask||_1 * l1 for every key containing 'mask';
    'loc_l2' = ||param - prev_w||_2 * loc_l2 (the L2 norm of the flattened difference, NOT
    squared) for every other key containing 'conv' or 'clsif', skipped in round 0.
    The tensors come from model.state_dict(), which DETACHES them: neither term has a gradient."""
    terms = []
    for name, param in model.state_dict().items():
        if 'mask' in name:
            terms.append((name, 'l1', torch.norm(param.float(), 1) * l1))
        elif 'conv' in name or 'clsif' in name:
            if curr_rnd == 0:
                continue
            terms.append((name, 'loc_l2', torch.norm(param.float() - prev_w[name], 2) * loc_l2))
    return terms


def scipy_cosine_similarity(u, v):
    """1 - scipy.spatial.distance.cosine(u, v) as server.py:52 computes it on the float32 numpy
    embeddings: uv, uu, vv = float32 dot products; q = uv / sqrt(uu * vv) in float32; the distance
    1.0 - q is float64 and clipped to [0, 2] (current scipy's correlation(centered=False);
    older scipy took np.average and abs(), which differs only by float32 rounding of q).
    Returns a Python float (float64)."""
    u = u.float()
    v = v.float()
    uv = torch.dot(u, v)
    uu = torch.dot(u, u)
    vv = torch.dot(v, v)
    q = (uv / torch.sqrt(uu * vv)).item()
    dist = min(max(1.0 - q, 0.0), 2.0)
    return 1 - dist


def similarity_weights(embeddings, agg_norm='exp', norm_scale=10.0):
    """models/fedpub/server.py:47-58: sim[i, j] = 1 - cosine(e_i, e_j) (float64, diagonal
    included); with agg_norm 'exp', W = exp(norm_scale * sim); then every row is divided by its
    sum. Returns (sim, W), both [K, K] float64."""
    n_connected = len(embeddings)
    sim_matrix = torch.empty((n_connected, n_connected), dtype=torch.float64)
    for i in range(n_connected):
        for j in range(n_connected):
            sim_matrix[i, j] = scipy_cosine_similarity(embeddings[i], embeddings[j])
    sim = sim_matrix.clone()
    if agg_norm == 'exp':
        sim_matrix = torch.exp(norm_scale * sim_matrix)
    row_sums = sim_matrix.sum(dim=1)
    sim_matrix = sim_matrix / row_sums[:, None]
    return sim, sim_matrix


# JinheonBaek/FED-PUB@302980d modules/federated.py:20-29 (ServerModule.aggregate)
def aggregate(local_weights, ratio=None):
    """{key: sum_j theta_j[key] * ratio[j]} over EVERY key (masks included). numpy 1.x: the
    float32 array times a float64 (or Python float) scalar is float32, i.e. the weight is rounded
    to float32 first; np.sum(list, 0) adds the products in client order. ratio None: 1/K each."""
    if ratio is None:
        ratio = [1 / len(local_weights)] * len(local_weights)
    aggr_theta = {}
    for name in local_weights[0].keys():
        acc = None
        for j, theta in enumerate(local_weights):
            term = theta[name] * torch.tensor(float(ratio[j]), dtype=torch.float64).to(theta[name].dtype)
            acc = term if acc is None else acc + term
        aggr_theta[name] = acc
    return aggr_theta


# ---------------------------------------------------------------------------------------------
# Client and server
# ---------------------------------------------------------------------------------------------

class Client:
    """models/fedpub/client.py + modules/federated.py:ClientModule for one client."""

    def __init__(self, client_id, data, model, num_classes, lr, weight_decay, num_epochs, l1, loc_l2):
        self.client_id = client_id
        self.data = data
        self.model = model  # client.py:13
        self.parameters = list(self.model.parameters())  # client.py:14
        self.n_clss = num_classes
        self.lr, self.weight_decay, self.n_eps, self.l1, self.loc_l2 = lr, weight_decay, num_epochs, l1, loc_l2
        self.optimizer = None

    def init_state(self):
        # client.py:16-17: a fresh Adam the first time the client is served (federated.py:45-49);
        # afterwards its state is saved and loaded with the client (client.py:27-38).
        self.optimizer = Adam(self.parameters, lr=self.lr, weight_decay=self.weight_decay)

    def on_receive_message(self, curr_rnd, message):
        # client.py:40-44 (message: sd['personalized_<id>'] if present, else sd['global'];
        # global_w, client.py:44, is never read)
        self.curr_rnd = curr_rnd
        self.update(message)

    def update(self, update):
        # client.py:46-48: every weight and bias is replaced; the client's masks are kept.
        self.prev_w = {k: v.detach().clone() for k, v in update.items()}
        set_state_dict(self.model, update, skip_stat=True, skip_mask=True)

    def get_sparsity(self):
        # client.py:54-64 (n_total starts at 1, as upstream)
        n_active, n_total = 0, 1
        for mask in self.masks:
            pruned = torch.abs(mask) < self.l1
            mask = torch.ones(mask.shape).masked_fill(pruned, 0)
            n_active += torch.sum(mask)
            _n_total = 1
            for s in mask.shape:
                _n_total *= s
            n_total += _n_total
        return ((n_total - n_active) / n_total).item()

    @torch.no_grad()
    def validation_step(self, mask):
        # federated.py:82-88
        self.model.eval()
        y_hat = self.model(self.data)
        if torch.sum(mask).item() == 0:
            return y_hat, 0.0
        lss = F.cross_entropy(y_hat[mask], self.data.y[mask])
        return y_hat, lss.item()

    @torch.no_grad()
    def accuracy(self, preds, targets):
        # federated.py:90-96
        if targets.size(0) == 0:
            return 1.0
        preds = preds.max(1)[1]
        return preds.eq(targets).sum().item() / targets.size(0)

    @torch.no_grad()
    def validate(self, mode='test'):
        # federated.py:66-80 (one batch: the whole subgraph)
        mask = self.data.test_idx if mode == 'test' else self.data.val_idx
        y_hat, lss = self.validation_step(mask)
        acc = self.accuracy(y_hat[mask].view(-1, self.n_clss), self.data.y[mask].view(-1))
        return acc, float(np.mean([lss]))

    def train(self, dropout_masks=None):
        """client.py:66-122. Returns the log: val/test acc and loss before training (index 0) and
        after each epoch, and per epoch the loss (CE + the detached terms), its CE part, its l1
        and loc_l2 parts (float64 sums, for information) and the sparsity."""
        log = {'val_acc': [], 'val_loss': [], 'test_acc': [], 'test_loss': [], 'train_loss': [], 'train_ce': [],
               'l1_term': [], 'loc_l2_term': [], 'sparsity': []}

        def log_eval():
            val_acc, val_lss = self.validate(mode='valid')
            test_acc, test_lss = self.validate(mode='test')
            log['val_acc'].append(val_acc)
            log['val_loss'].append(val_lss)
            log['test_acc'].append(test_acc)
            log['test_loss'].append(test_lss)

        log_eval()  # client.py:68-77

        # client.py:79-81: state_dict() tensors share storage with the parameters, so they
        # follow the optimizer's in-place updates.
        self.masks = []
        for name, param in self.model.state_dict().items():
            if 'mask' in name:
                self.masks.append(param)

        data = self.data
        for ep in range(self.n_eps):  # client.py:83
            self.model.train()
            # client.py:86-102 (pa_loader yields the one subgraph)
            self.optimizer.zero_grad()
            y_hat = self.model(data, dropout_keep=None if dropout_masks is None else dropout_masks[ep])
            train_lss = F.cross_entropy(y_hat[data.train_idx], data.y[data.train_idx])
            log['train_ce'].append(train_lss.item())
            terms = sparsity_terms(self.model, self.prev_w, self.curr_rnd, self.l1, self.loc_l2)
            for _, _, term in terms:
                train_lss += term
            log['l1_term'].append(sum(t.item() for _, kind, t in terms if kind == 'l1'))
            log['loc_l2_term'].append(sum(t.item() for _, kind, t in terms if kind == 'loc_l2'))
            train_lss.backward()
            self.optimizer.step()

            log['sparsity'].append(self.get_sparsity())  # client.py:104
            log_eval()  # client.py:105-106
            log['train_loss'].append(train_lss.item())  # client.py:111
        return log

    @torch.no_grad()
    def get_functional_embedding(self, proxy):
        # client.py:124-133: eval mode (masks pruned, no dropout), conv2's output (no relu) on
        # the proxy graph, averaged over its nodes: [hid] float32.
        self.model.eval()
        proxy_out = self.model(proxy, is_proxy=True)
        proxy_out = proxy_out.mean(dim=0)
        return proxy_out.clone().detach()

    def transfer_to_server(self, proxy):
        # client.py:135-140. train_size = len(self.loader.partition), the LIST holding the one
        # partition Data (data/loader.py:15, 19-25), so it is always 1.
        return {
            'model': _clone_state(self.model),
            'train_size': 1,
            'functional_embedding': self.get_functional_embedding(proxy),
        }


class FedPubReference:
    """The authors' FED-PUB, one round per train_round() (modules/multiprocs.py:44-66).

    subgraphs: objects with x [n, F] float32, edge_index [2, E] int64 (both directions), y [n]
    int64, train_idx / val_idx / test_idx bool [n]. global_state: the server MaskedGCN's initial
    state_dict; client_states: each client's initial MaskedGCN state (default: copies of
    global_state, as upstream's fork gives); proxy: Data with x [n_proxy * 100, F] and
    edge_index. Whatever is None is drawn with draw_initial_states (torch's global RNG, Python's
    random for the proxy edges). personalized_states {cid: state} and first_round resume a
    federation (upstream keeps sd['personalized_<id>'] across rounds).
    """

    def __init__(self, subgraphs, num_classes, global_state=None, client_states=None, proxy=None,
                 hid_dim=128, dropout=0.5, lr=0.01, weight_decay=1e-6, num_epochs=1, l1=1e-3, loc_l2=1e-3,
                 agg_norm='exp', norm_scale=10.0, n_proxy=5, proxy_num_nodes=100, proxy_p_in=0.1, seed=1234,
                 laye_mask_one=False, clsf_mask_one=False, frac=1.0, first_round=0, personalized_states=None):
        self.subgraphs = subgraphs
        self.num_classes = num_classes
        self.num_clients = len(subgraphs)
        n_feat = subgraphs[0].x.shape[1]
        self.hid_dim, self.dropout, self.num_epochs = hid_dim, dropout, num_epochs
        self.agg_norm, self.norm_scale, self.seed, self.frac = agg_norm, norm_scale, seed, frac

        # Upstream order (multiprocs.py:19-22): workers' models, server model (server.py:13),
        # proxy (server.py:14).
        if global_state is None:
            global_state = draw_masked_gcn_state(n_feat, hid_dim, num_classes, laye_mask_one, clsf_mask_one)
        if proxy is None:
            proxy = draw_proxy(n_feat, n_proxy, proxy_num_nodes, proxy_p_in, seed)
        if client_states is None:
            client_states = [global_state] * self.num_clients
        self.proxy = proxy

        def new_model(state):
            m = MaskedGCN(n_feat, hid_dim, num_classes, l1, laye_mask_one, clsf_mask_one, dropout)
            m.load_state_dict(state)
            return m

        # server.py:11-16
        self.server_model = new_model(global_state)
        self.clients = [Client(cid, subgraphs[cid], new_model(client_states[cid]), num_classes, lr, weight_decay,
                               num_epochs, l1, loc_l2) for cid in range(self.num_clients)]
        self.personalized = {cid: _clone_state(s) for cid, s in (personalized_states or {}).items()}
        self.round = first_round
        self.sim_matrices = []
        self.update_lists = []

    def train_round(self, sampled_clients=None, dropout_masks=None):
        """One upstream round. sampled_clients: dispatch order (default all, range order; upstream
        draws a permutation with draw_selected_clients). dropout_masks: {cid: per epoch (keep1,
        keep2) bool [n, hid]} or None (F.dropout from the global RNG when dropout > 0).

        Returns copies: round, sampled_clients, order (the server's row order = iteration order
        of upstream's `updated` set), global_message (sd['global']: the server model at round
        begin), received {cid: the state the client loaded from}, uploads {cid: {'model',
        'train_size' (1), 'functional_embedding' [hid]}}, local {cid: state after the round, every
        client}, similarity [K, K] float64 (1 - cosine), weights [K, K] float64 (normalised),
        personalized {cid: the state sent next round}, global (the server model after the
        update), losses {cid: Client.train's log}."""
        curr_rnd = self.round
        selected = list(range(self.num_clients)) if sampled_clients is None else list(sampled_clients)
        out = {'round': curr_rnd, 'sampled_clients': list(selected)}

        # server.py:26-29
        global_message = _clone_state(self.server_model)
        out['global_message'] = _clone_state(global_message)

        # multiprocs.py:53-61 and 102-111: each dispatched client is switched in, receives,
        # trains and uploads.
        updated = set()
        uploads, received, losses = {}, {}, {}
        for c_id in selected:
            client = self.clients[c_id]
            if client.optimizer is None:
                client.init_state()
            message = self.personalized[c_id] if c_id in self.personalized else global_message
            received[c_id] = _clone_state(message)
            client.on_receive_message(curr_rnd, message)
            losses[c_id] = client.train(None if dropout_masks is None else dropout_masks[c_id])
            uploads[c_id] = client.transfer_to_server(self.proxy)
            updated.add(c_id)
        out['received'] = received
        out['uploads'] = {c: {'model': _clone_state(u['model']), 'train_size': u['train_size'],
                              'functional_embedding': u['functional_embedding'].clone()} for c, u in uploads.items()}
        out['losses'] = losses

        # server.py:35-72
        local_weights, local_functional_embeddings, local_train_sizes = [], [], []
        order = list(updated)
        for c_id in order:
            local_weights.append(uploads[c_id]['model'])
            local_functional_embeddings.append(uploads[c_id]['functional_embedding'])
            local_train_sizes.append(uploads[c_id]['train_size'])
        n_connected = round(self.num_clients * self.frac)
        if sampled_clients is None:
            assert n_connected == len(local_functional_embeddings)  # server.py:47-48
        sim, sim_matrix = similarity_weights(local_functional_embeddings, self.agg_norm, self.norm_scale)

        # server.py:61-62: global model = train_size-weighted mean, train_size = 1 -> uniform.
        ratio = (np.array(local_train_sizes) / np.sum(local_train_sizes)).tolist()
        self.server_model.load_state_dict(aggregate(local_weights, ratio))

        # server.py:65-69
        for i, c_id in enumerate(order):
            self.personalized[c_id] = aggregate(local_weights, sim_matrix[i, :].tolist())
        self.update_lists.append(order)
        self.sim_matrices.append(sim_matrix.clone())

        out['order'] = order
        out['similarity'] = sim
        out['weights'] = sim_matrix
        out['personalized'] = {c: _clone_state(self.personalized[c]) for c in order}
        out['global'] = _clone_state(self.server_model)
        out['local'] = {cid: _clone_state(c.model) for cid, c in enumerate(self.clients)}
        self.round += 1
        return out
