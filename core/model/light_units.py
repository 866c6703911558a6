"""Light sources in Blender's units, and the rule that turns a Quake light into one.

A lightmap value is what a white diffuse surface reflects: the radiance E / pi of the irradiance
E falling on it (1 renders a texture as painted; Cycles' Diffuse Direct + Indirect passes with
Color off bake the same quantity).  Each kind of light gives it as Blender (Cycles) does:

- point and spot lights of P watts (Blender's 'Power'): an intensity of P / (4 pi) W/sr, so a face
  at d metres, at angle theta, gets irradiance P cos(theta) / (4 pi d^2) and
  value = P cos(theta) / (4 pi^2 d^2)  (POINT_VALUE_PER_WATT = 1 / (4 pi^2); measured: Cycles in
  the bpy wheel bakes 6.31 under 1000 W at 2 m, against 6.33 by this rule, and 1 / pi under a
  sun of strength 1).  Spot
  lights multiply by Blender's cone: smoothstep((cos a - cos(size / 2)) / (blend (1 - cos(size / 2)))),
  a the angle from the spot's axis, and nothing else (tests/addon/test_light.py: a 90-degree spot
  with blend 0.3 over a plane in Cycles is this times the point light's value, the median texel
  within 0.3%, the steepest texels of the blend ring within 2% of the peak).  A light's radius (Blender's 'Radius', soft shadows) is
  sampled by several shadow rays per luxel.
- sun lights of S W/m^2 (Blender's 'Strength'): irradiance S cos(theta), value S cos(theta) / pi.
- area lights of P watts (Blender's Area light: square, rectangle, disk or ellipse of area A,
  one-sided, shining along its normal): a Lambertian emitter of radiance P / (pi A) W/(m^2 sr),
  so value = (P / (pi A)) F, F the form factor (1 / pi) integral cos_r cos_l / d^2 dA from the
  face to the light (AREA_RADIANCE_PER_WATT).  Blender's Spread s < 180 degrees multiplies the
  radiance leaving at angle theta from the normal by Cycles' soft-box grid,
  max((tan a - tan theta) / (tan a - a), 0), a = s / 2 (3 / a^3 for the normalisation below
  a = 0.05 rad), which keeps the power (area_spread_factor; lm_area samples it).  Measured in the bpy wheel's Cycles
  (tests/addon/test_light.py, scenario 'area_units'): a 100 W light 1 m over a plane, the median
  texel over the lit plane within 0.1% of this rule for square, rectangle, disk, ellipse and a
  90-degree spread (1 m square: 7.53 at the centre, against 7.55 by the rule).
- surface lights: faces whose texture is named (the ericw-tools '_surface' idea) emit radiance S,
  Blender's Emission Strength, in every direction: they shoot as patches in the radiosity.
  Measured: a 1 m square of Principled BSDF Emission Strength 1 (white) 1 m over a plane gives
  Cycles' centre texel 0.2365 against 0.2373 = F by this rule.  In Blender a brush whose
  material emits (Principled BSDF Emission Color x Strength, or an Emission shader) is such a
  surface light (addon/lightmap.py).

A Quake light (a .map's point, spot or sun light, Light.quake, with no power) has no watts; it lights as
ericw-tools' light documents it (quake_light_value).  At d units from the light (d at least 0.1)
a face gets  value = V(d) * A / 255 * colour,  V the 'light' value's falloff by 'delay':
0 linear  max(L - wait d, 0)  (zero at L / wait units; with '_falloff' F:  L (1 - d / F)  up to F),
1 inverse  L / (wait d / 128),  2 inverse square  L / (wait d / 128)^2,  3 none  L,
4 local minlight  L (raises a luxel that sees the light to it, adds nothing),
5 inverse square from 128 units on  L / ((wait d + 128) / 128)^2;
and A = (1 - a) + a cos(theta) the angle of incidence scaled by '_anglescale' a (0.5; 0 where the
face looks away).  So 'light 300' is 300 / 255 of white at the light, 172 / 255 at 128 units and
nothing past 300 units.  A Quake sun ('_sun 1', or worldspawn '_sunlight') gives L A / 255
where its ray reaches the sky; worldspawn 'light' / '_minlight' n raises every luxel to n / 255 of
'_minlight_color'.  Units are .map units (metres / map_scale).  Quake area and surface lights
keep the older rule.  Checked against ericw-tools' light itself (bench/ericw_light.py: a floor lit
by each falloff kind, wait, _falloff and _anglescale 0 / 0.5 / 1; ericw writes V A / 2 as the byte,
an engine showing byte / 128 of the texture): every lit sample within 2 of the byte, a mean of
-0.2 to -0.5 (ericw truncates).  The older rule for area and surface lights: the area light of P = 4 pi^2 (128 * map_scale)^2 V / 255 watts, a surface
radiance V / 255; so does a .json light with no power (Light.quake False): the point light of those
watts, V / 255 at 128 units by the inverse square, and a sun of S = pi V / 255.
"""

from __future__ import annotations

import math

import numpy as np

