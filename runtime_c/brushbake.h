/* brushbake.h -- the brushbake level run-time in plain C99: load a compiled level (.bbk), find the
 * leaf of a point, trace rays and box hulls, sweep spheres, cylinders, boxes and convex hulls by
 * plane shifting, ask the potentially visible set, and cull a camera's view by the PVS, the
 * frustum or portals.
 *
 * Copy brushbake.h and brushbake.c into your engine; they need nothing beyond libc.  The file
 * format is docs/FORMAT.md; the answers are those of brushbake's Python run-time (core/runtime/),
 * which stays the reference: the same operations in the same order, so on an IEEE 754 machine
 * compiled without contraction of a * b + c into fused multiply-adds (gcc/clang: -ffp-contract=off;
 * x86-64 without -march=native never fuses) the answers are bit for bit the Python's.
 *
 * Memory: bbk_load copies the file into one block it allocates, with the query scratch space; no
 * query allocates.  A level's queries share that scratch: call them on one level from one thread
 * at a time (load the level once per thread to trace from several threads at once).
 *
 * Every function that can fail returns an int: BBK_OK (0) or one of the BBK_ERR_ codes below.
 * A hostile or corrupt file gives an error code from bbk_load, never a crash, an endless loop or a
 * read outside the buffer: bbk_load checks everything docs/FORMAT.md's "What a reader checks" lists,
 * exactly what brushbake's Python reader (exporters/native.py) checks.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#ifndef BRUSHBAKE_H
#define BRUSHBAKE_H

#include <stddef.h>
#include <stdint.h>

/* BBK_API marks the functions a shared library exports: building brushbake.c into a Windows DLL,
 * define BBK_BUILD_DLL (brushbake's own build does); everywhere else it is empty. */
#if defined(_WIN32) && defined(BBK_BUILD_DLL)
#define BBK_API __declspec(dllexport)
#else
#define BBK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define BBK_FORMAT_MAJOR 1   /* the major version of the .bbk format this loader reads */
#define BBK_MAX_TREE_DEPTH 512
#define BBK_MAX_HULLS 32

/* error codes (bbk_error_name gives each one's name) */
enum {
    BBK_OK = 0,
    BBK_ERR_NOMEM,       /* malloc failed */
    BBK_ERR_MAGIC,       /* not a .bbk file */
    BBK_ERR_VERSION,     /* a major version this loader was not written for */
    BBK_ERR_TRUNCATED,   /* shorter than its header and table, or than its header says */
    BBK_ERR_HEADER,      /* header sizes, file size or alignment wrong */
    BBK_ERR_CHECKSUM,    /* header or section CRC-32 does not match */
    BBK_ERR_FLAGS,       /* a required flag this loader does not know */
    BBK_ERR_TABLE,       /* a section entry: bad or repeated tag, sizes, place */
    BBK_ERR_LAYOUT,      /* sections overlap, or padding is not zero */
    BBK_ERR_MISSING,     /* a required section is missing (or only some of an optional group) */
    BBK_ERR_RECORD,      /* a section's record size or count is wrong */
    BBK_ERR_COUNT,       /* arrays of one object disagree on its count */
    BBK_ERR_FLOAT,       /* NaN or infinite values */
    BBK_ERR_PLANE,       /* a normal not of length 1, planes not in exact flip pairs */
    BBK_ERR_INDEX,       /* an index or range out of bounds */
    BBK_ERR_TREE,        /* a node graph that is not a tree */
    BBK_ERR_DEPTH,       /* a tree deeper than BBK_MAX_TREE_DEPTH */
    BBK_ERR_HULLS,       /* hull count, hull table and onion tree disagree, stray solid bits */
    BBK_ERR_BOUNDS,      /* a box whose mins exceed its maxs */
    BBK_ERR_NAME,        /* a name outside its text, or not UTF-8 */
    BBK_ERR_VIS,         /* visibility sections corrupt */
    BBK_ERR_ARGUMENT,    /* a query's argument is invalid (NULL, not finite, bad shape) */
    BBK_ERR_NO_HULL,     /* the level has no such hull */
    BBK_ERR_NO_VIS,      /* the level was baked without visibility */
    BBK_ERR_INTERNAL,    /* a bound the loader proved was exceeded: a bug, please report */
    BBK_ERR_NO_PORTALS,  /* the level was baked without culling portals (the portal mode needs them) */
    BBK_ERR_COUNT_OF_CODES
};

typedef struct bbk_level bbk_level;

