/* A test driver for runtime_c/compiler/tree_score.c (tests/core/test_tree_score_c.py builds it
 * with -fsanitize=address,undefined).
 *
 *   score_driver INPUTS OUT
 *       INPUTS: 6 int64 (items, width, rows, vertices V, faces F, planes P), 2 doubles (on_epsilon,
 *       split_weight), then table (items * width int64), c_count, s_first, s_count (items int64
 *       each), s_ids, s_planes (rows int64 each), pool (3V doubles), v_first, v_count (F int64
 *       each), normals (3P doubles), dists (P doubles);
 *       OUT: cls (rows * width int8), same (rows * width uint8), best (items int64).
 * Each array is allocated to its exact size, so a read past one is the sanitizer's to catch.
 */
#include "../../runtime_c/compiler/bbk_compiler.h"
#include "driver_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int main(int argc, char **argv) {
    int64_t head[6];
    double eps[2];
    if (argc != 3 || !(in = fopen(argv[1], "rb"))) {
        fprintf(stderr, "usage: score_driver INPUTS OUT\n");
        return 2;
    }
    if (fread(head, sizeof(int64_t), 6, in) != 6 || fread(eps, sizeof(double), 2, in) != 2)
        return 2;
    const size_t items = (size_t)head[0], width = (size_t)head[1], rows = (size_t)head[2];
    const size_t nv = (size_t)head[3], nf = (size_t)head[4], np_ = (size_t)head[5];
    bbkc_score_input s;
    s.items = head[0];
    s.width = head[1];
    s.table = take(items * width, sizeof(int64_t));
    s.c_count = take(items, sizeof(int64_t));
    s.s_first = take(items, sizeof(int64_t));
    s.s_count = take(items, sizeof(int64_t));
    s.s_ids = take(rows, sizeof(int64_t));
    s.s_planes = take(rows, sizeof(int64_t));
    s.pool = take(3 * nv, sizeof(double));
    s.v_first = take(nf, sizeof(int64_t));
    s.v_count = take(nf, sizeof(int64_t));
    s.normals = take(3 * np_, sizeof(double));
    s.dists = take(np_, sizeof(double));
    s.on_epsilon = eps[0];
    s.split_weight = eps[1];
    fclose(in);
    int8_t *cls = calloc(rows * width + 1, 1);
    uint8_t *same = calloc(rows * width + 1, 1);
    int64_t *best = calloc(items + 1, sizeof(int64_t));
    if (bbkc_score_items(&s, cls, same, best) != BBKC_OK)
        return 3;
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(cls, 1, rows * width, o) != rows * width || fwrite(same, 1, rows * width, o) != rows * width
        || fwrite(best, sizeof(int64_t), items, o) != items)
        return 2;
    fclose(o);
    free((void *)s.table), free((void *)s.c_count), free((void *)s.s_first), free((void *)s.s_count);
    free((void *)s.s_ids), free((void *)s.s_planes), free((void *)s.pool), free((void *)s.v_first);
    free((void *)s.v_count), free((void *)s.normals), free((void *)s.dists), free(cls), free(same), free(best);
    return 0;
}
