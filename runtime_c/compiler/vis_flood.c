/* The fast mode's flood and cluster rows (core/compile/vis/pvs_flow.py's simple_flood and
 * cluster_rows) as plain loops over the bytes of NumPy's bool tables.  Why in C: on a few thousand
 * portals NumPy's (D, D) steps take seconds, as long as the full flow's C kernel.  Nothing here is
 * a float: the same closure and the same ORs give the same bits.  GPL-3.0-or-later. */
#include "bbk_compiler.h"

#include <stdlib.h>
#include <string.h>

int bbkc_flood(int64_t num_portals, int64_t num_clusters, const int64_t *first, const int64_t *leaving,
               const int64_t *dst, const uint8_t *allowed, int64_t s0, int64_t s1, uint8_t *flood)
{
    uint8_t *reached;
    int64_t *queue, s;
    if (num_portals < 0 || num_clusters < 0 || s0 < 0 || s1 > num_portals || s0 > s1)
        return BBKC_ERR_ARGUMENT;
    reached = malloc((size_t)num_clusters + 1);
    queue = malloc(((size_t)num_clusters + 1) * sizeof(int64_t));
    if (!reached || !queue) {
        free(reached), free(queue);
        return BBKC_ERR_MEMORY;
    }
    for (s = s0; s < s1; s++) {
        const uint8_t *ok = allowed + s * num_portals;
        uint8_t *out = flood + s * num_portals;
        int64_t head = 0, tail = 0;
        memset(reached, 0, (size_t)num_clusters);
        memset(out, 0, (size_t)num_portals);
        reached[dst[s]] = 1;
        queue[tail++] = dst[s];
        while (head < tail) {
            int64_t c = queue[head++], i;
            for (i = first[c]; i < first[c + 1]; i++) {
                int64_t q = leaving[i];
                if (!ok[q])
                    continue;
                out[q] = 1;
                if (!reached[dst[q]]) {
                    reached[dst[q]] = 1;
                    queue[tail++] = dst[q];
                }
            }
        }
    }
    free(reached), free(queue);
    return BBKC_OK;
}

int bbkc_cluster_rows(int64_t num_portals, int64_t num_clusters, const int64_t *first, const int64_t *leaving,
                      const int64_t *dst, const uint8_t *portal_vis, int64_t c0, int64_t c1, uint8_t *rows)
{
    int64_t c;
    if (num_portals < 0 || num_clusters < 0 || c0 < 0 || c1 > num_clusters || c0 > c1)
        return BBKC_ERR_ARGUMENT;
    for (c = c0; c < c1; c++) {
        uint8_t *row = rows + c * num_clusters;
        int64_t i, q;
        memset(row, 0, (size_t)num_clusters);
        row[c] = 1;
        for (i = first[c]; i < first[c + 1]; i++) {
            int64_t p = leaving[i];
            const uint8_t *sees = portal_vis + p * num_portals;
            row[dst[p]] = 1;
            for (q = 0; q < num_portals; q++)
                if (sees[q])
                    row[dst[q]] = 1;
        }
    }
    return BBKC_OK;
}

/* BasePortalVis's table for planes [a0, a1) (pvs_flow._plane_portal_reach): above[a][u] when some
 * vertex of portal u lies more than eps in front of plane a, below[a][u] when some lies more than
 * eps behind it.  Decided by u's bounding sphere (centre, radius: the reference's, given) where it
 * lies clear of +-eps, else by the vertices, each distance summed x, y, z in order, as the
 * reference does. */
