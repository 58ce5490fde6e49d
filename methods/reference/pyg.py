"""The few PyTorch Geometric (PyG 2.x) primitives the reference ports need.

PyG is not installed where the oracles run, so these are plain-PyTorch
re-implementations of exactly the PyG behaviour the authors' code relies on.
Each function names the PyG function it mirrors. Only the single-graph,
edge_index-as-Tensor, flow='source_to_target' paths are covered.
"""
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
