"""The round-level traces our C++ writes (//methods/testing:trace, federation_trace.h) in the
differential tests against the reference ports: running the trace binary, client data, our GCN's
tensors under the ports' PyG names, the largest difference between two states, and the tests'
main (which takes the built binary's path from bazel as --trace_binary)."""
import argparse
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import torch

# The trace binary, relative to the runfiles root (bazel runs the tests from there).
TRACE_BINARY = 'methods/testing/trace'


def run_trace(spec, path, flags=()):
    """Runs the trace binary on the FederationSpec text `spec`, writes `path` and returns its arrays."""
    subprocess.run([TRACE_BINARY, f'--spec={spec}', f'--out={path}', *flags], check=True)
    with np.load(path) as npz:
        return {k: npz[k] for k in npz.files}


class TracedConfigsTest(unittest.TestCase):
    """A differential test over CONFIGS (name -> configuration): before the tests, write_trace(name,
    config, out_dir) writes each configuration's trace into a temporary directory (self.traces by
    name); assertClose checks a difference against TOLERANCE."""
    CONFIGS = {}
    TOLERANCE = 1e-5

    @classmethod
    def write_trace(cls, name, config, out_dir):
        raise NotImplementedError

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.traces = {name: cls.write_trace(name, config, cls.tmp.name) for name, config in cls.CONFIGS.items()}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def assertClose(self, d, what):
        self.assertLessEqual(d, self.TOLERANCE, what)

    def assertAllClose(self, label, differences):
        """Prints the largest difference of `differences` (what -> |ours - port|) apart from the losses
        (keys ending in 'train_loss') and the largest loss difference, then checks each one."""
        tensors = {w: v for w, v in differences.items() if not w.endswith('train_loss')}
        worst = max(tensors, key=tensors.get)
        loss = max(v for w, v in differences.items() if w.endswith('train_loss'))
        print(f'{label}: largest |ours - port| = {tensors[worst]:.2e} ({worst}); train_loss {loss:.2e}')
        for what, value in differences.items():
            self.assertClose(value, f'{label}: {what}')


def main():
    """unittest.main for a differential test; --trace_binary overrides TRACE_BINARY."""
    global TRACE_BINARY
    parser = argparse.ArgumentParser()
    parser.add_argument('--trace_binary', default=TRACE_BINARY)
    args, rest = parser.parse_known_args()
    TRACE_BINARY = args.trace_binary
    unittest.main(module='__main__', argv=[sys.argv[0]] + rest)

# Our GCN ("gcn:layers=2") parameter names -> the ports' (PyG) state_dict keys. Our
# GCNConv weight is [in, out] (x W), PyG's lin.weight is [out, in] (x W^T).
GCN_NAMES = {
    'body.0.weight': ('conv1.lin.weight', True),
    'body.0.bias': ('conv1.bias', False),
    'head.0.weight': ('conv2.lin.weight', True),
    'head.0.bias': ('conv2.bias', False),
}

# The same under OpenFGL's GCN names (openfgl/model/gcn.py: a ModuleList `layers` of GCNConv).
OPENFGL_GCN_NAMES = {
    'body.0.weight': ('layers.0.lin.weight', True),
    'body.0.bias': ('layers.0.bias', False),
    'head.0.weight': ('layers.1.lin.weight', True),
    'head.0.bias': ('layers.1.bias', False),
}


class Subgraph:
    """Client k's data in a trace, as the ports take it (pyg.Data's fields)."""

    def __init__(self, trace, k):
        p = f'client{k}/'
        self.x = torch.from_numpy(trace[p + 'x'])
        self.edge_index = torch.from_numpy(trace[p + 'edge_index'])
        self.y = torch.from_numpy(trace[p + 'y'])
        self.train_idx = torch.from_numpy(trace[p + 'train'])
        self.val_idx = torch.from_numpy(trace[p + 'val'])
        self.test_idx = torch.from_numpy(trace[p + 'test'])


def gcn_state(trace, prefix, names=None):
    """The port's GCN state_dict from our tensors under `prefix/` (names: GCN_NAMES by default)."""
    state = {}
    for ours, (theirs, transpose) in (names or GCN_NAMES).items():
        key = f'{prefix}/{ours}'
        if key not in trace:
            raise KeyError(f'{key} not in the trace; it has {sorted(k for k in trace if k.startswith(prefix))}')
        t = torch.from_numpy(trace[key])
        state[theirs] = t.t().contiguous() if transpose else t
    return state


def optimizer_state(optimizer, model):
    """The port's optimiser state under our names: {'momentum_buffer' | 'exp_avg' | 'exp_avg_sq' |
    'step': {our parameter name: tensor in our layout}} (parameters not stepped yet are absent)."""
    ours_of = {theirs: (ours, transpose) for ours, (theirs, transpose) in GCN_NAMES.items()}
    out = {}
    for name, p in model.named_parameters():
        ours, transpose = ours_of[name]
        for key, value in optimizer.state.get(p, {}).items():
            value = torch.as_tensor(value, dtype=torch.float32)
            out.setdefault(key, {})[ours] = value.t() if transpose and value.dim() == 2 else value
    return out


def our_optimizer_state(trace, prefix, shared):
    """Our optimiser state in a trace's client state (fl::LocalModel::AddState; with `shared`, the
    model under fl::MutualClient's "shared." prefix: FML's meme, FedKD's mentee), keyed as
    optimizer_state()."""
    p = 'shared.' if shared else ''
    out = {}
    for ours in GCN_NAMES:
        for opt, key in (('sgd', 'momentum_buffer'), ('adam', 'exp_avg'), ('adam', 'exp_avg_sq')):
            k = f'{prefix}/{p}{opt}.{key}.{p}{ours}'
            if k in trace:
                out.setdefault(key, {})[ours] = torch.from_numpy(trace[k])
        k = f'{prefix}/scalar/{p}adam.step.{p}{ours}'
        if k in trace:
            out.setdefault('step', {})[ours] = torch.tensor(float(trace[k]))
    return out


def gcn_adam_difference(trace, prefix, port_adam):
    """The largest difference between our GCN's Adam moments and steps under prefix/ in a trace and
    the port's (its optimizer state as optimizer_state returns it, keyed by its parameter names)."""
    worst = 0.0
    for ours, (theirs, transpose) in GCN_NAMES.items():
        for moment in ('exp_avg', 'exp_avg_sq'):
            t = torch.from_numpy(trace[f'{prefix}/adam.{moment}.{ours}'])
            p = port_adam[moment][theirs]
            worst = max(worst, float((t - (p.t() if transpose else p)).abs().max()))
        worst = max(worst, abs(float(trace[f'{prefix}/scalar/adam.step.{ours}']) - float(port_adam['step'][theirs])))
    return worst


def max_difference(ours, theirs):
    """The largest |ours - theirs| over the tensors of `theirs`."""
    return max(float((ours[k] - theirs[k]).abs().max()) for k in theirs)
