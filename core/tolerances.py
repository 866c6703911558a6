"""Every tolerance brushbake uses, in one place, each with its unit and the reason for its value.

All geometry is float64 in metres (Z up).  A Quake unit is 1/32 m, so 1e-5 m is 1/3000 of a unit:
far below anything a level designer can place, far above float64 rounding on coordinates up to
MAX_COORDINATE (about 1e-11 m there).
"""

from .units import QUAKE_UNIT


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

#: m. Queries (core/runtime/query.py point_solid, core/runtime/trace.py traces): a point within
#: this of a node's plane is *on* it.  Solids are open sets, so a point on a plane is solid only
#: where it is solid on both sides, and a segment lying in a plane (both ends on it) is solid only where both sides
#: are: a box resting on a floor, or under a ceiling that lies on the same plane as another
#: brush's top, is touching, not inside.  Far above the ~1e-12 m rounding of a point where a
#: previous trace stopped (it may land a hair inside), far below anything a player could see, and
#: below the 1e-5 m band the ground-truth tests leave unjudged.
TOUCH_EPSILON = 1e-7

#: m. Plane shifting (core/runtime/shift.py): a swept shape whose start lies within this of a
#: shifted plane while moving into it is *touching* that plane (a hit at t = 0 with its normal), not
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

# --- Brushes from planes and meshes (core/model/brushes.py) ---

#: m. A vertex found by intersecting three planes is kept when it lies behind every other plane
#: by at least -VERTEX_EPSILON, and belongs to any plane it lies on within it.  Far tighter than
#: ON_EPSILON: two planes 1e-4 rad apart (a leaning edge bevel) cut a sliver face whose vertices
#: are all within ON_EPSILON of both, so distance cannot say which face a vertex is on, but
#: the triple that made it can.  Cramer's rule is good to ~1e-12 m at these sizes.
VERTEX_EPSILON = 1e-9

#: unitless. Three unit normals whose determinant (the triple product in Cramer's rule) is at most
#: this in size meet in no single point: two of them are parallel, or all three lie in one plane.
#: A smaller determinant would put the 'vertex' 1e12 times the plane distances away, far beyond
#: MAX_COORDINATE.  Used for brush vertices and Listing 4 (onion.arbitrary_leaf_point).
PARALLEL_DETERMINANT = 1e-12

#: unitless. A brush is closed when the area-weighted sum of its face normals (exactly zero for a
#: closed polytope) is at most this fraction of its surface area.  Rounding of the face areas
#: leaves ~1e-15; an open set of planes leaves the area of its missing side, a large fraction.
CLOSURE_TOLERANCE = 1e-6

#: m^2. The surface area the closure test divides by is at least this, so a brush of (almost) no
#: area is judged against a positive bound.  Far below MIN_POLYGON_AREA.
CLOSURE_AREA_FLOOR = 1e-12

#: unitless. Two face normals of a mesh brush whose components all differ by less than this (and
#: whose plane distances by less than MESH_CONVEXITY_TOLERANCE) are one plane: a subdivided side.
#: Loose, like MESH_CONVEXITY_TOLERANCE, because mesh data is float32 (1e-7 relative) and the
#: normal of a small face made from it is good to about 1e-6.
MESH_NORMAL_MERGE = 1e-5

# --- Scene files (core/formats/scene_json.py) and Blender objects (addon/bridge.py) ---

#: unitless (the units of the file's normal). A plane whose normal, as written, is no longer than
#: this has no direction: 'a zero normal', a designer's mistake reported by name, rather than a
#: direction made up from rounding noise.
MIN_NORMAL_LENGTH = 1e-6

#: Most planes one brush may have (a .map brush's plane lines, a .json brush's "planes" entries
#: or the distinct face planes of its "mesh").  Building a brush intersects every triple of its
#: planes, so the cost grows with the cube of this (a 2,000-plane .map brush, 190 KB, took 33 s);
#: 128 is far beyond what editors make (a 64-sided cylinder has 66 planes; the maps in maps/
#: have at most 31).
MAX_BRUSH_PLANES = 128

#: m^2. A mesh face whose (doubled) vector area is at most this has no plane: it is skipped when
#: counting a mesh's distinct face planes (the count only guards MAX_BRUSH_PLANES).
DEGENERATE_FACE_AREA = 1e-12

