"""Our nFedGNN (fl/node_level, batched users) against the independent implementation written from
the paper and the note (nfedgnn_reference.py; nFedGNN has no public code), round by round.

//methods/testing:trace runs our federation through the node-level runtime's RoundTracer and
writes the graph, our initial server model and users' maps, every round's latents, train-mode
logits and losses, the gradients sent down, the server's model and Adam state, the users' maps
and Adam moments after their step, the eval logits, and the round's dropout masks. The oracle
starts from our states, applies our masks and runs the same rounds; everything must agree within
1e-5. The graph (node_level_trace.write_dataset) has sparse binary features, a user without
features, a feature no user has and an isolated user, so that the stored-rows layout and the
unreached users are exercised.
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..')))
from methods.nfedgnn.reference import nfedgnn_reference as ref  # noqa: E402
from methods.nfedgnn.reference import node_level_trace as nlt  # noqa: E402
from methods.reference import trace as trace_io  # noqa: E402

TOLERANCE = 1e-5
ROUNDS = 4
GCN = 'gcn:layers=2,hidden=16,dropout={p}'
GAT = 'gat:layers=2,heads=4,hidden=8,out_heads=1,dropout={p},input_dropout={p},attn_dropout={p}'

# name -> (model, dropout, lr, our NfedgnnParams text, the oracle's options besides the model's).
CONFIGS = {
    # The paper's GCN (lr 0.1 [S], dropout 0.5 with our masks), λ = 1, independent maps [P].
    'gcn_independent': (GCN, 0.5, 0.1, 'laplacian_weight: 1', {'lam': 1.0}),
    # One shared initial map, a strong Laplacian term, no dropout.
    'gcn_shared': (GCN, 0.0, 0.1, 'laplacian_weight: 10 user_init: SHARED', {'lam': 10.0}),
    # The paper's GAT shape scaled down (4 heads × 8), dropout 0.6 everywhere with our masks.
    'gat_independent': (GAT, 0.6, 0.01, 'laplacian_weight: 1', {'lam': 1.0}),
    'gat_shared': (GAT, 0.0, 0.01, 'laplacian_weight: 0.5 user_init: SHARED', {'lam': 0.5}),
    # §B.4's switch: with λ = 0 the users no label reaches (the isolated one) take no step.
    'gcn_skip_unreached': (GCN, 0.5, 0.1, 'laplacian_weight: 0 skip_zero_gradient_users: true',
                           {'lam': 0.0, 'skip_zero_grad_users': True}),
    # The users' own Adam without weight decay (the CNFGNN authors' client optimiser).
    'gcn_no_user_decay': (GCN, 0.0, 0.1, 'laplacian_weight: 1 user_weight_decay: 0',
                          {'lam': 1.0, 'user_weight_decay': 0.0}),
}


class DifferentialTest(nlt.TracedRunsTest):
    METHOD = 'nfedgnn'
    LABEL = 'nFedGNN'
    CONFIGS = CONFIGS
    ROUNDS = ROUNDS

    def oracle(self, name):
        model, p, lr, _, options = CONFIGS[name]
        trace = self.traces[name]
        options = dict(options)
        user_decay = options.pop('user_weight_decay', None)
        backbone = 'gat' if model.startswith('gat') else 'gcn'
        shape = {'hid_dim': 16} if backbone == 'gcn' else {'hid_dim': 8, 'heads': 4}
        states = {'server': trace.server_state('init/server'), 'users': trace.private_initial_users()}
        oracle = ref.NFedGnnReference(*trace.oracle_data(), initial_states=states, backbone=backbone, dropout=p,
                                      attn_dropout=p, lr=lr, weight_decay=5e-4, **shape, **options)
        if user_decay is not None:  # the oracle has one weight decay; ours sets the users' apart
            for opt in oracle.user_opts:
                for group in opt.param_groups:
                    group['weight_decay'] = user_decay
        return trace, oracle

    def check(self, name):
        trace, oracle = self.oracle(name)
        rec = nlt.Recorder(self, name, TOLERANCE)
        skipped_any = False
        for r in range(1, ROUNDS + 1):
            out = oracle.train_round(trace.draws(r, oracle))
            nlt.check_round(rec, trace, r, out)
            # The users' maps and Adam moments after their step, on our stored rows.
            s = f'state{r}/users/'
            for ours, key, field in (('weights', 'weight', 'value'), ('m_w', 'weight', 'exp_avg'),
                                     ('v_w', 'weight', 'exp_avg_sq')):
                theirs = trace.stack_users(out, key, field)[trace.entry_user, trace.entry_col]
                rec.check(r, f'users {ours}', trace.tensor(s + ours), theirs)
            if trace.has(s + 'bias'):
                for ours, field in (('bias', 'value'), ('m_b', 'exp_avg'), ('v_b', 'exp_avg_sq')):
                    rec.check(r, f'users {ours}', trace.tensor(s + ours), trace.stack_users(out, 'bias', field))
            if trace.has(s + 'user_steps'):
                self.assertTrue(trace.tensor(s + 'user_steps').equal(trace.user_steps(out)), f'{name} round {r}')
                skipped_any = skipped_any or bool(out['skipped'])
            else:
                self.assertEqual(trace.scalar(s + 'scalar/step'), float(r))
                self.assertTrue(trace.user_steps(out).eq(r).all())
        if CONFIGS[name][4].get('skip_zero_grad_users'):
            self.assertTrue(skipped_any, f'{name}: no user skipped a step, the switch is not exercised')
        self.worst[name] = rec.report()

    def test_gcn_independent(self):
        self.check('gcn_independent')

    def test_gcn_shared(self):
        self.check('gcn_shared')

    def test_gat_independent(self):
        self.check('gat_independent')

    def test_gat_shared(self):
        self.check('gat_shared')

    def test_gcn_skip_unreached(self):
        self.check('gcn_skip_unreached')

    def test_gcn_no_user_decay(self):
        self.check('gcn_no_user_decay')


if __name__ == '__main__':
    trace_io.main()
