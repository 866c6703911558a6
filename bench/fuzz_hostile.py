"""The long hostile-input campaign (issue 20): at least 100,000 seeded cases of tests/hostile_fuzz.py,
mixed by kind as hostile_fuzz.KINDS says, in one process.  Prints JSON: the counts per kind and
outcome, the slowest case, the peak memory (max RSS) and every crash (kind, seed, message), so any
case can be replayed with hostile_fuzz.run_case(kind, seed).

Each case is limited to LIMIT_S seconds of wall time by SIGALRM (a case past it is counted as
'timeout', which is a failure like 'crash'); the issue asks that none runs past 2 s and the
whole process stays under 1 GB.

    nice python bench/fuzz_hostile.py [--cases 100000] [--first-seed 0] > fuzz.json
"""

from __future__ import annotations

import argparse
import json
import resource
import signal
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import hostile_fuzz as hf  # noqa: E402

LIMIT_S = 2.0
HARD_LIMIT_S = 20  # SIGALRM: stop a runaway case and record it


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--first-seed", type=int, default=0)
    args = ap.parse_args()
    signal.signal(signal.SIGALRM, _alarm)
    hf.base_level()  # built once, outside the timings
    counts: Counter = Counter()
    details: Counter = Counter()
    failures, slow = [], []
    slowest = (0.0, "", -1)
    t_start = time.perf_counter()
    kinds = list(hf.KINDS)
    weights = [hf.KINDS[k] for k in kinds]
    cumulative = [sum(weights[: i + 1]) for i in range(len(weights))]
    for n in range(args.cases):
        seed = args.first_seed + n
        r = ((seed * 2654435761) % 2**32) / 2**32  # a fixed, even spread of the kinds over the seeds
        kind = next(k for k, c in zip(kinds, cumulative) if r < c * (1 - 1e-12)) if r < cumulative[-1] else kinds[-1]
        t0 = time.perf_counter()
        signal.alarm(HARD_LIMIT_S)
        try:
            outcome, detail = hf.run_case(kind, seed)
        except _Timeout:
            outcome, detail = "timeout", f"stopped after {HARD_LIMIT_S} s"
        finally:
            signal.alarm(0)
        seconds = time.perf_counter() - t0
        counts[(kind, outcome)] += 1
        details[(kind, outcome, detail if outcome != "crash" else "crash")] += 1
        if outcome in ("crash", "timeout"):
            failures.append({"kind": kind, "seed": seed, "outcome": outcome, "detail": detail})
        if seconds > LIMIT_S:
            slow.append({"kind": kind, "seed": seed, "seconds": round(seconds, 3)})
        if seconds > slowest[0]:
            slowest = (seconds, kind, seed)
        if (n + 1) % 10_000 == 0:
            print(f"{n + 1} cases, {time.perf_counter() - t_start:.0f} s, failures {len(failures)}, slow {len(slow)}",
                  file=sys.stderr, flush=True)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    report = {
        "cases": args.cases,
        "first_seed": args.first_seed,
        "seconds": round(time.perf_counter() - t_start, 1),
        "by_kind": {k: {o: counts[(k, o)] for o in ("result", "typed", "crash", "timeout") if counts[(k, o)]}
                    for k in kinds},
        "details": {f"{k}/{o}/{d}": c for (k, o, d), c in sorted(details.items())},
        "slowest_case": {"kind": slowest[1], "seed": slowest[2], "seconds": round(slowest[0], 3)},
        "cases_over_2s": slow,
        "failures": failures[:100],
        "failure_count": len(failures),
        "max_rss_mib": round(rss_kib / 1024, 1),
    }
    print(json.dumps(report, indent=1))
    return 0 if not failures and not slow and rss_kib < 1024 * 1024 else 1


if __name__ == "__main__":
    sys.exit(main())