#: decimal places (of unit normal components and of metres). Counting a mesh's distinct face
#: planes, faces whose rounded (normal, distance) agree to this many places count once: a 1 mm
#: grid, coarse enough that the faces of a subdivided side (float32 data) fall together.  The
#: count only decides whether a mesh exceeds MAX_BRUSH_PLANES; the brush itself merges its planes
#: with MESH_NORMAL_MERGE and MESH_CONVEXITY_TOLERANCE.
PLANE_COUNT_DECIMALS = 3

#: m. How far an object's world-space vertex may be from the vertex its kept planes make and the
#: planes still count as the object's own (an object imported from a .map keeps its exact planes
#: while unedited).  Float32 mesh coordinates are good to ~1e-5 m at 100 m; any real edit (a
#: grab, a scale) moves vertices much further.
PLANES_MATCH_TOLERANCE = 1e-4

# --- Configuration spaces (core/compile/trees/expand.py) ---

#: m. Candidate facet directions are one direction when their angle times the size of the
#: expanded brush is below this: a brush edge leaning 1e-6 rad off an axis (float32 mesh data)
#: makes an edge bevel that nearly repeats a face or axial plane, and the two would be a
#: duplicate or a sliver thinner than ON_EPSILON.  Every plane's offset is the exact support of
#: the sum in its own direction, so a merge moves the surface by at most this much.
DIRECTION_MERGE_DISTANCE = ON_EPSILON

#: unitless. An edge bevel's normal is edge x axis; when its length (the sine of the angle between
#: the unit edge and the axis) is at most this, the edge runs along the axis and makes no bevel
#: (the axial planes already bound it).  Normalising a shorter cross product would magnify its
#: rounding (~1e-16 a component) into a direction of noise; at 1e-9 it is still good to ~1e-7.
PARALLEL_EDGE_SINE = 1e-9

#: m. The size a merge tolerance (DIRECTION_MERGE_DISTANCE / size) divides by is at least this,
#: so a brush of no extent cannot divide by zero.  Far below MIN_EDGE_LENGTH: no real brush is
#: that small.
MERGE_SIZE_FLOOR = 1e-9

#: 1/m (and 1/unit for directions). Edges are deduplicated on a key (unit direction, foot point)
#: multiplied by this and rounded: a grid of 1e-6 (MIN_EDGE_LENGTH), so the two copies of one edge
#: (one per face, with different rounding) get the same key.  Written as a scale, not a step,
#: because the key has always been computed by multiplying.
EDGE_KEY_SCALE = 1e6

# --- The tree builder (core/compile/trees/bsp.py) ---

#: unitless. A face's bounding sphere radius is grown by this fraction, so rounding in its centre
#: and distances (~1e-16 relative) never leaves a vertex outside the sphere the splitter test
#: trusts.
RADIUS_SLACK = 1e-9

#: m. A distance this close to +-ON_EPSILON may classify otherwise under another rounding
#: (products of coordinates up to MAX_COORDINATE differ by a few 1e-11 m between a matrix
#: product and a stacked one); such items are classified again by the exact product.
RECLASSIFY_DIST_BAND = 1e-9

#: unitless. The same for the sign of a dot product of two unit normals (rounding: about 1e-16).
RECLASSIFY_DOT_BAND = 1e-12

#: unitless. CHOOSE-DIVIDING-POLYGON lowers MinRelation until some candidate's relation exceeds it;
#: it stops lowering at this (real relations are at least 1 / faces, and a node where every
#: relation is 0 must stop somewhere).
MIN_RELATION_FLOOR = 1e-12

# --- Probe points of leaves (core/compile/trees/probes.py) ---

#: m. How far in front of a leaf face (or behind a splitter face) a probe point is placed, tried
#: in turn: each must exceed ON_EPSILON so the point is classified off the plane, and smaller
#: steps serve thin leaves.  Detail leaves (the pipeline) try the first two at each face in turn;
#: the onion tree tries all three at a leaf's first face, then falls back to Listing 4.
PROBE_STEPS = (1e-3, 1e-4, 2e-5)

# --- Portals (core/compile/vis/portals.py) ---

#: m. Portals (core/compile/vis/portals.py): a winding's vertex closer than this to a node's plane is
#: *on* it while cells are cut.  Portals must follow the tree's planes exactly: with ON_EPSILON a
#: vertex 1e-5 m from a plane that meets the winding at a shallow angle (sliver cells between
#: nearly parallel brush faces, common in big maps) is left uncut, and the portal then reaches
#: 1e-5 / sin(angle) m (millimetres on e3m4) past its cell.  Vertices made by cutting planes
#: land within ~1e-12 m of them at the coordinates of a level, so 1e-8 m keeps four orders of
#: margin; the slivers it makes are cleaned at the end (MIN_EDGE_LENGTH, MIN_POLYGON_AREA).
PORTAL_EPSILON = 1e-8