typedef struct bbk_info {
    uint16_t version_major, version_minor;
    uint32_t planes, nodes, leaves, leaf_faces, faces, vertices, brushes, hulls;
    uint32_t onion_nodes, onion_leaves;   /* 0, 0: no box hulls */
    uint32_t bevel_nodes, bevel_leaves;   /* 0, 0: baked without bevels */
    uint32_t clusters;                    /* visibility clusters; 0: baked without visibility */
    uint32_t max_depth;                   /* deepest of the trees, nodes on a root-to-leaf path */
    double world_bounds[2][3];            /* mins, maxs */
} bbk_info;

/* Load a level from `size` bytes at `data` (any alignment; the bytes are copied, so the caller may
 * free them afterwards).  On success *out is the level (free it with bbk_free) and BBK_OK is
 * returned; otherwise *out is NULL, and when `message` is not NULL a one-line reason (NUL
 * terminated, at most message_size bytes) is written there. */
BBK_API int bbk_load(const void *data, size_t size, bbk_level **out, char *message, size_t message_size);
BBK_API void bbk_free(bbk_level *level);
BBK_API const char *bbk_error_name(int code);
BBK_API void bbk_get_info(const bbk_level *level, bbk_info *info);
/* hull h's box (relative to the character's reference point) and its name (UTF-8, not NUL
 * terminated: *length bytes) */
BBK_API int bbk_hull_box(const bbk_level *level, uint32_t hull, double box[2][3]);
BBK_API int bbk_hull_name(const bbk_level *level, uint32_t hull, const char **name, uint32_t *length);

/* ---- points ---------------------------------------------------------------------------------- */

/* The leaf of the point tree holding p (a point on a plane goes to the front side). */
BBK_API uint32_t bbk_point_leaf(const bbk_level *level, const double p[3]);
/* *solid = 1 when p (a box hull's reference point for hull >= 1) is solid for the hull; solids are
 * open: a point within 1e-7 m of a plane is solid only where it is solid on both sides. */
BBK_API int bbk_point_solid(const bbk_level *level, uint32_t hull, const double p[3], int *solid);

/* ---- swept traces (find first transition through the point tree or the onion tree) ----------- */

enum { BBK_RAY_E = 0, BBK_RAY_S = 1, BBK_RAY_E2S = 2, BBK_RAY_S2E = 3 };

typedef struct bbk_transition {
    int32_t kind;   /* BBK_RAY_E (all empty), _S (all solid), _E2S, _S2E */
    int32_t plane;  /* the plane crossed at the transition, facing the start's side; -1 without */
    double t;       /* where along start -> end (1 for RAY_E, 0 for RAY_S) */
} bbk_transition;

typedef struct bbk_hit {
    double fraction;    /* where the reference point stops: 1 for a miss, 0 for a solid start */
    double point[3];    /* where it stops (exactly `end` for a miss) */
    double normal[3];   /* the hit plane's normal facing the start; zero for a miss or solid start */
    double impact[3];   /* shapes: the shape's point touching the plane (= point for traces) */
    int32_t plane;      /* the hit plane's index, -1 for a miss or a solid start */
    int32_t start_solid;
    int32_t hit;
    int32_t nodes_visited; /* plane shifting: nodes the walk visited; 0 for traces */
} bbk_hit;

/* find_first_transition for hull `hull` (0: the point tree, bit 0; h >= 1: the onion tree, bit h). */
BBK_API int bbk_find_first_transition(const bbk_level *level, uint32_t hull, const double start[3],
                              const double end[3], bbk_transition *out);
/* A swept trace of the hull's reference point from start to end.  With `retry`, a start found
 * solid is retried from 1e-3 m back along the motion (a start resting on a surface hits at t = 0
 * with that plane).  brushbake's queries retry for box hulls (hull >= 1). */
BBK_API int bbk_trace(const bbk_level *level, uint32_t hull, const double start[3], const double end[3],
              int retry, bbk_hit *out);

/* ---- plane shifting through the beveled tree (the point tree when the level has none) -------- */

enum { BBK_SHAPE_POINT = 0, BBK_SHAPE_SPHERE = 1, BBK_SHAPE_CYLINDER = 2, BBK_SHAPE_BOX = 3, BBK_SHAPE_HULL = 4 };

typedef struct bbk_shape {
    int32_t kind;     /* BBK_SHAPE_ */
    int32_t reserved;
    double radius;    /* sphere, cylinder */
    double height;    /* cylinder: stands on its reference point, z from 0 to height */
    double half[3];   /* box: half extents, centred on the reference point */
    const double *points;  /* hull: the convex hull of point_count points (x, y, z after each other), */
    size_t point_count;    /* relative to the reference point (which need not be inside); >= 1 */
} bbk_shape;

