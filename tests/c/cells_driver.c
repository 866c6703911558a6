/* A test driver for runtime_c/compiler/cell_portals.c (tests/core/test_cell_portals_c.py builds it
 * with -fsanitize=address,undefined, beside split.c).
 *
 *   cells_driver INPUTS OUT
 *       INPUTS: 4 int64 (N nodes, P planes, root, B box portals), 1 double (eps), then node_plane
 *       (N int64), children (N * 2), structural (N bytes), plane_normals (P * 3 doubles),
 *       plane_dists (P), squares (N * 4 * 3), box_verts (B * 4 * 3), box_plane (B int64),
 *       box_normals (B * 3 doubles), box_dists (B), box_sides (B * 2 int64);
 *       OUT: count, width (2 int64), then verts (count * width * 3 doubles), counts (count int64),
 *       normals (count * 3 doubles), dists (count), plane_id (count int64), sides (count * 2).
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

int main(int argc, char **argv) {
    int64_t h[4];
    double eps;
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: cells_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(h, sizeof(int64_t), 4, in) != 4 || fread(&eps, sizeof eps, 1, in) != 1)
        return 2;
    const size_t n = (size_t)h[0], np_ = (size_t)h[1], nb = (size_t)h[3];
    int64_t *node_plane = take(n, sizeof(int64_t)), *children = take(2 * n, sizeof(int64_t));
    uint8_t *structural = take(n, 1);
    double *plane_normals = take(3 * np_, sizeof(double)), *plane_dists = take(np_, sizeof(double));
    double *squares = take(12 * n, sizeof(double)), *box_verts = take(12 * nb, sizeof(double));
    int64_t *box_plane = take(nb, sizeof(int64_t));
    double *box_normals = take(3 * nb, sizeof(double)), *box_dists = take(nb, sizeof(double));
    int64_t *box_sides = take(2 * nb, sizeof(int64_t));
    fclose(in);
    bbkc_cells *c = bbkc_cells_start(h[0], node_plane, children, structural, plane_normals, plane_dists, squares,
                                     h[2], h[3], box_verts, box_plane, box_normals, box_dists, box_sides, eps);
    if (!c)
        return 3;
    int64_t got;
    while ((got = bbkc_cells_step(c)) > 0)
        ;
    if (got < 0)
        return 3;
    int64_t size[2];
    bbkc_cells_size(c, size, size + 1);
    const size_t m = (size_t)size[0], w = (size_t)size[1];
    double *verts = calloc(3 * m * w + 1, sizeof(double)), *normals = malloc(3 * m * sizeof(double) + 1);
    double *dists = malloc(m * sizeof(double) + 1);
    int64_t *counts = malloc(m * sizeof(int64_t) + 1), *plane_id = malloc(m * sizeof(int64_t) + 1);
    int64_t *sides = malloc(2 * m * sizeof(int64_t) + 1);
    bbkc_cells_take(c, size[1], verts, counts, normals, dists, plane_id, sides);
    bbkc_cells_free(c);
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(size, sizeof(int64_t), 2, o) != 2 || fwrite(verts, sizeof(double), 3 * m * w, o) != 3 * m * w ||
        fwrite(counts, sizeof(int64_t), m, o) != m || fwrite(normals, sizeof(double), 3 * m, o) != 3 * m ||
        fwrite(dists, sizeof(double), m, o) != m || fwrite(plane_id, sizeof(int64_t), m, o) != m ||
        fwrite(sides, sizeof(int64_t), 2 * m, o) != 2 * m)
        return 2;
    fclose(o);
    free(node_plane), free(children), free(structural), free(plane_normals), free(plane_dists), free(squares);
    free(box_verts), free(box_plane), free(box_normals), free(box_dists), free(box_sides);
    free(verts), free(normals), free(dists), free(counts), free(plane_id), free(sides);
    return 0;
}
