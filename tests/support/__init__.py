"""Example cells and random graphs shared by the tests and the benchmarks.

    cells          reference cells (softmax, layernorm, ..., the larger notebook cells)
    random_graphs  random DAGs of table ops; random notebook cells of a given size
    expr           Expr: NumPy-like formulas over a GraphBuilder, and graph_of()

The package exports them all (`import support as T; T.softmax(64, 128)`). Tests import it
as `support` (pytest puts tests/ on sys.path, as for the other helpers there); benchmarks
as `tests.support`, with the repository root on sys.path.
"""
from .cells import (CELLS, LARGE_CELLS, adam, adam_clipped, black_scholes, column_norm, column_stats,
                    div_by_sum, gelu, heat_steps, layernorm, logsumexp, matmul_bias_act, option_greeks,
                    reductions, rmsnorm, softmax, stencil, transformer_block)
from .expr import Expr, graph_of, where
from .random_graphs import notebook_graph, random_cell, random_graph, random_inputs

__all__ = ["CELLS", "LARGE_CELLS", "Expr", "adam", "adam_clipped", "black_scholes", "column_norm",
           "column_stats", "div_by_sum", "gelu", "graph_of", "heat_steps", "layernorm", "logsumexp",
           "matmul_bias_act", "notebook_graph", "option_greeks", "random_cell", "random_graph",
           "random_inputs", "reductions", "rmsnorm", "softmax", "stencil", "transformer_block", "where"]
