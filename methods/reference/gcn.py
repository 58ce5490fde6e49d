"""The 2-layer GCN the ports of non-graph authors' code (FML, FedKD, LG-FedAvg) run on graphs:
GCNConv(F -> hid) -> ReLU -> [embedding] -> dropout -> GCNConv(hid -> C)."""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from methods.reference.pyg import GCNConv  # noqa: E402


class GCN(nn.Module):
    """forward returns (embedding [n, hid] (after ReLU, before dropout), logits [n, C]).
    state_dict: conv1.bias [hid], conv1.lin.weight [hid, F], conv2.bias [C], conv2.lin.weight [C, hid].
    Dropout is F.dropout(training=self.training) (off in eval())."""

    def __init__(self, feat_dim, hid_dim, out_dim, dropout):
        super().__init__()
        self.conv1 = GCNConv(feat_dim, hid_dim)
        self.conv2 = GCNConv(hid_dim, out_dim)
        self.dropout = dropout

    @classmethod
    def from_state(cls, state, dropout):
        """A GCN shaped after `state` (hid and F from conv1.lin.weight, C from conv2.lin.weight), loaded with it."""
        hid, feat = state['conv1.lin.weight'].shape
        model = cls(feat, hid, state['conv2.lin.weight'].shape[0], dropout)
        model.load_state_dict(state)
        return model

    def forward(self, x, edge_index):
        embedding = F.relu(self.conv1(x, edge_index))
        h = F.dropout(embedding, p=self.dropout, training=self.training)
        return embedding, self.conv2(h, edge_index)


def evaluate_clients(models, subgraphs):
    """Accuracy (%) of each client's model (forward -> (embedding, logits)) on its own subgraph, in
    eval mode: per client 'acc_train' / 'acc_val' / 'acc_test'; overall 'val' / 'test' as
    node-count-weighted means and '*_unweighted' as plain means over clients."""
    clients = []
    for model, g in zip(models, subgraphs):
        model.eval()
        with torch.no_grad():
            pred = model(g.x, g.edge_index)[1].argmax(dim=1)
        r = {}
        for split, mask in (('train', g.train_idx), ('val', g.val_idx), ('test', g.test_idx)):
            count = int(mask.sum())
            r['acc_' + split] = 100.0 * int((pred[mask] == g.y[mask]).sum()) / count if count else 0.0
        clients.append(r)
    n = [g.x.size(0) for g in subgraphs]
    out = {'clients': clients}
    for split in ('val', 'test'):
        out[split] = sum(n[k] * clients[k]['acc_' + split] for k in range(len(clients))) / sum(n)
        out[split + '_unweighted'] = sum(c['acc_' + split] for c in clients) / len(clients)
    return out
