/* A test driver for runtime_c/compiler/vis_flow.c (tests/core/test_pvs_flow_c.py builds it with
 * -fsanitize=address,undefined).
 *
 *   flow_driver INPUTS OUT
 *       INPUTS: the flow's tables as test_pvs_flow_c.py's dump_inputs writes them: 9 int64 (D, C,
 *       M, K, flood_stride, cl_stride, max_growth, order_k, max_winding), 5 doubles (clip_margin,
 *       plane_epsilon, min_normal, growth_epsilon, wait_key_step), then the arrays in
 *       bbk_compiler.h's order (windings, count, normal, dist, plane, src, dst, dirs, full, centre,
 *       first, leaving, flood_bits, might_cl, test_cl), then D radii (doubles);
 *       OUT: for every source portal, its packed row (cl_stride bytes) and its three counts (int64)
 *       (checked here to be the same when all sources flow in one bbkc_flow_sources call);
 *       then the fast mode's kernels on these tables (the directed portals taken as undirected
 *       ones, the flood bits unpacked as the allowed table): above and below (D x D bytes each),
 *       allowed (2D x 2D), flood (D x D), cluster rows (C x C).
 *       The bit-row kernels (bbkc_reach_bits, bbkc_flood_bits, bbkc_cluster_rows_bits) are checked
 *       here against the byte kernels on the same tables (exit 1 when a bit differs), and
 *       bbkc_reach_bits_rep with bbkc_bits_transpose against bbkc_reach_bits: the reach of
 *       the D portals as undirected ones, and the flood and rows of the D directed portals from the
 *       reach of their even (undirected) halves.
 */
#include "../../runtime_c/compiler/bbk_compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *in;
static void *taken[24];
static int ntaken;

/* A bit table stored column by column (word k of row r at [k * rows + r]) against a byte table. */
static int bits_equal(const uint64_t *bits, const uint8_t *bytes, int64_t rows, int64_t cols)
{
    int64_t r, c;
    for (r = 0; r < rows; r++)
        for (c = 0; c < cols; c++)
            if ((int)((bits[(c >> 6) * rows + r] >> (c & 63)) & 1) != (bytes[r * cols + c] != 0))
                return 0;
    return 1;
}

/* bbkc_reach_bits_rep (each plane's first twin computed, the others' rows copied from it) and
 * bbkc_bits_transpose (in three calls, the last of a ragged width) against bbkc_reach_bits's tables
 * t; 1 when every word agrees. */
static int check_reach_rep(const bbkc_flow *f, const double *radius, int64_t words, uint64_t *const *t)
{
    const int64_t d = f->num_portals;
    int64_t *rep = malloc((size_t)(d + 1) * sizeof(int64_t)), a, b, k, twins = 0;
    uint64_t *r[4];
    int ok = rep != NULL, i;
    for (i = 0; i < 4; i++)
        ok = (r[i] = calloc((size_t)(d * words) + 1, sizeof(uint64_t))) != NULL && ok;
    for (a = 0; ok && a < d; a++) {
        rep[a] = a;
        for (b = 0; b < a && rep[a] == a; b++)
            if (!memcmp(f->normal + 3 * a, f->normal + 3 * b, 3 * sizeof(double)) &&
                !memcmp(f->dist + a, f->dist + b, sizeof(double)))
                rep[a] = b, twins++;
    }
    ok = ok && bbkc_reach_bits_rep(d, f->width, f->windings, f->count, f->normal, f->dist, f->centre, radius,
                                   f->plane_epsilon, rep, 0, d, words, r[0], r[1], r[2], r[3]) == BBKC_OK;
    for (a = 0; ok && a < d; a++)
        if (rep[a] != a)
            for (k = 0; k < words; k++)
                r[0][k * d + a] = r[0][k * d + rep[a]], r[1][k * d + a] = r[1][k * d + rep[a]];
    for (i = 0; ok && i < 2; i++) {
        const int64_t mid = d > 64 ? 64 : 0;
        ok = bbkc_bits_transpose(d, words, r[i], 0, mid, r[i + 2]) == BBKC_OK &&
             bbkc_bits_transpose(d, words, r[i], mid, d, r[i + 2]) == BBKC_OK &&
             (d < 2 || bbkc_bits_transpose(d, words, r[i], 1, d, r[i + 2]) == BBKC_ERR_ARGUMENT);
    }
    for (i = 0; ok && i < 4; i++)
        for (a = 0; ok && a < d; a++)
            for (k = 0; ok && k < (d + 63) / 64; k++)
                ok = r[i][k * d + a] == t[i][k * d + a];
    printf("reach twins %lld\n", (long long)twins);
    for (i = 0; i < 4; i++)
        free(r[i]);
    free(rep);
    return ok;
}

