"""Our AdaFGL against the port of OpenFGL's (adafgl_openfgl.py, xkLi-Allen/OpenFGL@5483768), round
by round, through both steps.

//methods/adafgl:adafgl_trace runs our C++ federation (3 clients of a csbm graph, 2 vanilla rounds,
then 2 personalised rounds) and writes every exchanged message, every state after every round,
and what step 2 draws or scores (adafgl_trace_main.cc): each client's label-propagation order, its
reliability, its personalised modules before their first step and, from the switch on, the
prediction it scores. The port starts from our initial global model, takes our draws (lp_orders,
adafgl_states: no randomness of its own is left; GCN and module dropout are 0) and runs the same
rounds. Our round r is the port's round r - 1 (OpenFGL counts from 0); ours switches in round
V + 1 = 3, the port at its round num_rounds_vanilla = 2. Per round, within 1e-5:

  rounds 1-2 (FedAvg)  each client's GCN after local training (its reply) and the server's
                       average (the next round's broadcast; round 3's is the extractor);
  rounds 3-4 (step 2)  each client's personalised modules after its one Adam step and Adam's
                       moments, the step's loss (our reply's train_loss), the reliability, and the
                       scored prediction rel*(s(homo) + s(soft))/2 + (1 - rel)*(s(ori) + s(smooth)
                       + s(msg))/3 against OpenFGL's override_evaluate logits.
"""
import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
from methods.adafgl.reference.adafgl_openfgl import AdaFGLOpenFgl  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.trace import OPENFGL_GCN_NAMES, Subgraph, gcn_state, max_difference  # noqa: E402

TOLERANCE = 1e-5
CLIENTS = 3
NUM_CLASSES = 4
VANILLA = 2
ROUNDS = 4
DATASET = 'csbm:num_nodes=350,num_classes=4,num_features=16,homophily=0.85'
TRACE_BINARY = 'methods/adafgl/adafgl_trace'
# Adam's step on an entry is lr * m_hat / (sqrt(v_hat) + 1e-8): where the gradient (with weight
# decay) is within a few eps of zero, a float32 rounding difference of 1e-10 in it moves the step by
# up to lr / 2. With weight decay 5e-4 the CE gradient cancels it on about one entry in 10^4 (one
# of 27,091 module entries in round 3 here: gradient 1.2e-8, steps 5.4e-3 against 5.6e-3); such
# entries are compared through their moments (the gradients) only, and must stay below 0.1%.
ILL_CONDITIONED = 1e-6

# Our PersonalisedModules' parameters (weights [in, out]) -> the port's AdaFGLModel keys ([out, in]).
MODULE_NAMES = {'homo_act.weight': ('homo_model.prelu.weight', False),
                'branch_act.weight': ('hete_model.prelu.weight', False),
                'propagate_act.weight': ('hete_model.hete_propagation.prelu.weight', False)}
for ours, theirs, layers in (('homo', 'homo_model.lr_smooth_trans', 2), ('original', 'hete_model.lr_local_trans', 3),
                             ('smooth', 'hete_model.lr_smooth_trans', 3),
                             ('propagate', 'hete_model.hete_propagation.lr_hete_trans', 3)):
    for i in range(layers):
        MODULE_NAMES[f'{ours}_{i}_weight'] = (f'{theirs}.{i}.weight', True)
        MODULE_NAMES[f'{ours}_{i}_bias'] = (f'{theirs}.{i}.bias', False)


def module_state(trace, prefix):
    """The port's AdaFGLModel state_dict from our tensors `prefix<our name>`."""
    out = {}
    for ours, (theirs, transpose) in MODULE_NAMES.items():
        t = torch.from_numpy(trace[prefix + ours])
        out[theirs] = t.t().contiguous() if transpose else t
    return out


def port_adam_moments(client):
    """The port's AdaFGL Adam moments under our names and layout: {'exp_avg' | 'exp_avg_sq': {name: t}}."""
    params = dict(client.adafgl_model.named_parameters())
    out = {}
    for ours, (theirs, transpose) in MODULE_NAMES.items():
        state = client.adafgl_optimizer.state[params[theirs]]
        for key in ('exp_avg', 'exp_avg_sq'):
            out.setdefault(key, {})[ours] = (state[key].t() if transpose else state[key]).clone()
    return out


class AdaFglDifferentialTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        spec = (f'dataset: "{DATASET}" clients: {CLIENTS} method: "adafgl" rounds: {ROUNDS} local_epochs: 3 '
                f'model: "gcn:layers=2,hidden=64,dropout=0" lr: 0.01 weight_decay: 0.0005 '
                'method_params { [type.googleapis.com/fgl.methods.adafgl.AdaFglParams] '
                f'{{ vanilla_rounds: {VANILLA} dropout: 0 }} }}')
        cls.trace = trace_io.run_trace(spec, os.path.join(cls.tmp.name, 'adafgl.npz'))
        t = cls.trace
        subgraphs = [Subgraph(t, k) for k in range(CLIENTS)]
        cls.port = AdaFGLOpenFgl(
            subgraphs, num_classes=NUM_CLASSES, global_state=gcn_state(t, 'round1/broadcast', OPENFGL_GCN_NAMES),
            dropout=0.0, num_rounds_vanilla=VANILLA, adafgl_dropout=0.0,
            lp_orders=[t[f'adafgl/client{k}/lp_order'].tolist() for k in range(CLIENTS)],
            adafgl_states=[module_state(t, f'adafgl/client{k}/init/') for k in range(CLIENTS)])
        # Every round's port output, and after each personalised round each client's scored logits.
        cls.rounds = {}
        for r in range(1, ROUNDS + 1):
            got = cls.port.train_round()
            if r > VANILLA:
                got['scored'] = [c.task.evaluate()['logits'] for c in cls.port.clients]
                got['moments'] = [port_adam_moments(c) for c in cls.port.clients]
            cls.rounds[r] = got

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def close(self, d, what):
        print(f'adafgl {what}: max |ours - OpenFGL| = {d:.2e}')
        self.assertLessEqual(d, TOLERANCE, what)

    def test_phases_line_up(self):
        for r, got in self.rounds.items():
            self.assertEqual(got['phase'], [int(r > VANILLA)] * CLIENTS, f'round {r}')
            self.assertEqual(f'round{r}/client0/body.0.weight' in self.trace, r <= VANILLA, f'round {r}')
        # The extractor travels once more in the switch round, then nothing does.
        self.assertIn(f'round{VANILLA + 1}/broadcast/body.0.weight', self.trace)
        self.assertNotIn(f'round{VANILLA + 2}/broadcast/body.0.weight', self.trace)

    def test_federated_rounds(self):
        for r in range(1, VANILLA + 1):
            got = self.rounds[r]
            for k in range(CLIENTS):
                ours = gcn_state(self.trace, f'round{r}/client{k}', OPENFGL_GCN_NAMES)
                self.close(max_difference(ours, got['local'][k]), f'round {r} client {k} GCN after local training')
            ours = gcn_state(self.trace, f'round{r + 1}/broadcast', OPENFGL_GCN_NAMES)
            self.close(max_difference(ours, got['global']), f'round {r} server average')

    def test_reliability(self):
        got = self.rounds[VANILLA + 1]['adafgl']
        for k in range(CLIENTS):
            self.assertEqual(got[k]['lp_order'], self.trace[f'adafgl/client{k}/lp_order'].tolist())
            ours = float(self.trace[f'adafgl/client{k}/reliability'])
            self.close(abs(ours - got[k]['reliability_acc']), f'client {k} reliability ({ours:.4f})')

    def test_personalised_rounds(self):
        for k in range(CLIENTS):
            ill = {n: torch.zeros(self.trace[f'adafgl/client{k}/init/{n}'].shape, dtype=torch.bool) for n in MODULE_NAMES}
            for r in range(VANILLA + 1, ROUNDS + 1):
                got = self.rounds[r]
                p = f'state{r}/client{k}/'
                # Adam's steps on elements whose gradient is about eps (see ILL_CONDITIONED) are
                # compared through the gradients (the moments) only.
                steps = r - VANILLA
                for n in MODULE_NAMES:
                    v = torch.from_numpy(self.trace[f'{p}adafgl.adam.exp_avg_sq.adafgl.{n}']) / (1 - 0.999 ** steps)
                    ill[n] |= v.sqrt() < ILL_CONDITIONED
                ours = module_state(self.trace, p + 'adafgl.')
                theirs = got['adafgl'][k]['model']
                worst = max(float((ours[t] - theirs[t]).abs().max()) for t in ours)
                kept = max(float(((ours[MODULE_NAMES[n][0]] - theirs[MODULE_NAMES[n][0]]).abs()
                                  * ~(ill[n].t() if MODULE_NAMES[n][1] else ill[n])).max()) for n in MODULE_NAMES)
                count = sum(int(m.sum()) for m in ill.values())
                total = sum(m.numel() for m in ill.values())
                print(f'adafgl round {r} client {k}: {count} of {total} module entries had |gradient| < '
                      f'{ILL_CONDITIONED:g} in a step; max |ours - OpenFGL| {worst:.2e} over all entries')
                self.assertLessEqual(count, total // 1000, f'round {r} client {k}: ill-conditioned entries')
                self.close(kept, f'round {r} client {k} modules after the step (well-conditioned entries)')
                for key in ('exp_avg', 'exp_avg_sq'):
                    ours = {n: torch.from_numpy(self.trace[f'{p}adafgl.adam.{key}.adafgl.{n}']) for n in MODULE_NAMES}
                    self.close(max_difference(ours, got['moments'][k][key]), f'round {r} client {k} Adam {key}')
                loss = float(self.trace[f'round{r}/client{k}/scalar/train_loss'])
                self.close(abs(loss - got['adafgl'][k]['losses']['total']) / max(1.0, abs(loss)),
                           f'round {r} client {k} step loss ({loss:.4f}, relative)')
                ours = torch.from_numpy(self.trace[p + 'adafgl/predict'])
                self.close(float((ours - got['scored'][k]).abs().max()), f'round {r} client {k} scored prediction')

    def test_personalisation_is_not_vacuous(self):
        # The similarity graph links some node pairs and not all, the step moves the modules.
        for k in range(CLIENTS):
            links = int(self.rounds[VANILLA + 1]['adafgl'][k]['universal_re'].sum())
            n = self.trace[f'client{k}/y'].shape[0]
            self.assertTrue(0 < links < n * (n - 1), f'client {k}: {links} similarity links')
            init = module_state(self.trace, f'adafgl/client{k}/init/')
            self.assertGreater(max_difference(init, self.rounds[ROUNDS]['adafgl'][k]['model']), 100 * TOLERANCE)


if __name__ == '__main__':
    trace_io.TRACE_BINARY = TRACE_BINARY  # main()'s default for --trace_binary
    trace_io.main()
