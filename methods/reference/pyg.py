"""The few PyTorch Geometric (PyG 2.x) primitives the reference ports need.

PyG is not installed where the oracles run, so these are plain-PyTorch
re-implementations of exactly the PyG behaviour the authors' code relies on.
Each function names the PyG function it mirrors. Only the single-graph,
edge_index-as-Tensor, flow='source_to_target' paths are covered.

networkx is not installed either: `NxGraph` and `random_partition_graph` at the
end re-implement the networkx graph generator that FED-PUB's server feeds to
(its own copy of) PyG's `from_networkx`.
"""
import itertools
import math
import random
import warnings

import torch
from torch import nn


class Data:
    """torch_geometric.data.Data: a bag of attributes (x, edge_index, ...)."""

    def __init__(self, x=None, edge_index=None, **kwargs):
        self.x = x
        self.edge_index = edge_index
        for key, value in kwargs.items():
            setattr(self, key, value)

    @property
    def num_nodes(self):
        return self.x.size(0)


def _num_nodes(edge_index, num_nodes):
    # torch_geometric.utils.num_nodes.maybe_num_nodes
    if num_nodes is not None:
        return num_nodes
    return int(edge_index.max()) + 1 if edge_index.numel() > 0 else 0


def add_self_loops(edge_index, edge_attr=None, fill_value=None, num_nodes=None):
    """torch_geometric.utils.add_self_loops: appends the loops (i, i) for
    i = 0..N-1 after the existing edges (existing loops are kept, so a node may
    end up with two). New loop attributes are fill_value (default 1)."""
    n = _num_nodes(edge_index, num_nodes)
    loop = torch.arange(n, dtype=torch.long, device=edge_index.device)
    edge_index = torch.cat([edge_index, torch.stack([loop, loop])], dim=1)
    if edge_attr is not None:
        fill = 1.0 if fill_value is None else fill_value
        loop_attr = edge_attr.new_full((n,) + tuple(edge_attr.shape[1:]), fill)
        edge_attr = torch.cat([edge_attr, loop_attr], dim=0)
    return edge_index, edge_attr


def add_remaining_self_loops(edge_index, edge_attr=None, fill_value=None, num_nodes=None):
    """torch_geometric.utils.add_remaining_self_loops: drops every existing loop
    and appends exactly one loop per node, in node order, after the remaining
    edges. A node's loop keeps the attribute of its existing loop if it had one
    (the last one written wins for duplicates), else fill_value (default 1)."""
    n = _num_nodes(edge_index, num_nodes)
    row, col = edge_index[0], edge_index[1]
    mask = row != col
    loop = torch.arange(n, dtype=torch.long, device=edge_index.device)
    new_index = torch.cat([edge_index[:, mask], torch.stack([loop, loop])], dim=1)
    if edge_attr is None:
        return new_index, None
    fill = 1.0 if fill_value is None else fill_value
    loop_attr = edge_attr.new_full((n,) + tuple(edge_attr.shape[1:]), fill)
    inv = ~mask
    loop_attr[row[inv]] = edge_attr[inv]
    return new_index, torch.cat([edge_attr[mask], loop_attr], dim=0)


def scatter(src, index, dim=0, dim_size=None, reduce='sum'):
    """torch_geometric.utils.scatter (torch_scatter semantics): reduces the
    slices of src along dim into dim_size buckets given by index. Empty buckets
    are 0 for every reduction (also 'max'); 'mean' divides by max(count, 1)."""
    if dim < 0:
        dim += src.dim()
    if dim_size is None:
        dim_size = int(index.max()) + 1 if index.numel() > 0 else 0
    shape = [1] * src.dim()
    shape[dim] = -1
    index = index.view(shape).expand_as(src)
    out_shape = list(src.shape)
    out_shape[dim] = dim_size
    out = src.new_zeros(out_shape)
    if reduce in ('sum', 'add'):
        return out.scatter_add_(dim, index, src)
    if reduce == 'mean':
        out.scatter_add_(dim, index, src)
        count = src.new_zeros(out_shape).scatter_add_(dim, index, torch.ones_like(src))
        return out / count.clamp(min=1)
    if reduce == 'max':
        with warnings.catch_warnings():  # scatter_reduce is "beta" in torch 1.13
            warnings.simplefilter('ignore')
            return out.scatter_reduce_(dim, index, src, 'amax', include_self=False)
    raise ValueError(reduce)