/* The bit-row kernels against the byte kernels; 0 when every bit agrees. */
static int check_bit_kernels(const bbkc_flow *f, const double *radius, const uint8_t *above, const uint8_t *below)
{
    const int64_t d = f->num_portals, c = f->num_clusters, p = d / 2, words = (d + 63) / 64 + 1;
    const int64_t pw = (p + 63) / 64 + 1, fs = (d + 7) / 8, cs = (c + 7) / 8;
    uint64_t *t[4], *e[4];
    double *w, *nrm, *dist, *cen, *rad;
    int64_t *cnt, *sizes, i, j, a;
    uint8_t *ea, *eb, *allowed, *flood, *fbits, *might, *rows, *rows_ref;
    int ok = 1;
    for (i = 0; i < 4; i++) {
        t[i] = calloc((size_t)(d * words) + 1, sizeof(uint64_t));
        e[i] = calloc((size_t)(p * pw) + 1, sizeof(uint64_t));
    }
    w = malloc((size_t)(p * f->width * 3 + 1) * sizeof(double)), nrm = malloc((size_t)(3 * p + 1) * sizeof(double));
    dist = malloc((size_t)(p + 1) * sizeof(double)), cen = malloc((size_t)(3 * p + 1) * sizeof(double));
    rad = malloc((size_t)(p + 1) * sizeof(double)), cnt = malloc((size_t)(p + 1) * sizeof(int64_t));
    sizes = malloc((size_t)(d + 1) * sizeof(int64_t));
    ea = calloc((size_t)(p * p) + 1, 1), eb = calloc((size_t)(p * p) + 1, 1);
    allowed = calloc((size_t)(d * d) + 1, 1), flood = calloc((size_t)(d * d) + 1, 1);
    fbits = calloc((size_t)(d * fs) + 1, 1), might = calloc((size_t)(d * cs) + 1, 1);
    rows = calloc((size_t)(c * c) + 1, 1), rows_ref = calloc((size_t)(c * c) + 1, 1);
    if (!t[3] || !e[3] || !w || !nrm || !dist || !cen || !rad || !cnt || !sizes || !ea || !eb || !allowed ||
        !flood || !fbits || !might || !rows || !rows_ref)
        return 2;
    /* the reach of all D portals, in two calls (planes [0, 64) and [64, D)) */
    if (bbkc_reach_bits(d, f->width, f->windings, f->count, f->normal, f->dist, f->centre, radius,
                        f->plane_epsilon, 0, d < 64 ? d : 64, words, t[0], t[1], t[2], t[3]) != BBKC_OK ||
        (d > 64 && bbkc_reach_bits(d, f->width, f->windings, f->count, f->normal, f->dist, f->centre, radius,
                                   f->plane_epsilon, 64, d, words, t[0], t[1], t[2], t[3]) != BBKC_OK) ||
        bbkc_reach_bits(d, f->width, f->windings, f->count, f->normal, f->dist, f->centre, radius,
                        f->plane_epsilon, 1, d, words, t[0], t[1], t[2], t[3]) != BBKC_ERR_ARGUMENT)
        ok = 0;
    ok = ok && bits_equal(t[0], above, d, d) && bits_equal(t[1], below, d, d);
    ok = ok && check_reach_rep(f, radius, words, t);
    for (a = 0; ok && a < d; a++)
        for (j = 0; j < d; j++)
            if ((int)((t[2][(a >> 6) * d + j] >> (a & 63)) & 1) != above[a * d + j] ||
                (int)((t[3][(a >> 6) * d + j] >> (a & 63)) & 1) != below[a * d + j])
                ok = 0;
    /* the directed portals' flood from their even halves' reach */
    for (i = 0; i < p; i++) {
        memcpy(w + i * f->width * 3, f->windings + 2 * i * f->width * 3, (size_t)f->width * 3 * sizeof(double));
        memcpy(nrm + 3 * i, f->normal + 6 * i, 3 * sizeof(double));
        memcpy(cen + 3 * i, f->centre + 6 * i, 3 * sizeof(double));
        dist[i] = f->dist[2 * i], rad[i] = radius[2 * i], cnt[i] = f->count[2 * i];
    }
    if (ok && (bbkc_reach_bits(p, f->width, w, cnt, nrm, dist, cen, rad, f->plane_epsilon, 0, p, pw, e[0], e[1], e[2],
                               e[3]) != BBKC_OK ||
               bbkc_plane_portal_reach(p, f->width, w, cnt, nrm, dist, cen, rad, f->plane_epsilon, 0, p, ea, eb) !=
                   BBKC_OK ||
               bbkc_allowed(d, ea, eb, 0, d, allowed) != BBKC_OK ||
               bbkc_flood(d, c, f->first, f->leaving, f->dst, allowed, 0, d, flood) != BBKC_OK ||
               bbkc_flood_bits(d, c, f->first, f->leaving, f->dst, pw, e[0], e[1], e[2], e[3], 0, d, fs, fbits, cs,
                               might, sizes) != BBKC_OK ||
               (d > 1 && bbkc_flood_bits(d, c, f->first, f->leaving, f->dst, pw, e[0], e[1], e[2], e[3], 1, d, fs,
                                         fbits, cs, might, sizes) != BBKC_ERR_ARGUMENT) ||
               bbkc_cluster_rows(d, c, f->first, f->leaving, f->dst, flood, 0, c, rows_ref) != BBKC_OK ||
               bbkc_cluster_rows_bits(c, f->first, f->leaving, f->dst, cs, might, 0, c, rows) != BBKC_OK))
        ok = 0;
    for (i = 0; ok && i < d; i++) {
        int64_t n = 0;
        uint8_t cl[1];
        for (j = 0; j < d; j++) {
            n += flood[i * d + j];
            if (((fbits[i * fs + (j >> 3)] >> (j & 7)) & 1) != flood[i * d + j])
                ok = 0;
        }
        for (j = 0; j < c && ok; j++) {
            int64_t q;
            cl[0] = 0;
            for (q = 0; q < d && !cl[0]; q++)
                cl[0] = (uint8_t)(flood[i * d + q] && f->dst[q] == j);
            if (((might[i * cs + (j >> 3)] >> (j & 7)) & 1) != cl[0])
                ok = 0;
        }
        ok = ok && sizes[i] == n;
    }
    ok = ok && memcmp(rows, rows_ref, (size_t)(c * c)) == 0;
    for (i = 0; i < 4; i++)
        free(t[i]), free(e[i]);
    free(w), free(nrm), free(dist), free(cen), free(rad), free(cnt), free(sizes), free(ea), free(eb);
    free(allowed), free(flood), free(fbits), free(might), free(rows), free(rows_ref);
    return ok ? 0 : 1;
}

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
    { /* every source in one call, on the same buffers (backwards): each row and count as alone */
        int64_t n = f.num_portals, *order = malloc((size_t)(n + 1) * sizeof(int64_t));
        uint8_t *all = malloc((size_t)(n * f.cl_stride) + 1);
        bbkc_flow_counts *cnt = malloc((size_t)(n + 1) * sizeof(bbkc_flow_counts)), one;
        if (!order || !all || !cnt)
            return 2;
        for (s = 0; s < n; s++)
            order[s] = n - 1 - s;
        if (bbkc_flow_sources(&f, order, n, all, cnt) != BBKC_OK)
            return 1;
        for (s = 0; s < n; s++) {
            if (bbkc_flow_source(&f, order[s], row, &one) != BBKC_OK ||
                memcmp(row, all + s * f.cl_stride, (size_t)f.cl_stride) != 0 || one.expanded != cnt[s].expanded ||
                one.clipped != cnt[s].clipped || one.most_growths != cnt[s].most_growths) {
                fprintf(stderr, "flow_driver: source %lld differs when flowed after others\n", (long long)order[s]);
                return 1;
            }
        }
        free(order), free(all), free(cnt);
    }
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
    if (check_bit_kernels(&f, radius, above, below) != 0) {
        fprintf(stderr, "flow_driver: the bit-row kernels differ from the byte kernels\n");
        return 1;
    }
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
