"""The tables both exact searches (A* over downsets, the branch and bound over
assignments) read for one graph, and the step and time budget they spend together."""
from __future__ import annotations

import time

from ..analysis import Analysis, bits
from ..cost import opaque_flops
from ..device import DeviceParams
from ..partition import GroupCost
from .common import ConstraintTerms, OutOfSteps
from .compat import ReduceKeys, compatibility, independent_parts, must_store


class SearchContext:
    def __init__(self, an: Analysis, cost: GroupCost, params: DeviceParams, terms: ConstraintTerms,
                 max_steps: int, seconds: float = float("inf")) -> None:
        self.an, self.cost, self.params, self.terms = an, cost, params, terms
        self.max_steps = max_steps
        self.seconds = seconds
        self.deadline = time.perf_counter() + seconds
        self.steps = 0
        self.stopped = ""          # why a search stopped early, if one did
        self.max_nodes = cost.budgets.max_nodes
        self.upreds = {v: an.pmask[v] & an.all_mask for v in an.units}    # unit producers
        # the least compute each unit costs in any kernel (add-equivalents)
        weight = an.weights(params)
        self.fmin: dict[int, float] = {}
        for v in an.units:
            if an.alone_mask >> v & 1:
                self.fmin[v] = opaque_flops(an, v) if not an.free[v] else 0.0
            elif an.reduce_mask >> v & 1:
                self.fmin[v] = an.size[an.graph.nodes[v].inputs[0]] * weight[v]
            else:
                self.fmin[v] = an.least_evals[v] * weight[v]
        self.keys = ReduceKeys(an, cost.budgets.min_strided_rows)
        self.compat = compatibility(an, self.keys, terms.apart_with)
        self.stored = must_store(an, self.compat)
        # units that read each always-stored value and can never share its kernel
        self.far_users = {v: an.umask[v] & ~self.compat[v] for v in bits(self.stored)}

    def parts(self) -> list[int]:
        """The graph's units split into parts no kernel (and no kernel cycle) spans."""
        return independent_parts(self.an, self.compat)

    def step(self, clock_every: int) -> None:
        """Count one search step; raise OutOfSteps when a budget is spent (the clock is
        read every `clock_every + 1` steps, a power of two)."""
        self.steps += 1
        if self.steps > self.max_steps:
            raise OutOfSteps(f"step budget of {self.max_steps} spent")
        if self.steps & clock_every == 0 and time.perf_counter() > self.deadline:
            raise OutOfSteps(f"time budget of {self.seconds:g} s spent")
