/* Brushes from their planes (core/model/brushes.py _batch_polytope_vertices and _face_rings) in C:
 * a brush's corners, every triple of its planes intersected by Cramer's rule and kept when behind
 * every plane, merged where they round to the same point, with the planes each lies on; then each
 * face's ring, its corners sorted counter-clockwise by angle about their mean, its area, its short
 * edges dropped.  The NumPy functions are the reference; every value here goes through the same
 * operations in the same order (built with -ffp-contract=off; atan2 and nearbyint from libm, as
 * NumPy's path calls them), so corners, rings and areas are theirs to the bit
 * (tests/core/test_brush_faces_c.py).  GPL-3.0-or-later. */
#include "bbk_compiler.h"
#include "bbkc_vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>




int bbkc_brush_vertices(int64_t g, int64_t k, const double *normals, const double *dists, const uint8_t *good,
                        int64_t t, const int64_t *triples, double parallel_det, double vertex_eps, double min_edge,
                        double *verts, uint8_t *member, int64_t *vcount) {
    double *keys = malloc(sizeof(double) * (size_t)(3 * t + 1));
    if (!keys)
        return BBKC_ERR_MEMORY;
    for (int64_t b = 0; b < g; b++) {
        const double *n = normals + 3 * k * b, *dd = dists + k * b;
        double *out = verts + 3 * t * b;
        uint8_t *mem = member + k * t * b;
        int64_t corners = 0, n_ok = 0;
        vcount[b] = 0;
        if (!good[b])
            continue;
        memset(mem, 0, (size_t)(k * t));
        for (int64_t ti = 0; ti < t; ti++) { /* n_ok first: fewer than two, and no triple is a corner */
            const int64_t *tr = triples + 3 * ti;
            double bc[3];
            cross3(n + 3 * tr[1], n + 3 * tr[2], bc);
            n_ok += fabs(dot3(n + 3 * tr[0], bc)) > parallel_det;
        }
        if (n_ok < 2)
            continue;
        for (int64_t ti = 0; ti < t; ti++) {
            const int64_t *tr = triples + 3 * ti;
            const double *a = n + 3 * tr[0], *bb = n + 3 * tr[1], *c = n + 3 * tr[2];
            double bc[3], ca[3], ab[3], p[3];
            cross3(bb, c, bc);
            cross3(c, a, ca);
            cross3(a, bb, ab);
            const double det = dot3(a, bc);
            if (!(fabs(det) > parallel_det))
                continue;
            const double da = dd[tr[0]], db = dd[tr[1]], dc = dd[tr[2]];
            for (int j = 0; j < 3; j++)
                p[j] = (da * bc[j] + db * ca[j] + dc * ab[j]) / det;
            int inside = 1;
            for (int64_t q = 0; q < k && inside; q++)
                inside = plane_dist(p, n + 3 * q, dd[q]) <= vertex_eps;
            if (!inside)
                continue;
            /* the corner it rounds to (np.unique over rows compares as floats: -0 == 0) */
            double key[3];
            for (int j = 0; j < 3; j++)
                key[j] = nearbyint(p[j] / min_edge);
            int64_t at = 0;
            while (at < corners && !(keys[3 * at] == key[0] && keys[3 * at + 1] == key[1] && keys[3 * at + 2] == key[2]))
                at++;
            if (at == corners) {
                memcpy(keys + 3 * at, key, sizeof key);
                memcpy(out + 3 * at, p, sizeof p);
                corners++;
            }
            mem[k * at + tr[0]] = mem[k * at + tr[1]] = mem[k * at + tr[2]] = 1;
        }
        for (int64_t v = 0; v < corners; v++) /* and every plane a corner touches */
            for (int64_t q = 0; q < k; q++)
                if (fabs(plane_dist(out + 3 * v, n + 3 * q, dd[q])) <= vertex_eps)
                    mem[k * v + q] = 1;
        vcount[b] = corners;
    }
    free(keys);
    return BBKC_OK;
}

