"""NVRTC through ctypes: compile CUDA C++ to PTX and cubin on any machine, GPU or not.

The runtime compiles through CuPy on the device; this module exists so that a machine
without a GPU (CI, a laptop) can still compile every generated kernel for sm_90 and
read the compiler's resource report (registers, spills, shared memory).
"""
from __future__ import annotations

import ctypes
import glob
import os
import re
import struct
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence


class CompileError(RuntimeError):
    """NVRTC rejected a kernel. The message shows the numbered source and the log."""

    def __init__(self, name: str, source: str, log: str) -> None:
        self.name, self.source, self.log = name, source, log
        super().__init__(f"NVRTC failed to compile {name}:\n{log.strip()}\n\n{numbered(source)}")


class NvrtcUnavailable(RuntimeError):
    """No libnvrtc could be found or loaded; the message lists where we looked."""


def numbered(source: str) -> str:
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}} | {line}" for i, line in enumerate(lines, 1))


@dataclass(frozen=True)
class CompileInfo:
    """What NVRTC and ptxas report for one kernel."""

    name: str
    arch: str
    ptx: str
    cubin: bytes
    registers: int
    spill_stores: int
    spill_loads: int
    stack_frame: int
    shared_bytes: int       # static shared memory (dynamic shared memory is a launch parameter)
    constant_bytes: int
    compile_s: float
    log: str
    # where the resources come from: "ptxas" (its verbose report, spills included) or
    # "cubin" (the ELF's attributes: registers, stack frame, shared memory; spills unknown)
    report: str = "ptxas"


def _candidate_paths() -> list[str]:
    found: list[str] = []
    explicit = os.environ.get("FUSELAB_NVRTC")
    if explicit:
        found.append(explicit)
    for root in filter(None, (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda")):
        for sub in ("lib64", "lib", "targets/x86_64-linux/lib"):
            found += sorted(glob.glob(os.path.join(root, sub, "libnvrtc.so*")), reverse=True)
    for site in sys.path:
        for sub in ("nvidia/cu13/lib", "nvidia/cu12/lib", "nvidia/cuda_nvrtc/lib"):
            found += sorted(glob.glob(os.path.join(site, sub, "libnvrtc.so*")), reverse=True)
    # Skip the alternate (static-builtins) and builtins libraries: we want the API library.
    return [p for p in dict.fromkeys(found) if "builtins" not in p and ".alt." not in p]


@lru_cache(maxsize=None)
def load_library() -> ctypes.CDLL:
    """The NVRTC shared library, from FUSELAB_NVRTC, CUDA_PATH, the pip wheels, or CUDA's
    own finder (cuda-pathfinder), in that order."""
    tried: list[str] = []
    for path in _candidate_paths():
        try:
            _preload_builtins(Path(path).parent)
            return _declare(ctypes.CDLL(path))
        except OSError as e:
            tried.append(f"{path}: {e}")
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib  # type: ignore
        lib = load_nvidia_dynamic_lib("nvrtc")
        return _declare(ctypes.CDLL(lib.abs_path))
    except Exception as e:  # noqa: BLE001 - any failure here means "not found"
        tried.append(f"cuda.pathfinder: {e}")
    raise NvrtcUnavailable("libnvrtc was not found; install nvidia-cuda-nvrtc (pip) or set "
                           "FUSELAB_NVRTC / CUDA_PATH. Tried:\n  " + "\n  ".join(tried or ["nothing"]))


def _preload_builtins(folder: Path) -> None:
    """NVRTC dlopens libnvrtc-builtins by name at compile time; a wheel's folder is not on
    the loader's path, so load it first (the loader then finds it by its soname)."""
    for path in sorted(folder.glob("libnvrtc-builtins.so*"), reverse=True):
        if ".alt." not in path.name:
            try:
                ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
                return
            except OSError:
                continue


def available() -> tuple[bool, str]:
    try:
        lib = load_library()
    except NvrtcUnavailable as e:
        return False, str(e)
    return True, f"NVRTC {version()} from {lib._name}"


def version() -> tuple[int, int]:
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(load_library().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    p, c, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    lib.nvrtcGetErrorString.restype = c
    lib.nvrtcGetErrorString.argtypes = [ctypes.c_int]
    lib.nvrtcCreateProgram.argtypes = [ctypes.POINTER(p), c, c, ctypes.c_int,
                                       ctypes.POINTER(c), ctypes.POINTER(c)]
    lib.nvrtcCompileProgram.argtypes = [p, ctypes.c_int, ctypes.POINTER(c)]
    for fn in ("nvrtcGetProgramLogSize", "nvrtcGetPTXSize", "nvrtcGetCUBINSize"):
        getattr(lib, fn).argtypes = [p, ctypes.POINTER(sz)]
    for fn in ("nvrtcGetProgramLog", "nvrtcGetPTX", "nvrtcGetCUBIN"):
        getattr(lib, fn).argtypes = [p, ctypes.c_char_p]
    lib.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(p)]
    return lib


def _check(status: int, what: str) -> None:
    if status != 0:
        msg = load_library().nvrtcGetErrorString(status)
        raise RuntimeError(f"{what} failed: {msg.decode() if msg else status}")


def _get_bytes(lib: ctypes.CDLL, prog: ctypes.c_void_p, what: str) -> bytes:
    size = ctypes.c_size_t()
    _check(getattr(lib, f"nvrtcGet{what}Size")(prog, ctypes.byref(size)), f"nvrtcGet{what}Size")
    buf = ctypes.create_string_buffer(size.value)
    _check(getattr(lib, f"nvrtcGet{what}")(prog, buf), f"nvrtcGet{what}")
    return buf.raw[: size.value]


def compile_source(source: str, name: str, options: Sequence[str] = (), arch: str = "sm_90",
                   want_cubin: bool = True) -> CompileInfo:
    """Compile `source` with NVRTC for `arch`; raise CompileError with the numbered
    source and the log when NVRTC rejects it."""
    lib = load_library()
    virtual = arch.replace("sm_", "compute_")
    opts = [f"--gpu-architecture={arch if want_cubin else virtual}", *options]
    if want_cubin:
        opts.append("--ptxas-options=-v")
    prog = ctypes.c_void_p()
    _check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), f"{name}.cu".encode(),
                                  0, None, None), "nvrtcCreateProgram")
    try:
        c_opts = (ctypes.c_char_p * len(opts))(*(o.encode() for o in opts))
        t0 = time.perf_counter()
        status = lib.nvrtcCompileProgram(prog, len(opts), c_opts)
        elapsed = time.perf_counter() - t0
        log = _get_bytes(lib, prog, "ProgramLog").rstrip(b"\0").decode(errors="replace")
        if status != 0:
            raise CompileError(name, source, log or lib.nvrtcGetErrorString(status).decode())
        ptx = _get_bytes(lib, prog, "PTX").rstrip(b"\0").decode()
        cubin = _get_bytes(lib, prog, "CUBIN") if want_cubin else b""
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
    resources = parse_ptxas_log(log, name)
    report = "ptxas"
    if not _USED.search(log) and cubin:
        # No ptxas report in the log (an earlier session saw an empty log on the H200
        # machine; libnvrtc 13.0.88 there reported normally on 2026-11-30): read
        # registers, stack frame and shared memory from the cubin itself.
        resources.update(cubin_resources(cubin, name))
        report = "cubin"
    return CompileInfo(name=name, arch=arch, ptx=ptx, cubin=cubin, compile_s=elapsed, log=log,
                       report=report, **resources)


