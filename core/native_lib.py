"""The one native library (runtime_c/brushbake.c and every runtime_c/compiler/*.c), found, built or
reported missing, for every ctypes binding: the run-time's (core/runtime/cruntime.py) and the
compiler's kernels'.  load_library() returns it; backend_report() says which one runs and why.

Where it comes from, first that works:

1. shipped: the `brushbake_native` package, a py3-none-<platform> wheel holding the library built
   ahead of time with `zig cc` (scripts/build_native.py): the Blender extension carries one per
   platform, and a headless install gets it with `pip install --find-links WHEELS brushbake[native]`.
   It is used only when built from the sources beside this file (its build.json records their
   hash): a library of other sources could have other functions or records.
2. built: compiled from runtime_c/ by the machine's C compiler ($CC, cc, gcc or clang) into a cache
   folder, named by a hash of the sources and flags, so a changed source is rebuilt and two
   versions never mix.  The folder is set_cache_dir()'s (the add-on sets Blender's
   extension_path_user: never the add-on's own folder, which may be read-only), else
   $BRUSHBAKE_C_CACHE, else $XDG_CACHE_HOME/brushbake, else ~/.cache/brushbake.
3. none: BackendUnavailableError names what was tried, and the callers answer with NumPy, which
   stays the reference: every library gives its answers to the bit.

$BRUSHBAKE_NATIVE narrows the order: 'shipped' (only 1), 'source' (only 2), 'off' (neither: NumPy);
unset or 'auto' is the order above.

Only the standard library: importable with nothing of compile/ or runtime/.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .errors import BackendUnavailableError

#: where the C sources live: runtime_c/ at the top of the package (the repository's root)
SOURCE_DIR = Path(__file__).resolve().parents[1] / "runtime_c"
#: the compiler's kernels: every .c here joins the library (sorted: the same link order everywhere)
KERNEL_DIR = SOURCE_DIR / "compiler"
#: the package a shipped library comes in (scripts/build_native.py writes its wheels)
SHIPPED_PACKAGE = "brushbake_native"
#: -ffp-contract=off: no fused multiply-adds, so products round as NumPy's do.  -O3: the batch walks
#: run 0-6% faster than at -O2 (bench/runtime.py); the answers are the same at either.  Not
#: -march=native: the library in a shared cache folder may be loaded on another processor, for 2-3%
#: more.  -fno-builtin-sin/-cos: sin and cos stay two calls (clang on macOS would make one call to
#: __sincos_stret of them; Python's math.sin and math.cos, the reference, are the two).
#: -DBBK_BUILD_DLL: BBK_API exports the functions from a Windows DLL (empty elsewhere).
CFLAGS = ("-std=c99", "-O3", "-ffp-contract=off", "-fno-builtin-sin", "-fno-builtin-cos", "-DBBK_BUILD_DLL",
          "-fPIC", "-shared")
MODES = ("auto", "shipped", "source", "off")

_LOCK = threading.RLock()
_LOADED: tuple | None = None  # (CDLL or None, Report), the first load_library()'s outcome
_CACHE_DIR: Path | None = None


@dataclass(frozen=True)
class Report:
    """Which backend runs and why: backend 'shipped', 'built' or 'numpy', the library's path
    (None for NumPy) and a sentence for people (the bake table, `info`, the add-on's panel)."""

    backend: str
    path: Path | None
    why: str

    @property
    def native(self) -> bool:
        return self.backend != "numpy"

    @property
    def name(self) -> str:
        return {"shipped": "native (shipped)", "built": "native (built from source)", "numpy": "NumPy"}[self.backend]

    @property
    def text(self) -> str:
        return f"{self.name}: {self.why}"


def this_platform() -> str:
    """The platform as Blender names it (linux-x64, windows-x64, macos-arm64, ...)."""
    system = {"darwin": "macos"}.get(platform.system().lower(), platform.system().lower())
    machine = platform.machine().lower()
    machine = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(machine, machine)
    return f"{system}-{machine}"


def set_cache_dir(path) -> None:
    """Build into `path` from now on (the add-on: Blender's extension_path_user); None: the default."""
    global _CACHE_DIR
    _CACHE_DIR = None if path is None else Path(path)


def cache_dir() -> Path:
    if _CACHE_DIR is not None:
        return _CACHE_DIR
    if os.environ.get("BRUSHBAKE_C_CACHE"):
        return Path(os.environ["BRUSHBAKE_C_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "brushbake"


def source_files(root: Path | None = None) -> list[Path]:
    """The library's sources: brushbake.c, then the kernels' .c files sorted (what is compiled)."""
    root = SOURCE_DIR if root is None else Path(root)
    return [root / "brushbake.c", *sorted((root / "compiler").glob("*.c"))]


_DIGESTS: dict = {}


def sources_digest(root: Path | None = None) -> str:
    """A hash of every source and header (names and bytes, line ends as \\n): what a shipped library
    records and a built one is named by.  OSError when runtime_c/ is missing."""
    root = SOURCE_DIR if root is None else Path(root)
    files = sorted({*source_files(root), root / "brushbake.h", *(root / "compiler").glob("*.h")})
    key = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)  # the panel asks often
    if key not in _DIGESTS:
        _DIGESTS.clear()
        _DIGESTS[key] = _digest(root, files)
    return _DIGESTS[key]


def _digest(root: Path, files) -> str:
    h = hashlib.sha256()
    for path in files:
        data = path.read_bytes().replace(b"\r\n", b"\n")
        h.update(f"{path.relative_to(root).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def _mode() -> str:
    mode = (os.environ.get("BRUSHBAKE_NATIVE") or "auto").strip().lower()
    return mode if mode in MODES else "auto"


def _library_suffix() -> str:
    return ".dylib" if sys.platform == "darwin" else ".dll" if os.name == "nt" else ".so"


# ---- 1. the shipped library ------------------------------------------------------------------


def shipped_library() -> tuple[Path | None, str]:
    """(the shipped library's path, why) or (None, why not): brushbake_native installed, for this
    platform, built from these sources, its file present."""
    try:
        spec = importlib.util.find_spec(SHIPPED_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None, f"no wheel for {this_platform()} installed"
    folder = Path(next(iter(spec.submodule_search_locations)))
    try:
        build = json.loads((folder / "build.json").read_text(encoding="utf-8"))
        path = folder / build["library"]
    except (OSError, ValueError, KeyError, TypeError):
        return None, f"the wheel in {folder} has no readable build.json"
    where = f"{SHIPPED_PACKAGE} {build.get('version', '?')} for {build.get('platform', '?')}"
    if build.get("platform") != this_platform():
        return None, f"the wheel is {where}, not {this_platform()}"
    try:
        digest = sources_digest()
    except OSError:
        digest = None  # no sources to compare with (an install without runtime_c/): trust the package
    if digest is not None and build.get("sources") != digest:
        return None, f"the wheel ({where}) is of other sources than runtime_c/"
    if not path.is_file():
        return None, f"the wheel's {path.name} is missing"
    return path, f"{where}, zig {build.get('zig', '?')}"


# ---- 2. the library built from source --------------------------------------------------------


def compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def built_library_path() -> Path:
    """Where the library built from the current sources lives (whether or not it exists yet);
    OSError when the sources are missing."""
    digest = hashlib.sha256((sources_digest() + " ".join(CFLAGS)).encode()).hexdigest()[:16]
    return cache_dir() / f"libbrushbake-{digest}{_library_suffix()}"


def build_library() -> tuple[Path | None, str]:
    """(the library built from source, how) or (None, why not), compiling it when not cached."""
    try:
        target = built_library_path()
    except OSError:
        return None, f"its sources are not in {SOURCE_DIR}"
    if target.exists():
        return target, "cached"
    cc = compiler()
    if cc is None:
        return None, "no C compiler ($CC, cc, gcc, clang)"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".libbrushbake-", suffix=target.suffix, dir=target.parent)
        os.close(fd)
    except OSError as err:
        return None, f"cannot write to the cache folder {target.parent} ({err.strerror})"
    # a few seconds of silence otherwise, the first time only (the result is cached)
    print(f"brushbake: building the native library with {os.path.basename(cc)} (once; kept in {target.parent})",
          file=sys.stderr, flush=True)
    try:
        sources = [str(p) for p in source_files()]
        run = subprocess.run([cc, *CFLAGS, "-I", str(SOURCE_DIR), "-o", temp, *sources, "-lm"],
                             capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            first = (run.stderr.strip().splitlines() or ["no message"])[0]
            return None, f"{os.path.basename(cc)} failed ({first})"
        os.replace(temp, target)
    except (OSError, subprocess.SubprocessError) as err:
        return None, f"the C compiler could not run ({err})"
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    return target, f"by {os.path.basename(cc)}"


# ---- loading ---------------------------------------------------------------------------------


def _open(path: Path):
    try:
        return ctypes.CDLL(str(path)), None
    except OSError as err:
        return None, f"{path} cannot be loaded ({err})"


def _find(build: bool) -> tuple:
    """(CDLL or None, Report), trying the sources in order; `build` False stops before compiling
    (a cached build is still used)."""
    mode = _mode()
    if mode == "off":
        return None, Report("numpy", None, "switched off: $BRUSHBAKE_NATIVE=off")
    reasons = []
    if mode in ("auto", "shipped"):
        path, why = shipped_library()
        if path is not None:
            lib, failure = _open(path)
            if lib is not None:
                return lib, Report("shipped", path, why)
            why = failure
        reasons.append(why)
    if mode in ("auto", "source"):
        if build:
            path, why = build_library()
        else:
            try:
                path = built_library_path()
            except OSError:
                path = None
            if path is None or not path.exists():
                cc = compiler()
                why = f"{os.path.basename(cc)} builds it at the first use" if cc else "no C compiler ($CC, cc, gcc, clang)"
                return None, Report("numpy", None, "; ".join(reasons + [why]))
            why = "cached"
        if path is not None:
            lib, failure = _open(path)
            if lib is not None:
                return lib, Report("built", path, "; ".join(reasons + [why]) if reasons else why)
            why = failure
        reasons.append(why)
    return None, Report("numpy", None, "; ".join(reasons))


def load_library() -> ctypes.CDLL:
    """The native library (loaded once a process); BackendUnavailableError saying why not."""
    global _LOADED
    with _LOCK:
        if _LOADED is None or _LOADED[0] is None:
            _LOADED = _find(build=True)
        lib, report = _LOADED
    if lib is None:
        raise BackendUnavailableError(
            f"the C run-time is not available: {report.why}.",
            hint="Use --backend numpy (the default), install the brushbake_native wheel for this platform, or "
                 "install a C compiler (cc, gcc or clang) so brushbake can build runtime_c/.")
    return lib


#: bbk_compiler.h's BBKC_VERSION: the compiler's kernels this Python binds
COMPILER_KERNELS_VERSION = 16


def compiler_kernels(load=load_library) -> ctypes.CDLL:
    """The library, its compiler kernels' version checked against the bindings' (one check for
    every kernel's module); BackendUnavailableError where they cannot be had."""
    try:
        lib = load()
        lib.bbkc_version.restype = ctypes.c_int
        version = lib.bbkc_version()
    except (OSError, AttributeError) as err:
        raise BackendUnavailableError(f"the compiler's C kernels cannot be loaded ({err}).",
                                      hint="Use --backend numpy.") from None
    if version != COMPILER_KERNELS_VERSION:
        raise BackendUnavailableError("the compiler's C kernels are of another version.",
                                      hint="Use --backend numpy.")
    return lib


class KernelBinding:
    """A compiler kernel module's hold on the library: loaded and its functions declared on first
    use (declare(lib) sets restype and argtypes; an AttributeError there means an old library),
    then kept.  library() raises BackendUnavailableError where the kernels cannot be had."""

    def __init__(self, declare):
        self._declare = declare
        self._lock = threading.Lock()
        self._lib = None

    def library(self) -> ctypes.CDLL:
        with self._lock:
            if self._lib is None:
                lib = compiler_kernels()
                try:
                    self._declare(lib)
                except AttributeError as err:
                    raise BackendUnavailableError(f"the compiler's C kernels cannot be loaded ({err}).",
                                                  hint="Use --backend numpy.") from None
                self._lib = lib
            return self._lib

    def available(self) -> bool:
        try:
            self.library()
            return True
        except BackendUnavailableError:
            return False


def backend_report(build: bool = False) -> Report:
    """Which backend runs and why: what the last load found, else a look without compiling (the
    shipped or a cached library is loaded if that is what runs); `build` compiles where that is
    what it takes (the add-on's panel draws without: it must not wait for a compiler)."""
    loaded = _LOADED  # read without the lock: a compile on the bake's thread holds it for seconds
    if loaded is not None and (loaded[0] is not None or not build):
        return loaded[1]
    if build:
        try:
            load_library()
        except BackendUnavailableError:
            pass
        return _LOADED[1]
    lib, report = _find(build=False)
    if lib is not None:
        _remember(lib, report)
    return report


def _remember(lib, report: Report) -> None:
    global _LOADED
    if _LOCK.acquire(blocking=False):  # never wait behind a compile (the panel's draw calls this)
        try:
            if _LOADED is None or _LOADED[0] is None:
                _LOADED = (lib, report)
        finally:
            _LOCK.release()


def reset() -> None:
    """Forget what was loaded (tests: another environment; a loaded library stays in memory)."""
    global _LOADED
    with _LOCK:
        _LOADED = None
