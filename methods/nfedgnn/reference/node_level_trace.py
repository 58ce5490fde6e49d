"""The node-level runtime's trace (//methods/testing:trace on nfedgnn / cnfgnn, fl/node_level's
RoundTracer; members in methods/testing/federation_trace.h) as the oracles take it, for the
differential tests of nFedGNN and CNFGNN: a small sparse dataset, the run's spec, our initial
states and dropout masks in the oracle's layout, and our per-round tensors beside the oracle's.

Our users store a map row only where the user's feature is non-zero (one row per entry of
users/entry_{user,col}); a row for a zero feature never reaches an output, so only stored rows are
compared (CNFGNN's users without feature r share one "background" Adam state per row, which is
compared with every such user's).
"""
import os
import tempfile
import unittest

import numpy as np
import torch

from methods.reference import trace as trace_io

NUM_NODES, NUM_FEATURES, NUM_CLASSES = 40, 24, 3
# A heterophilous-format file (graph/io/heterophilous.h) under a listed name, hence --verify_data=false.
DATASET = 'tolokers'
TRACE_FLAGS = ('--verify_data=false',)

# Our split server's parameters -> the oracle's state_dict keys (and whether ours is the transpose).
GCN_SERVER = {
    'gcn_out.weight': ('conv2.lin.weight', True),
    'gcn_out.bias': ('conv2.bias', False),
}
GAT_SERVER = {
    'att_src': ('attn_src1', False),
    'att_dst': ('attn_dst1', False),
    'bias': ('bias1', False),
    'gat_out.weight': ('fc2.weight', True),
    'gat_out.att_src': ('attn_src2', False),
    'gat_out.att_dst': ('attn_dst2', False),
    'gat_out.bias': ('bias2', False),
}


def write_dataset(root):
    """A 40-user graph with sparse binary features (Cora-like: most map rows are never used):
    user 0 has no feature at all, the last feature is absent from every user, node 39 is isolated;
    labels balanced, features and edges class-dependent. Written as <root>/tolokers/tolokers.npz."""
    rng = np.random.RandomState(7)
    n, f, c = NUM_NODES, NUM_FEATURES, NUM_CLASSES
    y = np.arange(n) % c
    block = f // c
    p = np.full((n, f), 0.06)
    for i in range(n):
        p[i, y[i] * block:(y[i] + 1) * block] = 0.35
    x = (rng.rand(n, f) < p).astype(np.float32)
    x[0] = 0
    x[:, f - 1] = 0
    edges = set()
    while len(edges) < 70:
        u, v = rng.randint(0, n - 1, size=2)  # node n - 1 stays isolated
        if u != v and (y[u] == y[v] or rng.rand() < 0.2):
            edges.add((min(u, v), max(u, v)))
    folder = os.path.join(root, DATASET)
    os.makedirs(folder, exist_ok=True)
    masks = np.zeros((1, n), dtype=bool)
    np.savez(os.path.join(folder, DATASET + '.npz'), node_features=x, node_labels=y.astype(np.int64),
             edges=np.array(sorted(edges), dtype=np.int64), train_masks=masks, val_masks=masks, test_masks=masks)


def spec(root, method, model, params, lr, rounds, weight_decay=5e-4):
    """The FederationSpec text of a node-level run on write_dataset(root)'s graph."""
    return (f'dataset: "{DATASET}" data_dir: "{root}" partitioner: "node_level" clients: {NUM_NODES} '
            f'split: "stratified:train=0.3,val=0.3" method: "{method}" model: "{model}" rounds: {rounds} '
            f'local_epochs: 1 lr: {lr} weight_decay: {weight_decay} eval {{ model: GLOBAL round: LAST }} '
            'method_params { [type.googleapis.com/fgl.fl.node_level.NfedgnnParams] { ' + params + ' } }')


def run(root, name, text):
    return NodeLevelTrace(trace_io.run_trace(text, os.path.join(root, f'{name}.npz'), TRACE_FLAGS))


def max_abs(a, b):
    a, b = torch.as_tensor(a, dtype=torch.float64), torch.as_tensor(b, dtype=torch.float64)
    assert a.shape == b.shape, f'shapes {tuple(a.shape)} and {tuple(b.shape)}'
    return float((a - b).abs().max()) if a.numel() else 0.0


