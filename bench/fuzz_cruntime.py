"""The C loader's long fuzz campaign (issue 16): at least 100,000 seeded cases of
tests/cruntime_fuzz.py (valid-CRC tree forgeries, section and PVS edits, header and table fields,
byte changes, truncations, random bytes), each judged by the Python reader (exporters/native.py)
and loaded by tests/c/bbk_driver.c built with AddressSanitizer and UBSan, which also runs every
query on the levels that load.  Prints JSON: cases per kind, accepted and rejected, the C error
codes seen, every disagreement (seed, C code, Python verdict) and any sanitizer report.

    nice python bench/fuzz_cruntime.py [--cases 100000] [--first-seed 0] [--chunk 5000] > fuzz.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import cruntime_fuzz as cf  # noqa: E402


def build(out: Path) -> None:
    gcc = shutil.which("gcc")
    if gcc is None:
        sys.exit("gcc is missing: the sanitized driver needs it")
    subprocess.run([gcc, "-std=c99", "-g", "-O1", "-ffp-contract=off", "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=all", "tests/c/bbk_driver.c", "runtime_c/brushbake.c", "-lm", "-o",
                    str(out)], cwd=ROOT, check=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--chunk", type=int, default=5000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bbk-fuzz-"))
    driver = work / "bbk_driver"
    build(driver)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1", UBSAN_OPTIONS="halt_on_error=1")
    kinds, codes, wrong, reports = Counter(), Counter(), [], []
    accepted = rejected = 0
    start = time.perf_counter()
    seeds = range(args.first_seed, args.first_seed + args.cases)
    for at in range(0, len(seeds), args.chunk):
        chunk = list(seeds[at: at + args.chunk])
        cases = [cf.make_case(seed) for seed in chunk]
        verdicts = [cf.python_accepts(data) for _, data in cases]
        cf.write_cases(work / "cases.bin", [data for _, data in cases])
        run = subprocess.run([str(driver), "fuzz", str(work / "cases.bin")], capture_output=True, text=True, env=env,
                             timeout=3600)
        if run.returncode != 0:
            reports.append({"first_seed": chunk[0], "stderr": run.stderr[-3000:]})
            continue
        got = [int(x) for x in run.stdout.split()]
        for seed, (kind, _), ok, code in zip(chunk, cases, verdicts, got):
            kinds[kind] += 1
            codes[code] += 1
            accepted += ok
            rejected += not ok
            if (code == 0) != ok:
                wrong.append({"seed": seed, "kind": kind, "c_code": code, "python_accepts": ok})
    shutil.rmtree(work, ignore_errors=True)
    json.dump({"benchmark": "fuzz_cruntime", "cases": args.cases, "first_seed": args.first_seed,
               "seconds": round(time.perf_counter() - start, 1), "kinds": dict(kinds), "python_accepted": accepted,
               "python_rejected": rejected, "c_codes": {str(k): v for k, v in sorted(codes.items())},
               "disagreements": wrong[:100], "disagreement_count": len(wrong), "sanitizer_reports": reports},
              sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
