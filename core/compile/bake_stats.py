"""The counts and seconds a bake leaves in level.stats, as typed records for the command line's table.

The stages write level.stats as plain dicts (cheap, and JSON as it is).  The table reads them only
through BakeStats.of, whose fields are the keys, named once: a key misspelt in the table is an
AttributeError at once, and a key a stage no longer writes is a KeyError naming it (a full bake in
tests/test_cli_messages.py reads every record), instead of a count printed as 0.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


def _read(cls, stats: dict, **computed):
    """cls from the keys of `stats` named like its fields: a field without a default must be
    there (KeyError otherwise); one with a default is optional (written by some bakes only)."""
    values = {}
    for f in fields(cls):
        if f.name in computed:
            values[f.name] = computed[f.name]
        elif f.default is None:
            values[f.name] = stats.get(f.name)
        else:
            values[f.name] = stats[f.name]
    return cls(**values)


@dataclass(frozen=True)
class TreeCounts:
    """compile_scene (core/compile/trees/build.py): brushes, CSG and the point tree."""

    brushes: int
    structural_brushes: int
    detail_brushes: int
    faces_before_csg: int
    faces_after_csg: int
    splits: int
    nodes: int
    structural_nodes: int
    leaves: int
    solid_leaves: int
    depth: int
    faces: int
    planes: int
    hulls: int


@dataclass(frozen=True)
class OnionCounts:
    """The onion tree over the box hulls' spaces (core/compile/trees/onion.py)."""

    space_faces: tuple  # faces per space: the point hull's, then each box hull's (keys space{h}_faces)
    onion_nodes: int
    onion_leaves: int
    map_tree_nodes: list | None = None  # with settings.onion_map_trees only
    separate_tree_nodes: int | None = None


@dataclass(frozen=True)
class CacheCounts:
    """What a bake with a BakeCache (core/compile/bake_cache.py) built and took from earlier
    bakes, each as (built, reused)."""

    regions: tuple
    pieces: tuple
    expanded: tuple
    bevels: tuple


@dataclass(frozen=True)
class BevelCounts:
    """The beveled tree (core/compile/trees/bevel.py)."""

    plain_nodes: int
    beveled_nodes: int
    edge_bevels: int
    vertex_bevels: int
    axial_bevels: int
    flat_top_bevels: int


@dataclass(frozen=True)
class LeakCounts:
    """Portals and the leak check (core/compile/vis/leaks.py; sliver_sites: pipeline's qbsp seal)."""

    clusters: int
    portals: int
    void_portals: int
    leaks: bool
    judged: int
    outside_clusters: int
    sliver_sites: int | None = None


@dataclass(frozen=True)
class FillCounts:
    """The outside fill (core/compile/vis/outside_fill.py): leaves made solid."""

    point_filled: int
    onion_filled: list | None = None  # per box hull, when the scene has hulls
    point_nodes: list | None = None  # the point tree's nodes before and after the prune
    onion_nodes: list | None = None  # the onion tree's nodes before and after the prune
    onion_leaking: list | None = None  # the hulls whose void reaches an entity


@dataclass(frozen=True)
class VisCounts:
    """The PVS (core/compile/vis/vis.py)."""

    mode: str
    clusters: int
    portals: int
    avg_clusters_visible: float
    avg_leaves_visible: float
    compressed_bytes: int
    vis_backend: str | None = None  # 'c' or 'numpy': what computed the PVS


@dataclass(frozen=True)
class PngCounts:
    """The lightmap PNGs' exposure (exporters/png.py; bake --png)."""

    exposure: float
    auto: bool
    clipped: float


@dataclass(frozen=True)
class SliceCounts:
    """The crowd slices (pipeline.slices_stage)."""

    slices_taken: int
    slices_kept: int
    slice_grid: str
    slice_bytes: int


@dataclass(frozen=True)
class BounceRound:
    """One round of light shooting: 0 the surface lights, then each bounce."""

    round: int
    shooters: int
    rays: int
    seconds: float


@dataclass(frozen=True)
class LightCounts:
    """The lightmaps (core/compile/light/lightmap.py)."""

    faces: int
    luxels: int
    patches: int
    pages: int
    page_size: int
    backend: str
    charts_seconds: float
    direct_rays: int
    direct_seconds: float
    bounce_rounds: tuple  # of BounceRound
    cancelled: bool
    bounces_done: int
    native: str | None = None  # which library traced the rays, and why


@dataclass(frozen=True)
class StageSeconds:
    """level.stats['times'] (and the command line's load and write): a stage that did not run
    took 0 s."""

    load: float = 0.0
    csg: float = 0.0
    tree: float = 0.0
    detail: float = 0.0
    arrays: float = 0.0
    expand_csg: float = 0.0
    map_trees: float = 0.0
    onion_tree: float = 0.0
    leaf_solidity: float = 0.0
    bevel: float = 0.0
    portals: float = 0.0
    leaks: float = 0.0
    seal: float = 0.0
    fill: float = 0.0
    vis: float = 0.0
    slices: float = 0.0
    light: float = 0.0
    write: float = 0.0

    @classmethod
    def of(cls, times: dict) -> "StageSeconds":
        names = {f.name for f in fields(cls)}
        unknown = set(times) - names
        if unknown:  # a stage timed under a name the table does not know
            raise KeyError(f"stage times not in StageSeconds: {', '.join(sorted(unknown))}")
        return cls(**times)

    def total(self) -> float:
        return sum(getattr(self, f.name) for f in fields(self))


@dataclass(frozen=True)
class BakeStats:
    """Everything the table shows: the tree always, each later stage when the bake ran it."""

    tree: TreeCounts
    onion: OnionCounts | None
    bevel: BevelCounts | None
    leaks: LeakCounts | None
    fill: FillCounts | None
    vis: VisCounts | None
    png: PngCounts | None
    slices: SliceCounts | None
    light: LightCounts | None
    cache: CacheCounts | None = None

    @classmethod
    def of(cls, stats: dict) -> "BakeStats":
        tree = _read(TreeCounts, stats)
        onion = None
        if tree.hulls:
            onion = _read(OnionCounts, stats, space_faces=tuple(stats[f"space{h}_faces"] for h in range(tree.hulls + 1)))
        return cls(tree=tree, onion=onion,
                   bevel=_read(BevelCounts, stats["bevel"]) if "bevel" in stats else None,
                   leaks=_read(LeakCounts, stats["leaks"]) if "leaks" in stats else None,
                   fill=_read(FillCounts, stats["fill"]) if "fill" in stats else None,
                   vis=_read(VisCounts, stats["vis"]) if "vis" in stats else None,
                   png=_read(PngCounts, stats["png"]) if "png" in stats else None,
                   slices=_read(SliceCounts, stats) if "slices_taken" in stats else None,
                   light=_light(stats["light"]) if "light" in stats else None,
                   cache=_read(CacheCounts, stats["cache"]) if "cache" in stats else None)


def _light(stats: dict) -> LightCounts:
    rounds = tuple(_read(BounceRound, r) for r in stats["bounce_rounds"])
    return _read(LightCounts, stats, bounce_rounds=rounds)
