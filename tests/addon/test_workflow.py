"""The level designer's workflow in real Blender: bake, import .map, export, trace, previews, storage.

Every scenario runs in a fresh Python with the bpy wheel (tests/addon/scenarios.py), for the reasons
given in test_extension.py, with BLENDER_USER_RESOURCES pointing at a temporary directory.  Each
scenario prints one JSON line of what it saw; the assertions are here, so a failure shows it all.
Together they take about 30 seconds.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

if importlib.util.find_spec("bpy") is None:
    pytest.skip("bpy wheel not installed (scripts/setup_env.sh installs bpy==5.0.1)", allow_module_level=True)

pytestmark = pytest.mark.blender

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = Path(__file__).with_name("scenarios.py")
MAPS = REPO / "maps"
TIMEOUT_S = 120
PREFIX = "SCENARIO_RESULT "


def isolated_blender_env(user_resources: Path) -> dict[str, str]:
    """The environment with Blender's user directories redirected (as in test_extension.py)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("BLENDER_USER_")}
    env["BLENDER_USER_RESOURCES"] = str(user_resources)
    return env


def run_scenario(tmp_path: Path, name: str, *args: str, timeout: float = TIMEOUT_S) -> dict:
    user = tmp_path / "blender_user"
    user.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, str(SCENARIOS), name, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=isolated_blender_env(user), stdin=subprocess.DEVNULL, cwd=tmp_path)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(PREFIX)]
    assert proc.returncode == 0 and lines, f"scenario {name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    result = json.loads(lines[-1].removeprefix(PREFIX))
    assert "error" not in result, result["error"]
    return result


@pytest.fixture(scope="module")
def bake_result(tmp_path_factory) -> dict:
    return run_scenario(tmp_path_factory.mktemp("bake"), "bake")


def test_nothing_selected_is_reported_and_bakes_nothing(bake_result):
    r = bake_result
    assert r["nothing_selected"][0] == "ERROR" and "Nothing to bake" in r["nothing_selected"][1]
    assert r["nothing_selected_status"].startswith("Error: Nothing to bake")
    assert r["nothing_selected_bake"] is False


def test_bake_stores_a_level_that_answers_like_the_scene(bake_result):
    r = bake_result
    assert r["hulls"] == ["q3_stand"]
    assert r["bake"] == ["FINISHED"]
    assert r["brush_names"] == ["floor", "pillar"]  # by name, whatever the selection order
    assert r["hull_names"] == ["point", "q3_stand"]
    assert r["has_bevel"] is True
    # probes: inside the pillar, above the floor, inside the floor, 0.5 m and 0.8 m above the floor
    assert r["point_solid"] == [1, 0, 1, 0, 0]
    assert r["stand_solid"] == [1, 0, 1, 1, 0]  # the stand box reaches 0.75 m below its reference point
    assert r["status"].startswith("Baked 2 brushes")


def test_non_convex_brush_is_named_and_the_previous_bake_kept(bake_result):
    r = bake_result
    assert r["nonconvex"][0] == "ERROR"
    assert "Lshape" in r["nonconvex"][1] and "not convex" in r["nonconvex"][1]
    assert "Lshape" in r["nonconvex_status"]
    assert r["nonconvex_unchanged"] is True


def test_tiny_brush_with_repeated_planes_is_named(bake_result):
    """Issue 20 item 5 in Blender: a box scaled by 1e-4 whose planes repeat (quads split into
    triangles) is the degenerate-brush error naming the object; the previous bake is kept."""
    r = bake_result
    assert r["speck"][0] == "ERROR" and "speck: has no volume" in r["speck"][1], r["speck"]
    assert "speck" in r["speck_status"] and "Traceback" not in r["speck"][1]
    assert r["speck_unchanged"] is True


def test_a_non_convex_mesh_may_be_non_solid(bake_result):
    r = bake_result
    assert r["set_role"] == ["FINISHED"] and r["nonsolid_bake"] == ["FINISHED"]
    assert r["nonsolid_brushes"] == ["floor", "pillar"]


def test_cancel_part_way_leaves_the_scene_as_before(bake_result):
    r = bake_result
    assert r["cancel"].startswith("cancelled")
    assert len(r["cancel_progress"]) == 3 and r["cancel_progress"][-1] < 1.0
    assert r["cancel_unchanged"] is True
    assert r["job_steps"] == [True, True]  # other events and Esc itself return no result yet
    assert "Esc to cancel" in r["job_status_text"]
    assert r["job_cancelled"] == "CancelledError" and r["job_cancel_unchanged"] is True