BBK_API int bbk_shift_trace(const bbk_level *level, const bbk_shape *shape, const double start[3],
                    const double end[3], bbk_hit *out);
/* (bbk_shift_trace_many computes the shape's support for every plane once per call, into the
 * level's scratch: a hull of K points then costs K products per plane, not per node visited) */

/* ---- the slide mover (core/runtime/move.py: Quake III's PM_SlideMove / PM_StepSlideMove) -------- */

#define BBK_MAX_CLIP_PLANES 64

typedef struct bbk_move_settings {
    int32_t max_clip_planes;  /* 3 to BBK_MAX_CLIP_PLANES; Quake III: 5 */
    int32_t max_bumps;        /* traces per slide, >= 1; Quake III: 4 */
    double step_height;       /* m: the highest ledge a character walks up (18/32) */
    double ground_normal_z;   /* a plane with normal z at least this is ground (0.7) */
    double overclip;          /* velocity clipping factor, >= 1 (1.001) */
    double surface_gap;       /* m: the gap kept to a hit plane (1/1024) */
    double ground_probe;      /* m: the ground check's trace down (0.25/32) */
    double nudge_speed;       /* m/s: the push out of a plane hit twice (1/32) */
    double into_epsilon;      /* m/s: a velocity runs into a plane below this (0.1/32) */
} bbk_move_settings;

typedef struct bbk_move_result {
    double position[3];       /* where the reference point ends */
    double velocity[3];       /* the velocity after clipping */
    double ground_normal[3];  /* the ground check's plane normal (zero when nothing is below) */
    int32_t on_ground;        /* the ground check found walkable ground */
    int32_t clip_planes;      /* planes hit (the seed planes not counted) */
    int32_t stepped;          /* the step path was taken */
    int32_t blocked;          /* hit a plane too steep to stand on, or stopped dead */
    int32_t start_solid;      /* a trace started in solid: the character did not move */
    int32_t reverted;         /* the end was solid and the move was undone (never with right traces) */
} bbk_move_result;

BBK_API void bbk_move_defaults(bbk_move_settings *settings);
/* One character for dt seconds: the hull's reference point at `position` moves with `velocity`,
 * colliding and sliding; ground_normal (NULL: none) is the ground it stands on, e.g. the previous
 * result's.  bbk_step_slide_move also climbs steps.  settings NULL: the defaults. */
BBK_API int bbk_slide_move(const bbk_level *level, uint32_t hull, const double position[3], const double velocity[3],
                   double dt, const bbk_move_settings *settings, const double *ground_normal, bbk_move_result *out);
BBK_API int bbk_step_slide_move(const bbk_level *level, uint32_t hull, const double position[3], const double velocity[3],
                        double dt, const bbk_move_settings *settings, const double *ground_normal,
                        bbk_move_result *out);
/* n moves: positions, velocities n x 3, dt n; ground_normals n x 3 or NULL (a row of NaN: none);
 * step 0: bbk_slide_move, 1: bbk_step_slide_move */
BBK_API int bbk_move_many(const bbk_level *level, uint32_t hull, size_t n, const double *positions,
                  const double *velocities, const double *dt, const bbk_move_settings *settings,
                  const double *ground_normals, int step, bbk_move_result *out);

/* ---- visibility (levels baked with a PVS) ---------------------------------------------------- */

/* the visibility cluster of the point's leaf, or -1 (no row: sees and is seen by everything) */
BBK_API int bbk_point_cluster(const bbk_level *level, const double p[3], int32_t *cluster);
/* may cluster a see cluster b (-1 on either side: yes) */
BBK_API int bbk_cluster_can_see(const bbk_level *level, int32_t a, int32_t b, int *visible);
BBK_API int bbk_can_see_points(const bbk_level *level, const double a[3], const double b[3], int *visible);
/* The leaves the point's PVS holds, in increasing order, into out[0..capacity); *count is how many
 * there are (more than capacity: only the first capacity are written). */
BBK_API int bbk_visible_leaves(const bbk_level *level, const double p[3], uint32_t *out, uint32_t capacity,
                       uint32_t *count);

/* ---- batches (what the Python binding calls): n queries, arrays packed row after row ---------- */

BBK_API int bbk_point_leaf_many(const bbk_level *level, size_t n, const double *points, int32_t *leaves);
BBK_API int bbk_point_solid_many(const bbk_level *level, uint32_t hull, size_t n, const double *points,
                         uint8_t *solid);
/* segments: n x (start xyz, end xyz); out must not overlap the inputs (answers are written as the
 * batch goes, while later rows are still to be read) */
