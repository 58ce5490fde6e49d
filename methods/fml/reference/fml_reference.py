"""Line-by-line plain-PyTorch port of the authors' Federated Mutual Learning (FML), used as a test oracle.

Upstream: https://github.com/ZJU-DAI/Federated-Mutual-Learning (Tao Shen, first author of
Shen et al., "Federated Mutual Learning", arXiv 2006.16765 / FITEE 2023), HEAD commit
b547bbf544ce2442f2ddcf0b57fe3c1255ec804f ("b547bbf" below). Files ported: Args.py (defaults),
Node.py (init_optimizer, Node, Node.fork, Global_Node.merge), Trainer.py (train_mutual),
utils.py (LR_scheduler), main.py (the round loop). Every block names its upstream file:line.

At b547bbf, main.py:28 and main.py:33 have `Node_List[k].fork(Global_node)` and
`Global_node.merge(Node_List)` COMMENTED OUT (commit 49e9e9f, "beta1.0"), so the script as
committed trains isolated clients and never federates. The previous commit 56793ce runs them
(main.py:36 fork before each client's epochs, main.py:43 merge after all clients), as the paper's
algorithm does; we port that loop (FML with fork and merge). Node.fork / Global_Node.merge are
identical in the two commits.

Graph adaptation (not upstream): the models are 2-layer GCNs (GCNConv -> ReLU -> dropout ->
GCNConv, methods/reference/pyg.py) run full-batch on each client's subgraph; one local epoch is one
optimizer step on the whole subgraph (upstream: one pass of 128-image mini-batches). CE is over the
train nodes; the mutual KL terms are over the train nodes too by default (upstream distils on the
same labelled batch it computes CE on); distill_nodes='all' takes them over every node.

Deliberate differences from upstream, nothing else is changed:
  * CPU only; initial weights are injected (local_states: each client's private model, upstream
    Node.model; global_state: upstream Global_Node.model, i.e. the meme every client forks in round
    0). The meme each Node builds in __init__ is never used (fork replaces it before training).
  * Printing, tqdm, Recorder (validation, checkpoint files) are dropped; the losses are returned.
  * Dropout draws from torch's global RNG as upstream (local model's forward first, then the
    meme's); bit-exact comparisons use dropout=0.
"""
import copy
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))


# The graph adaptation (methods/reference/gcn.py).
from methods.reference.gcn import GCN, evaluate_clients  # noqa: E402,F401


# ZJU-DAI/Federated-Mutual-Learning@b547bbf Trainer.py:4-7
KL_Loss = nn.KLDivLoss(reduction='batchmean')
Softmax = nn.Softmax(dim=1)
LogSoftmax = nn.LogSoftmax(dim=1)
CE_Loss = nn.CrossEntropyLoss()


def mutual_losses(output_local, output_meme, target, alpha, beta, distill_rows=None):
    """@b547bbf Trainer.py:80-85, for one batch:
      ce_local  = CE(local, y)
      kl_local  = KLDivLoss(batchmean)(log_softmax(local), softmax(meme.detach()))
                = (1/B) sum_i KL(p_meme_i || p_local_i)        (the meme is the teacher)
      ce_meme   = CE(meme, y)
      kl_meme   = KLDivLoss(batchmean)(log_softmax(meme), softmax(local.detach()))
                = (1/B) sum_i KL(p_local_i || p_meme_i)        (the local model is the teacher)
      loss_local = alpha * ce_local + (1 - alpha) * kl_local
      loss_meme  = beta * ce_meme + (1 - beta) * kl_meme
    Each teacher is detached, so loss_local only reaches the local model and loss_meme only the meme.
    output_* are the logits of the CE rows (the train nodes). distill_rows (graph adaptation, None =
    the same rows) are (local, meme) logits used for the two KL terms instead; B is their row count.
    Returns a dict of the six tensors."""
    kl_local_in, kl_meme_in = (output_local, output_meme) if distill_rows is None else distill_rows
    ce_local = CE_Loss(output_local, target)
    kl_local = KL_Loss(LogSoftmax(kl_local_in), Softmax(kl_meme_in.detach()))
    ce_meme = CE_Loss(output_meme, target)
    kl_meme = KL_Loss(LogSoftmax(kl_meme_in), Softmax(kl_local_in.detach()))
    loss_local = alpha * ce_local + (1 - alpha) * kl_local
    loss_meme = beta * ce_meme + (1 - beta) * kl_meme
    return {'ce_local': ce_local, 'kl_local': kl_local, 'ce_meme': ce_meme, 'kl_meme': kl_meme,
            'loss_local': loss_local, 'loss_meme': loss_meme}


