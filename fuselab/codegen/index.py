"""Index math: where an element of a node lives, as affine expressions over loop variables.

A kernel iterates over loop variables (`i`, `row`, `col`, ...). The coordinate of an
element along each axis is an `Affine`: a constant plus integer multiples of symbols,
where a symbol is a loop variable or `(base / div) % mod` of another affine expression.
Views compose without leaving this form: a transpose permutes coordinates, a slice is
`start + step * c`, a broadcast dimension is 0, and a reshape linearises then splits.
The simplifier knows each symbol's range, so `(i / 6) * 6 + i % 6` folds back to `i`,
which is how a chain of reshapes of a contiguous array still loads from `x[i]`.

Keeping offsets symbolic (rather than strings) is what lets the pointwise template
decide, per load, whether 16-byte vector access is possible.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence, Union


@dataclass(frozen=True)
class Var:
    """A loop variable taking values 0 .. extent-1."""

    name: str
    extent: int

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class DivMod:
    """(base / div) % mod over non-negative integers; mod None means no modulo."""

    base: "Affine"
    div: int
    mod: int | None

    def __str__(self) -> str:
        inner = render(self.base)
        if self.base.const != 0 or len(self.base.terms) != 1 or self.base.terms[0][1] != 1:
            inner = f"({inner})"
        text = inner if self.div == 1 else f"{inner} / {_num(self.div)}"
        if self.mod is not None:
            text = f"{text} % {_num(self.mod)}"
        return f"({text})" if (self.div != 1 and self.mod is not None) else text


Sym = Union[Var, DivMod]


@dataclass(frozen=True)
class Affine:
    const: int = 0
    terms: tuple[tuple[Sym, int], ...] = ()   # (symbol, coefficient), coefficients non-zero

    # -- construction ------------------------------------------------------
    @staticmethod
    def of(sym: Sym, coef: int = 1) -> "Affine":
        # a loop variable of extent 1 is 0: kept as a symbol, it hides that (k1 * 65536 + k2)
        # / 256 * 256 + k2 % 256 is k2, and a 3-D column sum lost its vector loads
        if not coef or (isinstance(sym, Var) and sym.extent == 1):
            return Affine()
        return Affine(0, ((sym, coef),))

    @staticmethod
    def constant(c: int) -> "Affine":
        return Affine(int(c))

    def __add__(self, other: "Affine | int") -> "Affine":
        if isinstance(other, int):
            return Affine(self.const + other, self.terms)
        acc: dict[Sym, int] = dict(self.terms)
        for s, c in other.terms:
            acc[s] = acc.get(s, 0) + c
        return _make(self.const + other.const, acc)

    def __mul__(self, k: int) -> "Affine":
        if k == 0:
            return Affine()
        return Affine(self.const * k, tuple((s, c * k) for s, c in self.terms))

    # -- facts -------------------------------------------------------------
    @property
    def is_const(self) -> bool:
        return not self.terms

    def bounds(self) -> tuple[int, int]:
        lo = hi = self.const
        for s, c in self.terms:
            smax = extent(s) - 1
            lo += min(0, c * smax)
            hi += max(0, c * smax)
        return lo, hi

    def coef(self, sym: Sym) -> int:
        return dict(self.terms).get(sym, 0)

    def symbols(self) -> set[Var]:
        """The loop variables this expression depends on."""
        out: set[Var] = set()
        for s, _ in self.terms:
            out |= {s} if isinstance(s, Var) else s.base.symbols()
        return out

    def __str__(self) -> str:
        return render(self)


ZERO = Affine()


def _make(const: int, acc: dict[Sym, int]) -> Affine:
    terms = tuple(sorted(((s, c) for s, c in acc.items() if c), key=lambda t: (-abs(t[1]), _order(t[0]))))
    return Affine(int(const), terms)


def _order(s: Sym) -> tuple:
    if isinstance(s, Var):
        return (0, s.name)
    return (1, str(s))


def extent(s: Sym) -> int:
    """Number of values a symbol takes (it lies in 0 .. extent-1)."""
    if isinstance(s, Var):
        return max(1, s.extent)
    lo, hi = s.base.bounds()
    if s.mod is not None:
        return max(1, min(s.mod, hi // s.div + 1))
    return max(1, hi // s.div + 1)


def rename(a: Affine, old: Var, new: Var) -> Affine:
    """`a` with loop variable `old` written as `new` (inside divisions too), unsimplified:
    the same value, rendered under another name (a vector's element `i + e`)."""
    def sym(s: Sym) -> Sym:
        if s == old:
            return new
        if isinstance(s, DivMod):
            return DivMod(rename(s.base, old, new), s.div, s.mod)
        return s
    return Affine(a.const, tuple((sym(s), c) for s, c in a.terms))


def var(name: str, extent_: int) -> Affine:
    return Affine.of(Var(name, extent_))


# ---------------------------------------------------------------------------
# (a / div) % mod with simplification
# ---------------------------------------------------------------------------

def divmod_(a: Affine, div: int, mod: int | None) -> Affine:
    """(a / div) % mod of a non-negative affine expression, simplified."""
    if mod is not None and mod <= 1:
        return ZERO   # a dimension of size 1, or of size 0 (no element to address)
    lo, hi = a.bounds()
    if a.is_const:
        q = a.const // div
        return Affine.constant(q % mod if mod is not None else q)
    if lo >= 0 and hi < div:
        return ZERO
    # Split a into terms that survive the division whole (coefficients divisible by
    # div) and a low remainder; drop the remainder when it can never carry.
    high: dict[Sym, int] = {}
    low: dict[Sym, int] = {}
    for s, c in a.terms:
        if mod is not None and c % (div * mod) == 0:
            continue  # vanishes modulo div*mod
        (high if c % div == 0 else low)[s] = c
    high_const, low_const = divmod(a.const, div)
    low_expr = _make(low_const, low)
    llo, lhi = low_expr.bounds()
    if 0 <= llo and lhi < div:
        q_terms = {s: c // div for s, c in high.items()}
        if mod is not None:
            high_const = _nonneg_const(high_const, _make(0, q_terms).bounds()[0], mod)
        q = _make(high_const, q_terms)
        qlo, qhi = q.bounds()
        if mod is None or (qlo >= 0 and qhi < mod):
            return q
        return _wrap(q, 1, mod)
    terms = {**high, **low}
    const = a.const if mod is None else _nonneg_const(a.const, _make(0, terms).bounds()[0], div * mod)
    return _wrap(_make(const, terms), div, mod)


def _nonneg_const(const: int, terms_lo: int, period: int) -> int:
    """The smallest constant congruent to `const` modulo `period` that keeps an expression
    whose other terms are at least `terms_lo` non-negative. Reducing a constant modulo the
    period is free under a modulo, but a negative base would wrap around in the unsigned
    index arithmetic the kernels use ((2 - i) % 3 with i = 3)."""
    c = const % period
    if c + terms_lo < 0:
        c += -(-(-(c + terms_lo)) // period) * period
    return c


def _wrap(a: Affine, div: int, mod: int | None) -> Affine:
    """A DivMod symbol, merging with a DivMod base where the algebra allows."""
    lo, hi = a.bounds()
    if div == 1 and (mod is None or (lo >= 0 and hi < mod)):
        return a
    if a.const == 0 and len(a.terms) == 1 and a.terms[0][1] == 1 and isinstance(a.terms[0][0], DivMod):
        inner = a.terms[0][0]
        if inner.mod is None:
            return _wrap(inner.base, inner.div * div, mod)
        if inner.mod % div == 0:
            m2 = inner.mod // div
            if mod is None or mod >= m2:
                return _wrap(inner.base, inner.div * div, m2)
            if m2 % mod == 0:
                return _wrap(inner.base, inner.div * div, mod)
    return Affine.of(DivMod(a, div, mod))


# ---------------------------------------------------------------------------
# Linear <-> coordinates
# ---------------------------------------------------------------------------

def strides(shape: Sequence[int]) -> tuple[int, ...]:
    """C-order element strides (of a contiguous array)."""
    out = []
    acc = 1
    for d in reversed(shape):
        out.append(acc)
        acc *= max(int(d), 1)
    return tuple(reversed(out))


def linearize(coords: Sequence[Affine], shape: Sequence[int]) -> Affine:
    """Flat C-order offset of `coords` in an array of `shape`."""
    total = ZERO
    for c, s in zip(coords, strides(shape)):
        total = total + c * s
    return fold(total)


def delinearize(flat: Affine, shape: Sequence[int]) -> tuple[Affine, ...]:
    """Coordinates of flat index `flat` in `shape` (C order)."""
    st = strides(shape)
    return tuple(divmod_(flat, st[d], int(shape[d]) if d > 0 else None) for d in range(len(shape)))


def fold(a: Affine) -> Affine:
    """Merge c*(b/d % m) + c*m*(b/(d*m) % m2) into c*(b/d % (m*m2)) until nothing merges;
    this undoes a delinearize followed by a linearize."""
    changed = True
    while changed:
        changed = False
        terms = dict(a.terms)
        for s, c in list(terms.items()):
            if not isinstance(s, DivMod) or s.mod is None or s not in terms:
                continue
            for t, c2 in list(terms.items()):
                if (isinstance(t, DivMod) and t.base == s.base and t.div == s.div * s.mod
                        and c2 == c * s.mod):
                    del terms[s], terms[t]
                    merged_mod = None if t.mod is None else s.mod * t.mod
                    merged = _wrap(s.base, s.div, merged_mod)
                    a = _make(a.const, terms) + merged * c
                    changed = True
                    break
            if changed:
                break
    return a


# ---------------------------------------------------------------------------
# Views: coordinates of an input element given the coordinates of the output element
# ---------------------------------------------------------------------------

def broadcast(coords: Sequence[Affine], out_shape: Sequence[int], in_shape: Sequence[int]) -> tuple[Affine, ...]:
    """NumPy broadcasting: right-aligned, size-1 input dimensions read index 0."""
    off = len(out_shape) - len(in_shape)
    return tuple(ZERO if int(in_shape[d]) == 1 else coords[d + off] for d in range(len(in_shape)))


def transpose(coords: Sequence[Affine], perm: Sequence[int]) -> tuple[Affine, ...]:
    out: list[Affine] = [ZERO] * len(perm)
    for d, p in enumerate(perm):
        out[p] = coords[d]
    return tuple(out)


def slice_(coords: Sequence[Affine], start: Sequence[int], step: Sequence[int]) -> tuple[Affine, ...]:
    return tuple(c * st + s for c, s, st in zip(coords, start, step))


def reshape(coords: Sequence[Affine], out_shape: Sequence[int], in_shape: Sequence[int]) -> tuple[Affine, ...]:
    return delinearize(linearize(coords, out_shape), in_shape)


# ---------------------------------------------------------------------------
# Rendering to C
# ---------------------------------------------------------------------------

def _num(v: int) -> str:
    return f"{v}ull" if abs(v) >= 2 ** 31 else str(v)


def render(a: Affine) -> str:
    """C expression of an affine index (unsigned arithmetic: `9 - s` stays in range)."""
    terms = list(a.terms)
    parts: list[str] = []
    if a.const and (not terms or terms[0][1] < 0):
        parts.append(_num(a.const))
        const_done = True
    else:
        const_done = not a.const
    for s, c in terms:
        name = str(s)
        text = name if abs(c) == 1 else f"{name} * {_num(abs(c))}"
        if not parts:
            parts.append(text)
        else:
            parts.append(("+ " if c > 0 else "- ") + text)
    if not const_done:
        parts.append(("+ " if a.const > 0 else "- ") + _num(abs(a.const)))
    text = " ".join(parts) if parts else "0"
    # behind fl_index (an opaque move, see the prelude): NVVM reassociated such indices
    # into a negative 32-bit middle term, zero-extended for the address
    return f"fl_index({text})" if any(c < 0 for _, c in terms) else text


def max_value(coords: Iterable[Affine]) -> int:
    return max((c.bounds()[1] for c in coords), default=0)


def fits_32(*sizes: int) -> bool:
    """Whether unsigned 32-bit index arithmetic is safe for arrays of these sizes, with
    room for a grid-stride step past the end."""
    return max(sizes, default=0) < 2 ** 31 - 2 ** 26


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def prod(shape: Sequence[int]) -> int:
    return math.prod(int(d) for d in shape)
