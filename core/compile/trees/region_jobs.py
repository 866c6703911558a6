"""Region subtrees built apart and grafted back: the unit of work a farm spreads.

Under a region grid (core/compile/trees/regions.py) the builder cuts along the grid's lines
first; every node the grid no longer cuts is a region root whose subtree depends on its own
faces alone.  Given a runner, the builder grows the grid's cuts, hands each region root over as
a RegionJob (its faces, the flags saying which may still split and which make a leaf empty, its
box), and grafts the RegionTree that comes back where the root was.  A RegionTree is what a
TreeBuilder builds from the job alone, in its own numbering (faces 0.. are the job's, higher ones
pieces split off them), so the grafted tree is the tree one build makes: the same splitters, the
same leaves, the same faces in each leaf (a face's number is never part of the answer).

The records (RegionJob, RegionTree) live in regions.py, which the builder imports; this module
imports the builder.  `build_regions` is the runner's work; `run_here` runs it in this process (the reference the farm
is checked against), a farm's workers run it on theirs (farm/level.py).
"""

from __future__ import annotations

import numpy as np

from .bsp import TreeBuilder
from .csg import FaceList
from .regions import RegionJob, RegionTree


def build_regions(planes, settings, jobs: list[RegionJob]) -> list[RegionTree]:
    """The subtree of each job, in order, each built from the job's faces alone, all grown
    together by one builder (every level of every cell at once, as the whole tree grows; cell by
    cell costs twice as much).  A tree lists the faces split off that its leaves and nodes keep,
    in the order they first appear."""
    if not jobs:
        return []
    faces = FaceList()
    offsets = []
    for job in jobs:
        offsets.append(len(faces))
        ends = np.cumsum(job.counts).tolist()
        for k, (a, z) in enumerate(zip([0] + ends[:-1], ends)):
            faces.add(job.verts[a:z], int(job.planes[k]), int(job.brushes[k]), int(job.flags[k]))
    inputs = len(faces)
    builder = TreeBuilder(planes, faces, settings)
    roots = [(np.arange(off, off + len(job.counts)), job.cand, job.cnt, job.box, -1, 0) for off, job in zip(offsets, jobs)]
    splits_before, scored_before = builder.stats.splits, builder.stats.scored
    built = builder.build_many(roots)
    starts = [code if code >= 0 else None for code, _, _ in built]
    node_ends, following = [], len(builder.node_plane)
    for start in reversed(starts):
        node_ends.append(following)
        following = start if start is not None else following
    node_ends.reverse()
    node_plane = np.array(builder.node_plane, dtype=np.int64)
    node_face = np.array(builder.node_face, dtype=np.int64)
    children = np.array(builder.node_children, dtype=np.int64).reshape(-1, 2)
    out = []
    for k, ((code, first, end), off, job) in enumerate(zip(built, offsets, jobs)):
        n_in = len(job.counts)
        a = code if code >= 0 else node_ends[k]
        z = node_ends[k]
        leaves = builder.leaves[first:end]
        new_ids: dict[int, int] = {}

        def local_face(g: int) -> int:
            if g < inputs:
                return g - off
            return n_in + new_ids.setdefault(g, len(new_ids))

        leaf_faces = [local_face(f) for rec in leaves for f in rec.faces]
        faces_of_nodes = [local_face(int(f)) if f >= 0 else -1 for f in node_face[a:z].tolist()]
        kids = children[a:z]
        kids = np.where(kids >= 0, kids - a, -1 - ((-1 - kids) - first))
        new = list(new_ids)
        out.append(RegionTree(
            node_plane=node_plane[a:z].copy(), node_face=np.array(faces_of_nodes, dtype=np.int64),
            node_children=kids.astype(np.int64).reshape(-1, 2),
            leaf_faces=np.array(leaf_faces, dtype=np.int64),
            leaf_face_counts=np.array([len(rec.faces) for rec in leaves], dtype=np.int64),
            leaf_solid=np.array([rec.solid for rec in leaves], dtype=bool),
            leaf_bounds=np.array([rec.bounds for rec in leaves], dtype=np.float64).reshape(-1, 2, 3),
            leaf_parent=np.array([rec.parent - a if rec.parent >= 0 else -1 for rec in leaves], dtype=np.int64),
            leaf_side=np.array([rec.side for rec in leaves], dtype=np.int64),
            new_verts=np.concatenate([faces.verts[g] for g in new]) if new else np.zeros((0, 3)),
            new_counts=np.array([len(faces.verts[g]) for g in new], dtype=np.int64),
            new_planes=np.array([faces.plane[g] for g in new], dtype=np.int64),
            new_brushes=np.array([faces.brush[g] for g in new], dtype=np.int64),
            new_flags=np.array([faces.flags[g] for g in new], dtype=np.int64),
            splits=0, scored=0))
    if out:  # the counts of all cells, carried by the first (the graft sums them)
        out[0].splits = builder.stats.splits - splits_before
        out[0].scored = builder.stats.scored - scored_before
    return out


