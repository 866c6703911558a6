/* Convex polygons split by planes (core/geometry.py split_polygons) in C: each polygon by its own
 * plane, given its vertices' distances, into the part in front and the part behind, a new vertex
 * where an edge crosses the plane (put exactly on an axial plane).  The NumPy function is the
 * reference; every new vertex goes through the same operations in the same order (built with
 * -ffp-contract=off), so the pieces are its pieces to the bit (tests/core/test_split_c.py).
 * GPL-3.0-or-later. */
#include "bbk_compiler.h"

#include <math.h>

static int side_of(double d, double eps) { return d > eps ? 1 : (d < -eps ? -1 : 0); }

void bbkc_split_polygons(int64_t m, int64_t v, const double *verts, const int64_t *counts, const double *dist,
                         const double *normals, const double *dists, double eps, double *front, int64_t *nf,
                         double *back, int64_t *nb) {
    for (int64_t p = 0; p < m; p++) {
        const int64_t k = counts[p] < 0 ? 0 : (counts[p] > v ? v : counts[p]); /* never past the row */
        const double *pv = verts + 3 * v * p, *pd = dist + v * p, *n = normals + 3 * p;
        double *fo = front + 6 * v * p, *bo = back + 6 * v * p;
        int64_t f = 0, b = 0;
        double lo = INFINITY, hi = -INFINITY;
        int nan = 0; /* NumPy's min and max are NaN when a distance is: then neither whole test holds */
        for (int64_t i = 0; i < k; i++) {
            nan |= pd[i] != pd[i];
            lo = pd[i] < lo ? pd[i] : lo;
            hi = pd[i] > hi ? pd[i] : hi;
        }
        if (!nan && (lo >= -eps || hi <= eps)) { /* wholly on one side (or on the plane): whole in front, else behind */
            double *out = lo >= -eps ? fo : bo;
            for (int64_t i = 0; i < 3 * k; i++)
                out[i] = pv[i];
            if (lo >= -eps)
                f = k;
            else
                b = k;
        } else {
            /* the axis of an axial plane: the one nonzero component, +-1 */
            int axis = -1, nonzero = (n[0] != 0.0) + (n[1] != 0.0) + (n[2] != 0.0);
            for (int c = 0; c < 3; c++)
                if (nonzero == 1 && (n[c] == 1.0 || n[c] == -1.0))
                    axis = c;
            for (int64_t i = 0; i < k; i++) {
                const int64_t j = i + 1 < k ? i + 1 : 0;
                const int s = side_of(pd[i], eps), sj = side_of(pd[j], eps);
                const double *a = pv + 3 * i;
                if (s >= 0) {
                    fo[3 * f] = a[0], fo[3 * f + 1] = a[1], fo[3 * f + 2] = a[2];
                    f++;
                }
                if (s <= 0) {
                    bo[3 * b] = a[0], bo[3 * b + 1] = a[1], bo[3 * b + 2] = a[2];
                    b++;
                }
                if (s != 0 && sj != 0 && s != sj) {
                    const double *q = pv + 3 * j;
                    const double t = pd[i] / (pd[i] - pd[j]);
                    double mid[3];
                    for (int c = 0; c < 3; c++)
                        mid[c] = a[c] + t * (q[c] - a[c]);
                    if (axis >= 0)
                        mid[axis] = dists[p] * n[axis];
                    for (int c = 0; c < 3; c++) {
                        fo[3 * f + c] = mid[c];
                        bo[3 * b + c] = mid[c];
                    }
                    f++;
                    b++;
                }
            }
        }
        nf[p] = f;
        nb[p] = b;
    }
}
