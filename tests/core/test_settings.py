"""The settings table (core/model/setting_specs.py) and the objects made from it: Settings and the
narrower settings a stage takes each take their defaults from the table and refuse a value out of
its range, NaN or infinity with InvalidSettingError, in the words the command line and the add-on
use (issue 29 point 2, issue 31 point 3).  The command line's and the add-on's sides are in
tests/test_cli_settings.py and tests/addon/test_workflow.py."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from brushbake.core.compile.crowds.slices import SliceSettings
from brushbake.core.compile.trees.bevel import BevelSettings, add_bevels
from brushbake.core.compile.trees.bsp import SplitterSettings
from brushbake.core.errors import InvalidSettingError
from brushbake.core.model.scene import SETTING_RANGES, Scene, Settings, check_settings
from brushbake.core.model.setting_specs import SPEC, SPECS, from_float32, setting_error

VIEWS = (SplitterSettings, BevelSettings, SliceSettings)


def bad_values(name: str) -> list:
    """Values setting `name` refuses: beyond each bound, NaN, the infinities, a wrong type."""
    spec = SPEC[name]
    if spec.choices:
        return ["", "bogus", spec.values[0].upper(), 1, None]
    if spec.kind is bool:
        return [1, 0, "true", None]
    r = spec.range
    bad = [r.low - 1, r.high + 1, math.nan, math.inf, -math.inf, "1", None, True]
    if not r.integer:
        bad += [np.nextafter(r.low, -np.inf), np.nextafter(r.high, np.inf)]
    else:
        bad += [1.5, float(r.low)]
    return bad


def good_values(name: str) -> list:
    spec = SPEC[name]
    if spec.choices:
        return list(spec.values)
    if spec.kind is bool:
        return [True, False]
    r = spec.range
    cast = int if r.integer else float
    return [cast(r.low), cast(r.high), spec.default]


def test_settings_fields_are_the_table_in_its_order_with_its_defaults():
    assert [f.name for f in dataclasses.fields(Settings)] == [s.name for s in SPECS]
    defaults = Settings()
    for spec in SPECS:
        assert getattr(defaults, spec.name) == spec.default and type(getattr(defaults, spec.name)) is spec.kind
        assert (spec.range is not None) == (spec.kind in (int, float)), spec.name
        assert bool(spec.choices) == (spec.kind is str), spec.name
    assert set(SETTING_RANGES) == {s.name for s in SPECS if s.kind in (int, float)}


def test_every_bound_survives_float32():
    """Blender stores float properties as float32 and clamps to float32 bounds: a value at either
    bound, as the add-on's bridge reads it back (the shortest decimal of the float32), is in range."""
    for spec in SPECS:
        if spec.kind is float:
            for value in (spec.range.low, spec.range.high, spec.default):
                back = from_float32(float(np.float32(value)))
                assert back == value and setting_error(spec.name, back) is None, spec.name


@pytest.mark.parametrize("name", [s.name for s in SPECS])
def test_settings_refuse_a_bad_value_when_made_and_when_set(name):
    for value in good_values(name):
        s = Settings(**{name: value})
        setattr(s, name, value)
        check_settings(s)
    for value in bad_values(name):
        problem = setting_error(name, value)
        assert problem is not None and ("it must be" in problem), (name, value)
        want = f"settings: {name} {problem} Change that setting"
        with pytest.raises(InvalidSettingError) as made:
            Settings(**{name: value})
        assert str(made.value).startswith(want)
        s = Settings()
        with pytest.raises(InvalidSettingError) as set_:
            setattr(s, name, value)
        assert str(set_.value) == str(made.value)
        assert getattr(s, name) == SPEC[name].default  # nothing was stored


def test_range_messages_name_the_range_and_why():
    assert setting_error("max_candidates", -1) == "is -1; it must be from 0 to 1000000 (a count; 0 = all)."
    assert setting_error("bevel_angle", math.inf) == "is inf; it must be from 0 to 180 (an angle between planes, in degrees)."
    assert setting_error("vis", "full") == "is 'full'; it must be one of flow, fast, sample, none."
    assert setting_error("patch", 1.5).startswith("is 1.5; it must be a whole number from 1 to 64")


@pytest.mark.parametrize("view", VIEWS)
def test_narrow_settings_take_the_tables_defaults_and_check_themselves(view):
    made = view()
    for field, name in view.setting_names.items():
        assert getattr(made, field) == SPEC[name].default
        for value in bad_values(name):
            with pytest.raises(InvalidSettingError) as err:
                view(**{field: value})
            shown = field if field == name else f"{field} (the setting {name})"
            assert str(err.value).startswith(f"{view.__name__}: {shown} {setting_error(name, value)}")
    # from a Settings, by the same names
    changed = {name: good_values(name)[0] for name in view.setting_names.values()}
    copied = view.from_settings(Settings(**changed))
    assert {f: getattr(copied, f) for f in view.setting_names} == {f: changed[n] for f, n in view.setting_names.items()}


def test_bevel_settings_refuse_inf_and_nan_before_any_work():
    """Issue 29: BevelSettings(angle=inf) ended in 'math domain error' inside add_bevels."""
    for value in (math.inf, math.nan, -1.0, 181.0):
        with pytest.raises(InvalidSettingError, match=r"BevelSettings: angle \(the setting bevel_angle\) is .* 0 to 180"):
            add_bevels(None, BevelSettings(angle=value))
    for value in (90.0, math.nan, -1.0, math.inf):
        with pytest.raises(InvalidSettingError, match="vertex_angle"):
            BevelSettings(vertex_angle=value)
    assert BevelSettings.off().angle == 180.0


def test_compile_scene_refuses_bad_settings_through_the_api():
    """Issue 29: max_candidates = -1 through compile_scene ended in NumPy's 'Number of samples, -1,
    must be non-negative'.  A Settings refuses it when set; one forced past that is refused by
    compile_scene before any work."""
    from brushbake.core.compile.trees.build import compile_scene
    from brushbake.core.compile.pipeline import bake_scene

    scene = Scene("s")
    with pytest.raises(InvalidSettingError, match=r"max_candidates is -1; it must be from 0 to 1000000"):
        scene.settings.max_candidates = -1
    object.__setattr__(scene.settings, "max_candidates", -1)
    for run in (compile_scene, bake_scene):
        with pytest.raises(InvalidSettingError, match=r"scene 's': max_candidates is -1; it must be from 0 to 1000000"):
            run(scene)
    with pytest.raises(InvalidSettingError, match=r"SplitterSettings: max_candidates is -1"):
        SplitterSettings(max_candidates=-1)
