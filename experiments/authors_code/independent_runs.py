"""Whole runs of the independent second implementations of nFedGNN/CNFGNN and FedMpa/FedMpae/LocMpa
(written from the papers and seeds_fedmpa_nodelevel.md: none of these papers has public code) on the
settings of our committed table cells, so that experiments/reports/{nfedgnn,fedmpa}/authors_code.md
can put our runs beside the oracle's as distributions over seeds:

  nfedgnn: experiments/nfedgnn/fig4_5.textproto rows cnfgnn, nfedgnn_l0, nfedgnn_l10 on column
    cora_gcn (citeseer_gcn with --column): one user per node, the split GCN (hidden 16, dropout 0.5,
    lr 0.1), Adam with weight decay 5e-4 on the server and every user, 200 rounds of one step, every
    user every round, the Planetoid public split with row-normalised features; the test accuracy
    after round 200 (the table's round "last"). methods/nfedgnn/reference/nfedgnn_reference.py and
    methods/cnfgnn/reference/cnfgnn_reference.py with their defaults, which are the options our
    NfedgnnParams defaults compute (their differential tests): mean CE, users receive
    ∂(L_CE + λL_reg)/∂x̄_i, the users' bias, independent user maps (CNFGNN: one shared draw), every
    user steps. Initial states and the rounds' dropout masks come from one torch.Generator seeded
    with the seed.
  fedmpa: experiments/fedmpa/table2.textproto rows locmpa, fedmpa, fedmpae on column cora_3: three
    Louvain clients (partition seed 2024), 1%/20%/20% label-rate split, the MLP [64, 64, C] with
    dropout 0.5 before every layer and on every propagation step (K 10, α 0.1), Adam lr 0.01, 20
    FedMLP rounds, the local stage of at most 200 epochs with patience 50 and restore-best, β = γ = 1;
    each client's own model on its own data, its test accuracy weighted by the clients' node counts
    (the table's eval weighting "node"; the oracle's micro_test, weighted by test-mask sizes, is kept
    beside it). methods/fedmpa/reference/fedmpa_reference.py with its defaults (our
    FedMpaParams defaults). The initial MLP (LocMpa: one per client) is drawn with a torch.Generator
    seeded with the seed; dropout draws from torch's global RNG, seeded with it (torch.manual_seed).

The client data (the users' rows, the server's graph, the clients' subgraphs and masks) come from our
reader of the same files through //methods/testing:trace, as in the differential tests. One thread;
one JSON line per run appended to --records; runs already there are skipped, so a sweep resumes.

  /usr/bin/python3 experiments/authors_code/independent_runs.py --paper=fedmpa --seeds=2024-2033
  /usr/bin/python3 experiments/authors_code/independent_runs.py --paper=nfedgnn --seeds=2024-2033
  /usr/bin/python3 experiments/authors_code/independent_runs.py --paper=nfedgnn --time   # the cost
  /usr/bin/python3 experiments/authors_code/independent_runs.py --paper=nfedgnn --batched --seeds=2034-2073

--batched (nFedGNN's λ rows nfedgnn_l0, nfedgnn_l10 only; the default rows then): the same run with the
per-user maps and Adams batched into tensors over the users' non-zero feature rows
(nfedgnn_batched_oracle.py: the oracle's computation, its initial states, draws and server; seconds a
run instead of minutes). Its records carry "runner": "batched"; the others have no "runner" field.
CNFGNN (one shared map averaged every round) always runs the per-user oracle: --batched with
--methods=cnfgnn is an error.

Speed: the nFedGNN oracle copies every user's map and Adam moments into each round's result (for the
round-by-round differential tests); a whole run reads none of it, so `_clone_state`/`_adam_state`
are replaced in the nFedGNN module's namespace by stubs (train_round's copies only; CNFGNN's average
uses its own binding, untouched), and evaluation runs every 10th round instead of every round. The
computation of the run is the oracle's, unchanged.
"""
import argparse
import os
import platform
import sys
import tempfile
import time

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_records import append_record, recorded, seeds_of  # noqa: E402
from nfedgnn_batched_oracle import BatchedNFedGnn  # noqa: E402
from methods.cnfgnn.reference import cnfgnn_reference as cnf  # noqa: E402
from methods.fedmpa.reference import fedmpa_reference as mpa  # noqa: E402
from methods.nfedgnn.reference import nfedgnn_reference as nfg  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.trace import Subgraph  # noqa: E402

