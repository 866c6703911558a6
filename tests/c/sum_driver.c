/* A test driver for runtime_c/compiler/light_sum.c (tests/core/test_light_sum_c.py builds it with
 * -fsanitize=address,undefined).
 *
 *   sum_driver INPUTS OUT
 *       INPUTS: 3 int64 (n rows added, width, rows of out), then index (n int64), values (n * width
 *       doubles), out (rows * width doubles);
 *       OUT: the kernel's return code (int64), then out after the sums.
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

int main(int argc, char **argv) {
    int64_t h[3];
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: sum_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(h, sizeof(int64_t), 3, in) != 3)
        return 2;
    const size_t n = (size_t)h[0], width = (size_t)h[1], rows = (size_t)h[2];
    int64_t *index = take(n, sizeof(int64_t));
    double *values = take(n * width, sizeof(double)), *out = take(rows * width, sizeof(double));
    fclose(in);
    const int64_t code = bbkc_add_rows(h[0], h[1], h[2], index, values, out);
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(&code, sizeof code, 1, o) != 1 || fwrite(out, sizeof(double), rows * width, o) != rows * width)
        return 2;
    fclose(o);
    free(index), free(values), free(out);
    return 0;
}
