"""The .map line reader (core/formats/map_lines.py, issue 29): the same answers as the regular
expressions it replaced, on random and adversarial lines, and the line that froze them refused
with the typed error.  Its speed (linear in the line, up to 1 MB) is measured in
bench/fuzz_hostile.py's 'junk' class, not here."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brushbake.core.errors import SceneFormatError
from brushbake.core.formats import map_lines
from brushbake.core.formats.map_lines import key_fields
from brushbake.core.formats.mapfile import parse_map_text

# The replaced patterns, kept as the oracle (fed only short lines: they backtrack exponentially).
_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_POINT = rf"\(\s*({_NUM})\s+({_NUM})\s+({_NUM})\s*\)\s*"
_TEX_PARAMS = (
    rf"(?:\[\s*{_NUM}(?:\s+{_NUM}){{3}}\s*\]\s*\[\s*{_NUM}(?:\s+{_NUM}){{3}}\s*\]\s*{_NUM}(?:\s+{_NUM}){{2,}}"
    rf"|{_NUM}(?:\s+{_NUM}){{4,}})"
)
OLD_PLANE = re.compile(rf"{_POINT}{_POINT}{_POINT}(\"[^\"]*\"|[^\s\"\[\]()]+)\s+{_TEX_PARAMS}\s*(?://.*)?$")
OLD_KEY = re.compile(r'"([^"]*)"\s*"(.*)"\s*(?://[^"]*)?$')

VALVE = "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex [ 1 0 0 0 ] [ 0 1 0 0 ] 0 1 1"
STANDARD = "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex 0 0 0 1 1"
JUNK = " 1234 1234 1234 1234 1234 1234 1234 1234 1234 1234 ("


def plane_fields(line: str):
    """map_lines.plane_fields, after checking that its two ways (a whole match for short
    parameters, word by word for long ones) agree."""
    whole = map_lines.plane_fields(line)
    saved, map_lines.SHORT_TAIL = map_lines.SHORT_TAIL, -1
    try:
        assert map_lines.plane_fields(line) == whole, line
    finally:
        map_lines.SHORT_TAIL = saved
    return whole


def old_plane(line: str):
    m = OLD_PLANE.match(line)
    return None if m is None else (list(m.groups()[:9]), m.group(10).strip('"'))


def old_key(line: str):
    m = OLD_KEY.match(line)
    return None if m is None else (m.group(1), m.group(2))


ACCEPTED = [
    STANDARD, VALVE, STANDARD + " 0 0 0", VALVE + " 1 2 3", STANDARD + " // c", VALVE + "//c", STANDARD + "//",
    "(0 0 0)(0 1 0)(1 0 0)tex 0 0 0 1 1", "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) \"my tex (1)\" 0 0 0 1 1",
    "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) \"\" 0 0 0 1 1", "( -1.5e3 +2. .5 ) ( 1E-2 0 0 ) ( 1 0 0 ) a//b 0 0 0 1 1",
    "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex [1 0 0 0][0 1 0 0]0 1 1", "( 0\t0 0 ) ( 0 1 0 ) ( 1 0 0 )\ttex\t0 0 0 1 1",
    "( \u0663 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex 0 0 0 1 1\u2003// wide space", "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) *water1 0 0 0 1 1",
]
REFUSED = [
    VALVE + JUNK, STANDARD + JUNK, STANDARD[:-2], VALVE + " 1 [", "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex[1 0 0 0] [0 1 0 0] 0 1 1",
    "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) \"tex\"0 0 0 1 1", "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) \"tex 0 0 0 1 1",
    "( 0 0 0) ( 0 1 0 ) ( 1 0 0 ) tex 0 0 0 1 1/", "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex 0 0 0 1 1 / c",
    "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex 0 0 0 1 1e", "( 00 0 ) ( 0 1 0 ) ( 1 0 0 ) tex 0 0 0 1 1",
    "( 0 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex 0 0 0 1 1", "( 0 0 0 )", "(", "( 0 0 0)) ( 0 1 0 ) ( 1 0 0 ) tex 0 0 0 1 1",
    "( 0 0 1_0 ) ( 0 1 0 ) ( 1 0 0 ) tex 0 0 0 1 1", "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex [ 1 0 0 ] [ 0 1 0 0 ] 0 1 1",
    "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex [ 1 0 0 0 ] [ 0 1 0 0 ] 0 1", "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 ) tex 0 0 0 1 1 ]",
]


@pytest.mark.parametrize("line", ACCEPTED + REFUSED)
def test_plane_lines_as_the_old_pattern(line):
    assert plane_fields(line) == old_plane(line)
    assert (plane_fields(line) is None) == (line in REFUSED)


KEYS = ['"a" "b"', '"a""b"', '"a" "b" // c', '"a" "b"//"c"', '"a" "b" "c"', '"a" "say "hi""', '"a" "b" x', '"a"',
        '"a" "', '"" ""', '"a" "b"  \t', '"a" b', '"a" "b" /', '"a" "b" // c "d"', '"a\tb"\u00a0"c d"']


@pytest.mark.parametrize("line", KEYS)
def test_key_lines_as_the_old_pattern(line):
    assert key_fields(line) == old_key(line)


# Random lines from pieces of both grammars (a few numbers only: the oracle is exponential).
PIECES = ["(", ")", "[", "]", " ", "  ", "\t", "0", "1", "-2", "+3.", ".5", "1e5", "2E-3", "e", ".", "-", "/", "//",
          '"', "tex", "a//b", "*lava", "\u0663", "\u00a0", "x", "{", "1_0"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14), st.sampled_from([STANDARD, VALVE, "( 0 0 0 ) ( 0 1 0 ) ( 1 0 0 )", "("]),
       st.integers(0, 60))
def test_random_plane_lines_as_the_old_pattern(pieces, base, cut):
    line = (base[:cut] + "".join(pieces)).strip() if cut < len(base) else base + "".join(pieces)
    line = line.strip()
    if line:
        assert plane_fields(line) == old_plane(line)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES + ['"', '"', "k", "v"]), max_size=12))
def test_random_key_lines_as_the_old_pattern(pieces):
    line = ('"' + "".join(pieces)).strip()
    assert key_fields(line) == old_key(line)


@pytest.mark.parametrize("tail", [JUNK, JUNK * 20, " 1" * 5000 + " x", " ." * 5000, " 1e" * 3000])
@pytest.mark.parametrize("base", [VALVE, STANDARD])
def test_junk_after_texture_is_a_typed_error(base, tail):
    text = '{\n"classname" "worldspawn"\n{\n%s\n}\n}\n' % (base + tail)
    with pytest.raises(SceneFormatError, match=r"line 4: malformed plane line"):
        parse_map_text(text, "junk.map")


def test_extra_numbers_after_texture_still_parse():
    """Quake 2 / 3 flags: any count of extra numbers is accepted, as before."""
    text = '{\n"classname" "worldspawn"\n{\n%s\n}\n}\n' % (VALVE + " 1234" * 2000)
    mapfile = parse_map_text(text, "flags.map")
    assert mapfile.textures == ["tex"] and mapfile.points.shape == (1, 3, 3)


def test_brush_with_too_many_planes_is_refused_before_building():
    """Building a brush costs the cube of its planes (2,000 plane lines, 190 KB: 33 s): over
    MAX_BRUSH_PLANES the brush is skipped with a warning, or refused in strict mode, at once."""
    from brushbake.core.errors import DegenerateBrushError
    from brushbake.core.formats.mapfile import load_map_text
    from brushbake.core.tolerances import MAX_BRUSH_PLANES

    side = "( -64 -64 -16 ) ( -64 -63 -16 ) ( -64 -64 -15 ) wall 0 0 0 1 1"
    text = '{\n"classname" "worldspawn"\n{\n%s\n}\n}\n' % "\n".join([side] * 5000)
    scene = load_map_text(text, "many.map")
    assert not scene.brushes and f"has 5000 planes; brushbake takes at most {MAX_BRUSH_PLANES}" in scene.warnings[0]
    with pytest.raises(DegenerateBrushError, match="many.map:entity0:brush0: has 5000 planes"):
        load_map_text(text, "many.map", strict=True)
