/* A test driver for runtime_c/compiler/light_charts.c (tests/core/test_lm_charts_c.py builds it
 * with -fsanitize=address,undefined).
 *
 *   charts_driver INPUTS OUT
 *       INPUTS: 5 int64 (n points, F faces, E edges, nearest, has_shrink), 1 double (inset), then
 *       faces (n int64), st (2n doubles), shrink (n doubles, when has_shrink), edge_first and
 *       edge_count (F int64 each), en (2E doubles), eo (E), seg_a and seg_b (2E each), centre (2F);
 *       OUT: the moved points, 2n doubles.
 * Each array is allocated to its exact size, so a read past one is the sanitizer's to catch.
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

#include <stdio.h>
#include <stdlib.h>


int main(int argc, char **argv) {
    int64_t head[5];
    double inset;
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: charts_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(head, sizeof(int64_t), 5, in) != 5 || fread(&inset, sizeof(double), 1, in) != 1)
        return 2;
    const size_t n = (size_t)head[0], nf = (size_t)head[1], ne = (size_t)head[2];
    int64_t *faces = take(n, sizeof(int64_t));
    double *st = take(2 * n, sizeof(double));
    double *shrink = head[4] ? take(n, sizeof(double)) : NULL;
    int64_t *edge_first = take(nf, sizeof(int64_t)), *edge_count = take(nf, sizeof(int64_t));
    double *en = take(2 * ne, sizeof(double)), *eo = take(ne, sizeof(double));
    double *seg_a = take(2 * ne, sizeof(double)), *seg_b = take(2 * ne, sizeof(double));
    double *centre = take(2 * nf, sizeof(double));
    double *out = malloc(2 * n * sizeof(double) + 1);
    fclose(in);
    bbkc_into_faces((int64_t)n, faces, st, shrink, (int)head[3], edge_first, edge_count, en, eo, seg_a, seg_b, centre,
                    inset, out);
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(out, sizeof(double), 2 * n, o) != 2 * n)
        return 2;
    fclose(o);
    free(faces), free(st), free(shrink), free(edge_first), free(edge_count), free(en), free(eo), free(seg_a);
    free(seg_b), free(centre), free(out);
    return 0;
}
