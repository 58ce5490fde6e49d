"""Our FED-PUB against the port of the authors' code (JinheonBaek/FED-PUB, fedpub_reference.py),
round by round.

//methods/testing:trace runs our C++ federation and writes every message, each client's state
before round 1 and the proxy graph the clients rebuild from the broadcast's seed. The port starts
from those states and that proxy graph and runs the same rounds with dropout 0; every client's
masked model after local training, its functional embedding and the personalised model the server
sends it must agree within 1e-5.

Set where we differ from the authors' code: `embedding_before_activation` (their functional
embedding is conv2's output before its ReLU); l1 = loc_l2 = 0 (their sparsity and proximal terms
carry no gradient: they are read through `model.state_dict()`, which detaches them; ours do); no
weight decay (with Adam's eps of 1e-8, entries with gradients near 0 turn rounding into 1e-5).
"""
import os
import sys
import tempfile
import unittest

import torch

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
from methods.fedpub.reference import fedpub_reference as ref  # noqa: E402
from methods.reference import pyg  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402
from methods.reference.trace import Subgraph, max_difference  # noqa: E402

TOLERANCE = 1e-5
ROUNDS = 3
CLIENTS = 3
DATASET = 'csbm:num_nodes=350,num_classes=4,num_features=16,homophily=0.85'
# Ours ("gcn:layers=3,jk=last,masked=true": two masked GCNConvs and a masked linear head, weights and
# masks [in, out]) -> upstream's MaskedGCN (conv1, conv2, clsif; [out, in]).
NAMES = {'body.0': 'conv1', 'body.1': 'conv2', 'head': 'clsif'}


def run_trace(out_dir):
    spec = (f'dataset: "{DATASET}" clients: {CLIENTS} method: "fedpub" rounds: {ROUNDS} local_epochs: 1 '
            'lr: 0.01 weight_decay: 0 model: "gcn:layers=3,hidden=64,jk=last,masked=true,dropout=0" '
            'method_params { [type.googleapis.com/fgl.methods.fedpub.FedPubParams] { l1: 0 loc_l2: 0 '
            'embedding_before_activation: true } }')
    return trace_io.run_trace(spec, os.path.join(out_dir, 'fedpub.npz'))


def state(trace, prefix):
    out = {}
    for ours, theirs in NAMES.items():
        weight = 'weight' if theirs == 'clsif' else 'lin.weight'
        out[f'{theirs}.{weight}'] = torch.from_numpy(trace[f'{prefix}/{ours}.weight']).t().contiguous()
        out[f'{theirs}.mask'] = torch.from_numpy(trace[f'{prefix}/{ours}.mask']).t().contiguous()
        bias = torch.from_numpy(trace[f'{prefix}/{ours}.bias'])
        out[f'{theirs}.bias'] = bias.view(1, -1) if theirs == 'clsif' else bias
    return out


class FedPubDifferentialTest(unittest.TestCase):
    def test_rounds_agree_with_the_authors_code(self):
        with tempfile.TemporaryDirectory() as tmp:
            trace = run_trace(tmp)
        subgraphs = [Subgraph(trace, k) for k in range(CLIENTS)]
        proxy = pyg.Data(x=torch.from_numpy(trace['proxy/x']), edge_index=torch.from_numpy(trace['proxy/edge_index']))
        port = ref.FedPubReference(subgraphs, num_classes=4, global_state=state(trace, 'round1/broadcast'),
                                   client_states=[state(trace, f'init/client{k}') for k in range(CLIENTS)],
                                   proxy=proxy, hid_dim=64, dropout=0.0, lr=0.01, weight_decay=0.0, num_epochs=1,
                                   l1=0.0, loc_l2=0.0, norm_scale=10.0, laye_mask_one=True, clsf_mask_one=True)
        for r in range(1, ROUNDS + 1):
            got = port.train_round()
            for k in range(CLIENTS):
                d = max_difference(state(trace, f'round{r}/client{k}'), got['uploads'][k]['model'])
                e = float((torch.from_numpy(trace[f'round{r}/client{k}/fedpub.embedding'])
                           - got['uploads'][k]['functional_embedding']).abs().max())
                print(f'round {r} client {k}: model max |ours - authors| = {d:.2e}, embedding {e:.2e}')
                self.assertLessEqual(d, TOLERANCE, f'round {r}: client {k}\'s model')
                self.assertLessEqual(e, TOLERANCE, f'round {r}: client {k}\'s functional embedding')
            if r < ROUNDS:
                for k in range(CLIENTS):
                    sent = f'round{r + 1}/broadcast' if k == 0 else f'round{r + 1}/to_client{k}'
                    ours, theirs = state(trace, sent), got['personalized'][k]
                    keys = [n for n in theirs if not n.endswith('mask')]  # masks stay on the client
                    d = max(float((ours[n] - theirs[n]).abs().max()) for n in keys)
                    print(f'round {r} server -> client {k}: max |ours - authors| = {d:.2e}')
                    self.assertLessEqual(d, TOLERANCE, f'round {r}: client {k}\'s personalised model')


if __name__ == '__main__':
    trace_io.main()
