"""Line-by-line plain-PyTorch port of the authors' FedKD, used as a test oracle.

Upstream: https://github.com/wuch15/FedKD (Chuhan Wu, first author of Wu et al., "Communication-
efficient federated learning via knowledge distillation", Nature Communications 2022), HEAD commit
9b9e63f6e20f33566d907572c064307653b767e0 ("9b9e63f" below). Files ported: model_bert.py
(ModelBert.forward: the adaptive mutual distillation loss), run.py (train(): optimizer, local steps,
the SVD-compressed update exchange), parameters.py (defaults). Every block names its file:line.

Graph adaptation (not upstream): the mentor (upstream teacher_bert_models, 12-layer BERT) and the
mentee (student_bert_models, 4-layer BERT) are 2-layer GCNs (GCNConv -> ReLU -> dropout -> GCNConv,
methods/reference/pyg.py) run full-batch on the client's subgraph; one local step is one optimizer
step on the whole subgraph (upstream: 10 mini-batches per client per round). The hidden-state MSE
(upstream: the mentee's 4 layer outputs against every 3rd mentor layer, plus attention maps) is the
MSE between the two models' hidden layers (after ReLU, before dropout; both widths must match); the
attention terms have no GCN counterpart and are dropped. CE is over the train nodes; the KL and MSE
terms are over the train nodes too by default (upstream distils on the labelled batch), or over every
node with distill_nodes='all'.

Deliberate differences from upstream, nothing else is changed:
  * CPU only; no horovod (upstream averages gradients over hvd workers, each holding all clients);
    initial weights injected (mentor_states per client; mentee_state shared or per client; upstream
    loads every student from the same pretrained checkpoint). Frozen 'embeddings' parameters and
    the unused user/news heads have no GCN counterpart.
  * run.py:216 and :241 reconstruct a compressed matrix as np.dot(np.dot(u, sigma), v) with a 1-D
    sigma, which is a matrix-vector then a vector-matrix product: it raises ValueError for every
    compressed matrix (its row count never equals the kept rank), so the committed SVD path cannot
    run. We use the evident intent u @ diag(sigma) @ v. run.py:214 and :240 also tell a compressed
    [u, sigma, v] from a raw tensor by len(...) == 3, which misfires on any raw tensor with 3 rows
    (e.g. a bias of 3 classes); we tag the two kinds explicitly.
  * Logging and checkpointing dropped; the values are returned.
  * Dropout draws from torch's global RNG (mentor forward first, then mentee, as model_bert.py:492-
    502); bit-exact comparisons use dropout=0.
"""
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))


# The graph adaptation (methods/reference/gcn.py).
from methods.reference.gcn import GCN, evaluate_clients  # noqa: E402,F401


# wuch15/FedKD@9b9e63f model_bert.py:468-470
criterion = nn.CrossEntropyLoss()
criterion2 = nn.KLDivLoss()  # reduction='mean': divides by rows * classes, NOT by rows ('batchmean')
criterion3 = nn.MSELoss()


def fedkd_losses(score, score2, targets, hidden, hidden2, ce_rows=None, distill_rows=None):
    """@9b9e63f model_bert.py:512-531 (score = mentor logits, score2 = mentee logits):
      loss_mse = 0. + MSE(mentee hidden, mentor hidden)                        (:512-516)
      loss1 = CE(mentor), loss2 = CE(mentee)                                   (:525-526)
      loss3 = KLDivLoss()(log_softmax(mentor), softmax(mentee)) / (loss1 + loss2)   -> mentor learns
      loss4 = KLDivLoss()(log_softmax(mentee), softmax(mentor)) / (loss1 + loss2)   -> mentee learns
      total = loss1 + loss3 + loss_mse/(loss1+loss2) + loss2 + loss4 + loss_mse/(loss1+loss2)
    NOTHING is detached: the KL targets (softmax of the other model), both MSE arguments and the
    adaptive denominator loss1 + loss2 all carry gradients, and the MSE is counted twice.
    KLDivLoss() is reduction 'mean' (all elements). ce_rows / distill_rows: bool masks (None = all)
    of the rows for CE and for the KL / MSE terms (graph adaptation).
    Returns a dict of tensors: ce_mentor, ce_mentee, kl_mentor (KL into the mentor, undivided),
    kl_mentee, mse, loss3, loss4, total."""
    c = slice(None) if ce_rows is None else ce_rows
    d = slice(None) if distill_rows is None else distill_rows
    loss_mse = 0.
    loss_mse += criterion3(hidden2[d], hidden[d])
    outputs_S1 = F.log_softmax(score[d], dim=1)
    outputs_S2 = F.log_softmax(score2[d], dim=1)
    outputs_T1 = F.softmax(score[d], dim=1)
    outputs_T2 = F.softmax(score2[d], dim=1)
    loss1 = criterion(score[c], targets[c])
    loss2 = criterion(score2[c], targets[c])
    with warnings.catch_warnings():  # torch warns that 'mean' is not 'batchmean'; upstream's choice
        warnings.simplefilter('ignore')
        kl_mentor = criterion2(outputs_S1, outputs_T2)
        kl_mentee = criterion2(outputs_S2, outputs_T1)
    loss3 = kl_mentor / (loss1 + loss2)
    loss4 = kl_mentee / (loss1 + loss2)
    total = loss1 + loss3 + loss_mse / (loss1 + loss2) + loss2 + loss4 + loss_mse / (loss1 + loss2)
    return {'ce_mentor': loss1, 'ce_mentee': loss2, 'kl_mentor': kl_mentor, 'kl_mentee': kl_mentee,
            'mse': loss_mse, 'loss3': loss3, 'loss4': loss4, 'total': total}


