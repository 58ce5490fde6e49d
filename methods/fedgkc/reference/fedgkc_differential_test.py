"""Our FedGKC against an independent implementation written from the paper (fedgkc_reference.py;
FedGKC has no public code), round by round.

//methods/testing:trace runs our C++ federation and writes every exchanged message, each
client's state before round 1 and after every round (private model and copilot), and every
augmented view. The reference
starts from those states, applies those views, and runs the same rounds; every uploaded copilot,
every private model, every client's N_k and P_k, and every aggregated copilot must agree within 1e-5. Dropout is 0 so
that nothing else is random. Clients are all GCNs (the reference has one architecture so far).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
from methods.fedgkc.reference import fedgkc_reference as ref  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.trace import Subgraph, gcn_state, max_difference  # noqa: E402

TOLERANCE = 1e-5
ROUNDS = 3
CLIENTS = 3
EPOCHS = 3
# 350 nodes: clients of different sizes, so that Eq. 10's data-volume part matters.
DATASET = 'csbm:num_nodes=350,num_classes=4,num_features=16,homophily=0.85'
# FedGkcClient::LocalStep's views per local epoch (the defaults of FedGkcParams' rates).
VIEWS = ['--view_stream=fedgkc/views', '--views=weak:0.1:0.1,strong:0.5:0.5']


def run_trace(params, out_dir, name, views):
    spec = (f'dataset: "{DATASET}" clients: {CLIENTS} method: "fedgkc" rounds: {ROUNDS} local_epochs: {EPOCHS} '
            'model: "gcn:layers=2,hidden=64,dropout=0" lr: 0.01 weight_decay: 0.0005 '
            'method_params { [type.googleapis.com/fgl.methods.fedgkc.FedGkcParams] { '
            f'copilot_model: "gcn:layers=2,hidden=64,dropout=0" {params} }} }}')
    return trace_io.run_trace(spec, os.path.join(out_dir, f'{name}.npz'), VIEWS if views else ())


def views_of(trace, r):
    if f'round{r}/client0/views/0/weak_edge_keep' not in trace:
        return None
    return [[{v: tuple(torch.from_numpy(trace[f'round{r}/client{k}/views/{e}/{v}_{m}_keep']) for m in ('edge', 'feature'))
              for v in ('weak', 'strong')} for e in range(EPOCHS)] for k in range(CLIENTS)]


class DifferentialTest(trace_io.TracedConfigsTest):
    # Our FedGkcParams text -> the reference's options, for each configuration checked.
    # name -> (our FedGkcParams text, the reference's options, whether the clients draw views).
    CONFIGS = {
        'default': ('', {}, True),
        'no_smkd': ('smkd: false', {'smkd': False}, False),
        'copilot_first_no_kama': ('order: COPILOT_FIRST kama: false', {'schedule': 'sequential', 'kama': False}, True),
    }

    TOLERANCE = TOLERANCE

    @classmethod
    def write_trace(cls, name, config, out_dir):
        text, _, views = config
        return run_trace(text, out_dir, name, views)

    def check(self, name):
        trace = self.traces[name]
        subgraphs = [Subgraph(trace, k) for k in range(CLIENTS)]
        privates = [gcn_state(trace, f'init/client{k}') for k in range(CLIENTS)]
        reference = ref.FedGkcReference(subgraphs, num_classes=4, private_states=privates,
                                        copilot_state=gcn_state(trace, 'round1/broadcast'), dropout=0.0,
                                        local_epochs=EPOCHS, **self.CONFIGS[name][1])
        for r in range(1, ROUNDS + 1):
            got = reference.train_round(views_of(trace, r))
            for k in range(CLIENTS):
                p = f'round{r}/client{k}'
                d = max_difference(gcn_state(trace, p), got['copilots'][k])
                print(f'{name} round {r} client {k}: copilot max |ours - reference| = {d:.2e}, '
                      f'N {trace[p + "/scalar/data_volume"]:.0f} / {got["N"][k]}, '
                      f'P {trace.get(p + "/scalar/knowledge", float("nan")):.6f} / {got["P"][k]:.6f}')
                self.assertLessEqual(d, TOLERANCE, f'{name} round {r}: client {k}\'s copilot')
                # The private model never leaves the client: read from the state after the round.
                d = max_difference(gcn_state(trace, f'state{r}/client{k}'), got['privates'][k])
                print(f'{name} round {r} client {k}: private model max |ours - reference| = {d:.2e}')
                self.assertLessEqual(d, TOLERANCE, f'{name} round {r}: client {k}\'s private model')
                self.assertEqual(float(trace[p + '/scalar/data_volume']), float(got['N'][k]))
                if p + '/scalar/knowledge' in trace:
                    self.assertAlmostEqual(float(trace[p + '/scalar/knowledge']), float(got['P'][k]), delta=TOLERANCE)
            if r < ROUNDS:
                d = max_difference(gcn_state(trace, f'round{r + 1}/broadcast'), got['global_copilot'])
                print(f'{name} round {r}: aggregated copilot max |ours - reference| = {d:.2e}')
                self.assertLessEqual(d, TOLERANCE, f'{name} round {r}: the aggregated copilot')

    def test_default(self):
        self.check('default')

    def test_without_smkd(self):
        self.check('no_smkd')

    def test_copilot_first_without_kama(self):
        self.check('copilot_first_no_kama')


if __name__ == '__main__':
    trace_io.main()
