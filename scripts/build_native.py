"""Build the native library (runtime_c/brushbake.c + runtime_c/compiler/*.c) for every platform
Blender runs on, from this one Linux machine with `zig cc` (the `ziglang` package on PyPI: no SDKs),
and package each as a py3-none-<platform> wheel of the `brushbake_native` package.

    python scripts/build_native.py [--platforms linux-x64,windows-x64,...] [--out DIR] [--libs-only]

Wheels go to DIR (default: wheels/ at the repository's root, where blender_manifest.toml lists
them); the libraries are cached in $BRUSHBAKE_NATIVE_BUILD_CACHE (default ~/.cache/brushbake/zig)
under a hash of the sources, the flags, the target and zig's version, so a second run with nothing
changed only writes the wheels.  A wheel holds brushbake_native/{__init__.py, build.json, the
library} and its dist-info; its bytes depend only on the sources, the flags and zig's version
(fixed zip dates, sorted entries).

zig cc's defaults are not a release build's: unoptimised C traps on undefined behaviour, so every
build is -O3 -fno-sanitize=undefined, stripped.  -ffp-contract=off (native_lib.CFLAGS) keeps the
answers the NumPy path's on every architecture (aarch64 would fuse multiply-adds).  Windows: the
functions are exported by BBK_API (-DBBK_BUILD_DLL), and the transcendental functions are the
C run-time DLL's (scripts/native/win_crt_math.c says why).  Linux: glibc 2.17 symbols at most
(manylinux_2_17); macOS 11.0 or newer (Blender's own minimum).
"""

from __future__ import annotations

import argparse
import base64
import concurrent.futures
import csv
import hashlib
import importlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIM = ROOT / "scripts" / "native" / "win_crt_math.c"

#: Blender's platform name: (zig's target, the wheel's platform tag, the library's file name)
TARGETS = {
    "linux-x64": ("x86_64-linux-gnu.2.17", "manylinux_2_17_x86_64", "libbrushbake.so"),
    "linux-arm64": ("aarch64-linux-gnu.2.17", "manylinux_2_17_aarch64", "libbrushbake.so"),
    "windows-x64": ("x86_64-windows-gnu", "win_amd64", "brushbake.dll"),
    "windows-arm64": ("aarch64-windows-gnu", "win_arm64", "brushbake.dll"),
    "macos-x64": ("x86_64-macos.11.0", "macosx_11_0_x86_64", "libbrushbake.dylib"),
    "macos-arm64": ("aarch64-macos.11.0", "macosx_11_0_arm64", "libbrushbake.dylib"),
}
#: what every zig build adds to native_lib.CFLAGS: optimised without UBSan traps, no debug data
ZIG_FLAGS = ("-fno-sanitize=undefined", "-g0", "-s")
#: Windows: the UCRT's transcendental functions (win_crt_math.c)
CRT_FUNCTIONS = ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "exp", "log", "log10", "pow")
PACKAGE = "brushbake_native"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def repository():
    """brushbake as this checkout holds it (whatever else is installed), for native_lib and the version."""
    if "brushbake" not in sys.modules:
        spec = importlib.util.spec_from_file_location("brushbake", ROOT / "__init__.py",
                                                      submodule_search_locations=[str(ROOT)])
        module = importlib.util.module_from_spec(spec)
        sys.modules["brushbake"] = module
        spec.loader.exec_module(module)
    native_lib = importlib.import_module("brushbake.core.native_lib")
    version = importlib.import_module("brushbake.core.version").__version__
    return native_lib, version


def zig() -> list[str]:
    """The zig command: the ziglang package's (pip install ziglang), else a zig on the PATH."""
    if importlib.util.find_spec("ziglang") is not None:
        return [sys.executable, "-m", "ziglang"]
    return ["zig"]


def zig_version() -> str:
    try:
        run = subprocess.run([*zig(), "version"], capture_output=True, text=True, timeout=60)
    except OSError:
        run = None
    if run is None or run.returncode != 0:
        sys.exit("build_native: zig is not installed (pip install ziglang)")
    return run.stdout.strip()


def build_command(platform: str, output: Path) -> list[str]:
    """The zig cc command that builds `platform`'s library into `output`."""
    native_lib, _ = repository()
    target = TARGETS[platform][0]
    flags = [*native_lib.CFLAGS, *ZIG_FLAGS]
    sources = [str(p) for p in native_lib.source_files()]
    if "windows" in target:
        flags = [f for f in flags if f != "-fPIC"]
        flags += [f"-D{name}=bbk_crt_{name}" for name in CRT_FUNCTIONS]
        sources.append(str(SHIM))
    if "macos" in target:  # not the build folder's path as its install name: the same bytes from any folder
        flags.append(f"-Wl,-install_name,@rpath/{TARGETS[platform][2]}")
    return [*zig(), "cc", "-target", target, *flags, "-I", str(native_lib.SOURCE_DIR), "-o", str(output), *sources]


