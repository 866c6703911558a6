"""The command line's setting flags are made from the table (core/model/setting_specs.py): every
setting reaches Settings through its flag as typed, a bad value is refused when the command line
is read with the words the API uses, and the help shows each setting's range (issue 31 point 3)."""

from __future__ import annotations

import contextlib
import io

import pytest

from brushbake.bakejob import apply_setting_flags, bake_options
from brushbake.cli import build_parser
from brushbake.core.errors import InvalidSettingError
from brushbake.core.model.scene import Settings
from brushbake.core.model.setting_specs import SPEC, SPECS, setting_error


def parse(*flags: str):
    return build_parser().parse_args(["bake", "x.map", *flags])


def baked_settings(*flags: str) -> Settings:
    settings = Settings()
    apply_setting_flags(settings, bake_options(parse(*flags)))
    return settings


def typed_values(spec) -> list[str]:
    if spec.choices:
        return list(spec.values)
    r = spec.range
    mid = r.low + (r.high - r.low) / 3
    return [repr(spec.kind(r.low)), repr(spec.kind(r.high)), str(int(mid)) if r.integer else repr(mid)]


@pytest.mark.parametrize("spec", [s for s in SPECS if s.flag and s.kind is not bool and s.part is None and not s.loader],
                         ids=lambda s: s.name)
def test_every_value_flag_sets_its_setting(spec):
    for text in typed_values(spec):
        got = baked_settings(f"{spec.flag}={text}")
        want = spec.kind(text) if spec.kind is not str else text
        assert getattr(got, spec.name) == want and type(getattr(got, spec.name)) is spec.kind
        if spec.enables:
            assert getattr(got, spec.enables) is True
        changed = {f: v for f, v in vars(got).items() if v != getattr(Settings(), f)}
        assert set(changed) <= {spec.name, spec.enables}, changed


def test_bool_flags_and_off_flags():
    for spec in SPECS:
        if spec.kind is bool and spec.flag:
            assert getattr(baked_settings(spec.flag), spec.name) is True
        if spec.off_flag:
            on = Settings(**{spec.name: True})
            apply_setting_flags(on, bake_options(parse(spec.off_flag)))
            assert getattr(on, spec.name) is False
    # an off flag wins over everything that turns its setting on
    assert baked_settings("--luxel=0.25", "--light", "--no-light").light is False
    assert baked_settings("--png").light is True


def test_slices_flag_sets_its_parts_and_turns_slices_on():
    parts = sorted((s for s in SPECS if s.flag == "--slices"), key=lambda s: s.part)
    values = [s.range.low + (s.range.high - s.range.low) / 7 for s in parts]
    got = baked_settings("--slices=" + ",".join(map(repr, values)))
    assert got.slices and [getattr(got, s.name) for s in parts] == values
    got = baked_settings("--slices=" + ",".join(map(repr, values[:3])))
    assert getattr(got, parts[3].name) == parts[3].default


def test_map_scale_flag_goes_to_the_loader(tmp_path):
    from brushbake.core.formats.loaders import load_scene

    assert parse("--scale=0.0625").scale == 0.0625
    assert baked_settings("--scale=0.0625").map_scale == SPEC["map_scale"].default  # not copied twice
    (tmp_path / "room.map").write_text('{\n"classname" "worldspawn"\n}\n')
    assert load_scene(tmp_path / "room.map", map_scale=0.0625).settings.map_scale == 0.0625


def test_every_setting_can_be_set_from_the_command_line():
    reachable = {s.name for s in SPECS if s.flag or s.off_flag} | {s.enables for s in SPECS if s.enables}
    assert reachable == {s.name for s in SPECS}


def cli_error(*flags: str) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exit_:
        parse(*flags)
    assert exit_.value.code == 2
    return err.getvalue()