#: lightmap value per watt of a point light at 1 m, square to it (see above)
POINT_VALUE_PER_WATT = 1.0 / (4.0 * math.pi ** 2)
#: the distance in Quake units where a converted Quake light gives V / 255
QUAKE_REFERENCE_UNITS = 128.0
#: Quake's full brightness
QUAKE_FULL = 255.0

LIGHT_KINDS = ("point", "spot", "sun", "area", "surface")
AREA_SHAPES = ("square", "rectangle", "disk", "ellipse")
#: an area light's radiance (W/(m^2 sr)) per watt and per m^2^-1 of area: L = P / (pi A)
AREA_RADIANCE_PER_WATT = 1.0 / math.pi
#: below this half spread (radians) Cycles normalises the spread by its Taylor series 3 / a^3
SPREAD_TAYLOR_BELOW = 0.05


def area_light_area(light) -> float:
    """m^2 of an area light's surface (Blender's size and size_y by its shape)."""
    sx = float(light.size)
    sy = float(light.size_y) if light.shape in ("rectangle", "ellipse") else sx
    return sx * sy * (math.pi / 4.0 if light.shape in ("disk", "ellipse") else 1.0)


def spread_constants(spread_degrees: float) -> tuple[float, float]:
    """(tan a, normalisation) of Cycles' spread rule, a the half spread (180 degrees: (inf, 0))."""
    a = math.radians(min(max(float(spread_degrees), 0.0), 180.0)) / 2.0
    if a >= math.pi / 2.0:
        return math.inf, 0.0
    if a <= 0.0:
        raise ValueError("a spread of 0 (parallel light) is not supported")
    return math.tan(a), (3.0 / a ** 3 if a <= SPREAD_TAYLOR_BELOW else 1.0 / (math.tan(a) - a))


def area_spread_factor(spread_degrees: float, tan_theta):
    """Cycles' spread: the factor on an area light's radiance leaving at tan(theta) from its
    normal (1 for the default 180 degrees; the power stays the same for every spread)."""
    tan_a, scale = spread_constants(spread_degrees)
    if math.isinf(tan_a):
        return np.ones_like(np.asarray(tan_theta, dtype=np.float64))
    return np.maximum((tan_a - np.asarray(tan_theta, dtype=np.float64)) * scale, 0.0)


def quake_light_watts(value: float, map_scale: float) -> float:
    """Watts of the point light that stands for a Quake light of `value` (the rule above)."""
    d = QUAKE_REFERENCE_UNITS * map_scale
    return value / QUAKE_FULL * d * d / POINT_VALUE_PER_WATT


def light_power(light, map_scale: float) -> float:
    """The light's power in Blender's units for its kind: watts (point, spot, area), W/m^2 (sun),
    emission strength (surface); a light with no power given is converted from its Quake value."""
    if light.power is not None:
        return float(light.power)
    if light.kind in ("point", "spot", "area"):
        return quake_light_watts(light.intensity, map_scale)
    if light.kind == "sun":  # V / 255 of full white on a face square to it
        return math.pi * float(light.intensity) / QUAKE_FULL
    return float(light.intensity) / QUAKE_FULL  # surface: radiance V / 255


#: ericw-tools' LF_SCALE: the inverse formulas give L at this many units
QUAKE_FALLOFF_SCALE = 128.0
#: 'delay' values: the falloff formulas of a Quake light
QUAKE_FALLOFFS = {0: "linear", 1: "inverse", 2: "inverse square", 3: "none", 4: "local minlight",
                  5: "inverse square from 128 units"}
#: units: distances below this count as this (the formulas' pole at the light)
QUAKE_NEAREST = 0.1


def quake_light_value(delay: int, light: float, wait: float, falloff: float, dist_units):
    """V(d): a Quake light's value at `dist_units` (array) before the angle and the colour (the
    module docstring; 0..255 is dark to full white)."""
    d = np.maximum(np.asarray(dist_units, dtype=np.float64), QUAKE_NEAREST)
    if delay in (3, 4):
        return np.full_like(d, float(light))
    if delay == 0 and falloff > 0:
        return np.where(d < falloff, float(light) * (1.0 - d / falloff), 0.0)
    x = float(wait) * d
    if delay == 1:
        return float(light) * QUAKE_FALLOFF_SCALE / x
    if delay == 2:
        return float(light) * (QUAKE_FALLOFF_SCALE / x) ** 2
    if delay == 5:
        return float(light) * (QUAKE_FALLOFF_SCALE / (x + QUAKE_FALLOFF_SCALE)) ** 2
    return np.maximum(float(light) - x, 0.0)  # 0: linear


def quake_angle(anglescale: float, cos_theta):
    """A = (1 - a) + a cos(theta) where the face looks toward the light, 0 elsewhere."""
    c = np.asarray(cos_theta, dtype=np.float64)
    return np.where(c > 0, (1.0 - float(anglescale)) + float(anglescale) * c, 0.0)


def is_quake_light(light) -> bool:
    """Lit by the Quake formulas: a .map's point, spot or sun light (light.quake) with no power given."""
    return bool(getattr(light, "quake", False)) and light.power is None and light.kind in ("point", "spot", "sun")