def test_the_modal_bake_job_gives_the_same_level(bake_result):
    assert bake_result["job_result"] == "CompiledLevel"
    assert bake_result["job_same_bytes"] is True


def test_undo_after_a_bake_restores_the_previous_bake(bake_result):
    r = bake_result
    assert r["rebake"] == ["FINISHED"] and r["rebake_hulls"] == ["point"] and r["rebake_changed"] is True
    assert r["undo_restores"] is True
    assert r["undo_objects"] == ["floor", "pillar"]


def test_bake_is_saved_with_the_blend_and_replaced_whole(tmp_path):
    r = run_scenario(tmp_path, "save_reload", tmp_path)
    assert r["bake"] == ["FINISHED"]
    assert r["after_reset"] is False
    assert r["reloaded_same"] is True
    assert r["reloaded_hulls"] == ["point", "q3_stand"]
    assert r["reloaded_hull_setting"] == ["q3_stand"]
    assert r["reloaded_role"] == "STRUCTURAL"
    assert r["rebake"] == ["FINISHED"] and r["rebake_changed"] is True
    assert r["rebaked_hulls"] == ["point", "q1_large"]
    assert r["bake_keys"] == ["brushbake_bake"]


@pytest.mark.parametrize("map_name, brushes", [("ericw-tools/q1_rocks.map", 18), ("ericw-tools/qbspfeatures.map", None)])
def test_map_baked_in_blender_equals_the_command_line_byte_for_byte(tmp_path, map_name, brushes):
    map_path = MAPS / map_name
    assert map_path.is_file(), f"{map_path} is part of the repository (maps/README.md)"
    r = run_scenario(tmp_path, "map", map_path, tmp_path)
    assert r["import"] == ["FINISHED"]
    assert r["objects"] == r["brushes"] == (brushes or r["brushes"])
    assert r["roles"] == r["expected_roles"]  # from each brush's contents; moving entities are movers
    assert r["max_vertex_gap"] < 1e-5
    assert r["markers"] == r["core_markers"]
    assert r["bake"] == ["FINISHED"] and r["export_native"] == ["FINISHED"] and r["export_json"] == ["FINISHED"]
    b = r["bevels"]  # the bevel overlay against the beveled tree
    assert b["bevel_nodes"] > 0 and b["patch_nodes"] == b["bevel_nodes"], b
    assert b["max_off_plane"] < 1e-5 and b["max_touch_gap"] < 1e-6 and b["most_behind"] > -1e-6, b
    assert b["max_beyond_cell"] <= 0.15 + 1e-5, b
    assert r["moved_uses_mesh"] is True and abs(r["moved_shift"] - 0.25) < 1e-5

    assert r["bake_120"] == r["export_120"] == r["bake_no_bevels"] == r["export_no_bevels"] == ["FINISHED"]
    for name, extra in (("", ["--json", str(tmp_path / "cli.json")]), ("_120", ["--bevel-angle", "120"]),
                        ("_no_bevels", ["--no-bevels"])):
        cli = subprocess.run([sys.executable, "-m", "brushbake", "bake", str(map_path), "-o",
                              str(tmp_path / f"cli{name}.bbk"), *extra, "--hull", "q3_stand", "--hull", "q3_crouch",
                              "--vis", "none", "-q"], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=tmp_path)
        assert cli.returncode == 0, cli.stderr
        assert (tmp_path / f"blender{name}.bbk").read_bytes() == (tmp_path / f"cli{name}.bbk").read_bytes(), name
    assert (tmp_path / "blender.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
    default, wide = (tmp_path / "cli.bbk").read_bytes(), (tmp_path / "cli_120.bbk").read_bytes()
    assert b"BVNP" in default and b"BVNP" not in (tmp_path / "cli_no_bevels.bbk").read_bytes()
    if map_name.endswith("q1_rocks.map"):  # 194 bevel-tree nodes at 90 degrees, 189 at 120
        assert default != wide


@pytest.fixture(scope="module")
def bevel_result(tmp_path_factory) -> dict:
    return run_scenario(tmp_path_factory.mktemp("bevels"), "bevels")


def test_bake_builds_and_stores_the_beveled_tree_by_default(bevel_result):
    r = bevel_result
    assert r["defaults"] == [True, 90.0] and r["options"] == {"use_bevels": True, "bevel_angle": 90.0}
    d = r["default"]
    assert r["bake_default"] == ["FINISHED"] and d["has_bevel"] and d["bvnp_in_bytes"]
    assert d["bevel_nodes"] > d["nodes"] and d["same_as_core"]  # the tree core/bevel.py builds
    assert f"beveled tree {d['bevel_nodes']} nodes" in d["status"]
    a = r["angle_45"]  # the angle reaches the core (45 degrees bevels square edges too)
    assert r["bake_45"] == ["FINISHED"] and a["same_as_core"] and a["bevel_nodes"] > d["bevel_nodes"]
    off = r["off"]
    assert r["bake_off"] == ["FINISHED"] and not off["has_bevel"] and not off["bvnp_in_bytes"]
    assert off["nodes"] == d["nodes"] and ", no bevels" in off["status"]


def test_trace_with_a_shape_uses_the_beveled_tree(bevel_result):
    """A 0.25 m sphere whose lowest point passes 0.25 m over a ridge's apex: the beveled tree lets it
    by; the plain tree (a bake without bevels) stops it in mid-air, and the status says why."""
    r = bevel_result
    assert r["default_over"]["result"] == ["FINISHED"] and r["default_over"]["fraction"] == 1.0
    assert r["default_over"]["status"].startswith("No hit for 'sphere:0.25'")
    low = r["default_low"]  # 0.05 m over the apex: stopped at the ridge
    assert low["fraction"] < 0.5 and low["point"][1] == pytest.approx(-0.2186, abs=1e-3)
    assert r["default_point"]["point"] == pytest.approx([2.0, 0.0, 2.0], abs=1e-6)
    off = r["off_over"]
    assert off["result"] == ["FINISHED"] and 0.3 < off["fraction"] < 0.7
    assert "no bevels" in off["status"] and "plain tree" in off["status"]
    assert r["hull_over"]["fraction"] == 1.0 and r["hull_low"]["fraction"] < 0.5


def test_trace_with_a_bad_shape_is_named(bevel_result):
    r = bevel_result
    for bad, words in (("sphere:-1", ["sphere:-1", "non-negative"]), ("cone:1", ["cone:1", "unknown shape"]),
                       ("box:1,2", ["box:1,2", "3 non-negative"]),
                       ("hull:no_such_points.npy", ["hull:no_such_points.npy", "cannot be read", ".npy file"]),
                       ("hull://no_such_points.npy", ["cannot be read"]),
                       ("hull:empty.npy", ["hull:empty.npy", "at least one finite point"])):
        got = r[f"bad {bad}"]
        assert got["result"][0] == "ERROR", (bad, got)
        for word in words:
            assert word in got["result"][1] and word in got["status"], (bad, word, got)


@pytest.fixture(scope="module")
def trace_result(tmp_path_factory) -> dict:
    return run_scenario(tmp_path_factory.mktemp("trace"), "trace_overlay")


def test_trace_reports_the_hit_and_places_the_marker(trace_result):
    t = trace_result["traces"]
    # from (2, 2, 3) straight down onto the floor (top at z = 0), 10 m
    for target, z in (("q3_stand", 0.75), ("point", 0.0), ("sphere:0.5", 0.5)):
        assert t[target]["result"] == ["FINISHED"], t[target]
        assert t[target]["point"] == pytest.approx([2.0, 2.0, z], abs=1e-5)
        assert t[target]["marker"] == pytest.approx([2.0, 2.0, z], abs=1e-5)
        assert t[target]["normal"] == pytest.approx([0.0, 0.0, 1.0], abs=1e-6)
        assert t[target]["fraction"] == pytest.approx((3.0 - z) / 10.0, abs=1e-6)
        assert "Hit for" in t[target]["status"]
    assert t["nohull"]["result"][0] == "ERROR" and "q3_stand" in t["nohull"]["result"][1]
    assert trace_result["trace_lines"] == 6
    assert trace_result["handler_installed"] is True and trace_result["handler_after_unregister"] is False


@pytest.mark.parametrize("hull", ["0", "1"])
def test_leaf_cells_tile_the_world_and_match_the_tree(trace_result, hull):
    c = trace_result["cells"][hull]
    assert c["cells_volume"] == pytest.approx(c["box_volume"], rel=1e-9)
    assert c["centroids_in_own_leaf"] is True
    assert c["overlay_leaves_solid"] is True and c["overlay_solid_leaves"] is True
    if hull == "0":
        assert c["solid_volume"] == pytest.approx(64.0 + 2.0)  # floor 8 x 8 x 1 and pillar 1 x 1 x 2


@pytest.mark.parametrize("hull, heights, area", [
    ("0", [0.0, 2.0], 168.0),  # floor and pillar tops; the union's surface
    # the stand box (mins z -0.75, maxs z 1, half width 15/32) around floor and pillar
    ("1", [0.75, 2.75], 2 * 8.9375 ** 2 + 4 * 8.9375 * 2.75 + 4 * 1.9375 * 2.0),
])
def test_hull_surface_is_the_expanded_boundary(trace_result, hull, heights, area):
    c = trace_result["cells"][hull]
    assert c["surface_front_empty"] is True and c["surface_back_solid"] is True
    assert c["floor_heights"] == heights
    assert c["surface_area"] == pytest.approx(area, rel=1e-9)


def test_preview_object_is_the_overlay_as_a_mesh(trace_result):
    r = trace_result
    assert r["preview"] == ["FINISHED"]
    assert r["preview_polygons"] == r["preview_expected"] > 0
    assert r["preview_collection"] == ["brushbake preview"]
    assert r["preview_bad_hull"][0] == "ERROR" and "nohull" in r["preview_bad_hull"][1]


def test_overlay_drawn_offscreen_shows_in_the_pixels(trace_result):
    o = trace_result["offscreen"]
    assert o["blank"] == 0
    assert o["overlay"] > 200 and o["overlay_centre_red"] is True and o["overlay_corner_red"] is False


def test_demo_blend_and_every_panel_draws(tmp_path):
    r = run_scenario(tmp_path, "samples_and_panels", tmp_path)
    assert r["build"]["brushes"] == 8 and r["build"]["hulls"] == ["point", "stand", "crouch"]
    assert r["hull_setting"] == ["stand", "crouch"]
    assert r["bake_hulls"] == ["point", "stand", "crouch"]
    assert r["preview_objects"] == ["brushbake surface stand"]
    assert r["save"] == ["FINISHED"] and (tmp_path / "cornell_box.blend").is_file()
    assert r["panel_problems"] == []
    assert set(r["panels_drawn"]) == {"BRUSHBAKE_PT_main", "BRUSHBAKE_PT_hulls", "BRUSHBAKE_PT_roles",
                                      "BRUSHBAKE_PT_bake", "BRUSHBAKE_PT_previews", "BRUSHBAKE_PT_camera", "BRUSHBAKE_PT_export",
                                      "BRUSHBAKE_PT_light",
                                      "BRUSHBAKE_UL_hulls"}
    assert all(n > 0 for n in r["panels_drawn"].values()), r["panels_drawn"]


def test_setting_ranges_equal_core_table_and_bad_values_are_reported(tmp_path):
    """The add-on's property min/max are core.model.scene.SETTING_RANGES' (issue 20); a NaN setting
    (Blender accepts NaN) is an error report naming the setting, and nothing is stored."""
    import numpy as np

    from brushbake.core.model.scene import SETTING_RANGES

    r = run_scenario(tmp_path, "settings")
    for name, (low, high) in r["ranges"].items():
        want = SETTING_RANGES[name]
        cast = int if want.integer else np.float32
        assert (low, high) == (cast(want.low), cast(want.high)), name
    assert r["nan_bake"][0] == "ERROR" and "bevel_angle" in r["nan_bake"][1], r["nan_bake"]
    assert "0 to 180" in r["nan_bake"][1] and "Traceback" not in r["nan_status"]
    assert r["nan_stored"] is False
    assert r["clamped"] == 180.0 and r["clamped_bake"] == ["FINISHED"]


def test_every_setting_of_the_table_round_trips_through_the_add_on(tmp_path):
    """Issue 31 point 3: the add-on's properties are made from the table (default, min, max, label,
    tooltip, menu items) and the bridge copies them into core Settings by it: every value set on a
    property reaches Settings as typed; a bad value is clamped by Blender into the range, or (NaN)
    refused by the bridge with the API's own message."""
    import math

    from brushbake.core.model.scene import Settings
    from brushbake.core.model.setting_specs import SPECS

    r = run_scenario(tmp_path, "settings_table")
    core = Settings()
    assert r["defaults"] == {**vars(core), "vis": "none"}  # Visibility is off in a new scene
    assert {s.name for s in SPECS if s.prop_name is None} == {"png_exposure"}  # the command line's PNGs only
    for spec in SPECS:
        if spec.prop_name is None:
            continue
        p = r["props"][spec.name]
        assert p["label"] == spec.label and p["description"] == spec.tip_text(), spec.name
        if spec.choices:
            off = spec.toggle.off_value if spec.toggle else None
            assert p["items"] == [c.value for c in spec.choices if c.value != off] and p["default"] == spec.default
        elif spec.kind is float:
            assert [p["min"], p["max"], p["default"]] == [float(np.float32(v)) for v in
                                                          (spec.range.low, spec.range.high, spec.default)], spec.name
            assert p["unit"] == ("LENGTH" if spec.unit == "m" else "NONE"), spec.name
        elif spec.kind is int:
            assert [p["min"], p["max"], p["default"]] == [spec.range.low, spec.range.high, spec.default], spec.name
        else:
            assert p["default"] == spec.default
        for typed, seen in r["round_trip"][spec.name]:
            assert seen == typed and type(seen) is spec.kind, (spec.name, typed, seen)
        for row in r["bad"].get(spec.name, []):
            value, stored, verdict = row[:3]
            if stored == "refused by Blender":
                continue
            if verdict == "ok":
                assert spec.range.low <= row[3] <= spec.range.high and not math.isnan(value), (spec.name, row)
            else:
                with pytest.raises(Exception) as api:
                    Settings(**{spec.name: stored})
                assert row[3] == str(api.value), (spec.name, row)
        if spec.kind is float:  # NaN gets through Blender's clamp: the bridge refuses it
            nan_row = next(row for row in r["bad"][spec.name] if isinstance(row[0], float) and math.isnan(row[0]))
            assert nan_row[2] == "error" and f"{spec.name} is nan" in nan_row[3], nan_row


def test_visibility_in_blender(tmp_path):
    """Issue 11 point 6: Visibility bakes the PVS when asked; a leak fails the bake, keeps the
    previous one and draws the chain through the hole; Frame Leak selects the nearest brush; the
    overlay shows what the cursor's leaf sees."""
    r = run_scenario(tmp_path, "visibility")
    assert "error" not in r, r.get("error")
    assert r["defaults"] == [False, "fast", False, "qbsp", True]
    assert r["seal_to_core"] == "exact" and r["fill_to_core"] is False
    assert r["void_solid"] == [1, 0]  # between the east wall and the world box: filled
    assert r["bake_sealed"] == ["FINISHED"] and r["sealed_has_vis"] and not r["sealed_leak_object"]
    assert r["overlay_has_cursor_leaf"] and r["overlay_has_far_leaf"] and r["overlay_in_solid"] == 0
    assert r["bake_leak"][0] == "ERROR" and "leak: start" in r["leak_status"] and r["kept_previous_bake"]
    chain = np.array(r["chain"])
    assert r["leak_object"] and len(chain) >= 2
    assert np.allclose(chain[0], [1.0, 2.0, 1.0])  # from the marker ...
    assert (chain[:, 0] > 8.0).any()  # ... out through the missing east wall (x = 8 .. 9)
    assert r["frame"] == ["FINISHED"] and r["framed"] in ("floor", "ceiling", "south", "north")
    assert r["bake_allowed"] == ["FINISHED"] and r["allowed_has_vis"] and r["allowed_leak_object"]
    assert r["bake_sealed_again"] == ["FINISHED"] and not r["sealed_again_leak_object"]


def test_crowd_in_blender(tmp_path):
    """Issue 13 point 5: a bake with Crowd slices; the slice overlay shows where avatars stand on
    both levels (floor and bridge) and the wall as blocked; Spawn Crowd makes a point cloud that
    the timeline moves one tick a frame, forward and backward, exactly as the library walks it."""
    r = run_scenario(tmp_path, "crowd")
    assert "error" not in r, r.get("error")
    assert r["defaults"] == [False, 1.0, 1.75, 0.5625, 0.25]
    assert r["poll_before_bake"] is False
    assert r["bake_plain"] == ["FINISHED"] and r["spawn_without_slices"][0] == "ERROR"
    assert "no crowd slices" in r["spawn_without_slices"][1] and "no crowd slices" in r["status_without_slices"]
    assert r["bake"] == ["FINISHED"] and r["kept"] == 2
    assert r["overlay_triangles"] > 100
    assert 0.0 in r["standing_heights"] and 3.2 in r["standing_heights"]
    assert {0.0, 2.5, 3.2} <= set(r["refused_heights"])  # floor by the wall, the wall's top, the bridge's edges
    assert 7.75 in r["refused_floor_x"] and 9.25 in r["refused_floor_x"]  # the wall's grown footprint
    assert r["spawn"] == ["FINISHED"] and r["type"] == "POINTCLOUD" and r["points"] == 300
    assert r["frame_end"] == 40
    assert all(err < 1e-5 for err in r["frame_errors"].values()), r["frame_errors"]
    assert r["moved"] > 1.0
    assert 0.0 in r["levels_used"] and 3.2 in r["levels_used"]
    assert r["undo_spawn"]


def test_camera_culling_in_blender(tmp_path):
    """Issue 19 point 3: the active camera becomes brushbake's camera (yaw 0, pitch 0, hfov 40,
    aspect 1.5, far its clip end); the 'Camera view' overlay draws nothing of the room behind the
    wall in portal mode while the PVS does; the sidebar's counts nest (portal <= frustum <= pvs) and
    change when the camera turns to the door; the stats operator is refused without a bake and then
    reports and keeps the counts; a perspective viewport converts alike, an orthographic one is
    refused; the Camera Culling panel draws."""
    r = run_scenario(tmp_path, "camera")
    assert r["defaults"] == ["portal", False]
    assert r["stats_without_bake"][0] == "ERROR" and "poll" in r["stats_without_bake"][1]
    assert r["bake"] == ["FINISHED"] and r["has_portals"]
    row = r["camera_row"]
    assert np.allclose(row[:3], [2.0, 1.5, 1.5], atol=1e-4) and abs(row[3]) < 1e-3 and abs(row[4]) < 1e-3
    assert abs(row[5] - 40.0) < 1e-2 and abs(row[6] - 1.5) < 1e-3 and row[7] == pytest.approx(100.0)
    assert not r["portal_behind"] and r["pvs_behind"]
    assert r["portal_triangles"] > 0 and r["portal_lines"] == 8
    assert r["portal_triangles"] <= r["frustum_triangles"] <= r["pvs_triangles"]
    c = r["counts"]
    assert c["portal"][0] <= c["frustum"][0] <= c["pvs"][0] <= r["faces_total"]
    assert r["scene_overlay_triangles"] == r["portal_triangles"]
    assert r["turned_portal_behind"] and r["turned_counts"]["portal"][0] > c["portal"][0]
    assert r["stats"] == ["FINISHED"] and "portal:" in r["stats_text"] and "pvs:" in r["stats_text"]
    assert np.allclose(r["view_row"][:7], row[:7], atol=1e-3) and r["view_row"][7] == 1000.0
    assert r["ortho"] == "the view is orthographic"
    assert r["panel_problems"] == [] and r["camera_panel_calls"] > 3


def test_rebake_after_an_edit_reuses_the_rest_and_equals_a_fresh_bake(tmp_path):
    r = run_scenario(tmp_path, "rebake")
    assert r["bake"] == ["FINISHED"] and r["rebake"] == ["FINISHED"]
    assert r["first"]["expanded"][1] == 0  # nothing to take the first time (but a region or a brush's
    # pieces met twice in one bake: the point tree's and the onion's point space share some)
    built, reused = r["second"]["regions"]
    assert reused > built > 0 and reused > r["first"]["regions"][1]  # the regions the pillar did not reach
    assert r["second"]["pieces"][1] > r["second"]["pieces"][0] > 0
    assert r["second"]["expanded"] == [1, len(r["room"]) - 1]
    assert r["same_as_fresh"]


def test_live_leak_check_follows_edits(tmp_path):
    r = run_scenario(tmp_path, "live_leaks")
    assert r["handler_registered"]
    assert r["on_status"].startswith("Live leak check: sealed") and not r["on_leak_object"]
    assert r["pending_after_move"] and r["moved_leaks"] and r["moved_leak_object"]
    assert "LEAK from start" in r["moved_status"] and r["chain_end_x"] > 8.0
    assert r["pending_after_back"] and r["back_status"].startswith("Live leak check: sealed")
    assert not r["back_leak_object"]
    built, reused = r["back_built_reused"]
    assert reused > built  # the cells the wall did not reach were not built again
    assert r["pending_after_bend"] and r["bent_report"] and "Live leak check stopped: " in r["bent_status"]
    assert "pillar" in r["bent_status"]
    assert r["pending_after_delete"] and r["deleted_leaks"]
    assert r["off_forgets"]
