/* brushbake's compiler kernels: hot loops of the compiler (not of the engines' run-time, which is
 * runtime_c/brushbake.h + brushbake.c).  C99, libc only, no threads inside: the Python side calls
 * these through ctypes (which lets go of the GIL) from threads or forked workers.  Every kernel
 * gives the NumPy reference's answers bit for bit (built with -ffp-contract=off: no fused
 * multiply-adds; sums in the reference's order).  GPL-3.0-or-later. */
#ifndef BBK_COMPILER_H
#define BBK_COMPILER_H

#include <stddef.h>
#include <stdint.h>

/* BBK_API marks the functions a shared library exports (a Windows DLL is built with
 * BBK_BUILD_DLL defined); everywhere else it is empty.  As in runtime_c/brushbake.h. */
#ifndef BBK_API
#if defined(_WIN32) && defined(BBK_BUILD_DLL)
#define BBK_API __declspec(dllexport)
#else
#define BBK_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define BBKC_VERSION 16

/* The full portal flow's read-only inputs (core/compile/vis/pvs_merged.py, class _Flow): D directed
 * portals, C clusters, K k-DOP directions.  Arrays are C-contiguous; bit rows are little-endian
 * packed (bit j of a row is byte j >> 3, bit j & 7), as np.packbits(..., bitorder="little"). */
typedef struct bbkc_flow {
    int64_t num_portals;      /* D */
    int64_t num_clusters;     /* C */
    int64_t width;            /* M: vertices a portal winding row holds (padded) */
    int64_t kdop;             /* K */
    const double *windings;   /* (D, M, 3) */
    const int64_t *count;     /* (D,) vertex counts */
    const double *normal;     /* (D, 3) plane facing into dst */
    const double *dist;       /* (D,) */
    const int64_t *plane;     /* (D,) plane table index (plane ^ 1: the flipped plane) */
    const int64_t *src;       /* (D,) cluster left */
    const int64_t *dst;       /* (D,) cluster entered */
    const double *dirs;       /* (D, K, 3) k-DOP directions in each portal's plane */
    const double *full;       /* (D, K) each whole portal's extents */
    const double *centre;     /* (D, 3) each portal's centre (the reach kernels' spheres) */
    const int64_t *first;     /* (C + 1,) CSR: portals leaving cluster c are leaving[first[c]:first[c+1]] */
    const int64_t *leaving;   /* (D,) */
    const uint8_t *flood_bits; /* (D, flood_stride) portal rows of the fast flood */
    const uint8_t *might_cl;  /* (D, cl_stride) clusters of each portal's flood */
    const uint8_t *test_cl;   /* (D, cl_stride) flood clusters, or the final row once done */
    int64_t flood_stride;     /* bytes of a flood row, (D + 7) / 8 */
    int64_t cl_stride;        /* bytes of a cluster row, (C + 7) / 8 */
    double clip_margin;       /* FLOW_CLIP_MARGIN */
    double plane_epsilon;     /* FLOW_PLANE_EPSILON */
    double min_normal;        /* FLOW_MIN_NORMAL */
    double growth_epsilon;    /* GROWTH_EPSILON */
    double wait_key_step;     /* WAIT_KEY_STEP */
    int64_t max_growth;       /* MAX_GROWTH */
    int64_t order_k;          /* ORDER_K */
    int64_t max_winding;      /* MAX_WINDING */
} bbkc_flow;

/* What one source's flow counted. */
typedef struct bbkc_flow_counts {
    int64_t expanded;         /* states expanded */
    int64_t clipped;          /* targets clipped */
    int64_t most_growths;     /* the most growths of any state */
} bbkc_flow_counts;

#define BBKC_OK 0
#define BBKC_ERR_MEMORY (-1)
#define BBKC_ERR_ARGUMENT (-2)

/* The merged flow from directed portal `source` to the end (pvs_merged.py's _Wave for one source):
 * writes its cluster row (cl_stride bytes, packed) into row and its counts into counts.  Reads
 * only f; safe to call from several threads at once. */
BBK_API int bbkc_flow_source(const bbkc_flow *f, int64_t source, uint8_t *row, bbkc_flow_counts *counts);
/* bbkc_flow_source for n sources one after another on the same work buffers (nothing of size D
 * made or cleared per source): row t (cl_stride bytes) and counts[t] are those of a call of its
 * own for sources[t]. */
