"""`brushbake farm SCENES... -o OUTDIR [--scheduler tcp://HOST:PORT | --workers N]` (cli.cmd_farm).

Checked before any work: the scenes and the output folder (levels.plan_levels), then the cluster
(cluster.open_farm: the scheduler answers, a worker is there, every worker runs this brushbake).
Then the levels are baked, each written as it finishes, and the table and the JSON report
(OUTDIR/farm.json) say what each became, where and in how long.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..bakejob import (EXIT_LEAK, EXIT_OK, EXIT_USER_ERROR, bake_options, check_outputs, option_hulls, parse_point,
                   write_outputs)
from ..core.errors import BrushbakeError
from .cluster import open_farm
from .levels import plan_levels, run_levels
from .report import farm_report, farm_table
from .tasks import local_version


def run_farm(args) -> int:
    outdir = Path(args.output)
    levels = plan_levels(args.scenes, outdir)
    report_path = Path(args.report) if args.report else outdir / "farm.json"
    check_outputs([("--report", report_path)], Path(args.scenes[0]), default_name="farm.json")
    if report_path.resolve() in {lv.bbk.resolve() for lv in levels} | {lv.pts.resolve() for lv in levels}:
        raise BrushbakeError("is also a level's output.", subject=str(report_path), hint="Name another report file.")
    opts = bake_options(args)
    option_hulls(opts)  # the flags' own errors (a hull named twice) show before the cluster starts
    for text in opts["point"] or []:
        parse_point(text)
    say = None if args.quiet else (lambda text: print(text, file=sys.stderr, flush=True))
    workers = args.workers or (None if args.scheduler else local_cores())
    with open_farm(args.scheduler, workers) as farm:
        found = farm.workers()
        if say is not None:
            say(f"farm: {len(levels)} levels on {len(found)} workers ({farm.address}), brushbake {local_version()}")
        wall = run_levels(farm, levels, opts, say)
        found = farm.workers()
    for lv in levels:
        for warning in lv.warnings:
            print(f"warning: {lv.scene}: {warning}", file=sys.stderr)
        if lv.status in ("leak", "error"):
            named = lv.scene.name in lv.message
            print(f"error: {'' if named else f'{lv.scene}: '}{lv.message}", file=sys.stderr)
    write_outputs([(report_path, farm_report(levels, wall, found, args.scheduler or "local", local_version(),
                                             opts).encode("utf-8"))])
    if not args.quiet:
        print(farm_table(levels, wall, found))
    print(f"wrote {sum(bool(lv.wrote) for lv in levels)} of {len(levels)} levels into {outdir} and the report "
          f"{report_path}")
    if any(lv.status == "error" for lv in levels):
        return EXIT_USER_ERROR
    return EXIT_LEAK if any(lv.status == "leak" for lv in levels) else EXIT_OK


def local_cores() -> int:
    """One worker per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)
