"""Our FedEgo against the port of the authors' code (FedEgo/FedEgo@534c1de), round by round.

//methods/testing:trace runs our C++ federation (3 clients of a csbm graph split by the fedego
sampler) and writes every exchanged message, every state after every round (models and Adam
moments of the clients and of the server) and, for FedEgo, every random draw: the ego-trees of
each local batch in training order, the mashed chunks' trees and the server's batches (mashed
graphs and resampled positions). The port (fedego_reference.py) starts from our initial states,
reads those draws and runs the same rounds; per round, every tensor must agree within 1e-5:

  broadcast   Theta_g (round 1: the mean of the initial Theta_i), Phi_g and P_g (round >= 2);
  reply       each client's post-training Theta_i, mashed embeddings [M, 43, h] and soft labels
              [M, 43, C], and its train_loss (the mean of its last epoch's batch losses);
  state       each client's whole model and Adam moments and steps; the server's Theta_g, Phi_g,
              P_g and Adam moments and steps.

The mixing (Eq. 13-15, lambda_i from P_g) is inside every client's round >= 2 state: ours mixes
at the start of the round, the port at the end of the previous one.

What is made like-for-like (methods/fedego/README.md, "Held against the authors' code"):
  * Dropout 0: our masks share the training stream with the ego-trees and are not traced.
  * Ego-trees: ours draws one tree per centre, every position independently (note §3); upstream's
    NeighborLoader deduplicates nodes per batch, so a node drawn twice shares ONE neighbour list.
    The port takes our trees as explicit trees (TreeLoader, not upstream; the port's self-test
    checks that the expansion of a NeighborLoader sample computes the same as the sample), and
    each batch in our order (ours trains an epoch's random nodes in random order, upstream in
    ascending id order).
  * The server joins the uploads with each one's edge ids shifted (server_edge_offset=True).
    Upstream does not shift them (utils.py:86-89), so every mashed graph past the largest upload's
    count has no edge at all; test_upstream_server_graph_drops_the_later_uploads_edges measures it.

The loss is run both ways, each configuration twice: ours with FedEgoParams `loss: AUTHORS_CODE`
against the port's own, unmodified -log(softmax + 1e-7) (Client.py:108-113, Server.py:62-67),
and ours by default (Eq. 2's cross-entropy) against the port with loss_epsilon=None.
"""
import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
from methods.fedego.reference import fedego_reference as ref  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.trace import Subgraph, gcn_state, max_difference  # noqa: E402

TOLERANCE = 1e-5
ROUNDS = 3
CLIENTS = 3
NUM_CLASSES = 4
SERVER_EPOCHS = 5  # ours FedEgoParams.server_epochs and the port's server_train_epoch (both 5)
DATASET = 'csbm:num_nodes=300,num_classes=4,num_features=16,homophily=0.85'
# The fedego sampler keeps no isolated node inside a client (upstream's ragged Mixup would fail).
PARTITION = ('partitioner: "fedego:local_fraction=0.4,local_test_nodes=40,major_classes=2" '
             'split: "fedego_tail:test=40"')

# Each configuration: our model spec and FedEgoParams, and the port's matching options.
CONFIGS = {
    # Adaptive lambda (gamma 0.25, as every table), 6 local batches of 4 per epoch, server
    # batches of 4 (2 per server epoch).
    'adaptive': dict(hidden=16, batch=4, local_epochs=2, lr=0.01, model_options='', params='gamma: 0.25',
                     port=dict(lamb_c=0.25)),
    # FedEgo-Linear, w/o Mixup (each chunk's first tree), fixed lambda 0.5 (Table 9).
    'linear_without_mixup_fixed_lambda': dict(
        hidden=16, batch=8, local_epochs=3, lr=0.01, model_options=',inner_act=none',
        params='mixup: false fixed_lambda: 0.5', port=dict(lamb_c=0.5, lamb_fixed=True, mixup=False, linear=True)),
    # The code's batch (32), epochs (5) and lr (3e-4), gamma 0.5: one local batch per epoch.
    'code_defaults': dict(hidden=32, batch=32, local_epochs=5, lr=3e-4, model_options='', params='gamma: 0.5',
                          port=dict(lamb_c=0.5)),
}

# Our EgoSage tensors -> the port's Client state_dict keys (ours store weights [in, out]).
THETA_NAMES = {
    'reduction.weight': ('lowLayer.linear.weight', True),
    'reduction.bias': ('lowLayer.linear.bias', False),
}
PHI_NAMES = {'head.weight': ('classification.weight', True)}
for _l in range(2):
    PHI_NAMES.update({
        f'body.{_l}.lin_l.weight': (f'gnnLayer.sage{_l + 1}.lin_l.weight', True),
        f'body.{_l}.lin_l.bias': (f'gnnLayer.sage{_l + 1}.lin_l.bias', False),
        f'body.{_l}.lin_r.weight': (f'gnnLayer.sage{_l + 1}.lin_r.weight', True),
    })
