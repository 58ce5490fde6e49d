"""Whole runs of the port of the authors' FedEgo code (methods/fedego/reference/fedego_reference.py,
FedEgo/FedEgo@534c1de) on OUR Table 2 partition of Cora, as their main.py runs a FedEgo experiment
(mode 'fedego', GraphSAGE), for the companion of experiments/fedego/table2.textproto (cora_5):

  * seed_everything(seed); initial weights with upstream's distributions (draw_initial_states,
    seeded by the run's seed); every later draw (training nodes, NeighborLoader neighbours,
    server graphs, dropout) from torch's global generator;
  * options.py / main.py values: h 512, Adam lr 3e-4 (no weight decay), batch 32, 5 local and
    5 server epochs a round, dropout 0.5 (off at evaluation: model.eval()), upstream's loss
    -log(softmax + 1e-7), lamb_c = --lamb_c (default 0.25: our table's gamma for every seed;
    main.py tunes it per seed, Cora 0.125/0.125/0.125/0.25 for 1027/1107/2333/9973), upstream's
    server concatenation without edge-id offsets (utils.py:86-89; --server_edge_offset fixes it);
  * the round loop and evaluation of main.py:262-370: after each round every client's model
    (post-training Theta_i, mixed Phi_i) scores its local test nodes and every node of the global
    test graph; early stopping when round > 100 and the mean local-test loss exceeds 1.3 x its
    minimum so far (the round that trips it is scored, then the run ends);
  * the reported statistic as our table's card gives it (eval.round BEST_TEST, ambiguity A14): the
    max over rounds of the client-mean global-test micro-F1 (global_f1), and, independently, of
    the client-mean local-test micro-F1 (local_f1), the first round reaching each.

The clients are OURS (the port's own sampler is not used): the subgraphs, splits and global test
graph of the table's `fedego:local_fraction=0.5,local_test_nodes=200` partition (partition seed
2024, split fedego_tail:test=200), read from //methods/testing:trace as the differential tests
read them. The trace does not write the global test graph, and runs uncached, so its node ids come
from the partition cache file that //graph:inspect writes for the same partitioner, clients and
seed (into a temporary --cache_dir; graph/partition/partition_cache.cc's format), and its x, y and
edges from a second trace of the whole graph (one `random` client: every node, in id order); each
client's x, y and edges from the trace are checked against the whole graph at the cached ids
before any run. One thread; one JSON line per run into --records (runs already there, by seed,
rounds, lamb_c and server_edge_offset, are skipped, so a sweep resumes).

  /usr/bin/python3 experiments/authors_code/fedego_port_runs.py --seeds=1027,1107,2333,9973,2024-2029
  /usr/bin/python3 experiments/authors_code/fedego_port_runs.py --time   # 3 rounds: the sweep's cost
"""
import argparse
import glob
import os
import platform
import random
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_records import append_record, recorded, seeds_of  # noqa: E402
from methods.fedego.reference import fedego_reference as ref  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.pyg import Data  # noqa: E402
from methods.reference.trace import Subgraph  # noqa: E402

PORT = 'FedEgo/FedEgo@534c1de'
TABLE = 'experiments/fedego/table2.textproto'
# Table 2, column cora_5 (experiments/fedego/table2.textproto base and column overrides).
DATASET = 'cora'
CLIENTS = 5
PARTITIONER = 'fedego:local_fraction=0.5,local_test_nodes=200'
SPLIT = 'fedego_tail:test=200'
PARTITION_SEED = 2024
ROUNDS = 200
SEEDS = '1027,1107,2333,9973,2024-2029'  # the table's four, then six more (ten paired seeds)


def partition_ids(inspect_binary, data_dir, cache_dir):
    """The table's partition as //graph:inspect computes and caches it (the run's partitioner, clients
    and partition seed; the trace binary runs uncached): (clients' node ids, global test node ids)."""
    subprocess.run([inspect_binary, f'--dataset={DATASET}', f'--data_dir={data_dir}', f'--partitioner={PARTITIONER}',
                    f'--clients={CLIENTS}', f'--seed={PARTITION_SEED}', f'--cache_dir={cache_dir}'],
                   check=True, stdout=subprocess.DEVNULL)
    files = glob.glob(os.path.join(cache_dir, '*.fglpart'))
    if len(files) != 1:
        raise RuntimeError(f'expected one partition cache file in {cache_dir}, found {files}')
    return read_partition_cache(files[0])