BBK_API int bbk_trace_many(const bbk_level *level, uint32_t hull, size_t n, const double *segments, int retry,
                   bbk_hit *out);
/* bbk_trace_many for starts and ends held apart (n x 3 each): the same answers, with no packing */
BBK_API int bbk_trace_many_split(const bbk_level *level, uint32_t hull, size_t n, const double *starts,
                         const double *ends, int retry, bbk_hit *out);
/* bbk_trace_many_split with each field of the answers in an array of its own, as array libraries
 * hold them (brushbake's NumPy binding): fraction n, point and normal n x 3, plane n (int64),
 * start_solid and hit n bytes (0 or 1); the same values as the bbk_hit fields.  None may overlap
 * the inputs. */
BBK_API int bbk_trace_many_arrays(const bbk_level *level, uint32_t hull, size_t n, const double *starts,
                          const double *ends, int retry, double *fraction, double *point, double *normal,
                          int64_t *plane, uint8_t *start_solid, uint8_t *hit);
BBK_API int bbk_shift_trace_many(const bbk_level *level, const bbk_shape *shape, size_t n,
                         const double *segments, bbk_hit *out);
/* find_first_transition for n segments (light's shadow rays: only the kind and t matter).  Like
 * every query it uses the level's scratch, so two threads need two loaded levels. */
BBK_API int bbk_find_first_transition_many(const bbk_level *level, uint32_t hull, size_t n, const double *segments,
                                   bbk_transition *out);
/* pairs: n x (a xyz, b xyz) */
BBK_API int bbk_can_see_points_many(const bbk_level *level, size_t n, const double *pairs, uint8_t *visible);

/* ==== camera queries (core/runtime/cull.py, docs/CAMERA.md): what a view must draw ============= */

/* A camera is 8 doubles: x, y, z, yaw, pitch, hfov, aspect, far (metres, degrees; Z up, yaw 0 looks
 * along +X, yaw 90 along +Y, pitch up is positive; hfov the horizontal field of view, aspect =
 * width / height, far the far plane's distance).  Accepted: finite, |x|, |y|, |z| <= 1e5, pitch in
 * [-90, 90], hfov in [1, 179], aspect in [0.05, 20], far in [0.001, 200000]; else BBK_ERR_ARGUMENT.
 * Modes, each a superset of what the camera truly sees, each inside the one before:
 *   BBK_CULL_PVS      the empty leaves in the PVS row of the eye's cluster (needs a PVS);
 *   BBK_CULL_FRUSTUM  those whose boxes meet the view frustum (exact for boxes);
 *   BBK_CULL_PORTAL   those the portal walk reaches, within the frustum's (needs culling portals).
 * An eye without a cluster draws every empty leaf in PVS mode and the frustum's answer in portal
 * mode.  The leaves drawn are those of brushbake's NumPy run-time (the same arithmetic in the same
 * order), for every camera. */
enum { BBK_CULL_PVS = 0, BBK_CULL_FRUSTUM = 1, BBK_CULL_PORTAL = 2 };
#define BBK_CULL_BACK_TO_FRONT 1   /* flags: leaves far to near (DRAW-BSP-TREE), for transparent surfaces */

typedef struct bbk_cull_stats {
    uint32_t leaves, faces, clusters;  /* drawn: leaves, their faces, distinct visibility clusters */
    int32_t camera_leaf;               /* the eye's leaf */
    int32_t camera_cluster;            /* the eye's cluster, -1: none */
    int32_t overflow;                  /* portal mode: the walk gave the frustum's answer (budget, or no cluster) */
} bbk_cull_stats;

/* One camera: the leaves drawn into leaves[0..leaf_capacity) (increasing, or back to front with
 * BBK_CULL_BACK_TO_FRONT) and their faces, leaf by leaf, into faces[0..face_capacity); stats (may
 * be NULL) says how many there are (more than a capacity: only the first are written). */
BBK_API int bbk_cull(const bbk_level *level, const double camera[8], int mode, int flags, uint32_t *leaves,
             uint32_t leaf_capacity, uint32_t *faces, uint32_t face_capacity, bbk_cull_stats *stats);
/* n cameras (n x 8): drawn (n x leaves bytes, 1 = drawn; may be NULL) and stats (n; may be NULL) */
BBK_API int bbk_cull_many(const bbk_level *level, size_t n, const double *cameras, int mode, uint8_t *drawn,
                  bbk_cull_stats *stats);

#ifdef __cplusplus
}
#endif
#endif /* BRUSHBAKE_H */
