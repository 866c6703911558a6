/* A test driver for runtime_c/compiler/point_locate.c (tests/core/test_lm_locate_c.py builds it
 * with -fsanitize=address,undefined).
 *
 *   locate_driver INPUTS OUT
 *       INPUTS: 4 int64 (n points, root, nodes, planes), one double (touch), then points (n * 3
 *       doubles), node_plane (nodes int64), node_children (2 * nodes int64), normals (planes * 3
 *       doubles), dists (planes doubles);
 *       OUT: the kernel's return code (int64), then leaf (n int64), then touched (n bytes).
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

int main(int argc, char **argv) {
    int64_t h[4];
    double touch;
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: locate_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(h, sizeof(int64_t), 4, in) != 4 || fread(&touch, sizeof touch, 1, in) != 1)
        return 2;
    const size_t n = (size_t)h[0], nodes = (size_t)h[2], planes = (size_t)h[3];
    double *points = take(n * 3, sizeof(double));
    int64_t *node_plane = take(nodes, sizeof(int64_t)), *children = take(2 * nodes, sizeof(int64_t));
    double *normals = take(planes * 3, sizeof(double)), *dists = take(planes, sizeof(double));
    fclose(in);
    int64_t *leaf = malloc(n * sizeof(int64_t) + (n == 0));
    uint8_t *touched = malloc(n + (n == 0));
    if (!leaf || !touched)
        return 2;
    const int64_t code = bbkc_locate(h[0], points, h[1], h[2], h[3], node_plane, children, normals, dists, touch,
                                     leaf, touched);
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(&code, sizeof code, 1, o) != 1 || fwrite(leaf, sizeof(int64_t), n, o) != n ||
        fwrite(touched, 1, n, o) != n)
        return 2;
    fclose(o);
    free(points), free(node_plane), free(children), free(normals), free(dists), free(leaf), free(touched);
    return 0;
}