_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_CMEM = re.compile(r"(\d+) bytes cmem\[0\]")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas_log(log: str, name: str) -> dict[str, int]:
    """Resource usage of kernel `name` from ptxas's verbose report."""
    info = dict(registers=0, spill_stores=0, spill_loads=0, stack_frame=0, shared_bytes=0,
                constant_bytes=0)
    section = _section_for(log, name)
    if m := _USED.search(section):
        info["registers"] = int(m.group(1))
    if m := _SMEM.search(section):
        info["shared_bytes"] = int(m.group(1))
    if m := _CMEM.search(section):
        info["constant_bytes"] = int(m.group(1))
    if m := _FRAME.search(section):
        info["stack_frame"], info["spill_stores"], info["spill_loads"] = map(int, m.groups())
    return info


# cubin (ELF64) attributes, from the .nv.info sections: (format, attribute, 16-bit value
# or size of the payload that follows); per-function values carry the symbol's index.
_EIFMT_SVAL = 0x04
_EIATTR_FRAME_SIZE = 0x11
_EIATTR_REGCOUNT = 0x2F
RESERVED_SMEM = 1024   # cudaDevAttrReservedSharedMemoryPerBlock on sm_80 and later


def cubin_resources(cubin: bytes, name: str) -> dict[str, int]:
    """Registers, stack frame and static shared memory of kernel `name` in a cubin."""
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = heads[shstrndx][4]

    def sec_name(h) -> str:
        start = names_at + h[0]
        return cubin[start:cubin.index(b"\0", start)].decode()
    by_name = {sec_name(h): (i, h) for i, h in enumerate(heads)}
    out = {}
    symtab = by_name.get(".symtab")
    sym_index = None
    if symtab is not None:
        _, h = symtab
        strtab_off = heads[h[6]][4]
        for k in range(h[5] // 24):
            st_name, = struct.unpack_from("<I", cubin, h[4] + 24 * k)
            start = strtab_off + st_name
            if cubin[start:cubin.index(b"\0", start)].decode() == name:
                sym_index = k
                break
    info = by_name.get(".nv.info")
    if info is not None and sym_index is not None:
        _, h = info
        data = cubin[h[4]:h[4] + h[5]]
        i = 0
        while i + 4 <= len(data):
            fmt, attr, value = struct.unpack_from("<BBH", data, i)
            i += 4
            if fmt != _EIFMT_SVAL:
                continue
            if value == 8 and attr in (_EIATTR_REGCOUNT, _EIATTR_FRAME_SIZE):
                sym, v = struct.unpack_from("<II", data, i)
                if sym == sym_index:
                    out["registers" if attr == _EIATTR_REGCOUNT else "stack_frame"] = v
            i += value
    shared = by_name.get(f".nv.shared.{name}")
    if shared is not None:
        # With a `__nv_reservedSMEM*` symbol, the section starts with the shared memory
        # the system reserves per block (1 KB since sm_80), not the kernel's own.
        reserved = RESERVED_SMEM if b"__nv_reservedSMEM" in cubin else 0
        out["shared_bytes"] = max(0, shared[1][5] - reserved)
    return out


def _section_for(log: str, name: str) -> str:
    """The lines of the log about function `name` (ptxas reports every function)."""
    lines = log.splitlines()
    out: list[str] = []
    keep = False
    for line in lines:
        if "Compiling entry function" in line or "Function properties for" in line:
            keep = f"'{name}'" in line or line.rstrip().endswith(name)
        if keep:
            out.append(line)
    return "\n".join(out) if out else log