RECORDS = {p: os.path.join(ROOT, f'experiments/authors_code/records/{p}_oracle.jsonl') for p in ('nfedgnn', 'fedmpa')}
ORACLE = {'nfedgnn': 'methods/nfedgnn/reference/nfedgnn_reference.py + methods/cnfgnn/reference/cnfgnn_reference.py',
          'fedmpa': 'methods/fedmpa/reference/fedmpa_reference.py'}

# Table column -> (the trace's data spec, number of classes).
NFEDGNN_COLUMNS = {
    'cora_gcn': ('dataset: "cora:row_normalize=true" clients: 2708', 7),
    'citeseer_gcn': ('dataset: "citeseer:row_normalize=true" clients: 3327', 6),
}
NFEDGNN_METHODS = {'cnfgnn': 0.0, 'nfedgnn_l0': 0.0, 'nfedgnn_l10': 10.0}  # row -> λ
NFEDGNN_BATCHABLE = ['nfedgnn_l0', 'nfedgnn_l10']  # the rows --batched runs (nfedgnn_batched_oracle.py)
FEDMPA_COLUMNS = {'cora_3': ('dataset: "cora" clients: 3', 7)}
FEDMPA_METHODS = ['locmpa', 'fedmpa', 'fedmpae']
EVAL_EVERY = 10


def trace_arrays(spec, trace_binary, data_dir):
    trace_io.TRACE_BINARY = trace_binary
    with tempfile.TemporaryDirectory() as tmp:
        return trace_io.run_trace(f'{spec} data_dir: "{data_dir}"', os.path.join(tmp, 'data.npz'))


def nfedgnn_data(column, trace_binary, data_dir):
    """(x, edge_index, y, train, val, test, num_classes) of the node-level setting, from a one-round trace."""
    data, classes = NFEDGNN_COLUMNS[column]
    a = trace_arrays(f'{data} partitioner: "node_level" split: "provided:index=0" method: "nfedgnn" '
                     'model: "gcn:layers=2,hidden=16,dropout=0.5" rounds: 1 local_epochs: 1 lr: 0.1 '
                     'weight_decay: 0.0005 eval { model: GLOBAL round: LAST }', trace_binary, data_dir)
    t = lambda k: torch.from_numpy(np.array(a[k]))  # noqa: E731
    return (t('users/x'), t('users/edge_index'), t('users/y'), t('users/train'), t('users/val'), t('users/test'),
            classes)


def fedmpa_data(column, trace_binary, data_dir):
    """The clients' subgraphs of Table 2's partition and split (they do not depend on the seed)."""
    data, classes = FEDMPA_COLUMNS[column]
    a = trace_arrays(f'{data} partitioner: "louvain:class_coverage_fix=true,rebalance=false" partition_seed: 2024 '
                     'split: "label_rate:train=0.01,val=0.2,test=0.2" method: "fedavg" '
                     'model: "gcn:layers=2,hidden=16,dropout=0" rounds: 1 local_epochs: 1 lr: 0.01 weight_decay: 0',
                     trace_binary, data_dir)
    clients = int(data.split('clients: ')[1])
    return [Subgraph(a, k) for k in range(clients)], classes


def stub_state_copies():
    """train_round's per-round copies of every state (read only by the differential tests)."""
    nfg._clone_state = lambda module: {}
    nfg._adam_state = lambda module, opt: {}


