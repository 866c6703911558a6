"""Re-bakes through a BakeCache (core/compile/bake_cache.py): after any edit, the level is the level
a bake from scratch makes, byte for byte, and what the edit did not reach is taken, not built.

Truth is the bake from scratch (bake_scene without a cache), whose answers the rest of the suite
holds against exact geometry.  The edits are random (move, copy, delete, change contents), one
after another on a map and a sample scene, with the cache written to a file and read back between
bakes as `bake --update` does.
"""

from __future__ import annotations

import dataclasses
import io
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from brushbake.core.compile import bake_cache
from brushbake.core.compile.bake_cache import BakeCache, cache_path
from brushbake.core.compile.pipeline import bake_scene
from brushbake.core.formats.loaders import load_scene
from brushbake.core.model.brushes import Contents, brush_from_planes
from brushbake.core.model.hulls import quake_map_hulls
from brushbake.exporters.native import level_to_bytes


def moved(brush, offset, name=None, contents=None):
    offset = np.asarray(offset, float)
    return brush_from_planes(brush.normals, brush.dists + brush.normals @ offset, name or brush.name,
                             contents if contents is not None else brush.contents, entity=brush.entity)


def edited(scene, kind: str, index: int, offset) -> object:
    """The scene with one edit: brush `index` moved, copied (moved), deleted or given other contents."""
    brushes = list(scene.brushes)
    i = index % len(brushes)
    b = brushes[i]
    if kind == "move":
        brushes[i] = moved(b, offset)
    elif kind == "copy":
        brushes.append(moved(b, offset, name=b.name + ".copy"))
    elif kind == "delete" and len(brushes) > 1:
        del brushes[i]
    elif kind == "contents":
        other = {Contents.SOLID: Contents.DETAIL, Contents.DETAIL: Contents.CLIP}.get(b.contents, Contents.SOLID)
        brushes[i] = moved(b, (0, 0, 0), contents=other)
    return dataclasses.replace(scene, brushes=brushes)


def through_file(cache: BakeCache, tmp_path) -> BakeCache:
    path = tmp_path / "level.bbk.cache"
    path.write_bytes(cache.to_bytes())
    back = BakeCache.from_file(path)
    assert back is not None and len(back) == len(cache)
    return back


@pytest.fixture(scope="module")
def qbspfeatures(map_named):
    scene = load_scene(map_named("qbspfeatures.map"))
    scene.hulls = quake_map_hulls(scene.settings.map_scale)
    # leaks are allowed: an edit may open the map, and the bake goes on
    return dataclasses.replace(scene, settings=dataclasses.replace(scene.settings, allow_leak=True, region_size=4.0))


@pytest.fixture(scope="module")
def garage(sample_paths):
    scene = load_scene(next(p for p in sample_paths if p.name == "garage.json"))
    return dataclasses.replace(scene, settings=dataclasses.replace(scene.settings, allow_leak=True, region_size=4.0))


EDITS = st.lists(st.tuples(st.sampled_from(["move", "copy", "delete", "contents"]), st.integers(0, 10_000),
                           st.tuples(*[st.sampled_from([-1.0, -0.25, 0.0, 0.125, 0.5, 2.0])] * 3)),
                 min_size=1, max_size=3)