class NodeLevelTrace:
    """One trace's arrays, with the oracle's views of our data and states."""

    def __init__(self, arrays):
        self.a = arrays
        t = self.tensor
        self.x, self.edge_index, self.y = t('users/x'), t('users/edge_index'), t('users/y')
        self.train, self.val, self.test = t('users/train'), t('users/val'), t('users/test')
        self.entry_user, self.entry_col = t('users/entry_user'), t('users/entry_col')
        self.server_edges = t('server/edge_index')  # (source, target), our attention order
        self.n, self.f = self.x.shape
        self.gat = 'init/server/att_src' in arrays
        self.server_names = GAT_SERVER if self.gat else GCN_SERVER

    def tensor(self, key):
        if key not in self.a:
            raise KeyError(f'{key} not in the trace')
        return torch.from_numpy(np.array(self.a[key]))

    def scalar(self, key):
        return float(self.a[key])

    def has(self, key):
        return key in self.a

    def oracle_data(self):
        """(x, edge_index, y, train, val, test, num_classes): the oracle's constructor arguments."""
        return (self.x, self.edge_index, self.y, self.train, self.val, self.test, int(self.y.max()) + 1)

    # ---- states ----
    def server_state(self, prefix):
        """Our server's parameters under `prefix/` as the oracle's state_dict."""
        out = {}
        for ours, (theirs, transpose) in self.server_names.items():
            v = self.tensor(f'{prefix}/{ours}')
            out[theirs] = v.t().contiguous() if transpose else v
        return out

    def server_adam(self, prefix):
        """Our server's Adam state as the oracle's {name: {step, exp_avg, exp_avg_sq}}."""
        out = {}
        for ours, (theirs, transpose) in self.server_names.items():
            moments = {}
            for m in ('exp_avg', 'exp_avg_sq'):
                v = self.tensor(f'{prefix}/adam.{m}.{ours}')
                moments[m] = v.t().contiguous() if transpose else v
            moments['step'] = self.scalar(f'{prefix}/scalar/adam.step.{ours}')
            out[theirs] = moments
        return out

    def dense_rows(self, per_entry, background=None):
        """[n, F, H] from per-entry rows [nnz, H]: zero rows (or `background` [F, H]) elsewhere."""
        h = per_entry.size(1)
        out = torch.zeros(self.n, self.f, h) if background is None else background.expand(self.n, self.f, h).clone()
        out[self.entry_user, self.entry_col] = per_entry
        return out

    def private_initial_users(self):
        """nFedGNN: every user's state_dict from our stored rows (zero rows for its zero features:
        they never reach its latent, and with a zero start weight decay leaves them zero)."""
        w = self.dense_rows(self.tensor('init/users/weights'))
        bias = self.tensor('init/users/bias') if self.has('init/users/bias') else None
        return [{'weight': w[i].clone(), **({'bias': bias[i].clone()} if bias is not None else {})}
                for i in range(self.n)]

    def averaged_initial_users(self):
        """CNFGNN: every user starts from our average θ̄_0 (and its bias)."""
        avg = self.tensor('init/users/average')
        bias = self.tensor('init/users/bias_average') if self.has('init/users/bias_average') else None
        return [{'weight': avg.clone(), **({'bias': bias.clone()} if bias is not None else {})}
                for _ in range(self.n)]

    # ---- one round's draws ----
    def draws(self, r, oracle):
        """Our round-r dropout keep-masks in the oracle's layout: input [n, F] (our entries; zero
        features are kept), attention masks reordered from our edge order to the oracle's."""
        p = f'round{r}/dropout/'
        out = {}
        if self.has(p + 'hidden'):
            out['hidden'] = self.tensor(p + 'hidden')
        if self.has(p + 'input'):
            keep = torch.ones(self.n, self.f, dtype=torch.bool)
            keep[self.entry_user, self.entry_col] = self.tensor(p + 'input')
            out['user_input'] = keep
        for key in ('attn1', 'attn2'):
            if self.has(p + key):
                out[key] = self.tensor(p + key)[self.edge_order(oracle)]
        return out

    def edge_order(self, oracle):
        """For each of the oracle's message edges (src, dst), its position in ours; checks both
        hold the same edges (self-loops included)."""
        n = self.n
        ours = (self.server_edges[0] * n + self.server_edges[1]).tolist()
        theirs = (oracle.graph['src'] * n + oracle.graph['dst']).tolist()
        assert sorted(ours) == sorted(theirs), 'the server graphs differ'
        pos = {k: i for i, k in enumerate(ours)}
        return torch.tensor([pos[k] for k in theirs], dtype=torch.long)

    # ---- the users' steps ----
    def stack_users(self, out, key, field):
        """The oracle's users' `field` of parameter `key` after the round as [n, ...]: 'value'
        (user_states) or an Adam moment (zeros for a user that has not stepped)."""
        if field == 'value':
            return torch.stack([s[key] for s in out['user_states']])
        rows = []
        for i, st in enumerate(out['user_adam']):
            rows.append(st[key][field] if key in st else torch.zeros_like(out['user_states'][i][key]))
        return torch.stack(rows)

    def user_steps(self, out):
        """The oracle's users' Adam step counts [n] (0 for a user that has not stepped)."""
        return torch.tensor([st['weight']['step'] if 'weight' in st else 0.0 for st in out['user_adam']],
                            dtype=torch.float64)


