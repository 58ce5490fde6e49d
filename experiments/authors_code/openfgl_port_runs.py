"""Whole runs of the ports of OpenFGL's baselines (methods/<m>/reference/<m>_openfgl.py, on top of
methods/reference/openfgl.py) on OpenFGL's own Cora Louvain-10 and -20 partitions, as OpenFGL's
FGLTrainer runs them: seed_everything(seed), then the clients' and the server's models drawn from
the seeded torch generator (clients first), 100 rounds of 3 local epochs with OpenFGL's defaults
(GCN 2×64, dropout 0.5, Adam lr 1e-2, wd 5e-4, the methods' default configs), evaluation after each
round (local_model_on_local_data, node-count weights) and the test accuracy of the first round with
the best validation accuracy. One thread.

Each evaluated model is scored twice, so one training run gives both evaluation variants:
  off: OpenFGL's own evaluation (model.eval(): no dropout);
  on:  the GCN's dropout left on at evaluation (FedTAD's official code's protocol; ours:
       eval.dropout_at_eval), with its own generator (seed, round) inside torch.random.fork_rng,
       so the training's random stream is the same as without it. As in ours, only the GCN's
       dropout is on: AdaFGL's step-2 modules score in eval mode in both variants.
One JSON line per run is appended to --records; runs already there are skipped (resumable).

  /usr/bin/python3 experiments/authors_code/openfgl_port_runs.py --seeds=2024-2033 \
      --methods=fedavg,fedprox,scaffold,moon,feddc --partitions=10,20
  /usr/bin/python3 experiments/authors_code/openfgl_port_runs.py --time   # one run's cost per method

Client data comes from our reader of the same files (//methods/testing:trace runs the
`reference:` partitioner on them), as fedtad_port_runs.py does.
"""
import argparse
import contextlib
import importlib
import os
import platform
import random
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_records import append_record, recorded, seeds_of  # noqa: E402
from methods.reference import openfgl  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.trace import Subgraph  # noqa: E402

PORT = openfgl.UPSTREAM
PARTITIONS = {10: 'reference_partitions/openfgl/subgraph_fl_louvain_1_Cora_client_10',
              20: 'reference_partitions/openfgl/subgraph_fl_louvain_1_Cora_client_20'}
# method -> (module, class, keyword arguments): OpenFGL's defaults everywhere. FGSSL's losses that
# upstream computes and discards (compute_unused) are skipped: they change no gradient and draw no
# random number, and they crash on a trailing isolated node.
METHODS = {
    'fedavg': ('methods.fedavg.reference.fedavg_openfgl', 'FedAvgOpenFgl', {}),
    'fedprox': ('methods.fedprox.reference.fedprox_openfgl', 'FedProxOpenFgl', {}),
    'scaffold': ('methods.scaffold.reference.scaffold_openfgl', 'ScaffoldOpenFgl', {}),
    'moon': ('methods.moon.reference.moon_openfgl', 'MoonOpenFgl', {}),
    'feddc': ('methods.feddc.reference.feddc_openfgl', 'FedDCOpenFgl', {}),
    'fedproto': ('methods.fedproto.reference.fedproto_openfgl', 'FedProtoOpenFgl', {}),
    'fedtgp': ('methods.fedtgp.reference.fedtgp_openfgl', 'FedTGPOpenFgl', {}),
    'fedgta': ('methods.fedgta.reference.fedgta_openfgl', 'FedGTAOpenFgl', {}),
    'fgssl': ('methods.fgssl.reference.fgssl_openfgl', 'FgsslOpenFgl', {'compute_unused': False}),
    'adafgl': ('methods.adafgl.reference.adafgl_openfgl', 'AdaFGLOpenFgl', {}),
}


def client_data(trace_binary, data_dir, clients):
    spec = (f'dataset: "cora" clients: {clients} partitioner: "reference:{PARTITIONS[clients]}" method: "fedavg" '
            f'rounds: 1 data_dir: "{data_dir}"')
    trace_io.TRACE_BINARY = trace_binary
    with tempfile.TemporaryDirectory() as tmp:
        trace = trace_io.run_trace(spec, os.path.join(tmp, 'data.npz'))
    return [Subgraph(trace, k) for k in range(clients)]


def seed_everything(seed):
    # xkLi-Allen/OpenFGL@5483768 openfgl/utils/basic_utils.py seed_everything (cuda lines: no effect here)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _gcn_forward_dropout_on(self, data):
    """openfgl.GCN.forward (openfgl/model/gcn.py:21-30) with dropout on whatever the mode."""
    x, edge_index = data.x, data.edge_index
    for layer in self.layers[:-1]:
        x = layer(x, edge_index)
        x = F.relu(x)
        x = F.dropout(x, p=self.dropout, training=True)
    logits = self.layers[-1](x, edge_index)
    return x, logits


