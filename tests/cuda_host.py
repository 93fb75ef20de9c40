"""Running generated kernels on the CPU through a small CUDA emulator (cuda_host.h),
compiled with the host C++ compiler: differential tests of the kernels' logic on a
machine without a GPU. The GPU tests (tests/test_gpu_*.py) run the same kernels for real.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pytest

from fuselab.codegen import CodegenOptions, KernelCode, OpaqueCall, generate
from fuselab.codegen.prelude import SNIPPETS
from fuselab.codegen.types import storage_type
from fuselab.interp import eval_nodes
from fuselab.plan.model import Plan
from fuselab.runtime.breaks import from_breaks

HEADER = Path(__file__).with_name("cuda_host.h")
CXX = os.environ.get("CXX", "g++")
HAVE_CXX = shutil.which(CXX) is not None
needs_cxx = pytest.mark.skipif(not HAVE_CXX, reason=f"no host C++ compiler ({CXX}) to emulate kernels")

# A tiny device keeps emulated grids small (each block's threads are OS threads).
EMULATED = CodegenOptions(sm_count=2)

_HOST_HALF = """
struct alignas(2) fl_half { unsigned short bits; };
inline float fl_from_half(fl_half h) { _Float16 v; std::memcpy(&v, &h.bits, 2); return float(v); }
inline fl_half fl_to_half(float f) { _Float16 v = _Float16(f); fl_half h; std::memcpy(&h.bits, &v, 2); return h; }
inline fl_half fl_to_half(double d) { _Float16 v = _Float16(d); fl_half h; std::memcpy(&h.bits, &v, 2); return h; }
"""
# NumPy's float16 arithmetic: computed in float, rounded once to half.
_HOST_HALF_OPS = """
inline fl_half fl_half_bits(unsigned short b) { fl_half h; h.bits = b; return h; }
inline fl_half fl_hadd(fl_half a, fl_half b) { return fl_to_half(fl_from_half(a) + fl_from_half(b)); }
inline fl_half fl_hsub(fl_half a, fl_half b) { return fl_to_half(fl_from_half(a) - fl_from_half(b)); }
inline fl_half fl_hmul(fl_half a, fl_half b) { return fl_to_half(fl_from_half(a) * fl_from_half(b)); }
inline fl_half fl_hneg(fl_half a) { return fl_half_bits(a.bits ^ 0x8000u); }
inline fl_half fl_habs(fl_half a) { return fl_half_bits(a.bits & 0x7fffu); }
"""
class EmulatorError(RuntimeError):
    """A kernel the emulator refuses (what NVRTC would refuse) or that misbehaved on it
    (a deadlock at a barrier or a shuffle)."""


_EXTERN_SHARED = re.compile(r"extern __shared__ (?:__align__\(\d+\) )?([\w ]+?) (\w+)\[\];")
_SHARED = re.compile(r"(?<!extern )__shared__ (?:__align__\(\d+\) )?[\w ]+? (\w+)(?:\[[^;]*\])?;")


def _host_shared(src: str) -> str:
    """Shared memory as the emulator has it: the dynamic buffer its launch gives, and each
    static `__shared__` declaration followed by FL_POISON_SHARED (its bytes set to 0xff
    once per block, by the first thread that reaches it: a GPU's shared memory holds
    whatever was there, and a kernel that reads it before writing must not pass here on
    the zeros a C++ static starts with)."""
    src = _EXTERN_SHARED.sub(r"\1* \2 = reinterpret_cast<\1*>(fl_host::dynamic_smem.data());", src)
    return _SHARED.sub(lambda m: f"{m.group(0)} FL_POISON_SHARED({m.group(1)});", src)


def host_source(code: KernelCode) -> str:
    """The kernel's source with its device-only pieces swapped for host ones: the
    float16 conversions and arithmetic (PTX asm) and dynamic shared memory."""
    src = code.source.replace(SNIPPETS[0].code.strip(), _HOST_HALF.strip())
    src = src.replace(SNIPPETS[1].code.strip(), _HOST_HALF_OPS.strip())
    src = src.replace('extern "C" __global__', "__global__")   # C++ names: units stay apart
    return _host_shared(src)


def host_prelude() -> str:
    """Every prelude snippet, host versions of the float16 ones: compiled once into a
    precompiled header that every batch includes (kernels' own copies are dropped)."""
    parts = [_HOST_HALF.strip(), _HOST_HALF_OPS.strip(), *(s.code.strip() for s in SNIPPETS[2:])]
    return "\n\n".join(parts) + "\n"


_ZERO_ARRAY = re.compile(r"^\s*[\w<>:, ]+\s+\w+\[0\]\s*;", re.MULTILINE)


def kernel_body(code: KernelCode) -> str:
    """The kernel's source without the prelude snippets (the precompiled header has them).
    g++ accepts arrays of size zero, NVRTC does not: refuse them here as NVRTC would."""
    src = code.source
    if m := _ZERO_ARRAY.search(src):
        raise EmulatorError(f"{code.name} declares an array of size zero, which NVRTC refuses: {m.group().strip()}")
    for snippet in SNIPPETS:
        src = src.replace(snippet.code.strip(), "")
    return _host_shared(src.replace('extern "C" __global__', "__global__"))


_FLAGS = ["-std=c++20", "-O0", "-fPIC", "-pthread", "-w"]


def _precompiled_header(folder: Path) -> Path:
    """cuda_host.h plus the host prelude, precompiled (once per content)."""
    text = f'#pragma once\n#include "{HEADER}"\n{host_prelude()}'
    digest = hashlib.sha256((text + HEADER.read_text() + " ".join(_FLAGS)).encode()).hexdigest()[:16]
    header = folder / f"fl_prelude_{digest}.h"
    gch = folder / f"fl_prelude_{digest}.h.gch"
    if not gch.exists():
        header.write_text(text)
        tmp = folder / f"fl_prelude_{digest}.{os.getpid()}.gch"
        subprocess.run([CXX, *_FLAGS, "-x", "c++-header", str(header), "-o", str(tmp)], check=True,
                       capture_output=True)
        tmp.rename(gch)
    return header


def _param_types(code: KernelCode, plan: Plan) -> list[str]:
    out = []
    for p in code.params:
        if p.role == "scratch":
            out.append("unsigned char*")
        else:
            st = storage_type(plan.graph.nodes[p.node].dtype)
            out.append(f"const {st}*" if p.role == "input" else f"{st}*")
    return out


def build(kernels: Sequence[tuple[KernelCode, Plan]], chunk: int | None = None) -> dict[str, Any]:
    """Compile kernels into shared libraries, a few large units compiled in parallel
    against one precompiled prelude, cached by content in the temp folder; returns a
    launcher per kernel source."""
    folder = Path(tempfile.gettempdir()) / "fuselab-host-kernels"
    folder.mkdir(exist_ok=True)
    prelude = _precompiled_header(folder)
    units: dict[str, str] = {}
    for code, plan in kernels:
        if code.source in units:
            continue
        k = len(units)
        args = ", ".join(f"static_cast<{t}>(a[{i}])" for i, t in enumerate(_param_types(code, plan)))
        g, b = code.grid, code.block
        units[code.source] = (
            f"namespace fl_unit{k} {{\n{kernel_body(code)}\n"
            f'extern "C" int fl_launch_{k}(void** a, char* err, int errlen) {{\n'
            f"    return fl_host::launch({{{g[0]}, {g[1]}, {g[2]}}}, {{{b[0]}, {b[1]}, {b[2]}}}, {code.shared_mem}, "
            f"[&] {{ {code.name}({args}); }}, err, errlen);\n}}\n}}  // namespace fl_unit{k}\n")
    sources = list(units)
    cores = max(1, os.cpu_count() or 1)
    chunk = chunk or max(8, min(64, -(-len(sources) // cores)))
    groups = [sources[i:i + chunk] for i in range(0, len(sources), chunk)]
    jobs = []
    for group in groups:
        text = f'#include "{prelude.name}"\n' + "\n".join(units[src] for src in group)
        digest = hashlib.sha256((text + prelude.read_text() + HEADER.read_text()).encode()).hexdigest()[:20]
        lib_path = folder / f"{digest}.so"
        cmd = None
        if not lib_path.exists():
            src_path = folder / f"{digest}.cpp"
            src_path.write_text(text)
            tmp = folder / f"{digest}.{os.getpid()}.so"
            cmd = ([CXX, *_FLAGS, "-shared", "-I", str(folder), str(src_path), "-o", str(tmp)], tmp)
        jobs.append((group, lib_path, cmd))
    _compile_all([(cmd, lib_path) for _, lib_path, cmd in jobs if cmd is not None])
    out: dict[str, Any] = {}
    for group, lib_path, _ in jobs:
        lib = ctypes.CDLL(str(lib_path))
        out.setdefault("_libs", []).append(lib)
        for src in group:
            k = sources.index(src)
            fn = getattr(lib, f"fl_launch_{k}")
            fn.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_int]
            fn.restype = ctypes.c_int
            out[src] = fn
    return out


def _compile_all(jobs: Sequence[tuple[tuple[list[str], Path], Path]]) -> None:
    """Run the compiles, as many at once as there are cores; the first failure raises."""
    running: list[tuple[subprocess.Popen, Path, Path]] = []
    errors: list[str] = []
    pending = list(jobs)
    limit = max(1, os.cpu_count() or 1)
    while pending or running:
        while pending and len(running) < limit:
            (cmd, tmp), lib_path = pending.pop(0)
            running.append((subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True), tmp, lib_path))
        proc, tmp, lib_path = running.pop(0)
        _, err = proc.communicate()
        if proc.returncode != 0:
            errors.append(err[:6000])
        else:
            tmp.rename(lib_path)
    if errors:
        raise RuntimeError(f"host compile failed:\n{errors[0]}")


def _aligned_empty(shape, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = np.zeros(n + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off: off + n].view(dt).reshape(shape)


def _aligned(a: np.ndarray) -> np.ndarray:
    out = _aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


class HostRunner:
    """Runs plans kernel by kernel on the CPU emulator (the GPU runtime's steps). Plans
    come alone (generated with `options`) or as (plan, options) pairs; all their kernels
    are compiled together."""

    def __init__(self, plans: Sequence[Plan | tuple[Plan, CodegenOptions]],
                 options: CodegenOptions = EMULATED,
                 generated: Sequence[tuple[Plan, Sequence[KernelCode | OpaqueCall]]] = ()) -> None:
        pairs = [p if isinstance(p, tuple) else (p, options) for p in plans]
        self.codes = {key: generate(*key) for key in dict.fromkeys(pairs)}
        self.default = options
        kernels = [(c, plan) for (plan, _), codes in self.codes.items() for c in codes if isinstance(c, KernelCode)]
        kernels += [(c, plan) for plan, codes in generated for c in codes if isinstance(c, KernelCode)]
        self.launchers = build(kernels) if kernels else {}
        self.scratch: dict[str, np.ndarray] = {}
        self.launched: list[str] = []     # the kernels the last run launched

    def run(self, plan: Plan, inputs: Mapping[str, np.ndarray],
            options: CodegenOptions | None = None, known: Mapping[int, Any] | None = None) -> dict[str, np.ndarray]:
        return self.run_codes(plan, self.codes[(plan, options or self.default)], inputs, known)

    def run_codes(self, plan: Plan, codes: Sequence[KernelCode | OpaqueCall],
                  inputs: Mapping[str, np.ndarray], known: Mapping[int, Any] | None = None) -> dict[str, np.ndarray]:
        """Run already generated code (compiled by this runner) for `plan`. `known`:
        values computed at graph breaks, taken as the GPU runtime takes them
        (fuselab.runtime.breaks); `self.launched` names the kernels that ran."""
        g = plan.graph
        env: dict[int, np.ndarray] = {i: _aligned(np.asarray(inputs[g.nodes[i].args["name"]]))
                                      for i in g.input_ids}
        self.launched = []
        schedule = from_breaks(plan, known or {})
        for code, (runs, taken) in zip(codes, schedule):
            if runs:
                self._run_one(code, g, env)
            env.update({o: _aligned(np.asarray(known[o], g.nodes[o].dtype).reshape(g.nodes[o].shape))
                        for o in taken})
        return {name: env[i] for name, i in g.outputs}

    def _run_one(self, code: KernelCode | OpaqueCall, g, env: dict[int, np.ndarray]) -> None:
        self.launched.append(code.name)
        if isinstance(code, OpaqueCall):
            local = eval_nodes(np, g, code.nodes or (code.node,), env)
            env.update({o: _aligned(np.asarray(local[o])) for o in code.outputs})
            return
        outs = [_aligned_empty(g.nodes[o].shape, g.nodes[o].dtype) for o in code.outputs]
        for o, arr in zip(code.outputs, outs):
            arr.reshape(-1).view(np.uint8)[:] = 0xAB   # poison: every element must be written
            env[o] = arr
        if code.empty:
            return
        threads = code.block[0] * code.block[1] * code.block[2]
        if min(code.grid) < 1 or min(code.block) < 1:
            # cudaErrorInvalidConfiguration on a GPU; the emulator's unsigned loop would not end
            raise EmulatorError(f"{code.name}: grid {code.grid} × block {code.block} is not a launch a GPU accepts")
        if threads > 1024 or code.shared_mem > 227 * 1024:
            # what a GPU refuses at launch (cudaErrorInvalidValue / out of resources)
            raise EmulatorError(f"{code.name}: a block of {threads} threads and {code.shared_mem} bytes "
                                "of dynamic shared memory cannot launch on a GPU")
        arrays = [env[i] for i in code.inputs] + outs
        if code.scratch_bytes:
            arrays.append(self.scratch.setdefault(code.source, _aligned(np.zeros(code.scratch_bytes, np.uint8))))
        ptrs = (ctypes.c_void_p * len(arrays))(*(a.ctypes.data for a in arrays))
        err = ctypes.create_string_buffer(512)
        if self.launchers[code.source](ptrs, err, len(err)):
            raise EmulatorError(f"{code.name}: {err.value.decode()}")