def gcn_norm(edge_index, edge_weight=None, num_nodes=None, add_self_loops=True):
    """torch_geometric.nn.conv.gcn_conv.gcn_norm (improved=False): edge weights
    default to 1; add_remaining_self_loops with fill 1; deg = sum of weights
    over the target index col = edge_index[1]; weight = deg^-1/2[row] * w *
    deg^-1/2[col], with inf (deg 0) replaced by 0."""
    n = _num_nodes(edge_index, num_nodes)
    if edge_weight is None:
        edge_weight = torch.ones(edge_index.size(1), device=edge_index.device)
    if add_self_loops:
        edge_index, edge_weight = add_remaining_self_loops(edge_index, edge_weight, 1.0, n)
    row, col = edge_index[0], edge_index[1]
    deg = scatter(edge_weight, col, 0, n, 'sum')
    deg_inv_sqrt = deg.pow(-0.5)
    deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float('inf'), 0)
    return edge_index, deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]


def softmax(src, index, num_nodes=None, dim=0):
    """torch_geometric.utils.softmax(src, index, num_nodes=N, dim=0) (PyG 2.x, the `index` path):
    softmax of the entries of src that share the same index (e.g. the attention logits of the
    edges entering the same target node). Per group: subtract the group max (of src.detach()),
    exp, divide by (group sum + 1e-16). src may carry trailing dims (e.g. [E, heads]); every
    trailing column is normalised independently. DGL's edge_softmax is the same without the
    1e-16 (which cannot change a float32/float64 sum >= 1)."""
    n = _num_nodes(index, num_nodes)
    src_max = scatter(src.detach(), index, dim, n, 'max')
    out = (src - src_max.index_select(dim, index)).exp()
    out_sum = scatter(out, index, dim, n, 'sum') + 1e-16
    return out / out_sum.index_select(dim, index)


class GCNConv(nn.Module):
    """torch_geometric.nn.GCNConv(in, out) with defaults (cached=False,
    normalize=True, bias=True): x' = scatter_sum(w_e * (x W^T)[src_e] -> dst_e)
    + b over gcn_norm'ed edges. state_dict: 'lin.weight' [out, in] (glorot),
    'bias' [out] (zeros), as PyG's."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.empty(out_channels))
        nn.init.xavier_uniform_(self.lin.weight)  # PyG 'glorot' = U(+-sqrt(6/(in+out)))
        nn.init.zeros_(self.bias)

    def forward(self, x, edge_index):
        x = self.lin(x)  # PyG applies the linear map before propagation
        edge_index, w = gcn_norm(edge_index, None, x.size(0))
        out = scatter(w.view(-1, 1) * x[edge_index[0]], edge_index[1], 0, x.size(0), 'sum')
        return out + self.bias


class SAGEConv(nn.Module):
    """torch_geometric.nn.SAGEConv(in, out) with its defaults (aggr='mean', normalize=False,
    root_weight=True, bias=True; PyG 2.0-2.x): out_i = lin_l(mean_{e: j -> i} x_j) + lin_r(x_i),
    messages along edge_index[0] -> edge_index[1]. Every stored edge counts, a duplicate once per
    copy; a node without incoming edges has mean 0, so it gets lin_l.bias + lin_r(x_i).
    state_dict: 'lin_l.weight' [out, in], 'lin_l.bias' [out], 'lin_r.weight' [out, in] (no
    bias), as PyG's. Init: PyG's Linear default (U(+-1/sqrt(in)) for weight and bias, as
    nn.Linear)."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin_l = nn.Linear(in_channels, out_channels, bias=True)
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index):
        out = scatter(x[edge_index[0]], edge_index[1], 0, x.size(0), 'mean')
        out = self.lin_l(out)
        return out + self.lin_r(x)


