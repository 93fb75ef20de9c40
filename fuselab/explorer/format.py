"""Small formatting helpers shared by the views."""
from __future__ import annotations

import html


def fmt_bytes(n: float) -> str:
    """Decimal units, to match GB/s: 512 B, 4.1 KB, 33.6 MB, 1.07 GB."""
    n = float(n)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{n:.0f} B"


def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    s = float(seconds)
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def fmt_ratio(x: float | None) -> str:
    if x is None:
        return "–"
    if 0 < x < 0.995:   # two decimals showed a 300× slow-down as "0.00×"
        return f"{x:.2g}×" if x >= 0.01 else f"{x:.1g}× ({1 / x:.0f}× slower)"
    return f"{x:.2f}×"


def esc(s: object) -> str:
    return html.escape(str(s), quote=True)