# --- Visibility: portal flow (core/compile/vis/pvs_flow.py, pvs_winding.py) ---

#: m. Portal flow (core/compile/vis/pvs_flow.py, pvs_winding.py): a winding clipped to one side of a
#: plane keeps everything up to this far on the other side, so rounding in the clipped vertices
#: (~1e-12 m) can never remove a line of sight; 1e-6 m loosens the PVS by nothing measurable.
FLOW_CLIP_MARGIN = 1e-6

#: m. Portal flow: a vertex within this of a plane is on it when testing whether a plane separates
#: a source from a pass portal, or whether a portal lies in front of another; a plane whose
#: normal (before normalising, a cross product of lengths in metres) is shorter than 1e3 times
#: this is not trusted as a separator and skipped (skipping only adds visibility).
FLOW_PLANE_EPSILON = 1e-9

# --- Camera queries (core/runtime/camera.py, cull.py, portal_walk.py) ---

#: m. Camera culling is conservative: a box or a portal vertex this far outside a frustum plane
#: still counts as inside, and every side plane the portal walk builds from the eye through a
#: clipped portal edge is moved this far outward.  Rounding in the clipped vertices is ~1e-12 m at
#: the coordinates of a level, so 1e-6 m keeps six orders of margin and draws nothing measurable
#: more (docs/CAMERA.md, 'Conservative at every portal edge').
CULL_MARGIN = 1e-6

#: m. The portal walk: an eye within this of a portal's plane cannot build side planes through the
#: portal (they would be the portal's own plane); the walk passes the portal with the frustum it
#: has, unnarrowed (widening only).
CULL_EYE_EPSILON = 1e-6

#: The portal walk (view-plane coordinates x' = lateral / depth, dimensionless): every support
#: value of a projected portal is widened by this, relatively and absolutely (s + slack * (1 + |s|)).
#: Projection rounds at ~1e-16 relative, and a vertex's ~1e-12 m over a depth of at least a
#: millimetre is 1e-9; 1e-7 covers both with room, and at 100 m is a hundredth of a millimetre.
CULL_SUPPORT_SLACK = 1e-7

#: m. The .bbk reader: a culling portal's vertex may lie this far off its plane (the compiler puts
#: them within ~1e-12 m; anything further is a corrupt file, whose walk would be meaningless).
CULL_PORTAL_ON_PLANE = 1e-4

# --- movement (core/runtime/move.py: Quake III's collide-and-slide) ---

#: m. After a hit the character stops this far from the hit plane, measured along its normal
#: (Quake's DIST_EPSILON, 0.03125 units = 1/1024 m, placing the impact on the empty side).
#: Traces report the exact contact point; stopping *on* the surface would make the next trace
#: start on it, where rounding (~1e-15 m) and the compiler's plane merging (DIST_EPSILON,
#: 1e-5 m) can put the start inside.  1/1024 m keeps every later start two orders of magnitude
#: clear of both, is far below anything visible or any gap a designer builds, and is exactly
#: Quake's value, so Quake-tuned step and ground distances keep their meaning.
SURFACE_GAP = 1.0 / 1024.0

#: m. How far below the reference point the ground check looks (Quake III PM_GroundTrace: 0.25
#: units).  Must exceed SURFACE_GAP / ground_normal_z (the vertical gap a character resting on
#: the steepest walkable slope keeps): 1.4e-3 m at 0.7, against 7.8e-3 m here.
GROUND_PROBE = 0.25 * QUAKE_UNIT

#: m/s. A velocity whose component into a clip plane is at least this does not interact with
#: the plane (Quake's 0.1 units/s).  Positive so that velocity left over from an overclip
#: (0.1% of the speed, away from the plane) is not clipped again.
INTO_EPSILON = 0.1 * QUAKE_UNIT

#: m/s. Speed added along a plane's normal when the same plane (dot > 0.99) is hit twice in one
#: move (Quake's 1 unit/s nudge, which frees characters caught on non-axial planes).
NUDGE_SPEED = 1.0 * QUAKE_UNIT

#: unitless. Two plane normals with a dot product above this are "the same plane" (Quake's 0.99).
SAME_PLANE_DOT = 0.99