int bbkc_plane_portal_reach(int64_t num, int64_t width, const double *windings, const int64_t *count,
                            const double *normal, const double *dist, const double *centre, const double *radius,
                            double eps, int64_t a0, int64_t a1, uint8_t *above, uint8_t *below)
{
    int64_t a, u, i;
    if (num < 0 || width < 0 || a0 < 0 || a1 > num || a0 > a1)
        return BBKC_ERR_ARGUMENT;
    for (a = a0; a < a1; a++) {
        const double nx = normal[3 * a], ny = normal[3 * a + 1], nz = normal[3 * a + 2], d = dist[a];
        uint8_t *ab = above + a * num, *be = below + a * num;
        for (u = 0; u < num; u++) {
            const double *c = centre + 3 * u;
            double cd = c[0] * nx + c[1] * ny + c[2] * nz - d;
            double near = cd - radius[u], far = cd + radius[u];
            if ((near <= eps && far >= eps) || (near <= -eps && far >= -eps)) {
                const double *w = windings + u * width * 3;
                int hi = 0, lo = 0;
                for (i = 0; i < count[u]; i++) {
                    double vd = w[3 * i] * nx + w[3 * i + 1] * ny + w[3 * i + 2] * nz - d;
                    hi |= vd > eps;
                    lo |= vd < -eps;
                }
                ab[u] = (uint8_t)hi;
                be[u] = (uint8_t)lo;
            } else {
                ab[u] = near > eps;
                be[u] = far < -eps;
            }
        }
    }
    return BBKC_OK;
}

/* BasePortalVis's (D, D) table for sources [s0, s1) from the (P, P) tables above (P = D / 2):
 * directed portal 2p + 1 is portal p with its plane flipped, which swaps above and below.
 * allowed[s][q]: q reaches in front of s's plane and s behind q's; never s itself. */
int bbkc_allowed(int64_t num_directed, const uint8_t *above, const uint8_t *below, int64_t s0, int64_t s1,
                 uint8_t *allowed)
{
    const int64_t p = num_directed / 2;
    int64_t s, q;
    if (num_directed < 0 || (num_directed & 1) || s0 < 0 || s1 > num_directed || s0 > s1)
        return BBKC_ERR_ARGUMENT;
    for (s = s0; s < s1; s++) {
        const uint8_t *front = ((s & 1) ? below : above) + (s >> 1) * p;
        uint8_t *out = allowed + s * num_directed;
        for (q = 0; q < num_directed; q++) {
            const uint8_t *behind = (q & 1) ? above : below;
            out[q] = front[q >> 1] & behind[(q >> 1) * p + (s >> 1)];
        }
        out[s] = 0;
    }
    return BBKC_OK;
}

/* ---- The same fast mode on bit rows, with no (D, D) byte table ----------------------------------
 * On open worlds a portal's flood holds most of the world, so its byte tables (three of (D, D)
 * bytes and the flood's clusters unpacked) cost seconds and gigabytes; these keep every table as
 * bits and make the flood's packed rows, its clusters and the fast rows directly.  The same tests
 * in the same order as the byte kernels above: the same bits. */

/* The reach tables as 64-bit words, `words` words a row (words >= (num + 63) / 64) stored column
 * by column (word k of row r at [k * num + r]: the flood reads one word of every row at a time), for
 * planes [a0, a1) with a0 a multiple of 64 (so that calls on disjoint ranges write disjoint
 * words): above[a][u] / below[a][u] as bbkc_plane_portal_reach's, and their transposes
 * above_t[u][a], below_t[u][a].  Every array zeroed by the caller. */
int bbkc_reach_bits(int64_t num, int64_t width, const double *windings, const int64_t *count,
                    const double *normal, const double *dist, const double *centre, const double *radius,
                    double eps, int64_t a0, int64_t a1, int64_t words, uint64_t *above, uint64_t *below,
                    uint64_t *above_t, uint64_t *below_t)
{
    return bbkc_reach_bits_rep(num, width, windings, count, normal, dist, centre, radius, eps, NULL, a0, a1, words,
                               above, below, above_t, below_t);
}

