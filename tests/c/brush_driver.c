/* A test driver for runtime_c/compiler/brush_faces.c (tests/core/test_brush_faces_c.py builds it
 * with -fsanitize=address,undefined).
 *
 *   brush_driver INPUTS OUT
 *       INPUTS: 3 int64 (g brushes, k planes each, t triples), 3 doubles (parallel_det, vertex_eps,
 *       min_edge), normals (g * k * 3 doubles), dists (g * k), good (g bytes), triples (t * 3 int64);
 *       OUT: verts (g * t * 3 doubles), vcount (g, as doubles), then every face's ring vertices
 *       (brush by brush, plane by plane) as doubles.
 * The faces' room is worked out here as brushes_c.py does (corners on a plane, for planes with at
 * least 3 of a brush with at least 4 corners); each array has its exact size for the sanitizer.
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

#include <stdio.h>
#include <stdlib.h>


int main(int argc, char **argv) {
    int64_t head[3];
    double eps[3];
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: brush_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(head, sizeof(int64_t), 3, in) != 3 || fread(eps, sizeof(double), 3, in) != 3)
        return 2;
    const size_t g = (size_t)head[0], k = (size_t)head[1], t = (size_t)head[2];
    double *normals = take(g * k * 3, sizeof(double)), *dists = take(g * k, sizeof(double));
    uint8_t *good = take(g, 1);
    int64_t *triples = take(t * 3, sizeof(int64_t));
    fclose(in);
    double *verts = calloc(g * t * 3 + 1, sizeof(double));
    uint8_t *member = calloc(g * t * k + 1, 1);
    int64_t *vcount = calloc(g + 1, sizeof(int64_t));
    if (bbkc_brush_vertices(head[0], head[1], normals, dists, good, head[2], triples, eps[0], eps[1], eps[2], verts,
                            member, vcount) != BBKC_OK)
        return 3;
    uint8_t *face_ok = calloc(g * k + 1, 1);
    int64_t *first = calloc(g * k + 1, sizeof(int64_t)), total = 0;
    for (size_t b = 0; b < g; b++)
        for (size_t p = 0; p < k; p++) {
            int64_t on = 0;
            for (int64_t v = 0; v < vcount[b]; v++)
                on += member[(b * t + (size_t)v) * k + p] != 0;
            face_ok[b * k + p] = good[b] && vcount[b] >= 4 && on >= 3;
            first[b * k + p] = total;
            total += face_ok[b * k + p] ? on : 0;
        }
    double *ring = malloc((size_t)total * 3 * sizeof(double) + 1), *area = malloc(g * k * sizeof(double) + 1);
    int64_t *ring_count = malloc(g * k * sizeof(int64_t) + 1);
    if (bbkc_brush_faces(head[0], head[1], head[2], normals, verts, member, vcount, face_ok, first, eps[2], ring,
                         ring_count, area) != BBKC_OK)
        return 3;
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(verts, sizeof(double), g * t * 3, o) != g * t * 3)
        return 2;
    for (size_t b = 0; b < g; b++) {
        const double c = (double)vcount[b];
        fwrite(&c, sizeof c, 1, o);
    }
    for (size_t s = 0; s < g * k; s++)
        if (ring_count[s] && fwrite(ring + 3 * first[s], sizeof(double), (size_t)(3 * ring_count[s]), o)
                                 != (size_t)(3 * ring_count[s]))
            return 2;
    fclose(o);
    free(normals), free(dists), free(good), free(triples), free(verts), free(member), free(vcount), free(face_ok);
    free(first), free(ring), free(area), free(ring_count);
    return 0;
}
