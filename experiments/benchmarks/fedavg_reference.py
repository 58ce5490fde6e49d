#!/usr/bin/env python3
"""FedAvg with a 2-layer GCN on fixed clients, written as a competent Python user would write it with
plain PyTorch (no PyG): the job of

  //experiments:run --dataset=cora --partitioner=louvain --clients=10 --method=fedavg --rounds=100

(issue #69), so that whole_run_benchmark.sh can time our C++ against it. It matches our run's
defaults (fl/proto/federation.proto, methods/fedavg/fedavg.cc, nn/models/gnn_model.cc):
  model    GCNConv(F, 64) -> ReLU -> dropout 0.5 -> GCNConv(64, C); GCNConv = D^-1/2 (A+I) D^-1/2 X W + b,
           W Glorot-uniform, b zero;
  clients  the data of --clients_npz: client<k>/{x,edge_index,y,train,val,test} as
           //methods/testing:trace writes it (our run's
           Louvain clients and stratified 20/40/40 splits);
  round    every client loads the global weights, runs --epochs full-batch epochs of Adam (lr 0.01,
           weight decay 5e-4; each client's Adam state lives across rounds, as ours and OpenFGL's)
           with cross-entropy on its training nodes, then the server sets the global weights to
           the node-count-weighted mean of the clients';
  scoring  after each round the global model (dropout off) is scored on every client; val and test
           accuracy are means over clients weighted by node count; the reported round is the first
           with the best validation accuracy, its test accuracy is the result.
The random draws (initialisation, dropout) are torch's, not ours: accuracies agree to noise, not bits.

Prints one JSON object: the accuracies and the phases in seconds (README.md says what each covers).
Threads: --threads sets OMP_NUM_THREADS and OPENBLAS_NUM_THREADS (before torch is imported) and
torch.set_num_threads.
"""
import argparse
import json
import os
import re
import sys
import time


def process_age():
    """Seconds since this process started (/proc/self/stat's starttime, in clock ticks since boot)."""
    with open('/proc/self/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()  # after "pid (comm)": field 3 is fields[0]
    with open('/proc/uptime') as f:
        uptime = float(f.read().split()[0])
    return uptime - int(fields[19]) / os.sysconf('SC_CLK_TCK')  # starttime is field 22


INTERPRETER_S = process_age()  # interpreter start-up, up to this module's first line (10 ms ticks)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--clients_npz', required=True, help='client<k>/{x,edge_index,y,train,val,test} (.npz)')
    p.add_argument('--rounds', type=int, default=100)
    p.add_argument('--epochs', type=int, default=3, help='local epochs per round')
    p.add_argument('--seed', type=int, default=2024, help='torch.manual_seed (initialisation, dropout)')
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--hidden', type=int, default=64)
    p.add_argument('--dropout', type=float, default=0.5)
    p.add_argument('--lr', type=float, default=0.01)
    p.add_argument('--weight_decay', type=float, default=5e-4)
    p.add_argument('--sparse_features', action='store_true',
                   help='keep X as a sparse COO tensor (X W by torch.sparse.mm), as our C++ does; default dense')
    args = p.parse_args(argv)
    if args.rounds < 1 or args.epochs < 0 or args.threads < 1:
        p.error(f'--rounds={args.rounds} (>= 1), --epochs={args.epochs} (>= 0), --threads={args.threads} (>= 1)')
    return args


ARGS = parse_args(sys.argv[1:])
# OpenMP and OpenBLAS read these when torch loads them: they must be set before the import.
os.environ['OMP_NUM_THREADS'] = os.environ['OPENBLAS_NUM_THREADS'] = str(ARGS.threads)
_t = time.perf_counter()
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
IMPORT_TORCH_S = time.perf_counter() - _t


def gcn_adjacency(edge_index, n):
    """D^-1/2 (A + I) D^-1/2 as a sparse COO tensor; edge_index [2, E] holds (row, column) pairs of A
    (both directions of an undirected edge), without self-loops. (CSR and an index_add_ propagation
    time the same here: X W dominates.)"""
    loops = torch.arange(n)
    row = torch.cat([edge_index[0], loops])
    col = torch.cat([edge_index[1], loops])
    deg = torch.zeros(n).index_add_(0, row, torch.ones(row.numel()))
    d = deg.pow(-0.5)
    return torch.sparse_coo_tensor(torch.stack([row, col]), d[row] * d[col], (n, n)).coalesce()


class GCN(torch.nn.Module):
    def __init__(self, num_features, hidden, num_classes, dropout):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.empty(num_features, hidden))
        self.b1 = torch.nn.Parameter(torch.zeros(hidden))
        self.w2 = torch.nn.Parameter(torch.empty(hidden, num_classes))
        self.b2 = torch.nn.Parameter(torch.zeros(num_classes))
        torch.nn.init.xavier_uniform_(self.w1)
        torch.nn.init.xavier_uniform_(self.w2)
        self.dropout = dropout

    def forward(self, x, adj):
        xw = torch.sparse.mm(x, self.w1) if x.is_sparse else x @ self.w1
        h = F.relu(torch.sparse.mm(adj, xw) + self.b1)
        h = F.dropout(h, self.dropout, self.training)
        return torch.sparse.mm(adj, h @ self.w2) + self.b2


