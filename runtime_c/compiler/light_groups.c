/* One level of the bounce's shooter-group walk (core/compile/light/lm_groups.py _step) in C: for
 * a frontier of (node, receiver) pairs, the patch pairs left for the patch tests, the group links
 * and the next frontier (a near group's children), each in the NumPy path's order, each value
 * through the same operations in the same order (built with -ffp-contract=off), so the answers are
 * the reference's to the bit (tests/core/test_lm_groups.py).  GPL-3.0-or-later. */
#include "bbk_compiler.h"

/* np.maximum(x, 0.0) for a finite x */
static double pos(double x) { return x >= 0.0 ? x : 0.0; }

/* np.maximum(x, y) for finite x, y */
static double max_of(double x, double y) { return (x >= y || x != x) ? x : y; }

/* A shooter (normal n, centroid c) and a receiver (point p, normal m): rel = p - c, front = n . rel
 * (cos_s d), above = -(m . rel) (cos_r d), d2 = rel . rel, each dot summed x + y + z (detmath.dot). */
static void facing(const double *n, const double *c, const double *p, const double *m, double *front, double *above,
                   double *d2) {
    const double rel0 = p[0] - c[0], rel1 = p[1] - c[1], rel2 = p[2] - c[2];
    double f = n[0] * rel0;
    f = f + n[1] * rel1;
    f = f + n[2] * rel2;
    double a = m[0] * rel0;
    a = a + m[1] * rel1;
    a = a + m[2] * rel2;
    double d = rel0 * rel0;
    d = d + rel1 * rel1;
    d = d + rel2 * rel2;
    *front = f;
    *above = -a;
    *d2 = d;
}

void bbkc_group_step(const bbkc_group_tree *t, int64_t n, const int64_t *node, const int64_t *recv,
                     int64_t *counts, int64_t *leaf_s, int64_t *leaf_r, double *leaf_f, uint8_t *leaf_near,
                     int64_t *link_n, int64_t *link_r, double *link_f, int64_t *next_n, int64_t *next_r) {
    int64_t leaves = 0, links = 0, next = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t s = node[k], r = recv[k];
        if (s >= t->patches)
            continue;
        double front, above, d2;
        facing(t->r_normal + 3 * s, t->p_centroid + 3 * s, t->r_point + 3 * r, t->r_normal + 3 * r, &front, &above, &d2);
        d2 = max_of(d2, 1e-12);
        int near = d2 < t->p_near[s];
        near = near && (front > 0.0);
        near = near && (above > t->p_low[s]);
        double f = pos(front) * pos(above);
        f = f * t->p_area_pi[s];
        f = f / d2;
        f = f / d2;
        if (((f * t->p_strength[s] >= t->cutoff) || near) && s != r) {
            leaf_s[leaves] = s;
            leaf_r[leaves] = r;
            leaf_f[leaves] = f;
            leaf_near[leaves] = (uint8_t)near;
            leaves++;
        }
    }
    for (int64_t k = 0; k < n; k++) {
        const int64_t v = node[k], r = recv[k];
        if (v < t->patches)
            continue;
        const int64_t g = v - t->patches;
        double front, above, d2;
        facing(t->normal + 3 * g, t->centroid + 3 * g, t->r_point + 3 * r, t->r_normal + 3 * r, &front, &above, &d2);
        const double rad = t->radius[g];
        const int live = (front > 0.0) && (above > -rad);
        const double reach_r = t->far * rad;
        const int reach = d2 >= reach_r * reach_r;
        if (live && reach) {
            double f = front * pos(above);
            f = f * t->area_pi[g];
            f = f / d2;
            f = f / d2;
            if (f * t->strength[g] >= t->cutoff) {
                link_n[links] = v;
                link_r[links] = r;
                link_f[links] = f;
                links++;
            }
        } else if (live) {
            for (int64_t c = t->child_first[g]; c < t->child_first[g + 1]; c++) {
                next_n[next] = t->children[c];
                next_r[next] = r;
                next++;
            }
        }
    }
    counts[0] = leaves;
    counts[1] = links;
    counts[2] = next;
}
