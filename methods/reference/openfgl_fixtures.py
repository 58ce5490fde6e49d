"""Tiny, fully deterministic inputs for the OpenFGL port tests (no global RNG use)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from methods.reference import openfgl  # noqa: E402
from methods.reference.pyg import Data, to_undirected  # noqa: E402


def subgraph(gen, n, feat_dim, num_classes, num_edges, classes=None):
    """Random undirected graph (both directions, no loops). Labels cycle through
    `classes` (default all); the first len(classes) nodes and every third node after
    them are train nodes, the rest alternate val/test."""
    classes = list(range(num_classes)) if classes is None else classes
    src = torch.randint(0, n, (num_edges,), generator=gen)
    dst = (src + torch.randint(1, n, (num_edges,), generator=gen)) % n
    idx = torch.arange(n)
    y = torch.tensor(classes)[idx % len(classes)]
    train = (idx < len(classes)) | (idx % 3 == 0)
    return Data(x=torch.randn(n, feat_dim, generator=gen), edge_index=to_undirected(torch.stack([src, dst]), n),
                y=y, train_idx=train, val_idx=~train & (idx % 2 == 0), test_idx=~train & (idx % 2 == 1))


def tiny_setup(num_classes=3, feat_dim=4, hid_dim=5, second_client_classes=None, seed=7):
    """Two clients (6 and 9 nodes) and a global GCN state drawn from a private generator."""
    gen = torch.Generator().manual_seed(seed)
    subgraphs = [subgraph(gen, 6, feat_dim, num_classes, 8),
                 subgraph(gen, 9, feat_dim, num_classes, 12, second_client_classes)]
    shapes = openfgl.GCN(feat_dim, hid_dim, num_classes, 2, 0.0).state_dict()
    global_state = {k: torch.randn(v.shape, generator=gen) * 0.5 for k, v in shapes.items()}
    return gen, subgraphs, global_state


def random_like_state(gen, state, scale=0.5):
    return {k: torch.randn(v.shape, generator=gen) * scale for k, v in state.items()}


def states_equal(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def nested_equal(a, b):
    """Bit-identical comparison of nested dicts/lists of tensors and scalars."""
    if torch.is_tensor(a):
        return torch.is_tensor(b) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(nested_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(nested_equal(x, y) for x, y in zip(a, b))
    return a == b
