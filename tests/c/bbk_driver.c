/* A test driver for runtime_c (tests/core/test_cruntime.py builds it with -fsanitize=address,undefined).
 *
 *   bbk_driver fuzz CASES      CASES: records of (u64 length, bytes); prints one load code per case,
 *                              and runs every query on the levels that load
 *   bbk_driver cull LEVEL CAMERAS OUT
 *                              CAMERAS: n x 8 doubles; OUT: per mode (pvs, frustum, portal) n x leaves
 *                              drawn bytes and n bbk_cull_stats (modes the level cannot answer:
 *                              nothing); then per mode and camera the bbk_cull leaves back to front
 *                              and their faces (u32 count, leaves, u32 count, faces)
 *   bbk_driver queries LEVEL SEGMENTS OUT
 *                              SEGMENTS: n x 6 doubles; OUT: per hull n bbk_hit traces (retry for
 *                              hulls >= 1; bbk_trace_many_split must give the same bytes and
 *                              bbk_trace_many_arrays the same fields, else exit 1) and n solid
 *                              bytes of the starts; then n leaves (int32);
 *                              n bbk_hit for a sphere 0.3, a box (0.2, 0.3, 0.5), a cylinder (0.4,
 *                              1.2), the hull HULL; n visibility bytes of (start, end) when the level has a PVS
 */
#include "../../runtime_c/brushbake.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a lopsided convex hull around its base point (test_cruntime.py's DRIVER_HULL) */
static const double HULL[8 * 3] = {0.3, 0.0, 0.1, -0.2, 0.0, 0.1, 0.0, 0.25, 0.1, 0.0, -0.3, 0.1,
                                   0.0, 0.0, 0.6, 0.0, 0.0, -0.05, 0.1, 0.1, 0.5, -0.15, -0.1, 0.0};

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
    double segs[16][6];
    bbk_hit many[16];
    bbk_shape shapes[4] = {{BBK_SHAPE_SPHERE, 0, 0.3, 0, {0, 0, 0}, NULL, 0},
                           {BBK_SHAPE_BOX, 0, 0, 0, {0.2, 0.3, 0.5}, NULL, 0},
                           {BBK_SHAPE_CYLINDER, 0, 0.4, 1.2, {0, 0, 0}, NULL, 0},
                           {BBK_SHAPE_HULL, 0, 0, 0, {0, 0, 0}, HULL, 8}};
    for (int i = 0; i < 16; i++) {
        double s[3], e[3];
        for (int k = 0; k < 3; k++) {
            state = state * 1103515245u + 12345u;
            s[k] = lo[k] + span[k] * (double)(state >> 8) / 16777216.0;
            state = state * 1103515245u + 12345u;
            e[k] = lo[k] + span[k] * (double)(state >> 8) / 16777216.0;
        }
        if (i == 0) memcpy(e, s, sizeof e);
        memcpy(segs[i], s, sizeof s);
        memcpy(segs[i] + 3, e, sizeof e);
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
        for (int k = 0; k < 4; k++)
            if (bbk_shift_trace(lv, &shapes[k], s, e, &hit)) exit(3);
        if (info.clusters) {
            if (bbk_can_see_points(lv, s, e, &vis) || bbk_visible_leaves(lv, s, leaves, 8, &count)) exit(3);
        }
        /* the camera queries: every mode, the answer's leaves and faces into small buffers */
        double cam[8] = {s[0], s[1], s[2], 360.0 * (e[0] - lo[0]) / span[0], 170.0 * (e[1] - lo[1]) / span[1] - 85.0,
                         90.0, 1.5, 1.0 + span[0]};
        uint32_t faces[8];
        bbk_cull_stats stats;
        for (int mode = 0; mode < 3; mode++) {
            int code = bbk_cull(lv, cam, mode, i & 1 ? BBK_CULL_BACK_TO_FRONT : 0, leaves, 8, faces, 8, &stats);
            if (code && code != BBK_ERR_NO_VIS && code != BBK_ERR_NO_PORTALS && code != BBK_ERR_ARGUMENT) {
                fprintf(stderr, "cull failed on a loaded level: %s\n", bbk_error_name(code));
                exit(3);
            }
        }
    }
    for (uint32_t h = 0; h < info.hulls; h++)  /* the batch walk (interleaved segments) */
        if (bbk_trace_many(lv, h, 16, &segs[0][0], h != 0, many)) exit(3);
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
    double *ends = malloc((n ? n : 1) * 3 * sizeof *ends);
    bbk_hit *split = malloc((n ? n : 1) * sizeof *split);
    double *fraction = malloc((n ? n : 1) * sizeof *fraction), *point = malloc((n ? n : 1) * 3 * sizeof *point);
    double *normal = malloc((n ? n : 1) * 3 * sizeof *normal);
    int64_t *plane = malloc((n ? n : 1) * sizeof *plane);
    uint8_t *start_solid = malloc(n ? n : 1), *hit = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) memcpy(starts + 3 * i, seg + 6 * i, 3 * sizeof *starts);
    for (size_t i = 0; i < n; i++) memcpy(ends + 3 * i, seg + 6 * i + 3, 3 * sizeof *ends);
    int err = 0;
    for (uint32_t h = 0; h < info.hulls && !err; h++) {
        err |= bbk_trace_many(lv, h, n, seg, h != 0, hits);
        err |= bbk_trace_many_split(lv, h, n, starts, ends, h != 0, split);
        if (n && memcmp(hits, split, n * sizeof *hits)) {  /* the two layouts give the same bytes */
            fprintf(stderr, "bbk_trace_many_split differs from bbk_trace_many for hull %u\n", h);
            err = 1;
        }
        err |= bbk_trace_many_arrays(lv, h, n, starts, ends, h != 0, fraction, point, normal, plane, start_solid, hit);
        for (size_t i = 0; i < n && !err; i++)  /* the arrays hold the records' fields, to the bit */
            if (memcmp(&fraction[i], &hits[i].fraction, sizeof *fraction) ||
                memcmp(point + 3 * i, hits[i].point, sizeof hits[i].point) ||
                memcmp(normal + 3 * i, hits[i].normal, sizeof hits[i].normal) || plane[i] != hits[i].plane ||
                start_solid[i] != hits[i].start_solid || hit[i] != hits[i].hit) {
                fprintf(stderr, "bbk_trace_many_arrays differs from bbk_trace_many for hull %u at %zu\n", h, i);
                err = 1;
            }
        fwrite(hits, sizeof *hits, n, out);
        err |= bbk_point_solid_many(lv, h, n, starts, bytes);
        fwrite(bytes, 1, n, out);
    }
    err |= bbk_point_leaf_many(lv, n, starts, leaves);
    fwrite(leaves, sizeof *leaves, n, out);
    bbk_shape shapes[4] = {{BBK_SHAPE_SPHERE, 0, 0.3, 0, {0, 0, 0}, NULL, 0},
                           {BBK_SHAPE_BOX, 0, 0, 0, {0.2, 0.3, 0.5}, NULL, 0},
                           {BBK_SHAPE_CYLINDER, 0, 0.4, 1.2, {0, 0, 0}, NULL, 0},
                           {BBK_SHAPE_HULL, 0, 0, 0, {0, 0, 0}, HULL, 8}};
    for (int k = 0; k < 4; k++) {
        err |= bbk_shift_trace_many(lv, &shapes[k], n, seg, hits);
        fwrite(hits, sizeof *hits, n, out);
    }
    if (info.clusters) {
        err |= bbk_can_see_points_many(lv, n, pairs, bytes);
        fwrite(bytes, 1, n, out);
    }
    fclose(out);
    free(split);
    free(fraction);
    free(point);
    free(normal);
    free(plane);
    free(start_solid);
    free(hit);
    free(ends);
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

