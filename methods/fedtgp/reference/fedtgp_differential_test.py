"""Our FedTGP with `server: OPENFGL` against the port of OpenFGL's (fedtgp_openfgl.py,
xkLi-Allen/OpenFGL@5483768), server included, round by round.

//methods/testing:trace runs our C++ federation (3 csbm clients, a 2-layer GCN of width 64,
dropout 0, OpenFGL's lr 1e-2, weight decay 5e-4, 3 local epochs) and writes every exchanged message
and every state after every round. The port starts from each client's initial model
(init/client<k>) and from our server's initial trainable prototypes. Ours builds those lazily (its
width is the clients' prototype width), so they are not in init/server: initial_generator()
rebuilds them as fedtgp.cc does, torch.manual_seed(Derive(Derive(run seed, "init"),
"fedtgp/generator")) and then Embedding, Linear, Linear in that order (Python's torch and our
LibTorch are the same ATen 1.13 build and draw alike); a mistake there shows as an O(1) difference
in round 1's server.

Per round r, within 1e-5 (the maxima are printed):
  uploads    every client's local prototypes, every class (a class without training nodes: a
             zero row on both sides);
  server     the global prototypes after round r (state<r>/server/prototypes, and the broadcast
             of round r + 1 where there is one), every class marked present, and the trainable
             prototypes' weights (state<r>/server/<tensor>).
Not vacuous: the PAPER server's global prototypes on the same federation differ by far more.
"""
import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
from methods.fedtgp.reference.fedtgp_openfgl import FedTGPOpenFgl, Trainable_prototypes  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.trace import OPENFGL_GCN_NAMES, Subgraph, gcn_state  # noqa: E402

TOLERANCE = 1e-5
ROUNDS = 3
CLIENTS = 3
CLASSES = 4
HIDDEN = 64
RUN_SEED = 2024  # //methods/testing:trace's --seed default
DATASET = f'csbm:num_nodes=350,num_classes={CLASSES},num_features=16,homophily=0.85'
OPENFGL_SERVER = 'method_params { [type.googleapis.com/fgl.methods.fedtgp.FedTgpParams] { server: OPENFGL } }'

# Our generator's parameter names (fedtgp.cc) -> Trainable_prototypes' state_dict keys.
GENERATOR_NAMES = {
    'embedding.weight': 'embedings.weight',
    'middle.weight': 'middle.0.0.weight',
    'middle.bias': 'middle.0.0.bias',
    'fc.weight': 'fc.weight',
    'fc.bias': 'fc.bias',
}

MASK64 = (1 << 64) - 1


# graph/random.cc's Rng::Derive: splitmix64 of the seed xor FNV-1a of the stream name.
def derive(seed, stream):
    h = 0xCBF29CE484222325
    for b in stream.encode():
        h = ((h ^ b) * 0x100000001B3) & MASK64
    x = ((seed ^ h) + 0x9E3779B97F4A7C15) & MASK64
    z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def initial_generator():
    """Our server's trainable prototypes before round 1, as Trainable_prototypes' state_dict."""
    torch.manual_seed(derive(derive(RUN_SEED, 'init'), 'fedtgp/generator'))
    net = Trainable_prototypes(CLASSES, HIDDEN, HIDDEN)  # Embedding, Linear, Linear: fedtgp.cc's order
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def run_trace(params, out_dir, name):
    spec = (f'dataset: "{DATASET}" clients: {CLIENTS} method: "fedtgp" rounds: {ROUNDS} local_epochs: 3 '
            f'model: "gcn:layers=2,hidden={HIDDEN},dropout=0" lr: 0.01 weight_decay: 0.0005 {params}')
    return trace_io.run_trace(spec, os.path.join(out_dir, f'{name}.npz'))


def tensor(trace, key):
    return torch.from_numpy(trace[key])


class FedTgpDifferentialTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.trace = run_trace(OPENFGL_SERVER, cls.tmp.name, 'openfgl')
        trace = cls.trace
        port = FedTGPOpenFgl([Subgraph(trace, k) for k in range(CLIENTS)], num_classes=CLASSES,
                             client_states=[gcn_state(trace, f'init/client{k}', OPENFGL_GCN_NAMES)
                                            for k in range(CLIENTS)],
                             prototype_state=initial_generator(), hid_dim=HIDDEN, dropout=0.0)
        cls.rounds = [port.train_round() for _ in range(ROUNDS)]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_uploads_and_server_every_round(self):
        trace = self.trace
        for r, got in enumerate(self.rounds, start=1):
            d = {}
            for k in range(CLIENTS):
                theirs = torch.stack([got['uploads'][k]['local_prototype'][c] for c in range(CLASSES)])
                d[f'client {k} upload'] = float((tensor(trace, f'round{r}/client{k}/prototypes') - theirs).abs().max())
            theirs = torch.stack([got['global_prototype'][c] for c in range(CLASSES)])
            self.assertTrue(bool(torch.isfinite(theirs).all()), f'round {r}: OpenFGL\'s global prototypes')
            d['global prototypes'] = float((tensor(trace, f'state{r}/server/prototypes') - theirs).abs().max())
            if r < ROUNDS:
                d['broadcast'] = float((tensor(trace, f'round{r + 1}/broadcast/prototypes') - theirs).abs().max())
                self.assertTrue(bool((tensor(trace, f'round{r + 1}/broadcast/present') == 1).all()),
                                f'round {r}: OpenFGL broadcasts every class')
            for ours, name in GENERATOR_NAMES.items():
                d[f'generator {ours}'] = float((tensor(trace, f'state{r}/server/{ours}')
                                                - got['prototype_net'][name]).abs().max())
            worst = max(d, key=d.get)
            print(f'fedtgp OPENFGL round {r}: largest |ours - OpenFGL| = {d[worst]:.2e} ({worst}); '
                  f'uploads {max(v for w, v in d.items() if "upload" in w):.2e}, '
                  f'global prototypes {d["global prototypes"]:.2e}; OpenFGL margin {got["margin"]:.3e}')
            for what, value in d.items():
                self.assertLessEqual(value, TOLERANCE, f'round {r}: {what}')

    def test_the_papers_server_differs(self):
        paper = run_trace('', self.tmp.name, 'paper')
        d = float((tensor(paper, 'state1/server/prototypes') - tensor(self.trace, 'state1/server/prototypes'))
                  .abs().max())
        print(f'fedtgp round 1: global prototypes max |PAPER - OPENFGL| = {d:.2e}')
        self.assertGreater(d, 100 * TOLERANCE)


if __name__ == '__main__':
    trace_io.main()
