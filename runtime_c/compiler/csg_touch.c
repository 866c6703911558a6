/* Which near brushes may cut each face of a brush (core/compile/trees/csg.py _touching_brushes)
 * in C: a face is out of reach of brush j when one of j's planes has the whole face on or in front
 * of it with some vertex beyond eps (its least distance above -eps and its greatest above eps).
 * The distances are detmath.matmul's, ((x nx + y ny) + z nz) - d (built with -ffp-contract=off),
 * so the answers are the NumPy function's to the bit (tests/core/test_csg_touch_c.py); a plane that
 * separates ends the brush's test early.  GPL-3.0-or-later. */
#include "bbk_compiler.h"
#include "bbkc_vec.h"

void bbkc_touching(int64_t n, const double *verts, const int64_t *face_count, const int64_t *face_first,
                   const int64_t *near_first, const int64_t *near, const int64_t *plane_first,
                   const int64_t *plane_count, const double *normals, const double *dists, double eps,
                   uint8_t *out) {
    int64_t at = 0, vrow = 0;
    for (int64_t i = 0; i < n; i++) {
        for (int64_t f = face_first[i]; f < face_first[i + 1]; f++) {
            const double *v = verts + 3 * vrow;
            const int64_t nv = face_count[f];
            for (int64_t k = near_first[i]; k < near_first[i + 1]; k++) {
                const int64_t j = near[k];
                uint8_t touching = 1;
                for (int64_t q = plane_first[j]; q < plane_first[j] + plane_count[j] && touching; q++) {
                    const double *nq = normals + 3 * q;
                    double lo = 0.0, hi = 0.0;
                    int nan = 0; /* NumPy's extremes are NaN when a distance is: no plane separates then */
                    for (int64_t r = 0; r < nv; r++) {
                        const double d = plane_dist(v + 3 * r, nq, dists[q]);
                        nan |= d != d;
                        lo = (r == 0 || d < lo) ? d : lo;
                        hi = (r == 0 || d > hi) ? d : hi;
                    }
                    touching = nan || !(lo > -eps && hi > eps);
                }
                out[at++] = touching;
            }
            vrow += nv;
        }
    }
}