static int cull(const char *level_path, const char *cam_path, const char *out_path) {
    size_t size, cam_size;
    unsigned char *data = read_all(level_path, &size), *cambuf = read_all(cam_path, &cam_size);
    if (!data || !cambuf) return 2;
    bbk_level *lv;
    char message[256];
    if (bbk_load(data, size, &lv, message, sizeof message)) {
        fprintf(stderr, "load: %s\n", message);
        return 1;
    }
    size_t n = cam_size / (8 * sizeof(double));
    double *cams = malloc(cam_size ? cam_size : 1);
    memcpy(cams, cambuf, cam_size);
    bbk_info info;
    bbk_get_info(lv, &info);
    FILE *out = fopen(out_path, "wb");
    uint8_t *drawn = malloc(n * info.leaves + 1);
    bbk_cull_stats *stats = malloc((n + 1) * sizeof *stats);
    uint32_t *leaves = malloc((info.leaves + 1) * sizeof *leaves), *faces = malloc((info.faces + 1) * sizeof *faces);
    int err = 0;
    for (int mode = 0; mode < 3; mode++) {
        int code = bbk_cull_many(lv, n, cams, mode, drawn, stats);
        if (code == BBK_ERR_NO_VIS || code == BBK_ERR_NO_PORTALS) continue;
        err |= code;
        fwrite(drawn, 1, n * info.leaves, out);
        fwrite(stats, sizeof *stats, n, out);
    }
    for (int mode = 0; mode < 3; mode++)
        for (size_t k = 0; k < n; k++) {
            bbk_cull_stats one;
            int code = bbk_cull(lv, cams + 8 * k, mode, BBK_CULL_BACK_TO_FRONT, leaves, info.leaves, faces, info.faces, &one);
            if (code == BBK_ERR_NO_VIS || code == BBK_ERR_NO_PORTALS) break;
            err |= code;
            fwrite(&one.leaves, 4, 1, out);
            fwrite(leaves, 4, one.leaves, out);
            fwrite(&one.faces, 4, 1, out);
            fwrite(faces, 4, one.faces, out);
        }
    fclose(out);
    free(drawn);
    free(stats);
    free(leaves);
    free(faces);
    free(cams);
    free(cambuf);
    free(data);
    bbk_free(lv);
    return err ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "fuzz")) return fuzz(argv[2]);
    if (argc == 5 && !strcmp(argv[1], "queries")) return queries(argv[2], argv[3], argv[4]);
    if (argc == 5 && !strcmp(argv[1], "cull")) return cull(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: bbk_driver fuzz CASES | queries LEVEL SEGMENTS OUT | cull LEVEL CAMERAS OUT\n");
    return 2;
}
