"""Plain-PyTorch CNFGNN baseline, as ADAPTED by the nFedGNN paper, used as a test oracle.

Written from the paper only (no public code of this adaptation):
  * Gao, Guo, Gong, "One Node Per User" (shared/papers/002_cfd7bc2c9938d48e.txt),
    Sec. 4.1 "Baseline" (users upload both the latent vector and the
    user-side model parameters; the server averages the received local models
    and broadcasts the updated global model to all users) and Sec. 4.3 /
    Table 1 (communication: latent vector + user-side parameters);
  * the engineering note shared/papers/seeds_fedmpa_nodelevel.md, B.5
    (algorithm, [P] choices) and B.7 (communication arithmetic).
It is NOT Meng et al.'s original (spatio-temporal, GRU encoder-decoder) CNFGNN.

Everything of nFedGNN's round (methods/nfedgnn/reference/nfedgnn_reference.py,
Algorithm 1 / note B.4) is reused, with:
  * lam = 0 by default (note B.5: "with lambda = 0, no Laplacian term");
  * after every user's Adam step: user i uploads theta_i^u, the server computes
    theta_bar^u = (1/n) sum_i theta_i^u and broadcasts it, every user sets
    theta_i^u <- theta_bar^u (note B.5).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))
from methods.nfedgnn.reference.nfedgnn_reference import (  # noqa: E402
    NFedGnnReference, _clone_state, communication_cost_mib, draw_initial_states)

__all__ = ['CnfgnnReference', 'average_user_states', 'draw_cnfgnn_initial_states', 'communication_cost_mib']


def average_user_states(states):
    """Note B.5: theta_bar^u = (1/n) sum_i theta_i^u, uniform weights, every
    tensor of the user state_dict (weight and, for GCN, bias).
    CHOICE (oracle): accumulated in float64 in user order, divided by n, cast
    back to the tensor's dtype."""
    n = len(states)
    out = {}
    for key in states[0]:
        acc = torch.zeros(states[0][key].shape, dtype=torch.float64)
        for s in states:
            acc += s[key].double()
        out[key] = (acc / n).to(states[0][key].dtype)
    return out


def draw_cnfgnn_initial_states(num_nodes, feat_dim, num_classes, backbone='gcn', hid_dim=16, heads=8,
                               gcn_bias='user', generator=None, dtype=torch.float32):
    """CHOICE (note B.5 [P]): every user starts from the same theta_bar^u_0
    (one draw copied to all users); otherwise as nFedGNN's draw_initial_states."""
    return draw_initial_states(num_nodes, feat_dim, num_classes, backbone, hid_dim, heads, gcn_bias,
                               shared_user_init=True, generator=generator, dtype=dtype)


class CnfgnnReference(NFedGnnReference):
    """CNFGNN as adapted in Sec. 4.1: nFedGNN's split model and round, plus
    FedAvg of the user-side models at the end of every round.

    Same constructor as NFedGnnReference, except lam defaults to 0.0
    (note B.5). initial_states None draws a SHARED user init
    (draw_cnfgnn_initial_states, global RNG). Injected user states that
    differ are used as given in round 1 (CHOICE (oracle): no averaging before
    the first round).
    CHOICE (note B.5 [P]): per-user Adam states persist locally and are NOT
    averaged or reset by the broadcast (the broadcast copies values in place).

    train_round(draws) returns nFedGNN's dict plus:
      user_model_uploads  [state_dict per user]: theta_i^u after its Adam step (sent);
      averaged_user_state state_dict: theta_bar^u (broadcast to every user);
    and 'user_states' are AFTER the broadcast (all equal theta_bar^u).
    comm: upload_floats = n * (latent + #user params) (Table 1's count),
          download_floats = n * (latent + #user params) (gradient + broadcast).
    """

    def __init__(self, x, edge_index, y, train_mask, val_mask, test_mask, num_classes, initial_states=None,
                 backbone='gcn', lam=0.0, hid_dim=16, heads=8, gcn_bias='user', **kwargs):
        if initial_states is None:
            initial_states = draw_cnfgnn_initial_states(x.size(0), x.size(1), num_classes, backbone, hid_dim, heads,
                                                        gcn_bias, dtype=x.dtype)
        super().__init__(x, edge_index, y, train_mask, val_mask, test_mask, num_classes, initial_states,
                         backbone=backbone, lam=lam, hid_dim=hid_dim, heads=heads, gcn_bias=gcn_bias, **kwargs)
        self.num_user_params = sum(p.numel() for p in self.users[0].parameters())

    def _post_user_step(self, out):
        uploaded = [_clone_state(u) for u in self.users]          # users upload theta_i^u
        avg = average_user_states(uploaded)                       # server: uniform mean
        with torch.no_grad():
            for u in self.users:                                  # broadcast; users overwrite theta_i^u
                for name, p in u.named_parameters():
                    p.copy_(avg[name])
        out['user_model_uploads'] = uploaded
        out['averaged_user_state'] = _clone_state(avg)
        out['comm']['upload_floats'] += self.n * self.num_user_params
        out['comm']['download_floats'] += self.n * self.num_user_params