@pytest.mark.parametrize("which", ["qbspfeatures", "garage"])
@settings(max_examples=6, deadline=None, phases=[Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=EDITS)
def test_every_rebake_is_the_bake_from_scratch(which, edits, request, tmp_path):
    scene = request.getfixturevalue(which)
    cache = BakeCache()
    bake_scene(scene, cache=cache, jobs=1)
    for kind, index, offset in edits:
        scene = edited(scene, kind, index, offset)
        cache = through_file(cache, tmp_path)
        got = bake_scene(scene, cache=cache, jobs=1)
        assert level_to_bytes(got) == level_to_bytes(bake_scene(scene, jobs=1)), (kind, index, offset)


def test_one_moved_brush_rebuilds_little(qbspfeatures, tmp_path):
    """The regions, pieces and hull brushes the move did not reach are taken; a bake of the same
    scene again builds nothing."""
    cache = BakeCache()
    first = bake_scene(qbspfeatures, cache=cache, jobs=1).stats["cache"]
    assert first["expanded"][1] == 0 and first["regions"][0] > 10
    cache = through_file(cache, tmp_path)
    again = bake_scene(qbspfeatures, cache=cache, jobs=1).stats["cache"]
    assert all(built == 0 for built, _ in again.values()), again
    brushes = qbspfeatures.brushes
    steps = [np.eye(3)[a] * s for a in range(3) for s in (0.25, -0.25)]
    for i, step in ((i, step) for i, b in enumerate(brushes) if i >= 5 and b.contents == Contents.SOLID
                    for step in steps):
        scene = dataclasses.replace(qbspfeatures, brushes=list(brushes[:i]) + [moved(brushes[i], step)]
                                    + list(brushes[i + 1:]))
        if not bake_scene(scene, jobs=1).stats["leak_report"].leaks:
            break  # a move that keeps the map sealed (a leak leaves the void unfilled: every void cell changes)
    else:
        pytest.fail("every move opened the map")
    got = bake_scene(scene, cache=cache, jobs=1)
    built, reused = got.stats["cache"]["regions"]
    assert reused > 3 * built > 0
    assert got.stats["cache"]["expanded"][0] == len(quake_map_hulls(1.0))  # the moved brush, for each hull
    built, reused = got.stats["cache"]["bevels"]
    assert reused > 3 * built > 0, (built, reused)  # the solid cells it left and entered, no others
    assert level_to_bytes(got) == level_to_bytes(bake_scene(scene, jobs=1))


def test_the_cache_forgets_what_the_last_bakes_did_not_use(qbspfeatures):
    cache = BakeCache(keep=1)
    bake_scene(qbspfeatures, cache=cache, jobs=1)
    full = len(cache)
    smaller = dataclasses.replace(qbspfeatures, brushes=qbspfeatures.brushes[: len(qbspfeatures.brushes) // 2])
    bake_scene(smaller, cache=cache, jobs=1)
    assert 0 < len(cache) < full
    keeping = BakeCache(keep=2)
    bake_scene(qbspfeatures, cache=keeping, jobs=1)
    bake_scene(smaller, cache=keeping, jobs=1)
    assert len(keeping) > full  # the first bake's work is kept one bake longer (the smaller one's pieces differ)


def test_a_cache_it_cannot_use_is_none(tmp_path, qbspfeatures, monkeypatch):
    assert BakeCache.from_file(tmp_path / "missing.cache") is None
    junk = tmp_path / "junk.cache"
    junk.write_bytes(b"not a cache")
    assert BakeCache.from_file(junk) is None
    cache = BakeCache()
    bake_scene(qbspfeatures, cache=cache, jobs=1)
    good = tmp_path / "good.cache"
    data = cache.to_bytes()
    good.write_bytes(data)
    assert BakeCache.from_file(good) is not None
    (tmp_path / "cut.cache").write_bytes(data[: len(data) // 2])
    assert BakeCache.from_file(tmp_path / "cut.cache") is None
    monkeypatch.setattr(bake_cache, "_CODE_DIGEST", [b"\0" * 20])  # as if other code had made it
    assert BakeCache.from_file(good) is None


def run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "brushbake", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)


def test_bake_update_on_the_command_line(tmp_path, map_named):
    """`bake --update OLD.bbk`: the first time a full bake with a note, then the same bytes as a
    plain bake, taking everything; a folder or a broken cache are said, never a traceback."""
    src = map_named("qbspfeatures.map")
    first = run("bake", src, "-o", "a.bbk", "--update", "a.bbk", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "note: " in first.stderr and "full bake" in first.stderr
    assert cache_path(tmp_path / "a.bbk").is_file()
    second = run("bake", src, "-o", "b.bbk", "--update", "a.bbk", cwd=tmp_path)
    assert second.returncode == 0 and "note:" not in second.stderr, second.stderr
    row = next(line for line in second.stdout.splitlines() if line.startswith("update: regions"))
    assert row.split()[-7:] == ["0", "/", "0", "/", "0", "/", "0"], row
    plain = run("bake", src, "-o", "c.bbk", "-q", cwd=tmp_path)
    assert plain.returncode == 0 and not cache_path(tmp_path / "c.bbk").exists()
    data = (tmp_path / "c.bbk").read_bytes()
    assert (tmp_path / "a.bbk").read_bytes() == data == (tmp_path / "b.bbk").read_bytes()
    cache_path(tmp_path / "b.bbk").write_bytes(b"broken")
    broken = run("bake", src, "-o", "b.bbk", "--update", "b.bbk", "-q", cwd=tmp_path)
    assert broken.returncode == 0 and "cannot be read" in broken.stderr and "Traceback" not in broken.stderr
    assert (tmp_path / "b.bbk").read_bytes() == data and BakeCache.from_file(cache_path(tmp_path / "b.bbk"))
    folder = run("bake", src, "-o", "d.bbk", "--update", tmp_path, cwd=tmp_path)
    assert folder.returncode == 1 and "is a folder" in folder.stderr and "Traceback" not in folder.stderr
    assert not (tmp_path / "d.bbk").exists()
    cache_path(tmp_path / "d.bbk").mkdir()  # where the cache would go: said before any work
    blocked = run("bake", src, "-o", "d.bbk", "--update", "a.bbk", cwd=tmp_path)
    assert blocked.returncode == 1 and "is a folder" in blocked.stderr and "Traceback" not in blocked.stderr
    assert not (tmp_path / "d.bbk").exists()
    same = run("bake", src, "-o", "e.bbk", "--json", "e.bbk.cache", "--update", "a.bbk", cwd=tmp_path)
    assert same.returncode == 1 and "Traceback" not in same.stderr and not (tmp_path / "e.bbk").exists()


def test_brushes_with_the_same_planes_and_other_corners_are_not_confused():
    """A plane a brush drops (it touches only a corner) still moved that corner in the last bit:
    the digest holds the faces, so the re-bake does not take the other brush's pieces."""
    from brushbake.core.compile.bake_cache import brush_digest
    from brushbake.core.model.brushes import box_brush
    from brushbake.core.model.scene import Scene

    rng = np.random.default_rng(1)
    n = np.vstack([np.eye(3), -np.eye(3)]) + rng.normal(0, 0.05, (6, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    rock = brush_from_planes(n, rng.uniform(0.7, 1.3, 6), "rock")
    tried = 0
    for _ in range(200):  # a plane through a corner, tilted at random, until one moves a corner
        v = rock.faces[0][0]
        q = rock.normals[0] + rock.normals[1] + rng.normal(0, 0.3, 3)
        q /= np.linalg.norm(q)
        other = brush_from_planes(np.vstack([q, rock.normals]), np.r_[q @ v, rock.dists], "rock")
        tried += 1
        if np.array_equal(other.normals, rock.normals) and not np.array_equal(np.concatenate(other.faces),
                                                                              np.concatenate(rock.faces)):
            break
    else:
        pytest.fail("no plane moved a corner")
    assert brush_digest(other) != brush_digest(rock)
    room = [box_brush((-4, -4, -4), (4, 4, -3), "floor"), box_brush((-4, -4, 3), (4, 4, 4), "ceiling"),
            box_brush((-4, -4, -3), (-3, 4, 3), "w1"), box_brush((3, -4, -3), (4, 4, 3), "w2"),
            box_brush((-3, -4, -3), (3, -3, 3), "w3"), box_brush((-3, 3, -3), (3, 4, 3), "w4")]
    first = Scene("s", brushes=room + [rock])
    first = dataclasses.replace(first, settings=dataclasses.replace(first.settings, vis="none", allow_leak=True))
    second = dataclasses.replace(first, brushes=room + [other])
    cache = BakeCache()
    bake_scene(first, jobs=1, cache=cache)
    assert level_to_bytes(bake_scene(second, jobs=1, cache=cache)) == level_to_bytes(bake_scene(second, jobs=1))


def test_a_cancelled_rebake_keeps_what_the_next_one_needs(qbspfeatures):
    from brushbake.core.errors import CancelledError

    cache = BakeCache()
    bake_scene(qbspfeatures, cache=cache, jobs=1)
    kept = len(cache)
    calls = []
    with pytest.raises(CancelledError):
        bake_scene(qbspfeatures, cache=cache, jobs=1, progress=lambda f, m: None,
                   cancel=lambda: calls.append(1) or len(calls) > 3)
    assert len(cache) == kept
    again = bake_scene(qbspfeatures, cache=cache, jobs=1).stats["cache"]
    assert all(built == 0 for built, _ in again.values()), again


def wrapped(a: np.ndarray) -> np.ndarray:
    """a as uint64 with 2**63 added to its first two values: its sum wraps around to the same."""
    out = a.astype(np.uint64)
    out[:2] += np.array([1 << 63, 1 << 63], dtype=np.uint64)
    return out


def test_a_forged_cache_is_not_used(qbspfeatures, tmp_path):
    """Entries whose indices point outside what they belong to are refused when read, or taken as
    missing when used: the bake is the bake from scratch, never a traceback."""
    cache = BakeCache()
    bake_scene(qbspfeatures, cache=cache, jobs=1)
    data = dict(np.load(io.BytesIO(cache.to_bytes()), allow_pickle=False))
    fresh = level_to_bytes(bake_scene(qbspfeatures, jobs=1))
    for name, change in (("pieces/face", lambda a: a + 1000), ("trees/leaf_faces", lambda a: a + 10 ** 6),
                         ("trees/node_children", lambda a: a * 1000), ("expanded/dists", lambda a: a[:-1]),
                         ("trees/leaf_faces", lambda a: a.astype(np.float64)), ("bevels/kind", lambda a: a + 7),
                         ("bevels/normals", lambda a: a[:-1]), ("bevels/dists", lambda a: np.stack([a, a], axis=1)),
                         ("bevels/normals", lambda a: np.where(np.arange(a.size).reshape(a.shape) == 0, np.nan, a)),
                         ("bevels/dists", lambda a: np.full_like(a, 1e305)),
                         ("expanded/dists", lambda a: np.stack([a, a], axis=1)),
                         ("pieces/count", wrapped), ("pieces/count/len", wrapped)):
        forged = dict(data, **{name: change(data[name])})
        path = tmp_path / "forged.cache"
        buf = io.BytesIO()
        np.savez(buf, **forged)
        path.write_bytes(buf.getvalue())
        got = BakeCache.from_file(path)
        if got is not None:
            assert level_to_bytes(bake_scene(qbspfeatures, cache=got, jobs=1)) == fresh, name
    dropped = dict(data)  # an entry with one face fewer than its counts
    dropped["pieces/face"] = np.delete(data["pieces/face"], int(data["pieces/face/len"][0]) - 1)
    dropped["pieces/face/len"] = data["pieces/face/len"] - (np.arange(len(data["pieces/face/len"])) == 0)
    buf = io.BytesIO()
    np.savez(buf, **dropped)
    (tmp_path / "dropped.cache").write_bytes(buf.getvalue())
    got = BakeCache.from_file(tmp_path / "dropped.cache")
    assert got is None or level_to_bytes(bake_scene(qbspfeatures, cache=got, jobs=1)) == fresh
    plain = tmp_path / "plain.npy"
    np.save(plain, np.arange(3))
    assert BakeCache.from_file(plain) is None


def test_a_cache_that_breaks_the_bake_gives_a_full_bake(tmp_path, map_named, monkeypatch, capsys):
    """Whatever a cache file lets through its checks and then breaks, `bake --update` says so and
    bakes in full: the same level, no traceback."""
    from brushbake import cli

    src = map_named("qbspfeatures.map")
    assert cli.main(["bake", str(src), "-o", str(tmp_path / "a.bbk"), "--update", str(tmp_path / "a.bbk"), "-q"]) == 0
    real = cli.bake_scene_file

    def breaks_with_a_file_cache(*args, cache=None, **kw):
        if cache is not None and cache.from_disk:
            raise RuntimeError("as if the file held something its checks let through")
        return real(*args, cache=cache, **kw)

    monkeypatch.setattr(cli, "bake_scene_file", breaks_with_a_file_cache)
    capsys.readouterr()
    assert cli.main(["bake", str(src), "-o", str(tmp_path / "b.bbk"), "--update", str(tmp_path / "a.bbk"), "-q"]) == 0
    err = capsys.readouterr().err
    assert "could not be used (RuntimeError): baking in full" in err and "Traceback" not in err
    assert (tmp_path / "b.bbk").read_bytes() == (tmp_path / "a.bbk").read_bytes()
    assert BakeCache.from_file(cache_path(tmp_path / "b.bbk")) is not None
