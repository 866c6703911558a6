/* A test driver for runtime_c/compiler/light_form.c (tests/core/test_light_form_c.py builds it
 * with -fsanitize=address,undefined).
 *
 *   form_driver INPUTS OUT
 *       INPUTS: 2 int64 (m pairs, width), 18 doubles (bbkc_form_consts in its order), then x and n
 *       (m * 3 doubles each), verts (m * width * 3), count (m int64);
 *       OUT: the m form factors.
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

int main(int argc, char **argv) {
    int64_t head[2];
    bbkc_form_consts k;
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: form_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(head, sizeof(int64_t), 2, in) != 2 || fread(&k, sizeof k, 1, in) != 1)
        return 2;
    const size_t m = (size_t)head[0], width = (size_t)head[1];
    double *x = take(m * 3, sizeof(double)), *n = take(m * 3, sizeof(double));
    double *verts = take(m * width * 3, sizeof(double));
    int64_t *count = take(m, sizeof(int64_t));
    fclose(in);
    double *out = malloc(m * sizeof(double) + 1);
    if (bbkc_form_factors(head[0], head[1], x, n, verts, count, &k, out) != BBKC_OK)
        return 3;
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(out, sizeof(double), m, o) != m)
        return 2;
    fclose(o);
    free(x), free(n), free(verts), free(count), free(out);
    return 0;
}