def run_here(planes, settings, jobs: list[RegionJob], cancel=None) -> list[RegionTree]:
    """The runner that builds every region in this process."""
    from ...errors import check_cancel

    check_cancel(cancel)
    return build_regions(planes, settings, jobs)


class LocalRegions:
    """The regions' subtrees on this machine's cores: a runner provider for compile_scene (as a
    farm is), running runs of cells of about equal face counts in forked worker processes
    (core/compile/vis/wave_jobs.py WaveRunner; threads where forking is not safe, which gain
    little here: the builder is NumPy on small arrays).  The same trees as one build."""

    #: fewer cells than this per worker, or fewer faces than this in all: building them here costs
    #: less than forking and sending the trees back (e3m4's point tree, 20,000 faces: 0.46 s here,
    #: 0.95 s through two workers; its onion tree, 72,000 faces in a few 64 m cells: 6.4 -> 5.5 s)
    MIN_CELLS_PER_JOB = 2
    MIN_FACES = 50_000
    #: fewer brushes than this: no runner at all, the trees grown in this process without handing
    #: their regions out (packing a region's faces into a job and grafting its subtree back cost
    #: more than two workers gain, since the builder does a level at once and the CSG and portals
    #: went to C: on 2 cores, the onion tree of e3m4 1.15 s without a runner against 1.37 s with
    #: two workers, the tiled 10,000-brush world's 2.33 against 2.59 s, the tiled 20,000's 5.48
    #: against 5.94 s; with a runner and no worker it is slower still)
    MIN_BRUSHES = 50_000

    def __init__(self, jobs: int, brushes: int | None = None):
        self.jobs = max(1, int(jobs))
        self.trees = brushes is None or brushes >= self.MIN_BRUSHES  # None: always (the tests' forks)
        self.union = LocalUnion(self.jobs)  # the onion's unions of faces on the same cores

    def region_runner(self, cancel=None):
        if not self.trees:
            return None

        def run(planes, settings, jobs):
            from ..vis.wave_jobs import WaveRunner, can_fork

            n = min(self.jobs, len(jobs) // self.MIN_CELLS_PER_JOB)
            if n < 2 or not can_fork() or sum(len(job.counts) for job in jobs) < self.MIN_FACES:
                return run_here(planes, settings, jobs, cancel)
            parts = split_runs(jobs, n)
            with WaveRunner(lambda part: build_regions(planes, settings, part), n, cancel) as runner:
                return [tree for part in runner.map(parts) for tree in part]

        return run


def split_runs(jobs: list, parts: int) -> list[list]:
    """`jobs` cut into at most `parts` runs, in order, of about equal face counts."""
    weight = np.cumsum([len(job.counts) for job in jobs])
    cuts = [0] + [int(np.searchsorted(weight, weight[-1] * k / parts, side="right")) for k in range(1, parts)]
    cuts = sorted(set(cuts + [len(jobs)]))
    return [jobs[a:z] for a, z in zip(cuts[:-1], cuts[1:]) if z > a]


class LocalUnion:
    """csg.union_faces on this machine's cores: the brushes whose faces are emitted cut into runs
    of about equal face counts, each run's faces computed by a forked worker (union_faces(only=
    run): a face's pieces depend on the face and the brushes that cut it, never on the others
    computed with it) and appended in brush order: the same faces in the same order.  Worth it
    for big unions only."""

    #: fewer faces than this to emit: computing them here costs less than forking.  Since the
    #: faces are cut in C (trees/csg_cut_c.py) a union is fast: with two workers on 2 cores e3m4's
    #: spaces (23,000-26,000 faces each) and the tiled 10,000-brush world's (33,000-55,000) took
    #: longer than here, the tiled 20,000's (111,000 faces) 0.3 s less (of 8.2 s for its hulls'
    #: expansion and unions)
    MIN_FACES = 100_000

    def __init__(self, jobs: int):
        self.jobs = max(1, int(jobs))

    def __call__(self, brushes, plane_ids, planes, subtract_from=0, flags=0, out=None, cancel=None):
        from ..vis.wave_jobs import WaveRunner, can_fork
        from .csg import union_faces

        out = out if out is not None else FaceList()
        counts = np.array([len(b.faces) for b in brushes[subtract_from:]], dtype=np.int64)
        if self.jobs < 2 or not can_fork() or int(counts.sum()) < self.MIN_FACES:
            return union_faces(brushes, plane_ids, planes, subtract_from, flags, out, cancel)
        weight = np.cumsum(counts)
        cuts = [0] + [int(np.searchsorted(weight, weight[-1] * k / self.jobs, side="right"))
                      for k in range(1, self.jobs)] + [len(counts)]
        runs = [np.arange(subtract_from + a, subtract_from + z) for a, z in zip(cuts[:-1], cuts[1:]) if z > a]

        def part(run):
            got = union_faces(brushes, plane_ids, planes, subtract_from, flags, FaceList(), only=run)
            return got.verts, got.plane, got.brush

        with WaveRunner(part, len(runs), cancel) as runner:
            for verts, plane, brush in runner.map(runs):
                for v, p, b in zip(verts, plane, brush):
                    out.add(v, p, b, flags)
        return out