# @9b9e63f run.py:181
def svd_energy(comm_round, num_rounds, tmin=0.95, tmax=0.98):
    """energy = tmin + ((1 + comm_round) / R) * (tmax - tmin), Python doubles: round 0 already
    uses tmin + (tmax - tmin) / R and the last round (R - 1) uses tmax."""
    return tmin + ((1 + comm_round) / num_rounds) * (tmax - tmin)


def _svd_rank(sigma, energy, strict, zero_fallback):
    """The threshold loops of run.py:196-199 (client, strict '>') and :227-230 (server, '>='):
    the smallest k in range(len(sigma)) whose top-k energy sum(sigma[:k]^2) (float32 sum) exceeds
    (or reaches) energy * sum(sigma^2) (a float64 product: NumPy 1.x promotes float32 scalar times
    Python float to float64). k = len(sigma) is never tried: if even the top len-1 values fall short
    the threshold stays 0 and the matrix is sent with rank 0, i.e. as ZERO (zero_fallback=True,
    upstream): on the client that happens exactly when the smallest singular value carries at least
    1 - energy of sum(sigma^2). zero_fallback=False keeps every singular value instead (not upstream)."""
    total = energy * np.sum(np.square(sigma))
    for singular_value_num in range(len(sigma)):
        top = np.sum(np.square(sigma[:singular_value_num]))
        if (top > total) if strict else (top >= total):
            return singular_value_num
    return 0 if zero_fallback else len(sigma)


def compress_client(update, energy, zero_fallback=True):
    """@9b9e63f run.py:189-205 for one tensor of the mentee's update (float32 numpy):
    a matrix (ndim > 1) is SVD'd (np.linalg.svd, full_matrices=False, float32); an all-zero spectrum
    is sent raw; else [u[:, :k], sigma[:k], v[:k, :]] with k from the strict '>' test. Vectors
    (biases) are sent raw. Returns ('raw', array) or ('svd', (u, sigma, v))."""
    if len(update.shape) > 1:
        u, sigma, v = np.linalg.svd(update, full_matrices=False)
        if np.sum(np.square(sigma)) == 0:
            return ('raw', update)
        threshold = _svd_rank(sigma, energy, True, zero_fallback)
        return ('svd', (u[:, :threshold], sigma[:threshold], v[:threshold, :]))
    return ('raw', update)


def compress_server(aggregated, energy, zero_fallback=True):
    """@9b9e63f run.py:220-234 for one aggregated tensor: as compress_client but with '>=' and an
    all-zero spectrum keeps the raw tensor (`continue`)."""
    if len(aggregated.shape) > 1:
        u, sigma, v = np.linalg.svd(aggregated, full_matrices=False)
        if np.sum(np.square(sigma)) == 0:
            return ('raw', aggregated)
        threshold = _svd_rank(sigma, energy, False, zero_fallback)
        return ('svd', (u[:, :threshold], sigma[:threshold], v[:threshold, :]))
    return ('raw', aggregated)


def reconstruct(message):
    """@9b9e63f run.py:214-218 / :239-241 with the evident intent u @ diag(sigma) @ v (float32;
    see the module docstring: upstream's np.dot(np.dot(u, sigma), v) raises). Rank 0 gives zeros."""
    kind, value = message
    if kind == 'raw':
        return value
    u, sigma, v = value
    return np.dot(np.dot(u, np.diag(sigma)), v)


