/* The Walk's eight steps from a chunk of places (core/runtime/crowd.py Walk._steps) in C: the
 * same grounds, verdicts and landing places, bit for bit (tests/core/test_crowd.py), in one loop
 * over the places instead of some ninety NumPy operations a place.  The steps whose head rises
 * above the slice are handed back (per direction, the places' indices in order) for the NumPy
 * side to judge again in the slice above the new head, as Walk._steps does.  A kernel of the
 * Python crowd, not of the engines' run-time API.  GPL-3.0-or-later.
 *
 * Per place i of the chunk (cell a[i], feet fa = value[a[i]]) and direction d (cell b = a + off[d],
 * fb = min(value[b], tk)): legal when fb - (fa - step) lies in [0, 2 * step] (as uint32: the
 * working value for no ground is far below), and for a diagonal when both axial neighbours' fb
 * are at most max(fa, fb); a legal step with fb > rises_above is a riser (written 0 here); else
 * step[d * stride + at + i] = legal ? place[b] : 0. */
#include "bbk_compiler.h"

/* the eight directions (crowd.py DIRECTIONS) and, for a diagonal, its two axial ones */
static const int DX[8] = {1, 1, 0, -1, -1, -1, 0, 1}, DY[8] = {0, 1, 1, 1, 0, -1, -1, -1};
static const int AX[8] = {-1, 0, -1, 4, -1, 4, -1, 0}, AY[8] = {-1, 2, -1, 2, -1, 6, -1, 6};

int bbkc_walk_steps(int64_t n, const int64_t *a, const int32_t *value, const int32_t *place, int32_t tk,
                    int32_t rises_above, int32_t step_u, int64_t nx, int64_t at, int64_t stride, uint16_t *ground,
                    int32_t *step, int32_t *risers, int64_t *riser_count) {
    int64_t off[8];
    for (int d = 0; d < 8; d++) {
        off[d] = DX[d] + DY[d] * nx;
        riser_count[d] = 0;
    }
    const uint32_t twice = (uint32_t)(2 * step_u);
    for (int64_t i = 0; i < n; i++) {
        const int64_t c = a[i];
        const int32_t fa = value[c], fa_low = fa - step_u;
        int32_t fb[8];
        ground[at + i] = (uint16_t)fa;
        for (int d = 0; d < 8; d++) {
            int32_t v = value[c + off[d]];
            fb[d] = v < tk ? v : tk;
        }
        for (int d = 0; d < 8; d++) {
            int ok = (uint32_t)(fb[d] - fa_low) <= twice;
            if (AX[d] >= 0) {
                int32_t t = fb[AX[d]] > fb[AY[d]] ? fb[AX[d]] : fb[AY[d]];
                int32_t h0 = fa > fb[d] ? fa : fb[d];
                ok &= t <= h0;
            }
            int32_t got = 0;
            if (fb[d] > rises_above) {
                if (ok) risers[d * n + riser_count[d]++] = (int32_t)i;
            } else if (ok) {
                got = place[c + off[d]];
            }
            step[d * stride + at + i] = got;
        }
    }
    return 0;
}
