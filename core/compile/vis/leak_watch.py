"""The leak check kept live while a level is edited: each check rebuilds only the regions an edit
touched.

A leak is a matter of the structural brushes alone (detail, clip and non-solid brushes do not
seal; core/compile/vis/leaks.py), so a check compiles the structural point tree (no hulls, no
bevels, no detail), builds its portals and floods from the void.  The tree is cut along the
region grid first (core/compile/trees/regions.py) and each grid cell's subtree is a pure function
of its RegionJob: its faces, the planes they lie on (index and value) and the splitter settings
(core/compile/trees/region_jobs.py).  LeakWatch compiles through a BakeCache
(core/compile/bake_cache.py), which keeps every cell's subtree under a digest of exactly that and
builds only the cells whose digest it has not seen (after an edit: the cells the edited brushes'
faces reach).  The union of faces is kept the same way, brush by brush: a brush's pieces depend
on its planes and its neighbours', so only brushes an edit moved, or moved next to, are cut
again.  The answer is the answer a check from scratch gives (the tests compare them on random
edits); only the time differs.

The seal is the exact one (settings.seal 'exact'): the qbsp rule's second compile
(core/compile/vis/sliver_seal.py) stays with Bake.
"""

from __future__ import annotations

import dataclasses
import time

from ...model.brushes import Contents
from ..bake_cache import BakeCache
from ..trees.build import compile_scene
from .leaks import check_scene


class LeakWatch:
    """Leak checks of one scene as it changes; check() after every edit."""

    #: a cell not used by this many checks in a row is forgotten (an edit undone finds its cells)
    KEEP_CHECKS = 4

    #: the grid the live check cuts its tree along (metres): finer than a bake's, so that an edit
    #: rebuilds less; a leak's verdict does not depend on it (the exact seal judges the brushes)
    REGION_SIZE = 32.0

    def __init__(self, region_size: float | None = None):
        self.region_size = self.REGION_SIZE if region_size is None else float(region_size)
        self.cache = BakeCache(keep=self.KEEP_CHECKS)
        self.seconds = 0.0

    def check(self, scene, extra_points=(), cancel=None):
        """The leak report of `scene` (core/compile/vis/leaks.py LeakReport) from its structural
        brushes, markers, lights and `extra_points`."""
        t0 = time.perf_counter()
        self.cache.start()
        structural = dataclasses.replace(
            scene, hulls=[], brushes=[b for b in scene.brushes if b.contents == Contents.SOLID],
            settings=dataclasses.replace(scene.settings, bevels=False, vis="none", slices=False, light=False,
                                         region_size=self.region_size))
        ok = False
        try:
            level = compile_scene(structural, cancel=cancel, cache=self.cache)
            _, report = check_scene(structural, level, extra_points, cancel=cancel)
            ok = True
        finally:
            self.cache.finish(ok)
        self.seconds = time.perf_counter() - t0
        return report

    @property
    def built(self) -> int:
        """Cells the last check built."""
        return self.cache.counts["regions"][0]

    @property
    def reused(self) -> int:
        """Cells the last check took from earlier ones."""
        return self.cache.counts["regions"][1]

    @property
    def csg_built(self) -> int:
        return self.cache.counts["pieces"][0]

    @property
    def csg_reused(self) -> int:
        return self.cache.counts["pieces"][1]