int bbkc_reach_bits_rep(int64_t num, int64_t width, const double *windings, const int64_t *count,
                        const double *normal, const double *dist, const double *centre, const double *radius,
                        double eps, const int64_t *rep, int64_t a0, int64_t a1, int64_t words, uint64_t *above,
                        uint64_t *below, uint64_t *above_t, uint64_t *below_t)
{
    int64_t b0, u, i;
    if (num < 0 || width < 0 || a0 < 0 || a1 > num || a0 > a1 || (a0 & 63) || words < (num + 63) / 64)
        return BBKC_ERR_ARGUMENT;
    if (rep)
        for (i = a0; i < a1; i++)
            if (rep[i] < 0 || rep[i] > i)
                return BBKC_ERR_ARGUMENT;
    for (b0 = a0; b0 < a1; b0 += 64) {
        const int64_t b1 = b0 + 64 < a1 ? b0 + 64 : a1, col = b0 >> 6;
        for (u = 0; u < num; u++) {
            const double *c = centre + 3 * u, *w = windings + u * width * 3;
            const uint64_t ubit = (uint64_t)1 << (u & 63);
            uint64_t tab = 0, tbe = 0;
            int64_t a;
            for (a = b0; a < b1; a++) {
                const double nx = normal[3 * a], ny = normal[3 * a + 1], nz = normal[3 * a + 2], d = dist[a];
                double cd;
                if (rep && rep[a] != a) /* another plane's bits: bbkc_reach_copy */
                    continue;
                cd = c[0] * nx + c[1] * ny + c[2] * nz - d;
                double near = cd - radius[u], far = cd + radius[u];
                int hi, lo;
                if ((near <= eps && far >= eps) || (near <= -eps && far >= -eps)) {
                    hi = lo = 0;
                    for (i = 0; i < count[u]; i++) {
                        double vd = w[3 * i] * nx + w[3 * i + 1] * ny + w[3 * i + 2] * nz - d;
                        hi |= vd > eps;
                        lo |= vd < -eps;
                    }
                } else {
                    hi = near > eps;
                    lo = far < -eps;
                }
                if (hi) {
                    above[(u >> 6) * num + a] |= ubit;
                    tab |= (uint64_t)1 << (a & 63);
                }
                if (lo) {
                    below[(u >> 6) * num + a] |= ubit;
                    tbe |= (uint64_t)1 << (a & 63);
                }
            }
            above_t[col * num + u] = tab;
            below_t[col * num + u] = tbe;
        }
    }
    return BBKC_OK;
}

/* A 64 x 64 block of bits transposed in place: bit j of word i <-> bit i of word j (the
 * halves swapped, then the quarters, down to single bits: 6 passes of 32 word pairs). */
static void transpose64(uint64_t *m)
{
    static const uint64_t mask[6] = {0x00000000FFFFFFFFull, 0x0000FFFF0000FFFFull, 0x00FF00FF00FF00FFull,
                                     0x0F0F0F0F0F0F0F0Full, 0x3333333333333333ull, 0x5555555555555555ull};
    int w = 32, k, i;
    for (k = 0; k < 6; k++, w >>= 1)
        for (i = 0; i < 64; i++)
            if (!(i & w)) {
                uint64_t t = ((m[i] >> w) ^ m[i + w]) & mask[k];
                m[i] ^= t << w;
                m[i + w] ^= t;
            }
}

/* rows u of [u0, u1) (u0 a multiple of 64) of the transpose of a num x num bit table (`words` words
 * a row, stored column by column as bbkc_reach_bits's): bit a of out[u] = bit u of in[a].  Calls on
 * disjoint [u0, u1) write disjoint words. */
int bbkc_bits_transpose(int64_t num, int64_t words, const uint64_t *in, int64_t u0, int64_t u1, uint64_t *out)
{
    int64_t J, I, i;
    uint64_t m[64];
    if (num < 0 || u0 < 0 || u1 > num || u0 > u1 || (u0 & 63) || words < (num + 63) / 64)
        return BBKC_ERR_ARGUMENT;
    for (J = u0 >> 6; J << 6 < u1; J++)
        for (I = 0; I << 6 < num; I++) {
            for (i = 0; i < 64; i++)
                m[i] = (I << 6) + i < num ? in[J * num + (I << 6) + i] : 0;
            transpose64(m);
            for (i = 0; i < 64 && (J << 6) + i < u1; i++)
                out[I * num + (J << 6) + i] = m[i];
        }
    return BBKC_OK;
}

