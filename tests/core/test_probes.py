"""core/compile/trees/probes.py: a probe point lies inside its leaf.

The truth is the leaf's own cell, not point location: a leaf is the intersection of its
ancestors' half-spaces (the splitter on the way to a front child, its flip on the way to a back
one), so a point is in the leaf exactly when it is in front of every ancestor plane.  Checked
for every leaf of the structural tree of every sample scene and of random box scenes
(hypothesis), with the pipeline's tries (each face in turn, two steps) and the onion's (the
first face, three steps); every empty leaf must get a point (each holds a face facing into it).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onion_truth as ot
from brushbake.core.compile.trees.bsp import TreeBuilder, world_box
from brushbake.core.compile.trees.csg import FaceList, brush_plane_ids, union_faces
from brushbake.core.compile.trees.onion import _ancestors, _parents
from brushbake.core.compile.pipeline import splitter_settings
from brushbake.core.compile.trees.probes import builder_leaves, leaf_probes, probe_point
from brushbake.core.formats.loaders import load_scene
from brushbake.core.geometry import PlaneTable
from brushbake.core.model.brushes import Contents, box_brush
from brushbake.core.model.scene import Scene
from brushbake.core.tolerances import PROBE_STEPS

PIPELINE_TRIES = [(face_no, step) for face_no in range(64) for step in PROBE_STEPS[:2]]
ONION_TRIES = [(0, step) for step in PROBE_STEPS]


def structural_tree(scene: Scene) -> tuple[TreeBuilder, FaceList]:
    brushes = scene.brushes_with(Contents.SOLID)
    planes = PlaneTable()
    faces = FaceList()
    union_faces(brushes, brush_plane_ids(brushes, planes), planes, out=faces)
    builder = TreeBuilder(planes, faces, splitter_settings(scene))
    n = len(faces)
    builder.build(np.arange(n), np.ones(n, bool), np.ones(n, bool), world_box(scene.bounds))
    return builder, faces


def check_probes(builder: TreeBuilder, faces: FaceList, tries) -> list[str]:
    leaves = list(range(len(builder.leaves)))
    points, found = leaf_probes(builder, faces, leaves, tries,
                                lambda p, ks: builder_leaves(builder, p) == np.asarray(leaves)[ks])
    parent_of = _parents(builder)
    normals, dists = builder.planes.normals, builder.planes.dists
    problems = []
    for leaf in leaves:
        rec = builder.leaves[leaf]
        if not rec.solid and not found[leaf]:
            problems.append(f"empty leaf {leaf} ({len(rec.faces)} faces) got no probe")
        if found[leaf]:
            anc = _ancestors(builder, parent_of, leaf)
            side = normals[anc] @ points[leaf] - dists[anc]
            if len(anc) and side.min() < 0:
                problems.append(f"leaf {leaf}: probe {points[leaf].tolist()} behind an ancestor by {side.min()!r}")
    return problems


@pytest.mark.parametrize("path", ot.sample_paths(), ids=lambda p: p.name)
@pytest.mark.parametrize("tries", [PIPELINE_TRIES, ONION_TRIES], ids=["pipeline", "onion"])
def test_every_probe_lies_in_its_leaf_and_every_empty_leaf_gets_one(path, tries):
    builder, faces = structural_tree(load_scene(path))
    assert len(builder.leaves) > 1
    problems = check_probes(builder, faces, tries)
    assert not problems, "\n".join(problems[:20])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 2),
                          st.integers(1, 3), st.integers(1, 3), st.integers(1, 2)), min_size=1, max_size=6))
def test_probes_on_random_box_scenes(boxes):
    brushes = [box_brush((x * 0.5, y * 0.5, z * 0.5), ((x + w) * 0.5, (y + d) * 0.5, (z + h) * 0.5), f"b{i}")
               for i, (x, y, z, w, d, h) in enumerate(boxes)]
    builder, faces = structural_tree(Scene("random", brushes=brushes))
    for tries in (PIPELINE_TRIES, ONION_TRIES):
        problems = check_probes(builder, faces, tries)
        assert not problems, "\n".join(problems[:20])


def test_probe_point_of_a_faceless_leaf_and_of_a_missing_face():
    """A leaf with no face takes its parent's splitter face (toward the leaf's side); a face
    number past the leaf's faces, or any face of a faceless root, gives None."""
    builder, faces = structural_tree(Scene("box", brushes=[box_brush((0, 0, 0), (1, 1, 1), "box")]))
    faceless = [i for i, rec in enumerate(builder.leaves) if not rec.faces and rec.parent >= 0]
    assert faceless
    for leaf in faceless:
        rec = builder.leaves[leaf]
        p = probe_point(builder, faces, leaf, 1e-3)
        n, d = builder.planes.normals[builder.node_plane[rec.parent]], builder.planes.dists[builder.node_plane[rec.parent]]
        assert abs(abs(float(n @ p - d)) - 1e-3) < 1e-9
        assert (float(n @ p - d) > 0) == (rec.side == 0)
        assert probe_point(builder, faces, leaf, 1e-3, face_no=1) is None
    with_faces = next(i for i, rec in enumerate(builder.leaves) if rec.faces)
    assert probe_point(builder, faces, with_faces, 1e-3, face_no=len(builder.leaves[with_faces].faces)) is None
    empty = TreeBuilder(PlaneTable(), FaceList(), splitter_settings(Scene("empty")))
    empty.build(np.arange(0), np.zeros(0, bool), np.zeros(0, bool), world_box(None))
    assert probe_point(empty, FaceList(), 0, 1e-3) is None
    points, found = leaf_probes(empty, FaceList(), [0], itertools.islice(iter(PIPELINE_TRIES), 4),
                                lambda p, ks: np.ones(len(ks), bool))
    assert not found.any() and not points.any()