CLIENT_NAMES = {**THETA_NAMES, **PHI_NAMES}
SERVER_NAMES = {'phi.' + k: v for k, v in PHI_NAMES.items()}


# Our FedEgoParams.loss -> the port's loss_epsilon for the same loss (AUTHORS_CODE: the port's
# default, upstream's 1e-7, passed as nothing at all).
LOSSES = {'CROSS_ENTROPY': dict(loss_epsilon=None), 'AUTHORS_CODE': {}}


def spec(c, loss):
    model = f'ego_sage:hidden={c["hidden"]},layers=2,fanout=6,dropout=0,batch={c["batch"]}{c["model_options"]}'
    text = (f'dataset: "{DATASET}" {PARTITION} clients: {CLIENTS} method: "fedego" rounds: {ROUNDS} '
            f'local_epochs: {c["local_epochs"]} model: "{model}" lr: {c["lr"]} weight_decay: 0 '
            'eval { model: PERSONALIZED }')
    params = c['params'] + ('' if loss == 'CROSS_ENTROPY' else f' loss: {loss}')
    if params.strip():
        text += f' method_params {{ [type.googleapis.com/fgl.methods.fedego.FedEgoParams] {{ {params.strip()} }} }}'
    return text


def tensor(trace, key):
    return torch.from_numpy(trace[key])


def batches(trace, prefix):
    """prefix + 'batch0', 'batch1', ... while present."""
    out = []
    while f'{prefix}batch{len(out)}' in trace or f'{prefix}batch{len(out)}/graphs' in trace:
        out.append(len(out))
    return out


def round_draws(trace, r, c):
    """Our round-r draws in the port's format: explicit trees in our batch order."""
    clients = []
    for k in range(CLIENTS):
        p = f'round{r}/client{k}/fedego/'
        epochs = [{'trees': [tensor(trace, f'{p}epoch{e}/batch{b}') for b in batches(trace, f'{p}epoch{e}/')]}
                  for e in range(c['local_epochs'])]
        clients.append({'epochs': epochs, 'upload': {'trees': list(tensor(trace, p + 'mash').split(c['batch']))}})
    server = []
    for e in range(SERVER_EPOCHS):
        p = f'round{r}/server/fedego/epoch{e}/'
        trees = []
        for b in batches(trace, p):
            graphs = tensor(trace, f'{p}batch{b}/graphs')
            positions = tensor(trace, f'{p}batch{b}/positions')  # server_tree RESAMPLE (the code's)
            trees.append(ref.EGO_NODES * graphs[:, None] + positions)
        server.append({'trees': trees})
    return {'upload_order': list(range(CLIENTS)), 'clients': clients, 'server': {'epochs': server}}


def adam_difference(trace, prefix, names, module):
    """The largest difference of the Adam moments (and steps) under prefix/adam.* from the port's
    optimizer state of `module`."""
    params = dict(module.named_parameters())
    worst = 0.0
    for ours, (theirs, transpose) in names.items():
        state = module.optimizer.state[params[theirs]]
        for moment in ('exp_avg', 'exp_avg_sq'):
            t = tensor(trace, f'{prefix}/adam.{moment}.{ours}')
            worst = max(worst, float(((t.t() if transpose else t) - state[moment]).abs().max()))
        worst = max(worst, abs(float(trace[f'{prefix}/scalar/adam.step.{ours}']) - float(state['step'])))
    return worst


class DifferentialTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.traces = {(name, loss): trace_io.run_trace(spec(c, loss), os.path.join(cls.tmp.name, f'{name}_{loss}.npz'))
                      for name, c in CONFIGS.items() for loss in LOSSES}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def port(self, name, loss='CROSS_ENTROPY', port_loss=None, **options):
        """The port on our trace of `name` run with FedEgoParams.loss `loss`, with the port's loss
        for `port_loss` (default: the same loss)."""
        trace, c = self.traces[(name, loss)], CONFIGS[name]
        initial = {'clients': [gcn_state(trace, f'init/client{k}', CLIENT_NAMES) for k in range(CLIENTS)],
                   'server': gcn_state(trace, 'init/server', SERVER_NAMES)}
        args = dict(hidden=c['hidden'], lr=c['lr'], batch_size=c['batch'], client_train_epoch=c['local_epochs'],
                    server_train_epoch=SERVER_EPOCHS, dropout=0.0, server_edge_offset=True)
        args.update(LOSSES[port_loss or loss])
        args.update(c['port'])
        args.update(options)
        return ref.FedEgoReference([Subgraph(trace, k) for k in range(CLIENTS)], NUM_CLASSES, initial, **args)

    def check_rounds(self, name, loss='CROSS_ENTROPY', tolerance=TOLERANCE, port_loss=None, **options):
        """Runs the port through our rounds; every difference must be <= tolerance (None: only
        measured). Returns the largest difference of each compared tensor, by name."""
        trace, c = self.traces[(name, loss)], CONFIGS[name]
        h = c['hidden']
        port = self.port(name, loss, port_loss, **options)
        label = f'{name} [{loss}' + (f' vs port {port_loss}]' if port_loss else ']')
        worst = {}

        def check(what, d):
            worst[what] = max(worst.get(what, 0.0), d)
            if tolerance is not None:
                self.assertLessEqual(d, tolerance, f'{label}: {what}')

        previous = None
        for r in range(1, ROUNDS + 1):
            got = port.train_round(round_draws(trace, r, c))
            check(f'round {r} broadcast Theta_g', max_difference(gcn_state(trace, f'round{r}/broadcast', THETA_NAMES),
                                                                 got['theta']))
            if previous is not None:
                check(f'round {r} broadcast Phi_g',
                      max_difference(gcn_state(trace, f'round{r}/broadcast', SERVER_NAMES), previous['server']))
                check(f'round {r} broadcast P_g',
                      float((tensor(trace, f'round{r}/broadcast/p_global') - previous['global_p']).abs().max()))
            for k in range(CLIENTS):
                reply, upload = f'round{r}/client{k}', got['uploads'][k]
                check(f'round {r} reply Theta_i', max_difference(gcn_state(trace, reply, THETA_NAMES), upload['theta']))
                x, y = tensor(trace, reply + '/mashed.embeddings'), tensor(trace, reply + '/mashed.labels')
                self.assertEqual(tuple(x.shape), (upload['x'].shape[0] // ref.EGO_NODES, ref.EGO_NODES, h))
                check(f'round {r} reply mashed embeddings', float((x - upload['x'].view(x.shape)).abs().max()))
                check(f'round {r} reply mashed labels', float((y - upload['y'].view(y.shape)).abs().max()))
                losses = got['client_batch_losses'][k]
                check(f'round {r} reply train_loss',
                      abs(float(trace[reply + '/scalar/train_loss']) - sum(losses) / len(losses)))
                state = f'state{r}/client{k}'
                check(f'round {r} client state', max_difference(gcn_state(trace, state, CLIENT_NAMES), got['trained'][k]))
                check(f'round {r} client Adam', adam_difference(trace, state, CLIENT_NAMES, port.clients[k]))
            state = f'state{r}/server'
            check(f'round {r} server Phi_g', max_difference(gcn_state(trace, state, SERVER_NAMES), got['server']))
            check(f'round {r} server P_g', float((tensor(trace, state + '/p_global') - got['global_p']).abs().max()))
            check(f'round {r} server Theta_g', max_difference(gcn_state(trace, state, THETA_NAMES),
                                                              ref.FedAvg([u['theta'] for u in got['uploads']])))
            check(f'round {r} server Adam', adam_difference(trace, state, SERVER_NAMES, port.server))
            before = previous['server'] if previous else gcn_state(trace, 'init/server', SERVER_NAMES)
            moved = max_difference(got['server'], before)
            self.assertGreater(moved, 100 * TOLERANCE, f'{label} round {r}: Phi_g must move for the test to mean anything')
            previous = got
        if tolerance is not None:
            for what, d in worst.items():
                print(f'{label}: {what}: max |ours - port| = {d:.2e}')
            print(f'{label}: largest difference {max(worst.values()):.2e}; lambda per client (last round) '
                  f'{[round(v, 4) for v in previous["lamb"]]}')
        return worst

    # Ours with the authors' loss against the port as upstream computes it.
    def test_adaptive_lambda_with_the_authors_loss_agrees(self):
        self.check_rounds('adaptive', 'AUTHORS_CODE')

    def test_linear_without_mixup_fixed_lambda_with_the_authors_loss_agrees(self):
        self.check_rounds('linear_without_mixup_fixed_lambda', 'AUTHORS_CODE')

    def test_code_defaults_with_the_authors_loss_agree(self):
        self.check_rounds('code_defaults', 'AUTHORS_CODE')

    # Ours by default (Eq. 2's cross-entropy) against the port with the same loss.
    def test_adaptive_lambda_rounds_agree_with_the_authors_code(self):
        self.check_rounds('adaptive')

    def test_linear_without_mixup_fixed_lambda_rounds_agree(self):
        self.check_rounds('linear_without_mixup_fixed_lambda')

    def test_code_defaults_rounds_agree(self):
        self.check_rounds('code_defaults')

    def test_the_loss_option_is_needed(self):
        # Upstream's 1e-7 scales each node's gradient by p_y / (p_y + 1e-7): with the losses
        # crossed (ours one way, the port the other) the rounds drift by more than rounding where
        # the model is confidently wrong (lr 0.01), so the option is what makes them agree.
        crossed = {}
        for name in CONFIGS:
            for ours, theirs in (('CROSS_ENTROPY', 'AUTHORS_CODE'), ('AUTHORS_CODE', 'CROSS_ENTROPY')):
                d = self.check_rounds(name, ours, tolerance=None, port_loss=theirs)
                models = {k: v for k, v in d.items() if 'Adam' not in k and 'loss' not in k}
                what = max(models, key=models.get)
                crossed[(name, ours)] = models[what]
                print(f'{name}: ours {ours}, port {theirs}: largest difference of a model or message tensor '
                      f'{models[what]:.2e} ({what})')
        self.assertGreater(max(crossed.values()), 10 * TOLERANCE)

    def test_upstream_server_graph_drops_the_later_uploads_edges(self):
        # utils.py:86-89 concatenates the uploads' edge_index without shifting each by the rows
        # before it: the edges of every upload land on the first uploads' nodes, so a mashed
        # graph j >= max_i M_i has no edge and the server trains on its centre alone. Our server
        # trees (the mashed trees, resampled) are then not trees of the server graph.
        name = 'adaptive'
        trace, c = self.traces[(name, 'CROSS_ENTROPY')], CONFIGS[name]
        got = self.port(name).train_round(round_draws(trace, 1, c))
        sizes = [u['x'].shape[0] // ref.EGO_NODES for u in got['uploads']]
        upstream = torch.cat([u['edge_index'] for u in got['uploads']], 1)
        centres = got['server_data']['mask'].nonzero().view(-1)
        no_edge = int((~torch.isin(centres, upstream[1])).sum())
        shifted = int((~torch.isin(centres, got['server_data']['edge_index'][1])).sum())
        print(f'uploads of {sizes} mashed graphs: upstream\'s server graph leaves {no_edge} of {sum(sizes)} '
              f'centres without an edge; shifted: {shifted}')
        self.assertEqual(no_edge, sum(sizes) - max(sizes))
        self.assertEqual(shifted, 0)
        with self.assertRaises(ValueError):
            self.port(name, server_edge_offset=False).train_round(round_draws(trace, 1, c))

    def test_our_trees_are_not_neighbor_loader_samples(self):
        # Upstream's NeighborLoader gives a node ONE neighbour list per batch, wherever it
        # appears; ours draws every position of every tree anew (note §3). Count the local
        # batches whose trees no NeighborLoader sample could give, and the epochs that ours
        # trains in an order other than upstream's ascending ids.
        trace, c = self.traces[('adaptive', 'CROSS_ENTROPY')], CONFIGS['adaptive']
        inconsistent = total = unsorted = epochs = 0
        for r in range(1, ROUNDS + 1):
            for k in range(CLIENTS):
                for e in range(c['local_epochs']):
                    p = f'round{r}/client{k}/fedego/epoch{e}/'
                    trees = [tensor(trace, f'{p}batch{b}') for b in batches(trace, p)]
                    centres = torch.cat([t[:, 0] for t in trees])
                    epochs += 1
                    unsorted += int(not torch.equal(centres, centres.sort().values))
                    for t in trees:
                        total += 1
                        inconsistent += int(not shares_lists(t))
        print(f'{inconsistent} of {total} local batches have a node with two different neighbour lists; '
              f'{unsorted} of {epochs} epochs are not in ascending order')
        self.assertGreater(inconsistent, 0)


def shares_lists(trees):
    """Whether every node in the batch's trees (positions 0..6: the ones that draw) has the same
    6 children wherever it appears, as a NeighborLoader sample would (centres: their hop-0 list)."""
    lists = {}
    for tree in trees.tolist():
        for v in range(1 + 6):
            children = tuple(tree[6 * v + 1:6 * v + 7])
            if lists.setdefault(tree[v], children) != children:
                return False
    return True


if __name__ == '__main__':
    trace_io.main()