class Recorder:
    """The largest difference per compared quantity over a test's rounds, printed at the end."""

    def __init__(self, test, name, tolerance):
        self.test, self.name, self.tolerance, self.worst = test, name, tolerance, {}

    def check(self, r, what, ours, theirs):
        d = max_abs(ours, theirs)
        self.worst[what] = max(self.worst.get(what, 0.0), d)
        self.test.assertLessEqual(d, self.tolerance, f'{self.name} round {r}: {what} differ by {d:.3e}')
        return d

    def report(self):
        overall = max(self.worst.values()) if self.worst else 0.0
        print(f'{self.name}: max |ours - oracle| = {overall:.2e}; ' +
              ', '.join(f'{k} {v:.1e}' for k, v in self.worst.items()))
        return overall


def check_round(rec, trace, r, out):
    """What both methods share: the round's messages, the server's step and the evaluation."""
    p = f'round{r}/'
    rec.check(r, 'latents', trace.tensor(p + 'latents'), out['uploads'])
    rec.check(r, 'logits', trace.tensor(p + 'logits'), out['logits'])
    for ours, theirs in (('loss', 'total'), ('ce', 'ce'), ('reg', 'reg')):
        rec.check(r, f'loss.{theirs}', trace.scalar(p + 'scalar/' + ours), out['losses'][theirs])
    rec.check(r, 'gradients', trace.tensor(p + 'gradients'), out['downloads'])
    server = trace.server_state(f'state{r}/server')
    for k, v in server.items():
        rec.check(r, 'server', v, out['server_state'][k])
    for k, moments in trace.server_adam(f'state{r}/server').items():
        for m in ('exp_avg', 'exp_avg_sq'):
            rec.check(r, 'server adam', moments[m], out['server_adam'][k][m])
        rec.test.assertEqual(moments['step'], out['server_adam'][k]['step'])
    rec.check(r, 'eval logits', trace.tensor(p + 'eval_logits'), out['eval']['logits'])


class TracedRunsTest(unittest.TestCase):
    """Runs our METHOD once per entry of CONFIGS (name -> (model spec with {p}, dropout, lr, params
    text, ...)) on the written test graph before the tests, and prints the largest difference the
    tests put in `worst`."""
    METHOD = ''
    LABEL = ''
    CONFIGS = {}

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        write_dataset(cls.tmp.name)
        cls.traces = {}
        for name, (model, p, lr, params, _) in cls.CONFIGS.items():
            text = spec(cls.tmp.name, cls.METHOD, model.format(p=p), params, lr, cls.ROUNDS)
            cls.traces[name] = run(cls.tmp.name, name, text)
        cls.worst = {}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()
        print(f'{cls.LABEL}: largest difference over all configurations: '
              f'{max(cls.worst.values()) if cls.worst else 0.0:.2e}')
