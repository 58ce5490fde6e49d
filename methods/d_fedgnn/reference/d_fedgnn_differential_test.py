"""Our D-FedGNN against the port of FedEgo's baseline code (d_fedgnn_reference.py,
FedEgo/FedEgo@534c1de, `--mode dfedgnn`), round by round.

//methods/testing:trace runs our C++ federation (csbm clients, a 2-layer GCN, dropout 0) and
writes every exchanged message and every client's state after every round. The port starts from
our initial per-client models (init/client<k>) and runs the same rounds. Per round r, for every
client k, within 1e-5:

  trained  the weights it trained in round r (its reply round<r>/client<k>, and the model in its
           state state<r>/client<k>), its Adam moments and steps (state<r>/client<k>/adam.*) and
           its last local loss (the reply's train_loss);
  ring     its ring average (w_{k-1} + w_k + w_{k+1}) / 3 of the round-r trained weights: ours
           sends it at the start of round r + 1 (round<r+1>/broadcast for client 0,
           round<r+1>/to_client<k> for the others), upstream loads it at the end of round r
           (main.py:407-409). So the trace runs one round more than is compared.

Ours has no broadcast in round 1 (every client trains its own initialisation), as upstream's
first `fedavgWork` trains the clients' own inits. The per-round maxima are printed.

Made like-for-like: the model (upstream: FedEgo's ego-SAGE on NeighborLoader mini-batches; both
sides here the full-batch GCN, one Adam step per local epoch over the train nodes); dropout 0
(upstream's dfedgnn branch applies none); weight decay 0 (upstream's Adam has none). Our
federation's own evaluation (each client's ring average) is not compared.
"""
import os
import sys

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
from methods.d_fedgnn.reference.d_fedgnn_reference import DFedGnnReference  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.trace import GCN_NAMES, Subgraph, gcn_adam_difference, gcn_state, max_difference  # noqa: E402

TOLERANCE = 1e-5
ROUNDS = 3  # compared; the trace runs ROUNDS + 1 to carry round ROUNDS's ring averages
DATASET = 'csbm:num_nodes=350,num_classes=4,num_features=16,homophily=0.85'

# name -> (clients, local epochs, lr). 'ring4': a ring where each client has one non-neighbour, so
# the average is not the mean of everyone; 'two_clients': the other client counted twice, as the
# code; 'code_defaults': the code's lr 3e-4 and 5 local epochs (options.py).
CONFIGS = {
    'ring4': (4, 3, 0.01),
    'two_clients': (2, 3, 0.01),
    'code_defaults': (4, 5, 3e-4),
}


def received(trace, r, k):
    """What client k received at the start of round r (None in round 1)."""
    prefix = f'round{r}/broadcast' if k == 0 else f'round{r}/to_client{k}'
    if f'{prefix}/body.0.weight' not in trace:
        return None
    return gcn_state(trace, prefix)


class DFedGnnDifferentialTest(trace_io.TracedConfigsTest):
    CONFIGS = CONFIGS
    TOLERANCE = TOLERANCE

    @classmethod
    def write_trace(cls, name, config, out_dir):
        clients, epochs, lr = config
        spec = (f'dataset: "{DATASET}" clients: {clients} method: "d_fedgnn" rounds: {ROUNDS + 1} '
                f'local_epochs: {epochs} model: "gcn:layers=2,hidden=16,dropout=0" lr: {lr} weight_decay: 0 '
                f'eval {{ model: PERSONALIZED }}')
        return trace_io.run_trace(spec, os.path.join(out_dir, f'{name}.npz'))

    def replay(self, name):
        """The port run on the trace `name` from our initial states: its ROUNDS round outputs."""
        trace = self.traces[name]
        clients, epochs, lr = self.CONFIGS[name]
        port = DFedGnnReference([Subgraph(trace, k) for k in range(clients)],
                                [gcn_state(trace, f'init/client{k}') for k in range(clients)],
                                lr=lr, client_train_epoch=epochs, dropout=0.0)
        return [port.train_round() for _ in range(ROUNDS)]

    def check(self, name):
        trace = self.traces[name]
        clients = self.CONFIGS[name][0]
        out = self.replay(name)
        for r, got in enumerate(out, start=1):
            d = {}
            for k in range(clients):
                self.assertEqual(received(trace, r, k) is None, r == 1, f'{name} round {r} client {k}: broadcast')
                d[f'client {k} trained (reply)'] = max_difference(gcn_state(trace, f'round{r}/client{k}'),
                                                                  got['trained'][k])
                d[f'client {k} trained (state)'] = max_difference(gcn_state(trace, f'state{r}/client{k}'),
                                                                  got['trained'][k])
                d[f'client {k} Adam'] = gcn_adam_difference(trace, f'state{r}/client{k}', got['adam'][k])
                d[f'client {k} train_loss'] = abs(float(trace[f'round{r}/client{k}/scalar/train_loss'])
                                                  - got['losses'][k][-1])
                d[f'client {k} ring average'] = max_difference(received(trace, r + 1, k), got['ring'][k])
            self.assertAllClose(f'd_fedgnn {name} round {r}', d)
        return out

    def assert_moves(self, a, b, what):
        """Not vacuous: the two states differ by far more than the tolerance."""
        self.assertGreater(max_difference(a, b), 100 * TOLERANCE, what)

    def test_ring_of_four(self):
        out = self.check('ring4')
        for got in out:
            for k in range(4):
                # The average is not the client's own weights, nor the mean of all four (client
                # k + 2 is left out).
                self.assert_moves(got['ring'][k], got['trained'][k], f'ring {k} vs own')
                everyone = {n: sum(t[n] for t in got['trained']) / 4 for n in got['trained'][0]}
                self.assert_moves(got['ring'][k], everyone, f'ring {k} vs the mean of all')

    def test_two_clients_count_the_other_twice(self):
        out = self.check('two_clients')
        for got in out:
            w = got['trained']
            halves = {n: (w[0][n] + w[1][n]) / 2 for n in w[0]}
            self.assert_moves(got['ring'][0], halves, 'the code does not deduplicate the neighbours')

    def test_code_defaults(self):
        out = self.check('code_defaults')
        # Adam keeps its moments across rounds on both sides: the step count reaches R * E.
        self.assertEqual(float(out[-1]['adam'][0]['step'][GCN_NAMES['body.0.weight'][0]]), ROUNDS * 5)


if __name__ == '__main__':
    trace_io.main()