def read_partition_cache(path):
    """graph/partition/partition_cache.cc EncodePartition: 'FGLPART\\0', u64 version (1), key,
    checksum, then u64 client count, each client's u64 list, the server nodes' list and
    server_keeps_topology (little-endian u64 throughout). Returns (clients, server_nodes)."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:8] != b'FGLPART\0':
        raise ValueError(f'{path}: not a partition cache file')
    version = struct.unpack_from('<Q', data, 8)[0]
    if version != 1:
        raise ValueError(f'{path}: format version {version}, expected 1')
    pos = 8 + 24

    def u64():
        nonlocal pos
        v = struct.unpack_from('<Q', data, pos)[0]
        pos += 8
        return v

    def ids():
        nonlocal pos
        n = u64()
        out = np.frombuffer(data, dtype='<u8', count=n, offset=pos).astype(np.int64)
        pos += 8 * n
        return out

    clients = [ids() for _ in range(u64())]
    server = ids()
    if u64() != 0 or pos != len(data):
        raise ValueError(f'{path}: unexpected server_keeps_topology or trailing bytes')
    return clients, server


def induced(whole, nodes):
    """The subgraph of `whole` (x, edge_index, y) induced by `nodes`, in their order."""
    n = whole['x'].shape[0]
    local = torch.full((n,), -1, dtype=torch.long)
    local[nodes] = torch.arange(nodes.numel())
    src, dst = whole['edge_index']
    keep = (local[src] >= 0) & (local[dst] >= 0)
    edge_index = torch.stack([local[src[keep]], local[dst[keep]]])
    return whole['x'][nodes], edge_index, whole['y'][nodes]


def _edge_set(edge_index):
    return set(map(tuple, edge_index.t().tolist()))


def client_data(trace_binary, inspect_binary, data_dir):
    """Our Table 2 clients (trace Subgraphs) and the global test graph (a pyg Data)."""
    trace_io.TRACE_BINARY = trace_binary
    common = f'dataset: "{DATASET}" method: "fedavg" rounds: 1 data_dir: "{data_dir}"'
    with tempfile.TemporaryDirectory() as tmp:
        spec = (f'{common} clients: {CLIENTS} partitioner: "{PARTITIONER}" split: "{SPLIT}" '
                f'partition_seed: {PARTITION_SEED}')
        trace = trace_io.run_trace(spec, os.path.join(tmp, 'clients.npz'))
        clients, server = partition_ids(inspect_binary, data_dir, os.path.join(tmp, 'cache'))
        whole_trace = trace_io.run_trace(f'{common} clients: 1 partitioner: "random"', os.path.join(tmp, 'whole.npz'))
    whole = {k: torch.from_numpy(whole_trace['client0/' + k]) for k in ('x', 'edge_index', 'y')}
    subgraphs = [Subgraph(trace, k) for k in range(CLIENTS)]
    if len(clients) != CLIENTS:
        raise RuntimeError(f'the cached partition has {len(clients)} clients')
    for k, (s, nodes) in enumerate(zip(subgraphs, clients)):
        x, edge_index, y = induced(whole, torch.from_numpy(nodes))
        if not (torch.equal(x, s.x) and torch.equal(y, s.y) and _edge_set(edge_index) == _edge_set(s.edge_index)):
            raise RuntimeError(f'client {k}: the trace differs from the whole graph at the cached node ids')
    x, edge_index, y = induced(whole, torch.from_numpy(server))
    global_test = Data(x=x, edge_index=edge_index, y=y)
    num_classes = int(whole['y'].max()) + 1
    return subgraphs, global_test, num_classes


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def first_max(values):
    best = 0
    for i, v in enumerate(values):
        if v > values[best]:
            best = i
    return best


def run(seed, subgraphs, global_test, num_classes, rounds, lamb_c, server_edge_offset):
    seed_everything(seed)
    initial = ref.draw_initial_states(subgraphs[0].x.shape[1], num_classes, len(subgraphs), hidden=512, seed=seed)
    port = ref.FedEgoReference(subgraphs, num_classes, initial, hidden=512, lr=3e-4, batch_size=32,
                               client_train_epoch=5, server_train_epoch=5, lamb_c=lamb_c, dropout=0.5,
                               early_stopping=100, server_edge_offset=server_edge_offset)
    curves = {'global_f1': [], 'local_f1': [], 'local_loss': [], 'lamb': []}
    stopped = None
    start = time.time()
    for r in range(1, rounds + 1):
        got = port.train_round()
        e = port.evaluate(global_test=global_test)
        curves['global_f1'].append(e['test_avg_f1'])
        curves['local_f1'].append(e['local_avg_f1'])
        curves['local_loss'].append(e['local_avg_loss'])
        curves['lamb'].append([round(v, 4) for v in got['lamb']])
        if e['stop']:  # main.py: the early-stopping test after the round's evaluation
            stopped = r
            break
    wall = time.time() - start
    g, loc = curves['global_f1'], curves['local_f1']
    bg, bl = first_max(g), first_max(loc)
    record = {
        'implementation': 'authors_code_port', 'port': PORT, 'method': 'fedego', 'seed': seed,
        'table': TABLE, 'column': 'cora_5', 'dataset': DATASET, 'clients': CLIENTS,
        'partition': f'{PARTITIONER} split {SPLIT} partition_seed {PARTITION_SEED}',
        'rounds': rounds, 'rounds_run': len(g), 'early_stopped_at': stopped,
        'lamb_c': lamb_c, 'server_edge_offset': server_edge_offset, 'loss': 'authors_code',
        'global_f1': round(g[bg], 4), 'global_best_round': bg + 1,
        'local_f1': round(loc[bl], 4), 'local_best_round': bl + 1,
        'last': {'global_f1': round(g[-1], 4), 'local_f1': round(loc[-1], 4)},
        'wall_s': round(wall, 1), 'wall_s_per_round': round(wall / len(g), 3),
        'torch': torch.__version__, 'machine': f'{platform.machine()} {os.cpu_count()} cores',
    }
    record['curves'] = {k: ([round(x, 4) for x in v] if k != 'lamb' else v) for k, v in curves.items()}
    return record


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--seeds', default=SEEDS)
    p.add_argument('--rounds', type=int, default=ROUNDS)
    p.add_argument('--lamb_c', type=float, default=0.25, help="gamma; the table's 0.25 for every seed")
    p.add_argument('--server_edge_offset', action='store_true',
                   help='shift each upload\'s edge ids (not upstream; upstream drops the later graphs\' edges)')
    p.add_argument('--time', action='store_true', help='time 3 rounds and print the sweep cost')
    p.add_argument('--records', default=os.path.join(ROOT, 'experiments/authors_code/records/fedego_port.jsonl'))
    p.add_argument('--trace_binary', default=os.path.join(ROOT, 'bazel-bin/methods/testing/trace'))
    p.add_argument('--inspect_binary', default=os.path.join(ROOT, 'bazel-bin/graph/inspect'))
    p.add_argument('--data_dir', default=os.environ.get('FGL_DATA_DIR', ''))
    a = p.parse_args()
    torch.set_num_threads(1)
    seeds = seeds_of(a.seeds)
    subgraphs, global_test, num_classes = client_data(a.trace_binary, a.inspect_binary, a.data_dir)
    print(f'clients: {[s.x.shape[0] for s in subgraphs]} nodes (pool {[int(s.train_idx.sum()) for s in subgraphs]}, '
          f'local test {[int(s.test_idx.sum()) for s in subgraphs]}); global test {global_test.x.shape[0]} nodes, '
          f'{global_test.edge_index.shape[1]} directed edges; {num_classes} classes', flush=True)
    if a.time:
        r = run(seeds[0], subgraphs, global_test, num_classes, 3, a.lamb_c, a.server_edge_offset)
        per_round = r['wall_s'] / 3
        per_run = per_round * a.rounds
        print(f'fedego port: {per_round:.2f} s a round, about {per_run:.0f} s a {a.rounds}-round run '
              f'(no early stop); {len(seeds)} seeds about {per_run * len(seeds) / 60:.0f} min on one core', flush=True)
        return
    done = recorded(a.records, 'method', 'seed', 'rounds', 'lamb_c', 'server_edge_offset')
    for seed in seeds:
        if ('fedego', seed, a.rounds, a.lamb_c, a.server_edge_offset) in done:
            continue
        r = run(seed, subgraphs, global_test, num_classes, a.rounds, a.lamb_c, a.server_edge_offset)
        append_record(a.records, r)
        print(f"fedego seed {seed}: global F1 {r['global_f1']:.4f} (round {r['global_best_round']}), local F1 "
              f"{r['local_f1']:.4f} (round {r['local_best_round']}), {r['rounds_run']} rounds, {r['wall_s']} s "
              f"({r['wall_s_per_round']} s a round)", flush=True)


if __name__ == '__main__':
    main()