#: m. A stepped move must get this much further (horizontally) than the plain one to be taken;
#: it keeps rounding from choosing the step path when both go equally far.
STEP_GAIN_EPSILON = 1e-6

#: unitless. A crease direction (cross product of two unit normals) shorter than this comes from
#: two opposed planes: the character is wedged and stops.
CREASE_EPSILON = 1e-9

# --- ellipsoid sliding (core/runtime/ellipsoid.py, thesis chapter 6) ---

#: m. After a correction the ellipsoid's centre lies this far beyond the moved polygon plane.
#: It must exceed the rounding of the side values (~1e-15 m for coordinates up to 100 m) so a
#: corrected end is not seen crossing the same plane again, and the compiler's plane merging
#: (DIST_EPSILON, 1e-5 m: the tree's face lies up to that far from the brush's plane); 1e-4 m
#: is invisible and equals the collision tests' tolerance band.
COLLISION_SKIN = 1e-4

#: m. Extra margin on the swept box that gathers polygons, beyond the ellipsoid's radii, so
#: faces whose cell only touches the box (and the skin) are not missed.
GATHER_MARGIN = 1e-3

#: m. An edge shorter than this has no direction: the ellipsoid's perpendicular planes skip it.
ELLIPSOID_MIN_EDGE = 1e-9

# --- plane shifting shapes (core/runtime/shift.py) ---

#: m. A direction shorter than this is treated as zero when a sphere's support point is taken
#: (only guards the division: any real direction is far longer).
SUPPORT_MIN_LENGTH = 1e-300

#: m. A cylinder's support direction whose horizontal part is shorter than this points straight
#: up or down: the support point is the cap's centre.
CYLINDER_HORIZONTAL_EPSILON = 1e-12

# --- bevels (core/compile/trees/bevel.py, Melax section 5) ---

#: unitless. A cell face whose outward normal has z >= this 'tops' the cell (about 18 degrees
#: from level), so section 8's flat-top plane is not needed there.
FLAT_TOP_LEVEL_Z = 0.95

#: m. The world box used for unbounded cells is the level's world bounds grown by this much, so
#: no real face of a solid cell lies on it.
CELL_BOX_MARGIN = 1.0

#: m. A solid cell's vertex within this of one of its planes lies on it.  Cell vertices are where
#: three split planes meet, each of which may sit ON_EPSILON off the face it came from, hence two.
BEVEL_ON_EPSILON = 2 * ON_EPSILON

#: unitless. Slack on cosines and angle ratios when bevels decide whether two planes are within the
#: bevel angle, so that exactly the angle (90 degrees: cosine 0) never flips by rounding.
BEVEL_COSINE_SLACK = 1e-9

#: m. Seam bevels (core/compile/trees/bevel_seams.py) find the solid cell across a split face with a
#: probe this far from the face's vertex toward the face's centre (at most half way)...
SEAM_PROBE_ALONG = 1e-3
#: m. ...and this far across the face's plane: the probe lands across the split, inside the other
#: cell even where the solid is a wedge as thin as atan(ACROSS / ALONG), 0.06 degrees.
SEAM_PROBE_ACROSS = 1e-6

#: unitless (unit vectors' sums and differences). A direction shorter than this has none: two
#: faces are opposite (a zero-thickness sliver) and make no edge or vertex bevel.
BEVEL_MIN_DIRECTION = 1e-9

#: unitless. Three corner planes whose normals' determinant is below this are (nearly) dependent
#: and meet in no single point: corner_reach skips the triple.
CORNER_DETERMINANT = 1e-9

#: unitless. A corner point counts as inside the other planes (n.x <= 1, normalised) up to this.
CORNER_FEASIBLE_SLACK = 1e-9

# --- crowd slices (core/compile/crowds/slices.py, core/runtime/crowd.py) ---

#: m. The finest height unit a slice stores (2^-10 m, about 1 mm): slice depths are 16-bit counts
#: of a unit 2^-k m, the finest power of two (at most this) for which the world's height, plus the
#: avatar and two resolutions, fits in 65,535 units (docs/FORMAT.md, CRHD).  Heights are rounded
#: outwards (solid tops up, undersides down), so the unit only ever makes the slices stricter.
SLICE_FINEST_UNIT = 2.0 ** -10

#: m. A cell's column counts a brush as present where the cell's centre lies within this of the
#: brush grown by the avatar and the cell (its boundary included): touching a wall is blocked,
#: which only makes the slices more conservative.  Rounding of the plane sums is ~1e-12 m.
SLICE_TOUCH = 1e-7