BBK_API int bbkc_flow_sources(const bbkc_flow *f, const int64_t *sources, int64_t n, uint8_t *rows,
                              bbkc_flow_counts *counts);

/* The fast mode (core/compile/vis/pvs_flow.py).  simple_flood for sources [s0, s1): flood row s
 * (num_portals bytes, 0 or 1) holds portal q when allowed[s][q] and q leaves a cluster reached from
 * dst[s] through such portals; allowed and flood are (D, D) bytes.  first/leaving: the portals
 * leaving each cluster (CSR), dst: the cluster each enters. */
BBK_API int bbkc_flood(int64_t num_portals, int64_t num_clusters, const int64_t *first, const int64_t *leaving,
                       const int64_t *dst, const uint8_t *allowed, int64_t s0, int64_t s1, uint8_t *flood);
/* cluster_rows before its AND with the transpose, for clusters [c0, c1): row c (num_clusters
 * bytes) holds c, and for every portal p leaving c, dst[p] and dst[q] of every q with
 * portal_vis[p][q]. */
BBK_API int bbkc_cluster_rows(int64_t num_portals, int64_t num_clusters, const int64_t *first,
                              const int64_t *leaving, const int64_t *dst, const uint8_t *portal_vis, int64_t c0,
                              int64_t c1, uint8_t *rows);

/* BasePortalVis (pvs_flow.base_portal_vis): the (P, P) tables of which undirected portal u reaches
 * beyond eps in front of (above) and behind (below) plane a, for planes [a0, a1), decided as the
 * reference decides them (bounding spheres given, then the vertices); then the (D, D) table of
 * allowed (source, portal) pairs for sources [s0, s1), D = 2P. */
BBK_API int bbkc_plane_portal_reach(int64_t num, int64_t width, const double *windings, const int64_t *count,
                                    const double *normal, const double *dist, const double *centre,
                                    const double *radius, double eps, int64_t a0, int64_t a1, uint8_t *above,
                                    uint8_t *below);
BBK_API int bbkc_allowed(int64_t num_directed, const uint8_t *above, const uint8_t *below, int64_t s0, int64_t s1,
                         uint8_t *allowed);

/* The same fast mode on bit rows (vis_flood.c), with no (D, D) byte table: the reach tables as
 * 64-bit words and their transposes for planes [a0, a1) (a0 a multiple of 64; every array zeroed
 * by the caller; `words` words a row, stored column by column: word k of row r at [k * num + r]); the flood of sources [s0, s1) as packed rows, with the clusters each enters
 * (packed) and its portal count; the one-way cluster rows from those clusters. */
BBK_API int bbkc_reach_bits(int64_t num, int64_t width, const double *windings, const int64_t *count,
                            const double *normal, const double *dist, const double *centre, const double *radius,
                            double eps, int64_t a0, int64_t a1, int64_t words, uint64_t *above, uint64_t *below,
                            uint64_t *above_t, uint64_t *below_t);
/* bbkc_reach_bits computing only the planes a with rep[a] == a (rep[a] <= a: the first plane with
 * the same normal and dist, bit for bit; a portal's reach depends on the plane alone, so the
 * caller copies the others' rows from their rep's, then makes the transposes whole with
 * bbkc_bits_transpose: the tables are bbkc_reach_bits's).  bbkc_bits_transpose: rows u of [u0,
 * u1) (u0 a multiple of 64) of the transpose of a num x num bit table, bit a of out[u] = bit u of
 * in[a]. */
BBK_API int bbkc_reach_bits_rep(int64_t num, int64_t width, const double *windings, const int64_t *count,
                                const double *normal, const double *dist, const double *centre,
                                const double *radius, double eps, const int64_t *rep, int64_t a0, int64_t a1,
                                int64_t words, uint64_t *above, uint64_t *below, uint64_t *above_t,
                                uint64_t *below_t);
BBK_API int bbkc_bits_transpose(int64_t num, int64_t words, const uint64_t *in, int64_t u0, int64_t u1,
                                uint64_t *out);
BBK_API int bbkc_flood_bits(int64_t num_portals, int64_t num_clusters, const int64_t *first, const int64_t *leaving,
                            const int64_t *dst, int64_t words, const uint64_t *above, const uint64_t *below,
                            const uint64_t *above_t, const uint64_t *below_t, int64_t s0, int64_t s1,
                            int64_t flood_stride, uint8_t *flood, int64_t cl_stride, uint8_t *might, int64_t *sizes);