/* The 32 bits of x spread to the even bits of a 64-bit word. */
static uint64_t spread32(uint64_t x)
{
    x &= 0xFFFFFFFFu;
    x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
    x = (x | (x << 8)) & 0x00FF00FF00FF00FFull;
    x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0Full;
    x = (x | (x << 2)) & 0x3333333333333333ull;
    x = (x | (x << 1)) & 0x5555555555555555ull;
    return x;
}

/* 32 bits of row r of a table stored column by column (rows of num), from bit j (a multiple of 32). */
static uint64_t bits32(const uint64_t *table, int64_t num, int64_t r, int64_t j)
{
    return (table[(j >> 6) * num + r] >> (j & 63)) & 0xFFFFFFFFu;
}

/* The index of the lowest set bit of x (x != 0), by a de Bruijn sequence (portable C99). */
static int lowest_bit(uint64_t x)
{
    static const int index[64] = {0,  1,  48, 2,  57, 49, 28, 3,  61, 58, 50, 42, 38, 29, 17, 4,
                                  62, 55, 59, 36, 53, 51, 43, 22, 45, 39, 33, 30, 24, 18, 12, 5,
                                  63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23, 11,
                                  46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9,  13, 8,  7,  6};
    return index[((x & (0 - x)) * 0x03f79d71b4cb0a89ull) >> 58];
}

/* bbkc_flood for sources [s0, s1) from the reach bits, allowed[s][q] decided as bbkc_allowed
 * decides it: q != s, q reaches in front of s's plane (s even: above[s / 2], odd: below) and s
 * behind q's (q even: below[q / 2][s / 2], odd: above[q / 2][s / 2]).  64 sources at once (s0 a
 * multiple of 64): each portal gets a word of the sources that allow it (from the transposed rows
 * for the first test, the plain rows for the second), each cluster the word of sources that
 * reached it, and a worklist of clusters passes on only the sources newly arrived, so a (cluster,
 * source) pair is expanded once and 64 sources share each step.  The same closure as one source at
 * a time.  Writes flood row s packed (flood_stride bytes, bit q: byte q >> 3, bit q & 7), the
 * clusters its portals enter packed (cl_stride bytes: pvs_merged.portal_cluster_bits) and its
 * portal count (sizes[s]); the rows are zeroed here. */
