/* Exact point-to-polygon form factors (core/compile/light/lm_radiosity.py
 * point_polygon_form_factor) in C: each polygon clipped to its point's front half-space
 * (lm_patches.clip_batch, Sutherland-Hodgman, vertices within clip_snap of the plane taken as on it
 * where a first pass crosses more than twice), then Lambert's sum over its edges with the angle by
 * detmath.arctan2_upper's polynomial.  The NumPy functions are the reference; every value goes
 * through the same operations in the same order (built with -ffp-contract=off), so the form
 * factors are theirs to the bit (tests/core/test_light_form_c.py).  GPL-3.0-or-later. */
#include "bbk_compiler.h"
#include "bbkc_vec.h"

#include <math.h>
#include <stdlib.h>



/* detmath.arctan2_upper for y >= 0 */
static double atan2_upper(double y, double x, const bbkc_form_consts *k) {
    const double ax = fabs(x);
    const int swap = y > ax;
    const double num = swap ? ax : y, den = swap ? y : ax;
    const double t = num / (den > 0 ? den : 1.0);
    const int big = t > k->tan_pi_8;
    double u = big ? (t - 1.0) / (t + 1.0) : t;
    u = u / (1.0 + sqrt(1.0 + u * u));
    const double u2 = u * u;
    double poly = k->terms[11];
    for (int c = 10; c >= 0; c--)
        poly = poly * u2 + k->terms[c];
    double r = 2.0 * (u * poly) + (big ? k->quarter_pi : 0.0);
    r = swap ? k->half_pi - r : r;
    return x < 0 ? k->pi - r : r;
}

/* clip_batch for one polygon (rows of 3, count vertices, dist each vertex's height): the part
 * where dist >= 0 into out (room for count + 1 rows), its vertex count, and how many edges cross */
static int64_t clip_once(const double *v, int64_t count, const double *dist, double *out, int64_t *crossings) {
    int64_t kept = 0, cross = 0;
    for (int64_t j = 0; j < count; j++) {
        const int64_t j1 = j + 1 < count ? j + 1 : 0;
        const double d0 = dist[j], d1 = dist[j1];
        const int in0 = d0 >= 0, in1 = d1 >= 0;
        if (in0) {
            if (kept <= count) {
                out[3 * kept] = v[3 * j], out[3 * kept + 1] = v[3 * j + 1], out[3 * kept + 2] = v[3 * j + 2];
            }
            kept++;
        }
        if (in0 != in1) {
            const double t = d0 / (d0 - d1);
            if (kept <= count)
                for (int c = 0; c < 3; c++)
                    out[3 * kept + c] = v[3 * j + c] + t * (v[3 * j1 + c] - v[3 * j + c]);
            kept++;
            cross++;
        }
    }
    *crossings = cross;
    return kept;
}

int bbkc_form_factors(int64_t m, int64_t width, const double *x, const double *n, const double *verts,
                      const int64_t *count, const bbkc_form_consts *k, double *out) {
    double *rel = malloc(sizeof(double) * (size_t)(3 * (width + 1) + 3));
    double *poly = malloc(sizeof(double) * (size_t)(3 * (width + 2) + 3));
    double *dist = malloc(sizeof(double) * (size_t)(width + 1));
    if (!rel || !poly || !dist) {
        free(rel), free(poly), free(dist);
        return BBKC_ERR_MEMORY;
    }
    for (int64_t i = 0; i < m; i++) {
        const int64_t cnt0 = count[i] < width ? count[i] : width;
        const double *xi = x + 3 * i, *ni = n + 3 * i, *vi = verts + 3 * width * i;
        int behind = 1, straddle = 0;
        for (int64_t j = 0; j < cnt0; j++) {
            for (int c = 0; c < 3; c++)
                rel[3 * j + c] = vi[3 * j + c] - xi[c];
            dist[j] = dot3(rel + 3 * j, ni);
            behind &= dist[j] < 0;
            straddle |= dist[j] < 0;
        }
        out[i] = 0.0;
        if (behind) /* wholly behind the point's plane (or no vertex): 0 */
            continue;
        const double *ring = rel;
        int64_t cnt = cnt0 >= 3 ? cnt0 : 0;
        if (straddle) {
            int64_t crossings;
            cnt = clip_once(rel, cnt0, dist, poly, &crossings);
            if (crossings > 2) { /* vertices within rounding of the plane: again, those on it */
                for (int64_t j = 0; j < cnt0; j++)
                    dist[j] = fabs(dist[j]) <= k->clip_snap ? 0.0 : dist[j];
                cnt = clip_once(rel, cnt0, dist, poly, &crossings);
                if (crossings > 2)
                    cnt = 0;
            }
            cnt = cnt >= 3 ? cnt : 0;
            ring = poly;
        }
        double total = 0.0;
        for (int64_t j = 0; j < cnt; j++) {
            const double *a = ring + 3 * j, *b = ring + 3 * (j + 1 < cnt ? j + 1 : 0);
            double c[3];
            cross3(a, b, c);
            const double cn = sqrt(dot3(c, c));
            double term = 0.0;
            if (cn > 0)
                term = atan2_upper(cn, dot3(a, b), k) * dot3(ni, c) / cn;
            total = total + term;
        }
        out[i] = fabs(total) / k->two_pi;
    }
    free(rel), free(poly), free(dist);
    return BBKC_OK;
}
