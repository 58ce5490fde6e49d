"""Whole runs of the port of the authors' FedTAD code (methods/fedtad/reference) on their own Cora
Louvain-10 partition, as their train_fedtad.py / train_fedavg.py run it: seed_everything(seed),
dropout 0.5 (always on, evaluation included), 100 rounds, evaluation at the start of each round,
the best-validation round's test accuracy, and the class reliabilities the authors committed
(ckr/Cora_Louvain_10.pt at 07a1617). Each run also scores every evaluated model with dropout off
(no random draws, so the authors' stream is unchanged). One JSON line per run is appended to
--records; runs already there are skipped, so an interrupted sweep resumes.

  /usr/bin/python3 experiments/authors_code/fedtad_port_runs.py --seeds=2024-2037 \
      --methods=fedavg,fedtad --records=experiments/authors_code/records/fedtad_port.jsonl

Client data comes from our reader of the same files (//methods/testing:trace, checked equal
to the stored x, y, edges and masks: graph/README.md).
"""
import argparse
import os
import platform
import random
import sys
import tempfile
import time

import numpy as np
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweep_records import append_record, recorded, seeds_of  # noqa: E402
from methods.fedtad.reference import fedtad_reference as ref  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.trace import Subgraph  # noqa: E402

PARTITION = 'reference_partitions/fedtad_cora_louvain_10'
PORT = 'zyl24/FedTAD@3285d54 (ckr from 07a1617)'


def client_data(trace_binary, data_dir):
    spec = (f'dataset: "cora" clients: 10 partitioner: "reference:{PARTITION}" method: "fedavg" rounds: 1 '
            f'data_dir: "{data_dir}"')
    trace_io.TRACE_BINARY = trace_binary
    with tempfile.TemporaryDirectory() as tmp:
        trace = trace_io.run_trace(spec, os.path.join(tmp, 'data.npz'))
    return [Subgraph(trace, k) for k in range(10)]


def evaluate_dropout_off(port):
    saved = [m.dropout for m in port.local_models]
    for m in port.local_models:
        m.dropout = 0.0
    r = port.evaluate()
    for m, d in zip(port.local_models, saved):
        m.dropout = d
    return r


def run(method, seed, subgraphs, ckr, rounds):
    # zyl24/FedTAD@3285d54 util/base_util.py:73-82 seed_everything (the cuda lines have no effect here)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    port = ref.FedTadReference(subgraphs, num_classes=7, global_num_nodes=sum(s.x.shape[0] for s in subgraphs),
                               ckr=ckr if method == 'fedtad' else None, global_state=None, generator_state=None,
                               dropout=0.5, fedtad=method == 'fedtad', diversity_once=True)
    curves = {'val_on': [], 'test_on': [], 'val_off': [], 'test_off': []}
    start = time.time()
    for _ in range(rounds):
        on = port.evaluate()  # train_fedtad.py:121-159: the model of the previous round, dropout on
        off = evaluate_dropout_off(port)
        curves['val_on'].append(on['val'])
        curves['test_on'].append(on['test'])
        curves['val_off'].append(off['val'])
        curves['test_off'].append(off['test'])
        port.train_round()
    record = {'implementation': 'authors_code_port', 'port': PORT, 'method': method, 'seed': seed,
              'partition': PARTITION, 'rounds': rounds, 'wall_s': round(time.time() - start, 1),
              'torch': torch.__version__, 'machine': f'{platform.machine()} {os.cpu_count()} cores'}
    for variant in ('on', 'off'):
        val = curves['val_' + variant]
        best, best_val = 0, -1.0
        for i, v in enumerate(val):  # strictly greater: the first best round, as train_fedtad.py:153
            if v > best_val:
                best_val, best = v, i
        record[f'dropout_{variant}'] = {'best_round': best, 'val_acc': val[best],
                                        'test_acc': curves['test_' + variant][best]}
    record['curves'] = {k: [round(x, 4) for x in v] for k, v in curves.items()}
    return record


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--seeds', default='2024-2037')
    p.add_argument('--methods', default='fedavg,fedtad')
    p.add_argument('--rounds', type=int, default=100)
    p.add_argument('--records', default=os.path.join(ROOT, 'experiments/authors_code/records/fedtad_port.jsonl'))
    p.add_argument('--trace_binary', default=os.path.join(ROOT, 'bazel-bin/methods/testing/trace'))
    p.add_argument('--data_dir', default=os.environ.get('FGL_DATA_DIR', ''))
    a = p.parse_args()
    torch.set_num_threads(1)
    done = recorded(a.records, 'method', 'seed', 'rounds')
    subgraphs = client_data(a.trace_binary, a.data_dir)
    ckr = torch.load(os.path.join(a.data_dir, PARTITION, 'ckr_Cora_Louvain_10.pt'), map_location='cpu')
    os.makedirs(os.path.dirname(a.records), exist_ok=True)
    for seed in seeds_of(a.seeds):
        for method in a.methods.split(','):
            if (method, seed, a.rounds) in done:
                continue
            r = run(method, seed, subgraphs, ckr, a.rounds)
            append_record(a.records, r)
            print(f"{method} seed {seed}: test {r['dropout_on']['test_acc']:.2f} (dropout on), "
                  f"{r['dropout_off']['test_acc']:.2f} (off), {r['wall_s']} s", flush=True)


if __name__ == '__main__':
    main()