def nfedgnn_oracle(method, data, seed, batched=False):
    """(oracle, generator) of a row; batched: the nFedGNN rows' users batched (BatchedNFedGnn), from the
    same draws."""
    x, _, _, _, _, _, classes = data
    if batched and method not in NFEDGNN_BATCHABLE:
        raise ValueError(f'{method}: only {NFEDGNN_BATCHABLE} have a batched runner')
    g = torch.Generator().manual_seed(seed)
    if method == 'cnfgnn':
        states = cnf.draw_cnfgnn_initial_states(x.size(0), x.size(1), classes, generator=g)
        oracle = cnf.CnfgnnReference(*data, initial_states=states, lr=0.1, dropout=0.5, weight_decay=5e-4,
                                     eval_each_round=False)
    else:
        states = nfg.draw_initial_states(x.size(0), x.size(1), classes, generator=g)
        if batched:
            oracle = BatchedNFedGnn(*data, initial_states=states, lam=NFEDGNN_METHODS[method], lr=0.1, dropout=0.5,
                                    weight_decay=5e-4)
        else:
            oracle = nfg.NFedGnnReference(*data, initial_states=states, lam=NFEDGNN_METHODS[method], lr=0.1,
                                          dropout=0.5, weight_decay=5e-4, eval_each_round=False)
    return oracle, g


def run_nfedgnn(method, column, seed, data, rounds, batched=False):
    torch.manual_seed(seed)
    start = time.time()
    oracle, g = nfedgnn_oracle(method, data, seed, batched)
    curve = []
    for r in range(1, rounds + 1):
        oracle.train_round(oracle.draw_round(g))
        if r % EVAL_EVERY == 0 or r == rounds:
            curve.append([r, oracle.evaluate()['acc_test']])
    ev = oracle.evaluate()
    return {'paper': 'nfedgnn', 'table': 'experiments/nfedgnn/fig4_5.textproto', 'method': method, 'column': column,
            'seed': seed, 'rounds': rounds, 'lambda': NFEDGNN_METHODS[method], 'test_acc': ev['acc_test'],
            'val_acc': ev['acc_val'], 'train_acc': ev['acc_train'], 'loss': round(ev['loss'], 6),
            'test_curve': curve, 'wall_s': round(time.time() - start, 1)}


def run_fedmpa(method, column, seed, data):
    subgraphs, classes = data
    torch.manual_seed(seed)
    start = time.time()
    g = torch.Generator().manual_seed(seed)
    feat = subgraphs[0].x.shape[1]
    if method == 'locmpa':
        init = {'clients': [mpa.glorot_mlp_state(feat, (64, 64), classes, generator=g) for _ in subgraphs]}
    else:
        init = {'server': mpa.glorot_mlp_state(feat, (64, 64), classes, generator=g)}
    oracle = mpa.FedMpaReference(subgraphs, classes, init, variant=method, dropout=0.5, lr=0.01, K=10, alpha=0.1,
                                 fedmlp_rounds=20, max_epochs=200, patience=50)
    out = oracle.run()
    ev = out['eval']
    # Our table's evaluation: the clients' accuracies weighted by their node counts (eval weighting
    # "node"); the oracle's micro_test weighs them by their test-mask sizes instead, kept beside it.
    nodes = [s.x.shape[0] for s in subgraphs]
    weighted = {split: sum(n * c['acc_' + split] for n, c in zip(nodes, ev['clients'])) / sum(nodes)
                for split in ('val', 'test')}
    return {'paper': 'fedmpa', 'table': 'experiments/fedmpa/table2.textproto', 'method': method, 'column': column,
            'seed': seed, 'rounds': 0 if method == 'locmpa' else 20, 'test_acc': weighted['test'],
            'val_acc': weighted['val'], 'micro_test': ev['micro_test'], 'macro_test': ev['macro_test'],
            'client_nodes': nodes, 'client_test_acc': [c['acc_test'] for c in ev['clients']],
            'best_epoch': out['local']['best_epoch'], 'epochs_run': out['local']['epochs_run'],
            'wall_s': round(time.time() - start, 1)}