def to_csc(edge_index, num_nodes):
    """torch_geometric.loader.utils.to_csc, edge_index path (PyG 2.0-2.2): perm =
    argsort(col * N + row), row = row[perm], colptr = ind2ptr(col[perm], N). So the incoming
    neighbours of node w are row[colptr[w]:colptr[w + 1]], in ASCENDING source id, a duplicated
    edge appearing once per copy. Returns (colptr [N + 1], row [E], perm [E])."""
    row, col = edge_index[0], edge_index[1]
    perm = (col * num_nodes + row).argsort()  # equal keys are equal (row, col): order irrelevant
    row = row[perm]
    colptr = torch.zeros(num_nodes + 1, dtype=torch.long)
    colptr[1:] = torch.cumsum(torch.bincount(col, minlength=num_nodes), 0)
    return colptr, row, perm


def neighbor_sample(colptr, row, input_nodes, num_neighbors, sampled=None, generator=None):
    """torch_sparse.neighbor_sample(colptr, row, input_node, num_neighbors, replace=True,
    directed=True): the CPU sampler (torch_sparse 0.6.x, csrc/cpu/neighbor_sample_cpu.cpp) that
    PyG 2.0/2.1's NeighborLoader calls. Only replace=True, directed=True is ported.

    samples = the input nodes (local ids 0..b-1); then for hop ell = 0, 1, ...: for every node
    added by the previous hop (hop 0: the input nodes), in order, that has k >= 1 incoming
    neighbours (nodes with none are skipped and draw nothing), draw num_neighbors[ell] times
    `row[colptr[w] + randint(k)]` (with replacement); a drawn node not yet in samples is appended
    (DEDUPLICATED over the whole batch: a node gets one local id and is expanded at most once, at
    the hop after the one that added it; input nodes are expanded only at hop 0); every draw
    adds the edge (local id of the drawn node -> local id of w), duplicates included.

    sampled (not in torch_sparse): injected draws, one LongTensor [k_ell, num_neighbors[ell]] per
    hop holding the drawn GLOBAL node ids of the k_ell expanded nodes in the order above; each
    must be an incoming neighbour of its node (ValueError otherwise). When None, each draw is
    `torch.randint(k, (1,), generator=generator)` (torch_sparse 0.6.13-0.6.15 used C rand(),
    later versions torch's generator; the oracle only needs the distribution).

    Returns (node [n] global ids by local id, row [e] local sources, col [e] local targets in draw
    order, sampled (the draws as above, one [k_ell, fanout] tensor per hop), expanded (one
    LongTensor [k_ell] per hop: the global ids of the nodes that drew))."""
    colptr_l = colptr.tolist()
    row_l = row.tolist()
    samples = [int(v) for v in input_nodes.tolist()]
    to_local = {}
    for i, v in enumerate(samples):
        to_local.setdefault(v, i)
    rows, cols, out_sampled, out_expanded = [], [], [], []
    begin, end = 0, len(samples)
    for ell, fanout in enumerate(num_neighbors):
        given = None if sampled is None else sampled[ell].tolist()
        hop_draws, hop_nodes = [], []
        for i in range(begin, end):
            w = samples[i]
            start, stop = colptr_l[w], colptr_l[w + 1]
            count = stop - start
            if count == 0:
                continue
            if given is None:
                picks = [row_l[start + int(torch.randint(count, (1,), generator=generator))]
                         for _ in range(fanout)]
            else:
                if len(hop_draws) >= len(given):
                    raise ValueError(f'hop {ell}: too few rows of injected draws ({len(given)})')
                picks = [int(v) for v in given[len(hop_draws)]]
                allowed = set(row_l[start:stop])
                if len(picks) != fanout or any(v not in allowed for v in picks):
                    raise ValueError(f'hop {ell}: {picks} are not {fanout} in-neighbours of node {w}')
            for v in picks:
                if v not in to_local:
                    to_local[v] = len(samples)
                    samples.append(v)
                cols.append(i)
                rows.append(to_local[v])
            hop_draws.append(picks)
            hop_nodes.append(w)
        if given is not None and len(given) != len(hop_draws):
            raise ValueError(f'hop {ell}: {len(given)} rows of injected draws, {len(hop_draws)} expected')
        out_sampled.append(torch.tensor(hop_draws, dtype=torch.long).view(-1, fanout))
        out_expanded.append(torch.tensor(hop_nodes, dtype=torch.long))
        begin, end = end, len(samples)
    return (torch.tensor(samples, dtype=torch.long), torch.tensor(rows, dtype=torch.long),
            torch.tensor(cols, dtype=torch.long), out_sampled, out_expanded)


