/* A test driver for runtime_c/compiler/csg_touch.c (tests/core/test_csg_touch_c.py builds it with
 * -fsanitize=address,undefined).
 *
 *   touch_driver INPUTS OUT
 *       INPUTS: 6 int64 (n brushes, V vertices, F faces, N near entries, B brushes in all, P planes),
 *       1 double (eps), then verts (V * 3 doubles), face_count (F int64), face_first (n + 1),
 *       near_first (n + 1), near (N), plane_first (B), plane_count (B), normals (P * 3 doubles),
 *       dists (P doubles);
 *       OUT: the table's bytes (the sum over brushes of faces x near brushes).
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

int main(int argc, char **argv) {
    int64_t h[6];
    double eps;
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: touch_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(h, sizeof(int64_t), 6, in) != 6 || fread(&eps, sizeof eps, 1, in) != 1)
        return 2;
    const size_t n = (size_t)h[0], nv = (size_t)h[1], nf = (size_t)h[2], nn = (size_t)h[3], nb = (size_t)h[4];
    const size_t np_ = (size_t)h[5];
    double *verts = take(3 * nv, sizeof(double));
    int64_t *face_count = take(nf, sizeof(int64_t)), *face_first = take(n + 1, sizeof(int64_t));
    int64_t *near_first = take(n + 1, sizeof(int64_t)), *near = take(nn, sizeof(int64_t));
    int64_t *plane_first = take(nb, sizeof(int64_t)), *plane_count = take(nb, sizeof(int64_t));
    double *normals = take(3 * np_, sizeof(double)), *dists = take(np_, sizeof(double));
    fclose(in);
    size_t cells = 0;
    for (size_t i = 0; i < n; i++)
        cells += (size_t)(face_first[i + 1] - face_first[i]) * (size_t)(near_first[i + 1] - near_first[i]);
    uint8_t *out = malloc(cells + 1);
    bbkc_touching(h[0], verts, face_count, face_first, near_first, near, plane_first, plane_count, normals, dists, eps,
                  out);
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(out, 1, cells, o) != cells)
        return 2;
    fclose(o);
    free(verts), free(face_count), free(face_first), free(near_first), free(near), free(plane_first);
    free(plane_count), free(normals), free(dists), free(out);
    return 0;
}