def time_nfedgnn(column, data, methods, rounds=3, batched=False):
    total = 0.0
    for method in methods:
        oracle, g = nfedgnn_oracle(method, data, 2024, batched)
        oracle.train_round(oracle.draw_round(g))  # warm-up
        start = time.time()
        for _ in range(rounds):
            oracle.train_round(oracle.draw_round(g))
        per_round = (time.time() - start) / rounds
        total += per_round * 200
        print(f'{method} on {column}: {per_round:.2f} s a round, about {per_round * 200 / 60:.1f} min a 200-round run',
              flush=True)
    print(f'10 seeds of the {len(methods)} rows: about {total * 10 / 60:.0f} min at one thread')


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--paper', choices=['nfedgnn', 'fedmpa'], required=True)
    p.add_argument('--column', default=None, help='nfedgnn: cora_gcn (default) or citeseer_gcn; fedmpa: cora_3')
    p.add_argument('--seeds', default='2024-2033')
    p.add_argument('--methods', default=None,
                   help='comma-separated rows (default: all three; with --batched, nfedgnn_l0,nfedgnn_l10)')
    p.add_argument('--batched', action='store_true',
                   help='nfedgnn only, rows nfedgnn_l0/nfedgnn_l10 only (cnfgnn is an error): the oracle with '
                        'the per-user maps and Adams batched (nfedgnn_batched_oracle.py); records get '
                        '"runner": "batched"')
    p.add_argument('--rounds', type=int, default=200, help='nfedgnn only')
    p.add_argument('--records', default=None)
    p.add_argument('--time', action='store_true', help='time a few rounds (nfedgnn) or one run of each (fedmpa)')
    p.add_argument('--trace_binary', default=os.path.join(ROOT, 'bazel-bin/methods/testing/trace'))
    p.add_argument('--data_dir', default=os.environ.get('FGL_DATA_DIR', ''))
    a = p.parse_args()
    torch.set_num_threads(1)
    column = a.column or ('cora_gcn' if a.paper == 'nfedgnn' else 'cora_3')
    methods = a.methods.split(',') if a.methods else list(
        (NFEDGNN_BATCHABLE if a.batched else NFEDGNN_METHODS) if a.paper == 'nfedgnn' else FEDMPA_METHODS)
    if a.batched and a.paper != 'nfedgnn':
        p.error('--batched is for --paper=nfedgnn only')
    if a.batched and set(methods) - set(NFEDGNN_BATCHABLE):
        p.error(f'--batched runs only the rows {",".join(NFEDGNN_BATCHABLE)}; '
                f'run {",".join(sorted(set(methods) - set(NFEDGNN_BATCHABLE)))} without it (the per-user oracle)')
    records = a.records or RECORDS[a.paper]
    if a.paper == 'nfedgnn':
        stub_state_copies()
        data = nfedgnn_data(column, a.trace_binary, a.data_dir)
        if a.time:
            time_nfedgnn(column, data, methods, batched=a.batched)
            return
    else:
        data = fedmpa_data(column, a.trace_binary, a.data_dir)
        if a.time:
            total = 0.0
            for method in methods:
                r = run_fedmpa(method, column, 2024, data)
                total += r['wall_s']
                print(f"{method} on {column}: {r['wall_s']} s a run (test {r['test_acc']:.2f})", flush=True)
            print(f'10 seeds of the three rows: about {total * 10 / 60:.0f} min at one thread')
            return
    done = recorded(records, 'method', 'column', 'seed', 'rounds')
    os.makedirs(os.path.dirname(records), exist_ok=True)
    for seed in seeds_of(a.seeds):
        for method in methods:
            rounds = a.rounds if a.paper == 'nfedgnn' else (0 if method == 'locmpa' else 20)
            if (method, column, seed, rounds) in done:
                continue
            if a.paper == 'nfedgnn':
                r = run_nfedgnn(method, column, seed, data, a.rounds, batched=a.batched)
            else:
                r = run_fedmpa(method, column, seed, data)
            r.update({'implementation': 'independent_oracle', 'oracle': ORACLE[a.paper], 'torch': torch.__version__,
                      'machine': f'{platform.machine()} {os.cpu_count()} cores'})
            if a.batched:
                r['runner'] = 'batched'
            append_record(records, r)
            print(f"{method} {column} seed {seed}: test {r['test_acc']:.2f}, {r['wall_s']} s", flush=True)


if __name__ == '__main__':
    main()