# @b547bbf Node.py:19-25
def init_optimizer(model, optimizer, lr, momentum):
    """SGD(lr, momentum, weight_decay=5e-4) or Adam(lr, weight_decay=1e-4): both weight decays are
    hard-coded upstream (L2 added to the gradient, PyTorch's coupled form)."""
    if optimizer == 'sgd':
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=5e-4)
    elif optimizer == 'adam':
        return torch.optim.Adam(model.parameters(), lr=lr, weight_decay=1e-4)
    raise ValueError(optimizer)


# @b547bbf utils.py:67-79
def scheduled_lr(rounds, lr, num_rounds, stop_decay):
    """The learning rate after LR_scheduler(rounds): trigger = int(R / 3); if rounds != 0 and
    rounds % trigger == 0 and rounds < stop_decay: lr *= 0.1 (a Python double). The `rounds != 0`
    test short-circuits, so R < 3 (trigger 0) raises ZeroDivisionError from round 1 on, as upstream."""
    trigger = int(num_rounds / 3)
    if rounds != 0 and rounds % trigger == 0 and rounds < stop_decay:
        lr *= 0.1
    return lr


def _clone_state(module_or_state):
    state = module_or_state.state_dict() if isinstance(module_or_state, nn.Module) else module_or_state
    return {k: v.detach().clone() for k, v in state.items()}