BBK_API int bbkc_cluster_rows_bits(int64_t num_clusters, const int64_t *first, const int64_t *leaving,
                                   const int64_t *dst, int64_t cl_stride, const uint8_t *might, int64_t c0,
                                   int64_t c1, uint8_t *rows);

/* One pass of a crowd tick (crowd_pass.c; core/runtime/crowd.py Crowd._pass): n avatars, the
 * avatar numbers `who` (NULL: 0 to n - 1) and their directions `dirs` (n,); place and base per
 * avatar, moved in place; step (8 * stride,) Walk.step; occ and place_base per place, tags of
 * tag_bytes (1, 2 or 4) bytes; kb and tag work rows of n.  With `refused` (who NULL): writes the
 * refused avatars there and returns their count; else returns how many moved; -1: a bad tag size. */
BBK_API int64_t bbkc_crowd_pass(int64_t n, const int64_t *who, const uint8_t *dirs, int64_t *place, void *base,
                                const int32_t *step, int64_t stride, void *occ, const void *place_base,
                                int tag_bytes, int32_t *kb, void *tag, int64_t *refused);

/* The Walk's eight steps from n places (crowd_walk.c; core/runtime/crowd.py Walk._steps): cells
 * a (n,) of the padded grid (nx: its row length), value and place per cell, the slice's height tk,
 * rises_above = tk - height, the step; writes ground[at + i] and step[d * stride + at + i], and
 * per direction d the risers' indices i (ascending) at risers[d * n ...], riser_count[d] of them. */
BBK_API int bbkc_walk_steps(int64_t n, const int64_t *a, const int32_t *value, const int32_t *place, int32_t tk,
                            int32_t rises_above, int32_t step_u, int64_t nx, int64_t at, int64_t stride,
                            uint16_t *ground, int32_t *step, int32_t *risers, int64_t *riser_count);

BBK_API int bbkc_version(void);


/* Radiosity's pair selection for one block of shooters x receivers (light_pairs.c; the NumPy
 * reference is core/compile/light/lm_radiosity.py _pairs).  Per-row terms come computed. */
typedef struct bbkc_pair_block {
    int64_t shooters;          /* S */
    int64_t receivers;         /* R */
    const double *s_normal;    /* (S, 3) */
    const double *s_centroid;  /* (S, 3) */
    const double *s_dot;       /* (S,) n_s . c_s */
    const double *s_cc;        /* (S,) c_s . c_s */
    const double *s_near;      /* (S,) FORM_FACTOR_NEAR * area */
    const double *s_low;       /* (S,) -sqrt(area) */
    const double *s_area_pi;   /* (S,) area / pi */
    const double *s_strength;  /* (S,) brightest unshot channel */
    const int64_t *s_id;       /* (S,) patch index */
    const double *r_normal;    /* (R, 3) */
    const double *r_point;     /* (R, 3) */
    const double *r_dot;       /* (R,) n_r . p_r */
    const double *r_pp;        /* (R,) p_r . p_r */
    const int64_t *r_id;       /* (R,) patch index */
    double cutoff;
} bbkc_pair_block;

/* The pairs (shooter row, receiver row) worth a ray, in row-major order, their point form factors
 * and whether each is near (the exact form factor is the caller's); the outputs hold S * R.
 * Returns how many. */
BBK_API int64_t bbkc_bounce_pairs(const bbkc_pair_block *b, int32_t *out_s, int32_t *out_r, double *out_f,
                                  uint8_t *out_near);

/* The bounce's shooter groups of one round (light_groups.c; the NumPy reference is
 * core/compile/light/lm_groups.py): G groups numbered after the P patches (node P + g is group g),
 * the children of group g children[child_first[g] .. child_first[g + 1]). */
typedef struct bbkc_group_tree {
    int64_t patches;             /* P */
    const double *normal;        /* (G, 3) */
    const double *centroid;      /* (G, 3) */
    const double *radius;        /* (G,) */
    const double *area_pi;       /* (G,) area / pi */
    const double *strength;      /* (G,) brightest unshot channel */
    const int64_t *child_first;  /* (G + 1,) */
    const int64_t *children;     /* nodes */
    const double *r_point;       /* (P, 3) the patches' receiver points */
    const double *r_normal;      /* (P, 3) the patches' normals */
    const double *p_centroid;    /* (P, 3) */
    const double *p_near;        /* (P,) FORM_FACTOR_NEAR * area */
    const double *p_low;         /* (P,) -sqrt(area) */
    const double *p_area_pi;     /* (P,) area / pi */
    const double *p_strength;    /* (P,) brightest unshot channel */
    double far;                  /* a group links from this many radii away */
    double cutoff;
} bbkc_group_tree;

