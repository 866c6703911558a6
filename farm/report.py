"""The farm's summary table (stdout) and its JSON report: for each level its status, the worker
that baked it, its seconds and its stages' seconds."""

from __future__ import annotations

import json

STAGE_ORDER = ("load", "csg", "tree", "detail", "arrays", "expand_csg", "onion_tree", "leaf_solidity", "bevel",
               "portals", "leaks", "seal", "vis", "slices", "light", "bytes", "write")


def farm_table(levels, wall: float, workers: dict) -> str:
    rows = [("level", "status", "worker", "seconds", "wrote")]
    for lv in levels:
        rows.append((lv.scene.name, lv.status, lv.worker or "-", f"{lv.seconds:.2f}" if lv.worker else "-",
                     ", ".join(p.name for p in lv.wrote) or "-"))
    busy = sum(lv.seconds for lv in levels)
    rows.append(("total", f"{len(levels)} levels", f"{len(workers)} workers", f"{wall:.2f}",
                 f"{busy / wall:.2f}x busy" if wall > 0 else ""))
    widths = [max(len(r[k]) for r in rows) for k in range(5)]
    line = "-" * (sum(widths) + 3 * 4)
    out = [line]
    for i, row in enumerate(rows):
        if i == len(rows) - 1:
            out.append(line)
        out.append("   ".join(f"{c:<{w}}" if k in (0, 1, 2, 4) else f"{c:>{w}}" for k, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            out.append(line)
    out.append(line)
    return "\n".join(out)


def farm_report(levels, wall: float, workers: dict, scheduler: str, version: str, opts: dict) -> str:
    """The JSON report: the farm (scheduler, workers, version, flags), then each level in the
    order given, its stages in the order they run."""
    doc = {
        "brushbake": version,
        "scheduler": scheduler,
        "workers": workers,
        "flags": {k: v for k, v in opts.items() if v not in (None, False)},
        "wall_seconds": round(wall, 3),
        "busy_seconds": round(sum(lv.seconds for lv in levels), 3),
        "counts": {s: sum(lv.status == s for lv in levels) for s in ("ok", "leak", "error", "cancelled")},
        "levels": [],
    }
    for lv in levels:
        rec = lv.record()
        stages = rec["stages"]
        rec["stages"] = {k: stages[k] for k in sorted(stages, key=lambda k: (STAGE_ORDER.index(k)
                                                                            if k in STAGE_ORDER else len(STAGE_ORDER), k))}
        doc["levels"].append(rec)
    return json.dumps(doc, indent=1) + "\n"
