/* A test driver for runtime_c/compiler/csg_cut.c (tests/core/test_csg_cut_c.py builds it with
 * -fsanitize=address,undefined, beside split.c).
 *
 *   cut_driver INPUTS OUT
 *       INPUTS: 8 int64 (n faces to cut, F faces, V vertices, C cutter entries, B brushes, K planes
 *       a brush row, cap_pieces, cap_verts), 1 double (eps), then face_ids (n int64), verts (V * 3
 *       doubles), vert_first (F int64), vert_count (F), face_brush (F), face_normal (F * 3 doubles),
 *       cut_first (F + 1 int64), cutters (C), plane_count (B), normals (B * K * 3 doubles), dists
 *       (B * K), lo (B * 3), hi (B * 3);
 *       OUT: done, pieces, vertices (3 int64), piece_face and piece_count (pieces int64 each),
 *       piece_whole (pieces bytes), piece_verts (vertices * 3 doubles).
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

int main(int argc, char **argv) {
    int64_t h[8];
    double eps;
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: cut_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(h, sizeof(int64_t), 8, in) != 8 || fread(&eps, sizeof eps, 1, in) != 1)
        return 2;
    const size_t n = (size_t)h[0], nf = (size_t)h[1], nv = (size_t)h[2], nc = (size_t)h[3], nb = (size_t)h[4];
    const size_t k = (size_t)h[5], cap_pieces = (size_t)h[6], cap_verts = (size_t)h[7];
    int64_t *face_ids = take(n, sizeof(int64_t));
    double *verts = take(3 * nv, sizeof(double));
    int64_t *vert_first = take(nf, sizeof(int64_t)), *vert_count = take(nf, sizeof(int64_t));
    int64_t *face_brush = take(nf, sizeof(int64_t));
    double *face_normal = take(3 * nf, sizeof(double));
    int64_t *cut_first = take(nf + 1, sizeof(int64_t)), *cutters = take(nc, sizeof(int64_t));
    int64_t *plane_count = take(nb, sizeof(int64_t));
    double *normals = take(3 * k * nb, sizeof(double)), *dists = take(k * nb, sizeof(double));
    double *lo = take(3 * nb, sizeof(double)), *hi = take(3 * nb, sizeof(double));
    fclose(in);
    int64_t *piece_face = malloc(cap_pieces * sizeof(int64_t) + 1), *piece_count = malloc(cap_pieces * sizeof(int64_t) + 1);
    uint8_t *piece_whole = malloc(cap_pieces + 1);
    double *piece_verts = malloc(3 * cap_verts * sizeof(double) + 1);
    int64_t totals[3] = {0, 0, 0};
    totals[0] = bbkc_cut_faces(h[0], face_ids, verts, vert_first, vert_count, face_brush, face_normal, cut_first,
                               cutters, h[5], plane_count, normals, dists, lo, hi, eps, h[6], h[7], piece_face,
                               piece_count, piece_whole, piece_verts, totals + 1);
    const size_t pieces = (size_t)totals[1], nverts = (size_t)totals[2];
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(totals, sizeof(int64_t), 3, o) != 3 || fwrite(piece_face, sizeof(int64_t), pieces, o) != pieces ||
        fwrite(piece_count, sizeof(int64_t), pieces, o) != pieces || fwrite(piece_whole, 1, pieces, o) != pieces ||
        fwrite(piece_verts, sizeof(double), 3 * nverts, o) != 3 * nverts)
        return 2;
    fclose(o);
    free(face_ids), free(verts), free(vert_first), free(vert_count), free(face_brush), free(face_normal);
    free(cut_first), free(cutters), free(plane_count), free(normals), free(dists), free(lo), free(hi);
    free(piece_face), free(piece_count), free(piece_whole), free(piece_verts);
    return 0;
}