class FmlReference:
    """FML (fed_mutual) on graphs, one communication round per train_round().

    subgraphs: objects with x [n, F] float32, edge_index [2, E] int64 (both directions), y [n]
      int64, train_idx / val_idx / test_idx bool [n].
    local_states[k]: state_dict of client k's private model (upstream Node.model); its GCN shape
      (hidden width) is read from the state, so private models may differ in width from the meme.
    global_state: the initial server meme (upstream Global_Node.model), forked by every client.
    Hyper-parameters: upstream Args.py defaults (alpha = beta = 0.5, E = 5, SGD lr 0.01 momentum
      0.9 (weight decay 5e-4 hard-coded), R = 50 for the LR schedule, stop_decay 50).
      lr_schedule=False keeps the lr constant (upstream always runs LR_scheduler).
    """

    def __init__(self, subgraphs, num_classes, local_states, global_state, dropout=0.5, alpha=0.5, beta=0.5,
                 local_epochs=5, optimizer='sgd', lr=0.01, momentum=0.9, num_rounds=50, stop_decay=50,
                 lr_schedule=True, distill_nodes='train'):
        assert len(local_states) == len(subgraphs)
        assert distill_nodes in ('train', 'all')
        self.subgraphs = subgraphs
        self.num_clients = len(subgraphs)
        self.num_classes = num_classes
        self.dropout = dropout
        self.alpha, self.beta = alpha, beta
        self.local_epochs = local_epochs
        self.optimizer = optimizer
        self.lr, self.momentum = lr, momentum
        self.num_rounds, self.stop_decay, self.lr_schedule = num_rounds, stop_decay, lr_schedule
        self.distill_nodes = distill_nodes
        self.round = 0
        # @b547bbf Node.py:52-59 Global_Node: the server keeps one meme-shaped model.
        self.global_model = GCN.from_state(_clone_state(global_state), dropout)
        assert self.global_model.conv2.lin.weight.shape[0] == num_classes
        # @b547bbf Node.py:35-45 Node: a private model whose optimizer is created ONCE (persists
        # across rounds: momentum buffers kept), and a meme (replaced by fork before any training).
        self.locals = [GCN.from_state(_clone_state(s), dropout) for s in local_states]
        self.local_opts = [init_optimizer(m, optimizer, lr, momentum) for m in self.locals]
        self.memes = [None] * self.num_clients
        self.meme_opts = [None] * self.num_clients

    # @b547bbf Node.py:47-49
    def fork(self, k):
        """meme = deepcopy(global model); a NEW meme optimizer (fresh momentum) at the current lr."""
        self.memes[k] = copy.deepcopy(self.global_model)
        self.meme_opts[k] = init_optimizer(self.memes[k], self.optimizer, self.lr, self.momentum)

    # @b547bbf Node.py:61-67
    def merge(self):
        """weights_zero(model), then Dict[key] += meme_i[key] for every node in order, then
        Dict[key] /= len(Node_List): the UNWEIGHTED mean of ALL clients' memes (no sampling, no
        node counts), accumulated in float32 from zero, divided in place by the integer N."""
        dict_ = self.global_model.state_dict()  # shares storage with the parameters, as upstream
        node_states = [copy.deepcopy(m.state_dict()) for m in self.memes]
        for p in self.global_model.parameters():  # Node.py:28-32 weights_zero
            p.data.detach_()
            p.data.zero_()
        for key in dict_.keys():
            for i in range(self.num_clients):
                dict_[key] += node_states[i][key]
            dict_[key] /= self.num_clients

    # @b547bbf Trainer.py:59-99 train_mutual, one call = one local epoch
    def train_mutual(self, k):
        g = self.subgraphs[k]
        model, meme = self.locals[k], self.memes[k]
        model.train()
        meme.train()
        # Graph adaptation: the one "batch" is the whole subgraph; CE over its train nodes.
        self.local_opts[k].zero_grad()
        self.meme_opts[k].zero_grad()
        output_local = model(g.x, g.edge_index)[1]  # local model forwarded first, then the meme
        output_meme = meme(g.x, g.edge_index)[1]
        train = g.train_idx
        distill = None if self.distill_nodes == 'train' else (output_local, output_meme)
        losses = mutual_losses(output_local[train], output_meme[train], g.y[train], self.alpha, self.beta, distill)
        losses['loss_local'].backward()
        losses['loss_meme'].backward()
        self.local_opts[k].step()
        self.meme_opts[k].step()
        return {name: float(v) for name, v in losses.items()}

    def train_round(self):
        """One round of @56793ce main.py:32-45 (= @b547bbf main.py:24-35 with fork and merge on):
        LR_scheduler; for every client in order: fork, then E epochs of train_mutual; then merge.
        Returns copies:
          round, lr (used this round),
          uploads: per client, the meme state_dict after local training (what merge averages),
          local / meme: per client, the private model / meme state_dicts after the round,
          global: the server meme after merge (forked by every client next round),
          losses: per client, per epoch {ce_local, kl_local, ce_meme, kl_meme, loss_local, loss_meme}.
        """
        if self.lr_schedule:
            # utils.py:67-79: args is shared by every Node, so the new lr reaches the persistent
            # local optimizers (param_groups[0]['lr']) and every meme optimizer fork creates.
            self.lr = scheduled_lr(self.round, self.lr, self.num_rounds, self.stop_decay)
            for opt in self.local_opts:
                opt.param_groups[0]['lr'] = self.lr
        out = {'round': self.round, 'lr': self.lr, 'losses': []}
        for k in range(self.num_clients):
            self.fork(k)
            out['losses'].append([self.train_mutual(k) for _ in range(self.local_epochs)])
        out['uploads'] = [_clone_state(m) for m in self.memes]
        self.merge()
        out['local'] = [_clone_state(m) for m in self.locals]
        out['meme'] = [_clone_state(m) for m in self.memes]
        out['global'] = _clone_state(self.global_model)
        self.round += 1
        return out

    def evaluate(self, which='local'):
        """Accuracy (%) of each client's private model (which='local', the model FedGKC reports) or of
        the server meme (which='global') on the client's own subgraph, eval mode. 'val' / 'test':
        node-count-weighted means over clients; '*_unweighted' plain means. Upstream's Recorder
        validates on image test sets; this evaluation is the graph adaptation's."""
        models = self.locals if which == 'local' else [self.global_model] * len(self.subgraphs)
        return evaluate_clients(models, self.subgraphs)
