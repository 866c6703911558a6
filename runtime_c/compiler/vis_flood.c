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
