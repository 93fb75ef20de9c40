"""The explorer's Dask panel: the chunk grid of inputs and results, how each kernel runs
on the blocks, the rechunks a row kernel needs and what they move, tasks of the fused plan
against the cell as plain Dask, and the measured `.compute()` times when timed."""
from __future__ import annotations

from typing import Any

from .format import esc, fmt_bytes, fmt_ratio, fmt_time


def dask_html(session: Any) -> str:
    info = session.dask_info()
    if info is None:
        return ""
    grid_rows = "".join(
        f"<tr><td>{kind}</td><td><code>{esc(g.name)}</code></td><td>{esc(g.shape)}</td><td>{esc(g.block)}</td>"
        f"<td>{'×'.join(map(str, g.blocks)) or '1'}</td><td>{fmt_bytes(g.block_bytes)}</td></tr>"
        for kind, gs in (("input", info.inputs), ("result", info.outputs)) for g in gs)
    kernels = "".join(f"<li><b>k{k.index}</b> {esc(k.name)}: {esc(k.how)}"
                      + (f" ({'×'.join(map(str, k.grid))} blocks)" if k.grid else "") + "</li>"
                      for k in info.kernels)
    rechunks = "".join(f"<li class='fuselab-refused'>{esc(r)}</li>" for r in info.rechunks)
    parts = [
        "<div class='fuselab-dask'><b>Dask</b>: each block runs " + esc(info.runner) + ".",
        "<table class='fuselab-table'><tr><th></th><th>array</th><th>shape</th><th>block</th>"
        f"<th>blocks</th><th>bytes per block</th></tr>{grid_rows}</table>",
        f"<div>Tasks after Dask's optimisation: <b>{info.fused_tasks}</b> fused, {info.plain_tasks} as plain Dask "
        f"({fmt_ratio(info.plain_tasks / info.fused_tasks) if info.fused_tasks else '–'} fewer).</div>",
        f"<ul>{kernels}</ul>",
    ]
    if rechunks:
        parts.append(f"<div>Rechunks (blocks must hold whole rows):</div><ul>{rechunks}</ul>")
    m = session.measurement
    if m is not None:
        parts.append(f"<div><b>Measured</b> on {esc(m.scheduler)} (median of {m.repeats}): fused "
                     f"{fmt_time(m.fused_s)}, plain Dask {fmt_time(m.plain_s)} → <b>{fmt_ratio(m.speedup)}</b>.</div>")
    return "".join(parts) + "</div>"
