/* Light's sample points moved into their faces (core/compile/light/lm_charts.py nearest_in_faces
 * and move_into_faces) in C: a point outside its face goes to the nearest point of the face's
 * boundary, then every point is pulled toward the face's centre until it lies `inset` inside every
 * edge.  The NumPy functions are the reference; every value here goes through the same operations
 * in the same order (built with -ffp-contract=off), so the points are theirs to the bit
 * (tests/core/test_lm_charts_c.py).  GPL-3.0-or-later. */
#include "bbk_compiler.h"

#include <math.h>

/* detmath.dot of two 2-vectors: x products first, then + y */
static double dot2(double a0, double a1, double b0, double b1) {
    double d = a0 * b0;
    d = d + a1 * b1;
    return d;
}

/* np.clip(x, 0.0, 1.0) for a number x (the inputs are finite: no NaN arises) */
static double clip01(double x) {
    x = x < 0.0 ? 0.0 : x;
    return x > 1.0 ? 1.0 : x;
}

void bbkc_into_faces(int64_t n, const int64_t *faces, const double *st, const double *shrink, int nearest,
                     const int64_t *edge_first, const int64_t *edge_count, const double *en, const double *eo,
                     const double *seg_a, const double *seg_b, const double *centre, double inset, double *out) {
    for (int64_t i = 0; i < n; i++) {
        const int64_t f = faces[i];
        const int64_t e0 = edge_first[f], ne = edge_count[f];
        double s0 = st[2 * i], s1 = st[2 * i + 1];
        if (nearest && ne > 0) {
            int outside = 0;
            for (int64_t e = e0; e < e0 + ne && !outside; e++)
                outside = dot2(en[2 * e], en[2 * e + 1], s0, s1) < eo[e] - 0.0;
            if (outside) {
                /* the nearest of the edges' nearest points; the first of ties */
                double best = 0.0, b0 = s0, b1 = s1;
                for (int64_t e = e0; e < e0 + ne; e++) {
                    const double pa0 = seg_a[2 * e], pa1 = seg_a[2 * e + 1];
                    const double ab0 = seg_b[2 * e] - pa0, ab1 = seg_b[2 * e + 1] - pa1;
                    double len2 = dot2(ab0, ab1, ab0, ab1);
                    len2 = len2 > 1e-300 ? len2 : 1e-300;
                    const double t = clip01(dot2(s0 - pa0, s1 - pa1, ab0, ab1) / len2);
                    const double q0 = pa0 + t * ab0, q1 = pa1 + t * ab1;
                    const double d2 = dot2(q0 - s0, q1 - s1, q0 - s0, q1 - s1);
                    if (e == e0 || d2 < best) {
                        best = d2;
                        b0 = q0;
                        b1 = q1;
                    }
                }
                s0 = b0;
                s1 = b1;
            }
        }
        /* move_into_faces: q = c + k (p - c), k the largest <= 1 (times shrink) keeping inset inside */
        const double c0 = centre[2 * f], c1 = centre[2 * f + 1];
        double k = shrink ? shrink[i] : 1.0;
        if (ne > 0) {
            double low = INFINITY;
            for (int64_t e = e0; e < e0 + ne; e++) {
                const double a = dot2(en[2 * e], en[2 * e + 1], c0, c1) - eo[e] - inset;
                const double b = dot2(en[2 * e], en[2 * e + 1], s0 - c0, s1 - c1);
                const double limit = b < 0.0 ? a / -b : INFINITY;
                low = limit < low ? limit : low;
            }
            k = k < low ? k : low;
        }
        k = clip01(k);
        out[2 * i] = c0 + k * (s0 - c0);
        out[2 * i + 1] = c1 + k * (s1 - c1);
    }
}
