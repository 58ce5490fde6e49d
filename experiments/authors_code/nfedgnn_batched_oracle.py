"""The independent nFedGNN oracle's whole run with its per-user maps and Adams batched.

methods/nfedgnn/reference/nfedgnn_reference.py (NFedGnnReference) keeps one UserModel and one Adam per
user: 2,708 of each on Cora, which makes a 200-round run take minutes. BatchedNFedGnn is the same
computation on the oracle's GCN setting (gcn_bias 'user', send_reg_grad, server_update 'pre', every user
steps every round, no user-input dropout), with the users' maps and Adams held as two tensors:

  * the maps' rows of the users' non-zero features, W [nnz, hid] (row k: user u_k's row c_k, in the
    order of x.nonzero()), and the users' biases b [n, hid]; user i's latent
    xbar_i = x_i W_i + b_i = sum_k:u_k=i x[i, c_k] W[k] + b_i;
  * one torch.optim.Adam over (W, b), with the users' lr, betas, eps and weight decay. PyTorch's Adam is
    elementwise and every user takes its t-th step in round t, so one Adam over the stacked entries does
    exactly what the per-user Adams do to each of them.

Why the rows of zero features can be dropped: user i's map row c enters its latent only as
x[i, c] * W_i[c], and its gradient is x[i, c] * g_i (g_i = dL/dxbar_i, what the server sends down): for
x[i, c] = 0 it never reaches an output and its gradient is zero. The oracle's Adam still moves such a row
(coupled L2 weight decay: its Adam gradient is weight_decay * W_i[c]), but only ever by a function of its
own (finite) values, and the row is multiplied by 0 in every forward pass, so no latent, logit, loss or
accuracy sees it. The only difference from the oracle is the summation order of x_i W_i (a matmul
there, an index_add here), a rounding-level difference (nfedgnn_batched_oracle_test.py: within 1e-5).

Reused from the oracle module, unchanged: draw_initial_states (the same generator draws the same
initial states), server_edges and gcn_norm (the server's graph and Â), GcnServer (the server model,
loaded from the drawn state, with its own Adam as the oracle builds it), ce_loss, laplacian_reg and
_accuracy; draw_round draws the dropout keep-masks as NFedGnnReference.draw_round does for the GCN
(torch.rand((n, hid), generator) >= p). The data are what independent_runs.nfedgnn_data returns.
"""
import os
import sys

import torch
from torch.optim import Adam

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..')))
from methods.nfedgnn.reference import nfedgnn_reference as nfg  # noqa: E402


class BatchedNFedGnn:
    """NFedGnnReference(x, edge_index, y, train_mask, val_mask, test_mask, num_classes, initial_states,
    lam=lam, lr=lr, dropout=dropout, weight_decay=weight_decay, eval_each_round=False) on the GCN, with the
    users batched (module docstring). draw_round / train_round / evaluate as the oracle's (train_round
    returns the round's training loss only)."""

    def __init__(self, x, edge_index, y, train_mask, val_mask, test_mask, num_classes, initial_states, lam,
                 hid_dim=16, dropout=0.5, lr=0.1, weight_decay=5e-4, betas=(0.9, 0.999), eps=1e-8):
        n = x.size(0)
        self.n, self.hid_dim, self.dropout, self.lam = n, hid_dim, dropout, lam
        # The server's side, as NFedGnnReference.__init__ builds it.
        src, dst, und = nfg.server_edges(edge_index, n)
        _, w = nfg.gcn_norm(und, torch.ones(und.size(1), dtype=x.dtype), n)
        self.graph = {'src': src, 'dst': dst, 'und': und, 'gcn_weight': w}
        self.y, self.train_mask, self.val_mask, self.test_mask = y, train_mask, val_mask, test_mask
        self.labels_v0 = torch.where(train_mask, y, torch.full_like(y, -1))
        self.server = nfg.GcnServer(hid_dim, num_classes, False).to(x.dtype)
        self.server.load_state_dict(initial_states['server'])
        self.server_opt = Adam(self.server.parameters(), lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        # The users' side: the entries of their maps on their non-zero features, and their biases.
        users = initial_states['users']
        assert len(users) == n
        nz = x.nonzero()
        self.user_of, self.feature_of = nz[:, 0], nz[:, 1]
        self.values = x[self.user_of, self.feature_of].unsqueeze(1)
        self.weight = torch.cat([users[i]['weight'][x[i].nonzero().squeeze(1)] for i in range(n)]).to(x.dtype)
        self.bias = torch.stack([users[i]['bias'] for i in range(n)]).to(x.dtype)
        self.weight.requires_grad_(True)
        self.bias.requires_grad_(True)
        self.user_opt = Adam([self.weight, self.bias], lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        self.round = 0

    def draw_round(self, generator=None):
        """The GCN's dropout keep-masks of one round, drawn as NFedGnnReference.draw_round draws them."""
        if self.dropout <= 0:
            return {}
        return {'hidden': torch.rand((self.n, self.hid_dim), generator=generator) >= self.dropout}

    def latents(self):
        """Every user's xbar_i = x_i W_i + b_i over its non-zero features, [n, hid]."""
        h = torch.zeros(self.n, self.hid_dim, dtype=self.weight.dtype)
        return h.index_add(0, self.user_of, self.values * self.weight) + self.bias

    def server_loss(self, xbar, draws, training):
        """Eq. 7 as NFedGnnReference.server_loss: (L, L_CE, L_reg, logits)."""
        self.server.train(training)
        z = self.server(xbar, self.graph, draws if training else None, self.dropout if training else 0.0)
        ce = nfg.ce_loss(z, self.labels_v0, self.train_mask)
        reg = nfg.laplacian_reg(xbar, self.graph['src'], self.graph['dst'])
        return ce + self.lam * reg, ce, reg, z

    def train_round(self, draws):
        """NFedGnnReference.train_round: uploads, one server backward, the server's Adam step, then every
        user backpropagates its g_i and takes its Adam step (here all at once)."""
        self.round += 1
        user_outs = self.latents()
        xbar = user_outs.detach().clone().requires_grad_(True)
        self.server_opt.zero_grad()
        loss, _, _, _ = self.server_loss(xbar, draws, True)
        loss.backward()
        g = xbar.grad.detach().clone()
        self.server_opt.step()
        self.user_opt.zero_grad()
        user_outs.backward(g)
        self.user_opt.step()
        return float(loss)

    @torch.no_grad()
    def evaluate(self):
        """NFedGnnReference.evaluate (GCN): eval mode, accuracies (%) and the eval-mode losses."""
        xbar = self.latents()
        loss, ce, reg, z = self.server_loss(xbar, None, False)
        pred = z.argmax(dim=1)
        return {'acc_train': nfg._accuracy(pred, self.y, self.train_mask),
                'acc_val': nfg._accuracy(pred, self.y, self.val_mask),
                'acc_test': nfg._accuracy(pred, self.y, self.test_mask),
                'loss': float(loss), 'ce': float(ce), 'reg': float(reg),
                'logits': z.clone(), 'pred': pred.clone(), 'latent': xbar.clone()}

