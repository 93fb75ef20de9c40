"""The searches, one module each; `plan` (planner.py) is the entry point.

common (shared types: constraint terms, results, budget), compat (which units could
share a kernel), context (tables of the exact searches), greedy, astar and branch_bound
(with assignment, bounds, local_search) run by exact, recompute.
"""
from .planner import STRATEGIES, plan

__all__ = ["STRATEGIES", "plan"]