@contextlib.contextmanager
def gcn_dropout_on(seed, round_id):
    """Every OpenFGL GCN keeps its dropout on; its draws come from (seed, round) and leave the
    global generator as it was."""
    saved = openfgl.GCN.forward
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed * 1000 + round_id)
        openfgl.GCN.forward = _gcn_forward_dropout_on
        try:
            yield
        finally:
            openfgl.GCN.forward = saved


def score(port):
    """FGLTrainer.evaluate's current round (node-count-weighted val/test accuracy, in %) without
    touching the port's running best (each variant keeps its own below)."""
    saved = dict(port.evaluation_result)
    r = port.evaluate()
    port.evaluation_result = saved
    return 100.0 * r['current_val_accuracy'], 100.0 * r['current_test_accuracy']


def best_round(val):
    best, best_val = 0, 0.0  # trainer.py: strictly greater than the running best, which starts at 0
    for i, v in enumerate(val):
        if v > best_val:
            best_val, best = v, i
    return best


def run(method, seed, clients, subgraphs, rounds):
    module, cls, kwargs = METHODS[method]
    port_class = getattr(importlib.import_module(module), cls)
    seed_everything(seed)
    port = port_class(subgraphs, num_classes=7, **kwargs)
    curves = {'val_on': [], 'test_on': [], 'val_off': [], 'test_off': []}
    start = time.time()
    for r in range(rounds):
        port.train_round()  # trainer.py: each round trains, then evaluates
        v, t = score(port)
        curves['val_off'].append(v)
        curves['test_off'].append(t)
        with gcn_dropout_on(seed, r):
            v, t = score(port)
        curves['val_on'].append(v)
        curves['test_on'].append(t)
    record = {'implementation': 'openfgl_port', 'port': PORT, 'method': method, 'seed': seed, 'clients': clients,
              'partition': PARTITIONS[clients], 'rounds': rounds, 'wall_s': round(time.time() - start, 1),
              'torch': torch.__version__, 'machine': f'{platform.machine()} {os.cpu_count()} cores'}
    for variant in ('on', 'off'):
        val = curves['val_' + variant]
        b = best_round(val)
        record[f'dropout_{variant}'] = {'best_round': b, 'val_acc': round(val[b], 4),
                                        'test_acc': round(curves['test_' + variant][b], 4)}
    record['curves'] = {k: [round(x, 4) for x in v] for k, v in curves.items()}
    return record


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--seeds', default='2024-2033')
    p.add_argument('--methods', default=','.join(METHODS))
    p.add_argument('--partitions', default='10,20')
    p.add_argument('--rounds', type=int, default=100)
    p.add_argument('--time', action='store_true', help='time 3 rounds of each method and print the sweep cost')
    p.add_argument('--records', default=os.path.join(ROOT, 'experiments/authors_code/records/openfgl_port.jsonl'))
    p.add_argument('--trace_binary', default=os.path.join(ROOT, 'bazel-bin/methods/testing/trace'))
    p.add_argument('--data_dir', default=os.environ.get('FGL_DATA_DIR', ''))
    a = p.parse_args()
    torch.set_num_threads(1)
    methods = a.methods.split(',')
    partitions = [int(c) for c in a.partitions.split(',')]
    seeds = seeds_of(a.seeds)
    data = {c: client_data(a.trace_binary, a.data_dir, c) for c in partitions}
    if a.time:
        total = 0.0
        for method in methods:
            for c in partitions:
                r = run(method, seeds[0], c, data[c], 3)
                per_run = r['wall_s'] / 3 * a.rounds
                total += per_run * len(seeds)
                print(f'{method} Cora-{c}: {r["wall_s"] / 3:.2f} s a round, about {per_run:.0f} s a run', flush=True)
        print(f'sweep: {len(methods)} methods x {len(partitions)} partitions x {len(seeds)} seeds, '
              f'about {total / 60:.0f} min on one core', flush=True)
        return
    done = recorded(a.records, 'method', 'clients', 'seed', 'rounds')
    os.makedirs(os.path.dirname(a.records), exist_ok=True)
    for method in methods:
        for seed in seeds:
            for c in partitions:
                if (method, c, seed, a.rounds) in done:
                    continue
                r = run(method, seed, c, data[c], a.rounds)
                append_record(a.records, r)
                print(f"{method} Cora-{c} seed {seed}: test {r['dropout_on']['test_acc']:.2f} (dropout on), "
                      f"{r['dropout_off']['test_acc']:.2f} (off), {r['wall_s']} s", flush=True)


if __name__ == '__main__':
    main()
