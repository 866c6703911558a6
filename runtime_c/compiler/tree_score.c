/* The BSP builder's splitter scoring (core/compile/trees/bsp.py TreeBuilder._score_items) in C:
 * every candidate plane of every item of a level against the item's faces, each face classified
 * vertex by vertex (on, front, back, spanning), the five counts per candidate, and the candidate
 * of the lowest |front - back| + split_weight * splits.  The NumPy reference reaches the same
 * classes by bounds and spheres where they decide and by the exact distances where they do not;
 * here every distance is the exact one, x * nx + y * ny + z * nz - d in that order (detmath.matmul,
 * built with -ffp-contract=off), so the classes, the facings on the plane and the choices are the
 * reference's to the bit (tests/core/test_tree_score_c.py).  GPL-3.0-or-later. */
#include "bbk_compiler.h"
#include "bbkc_vec.h"

/* The class of one face against one plane: bit 1 some vertex in front (beyond eps), bit 2 some
 * vertex behind; 0 on the plane, 3 spanning (no vertex after that can change it). */
static int8_t classify(const double *v, int64_t count, const double *n, double dist, double eps) {
    int8_t code = 0;
    for (int64_t k = 0; k < count && code != 3; k++) {
        const double d = plane_dist(v + 3 * k, n, dist);
        code |= (int8_t)((d > eps) | ((d < -eps) << 1));
    }
    return code;
}

int bbkc_score_items(const bbkc_score_input *in, int8_t *cls, uint8_t *same, int64_t *best) {
    const int64_t width = in->width;
    for (int64_t i = 0; i < in->items; i++) {
        const int64_t r0 = in->s_first[i], r1 = r0 + in->s_count[i], cands = in->c_count[i];
        double best_score = 0.0;
        best[i] = 0;
        for (int64_t w = 0; w < cands; w++) {
            const int64_t p = in->table[i * width + w];
            const double *n = in->normals + 3 * p;
            const double dist = in->dists[p];
            int64_t count[5] = {0, 0, 0, 0, 0}; /* spanning, front, behind, on facing its way, on facing away */
            for (int64_t r = r0; r < r1; r++) {
                const int64_t f = in->s_ids[r];
                const int8_t code = classify(in->pool + 3 * in->v_first[f], in->v_count[f], n, dist, in->on_epsilon);
                cls[r * width + w] = code;
                uint8_t facing = 0;
                if (code == 0) {
                    const double *m = in->normals + 3 * in->s_planes[r];
                    facing = dot3(m, n) > 0.0;
                    count[facing ? 3 : 4]++;
                } else {
                    count[code == 3 ? 0 : code]++;
                }
                same[r * width + w] = facing;
            }
            if (cands > 1) {
                const int64_t front = count[1] + count[3], back = count[2] + count[4];
                const double score = (double)(front >= back ? front - back : back - front)
                                     + in->split_weight * (double)count[0];
                if (w == 0 || score < best_score) {
                    best_score = score;
                    best[i] = w;
                }
            }
        }
    }
    return BBKC_OK;
}
