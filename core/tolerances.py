"""Every tolerance brushbake uses, in one place, each with its unit and the reason for its value.

All geometry is float64 in metres (Z up).  A Quake unit is 1/32 m, so 1e-5 m is 1/3000 of a unit:
far below anything a level designer can place, far above float64 rounding on coordinates up to
MAX_COORDINATE (about 1e-11 m there).
"""

#: m. A point closer than this to a plane is *on* it.  Used when classifying polygon vertices and
#: brush vertices against planes.  Vertices made by intersecting three planes or by splitting an
#: edge land within ~1e-12 m of their planes, so 1e-5 m leaves six orders of margin while still
#: being smaller than any real feature (a 1/32 m grid step is 3e-2 m).
ON_EPSILON = 1e-5

#: unitless. Two unit normals whose components all differ by less than this are the same
#: direction in the plane table.  Quake's qbsp uses 1e-5 on float32 normals; float64 lets us be
#: tighter so slightly tilted hand-made planes stay distinct.
NORMAL_EPSILON = 1e-7

#: m. Two planes with the same normal whose distances differ by less than this are one plane.
#: Equal to ON_EPSILON so that 'on the same plane' means the same thing everywhere.
DIST_EPSILON = ON_EPSILON

#: unitless. A normal whose other two components are both below this is snapped to its axis, so
#: axial planes are exactly axial (exact axis tests, no sliver cells from 1e-12 tilts).  Tested on
#: the *off-axis* components (linear in the tilt), not on 1 - |n_axis| (quadratic: 1e-9 there
#: would snap tilts up to 4.5e-5 rad and move a plane 100 m from the origin by 4.5 mm).  At 1e-9
#: a snap moves a plane 100 m from the origin by at most 1e-7 m, far below ON_EPSILON.
AXIAL_SNAP_EPSILON = 1e-9

#: m. Coordinates beyond this are rejected as 'huge': a level is at most 100 km across.  Beyond it
#: the float64 spacing (1e-11 m at 1e5 m) starts to eat into ON_EPSILON after a few operations.
MAX_COORDINATE = 1.0e5

#: m. Half size of the box assumed to bound the world (Golodetz's HALFWORLDBOUND), and of the
#: base polygon a brush face is clipped from.  Twice MAX_COORDINATE so every legal point is inside.
WORLD_HALF_EXTENT = 2.0 * MAX_COORDINATE

#: m^3. A brush with less volume than this (a 1 mm cube) has no volume: a designer's mistake,
#: or planes that nearly coincide.
MIN_BRUSH_VOLUME = 1e-9

#: m. Vertices of one polygon closer than this are merged; shorter edges are degenerate.
MIN_EDGE_LENGTH = 1e-6

#: m^2. A polygon with less area than this is dropped as a sliver after clipping or splitting.
MIN_POLYGON_AREA = 1e-10

#: m. Mesh vertices closer than this are welded when a Blender mesh becomes a brush
#: (Blender's own 'Merge by distance' default is 1e-4 m).
MESH_WELD_DISTANCE = 1e-6

#: m. How far a mesh vertex may stick out in front of another face's plane before the mesh is
#: called non-convex.  Larger than ON_EPSILON because meshes come from float32 Blender data
#: (about 1e-7 relative, so 1e-5 m at 100 m).
MESH_CONVEXITY_TOLERANCE = 1e-4

#: m. Queries (core/query.py point_solid, core/trace.py traces): a point within this of a node's
#: plane is *on* it.  Solids are open sets, so a point on a plane is solid only where it is solid
#: on both sides, and a segment lying in a plane (both ends on it) is solid only where both sides
#: are: a box resting on a floor, or under a ceiling that lies on the same plane as another
#: brush's top, is touching, not inside.  Far above the ~1e-12 m rounding of a point where a
#: previous trace stopped (it may land a hair inside), far below anything a player could see, and
#: below the 1e-5 m band the ground-truth tests leave unjudged.
TOUCH_EPSILON = 1e-7

#: m. Plane shifting (core/shift.py): a swept shape whose start lies within this of a shifted
#: plane while moving into it is *touching* that plane (a hit at t = 0 with its normal), not
#: starting inside the grown solid.  Far above the ~1e-12 m rounding of a shape resting where a
#: previous trace stopped, far below anything a player could see.
SHIFT_CONTACT_EPSILON = 1e-7

#: m. Traces (core/runtime/trace.py): how far back along the motion a start found solid is moved
#: for the robustness retry; larger than the
#: rounding that can put a start resting on a surface just inside it (~1e-12 m), smaller than any
#: real gap a character could be stuck in.
RETRY_BACKOFF = 1e-3
#: unitless and m. The retry's hit counts as within the back-off up to this relative and absolute
#: slack: t * (length + back-off) rounds by a few ulps either way, and a touching start must not
#: turn into a solid one by rounding.
RETRY_SLACK, RETRY_SLACK_ABS = 1e-9, 1e-12