def build_key(platform: str, zig_ver: str) -> str:
    native_lib, _ = repository()
    cmd = build_command(platform, Path("OUT"))
    cmd = [c for c in cmd[cmd.index("cc"):] if not c.startswith(str(ROOT))]  # flags, not paths
    text = json.dumps([native_lib.sources_digest(), SHIM.read_text(), zig_ver, cmd])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def cache_root() -> Path:
    if os.environ.get("BRUSHBAKE_NATIVE_BUILD_CACHE"):
        return Path(os.environ["BRUSHBAKE_NATIVE_BUILD_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "brushbake" / "zig"


def build_library(platform: str, zig_ver: str) -> tuple[Path, bool]:
    """(the library for `platform`, whether it was compiled now rather than found in the cache)."""
    folder = cache_root() / f"{platform}-{build_key(platform, zig_ver)}"
    library = folder / TARGETS[platform][2]
    if library.is_file():
        return library, False
    folder.mkdir(parents=True, exist_ok=True)
    temp = folder / f".tmp-{os.getpid()}"
    temp.mkdir(exist_ok=True)
    run = subprocess.run(build_command(platform, temp / library.name), capture_output=True, text=True,
                         timeout=900, cwd=temp)
    if run.returncode != 0:
        sys.exit(f"build_native: zig cc failed for {platform}:\n{run.stderr}")
    os.replace(temp / library.name, library)
    for leftover in temp.iterdir():  # an import library or a .pdb, which nothing needs
        leftover.unlink()
    temp.rmdir()
    return library, True


def wheel_name(platform: str, version: str) -> str:
    return f"{PACKAGE}-{version}-py3-none-{TARGETS[platform][1]}.whl"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


INIT = '''"""brushbake's native library for {platform}, built ahead of time (brushbake: core/native_lib.py
finds it through build.json, which says what it was built from).  Nothing to import here."""

from pathlib import Path

LIBRARY = Path(__file__).with_name({library!r})
'''


def write_wheel(platform: str, library: Path, out_dir: Path, zig_ver: str) -> Path:
    """The py3-none-<platform> wheel holding `library` (a plain shared library: no CPython ABI)."""
    native_lib, version = repository()
    target, tag, name = TARGETS[platform]
    info = f"{PACKAGE}-{version}.dist-info"
    build = {"library": name, "platform": platform, "target": target, "version": version, "zig": zig_ver,
             "sources": native_lib.sources_digest(),
             "flags": [*native_lib.CFLAGS, *ZIG_FLAGS]}
    files = {
        f"{PACKAGE}/__init__.py": (INIT.format(platform=platform, library=name).encode(), 0o644),
        f"{PACKAGE}/build.json": ((json.dumps(build, indent=1, sort_keys=True) + "\n").encode(), 0o644),
        f"{PACKAGE}/{name}": (library.read_bytes(), 0o755),
        f"{info}/METADATA": ((f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: {version}\n"
                              f"Summary: brushbake's native library (runtime_c/) built for {platform}\n"
                              "License: GPL-3.0-or-later\n").encode(), 0o644),
        f"{info}/WHEEL": ((f"Wheel-Version: 1.0\nGenerator: brushbake scripts/build_native.py\n"
                           f"Root-Is-Purelib: false\nTag: py3-none-{tag}\n").encode(), 0o644),
        f"{info}/LICENSE": ((ROOT / "LICENSE").read_bytes(), 0o644),
    }
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for path, (data, _) in sorted(files.items()):
        writer.writerow([path, _record_hash(data), len(data)])
    writer.writerow([f"{info}/RECORD", "", ""])
    files[f"{info}/RECORD"] = (record.getvalue().encode(), 0o644)
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / wheel_name(platform, version)
    temp = wheel.with_name("." + wheel.name)
    with zipfile.ZipFile(temp, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        # the package first, the dist-info last with RECORD at its end (as wheel tools write them)
        for path in sorted(files, key=lambda p: (p.startswith(info), p.endswith("/RECORD"), p)):
            data, mode = files[path]
            entry = zipfile.ZipInfo(path, ZIP_DATE)
            entry.external_attr = (0o100000 | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, data)
    os.replace(temp, wheel)
    return wheel


def build(platforms, out_dir: Path | None, jobs: int = 2, log=print) -> dict:
    """{platform: (library, wheel or None)}: every platform's library (cached, two zig processes at a
    time), and its wheel in out_dir unless out_dir is None."""
    zig_ver = zig_version()
    result = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        jobs_by_platform = {p: pool.submit(build_library, p, zig_ver) for p in platforms}
        for platform, job in jobs_by_platform.items():
            library, fresh = job.result()
            wheel = write_wheel(platform, library, out_dir, zig_ver) if out_dir is not None else None
            log(f"build_native: {platform}: {'built' if fresh else 'cached'} {library}"
                + (f" -> {wheel.name}" if wheel else ""))
            result[platform] = (library, wheel)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--platforms", default=",".join(TARGETS),
                        help=f"comma-separated, of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "wheels", help="where the wheels go (default: wheels/)")
    parser.add_argument("--libs-only", action="store_true", help="build the libraries, write no wheels")
    parser.add_argument("--jobs", type=int, default=2, help="zig processes at a time (default 2)")
    args = parser.parse_args(argv)
    platforms = [p.strip() for p in args.platforms.split(",") if p.strip()]
    unknown = [p for p in platforms if p not in TARGETS]
    if unknown:
        parser.error(f"unknown platform {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    build(platforms, None if args.libs_only else args.out, args.jobs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