/* One level of the walk over n (node, receiver) pairs: the patch pairs worth a ray (leaf_*, at
 * most n: point form factor, near), group links (link_*, at most n) and the next level (next_*, at
 * most n times the most children), each in frontier order; counts receives the three sizes. */
BBK_API void bbkc_group_step(const bbkc_group_tree *t, int64_t n, const int64_t *node, const int64_t *recv,
                             int64_t *counts, int64_t *leaf_s, int64_t *leaf_r, double *leaf_f, uint8_t *leaf_near,
                             int64_t *link_n, int64_t *link_r, double *link_f, int64_t *next_n, int64_t *next_r);

/* Light's sample points moved into their faces (light_charts.c; lm_charts.nearest_in_faces with
 * `nearest`, else move_into_faces): n points (faces (n,), st (n, 2) on the faces' planes, shrink
 * (n,) or NULL for 1); each face's edges are en/eo/seg_a/seg_b[edge_first[f] : + edge_count[f]]
 * (inward unit normals (E, 2), offsets (E,), end points (E, 2) twice), centre (F, 2) the faces'
 * vertex means; out (n, 2) the moved points, the NumPy functions' to the bit. */
BBK_API void bbkc_into_faces(int64_t n, const int64_t *faces, const double *st, const double *shrink, int nearest,
                             const int64_t *edge_first, const int64_t *edge_count, const double *en,
                             const double *eo, const double *seg_a, const double *seg_b, const double *centre,
                             double inset, double *out);

/* A level of the BSP builder's items to score (tree_score.c; core/compile/trees/bsp.py
 * TreeBuilder._score_items): item i has candidate planes table[i * width : + c_count[i]] and is
 * scored on the faces s_ids[s_first[i] : + s_count[i]] (their planes s_planes), face f's vertices
 * pool[v_first[f] : + v_count[f]] (rows of 3). */
typedef struct bbkc_score_input {
    int64_t items;
    int64_t width;
    const int64_t *table;     /* (items, width) plane ids */
    const int64_t *c_count;   /* (items,) */
    const int64_t *s_first;   /* (items,) */
    const int64_t *s_count;   /* (items,) */
    const int64_t *s_ids;     /* (rows,) face ids */
    const int64_t *s_planes;  /* (rows,) their planes */
    const double *pool;       /* (V, 3) */
    const int64_t *v_first;   /* (F,) */
    const int64_t *v_count;   /* (F,) */
    const double *normals;    /* (P, 3) the plane table */
    const double *dists;      /* (P,) */
    double on_epsilon;        /* ON_EPSILON */
    double split_weight;
} bbkc_score_input;

/* cls (rows, width): each face's class against each candidate (0 on, 1 front, 2 back, 3
 * spanning; columns past an item's c_count untouched); same (rows, width): for a face on the
 * plane, whether its normal points the plane's way (0 elsewhere); best (items,): the column of
 * each item's lowest |front - back| + split_weight * splits, the first of ties (0 for one
 * candidate).  Returns BBKC_OK. */
BBK_API int bbkc_score_items(const bbkc_score_input *in, int8_t *cls, uint8_t *same, int64_t *best);

/* Polygons split by planes (split.c; core/geometry.py split_polygons): m polygons of at most v
 * vertices, verts (m, v, 3) padded, counts (m,), dist (m, v) the vertices' distances, normals
 * (m, 3) and dists (m,) the planes (an axial plane's new vertices lie exactly on it), eps the side
 * threshold.  front and back (m, 2v, 3) receive each polygon's pieces (a polygon wholly on one
 * side, or on the plane, whole on that side: in front unless some vertex is behind and none in
 * front), nf and nb their vertex counts (any count, the caller drops those under 3). */
BBK_API void bbkc_split_polygons(int64_t m, int64_t v, const double *verts, const int64_t *counts,
                                 const double *dist, const double *normals, const double *dists, double eps,
                                 double *front, int64_t *nf, double *back, int64_t *nb);

