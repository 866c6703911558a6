/* A test driver for runtime_c (tests/core/test_cruntime.py builds it with -fsanitize=address,undefined).
 *
 *   bbk_driver fuzz CASES      CASES: records of (u64 length, bytes); prints one load code per case,
 *                              and runs every query on the levels that load
 *   bbk_driver queries LEVEL SEGMENTS OUT
 *                              SEGMENTS: n x 6 doubles; OUT: per hull n bbk_hit traces (retry for
 *                              hulls >= 1) and n solid bytes of the starts; then n leaves (int32);
 *                              n bbk_hit for a sphere 0.3, a box (0.2, 0.3, 0.5), a cylinder (0.4,
 *                              1.2); n visibility bytes of (start, end) when the level has a PVS
 */
#include "../../runtime_c/brushbake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static void exercise(const bbk_level *lv) {
    bbk_info info;
    bbk_get_info(lv, &info);
    double lo[3], span[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = info.world_bounds[0][k];
        span[k] = info.world_bounds[1][k] - lo[k] + 1.0;
        if (!(span[k] < 1e12) || !(lo[k] > -1e12 && lo[k] < 1e12)) {  /* forged huge bounds: a plain box */
            lo[k] = -10.0;
            span[k] = 20.0;
        }
    }
    unsigned state = 12345u;
    bbk_shape shapes[3] = {{BBK_SHAPE_SPHERE, 0, 0.3, 0, {0, 0, 0}}, {BBK_SHAPE_BOX, 0, 0, 0, {0.2, 0.3, 0.5}},
                           {BBK_SHAPE_CYLINDER, 0, 0.4, 1.2, {0, 0, 0}}};
    for (int i = 0; i < 16; i++) {
        double s[3], e[3];
        for (int k = 0; k < 3; k++) {
            state = state * 1103515245u + 12345u;
            s[k] = lo[k] + span[k] * (double)(state >> 8) / 16777216.0;
            state = state * 1103515245u + 12345u;
            e[k] = lo[k] + span[k] * (double)(state >> 8) / 16777216.0;
        }
        if (i == 0) memcpy(e, s, sizeof e);
        bbk_hit hit;
        int solid, vis;
        uint32_t leaves[8], count;
        (void)bbk_point_leaf(lv, s);
        for (uint32_t h = 0; h < info.hulls; h++) {
            int code = bbk_point_solid(lv, h, s, &solid);
            if (!code) code = bbk_trace(lv, h, s, e, h != 0, &hit);
            if (code) {
                fprintf(stderr, "query failed on a loaded level: %s\n", bbk_error_name(code));
                exit(3);
            }
        }
        for (int k = 0; k < 3; k++)
            if (bbk_shift_trace(lv, &shapes[k], s, e, &hit)) exit(3);
        if (info.clusters) {
            if (bbk_can_see_points(lv, s, e, &vis) || bbk_visible_leaves(lv, s, leaves, 8, &count)) exit(3);
        }
    }
}

static int fuzz(const char *path) {
    size_t size, at = 0;
    unsigned char *all = read_all(path, &size);
    if (!all) return 2;
    while (at + 8 <= size) {
        uint64_t n;
        memcpy(&n, all + at, 8);
        at += 8;
        if (n > size - at) return 2;
        /* a copy of exactly n bytes, so ASan sees any read past the case */
        unsigned char *one = malloc(n ? (size_t)n : 1);
        memcpy(one, all + at, (size_t)n);
        at += (size_t)n;
        bbk_level *lv = NULL;
        char message[256];
        int code = bbk_load(one, (size_t)n, &lv, message, sizeof message);
        free(one);
        if (code == BBK_OK) exercise(lv);
        bbk_free(lv);
        printf("%d\n", code);
    }
    free(all);
    return 0;
}

static int queries(const char *level_path, const char *seg_path, const char *out_path) {
    size_t size, seg_size;
    unsigned char *data = read_all(level_path, &size), *segbuf = read_all(seg_path, &seg_size);
    if (!data || !segbuf) return 2;
    bbk_level *lv;
    char message[256];
    int code = bbk_load(data, size, &lv, message, sizeof message);
    if (code) {
        fprintf(stderr, "load: %s\n", message);
        return 1;
    }
    size_t n = seg_size / (6 * sizeof(double));
    double *seg = malloc(seg_size ? seg_size : 1);
    memcpy(seg, segbuf, seg_size);
    bbk_info info;
    bbk_get_info(lv, &info);
    FILE *out = fopen(out_path, "wb");
    bbk_hit *hits = malloc((n ? n : 1) * sizeof *hits);
    uint8_t *bytes = malloc(n ? n : 1);
    int32_t *leaves = malloc((n ? n : 1) * sizeof *leaves);
    double *starts = malloc((n ? n : 1) * 3 * sizeof *starts), *pairs = seg;
    for (size_t i = 0; i < n; i++) memcpy(starts + 3 * i, seg + 6 * i, 3 * sizeof *starts);
    int err = 0;
    for (uint32_t h = 0; h < info.hulls && !err; h++) {
        err |= bbk_trace_many(lv, h, n, seg, h != 0, hits);
        fwrite(hits, sizeof *hits, n, out);
        err |= bbk_point_solid_many(lv, h, n, starts, bytes);
        fwrite(bytes, 1, n, out);
    }
    err |= bbk_point_leaf_many(lv, n, starts, leaves);
    fwrite(leaves, sizeof *leaves, n, out);
    bbk_shape shapes[3] = {{BBK_SHAPE_SPHERE, 0, 0.3, 0, {0, 0, 0}}, {BBK_SHAPE_BOX, 0, 0, 0, {0.2, 0.3, 0.5}},
                           {BBK_SHAPE_CYLINDER, 0, 0.4, 1.2, {0, 0, 0}}};
    for (int k = 0; k < 3; k++) {
        err |= bbk_shift_trace_many(lv, &shapes[k], n, seg, hits);
        fwrite(hits, sizeof *hits, n, out);
    }
    if (info.clusters) {
        err |= bbk_can_see_points_many(lv, n, pairs, bytes);
        fwrite(bytes, 1, n, out);
    }
    fclose(out);
    free(hits);
    free(bytes);
    free(leaves);
    free(starts);
    free(seg);
    free(segbuf);
    free(data);
    bbk_free(lv);
    return err ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "fuzz")) return fuzz(argv[2]);
    if (argc == 5 && !strcmp(argv[1], "queries")) return queries(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: bbk_driver fuzz CASES | queries LEVEL SEGMENTS OUT\n");
    return 2;
}