int bbkc_flood_bits(int64_t num_portals, int64_t num_clusters, const int64_t *first, const int64_t *leaving,
                    const int64_t *dst, int64_t words, const uint64_t *above, const uint64_t *below,
                    const uint64_t *above_t, const uint64_t *below_t, int64_t s0, int64_t s1, int64_t flood_stride,
                    uint8_t *flood, int64_t cl_stride, uint8_t *might, int64_t *sizes)
{
    const int64_t d = num_portals, c = num_clusters;
    uint64_t *mask, *fl, *reached, *done;
    int64_t *queue, b;
    uint8_t *inq;
    if (d < 0 || (d & 1) || c < 0 || s0 < 0 || s1 > d || s0 > s1 || (s0 & 63) || words < (d / 2 + 63) / 64 ||
        flood_stride < (d + 7) / 8 || cl_stride < (c + 7) / 8)
        return BBKC_ERR_ARGUMENT;
    mask = malloc(((size_t)d + 1) * sizeof(uint64_t));
    fl = malloc(((size_t)d + 1) * sizeof(uint64_t));
    reached = malloc(((size_t)c + 1) * sizeof(uint64_t));
    done = malloc(((size_t)c + 1) * sizeof(uint64_t));
    queue = malloc(((size_t)c + 1) * sizeof(int64_t));
    inq = malloc((size_t)c + 1);
    if (!mask || !fl || !reached || !done || !queue || !inq) {
        free(mask), free(fl), free(reached), free(done), free(queue), free(inq);
        return BBKC_ERR_MEMORY;
    }
    for (b = s0; b < s1; b += 64) {
        const int64_t n = s1 - b < 64 ? s1 - b : 64, h = b >> 1;
        const uint64_t live = n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1);
        int64_t q, i, head = 0, tail = 0, j;
        /* mask[q] bit j: source b + j allows q; (b + j) / 2 = h + j / 2 */
        for (q = 0; q < d; q++) {
            const int64_t u = q >> 1;
            const uint64_t fe = bits32(above_t, d / 2, u, h), fo = bits32(below_t, d / 2, u, h);
            const uint64_t be = bits32((q & 1) ? above : below, d / 2, u, h);
            uint64_t m = (spread32(fe) | (spread32(fo) << 1)) & (spread32(be) * 3) & live;
            if (q >= b && q < b + 64)
                m &= ~((uint64_t)1 << (q - b));
            mask[q] = m;
            fl[q] = 0;
        }
        memset(reached, 0, (size_t)c * sizeof(uint64_t));
        memset(done, 0, (size_t)c * sizeof(uint64_t));
        memset(inq, 0, (size_t)c);
        for (j = 0; j < n; j++) {
            const int64_t to = dst[b + j];
            reached[to] |= (uint64_t)1 << j;
            if (!inq[to])
                inq[to] = 1, queue[tail++ % (c + 1)] = to;
        }
        while (head != tail) {
            const int64_t cl = queue[head++ % (c + 1)];
            const uint64_t fresh = reached[cl] & ~done[cl];
            inq[cl] = 0;
            done[cl] |= fresh;
            for (i = first[cl]; i < first[cl + 1]; i++) {
                const int64_t p = leaving[i], to = dst[p];
                const uint64_t x = fresh & mask[p];
                uint64_t added;
                if (!x)
                    continue;
                fl[p] |= x;
                added = x & ~reached[to];
                if (added) {
                    reached[to] |= added;
                    if (!inq[to])
                        inq[to] = 1, queue[tail++ % (c + 1)] = to;
                }
            }
        }
        for (j = 0; j < n; j++) {
            memset(flood + (b + j) * flood_stride, 0, (size_t)flood_stride);
            memset(might + (b + j) * cl_stride, 0, (size_t)cl_stride);
            sizes[b + j] = 0;
        }
        for (q = 0; q < d; q++) {
            uint64_t x = fl[q];
            const int64_t to = dst[q];
            while (x) {
                const int k = lowest_bit(x);
                x &= x - 1;
                flood[(b + k) * flood_stride + (q >> 3)] |= (uint8_t)(1u << (q & 7));
                might[(b + k) * cl_stride + (to >> 3)] |= (uint8_t)(1u << (to & 7));
                sizes[b + k]++;
            }
        }
    }
    free(mask), free(fl), free(reached), free(done), free(queue), free(inq);
    return BBKC_OK;
}

/* bbkc_cluster_rows from the flood's packed clusters (bbkc_flood_bits' might): row c (num_clusters
 * bytes, 0 or 1) holds c and, for every portal p leaving c, dst[p] and the clusters of p's flood. */
int bbkc_cluster_rows_bits(int64_t num_clusters, const int64_t *first, const int64_t *leaving, const int64_t *dst,
                           int64_t cl_stride, const uint8_t *might, int64_t c0, int64_t c1, uint8_t *rows)
{
    uint8_t *acc;
    int64_t c;
    if (num_clusters < 0 || c0 < 0 || c1 > num_clusters || c0 > c1 || cl_stride < (num_clusters + 7) / 8)
        return BBKC_ERR_ARGUMENT;
    acc = malloc((size_t)cl_stride + 1);
    if (!acc)
        return BBKC_ERR_MEMORY;
    for (c = c0; c < c1; c++) {
        uint8_t *row = rows + c * num_clusters;
        int64_t i, j;
        memset(acc, 0, (size_t)cl_stride);
        acc[c >> 3] |= (uint8_t)(1u << (c & 7));
        for (i = first[c]; i < first[c + 1]; i++) {
            const int64_t p = leaving[i];
            const uint8_t *m = might + p * cl_stride;
            acc[dst[p] >> 3] |= (uint8_t)(1u << (dst[p] & 7));
            for (j = 0; j < cl_stride; j++)
                acc[j] |= m[j];
        }
        for (j = 0; j < num_clusters; j++)
            row[j] = (acc[j >> 3] >> (j & 7)) & 1;
    }
    free(acc);
    return BBKC_OK;
}
