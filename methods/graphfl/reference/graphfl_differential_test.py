"""Our GraphFL against the port of FedEgo's baseline code (graphfl_reference.py,
FedEgo/FedEgo@534c1de, `--mode graphfl`), round by round, with the port's switches set to our
behaviour (whole_query_gradient, one_initial_model; our support and query sets).

//methods/testing:trace runs our C++ federation (3 csbm clients, a 2-layer GCN, dropout 0) and
writes the exchange-0 messages and every state after every round. Our support and query sets are
not in the trace (client<k>/train is the whole training pool): support_query() below recomputes
them as GraphFlClient::Make draws them (the pool's ids in ascending order, Fisher-Yates shuffled by
graph::Rng(Derive(run seed, "init"), "graphfl/support_query/<id>"); the first support_nodes are
the support set, the next query_nodes the query set; a pool smaller than both is split in their
ratio). The port starts every client from our initial model (init/server). Per round r and client
k, within 1e-5:

  gradient  the query gradient it sends in exchange 0 (round<r>/client<k>), and its train_loss
            (the last support epoch's loss);
  meta      the server's meta-updated model u. The trace does not record exchange 1, so u is
            checked against the meta step applied to our traced w (round<r>/broadcast) and our
            traced gradients, and through the next item, which starts from our u;
  trained   the weights it sends in exchange 1 (its state state<r>/client<k>) and its Adam
            moments and steps (two stages of E epochs a round on one Adam, as the code);
  average   the server's average (state<r>/server, eval<r>, round<r+1>/broadcast).

It then measures, printing and not asserting, how far the port's default (the code's behaviour:
only the last query batch's gradient, round 1's average of N independent initialisations, 80/80
support and query nodes) drifts from ours after ROUNDS rounds.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
from methods.graphfl.reference.graphfl_reference import GraphFlReference  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.gcn import GCN, evaluate_clients  # noqa: E402
from methods.reference.trace import Subgraph, gcn_adam_difference, gcn_state, max_difference  # noqa: E402

TOLERANCE = 1e-5
ROUNDS = 3
CLIENTS = 3
RUN_SEED = 2024  # //methods/testing:trace's --seed default
# 1200 nodes a client, about 238 training nodes each (enough for the code's 80 + 80 and our 100 + 100).
DATASET = 'csbm:num_nodes=3600,num_classes=4,num_features=16,homophily=0.85'

# name -> dict(local_epochs, lr, support_nodes, query_nodes, meta_lr). 'ours_defaults': our 100/100
# and meta_lr 1; 'small_pool': 150/150 on a pool of about 238 (split in the 1:1 ratio), meta_lr 0.5;
# 'code_defaults': the code's 80/80, lr 3e-4 and 5 epochs (options.py, Client.py:58-60).
CONFIGS = {
    'ours_defaults': dict(local_epochs=3, lr=0.01, support_nodes=100, query_nodes=100, meta_lr=1.0),
    'small_pool': dict(local_epochs=2, lr=0.01, support_nodes=150, query_nodes=150, meta_lr=0.5),
    'code_defaults': dict(local_epochs=5, lr=3e-4, support_nodes=80, query_nodes=80, meta_lr=1.0),
}

MASK64 = (1 << 64) - 1


# graph/random.{h,cc}: splitmix64, FNV-1a, xoshiro256**, Lemire's UniformInt, Fisher-Yates.
def _splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return x, z ^ (z >> 31)


def _fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & MASK64
    return h


def derive(seed, stream):
    return _splitmix64(seed ^ _fnv1a64(stream.encode()))[1]


def _rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & MASK64


class Rng:
    def __init__(self, seed, stream=None):
        x = seed if stream is None else derive(seed, stream)
        self.s = []
        for _ in range(4):
            x, v = _splitmix64(x)
            self.s.append(v)

    def next_u64(self):
        s = self.s
        result = (_rotl((s[1] * 5) & MASK64, 7) * 9) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def uniform_int(self, n):
        m = self.next_u64() * n
        low = m & MASK64
        if low < n:
            threshold = ((1 << 64) - n) % n
            while low < threshold:
                m = self.next_u64() * n
                low = m & MASK64
        return m >> 64

    def shuffle(self, v):
        for i in range(len(v), 1, -1):
            j = self.uniform_int(i)
            v[i - 1], v[j] = v[j], v[i - 1]


def support_query(pool_mask, client, support_nodes, query_nodes):
    """Our support and query masks for `client` (GraphFlClient::Make, methods/graphfl/graphfl.cc)."""
    pool = pool_mask.nonzero().view(-1).tolist()
    Rng(derive(RUN_SEED, 'init'), f'graphfl/support_query/{client}').shuffle(pool)
    share = support_nodes / (support_nodes + query_nodes)
    support = support_nodes if len(pool) >= support_nodes + query_nodes else int(share * len(pool))
    query = min(query_nodes, len(pool) - support)
    s = torch.zeros_like(pool_mask)
    q = torch.zeros_like(pool_mask)
    s[pool[:support]] = True
    q[pool[support:support + query]] = True
    return s, q


def independent_inits(state, n):
    """n GCN initialisations drawn apart (as each upstream Client draws its own), shaped as `state`."""
    out = []
    for k in range(n):
        torch.manual_seed(1000 + k)
        hid, feat = state['conv1.lin.weight'].shape
        out.append(GCN(feat, hid, state['conv2.lin.weight'].shape[0], 0.0).state_dict())
    return out


class GraphFlDifferentialTest(trace_io.TracedConfigsTest):
    CONFIGS = CONFIGS
    TOLERANCE = TOLERANCE

    @classmethod
    def write_trace(cls, name, c, out_dir):
        spec = (f'dataset: "{DATASET}" clients: {CLIENTS} method: "graphfl" rounds: {ROUNDS} '
                f'local_epochs: {c["local_epochs"]} model: "gcn:layers=2,hidden=16,dropout=0" lr: {c["lr"]} '
                f'weight_decay: 0 method_params {{ [type.googleapis.com/fgl.methods.graphfl.GraphFlParams] {{ '
                f'support_nodes: {c["support_nodes"]} query_nodes: {c["query_nodes"]} meta_lr: {c["meta_lr"]} }} }}')
        return trace_io.run_trace(spec, os.path.join(out_dir, f'{name}.npz'))

    def port(self, name, ours=True, whole_query_gradient=None, one_initial_model=None, sizes=None):
        """The port on trace `name` run for ROUNDS rounds; ours=True sets both switches to ours."""
        trace = self.traces[name]
        c = self.CONFIGS[name]
        whole = ours if whole_query_gradient is None else whole_query_gradient
        one = ours if one_initial_model is None else one_initial_model
        support_nodes, query_nodes = sizes or (c['support_nodes'], c['query_nodes'])
        graphs = [Subgraph(trace, k) for k in range(CLIENTS)]
        masks = [support_query(g.train_idx, k, support_nodes, query_nodes) for k, g in enumerate(graphs)]
        init = gcn_state(trace, 'init/server')
        port = GraphFlReference(graphs, [m[0] for m in masks], [m[1] for m in masks],
                                [init] if one else independent_inits(init, CLIENTS), lr=c['lr'],
                                client_train_epoch=c['local_epochs'], meta_lr=c['meta_lr'],
                                whole_query_gradient=whole, one_initial_model=one)
        return [port.train_round() for _ in range(ROUNDS)], masks

    def check(self, name):
        trace = self.traces[name]
        c = self.CONFIGS[name]
        out, masks = self.port(name)
        sizes = [(int(s.sum()), int(q.sum())) for s, q in masks]
        # The client data carry our initial model, identical on every client and the server.
        for k in range(CLIENTS):
            self.assertEqual(max_difference(gcn_state(trace, f'init/client{k}'), gcn_state(trace, 'init/server')), 0.0)
        for r, got in enumerate(out, start=1):
            d = {}
            w = gcn_state(trace, f'round{r}/broadcast')
            d['start'] = max_difference(w, got['start'])
            grads = [gcn_state(trace, f'round{r}/client{k}') for k in range(CLIENTS)]
            ours_meta = {n: w[n] - c['meta_lr'] * (sum(g[n] for g in grads) / CLIENTS) for n in w}
            d['meta'] = max_difference(ours_meta, got['meta'])
            for k in range(CLIENTS):
                d[f'client {k} query gradient'] = max_difference(grads[k], got['gradients'][k])
                d[f'client {k} train_loss'] = abs(float(trace[f'round{r}/client{k}/scalar/train_loss'])
                                                  - got['support_losses'][k][-1])
                d[f'client {k} exchange-1 weights'] = max_difference(gcn_state(trace, f'state{r}/client{k}'),
                                                                     got['trained'][k])
                d[f'client {k} Adam'] = gcn_adam_difference(trace, f'state{r}/client{k}', got['adam'][k])
            d['average (server state)'] = max_difference(gcn_state(trace, f'state{r}/server'), got['average'])
            d['average (eval)'] = max_difference(gcn_state(trace, f'eval{r}'), got['average'])
            if r < ROUNDS:
                d['average (next broadcast)'] = max_difference(gcn_state(trace, f'round{r + 1}/broadcast'),
                                                               got['average'])
            self.assertAllClose(f'graphfl {name} (support/query {sizes}) round {r}', d)
            # Not vacuous: the gradient is not zero, the meta step and the fine-tuning move the model.
            self.assertGreater(max(float(t.abs().max()) for t in got['gradients'][0].values()), 100 * TOLERANCE)
            self.assertGreater(max_difference(got['meta'], got['start']), 100 * TOLERANCE)
            self.assertGreater(max_difference(got['trained'][0], got['meta']), 100 * TOLERANCE)
            self.assertGreater(max_difference(got['average'], got['trained'][0]), 100 * TOLERANCE)
        # One Adam a client over both stages of every round: 2 E steps a round.
        self.assertEqual(float(out[-1]['adam'][0]['step']['conv1.bias']), ROUNDS * 2 * c['local_epochs'])
        return out, sizes

    def drift(self, name, label, **switches):
        """Prints max |ours - port| on the round-ROUNDS global model with the code's behaviour for
        the given switches, relative to how far ours moved from its initial model."""
        trace = self.traces[name]
        got, _ = self.port(name, **switches)
        ours = gcn_state(trace, f'state{ROUNDS}/server')
        moved = max_difference(ours, gcn_state(trace, 'init/server'))
        d = max_difference(ours, got[-1]['average'])
        graphs = [Subgraph(trace, k) for k in range(CLIENTS)]
        acc = [evaluate_clients([GCN.from_state(s, 0.0) for _ in graphs], graphs)['test']
               for s in (ours, got[-1]['average'])]
        print(f'graphfl drift {name}, {label}: after {ROUNDS} rounds max |ours - port| = {d:.3e} '
              f'(ours moved {moved:.3e} from its init); global model test accuracy ours {acc[0]:.1f}%, '
              f'port {acc[1]:.1f}%')
        return d

    def test_ours_defaults(self):
        _, sizes = self.check('ours_defaults')
        self.assertEqual(sizes, [(100, 100)] * CLIENTS)  # the pools hold both
        self.drift('ours_defaults', 'the code at 80/80 (ours 100/100), other switches ours', sizes=(80, 80))
        self.drift('ours_defaults', "the code's full default (last query batch, N inits, 80/80)", ours=False,
                   sizes=(80, 80))

    def test_small_pool_is_split_in_ratio(self):
        _, sizes = self.check('small_pool')
        for s, q in sizes:
            self.assertEqual(s, q)
            self.assertLess(s + q, 300)

    def test_code_defaults(self):
        _, sizes = self.check('code_defaults')
        self.assertEqual(sizes, [(80, 80)] * CLIENTS)
        self.drift('code_defaults', 'last query batch (16 of 80 nodes)', whole_query_gradient=False)
        self.drift('code_defaults', 'round 1 averages 3 independent inits', one_initial_model=False)
        self.drift('code_defaults', "the code's full default (both)", ours=False)


if __name__ == '__main__':
    trace_io.main()
