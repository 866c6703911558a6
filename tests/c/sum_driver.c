/* A test driver for runtime_c/compiler/light_sum.c (tests/core/test_light_sum_c.py builds it with
 * -fsanitize=address,undefined).
 *
 *   sum_driver INPUTS OUT
 *       INPUTS: 1 int64, the kernel (0: bbkc_add_rows, 1: bbkc_add_clear), then
 *         add_rows: 3 int64 (n rows added, width, rows of out), index (n int64), values (n * width
 *         doubles), out (rows * width doubles);
 *         add_clear: 5 int64 (n rays, width, rows of out, rows of sent, the clear kind), index (n
 *         int64), src (n int64), f (n doubles), kind (n int8), sent (sent rows * width doubles),
 *         out (rows * width doubles);
 *       OUT: the kernel's return code (int64), then out after the sums.
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

int main(int argc, char **argv) {
    int64_t which, h[5], code;
    size_t rows, width;
    double *out;
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: sum_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(&which, sizeof(int64_t), 1, in) != 1 || fread(h, sizeof(int64_t), which ? 5 : 3, in) != (which ? 5u : 3u))
        return 2;
    width = (size_t)h[1], rows = (size_t)h[2];
    if (!which) {
        const size_t n = (size_t)h[0];
        int64_t *index = take(n, sizeof(int64_t));
        double *values = take(n * width, sizeof(double));
        out = take(rows * width, sizeof(double));
        code = bbkc_add_rows(h[0], h[1], h[2], index, values, out);
        free(index), free(values);
    } else {
        const size_t n = (size_t)h[0], sent_rows = (size_t)h[3];
        int64_t *index = take(n, sizeof(int64_t)), *src = take(n, sizeof(int64_t));
        double *f = take(n, sizeof(double));
        int8_t *kind = take(n, sizeof(int8_t));
        double *sent = take(sent_rows * width, sizeof(double));
        out = take(rows * width, sizeof(double));
        code = bbkc_add_clear(h[0], h[1], h[2], h[3], index, src, f, kind, (int8_t)h[4], sent, out);
        free(index), free(src), free(f), free(kind), free(sent);
    }
    fclose(in);
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(&code, sizeof code, 1, o) != 1 || fwrite(out, sizeof(double), rows * width, o) != rows * width)
        return 2;
    fclose(o);
    free(out);
    return 0;
}