class NeighborLoader:
    """torch_geometric.loader.NeighborLoader(data, num_neighbors, batch_size, input_nodes,
    replace=True, directed=True) with shuffle=False, num_workers=0 (PyG 2.0/2.1), for a Data
    with x, edge_index and y (any node attribute indexed along dim 0).

    input_nodes: None (all nodes), a bool mask (-> mask.nonzero(), i.e. ASCENDING ids) or a
    LongTensor of ids (kept in its order). They are cut into consecutive batches of batch_size
    (the last one smaller); each batch is sampled LAZILY when the iterator reaches it (so any
    torch draw between two batches, e.g. dropout, comes after the earlier batch's sampling), by
    `neighbor_sample` on to_csc(data.edge_index). Each batch is a Data with x = data.x[node],
    y = data.y[node], edge_index = [local sources; local targets] in draw order, batch_size,
    n_id = node, and (not in PyG) `sampled` / `expanded` as neighbor_sample returns them.

    sampled (not in PyG): a list with one entry per batch, each None (draw) or the per-hop
    draws of neighbor_sample."""

    def __init__(self, data, num_neighbors, batch_size, input_nodes=None, replace=True,
                 directed=True, sampled=None, generator=None):
        if not (replace and directed):
            raise NotImplementedError('only replace=True, directed=True')
        self.data = data
        self.num_neighbors = list(num_neighbors)
        self.batch_size = batch_size
        n = data.x.size(0)
        if input_nodes is None:
            input_nodes = torch.arange(n)
        elif input_nodes.dtype == torch.bool:
            input_nodes = input_nodes.nonzero().view(-1)
        self.input_nodes = input_nodes
        self.colptr, self.row, _ = to_csc(data.edge_index, n)
        self.sampled = sampled
        self.generator = generator

    def __len__(self):
        return (self.input_nodes.numel() + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        for b in range(len(self)):
            seeds = self.input_nodes[b * self.batch_size:(b + 1) * self.batch_size]
            given = None if self.sampled is None else self.sampled[b]
            node, row, col, sampled, expanded = neighbor_sample(
                self.colptr, self.row, seeds, self.num_neighbors, given, self.generator)
            yield Data(x=self.data.x[node], y=self.data.y[node], edge_index=torch.stack([row, col]),
                       batch_size=seeds.numel(), n_id=node, sampled=sampled, expanded=expanded)

def to_undirected(edge_index, num_nodes=None):
    """torch_geometric.utils.to_undirected (no edge_attr): adds every reverse
    edge and coalesces, i.e. sorts by (row, col) and removes duplicates."""
    n = _num_nodes(edge_index, num_nodes)
    row = torch.cat([edge_index[0], edge_index[1]])
    col = torch.cat([edge_index[1], edge_index[0]])
    key = torch.unique(row * n + col)  # sorted, unique == coalesce
    return torch.stack([key // n, key % n])


def dense_to_sparse(adj):
    """torch_geometric.utils.dense_to_sparse for one [N, N] matrix: the
    nonzeros in row-major order as (edge_index [2, E], values [E])."""
    edge_index = adj.nonzero().t()
    return edge_index, adj[edge_index[0], edge_index[1]]


def to_dense_adj(edge_index, max_num_nodes=None, edge_attr=None):
    """torch_geometric.utils.to_dense_adj for one graph (batch=None): a
    [1, N, N] matrix; duplicate edges are summed; edge_attr defaults to 1."""
    n = _num_nodes(edge_index, max_num_nodes)
    if edge_attr is None:
        edge_attr = torch.ones(edge_index.size(1), device=edge_index.device)
    flat = scatter(edge_attr, edge_index[0] * n + edge_index[1], 0, n * n, 'sum')
    return flat.view(1, n, n)


def degree(index, num_nodes=None, dtype=None):
    """torch_geometric.utils.degree: how often each node id 0..N-1 occurs in the
    1-D `index` (scatter-add of ones), as `dtype` (default the default float dtype).
    N defaults to max(index) + 1."""
    n = _num_nodes(index, num_nodes)
    out = torch.zeros((n,), dtype=dtype, device=index.device)
    one = torch.ones((index.size(0),), dtype=out.dtype, device=out.device)
    return out.scatter_add_(0, index, one)


def dropout_adj(edge_index, edge_attr=None, p=0.5, force_undirected=False, num_nodes=None, training=True,
                keep_mask=None):
    """torch_geometric.utils.dropout_adj (PyG >= 2.0.4, deprecated alias kept through 2.x): keeps
    edge e iff torch.rand(E)[e] >= p, i.e. ONE uniform draw per stored (directed) edge from the
    global torch RNG, so the two directions of an undirected edge are dropped independently.
    No draw at all when training is False or p == 0. Returns (edge_index[:, keep], edge_attr[keep]).

    keep_mask (not in PyG): a bool [E] mask used instead of the draw, so that a test can inject
    it. force_undirected=True is not ported."""
    if p < 0. or p > 1.:
        raise ValueError(f'Dropout probability has to be between 0 and 1 (got {p}')
    if force_undirected:
        raise NotImplementedError('force_undirected')
    if not training or p == 0.0:
        return edge_index, edge_attr
    row, col = edge_index
    mask = (torch.rand(row.size(0), device=edge_index.device) >= p) if keep_mask is None else keep_mask.bool()
    row, col = row[mask], col[mask]
    if edge_attr is not None:
        edge_attr = edge_attr[mask]
    return torch.stack([row, col], dim=0), edge_attr


class LabelPropagation:
    """torch_geometric.nn.models.LabelPropagation(num_layers, alpha) (PyG 2.x; no parameters).
    forward(y, edge_index, mask=None, edge_weight=None, post_step=None), under no_grad:
      out = y with the rows outside `mask` zeroed (all of y when mask is None);
      edge weights from gcn_norm(edge_index, add_self_loops=False): w = deg^-1/2[src] *
      deg^-1/2[dst], deg counted over dst, deg 0 -> 0 (so NO self loops);
      res = (1 - alpha) * out; num_layers times: out = alpha * scatter_sum(w * out[src] -> dst)
      + res, then clamp_(0, 1) (or post_step(out) when one is given).
    A long 1-D y is one-hot encoded first (not needed by the ports)."""

    def __init__(self, num_layers, alpha):
        self.num_layers = num_layers
        self.alpha = alpha

    @torch.no_grad()
    def forward(self, y, edge_index, mask=None, edge_weight=None, post_step=None):
        if y.dtype == torch.long and y.size(0) == y.numel():
            y = torch.nn.functional.one_hot(y.view(-1)).to(torch.float)
        out = y
        if mask is not None:
            out = torch.zeros_like(y)
            out[mask] = y[mask]
        if edge_weight is None:
            edge_index, edge_weight = gcn_norm(edge_index, num_nodes=y.size(0), add_self_loops=False)
        res = (1 - self.alpha) * out
        for _ in range(self.num_layers):
            out = scatter(edge_weight.view(-1, 1) * out[edge_index[0]], edge_index[1], 0, y.size(0), 'sum')
            out.mul_(self.alpha).add_(res)
            if post_step is not None:
                out = post_step(out)
            else:
                out.clamp_(0., 1.)
        return out

    __call__ = forward


class NxGraph:
    """The part of an undirected networkx.Graph (2.x / 3.x) that the ports read: `graph` (the
    graph attribute dict), `nodes` (node -> attribute dict, networkx's `G._node`) and `adj`
    (node -> {neighbour: edge attribute dict}, networkx's `G._adj`), all dicts in INSERTION order
    as networkx keeps them. `add_node` / `add_edge` mirror networkx's: add_edge adds missing
    nodes, and re-adding an edge keeps its position in both adjacency dicts."""

    def __init__(self):
        self.graph = {}
        self.nodes = {}
        self.adj = {}

    def add_node(self, n, **attr):
        if n not in self.nodes:
            self.adj[n] = {}
            self.nodes[n] = {}
        self.nodes[n].update(attr)

    def add_edge(self, u, v, **attr):
        for n in (u, v):
            if n not in self.nodes:
                self.adj[n] = {}
                self.nodes[n] = {}
        datadict = self.adj[u].get(v, {})
        datadict.update(attr)
        self.adj[u][v] = datadict
        self.adj[v][u] = datadict

    def to_directed_edges(self):
        """The (u, v) pairs of networkx `G.to_directed().edges()`: to_directed adds the nodes in
        node order and then `(u, v) for u, nbrs in G._adj.items() for v in nbrs`, and a DiGraph
        lists its edges by source in node order, each source's targets in insertion order; so
        every undirected edge appears twice, once from each end."""
        return [(u, v) for u, nbrs in self.adj.items() for v in nbrs]


def random_partition_graph(sizes, p_in, p_out, seed=None):
    """networkx.random_partition_graph(sizes, p_in, p_out, seed, directed=False), i.e.
    stochastic_block_model(sizes, p, nodelist=None, seed, directed=False, selfloops=False,
    sparse=True) with p[r][r] = p_in and p[r][s] = p_out, as in networkx 2.2 to 3.x (the code
    is unchanged from the 2.5 to the 3.6 tags; networkx commit b3c9b00, 2026, changed it).
    seed: an int (-> random.Random(seed), networkx's py_random_state), a random.Random, or None
    (Python's global `random`). Returns an NxGraph.

    Exactly what networkx does, draws included:
      * partition = [set(range(c_x, c_x + sizes[x]))]; nodes are added block by block, each
        block in its SET's iteration order (ascending for these ints in CPython), with node
        attribute block=x; graph attributes 'partition' and 'name'.
      * blocks (i, j) in itertools.combinations_with_replacement order. For i == j, EVERY pair
        of itertools.combinations(block set, 2) gets one `rng.random() < p_in` draw (the dense
        loop runs even though sparse=True), and then the sparse branch still runs on the now
        exhausted iterator: unless p_in is 0 or 1 it draws ONE more `rng.random()` (the log of
        the geometric skip) before StopIteration ends it. For i != j (the product of the two
        blocks): p_out == 1 adds every pair, p_out == 0 draws nothing, otherwise the geometric
        skip method: repeat {skip = floor(log(rng.random()) / log(1 - p_out)); drop `skip`
        pairs; add the next pair} until the pairs run out.
    """
    if not 0.0 <= p_in <= 1.0:
        raise ValueError('p_in must be in [0,1]')
    if not 0.0 <= p_out <= 1.0:
        raise ValueError('p_out must be in [0,1]')
    if seed is None:
        rng = random._inst
    elif isinstance(seed, random.Random):
        rng = seed
    else:
        rng = random.Random(seed)
    num_blocks = len(sizes)
    p = [[p_out for _ in range(num_blocks)] for _ in range(num_blocks)]
    for r in range(num_blocks):
        p[r][r] = p_in

    nodelist = range(0, sum(sizes))
    g = NxGraph()
    block_iter = itertools.combinations_with_replacement(range(num_blocks), 2)
    size_cumsum = [sum(sizes[0:x]) for x in range(0, len(sizes) + 1)]
    g.graph['partition'] = [set(nodelist[size_cumsum[x]:size_cumsum[x + 1]])
                            for x in range(0, len(size_cumsum) - 1)]
    for block_id, nodes in enumerate(g.graph['partition']):
        for node in nodes:
            g.add_node(node, block=block_id)
    g.graph['name'] = 'stochastic_block_model'

    parts = g.graph['partition']
    for i, j in block_iter:
        if i == j:
            edges = itertools.combinations(parts[i], 2)
            for e in edges:
                if rng.random() < p[i][j]:
                    g.add_edge(*e)
        else:
            edges = itertools.product(parts[i], parts[j])
        if p[i][j] == 1:
            for e in edges:
                g.add_edge(*e)
        elif p[i][j] > 0:
            while True:
                try:
                    logrand = math.log(rng.random())
                    skip = math.floor(logrand / math.log(1 - p[i][j]))
                    next(itertools.islice(edges, skip, skip), None)
                    e = next(edges)
                    g.add_edge(*e)
                except StopIteration:
                    break
    return g
