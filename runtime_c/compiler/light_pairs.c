/* Radiosity's pair selection (core/compile/light/lm_radiosity.py _pairs) in C: for a block of
 * shooters x receivers, the pairs worth a visibility ray and their point form factors, in the
 * NumPy path's order (shooter by shooter, receivers ascending), each value through the same
 * operations in the same order (built with -ffp-contract=off), so the selection and the values
 * are the reference's to the bit (tests/core/test_lm_pairs_c.py).  The per-row terms (dot
 * products, -sqrt(area), area / pi, FORM_FACTOR_NEAR * area) come from the Python side, computed
 * as the reference computes them.  GPL-3.0-or-later. */
#include "bbk_compiler.h"

/* np.maximum(x, y) for finite x, y */
static double max0(double x, double y) { return (x >= y || x != x) ? x : y; }

int64_t bbkc_bounce_pairs(const bbkc_pair_block *b, int32_t *out_s, int32_t *out_r, double *out_f,
                          uint8_t *out_near) {
    int64_t n = 0;
    for (int64_t i = 0; i < b->shooters; i++) {
        const double *ns = b->s_normal + 3 * i, *cs = b->s_centroid + 3 * i;
        const double s_dot = b->s_dot[i], s_cc = b->s_cc[i], near_a = b->s_near[i], low = b->s_low[i];
        const double a_pi = b->s_area_pi[i], strength = b->s_strength[i];
        const int64_t sid = b->s_id[i];
        for (int64_t j = 0; j < b->receivers; j++) {
            const double *nr = b->r_normal + 3 * j, *pr = b->r_point + 3 * j;
            double front = ns[0] * pr[0];
            front = front + ns[1] * pr[1];
            front = front + ns[2] * pr[2];
            front = front - s_dot; /* n_s . (p_r - c_s) */
            double above = cs[0] * nr[0];
            above = above + cs[1] * nr[1];
            above = above + cs[2] * nr[2];
            above = above - b->r_dot[j]; /* n_r . (c_s - p_r) */
            double d2 = cs[0] * pr[0];
            d2 = d2 + cs[1] * pr[1];
            d2 = d2 + cs[2] * pr[2];
            d2 = d2 * -2.0;
            d2 = d2 + s_cc;
            d2 = d2 + b->r_pp[j];
            d2 = max0(d2, 1e-12);
            int near = d2 < near_a;
            int facing = (front > 0.0) && (above > low);
            near = near && facing;
            double f = max0(front, 0.0);
            f = f * max0(above, 0.0);
            f = f * a_pi;
            f = f / d2;
            f = f / d2;
            int ok = (f * strength >= b->cutoff) || near;
            if (ok && sid != b->r_id[j]) {
                out_s[n] = (int32_t)i;
                out_r[n] = (int32_t)j;
                out_f[n] = f;
                out_near[n] = (uint8_t)near;
                n++;
            }
        }
    }
    return n;
}
