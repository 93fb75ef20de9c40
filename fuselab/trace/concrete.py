"""Concrete values during a trace: when Python needs the value of a traced array (a graph
break), the nodes it depends on are evaluated with the reference interpreter on the cell's
array module, exactly as plain NumPy / CuPy would compute them. Values are kept, so nothing
is computed twice however many breaks follow.

Floating-point errors NumPy would warn about (divide by zero, overflow, invalid value) are
caught per node and handed to the context, which words and places them as NumPy would.

A value that is a Dask array in plain Dask code is made lazily by the fused plan of what
it depends on (fuselab.dask.breaks): `.compute()`, `bool()` or `float()` of it then
compute the fused kernels, and `print` shows a lazy array, as Dask does.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Sequence

import numpy as np

from ..interp import PythonWarning, evaluate_node
from ..recording import library_line, recorded
from ..ir import Node


class Evaluator:
    """Values of the nodes of a graph under construction, computed on demand."""

    def __init__(self, nodes: Sequence[Node], input_value: Callable[[int], Any],
                 on_fp_error: Callable[[int, str], None], lazy: Callable[[int], bool] = lambda i: False) -> None:
        self._nodes = nodes                   # the builder's list: grows while tracing
        self._input_value = input_value
        self._on_fp_error = on_fp_error
        self._lazy = lazy
        self.values: dict[int, Any] = {}
        self.xp: ModuleType = np
        # called before anything is computed (held.Held.check_all), or None
        self.before: Callable[[], None] | None = None

    def has(self, node: int) -> bool:
        return node in self.values

    def set(self, node: int, value: Any) -> None:
        """A value computed elsewhere (an operation run for real at a break)."""
        self.values[node] = value

    def value(self, node: int) -> Any:
        if node in self.values:
            return self.values[node]
        if self._lazy(node) and self._nodes[node].op != "input":
            from ..dask.breaks import lazy_value
            self.values[node] = lazy_value(self._nodes, node, self._input_value, self.values)
            return self.values[node]
        if self.before is not None:
            self.before()
            if node in self.values:
                return self.values[node]
        todo, stack = set(), [node]
        while stack:
            i = stack.pop()
            if i in todo or i in self.values:
                continue
            todo.add(i)
            stack.extend(self._nodes[i].inputs)
        for i in sorted(todo):  # ids are topological
            self.values[i] = self._eval(i)
        return self.values[node]

    def _eval(self, i: int) -> Any:
        n = self._nodes[i]
        xp = self.xp
        if n.op == "input":
            v = self._input_value(i)
            return v if xp is np or not isinstance(v, np.ndarray) else xp.asarray(v)
        vals = [self.values[j] for j in n.inputs]
        if xp is np:  # NumPy warns about floating-point errors, at the user's line
            return evaluate_node(xp, i, n, vals, self._on_fp_error)
        if n.op != "opaque":  # CuPy's kernels never warn
            return evaluate_node(xp, i, n, vals, None)
        # an opaque function's own Python code may warn (cupy.nanmax: "All-NaN slice
        # encountered"): given at the user's line, as for NumPy
        with recorded() as caught:
            out = evaluate_node(xp, i, n, vals, None)
        for w in caught:
            self._on_fp_error(i, PythonWarning(str(w.message), w.category, *library_line(w)))
        return out
