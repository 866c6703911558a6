"""Units every layer shares.  brushbake works in metres, Z up; Quake's maps are in units."""

#: m. One Quake unit: a .map is read at 1/32 m per unit by default, so a 56-unit Quake player is
#: 1.75 m tall and Quake's 18-unit step is 0.5625 m.
QUAKE_UNIT = 1.0 / 32.0