def _params_numpy(model):
    # @9b9e63f run.py:131 / :247 latest_local_student_para: named_parameters as float32 numpy copies
    return {name: para.detach().cpu().numpy().copy() for name, para in model.named_parameters()}


def _message_to_torch(message):
    kind, value = message
    if kind == 'raw':
        return torch.from_numpy(np.array(value))
    u, sigma, v = value
    return {'u': torch.from_numpy(np.array(u)), 'sigma': torch.from_numpy(np.array(sigma)),
            'v': torch.from_numpy(np.array(v))}


def _clone_state(module_or_state):
    state = module_or_state.state_dict() if isinstance(module_or_state, nn.Module) else module_or_state
    return {k: v.detach().clone() for k, v in state.items()}


class FedKdReference:
    """FedKD on graphs, one communication round (upstream `comm_round`) per train_round().

    subgraphs: objects with x [n, F] float32, edge_index [2, E] int64 (both directions), y [n]
      int64, train_idx / val_idx / test_idx bool [n].
    mentor_states[k]: client k's private mentor (the reported model); mentee_state: the initial
      mentee, one state_dict for every client (upstream: the same pretrained student) or a list.
    Hyper-parameters, upstream defaults: Adam lr 3e-6 (run.py:102, hard-coded; args.lr is unused),
      no weight decay, 10 local steps per round (run.py:142), R = num_rounds = 1 (parameters.py:50
      --epochs; demo.sh passes 2), tmin 0.95, tmax 0.98. svd=False skips both compressions (the
      raw mean update is added); zero_fallback: see _svd_rank.
    """

    def __init__(self, subgraphs, num_classes, mentor_states, mentee_state, dropout=0.5, lr=3e-6,
                 weight_decay=0.0, local_steps=10, num_rounds=1, tmin=0.95, tmax=0.98, svd=True,
                 zero_fallback=True, distill_nodes='train'):
        assert len(mentor_states) == len(subgraphs)
        assert distill_nodes in ('train', 'all')
        self.subgraphs = subgraphs
        self.num_clients = len(subgraphs)
        self.num_classes = num_classes
        self.local_steps = local_steps
        self.num_rounds, self.tmin, self.tmax = num_rounds, tmin, tmax
        self.svd, self.zero_fallback = svd, zero_fallback
        self.distill_nodes = distill_nodes
        self.round = 0
        if isinstance(mentee_state, dict):
            mentee_state = [mentee_state] * self.num_clients
        assert len(mentee_state) == self.num_clients
        self.mentors = [GCN.from_state(_clone_state(s), dropout) for s in mentor_states]
        self.mentees = [GCN.from_state(_clone_state(s), dropout) for s in mentee_state]
        for mentor, mentee in zip(self.mentors, self.mentees):
            assert mentor.conv1.lin.weight.shape[0] == mentee.conv1.lin.weight.shape[0], 'hidden MSE needs equal widths'
            assert mentor.conv2.lin.weight.shape[0] == num_classes == mentee.conv2.lin.weight.shape[0]
        # @9b9e63f run.py:100-103: ONE Adam per client over all its parameters (mentor and mentee),
        # created once and kept across rounds; the aggregation overwrites the mentee in place.
        self.optimizers = [optim.Adam([{'params': list(a.parameters()) + list(b.parameters()), 'lr': lr}], lr=lr,
                                      weight_decay=weight_decay) for a, b in zip(self.mentors, self.mentees)]
        # @9b9e63f run.py:131
        self.latest_local_student_para = [_params_numpy(m) for m in self.mentees]

    # @9b9e63f run.py:139-165, one iteration = one local step
    def local_step(self, i):
        g = self.subgraphs[i]
        self.mentors[i].train()
        self.mentees[i].train()
        hidden, score = self.mentors[i](g.x, g.edge_index)     # model_bert.py:492 teacher first
        hidden2, score2 = self.mentees[i](g.x, g.edge_index)   # model_bert.py:495 then the student
        distill = g.train_idx if self.distill_nodes == 'train' else None
        losses = fedkd_losses(score, score2, g.y, hidden, hidden2, g.train_idx, distill)
        self.optimizers[i].zero_grad()
        losses['total'].backward()
        self.optimizers[i].step()
        return {name: float(v) for name, v in losses.items()}

    def train_round(self):
        """One iteration of @9b9e63f run.py:134-247. Returns copies:
          round, energy,
          losses: per client, per step {ce_mentor, ce_mentee, kl_mentor, kl_mentee, mse, loss3, loss4, total},
          mentee_trained: per client, the mentee state_dict after local training,
          updates: per client {name: mentee after training - mentee at round start} (float32),
          uploads: per client {name: tensor (raw) or {'u', 'sigma', 'v'}} (run.py:189-205),
          ranks: per client {name: kept rank} of the SVD-compressed matrices,
          aggregated_update: {name: mean over clients of the reconstructed uploads} (run.py:211-219),
          broadcast: {name: tensor or {'u', 'sigma', 'v'}} the server's compressed mean (run.py:220-234),
          server_ranks, global_update: {name: reconstructed broadcast} (run.py:239-241),
          mentor / mentee: per client, the state_dicts at the end of the round
                           (mentee = its round-start value + global_update, run.py:242-246).
        """
        if self.round >= self.num_rounds:
            raise ValueError('round %d >= num_rounds %d: upstream never runs past R (energy > tmax)'
                             % (self.round, self.num_rounds))
        comm_round = self.round
        out = {'round': comm_round, 'losses': []}
        for i in range(self.num_clients):
            out['losses'].append([self.local_step(i) for _ in range(self.local_steps)])
        out['mentee_trained'] = [_clone_state(m) for m in self.mentees]
        energy = svd_energy(comm_round, self.num_rounds, self.tmin, self.tmax)
        out['energy'] = energy
        all_compressed_update = []
        out['updates'], out['uploads'], out['ranks'] = [], [], []
        for i in range(self.num_clients):  # run.py:183-209
            current = _params_numpy(self.mentees[i])
            compressed_student_update, updates, ranks = {}, {}, {}
            for name in self.latest_local_student_para[i]:
                student_update = current[name] - self.latest_local_student_para[i][name]
                updates[name] = torch.from_numpy(student_update.copy())
                if self.svd:
                    compressed_student_update[name] = compress_client(student_update, energy, self.zero_fallback)
                else:
                    compressed_student_update[name] = ('raw', student_update)
                if compressed_student_update[name][0] == 'svd':
                    ranks[name] = len(compressed_student_update[name][1][1])
            all_compressed_update.append(compressed_student_update)
            out['updates'].append(updates)
            out['uploads'].append({n: _message_to_torch(m) for n, m in compressed_student_update.items()})
            out['ranks'].append(ranks)
        aggregated_para = {}
        for name in all_compressed_update[0]:  # run.py:211-219
            aggregated_para[name] = np.mean([reconstruct(all_compressed_update[i][name])
                                             for i in range(self.num_clients)], axis=0)
        out['aggregated_update'] = {n: torch.from_numpy(np.array(v)) for n, v in aggregated_para.items()}
        broadcast = {}
        for name in aggregated_para:  # run.py:220-234
            broadcast[name] = (compress_server(aggregated_para[name], energy, self.zero_fallback) if self.svd
                               else ('raw', aggregated_para[name]))
        out['broadcast'] = {n: _message_to_torch(m) for n, m in broadcast.items()}
        out['server_ranks'] = {n: len(m[1][1]) for n, m in broadcast.items() if m[0] == 'svd'}
        global_update = {name: reconstruct(m) for name, m in broadcast.items()}  # run.py:239-241
        out['global_update'] = {n: torch.from_numpy(np.array(v)) for n, v in global_update.items()}
        for i in range(self.num_clients):  # run.py:242-246: in place, so Adam keeps its moments
            params = dict(self.mentees[i].named_parameters())
            with torch.no_grad():
                for name in global_update:
                    new = self.latest_local_student_para[i][name] + global_update[name].astype(np.float32)
                    params[name][:] = torch.from_numpy(np.asarray(new, dtype=np.float32))
        self.latest_local_student_para = [_params_numpy(m) for m in self.mentees]  # run.py:247
        out['mentor'] = [_clone_state(m) for m in self.mentors]
        out['mentee'] = [_clone_state(m) for m in self.mentees]
        self.round += 1
        return out

    def evaluate(self, which='mentor'):
        """Accuracy (%) of each client's mentor (which='mentor': upstream's test() scores with
        teacher_bert_models, run.py:366; FedGKC reports it) or mentee on its own subgraph, eval mode.
        'val' / 'test': node-count-weighted means; '*_unweighted': plain means (graph adaptation)."""
        return evaluate_clients(self.mentors if which == 'mentor' else self.mentees, self.subgraphs)