#: m. The box brushes are grown by for the columns is this tall (below the feet), not flat: the
#: exact expansion (core/compile/trees/expand.py) of some brushes by a box of zero height has coincident
#: facets and fails (e3m4).  It lifts solid tops by this much, far below one height unit.
SLICE_HULL_DEPTH = 1e-6

#: unitless. A plane whose normal's z component is below this (in magnitude) is vertical for the
#: column rasteriser: it bounds the column in x and y, never in z.  Axial planes are snapped to
#: exact zeros (AXIAL_SNAP_EPSILON); a tilt of 1e-12 would put its z crossing a million km away.
SLICE_VERTICAL_NZ = 1e-12

#: cells. Most cells one slice grid may have (x times y): the slices are stored by change, but the
#: crowd's sweep keeps about 10 bytes per cell (value, place, start: 640 MiB at 2^26 cells), and a
#: 1.0 file's depths 2 bytes per cell and kept slice.  A finer cell on a large world is refused
#: with the grid's size, before any work.
MAX_SLICE_CELLS = 1 << 26

#: m. How far an avatar's feet given to query --moves may be from the slices' ground under them
#: (before) and from the slices' landing height (after) and still be the same standing position:
#: a few height units of rounding, far below any step.
FEET_MATCH = 4 * SLICE_FINEST_UNIT

# --- the level file reader (exporters/native.py) ---

#: unitless. How far a stored plane normal's length may be from 1.  Normals are made unit in
#: float64 (error ~1e-16); 1e-6 only catches normals that were never normalised or were damaged.
NORMAL_LENGTH_TOLERANCE = 1e-6

# --- others ---

#: m^2. Overlay patches (addon/overlays.py) with less area than this are not drawn (slivers a
#: split leaves; nothing a designer could see).
OVERLAY_MIN_AREA = 1e-12

#: unitless. Three .map plane points whose edges' sine is below this lie on one line and define no
#: plane (core/formats/mapfile.py): far below any angle an editor writes.
COLLINEAR_SINE = 1e-12

#: unitless (m^2 scale of an edge x vertex cross product). A separating plane whose normal is
#: shorter than this is not trusted and skipped (core/compile/vis/pvs_winding.py): that only adds
#: visibility.  A thousand times FLOW_PLANE_EPSILON.
FLOW_MIN_NORMAL = FLOW_PLANE_EPSILON * 1e3

# --- lightmaps (core/compile/light/lm_charts.py, lm_direct.py, lm_radiosity.py, lightmap.py) ---

#: luxels. A face's extent within this of a luxel grid line is taken as on it, so a face 4 m
#: long at 0.5 m luxels gets 8 luxels and not 9 from a rounding of 1e-15.
LUXEL_GRID_SLACK = 1e-6

#: m. A luxel's sample point is moved at least this far inside every edge of its face (luxels
#: whose centre lies off the face or under a touching brush are moved, not sampled there).
LUXEL_INSET = 1e-3

#: m. Sample points are lifted this far off their face before shadow rays start, far above
#: TOUCH_EPSILON (1e-7 m) so a ray never starts on its own face, far below a luxel (0.5 m).
LUXEL_LIFT = 1e-3

#: m. A shadow ray toward a point of an area light stops this short of the light's surface, and
#: the points whose clusters make the light's PVS lie this far in front of it: a light laid flush on a
#: ceiling (as lamps are) is not found inside the ceiling's solid nor shadowed by its face.
#: Equal to LUXEL_LIFT, far above TOUCH_EPSILON.
AREA_LIGHT_GAP = 1e-3

#: unitless (normal components) and m (plane distance). A polygon of a Blender brush object lies
#: on the brush plane (addon/emission.py: which faces an emissive material covers) when its
#: normal and distance are this close to the plane's.  Brush planes of one brush are far apart
#: (no two share a normal); loose for float32 meshes and a .map brush's kept planes.
EMISSIVE_PLANE_MATCH = 1e-3

#: lightmap units (1 = the texture as painted). A light whose unshadowed contribution to a luxel
#: is below this (a tenth of one 8-bit step in linear light) casts no ray there; a patch shooting
#: less than this to a receiver casts none either.  Inverse-square light never reaches zero, so
#: some cut is needed; this one is invisible in an 8-bit page.
LIGHT_CUTOFF = 0.1 / 255.0

