"""Profile one compile with pyinstrument (a dev tool, not a benchmark: figures go in bench/compile.py).

    python bench/profile_compile.py NAME [--hulls stand,crouch] [--html out.html]

NAME is a scene name as in bench/compile.py (file stem).  Prints pyinstrument's call tree (wall
time: compare shares, not seconds, on a busy machine) on stdout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compile import scene_files  # noqa: E402

from brushbake.core.compile.pipeline import compile_scene  # noqa: E402
from brushbake.core.formats.loaders import load_scene  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name")
    ap.add_argument("--hulls", default=None, help="comma-separated hull presets replacing the scene's hulls")
    ap.add_argument("--html", default=None, help="also write pyinstrument's HTML report here")
    args = ap.parse_args(argv)
    from pyinstrument import Profiler

    scene = load_scene(scene_files()[args.name])
    if args.hulls is not None:
        from brushbake.core.model.hulls import preset

        scene.hulls = [preset(h) for h in args.hulls.split(",") if h and h != "none"]
    profiler = Profiler(interval=0.0005, async_mode="disabled")
    profiler.start()
    compile_scene(scene)
    profiler.stop()
    print(profiler.output_text(unicode=False, color=False, show_all=False, timeline=False))
    if args.html:
        Path(args.html).write_text(profiler.output_html(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