/* The CSG's cutting of faces by the brushes that reach them (csg_cut.c; core/compile/trees/csg.py
 * _cut_faces and _remove_inside_batch, the reference), face by face: faces face_ids[0 .. n), face
 * f's polygon verts[vert_first[f] ..] (vert_count[f] rows of 3), its brush face_brush[f] and unit
 * normal face_normal (F, 3); the brushes that may cut it cutters[cut_first[f] .. cut_first[f + 1])
 * in brush order (those whose bounds reach the face); brush c's planes normals (B, K, 3) and dists
 * (B, K), plane_count[c] of them, its bounds grown by eps lo, hi (B, 3).  Each face's pieces go
 * out in the reference's order: piece_face (the face's place in face_ids), piece_count and
 * piece_whole (1: the face's own polygon,
 * its vertices not written) per piece, the others' vertices one after another in piece_verts
 * ((cap_verts, 3)).  Stops before a face whose pieces would not fit in cap_pieces / cap_verts;
 * returns how many faces were done (their pieces' totals in n_out[0], n_out[1]), or
 * BBKC_ERR_MEMORY. */
BBK_API int64_t bbkc_cut_faces(int64_t n, const int64_t *face_ids, const double *verts, const int64_t *vert_first,
                               const int64_t *vert_count, const int64_t *face_brush, const double *face_normal,
                               const int64_t *cut_first, const int64_t *cutters, int64_t k_max,
                               const int64_t *plane_count, const double *normals, const double *dists,
                               const double *lo, const double *hi, double eps, int64_t cap_pieces,
                               int64_t cap_verts, int64_t *piece_face, int64_t *piece_count, uint8_t *piece_whole,
                               double *piece_verts, int64_t *n_out);

/* The cell portals of a structural tree (cell_portals.c; core/compile/vis/portals.py cell_portals,
 * the reference), a depth level at a time: start with the tree (node_plane (N,), children (N, 2)
 * codes, structural (N,) bytes, the plane table, squares (N, 4, 3) each node's plane's square
 * covering the world box) and the world box's portals (n_box: verts (n_box, 4, 3), plane ids,
 * normals, dists, sides (n_box, 2)); each step does one level and returns how many nodes it did,
 * 0 once the tree is done, or BBKC_ERR_MEMORY; then size, take (verts (count, width, 3) zeroed by
 * the caller) and free.  The arrays given to start must live until free, and the tree must be one
 * (node_plane within the plane table, each node a child of one node before it, children < N):
 * core/compile/vis/cell_portals_c.py checks. */
typedef struct bbkc_cells bbkc_cells;
BBK_API bbkc_cells *bbkc_cells_start(int64_t num_nodes, const int64_t *node_plane, const int64_t *children,
                                     const uint8_t *structural, const double *plane_normals,
                                     const double *plane_dists, const double *squares, int64_t root, int64_t n_box,
                                     const double *box_verts, const int64_t *box_plane, const double *box_normals,
                                     const double *box_dists, const int64_t *box_sides, double eps);
BBK_API int64_t bbkc_cells_step(bbkc_cells *c);
/* How many nodes the next step does (0: only the last step, which sets the rest aside, is left). */
BBK_API int64_t bbkc_cells_pending(const bbkc_cells *c);
BBK_API void bbkc_cells_size(const bbkc_cells *c, int64_t *count, int64_t *width);
BBK_API void bbkc_cells_take(const bbkc_cells *c, int64_t width, double *verts, int64_t *counts, double *normals,
                             double *dists, int64_t *plane_id, int64_t *sides);
BBK_API void bbkc_cells_free(bbkc_cells *c);

/* Brushes from planes (brush_faces.c; core/model/brushes.py _batch_polytope_vertices): g brushes
 * of k unit planes each (normals (g, k, 3), dists (g, k)), only those with good[b] (the others get
 * no corners); t triples (t, 3) of plane numbers, in itertools.combinations' order.  A brush's
 * corners go to verts[b * t ...] ((g, t, 3)), the planes each lies on to member ((g, t, k) bytes),
 * their count to vcount (g,).  Returns BBKC_OK or BBKC_ERR_MEMORY. */
BBK_API int bbkc_brush_vertices(int64_t g, int64_t k, const double *normals, const double *dists,
                                const uint8_t *good, int64_t t, const int64_t *triples, double parallel_det,
                                double vertex_eps, double min_edge, double *verts, uint8_t *member,
                                int64_t *vcount);
