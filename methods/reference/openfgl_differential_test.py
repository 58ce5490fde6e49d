"""Our baselines against the ports of OpenFGL's implementations (methods/<m>/reference/*_openfgl.py),
round by round.

//methods/testing:trace runs our C++ federation and writes every exchanged message and each
client's state before round 1; the port starts from our initial global model (and, where clients
keep their own models, from each client's), runs the same rounds with dropout 0, and every
client's model after local training and every server model must agree within 1e-5.
"""
import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..')))
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.trace import OPENFGL_GCN_NAMES, Subgraph, gcn_state, max_difference  # noqa: E402

TOLERANCE = 1e-5
ROUNDS = 3
CLIENTS = 3
DATASET = 'csbm:num_nodes=350,num_classes=4,num_features=16,homophily=0.85'


def run_trace(method, params, out_dir, flags=()):
    spec = (f'dataset: "{DATASET}" clients: {CLIENTS} method: "{method}" rounds: {ROUNDS} local_epochs: 3 '
            f'model: "gcn:layers=2,hidden=64,dropout=0" lr: 0.01 weight_decay: 0.0005 {params}')
    return trace_io.run_trace(spec, os.path.join(out_dir, f'{method}.npz'), flags)


def state(trace, prefix):
    return gcn_state(trace, prefix, OPENFGL_GCN_NAMES)


class OpenFglDifferentialTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def check(self, method, params, port_class, rounds=ROUNDS, flags=(), round_args=None, **options):
        """Replies (each client's model after local training) and broadcasts (the server's model),
        over the first `rounds` rounds. round_args(trace, r): train_round's arguments (our draws)."""
        trace = run_trace(method, params, self.tmp.name, flags)
        subgraphs = [Subgraph(trace, k) for k in range(CLIENTS)]
        # Prototype methods send no weights: every client keeps (and the port starts from) its own.
        shares_weights = 'round1/broadcast/body.0.weight' in trace
        port = port_class(subgraphs, num_classes=4,
                          global_state=state(trace, 'round1/broadcast') if shares_weights else None,
                          client_states=None if shares_weights else [state(trace, f'init/client{k}')
                                                                     for k in range(CLIENTS)],
                          dropout=0.0, **options)
        worst = 0.0
        for r in range(1, rounds + 1):
            got = port.train_round(**(round_args(trace, r) if round_args else {}))
            if not shares_weights:  # prototypes: each client's upload, then the server's average
                for k in range(CLIENTS):
                    ours = torch.from_numpy(trace[f'round{r}/client{k}/prototypes'])
                    theirs = torch.stack([got['uploads'][k]['local_prototype'][c] for c in range(4)])
                    present = torch.from_numpy(trace[f'round{r}/client{k}/counts']) > 0
                    d = float((ours[present] - theirs[present]).abs().max())
                    print(f'{method} round {r} client {k}: prototypes max |ours - OpenFGL| = {d:.2e}')
                    self.assertLessEqual(d, TOLERANCE, f'{method} round {r}: client {k}\'s prototypes')
                    worst = max(worst, d)
                if r < rounds:
                    ours = torch.from_numpy(trace[f'round{r + 1}/broadcast/prototypes'])
                    theirs = torch.stack([got['global_prototype'][c] for c in range(4)])
                    d = float((ours - theirs).abs().max())
                    print(f'{method} round {r} server: prototypes max |ours - OpenFGL| = {d:.2e}')
                    self.assertLessEqual(d, TOLERANCE, f'{method} round {r}: the global prototypes')
                continue
            for k in range(CLIENTS):
                d = max_difference(state(trace, f'round{r}/client{k}'), got['local'][k])
                print(f'{method} round {r} client {k}: max |ours - OpenFGL| = {d:.2e}')
                self.assertLessEqual(d, TOLERANCE, f'{method} round {r}: client {k} after local training')
                worst = max(worst, d)
            if r < rounds and f'round{r + 1}/to_client1/body.0.weight' in trace:  # personalised
                for k in range(CLIENTS):
                    sent = f'round{r + 1}/broadcast' if k == 0 else f'round{r + 1}/to_client{k}'
                    d = max_difference(state(trace, sent), got['personalized'][k])
                    print(f'{method} round {r} server -> client {k}: max |ours - OpenFGL| = {d:.2e}')
                    self.assertLessEqual(d, TOLERANCE, f'{method} round {r}: client {k}\'s aggregate')
                    worst = max(worst, d)
                for k in range(CLIENTS):
                    d = abs(float(trace[f'round{r}/client{k}/scalar/confidence']) - float(got['uploads'][k]['agg_w']))
                    self.assertLessEqual(d, TOLERANCE * max(1.0, abs(float(got['uploads'][k]['agg_w']))),
                                         f'{method} round {r}: client {k}\'s confidence')
                continue
            server = f'round{r + 1}/broadcast' if r < rounds else None
            if server is not None and f'{server}/body.0.weight' in trace:
                d = max_difference(state(trace, server), got['global'])
                print(f'{method} round {r} server: max |ours - OpenFGL| = {d:.2e}')
                self.assertLessEqual(d, TOLERANCE, f'{method} round {r}: the server model')
                worst = max(worst, d)
        return trace, worst

    def test_fedavg(self):
        from methods.fedavg.reference.fedavg_openfgl import FedAvgOpenFgl
        self.check('fedavg', '', FedAvgOpenFgl)

    def test_fedprox(self):
        from methods.fedprox.reference.fedprox_openfgl import FedProxOpenFgl
        # A large mu, so that the proximal term moves the models visibly (checked against FedAvg).
        trace, _ = self.check('fedprox', 'method_params { [type.googleapis.com/fgl.methods.fedprox.FedProxParams] '
                              '{ mu: 0.5 } }', FedProxOpenFgl, fedprox_mu=0.5)
        fedavg = run_trace('fedavg', '', self.tmp.name)
        self.assertGreater(max_difference(state(trace, 'round3/client0'), state(fedavg, 'round3/client0')),
                           100 * TOLERANCE)

    def test_scaffold(self):
        from methods.scaffold.reference.scaffold_openfgl import ScaffoldOpenFgl
        self.check('scaffold', '', ScaffoldOpenFgl)

    def test_moon(self):
        from methods.moon.reference.moon_openfgl import MoonOpenFgl
        self.check('moon', '', MoonOpenFgl)

    def test_feddc(self):
        from methods.feddc.reference.feddc_openfgl import FedDCOpenFgl
        self.check('feddc', '', FedDCOpenFgl)

    def test_fedgta(self):
        from methods.fedgta.reference.fedgta_openfgl import FedGTAOpenFgl
        self.check('fedgta', '', FedGTAOpenFgl)

    def test_fgssl(self):
        # Our views (FgsslClient draws per local epoch: weak, then strong, from "fgssl/views") handed
        # to the port; our views drop both directions of an edge together, OpenFGL's each direction.
        from methods.fgssl.reference.fgssl_openfgl import FgsslOpenFgl

        def views(trace, r):
            out = {}
            for k in range(CLIENTS):
                out[k] = []
                for e in range(3):
                    v = f'round{r}/client{k}/views/{e}/'
                    out[k].append({f'{name}_edge_keep': torch.from_numpy(trace[v + f'{name}_edge_keep'])
                                   for name in ('weak', 'strong')})
                    out[k][-1].update({f'{name}_feat_drop': ~torch.from_numpy(trace[v + f'{name}_feature_keep'])
                                       for name in ('weak', 'strong')})
            return {'augmentations': out}
        self.check('fgssl', 'method_params { [type.googleapis.com/fgl.methods.fgssl.FgsslParams] '
                   '{ embedding_dropout: 0 } }', FgsslOpenFgl,
                   flags=['--view_stream=fgssl/views', '--views=weak:0.3:0.3,strong:0.8:0.5'], round_args=views,
                   compute_unused=False)  # upstream's discarded losses crash on a trailing isolated node

    def test_fedproto(self):
        from methods.fedproto.reference.fedproto_openfgl import FedProtoOpenFgl
        # OpenFGL's aggregation (every class, client-size weights, zero prototypes included).
        self.check('fedproto', 'method_params { [type.googleapis.com/fgl.methods.fedproto.FedProtoParams] '
                   '{ aggregation: OPENFGL_CLIENT_SIZE } }', FedProtoOpenFgl)

    def test_fedtgp_clients(self):
        # The clients only (round 1's uploads), with our default (PAPER) server, which is not
        # OpenFGL's; //methods/fedtgp:fedtgp_differential_test holds `server: OPENFGL` against
        # the port, server included (methods/fedtgp/README.md).
        from methods.fedtgp.reference.fedtgp_openfgl import FedTGPOpenFgl
        self.check('fedtgp', '', FedTGPOpenFgl, rounds=1)


if __name__ == '__main__':
    trace_io.main()
