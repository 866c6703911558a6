/* Light's sums into its per-point and per-patch totals (np.add.at(out, index, values) in
 * core/compile/light/lm_direct.py and lm_radiosity.py) in C: every row added to its point's
 * row in the rows' order, as NumPy's ufunc.at adds them, so the totals are the same to the bit
 * (tests/core/test_light_sum_c.py), without NumPy's per-element cost (about 10x a plain loop in
 * NumPy 1.26) and with the GIL let go.  bbkc_add_clear is a bounce block's sum: the clear rays'
 * products made as they are added, with no array of them in between.  GPL-3.0-or-later. */
#include "bbk_compiler.h"

int bbkc_add_rows(int64_t n, int64_t width, int64_t rows, const int64_t *index, const double *values, double *out) {
    for (int64_t i = 0; i < n; i++) /* every index checked before any row changes */
        if (index[i] < 0 || index[i] >= rows)
            return BBKC_ERR_ARGUMENT;
    for (int64_t i = 0; i < n; i++) {
        double *row = out + width * index[i];
        const double *v = values + width * i;
        for (int64_t c = 0; c < width; c++)
            row[c] += v[c];
    }
    return BBKC_OK;
}

int bbkc_add_clear(int64_t n, int64_t width, int64_t rows, int64_t sent_rows, const int64_t *index, const int64_t *src,
                   const double *f, const int8_t *kind, int8_t clear, const double *sent, double *out) {
    for (int64_t i = 0; i < n; i++) /* every index of a clear ray checked before any row changes */
        if (kind[i] == clear && (index[i] < 0 || index[i] >= rows || src[i] < 0 || src[i] >= sent_rows))
            return BBKC_ERR_ARGUMENT;
    for (int64_t i = 0; i < n; i++) {
        if (kind[i] != clear)
            continue;
        double *row = out + width * index[i];
        const double *v = sent + width * src[i];
        for (int64_t c = 0; c < width; c++)
            row[c] += f[i] * v[c]; /* (the product rounded, then the sum: no fused multiply-add) */
    }
    return BBKC_OK;
}
