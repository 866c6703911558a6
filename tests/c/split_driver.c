/* A test driver for runtime_c/compiler/split.c (tests/core/test_split_c.py builds it with
 * -fsanitize=address,undefined).
 *
 *   split_driver INPUTS OUT
 *       INPUTS: 2 int64 (m polygons, v vertices a row), 1 double (eps), then verts (m * v * 3
 *       doubles), counts (m int64), dist (m * v doubles), normals (m * 3), dists (m);
 *       OUT: front and back (m * 2v * 3 doubles each), then nf and nb (m int64 each).
 * Each array is allocated to its exact size, so a read or write past one is the sanitizer's.
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

#include <stdio.h>
#include <stdlib.h>


int main(int argc, char **argv) {
    int64_t head[2];
    double eps;
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: split_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(head, sizeof(int64_t), 2, in) != 2 || fread(&eps, sizeof(double), 1, in) != 1)
        return 2;
    const size_t m = (size_t)head[0], v = (size_t)head[1];
    double *verts = take(m * v * 3, sizeof(double));
    int64_t *counts = take(m, sizeof(int64_t));
    double *dist = take(m * v, sizeof(double)), *normals = take(m * 3, sizeof(double));
    double *dists = take(m, sizeof(double));
    fclose(in);
    double *front = calloc(m * 2 * v * 3 + 1, sizeof(double)), *back = calloc(m * 2 * v * 3 + 1, sizeof(double));
    int64_t *nf = malloc((m + 1) * sizeof(int64_t)), *nb = malloc((m + 1) * sizeof(int64_t));
    bbkc_split_polygons((int64_t)m, (int64_t)v, verts, counts, dist, normals, dists, eps, front, nf, back, nb);
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(front, sizeof(double), m * 2 * v * 3, o) != m * 2 * v * 3
        || fwrite(back, sizeof(double), m * 2 * v * 3, o) != m * 2 * v * 3 || fwrite(nf, sizeof(int64_t), m, o) != m
        || fwrite(nb, sizeof(int64_t), m, o) != m)
        return 2;
    fclose(o);
    free(verts), free(counts), free(dist), free(normals), free(dists), free(front), free(back), free(nf), free(nb);
    return 0;
}
