"""Allocation policies: from a job's range, its application's curve and the cluster's state to a
node count, a time limit and the reason. Pure code: no I/O, no logging, no global state.

    import policies
    config = policies.parse_config(tomllib.load(f), "policy.toml")      # or default_config()
    settings = policies.effective(config, partition="batch", account="physics")
    decision = policies.decide(request, curve, cluster, settings, budget)
    decision.nodes, decision.time_limit_min, decision.rule, decision.reason
    decision.max_nodes   # None: pinned at nodes; else release with NumNodes=nodes-max_nodes

The decision flow is in decide.py, each rule and its literature in rules.py, the time limit in
time_limit.py, feasible sizes in feasible.py and the configuration's keys in config.py.
"""

from policies.config import (
    DEFAULTS,
    KEYS,
    PolicyConfig,
    PolicyConfigError,
    PolicySettings,
    default_config,
    effective,
    parse_config,
)
from policies.decide import decide, decide_with_runtime
from policies.decision import RULES, Candidate, Decision
from policies.feasible import Feasible, parse_feasible
from policies.inputs import ClusterState, ExplorationBudget, Request

__all__ = [
    "DEFAULTS",
    "KEYS",
    "RULES",
    "Candidate",
    "ClusterState",
    "Decision",
    "ExplorationBudget",
    "Feasible",
    "PolicyConfig",
    "PolicyConfigError",
    "PolicySettings",
    "Request",
    "decide",
    "decide_with_runtime",
    "default_config",
    "effective",
    "parse_config",
    "parse_feasible",
]