/* The faces of those brushes (brushes.py _face_rings): for each (brush, plane) with face_ok (g, k),
 * its corners sorted counter-clockwise seen along the plane's normal (normals (g, k, 3)) by angle
 * about their mean, vertices closer than min_edge to the next dropped, written from
 * ring[ring_first[slot]] ((R, 3); a slot has room for its corners); ring_count (g, k) the vertices
 * kept (0: no face: area not above min_edge squared, or fewer than 3 left) and area (g, k) its
 * area.  Returns BBKC_OK or BBKC_ERR_MEMORY. */
BBK_API int bbkc_brush_faces(int64_t g, int64_t k, int64_t t, const double *normals, const double *verts,
                             const uint8_t *member, const int64_t *vcount, const uint8_t *face_ok,
                             const int64_t *ring_first, double min_edge, double *ring, int64_t *ring_count,
                             double *area);

/* The constants of the form factors (light_form.c): detmath.arctan2_upper's polynomial terms and
 * its angles, 2 pi, and lm_patches' CLIP_SNAP, as Python computes them. */
typedef struct bbkc_form_consts {
    double terms[12];
    double tan_pi_8, quarter_pi, half_pi, pi, two_pi, clip_snap;
} bbkc_form_consts;

/* point_polygon_form_factor (core/compile/light/lm_radiosity.py) for m points x (m, 3) with unit
 * normals n (m, 3) and polygons verts (m, width, 3) of count (m,) vertices: out (m,).  Returns
 * BBKC_OK or BBKC_ERR_MEMORY. */
BBK_API int bbkc_form_factors(int64_t m, int64_t width, const double *x, const double *n, const double *verts,
                              const int64_t *count, const bbkc_form_consts *k, double *out);

/* np.add.at(out, index, values) for rows of `width` doubles (light_sum.c): row i of values added
 * to row index[i] of out (`rows` rows), i = 0, 1, ...  BBKC_ERR_ARGUMENT, and out untouched, when
 * an index lies outside; else BBKC_OK. */
BBK_API int bbkc_add_rows(int64_t n, int64_t width, int64_t rows, const int64_t *index, const double *values,
                          double *out);

/* For each ray i whose kind[i] is `clear`, in order: f[i] times row src[i] of sent (`sent_rows` rows
 * of `width`) added to row index[i] of out (`rows` rows) -- np.add.at(out, index[c], f[c, None] *
 * sent[src[c]]) for c the clear rays (light_sum.c).  BBKC_ERR_ARGUMENT, and out untouched, when a
 * clear ray's index or src lies outside; else BBKC_OK. */
BBK_API int bbkc_add_clear(int64_t n, int64_t width, int64_t rows, int64_t sent_rows, const int64_t *index,
                           const int64_t *src, const double *f, const int8_t *kind, int8_t clear, const double *sent,
                           double *out);

/* For n brushes (csg_touch.c; core/compile/trees/csg.py _touching_brushes): their faces one after
 * another (face_first (n + 1,) into face_count, each face's vertices the next rows of verts), their
 * near brushes near[near_first[i] : near_first[i + 1]], every brush's planes normals/dists
 * [plane_first[j] : + plane_count[j]]; out, brush by brush, face by face, near brush by near brush:
 * 1 where the face is not separated from that brush by one of its planes. */
BBK_API void bbkc_touching(int64_t n, const double *verts, const int64_t *face_count, const int64_t *face_first,
                           const int64_t *near_first, const int64_t *near, const int64_t *plane_first,
                           const int64_t *plane_count, const double *normals, const double *dists, double eps,
                           uint8_t *out);

/* Tree.locate (point_locate.c; core/runtime/tree.py) for n points (n, 3) down a tree of num_nodes
 * nodes from root (a node's plane node_plane[i] of num_planes, its children node_children[2 i],
 * [2 i + 1], a negative child -1 - leaf): leaf (n,) of each, touched (n,) 1 where a point passed
 * within `touch` of a plane on its way.  BBKC_ERR_ARGUMENT, the outputs part written, when a walk
 * meets a node or a plane outside its table or outruns num_nodes (a cycle); else BBKC_OK. */
BBK_API int bbkc_locate(int64_t n, const double *points, int64_t root, int64_t num_nodes, int64_t num_planes,
                        const int64_t *node_plane, const int64_t *node_children, const double *normals,
                        const double *dists, double touch, int64_t *leaf, uint8_t *touched);

#ifdef __cplusplus
}
#endif

#endif
