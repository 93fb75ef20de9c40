"""Random notebook cells for the fidelity harness: the hand-written corpus
(fidelity_corpus.py) names the situations someone thought of; these cells combine them
at random, the way a notebook does: new names, aliases, views and in-place updates of
the set-up's arrays, containers and attributes filled with arrays, values read by Python
(prints, `if` on a reduction, `float(...)`), loops, a shown last line, and now and then a
line that raises. Each cell is grown statement by statement against a plain namespace
(the statement is kept only if plain Python runs it, unless the cell is to end in an
error), so the cells are valid NumPy code of every dtype the set-up holds.

    random_cell(seed) -> Case        # deterministic in the seed
"""
from __future__ import annotations

import contextlib
import io
import random
import warnings
from typing import Any

import numpy as np

from fidelity import Case
from fidelity_corpus import SETUP

UNARY = ["{a} + 1", "{a} * 2", "{a} - {a}.mean()", "{a} // 3", "{a} % 4", "-{a}", "abs({a})", "{a} ** 2",
         "np.sqrt(np.abs({a}))", "np.exp(-abs({a}))", "{a} > 0", "np.where({a} > 0, {a}, 0)", "{a}.astype(np.float32)",
         "np.maximum({a}, 1)", "np.clip({a}, -2, 2)", "{a}[::-1]", "{a}[1:]", "{a} * {a}", "np.tanh({a})",
         "{a}.cumsum()", "np.sort({a})", "{a}.copy()", "{a} / 3", "~{a}", "{a} << 1", "np.round({a}, 1)"]
BINARY = ["{a} + {b}", "{a} * {b}", "{a} - {b}", "np.maximum({a}, {b})", "np.where({a} > {b}, {a}, {b})",
          "{a} / ({b} ** 2 + 1)", "{a} == {b}", "{a} & {b}"]
REDUCE = ["{a}.sum()", "{a}.mean()", "{a}.max()", "{a}.argmin()", "{a}.std()", "np.count_nonzero({a})",
          "{a}.sum(axis=0)", "{a}.mean(axis=-1, keepdims=True)", "{a}.any()", "{a}.var(ddof=1)", "{a}.min(axis=0)",
          # the function forms warn from NumPy's files, the methods from the cell's line
          "np.mean({a})", "np.std({a}, axis=0)", "np.var({a}, ddof=1)", "np.sum({a}, axis=-1)", "np.max({a}, axis=0)",
          "{a}[:0].mean()", "np.std({a}[:0])", "np.var({a}[:0], axis=0)", "np.mean({a}[:0], axis=-1)"]
VIEWS = ["{a}[::2]", "{a}.T", "{a}[1]", "{a}.reshape(-1)", "{a}[..., :2]", "{a}[None]", "{a}[::-1]",
         "{a}.ravel()", "np.squeeze({a})", "{a}.view()"]
INDEXING = ["{a}[[0, 2]]", "{a}[{a} > 0]", "{a}[-1]", "{a}.item(0)", "{a}.tolist()", "np.concatenate([{a}, {a}])",
            "np.stack([{a}, {a}])", "{a}.reshape(2, -1)", "np.nonzero({a} > 0)", "np.where({a} > 1)",
            "{a}.astype(int)", "{a}.astype(bool)", "len({a})", "{a}.shape[0] * 2", "np.unique({a})",
            "f'{{{a}.sum():.3f}}'", "[v * 2 for v in {a}[:3]]", "{a} @ {a}.T", "np.dot({a}, {a})"]
INPLACE = ["{a} += 1", "{a} *= 2", "{a}[{a} < 0] = 0", "{a}[:2] = 7", "np.add({a}, 1, out={a})", "{a} -= {a}.mean()",
           "{a}[0] = {a}[-1]"]
PYTHON = ["try:\n    q{k} = {a}[100]\nexcept IndexError:\n    q{k} = {a}[0]", "p{k} = q{k} = {a} * 2",
          "a{k}, b{k} = {a}[:2]", "lst[0] += 1", "obj.u{k} = {a}\nobj.u{k} = obj.u{k} + 1",
          "def f{k}(v):\n    return v * 3 + 1\ng{k} = f{k}({a})", "h{k} = (lambda v: v - 1)({a})",
          "print({a}.shape, {a}.dtype)", "print({a})", "s{k} = float({a}.sum())", "n{k} = int({a}.size)",
          "lst.append({a})", "d['k{k}'] = {a}", "obj.v{k} = {a}", "t{k} = ({a}, {a}.sum())",
          "if {a}.sum() > 0:\n    y{k} = {a} * 2\nelse:\n    y{k} = {a} - 1",
          "for j in range(2):\n    {a} = {a} * 0.5", "ok{k} = bool(({a} > 0).any())",
          "del {a}"]
