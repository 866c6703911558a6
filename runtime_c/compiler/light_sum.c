/* Light's sums into its per-point and per-patch totals (np.add.at(out, index, values) in
 * core/compile/light/lm_direct.py and lm_radiosity.py) in C: every row added to its point's
 * row in the rows' order, as NumPy's ufunc.at adds them, so the totals are the same to the bit
 * (tests/core/test_light_sum_c.py), without NumPy's per-element cost (about 10x a plain loop in
 * NumPy 1.26) and with the GIL let go.  GPL-3.0-or-later. */
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
