/* A test driver for runtime_c/compiler/vis_flow.c (tests/core/test_pvs_flow_c.py builds it with
 * -fsanitize=address,undefined).
 *
 *   flow_driver INPUTS OUT
 *       INPUTS: the flow's tables as test_pvs_flow_c.py's dump_inputs writes them: 9 int64 (D, C,
 *       M, K, flood_stride, cl_stride, max_growth, order_k, max_winding), 5 doubles (clip_margin,
 *       plane_epsilon, min_normal, growth_epsilon, wait_key_step), then the arrays in
 *       bbk_compiler.h's order (windings, count, normal, dist, plane, src, dst, dirs, full, centre,
 *       first, leaving, flood_bits, might_cl, test_cl), then D radii (doubles);
 *       OUT: for every source portal, its packed row (cl_stride bytes) and its three counts (int64);
 *       then the fast mode's kernels on these tables (the directed portals taken as undirected
 *       ones, the flood bits unpacked as the allowed table): above and below (D x D bytes each),
 *       allowed (2D x 2D), flood (D x D), cluster rows (C x C).
 */
#include "../../runtime_c/compiler/bbk_compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *in;
static void *taken[24];
static int ntaken;

static void *take(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p || fread(p, 1, bytes, in) != bytes) {
        fprintf(stderr, "flow_driver: short input\n");
        exit(2);
    }
    taken[ntaken++] = p;
    return p;
}

int main(int argc, char **argv)
{
    int64_t head[9], s, d;
    const double *radius;
    uint8_t *above, *below, *allowed, *table, *flood, *rows;
    double consts[5];
    bbkc_flow f;
    FILE *out;
    uint8_t *row;
    if (argc != 3) {
        fprintf(stderr, "usage: flow_driver INPUTS OUT\n");
        return 2;
    }
    in = fopen(argv[1], "rb");
    if (!in || fread(head, sizeof head, 1, in) != 1 || fread(consts, sizeof consts, 1, in) != 1) {
        fprintf(stderr, "flow_driver: cannot read %s\n", argv[1]);
        return 2;
    }
    memset(&f, 0, sizeof f);
    f.num_portals = head[0], f.num_clusters = head[1], f.width = head[2], f.kdop = head[3];
    f.flood_stride = head[4], f.cl_stride = head[5], f.max_growth = head[6], f.order_k = head[7];
    f.max_winding = head[8];
    f.clip_margin = consts[0], f.plane_epsilon = consts[1], f.min_normal = consts[2];
    f.growth_epsilon = consts[3], f.wait_key_step = consts[4];
    {
        size_t d = (size_t)f.num_portals, k = (size_t)f.kdop, m = (size_t)f.width;
        f.windings = take(d * m * 3 * 8);
        f.count = take(d * 8);
        f.normal = take(d * 3 * 8);
        f.dist = take(d * 8);
        f.plane = take(d * 8);
        f.src = take(d * 8);
        f.dst = take(d * 8);
        f.dirs = take(d * k * 3 * 8);
        f.full = take(d * k * 8);
        f.centre = take(d * 3 * 8);
        f.first = take(((size_t)f.num_clusters + 1) * 8);
        f.leaving = take(d * 8);
        f.flood_bits = take(d * (size_t)f.flood_stride);
        f.might_cl = take(d * (size_t)f.cl_stride);
        f.test_cl = take(d * (size_t)f.cl_stride);
        radius = take(d * 8);
    }
    fclose(in);
    out = fopen(argv[2], "wb");
    row = malloc((size_t)f.cl_stride + 1);
    if (!out || !row)
        return 2;
    for (s = 0; s < f.num_portals; s++) {
        bbkc_flow_counts c;
        int rc = bbkc_flow_source(&f, s, row, &c);
        if (rc != BBKC_OK) {
            fprintf(stderr, "flow_driver: source %lld failed (%d)\n", (long long)s, rc);
            return 1;
        }
        fwrite(row, 1, (size_t)f.cl_stride, out);
        fwrite(&c, sizeof c, 1, out);
    }
    if (bbkc_flow_source(&f, -1, row, NULL) != BBKC_ERR_ARGUMENT) /* bad arguments are refused */
        return 1;
    d = f.num_portals;
    above = calloc((size_t)(d * d) + 1, 1), below = calloc((size_t)(d * d) + 1, 1);
    allowed = calloc((size_t)(4 * d * d) + 1, 1), table = calloc((size_t)(d * d) + 1, 1);
    flood = calloc((size_t)(d * d) + 1, 1);
    rows = calloc((size_t)(f.num_clusters * f.num_clusters) + 1, 1);
    if (!above || !below || !allowed || !table || !flood || !rows)
        return 2;
    for (s = 0; s < d * d; s++)
        table[s] = (f.flood_bits[(s / d) * f.flood_stride + ((s % d) >> 3)] >> ((s % d) & 7)) & 1;
    if (bbkc_plane_portal_reach(d, f.width, f.windings, f.count, f.normal, f.dist, f.centre, radius,
                                f.plane_epsilon, 0, d, above, below) != BBKC_OK ||
        bbkc_allowed(2 * d, above, below, 0, 2 * d, allowed) != BBKC_OK ||
        bbkc_flood(d, f.num_clusters, f.first, f.leaving, f.dst, table, 0, d, flood) != BBKC_OK ||
        bbkc_cluster_rows(d, f.num_clusters, f.first, f.leaving, f.dst, flood, 0, f.num_clusters, rows) != BBKC_OK)
        return 1;
    fwrite(above, 1, (size_t)(d * d), out);
    fwrite(below, 1, (size_t)(d * d), out);
    fwrite(allowed, 1, (size_t)(4 * d * d), out);
    fwrite(flood, 1, (size_t)(d * d), out);
    fwrite(rows, 1, (size_t)(f.num_clusters * f.num_clusters), out);
    free(above), free(below), free(allowed), free(table), free(flood), free(rows);
    fclose(out);
    free(row);
    while (ntaken)
        free(taken[--ntaken]);
    return 0;
}