int bbkc_brush_faces(int64_t g, int64_t k, int64_t t, const double *normals, const double *verts,
                     const uint8_t *member, const int64_t *vcount, const uint8_t *face_ok, const int64_t *ring_first,
                     double min_edge, double *ring, int64_t *ring_count, double *area) {
    const double min_area = min_edge * min_edge;
    double *angle = malloc(sizeof(double) * (size_t)(t + 1));
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(t + 1));
    double *pts = malloc(sizeof(double) * (size_t)(3 * t + 3));
    if (!angle || !order || !pts) {
        free(angle), free(order), free(pts);
        return BBKC_ERR_MEMORY;
    }
    for (int64_t b = 0; b < g; b++) {
        const double *vb = verts + 3 * t * b;
        const uint8_t *mem = member + k * t * b;
        for (int64_t f = 0; f < k; f++) {
            const int64_t slot = k * b + f;
            ring_count[slot] = 0;
            area[slot] = 0.0;
            if (!face_ok[slot])
                continue;
            const double *n = normals + 3 * slot;
            /* the centre: the member corners' mean, as matmul(on.T, verts) / count sums it */
            double centre[3];
            int64_t count = 0;
            for (int64_t v = 0; v < vcount[b]; v++)
                count += mem[k * v + f] != 0;
            for (int j = 0; j < 3; j++) {
                double s = (mem[f] ? 1.0 : 0.0) * vb[j];
                for (int64_t v = 1; v < vcount[b]; v++)
                    s += (mem[k * v + f] ? 1.0 : 0.0) * vb[3 * v + j];
                centre[j] = s / (double)count;
            }
            /* the in-plane axes: u = n x e (e the axis after n's largest), unit; v = n x u */
            int axis = 0;
            for (int j = 1; j < 3; j++)
                if (fabs(n[j]) > fabs(n[axis]))
                    axis = j;
            double e[3] = {0.0, 0.0, 0.0}, u[3], w[3];
            e[(axis + 1) % 3] = 1.0;
            cross3(n, e, u);
            const double len = sqrt(dot3(u, u));
            for (int j = 0; j < 3; j++)
                u[j] = u[j] / len;
            cross3(n, u, w);
            /* the corners on the face in corner order, then stably sorted by angle */
            int64_t m = 0;
            for (int64_t v = 0; v < vcount[b]; v++) {
                if (!mem[k * v + f])
                    continue;
                double rel[3];
                for (int j = 0; j < 3; j++)
                    rel[j] = vb[3 * v + j] - centre[j];
                angle[m] = atan2(dot3(rel, w), dot3(rel, u));
                order[m++] = v;
            }
            for (int64_t i = 1; i < m; i++) { /* insertion sort: stable, a face has a few corners */
                const double ak = angle[i];
                const int64_t ok = order[i];
                int64_t j = i - 1;
                while (j >= 0 && angle[j] > ak) {
                    angle[j + 1] = angle[j];
                    order[j + 1] = order[j];
                    j--;
                }
                angle[j + 1] = ak;
                order[j + 1] = ok;
            }
            for (int64_t i = 0; i < m; i++)
                memcpy(pts + 3 * i, vb + 3 * order[i], 3 * sizeof(double));
            /* the area: half the length of the sum of the edges' cross products, summed in order */
            double sum[3] = {0.0, 0.0, 0.0};
            for (int64_t i = 0; i < m; i++) {
                double c[3];
                cross3(pts + 3 * i, pts + 3 * (i + 1 < m ? i + 1 : 0), c);
                for (int j = 0; j < 3; j++)
                    sum[j] = i ? sum[j] + c[j] : c[j];
            }
            const double a = 0.5 * sqrt(dot3(sum, sum));
            if (a <= min_area)
                continue;
            /* vertices whose edge to the next is not longer than min_edge are dropped */
            double *out = ring + 3 * ring_first[slot];
            int64_t kept = 0;
            for (int64_t i = 0; i < m; i++) {
                const double *p = pts + 3 * i, *q = pts + 3 * (i + 1 < m ? i + 1 : 0);
                double step[3];
                for (int j = 0; j < 3; j++)
                    step[j] = q[j] - p[j];
                if (dot3(step, step) > min_area)
                    memcpy(out + 3 * kept++, p, 3 * sizeof(double));
            }
            if (kept < 3)
                continue;
            ring_count[slot] = kept;
            area[slot] = a;
        }
    }
    free(angle), free(order), free(pts);
    return BBKC_OK;
}