class Client:
    def __init__(self, data, num_classes, args):
        self.x = data['x'].to_sparse() if args.sparse_features else data['x']
        self.y = data['y']
        self.train, self.val, self.test = data['train'], data['val'], data['test']
        self.num_nodes = data['x'].size(0)
        self.adj = gcn_adjacency(data['edge_index'], self.num_nodes)
        self.model = GCN(data['x'].size(1), args.hidden, num_classes, args.dropout)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    def train_round(self, global_state, epochs):
        self.model.load_state_dict(global_state)
        self.model.train()
        for _ in range(epochs):
            self.optimizer.zero_grad()
            loss = F.cross_entropy(self.model(self.x, self.adj)[self.train], self.y[self.train])
            loss.backward()
            self.optimizer.step()
        return {k: v.detach() for k, v in self.model.state_dict().items()}

    @torch.no_grad()
    def evaluate(self, model):
        """(val accuracy, test accuracy) of `model` here, in [0, 1]."""
        correct = model(self.x, self.adj).argmax(1) == self.y
        return tuple(float(correct[m].float().mean()) if m.any() else None for m in (self.val, self.test))


def weighted_mean(values, weights):
    """Mean of the values that exist (a client without val/test nodes is left out, as ours)."""
    pairs = [(v, w) for v, w in zip(values, weights) if v is not None]
    return 100.0 * sum(v * w for v, w in pairs) / sum(w for _, w in pairs) if pairs else 0.0


def main(args):
    torch.set_num_threads(args.threads)
    phases = {'interpreter_s': INTERPRETER_S, 'import_torch_s': IMPORT_TORCH_S}

    t = time.perf_counter()
    with np.load(args.clients_npz) as npz:
        ids = sorted(int(m.group(1)) for m in map(re.compile(r'client(\d+)/train').fullmatch, npz.files) if m)
        if not ids or ids != list(range(len(ids))):
            raise SystemExit(f'{args.clients_npz}: no client0..client<K-1>/train members (found clients {ids})')
        data = [{f: torch.from_numpy(npz[f'client{k}/{f}']) for f in ('x', 'edge_index', 'y', 'train', 'val', 'test')}
                for k in ids]
    phases['load_s'] = time.perf_counter() - t

    t = time.perf_counter()
    torch.manual_seed(args.seed)
    num_classes = int(max(int(d['y'].max()) for d in data)) + 1
    clients = [Client(d, num_classes, args) for d in data]
    server = GCN(data[0]['x'].size(1), args.hidden, num_classes, args.dropout)
    server.eval()  # it is only ever scored
    global_state = {k: v.detach().clone() for k, v in server.state_dict().items()}
    sizes = [c.num_nodes for c in clients]
    share = [n / sum(sizes) for n in sizes]
    phases['setup_s'] = time.perf_counter() - t

    train_s = aggregate_s = evaluate_s = 0.0
    history = []  # (round, val %, test %)
    t_rounds = time.perf_counter()
    for r in range(1, args.rounds + 1):
        t = time.perf_counter()
        states = [c.train_round(global_state, args.epochs) for c in clients]
        train_s += time.perf_counter() - t

        t = time.perf_counter()
        global_state = {k: sum(w * s[k] for w, s in zip(share, states)) for k in global_state}
        server.load_state_dict(global_state)
        aggregate_s += time.perf_counter() - t

        t = time.perf_counter()
        scores = [c.evaluate(server) for c in clients]
        history.append((r, weighted_mean([s[0] for s in scores], sizes), weighted_mean([s[1] for s in scores], sizes)))
        evaluate_s += time.perf_counter() - t
    phases['rounds_s'] = time.perf_counter() - t_rounds
    phases.update(train_s=train_s, aggregate_s=aggregate_s, evaluate_s=evaluate_s)

    best = history[0]
    for h in history:  # the first round with the highest validation accuracy, as ours
        if h[1] > best[1]:
            best = h
    phases['total_s'] = process_age()  # from process start; the last line adds only the print
    print(json.dumps({
        'test_acc': best[2], 'val_acc': best[1], 'best_round': best[0], 'last_test_acc': history[-1][2],
        'rounds': args.rounds, 'epochs': args.epochs, 'seed': args.seed, 'threads': args.threads,
        'sparse_features': args.sparse_features, 'clients': len(clients), 'client_sizes': sizes,
        'torch': torch.__version__,
        'phases': {k: round(v, 4) for k, v in phases.items()},
    }))


if __name__ == '__main__':
    main(ARGS)