#: unitless. The radiosity's progressive refinement stops when the unshot power (sum over patches
#: of area x unshot radiance, brightest channel) falls below this fraction of the power emitted
#: and reflected at first (Settings.light_threshold's default).
BOUNCE_THRESHOLD = 1e-3

#: lightmap units. A patch's shot to one receiver below this casts no ray.  Far below
#: LIGHT_CUTOFF: a receiver sums thousands of shooters' small shots over the bounces, and a cut
#: near LIGHT_CUTOFF lost 3% of a closed room's light (the furnace test).  For a scene dimmer than
#: white it is scaled down with the scene (core/compile/light/lm_radiosity.py bounce_cutoff).
BOUNCE_CUTOFF = 0.01 / 255.0

#: unitless (d^2 / A). A receiver nearer a shooting patch than this (squared distance over the
#: patch's area) gets the exact form factor of the patch polygon; farther ones the point form
#: factor cos_i cos_j A / (pi d^2), within about 1% of it there (a square seen from 4 sides away).
#: Likewise a patch this near a point or spot light gets the light's mean over its polygon (the
#: solid angle over the area), a farther one cos / d^2 at its centre (lm_direct).
FORM_FACTOR_NEAR = 16.0

#: radii. A bounce's shooters far from a receiver go as one group (core/compile/light/lm_groups.py):
#: a group of patches links to a receiver at least this many times its radius (the farthest reach
#: of its patches from its centroid) away, where its point form factor is within about 1% of the
#: sum of its patches' (a patch square seen from FORM_FACTOR_NEAR's 4 sides is 5.7 radii away).
#: 0: no groups, one ray per patch as for direct light.
BOUNCE_GROUP_FAR = 6.0

#: unitless. The Cycles comparison (core/compile/light/lm_compare.py) measures a luxel darker than this
#: fraction of the mean light against this floor, not against its own light (deep shadow, where
#: both bakes are near 0 and a relative error means nothing).
RMSE_FLOOR = 0.05

#: m (at Quake's scale: 0.1 unit; scaled with the scene's map_scale). The seal check's qbsp rule
#: (core/compile/vis/sliver_seal.py): qbsp's SplitBrush does not split a brush that reaches less than
#: 0.1 unit across a node's plane (ericw-tools qbsp/brushbsp.cc), so such a tip is empty on the
#: plane's near side in the trees those compilers build.  Also the margin by which an axial face
#: must split a node to be qbsp's mid split's choice (CheckPlaneAgainstVolume is that SplitBrush).
SLIVER_REACH = 0.1 * QUAKE_UNIT
#: m. Below this a vertex lies on a plane for the sliver rule: vertices come from plane
#: intersections, so a vertex truly on a plane is within ~1e-12 m of it; qbsp's own test is 1e-6 unit.
SLIVER_ON_PLANE = 3e-8
#: m (at Quake's scale: 1024 units; scaled with map_scale). ericw-tools' default maxnodesize: qbsp's
#: BuildTree_r splits a node whose bounds exceed it on some axis by the mid split (axial planes
#: first) and smaller nodes by the qbsp3 heuristic (structural sides before detail ones).  The
#: qbsp seal rule (core/compile/vis/sliver_seal.py) asks which of the two could cut a tip.
QBSP_MAX_NODE_SIZE = 1024 * QUAKE_UNIT

#: m. BasePortalVis (core/compile/vis/pvs_flow.py) decides most (plane, portal) pairs by the portal's
#: bounding sphere, widened by this: far above the rounding of a vertex's distance at world scale
#: (~1e-10 m), so a pair it decides is decided as the vertices would; the rest read the vertices.
REACH_MARGIN = 1e-6

#: m. Where clipping a lightmap polygon by a plane finds more than two crossings (only possible
#: when vertices lie within rounding of the plane: a polygon in it, or collinear vertices along an
#: edge in it), distances under this are taken as 0 and the row is clipped again
#: (core/compile/light/lm_patches.py clip_batch).  Rounding of metre-scale coordinates is about 1e-15 m;
#: far below LUXEL_LIFT (1e-3 m), so no lifted point is ever snapped onto a plane.
CLIP_SNAP = 1e-9

#: A sky brush's bounds are grown by this (m) before the sunlight's test of which points lie inside
#: it looks only at the points in that box: far above the rounding of the brush's vertices and of
#: the points' plane distances (about 1e-12 m), so a point left out lies well outside the brush
#: and no plane test could have put it inside.
SKY_BOX_MARGIN = 1e-3