@pytest.mark.parametrize("spec", [s for s in SPECS if s.flag and s.kind is not bool], ids=lambda s: s.name)
def test_bad_values_are_refused_with_the_apis_words(spec):
    """The command line, the API (Settings) and the add-on (its bridge builds a Settings) say the
    same: 'NAME is VALUE; it must be from LOW to HIGH (WHY).'"""
    if spec.choices:
        bad = ["bogus", spec.values[0].upper()]
    else:
        r = spec.range
        bad = [repr(r.low - 1), repr(r.high + 1), "nan", "inf", "-inf", "many"] + (["1.5"] if r.integer else [])
    for text in bad:
        value = text
        if spec.kind in (int, float):
            with contextlib.suppress(ValueError):
                value = spec.kind(text)
        problem = setting_error(spec.name, value)
        assert problem
        if spec.part is None:
            message = cli_error(f"{spec.flag}={text}")
            assert f"argument {spec.flag}: {problem}" in message, message
        else:
            values = [repr(s.default) for s in sorted((s for s in SPECS if s.flag == spec.flag), key=lambda s: s.part)]
            values[spec.part] = text
            message = cli_error(f"{spec.flag}={','.join(values)}")
            assert problem in message, message
        with pytest.raises(InvalidSettingError) as api:
            Settings(**{spec.name: value})
        assert f"{spec.name} {problem}" in str(api.value)


def test_help_shows_every_flag_with_its_range_and_default():
    out = " ".join(build_parser()._subparsers._group_actions[0].choices["bake"].format_help().split())
    for spec in SPECS:
        if spec.flag and spec.part is None:
            assert f"{spec.flag}" in out and " ".join(spec.help_text().replace("%%", "%").split()) in out, spec.name
        if spec.off_flag:
            assert " ".join(f"{spec.off_flag} {spec.off_help}".split()) in out, spec.name


def test_bake_table_reads_every_stat_by_name():
    """The table's keys are named once (core/compile/bake_stats.py): a bake with every stage fills
    every record, and a key a stage stops writing is a KeyError naming it, not a 0 in the table."""
    from pathlib import Path

    from brushbake.cli import bake_table
    from brushbake.core.compile.bake_cache import BakeCache
    from brushbake.core.compile.bake_stats import BakeStats, StageSeconds
    from brushbake.core.compile.pipeline import bake_scene
    from brushbake.core.formats.loaders import load_scene
    from brushbake.core.model.hulls import parse_hull
    from brushbake.exporters.png import lightmap_png_files

    scene = load_scene(Path(__file__).resolve().parents[1] / "sample_scenes" / "two_rooms.map")
    scene.hulls = [parse_hull("stand")]
    for name in ("light", "slices", "onion_map_trees"):
        setattr(scene.settings, name, True)
    level = bake_scene(scene, cache=BakeCache())  # the update's rows (bake --update)
    lightmap_png_files(level, Path("two_rooms.bbk"), 0.0)  # the PNGs' exposure row (bake --png)
    stats = level.stats
    record = BakeStats.of(stats)
    assert all(getattr(record, f) is not None for f in vars(record)), record
    assert record.onion.map_tree_nodes and record.leaks.sliver_sites is not None
    seconds = StageSeconds.of({"load": 1.0, **stats["times"]})
    assert seconds.total() == pytest.approx(1.0 + sum(stats["times"].values()))
    table = bake_table(stats, {"load": 1.0, **stats["times"]})
    assert f"{record.tree.faces_before_csg} / {record.tree.faces_after_csg}" in table
    for key in ("faces_before_csg", "space1_faces", "onion_leaves"):
        with pytest.raises(KeyError, match=key):
            BakeStats.of({k: v for k, v in stats.items() if k != key})
    with pytest.raises(KeyError, match="edge_bevels"):
        BakeStats.of({**stats, "bevel": {k: v for k, v in stats["bevel"].items() if k != "edge_bevels"}})
    with pytest.raises(KeyError, match="portal_flow"):
        StageSeconds.of({"portal_flow": 1.0})


def test_the_user_guide_lists_every_setting_with_its_flag():
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[1] / "docs" / "USER_GUIDE.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in guide.splitlines() if line.startswith("| `")}
    for spec in SPECS:
        row = next((line for key, line in rows.items() if f"`{spec.name}`" in key), None)
        assert row is not None, spec.name
        for flag in (spec.flag, spec.off_flag):
            assert flag is None or f"`{flag}" in row, (spec.name, row)