# Edges of NumPy's and Python's semantics: overlapping in-place updates (NumPy buffers
# them: the result is as if the right side were copied first), repeated fancy indices
# (no accumulation), NEP 50 scalars, integer wrap, casting errors, the walrus,
# comprehensions, class bodies, errstate blocks, loops on values.
EDGES = ["{a}[1:] += {a}[:-1]", "{a}[::-1] += {a}", "{a}[...] = {a}[::-1]", "{a}[[0, 0, 1]] += 1",
         "np.add({a}[:-1], {a}[1:], out={a}[1:])", "np.multiply({a}, 2, out={a}[::-1])", "{a} **= 2",
         "{a} //= 2", "{a} += 0.5", "{a} += True", "ee{k} = np.float32(2) * {a}", "ee{k} = np.int8(100) + {a}",
         "ee{k} = {a} + 200", "ee{k} = {a} % -3", "ee{k} = np.fmod({a}, 3)", "ee{k} = np.floor_divide({a}, -2)",
         "ee{k} = np.hypot({a}, 1)", "ee{k} = np.diff({a}, axis=0)", "ee{k} = {a}.astype(np.float16) * 3",
         "ee{k} = np.nan_to_num({a} / 0)", "ee{k} = np.sign({a})", "ee{k} = {a}.round()", "ee{k} = {a}.clip(0)",
         "(ww{k} := {a} * 2)", "cc{k} = [{a} * i for i in range(2)]", "gg{k} = sum(v.sum() for v in [{a}, {a}])",
         "{a}, tt{k} = {a} * 2, {a}", "zz{k} = {a}\nzz{k} += 1",
         "with np.errstate(all='ignore'):\n    es{k} = {a} / 0",
         "for _ in range(3):\n    if abs({a}).sum() > 100:\n        {a} = {a} / 2", "em{k} = np.empty_like({a})\nem{k}[...] = {a}",
         "class C{k}:\n    val = {a} * 2\ncv{k} = C{k}.val", "ii{k} = {a}\n{a} = {a} + 1\nii{k} *= 2",
         "vv{k} = {a}[::2]\nvv{k} += vv{k}[::-1]"]
LAST = ["{a}", "{a}.sum()", "{a}.shape", "{a}.min(), {a}.max()", "{a} * 2;"]
ERRORS = ["{a} + np.ones(13)", "{a}.reshape(7, 11)", "{a}[100]", "np.linalg.inv({a})", "undefined_name + {a}"]


# Statements that read only an array's shape: fuselab does not compute a new array that
# nothing reads the values of (it is fused away, and listed), so NumPy's floating-point
# warnings of computing it are not given (README, "Warnings"). They take set-up names.
SHAPE_ONLY = {"len({a})", "{a}.shape[0] * 2", "print({a}.shape, {a}.dtype)", "{a}.shape"}
SETUP_NAMES = frozenset({"x", "m", "i8", "u8", "i32", "b", "h", "be", "z", "e", "sq"})


def _namespace() -> dict[str, Any]:
    ns: dict[str, Any] = {}
    exec(SETUP, ns)  # noqa: S102 - the corpus's own set-up
    return ns


def _arrays(ns: dict[str, Any]) -> list[str]:
    return sorted(k for k, v in ns.items() if isinstance(v, np.ndarray) and not k.startswith("_") and v.size)


def _runs(ns: dict[str, Any], stmt: str) -> bool:
    trial = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in ns.items()}
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            exec(stmt, trial)  # noqa: S102 - a generated statement, checked before it is kept
    except Exception:  # noqa: BLE001 - a statement plain Python refuses is not kept
        return False
    return True


def random_cell(seed: int, statements: int | None = None) -> Case:
    rng = random.Random(seed)
    ns = _namespace()
    lines: list[str] = []
    count = statements or rng.randint(2, 7)
    for k in range(count * 4):
        if len(lines) >= count:
            break
        names = _arrays(ns)
        a, b = rng.choice(names), rng.choice(names)
        setup_names = [n for n in names if n in SETUP_NAMES] or names
        kind = rng.choices(["new", "binary", "reduce", "view", "inplace", "python", "alias", "index", "edge"],
                           weights=[5, 4, 3, 2, 2, 4, 1, 3, 3])[0]
        if kind == "new":
            stmt = f"v{k} = " + rng.choice(UNARY).format(a=a)
        elif kind == "binary":
            stmt = f"v{k} = " + rng.choice(BINARY).format(a=a, b=b)
        elif kind == "reduce":
            stmt = f"r{k} = " + rng.choice(REDUCE).format(a=a)
        elif kind == "view":
            stmt = f"w{k} = " + rng.choice(VIEWS).format(a=a)
        elif kind == "index":
            tmpl = rng.choice(INDEXING)
            stmt = f"i{k} = " + tmpl.format(a=rng.choice(setup_names) if tmpl in SHAPE_ONLY else a)
        elif kind == "inplace":
            stmt = rng.choice(INPLACE).format(a=a)
        elif kind == "edge":
            stmt = rng.choice(EDGES).format(a=a, k=k)
        elif kind == "python":
            tmpl = rng.choice(PYTHON)
            stmt = tmpl.format(a=rng.choice(setup_names) if tmpl in SHAPE_ONLY else a, k=k)
        else:
            stmt = f"al{k} = {a}"
        if _runs(ns, stmt):
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                exec(stmt, ns)  # noqa: S102
            lines.append(stmt)
    names = _arrays(ns)
    tail = rng.random()
    if tail < 0.1 and names:
        lines.append(f"bad = " + rng.choice(ERRORS).format(a=rng.choice(names)))
    elif tail < 0.35 and names:
        tmpl = rng.choice(LAST)
        pool = [n for n in names if n in SETUP_NAMES] or names
        lines.append(tmpl.format(a=rng.choice(pool if tmpl in SHAPE_ONLY else names)))
    # a cell whose reductions plain NumPy and the CPU backend may add in another order
    # compares their values to a relative 1e-6 (the corpus's documented tolerance)
    tol = "reduction order" if any(r in "\n".join(lines) for r in ("mean", "std", "var", "sum")) else ""
    return Case(f"random-{seed}", "\n".join(lines), tol=tol)
