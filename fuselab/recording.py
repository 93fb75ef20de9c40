"""Recording the warnings NumPy gives while fuselab computes a cell's values, without
disturbing what Python remembers of the warnings a session has shown.

`warnings.catch_warnings()` tells Python that the filters changed, which empties every
module's once-per-location registry: after it, a warning NumPy's own code had already
shown (np.var's "invalid value encountered in divide" from numpy/_core/_methods.py) shows
again, where plain execution shows it once a session. `recorded()` catches warnings the
same way but leaves the filters' version, and so the registries, as they are: a warning
already shown at its place is skipped, as plain execution would skip it. With `fresh`,
for probes of where NumPy warns (trace/numpy_sites.py), every module's registry is set
aside for the block: all warnings are caught, and none is remembered.
"""
from __future__ import annotations

import contextlib
import os
import sys
import types
import warnings
from typing import Any, Iterator

# What recorded() swaps: CPython's warnings module reads these at every warning.
_HOOKS = ("filters", "showwarning", "_showwarnmsg_impl")


@contextlib.contextmanager
def recorded(fresh: bool = False) -> Iterator[list[warnings.WarningMessage]]:
    """The warnings given inside the block, every one not already shown at its place this
    session ("always"; with `fresh`, every one), in a list; none is shown. Nests, like
    catch_warnings."""
    if not all(hasattr(warnings, h) for h in _HOOKS):   # another Python's warnings module
        with warnings.catch_warnings(record=True) as log:
            warnings.simplefilter("always")
            yield log
        return
    log: list[warnings.WarningMessage] = []
    saved = {h: getattr(warnings, h) for h in _HOOKS}
    registries = _set_aside_registries() if fresh else {}
    warnings.filters = [("always", None, Warning, None, 0)]   # no _filters_mutated(): see above
    warnings.showwarning = warnings._showwarning_orig          # so _showwarnmsg_impl gets them
    warnings._showwarnmsg_impl = log.append
    try:
        yield log
    finally:
        for h, v in saved.items():
            setattr(warnings, h, v)
        for namespace, registry in registries.values():
            if registry is None:
                namespace.pop("__warningregistry__", None)
            else:
                namespace["__warningregistry__"] = registry


# A module's namespace, read past any __getattribute__ of its class: a lazily loaded
# module (importlib.util.LazyLoader) would import itself on `m.__dict__`, and imports may
# change the warning filters.
_NAMESPACE = types.ModuleType.__dict__["__dict__"]


def _module_namespaces() -> Iterator[dict]:
    """Every loaded module's namespace, once each (a warning finds its once-per-location
    registry, `__warningregistry__`, in the globals of the frame it is attributed to)."""
    seen: set[int] = set()
    for m in list(sys.modules.values()):
        if not issubclass(type(m), types.ModuleType):
            continue
        namespace = _NAMESPACE.__get__(m, type(m))
        if isinstance(namespace, dict) and id(namespace) not in seen:
            seen.add(id(namespace))
            yield namespace


def _set_aside_registries() -> dict[int, tuple[dict, Any]]:
    """Every loaded module's once-per-location registry, replaced by an empty one."""
    out: dict[int, tuple[dict, Any]] = {}
    for namespace in _module_namespaces():
        out[id(namespace)] = (namespace, namespace.get("__warningregistry__"))
        namespace["__warningregistry__"] = {}
    return out


def filters_version() -> int:
    """The warnings filters' version, which a registry records when it is (re)filled: a
    warning whose registry holds another forgets what that registry remembered."""
    registry: dict = {}
    with recorded():
        warnings.warn_explicit("fuselab probe", UserWarning, "fuselab-probe", 1, module="fuselab_probe",
                               registry=registry)
    return int(registry.get("version", 0))


@contextlib.contextmanager
def registries_kept() -> Iterator[None]:
    """Library code fuselab runs for itself (Numba's set-up imports SciPy, which enters
    `catch_warnings`; `platform` and `subprocess` do the same) moves the filters' version,
    and every module's once-per-location registry forgets the warnings it had shown:
    NumPy's own lines (np.diff's "invalid value encountered in subtract") would show them
    again, where plain execution, which runs none of that code, does not. Registries
    valid when the block starts are valid again when it ends."""
    before = filters_version()
    try:
        yield
    finally:
        after = filters_version()
        if after != before:
            for namespace in _module_namespaces():
                registry = namespace.get("__warningregistry__")
                if isinstance(registry, dict) and registry.get("version") == before:
                    registry["version"] = after


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def in_fuselab(filename: str) -> bool:
    """Whether `filename` is one of fuselab's own source files (a frame of fuselab's)."""
    return filename.startswith(_PACKAGE + os.sep)


def library_line(w: warnings.WarningMessage) -> tuple[str, int] | tuple[()]:
    """Where plain execution shows a warning a library gave while fuselab ran it: () when
    Python attributed it to fuselab's own frame, which called the library in the user's
    place (NumPy's stacklevel=2: the user's line); else the library file and line
    (cupy.nanmax warns from cupy/_statistics/order.py). Unpacks into PythonWarning's
    (filename, lineno)."""
    filename = os.path.abspath(str(w.filename))
    if filename.startswith(_PACKAGE + os.sep):
        return ()
    return (str(w.filename), int(w.lineno))


def module_of(filename: str) -> Any:
    """The loaded module whose file `filename` is (NumPy's _methods), or None."""
    for m in list(sys.modules.values()):
        if getattr(m, "__file__", None) == filename:
            return m
    return None


def give_at(message: str, category: type, filename: str, lineno: int) -> None:
    """Warn as if from line `lineno` of the loaded module file `filename` (NumPy's own
    code): through that module's once-per-location registry, as NumPy's warning would."""
    module = module_of(filename)
    if module is None:   # (module=None given outright, CPython's warn_explicit shows nothing)
        warnings.warn_explicit(message, category, filename, lineno)
        return
    warnings.warn_explicit(message, category, filename, lineno, module=module.__name__,
                           registry=vars(module).setdefault("__warningregistry__", {}),
                           module_globals=vars(module))
