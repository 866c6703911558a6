/* The cell portals of a structural tree (core/compile/vis/portals.py cell_portals, the reference)
 * in C: qbsp's MakeTreePortals one depth level at a time, every node of a level at once, in the
 * reference's order.  At each level: each active node's cross-section (its plane's square clipped
 * by the distinct planes of the portals bounding it, those met first first), then every portal
 * bounding an active node split by its plane (side 0's nodes, then side 1's), the working set kept
 * in the reference's order (the untouched portals, then the fronts, then the backs, then the new
 * cross-sections), and the portals whose two sides are cells set aside.  Every distance is
 * detmath's and every split split.c's (built with -ffp-contract=off), so the portals are the
 * reference's to the bit (tests/core/test_cell_portals_c.py).  The caller steps it a level at a
 * time (progress, cancel) and copies the portals out.  GPL-3.0-or-later. */
#include "bbk_compiler.h"
#include "bbkc_vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t at, count; /* vertices in the arena */
    int64_t plane_id, side[2];
    double n[3], d;
} cp_portal;

struct bbkc_cells {
    /* the tree (the caller's arrays) */
    int64_t num_nodes;
    const int64_t *node_plane, *children;
    const uint8_t *structural;
    const double *plane_normals, *plane_dists, *squares;
    double eps;
    /* the walk */
    cp_portal *work, *done, *first, *second, *next, *backs;
    int64_t n_work, n_done, cap_work, cap_done, cap_first, cap_second, cap_next, cap_backs;
    double *verts; /* the windings' arena */
    int64_t n_verts, cap_verts;
    int64_t *active, n_active, *slot;
    uint8_t *is_active;
    /* one polygon's scratch */
    double *poly, *dist, *fo, *bo;
    int64_t cap_poly;
};

static void *grow_to(void *p, int64_t *cap, int64_t need, size_t item) {
    need = need < 1 ? 1 : need; /* never NULL for an empty array */
    if (need <= *cap && p)
        return p;
    int64_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, (size_t)c * item);
    if (q)
        *cap = c;
    return q;
}

#define GROW(ptr, cap, need, type)                                                                  \
    do {                                                                                            \
        type *q_ = grow_to((ptr), &(cap), (need), sizeof(type));                                   \
        if (!q_)                                                                                    \
            return BBKC_ERR_MEMORY;                                                                 \
        (ptr) = q_;                                                                                 \
    } while (0)

/* Append count vertices to the arena; returns their first row, or -1. */
static int64_t add_verts(bbkc_cells *c, const double *v, int64_t count) {
    double *q = grow_to(c->verts, &c->cap_verts, 3 * (c->n_verts + count), sizeof(double));
    if (!q)
        return -1;
    c->verts = q;
    memcpy(c->verts + 3 * c->n_verts, v, 3 * (size_t)count * sizeof(double));
    c->n_verts += count;
    return c->n_verts - count;
}

static int ensure_poly(bbkc_cells *c, int64_t count) {
    if (count <= c->cap_poly)
        return 1;
    int64_t cap = c->cap_poly ? c->cap_poly : 16;
    while (cap < count)
        cap *= 2;
    double *a = realloc(c->poly, 3 * (size_t)cap * sizeof(double)), *b;
    if (!a)
        return 0;
    c->poly = a;
    if (!(b = realloc(c->dist, (size_t)cap * sizeof(double))))
        return 0;
    c->dist = b;
    if (!(a = realloc(c->fo, 6 * (size_t)cap * sizeof(double))))
        return 0;
    c->fo = a;
    if (!(a = realloc(c->bo, 6 * (size_t)cap * sizeof(double))))
        return 0;
    c->bo = a;
    c->cap_poly = cap;
    return 1;
}

/* The distances of count vertices to (n, d) into c->dist, with their least and greatest (NaN when
 * one is NaN, as NumPy's min and max; +inf and -inf for no vertex) and the greatest |distance|. */
static void distances(bbkc_cells *c, const double *v, int64_t count, const double *n, double d, double *lo,
                      double *hi, double *big) {
    double l = INFINITY, h = -INFINITY, b = 0.0;
    int nan = 0;
    for (int64_t i = 0; i < count; i++) {
        const double x = plane_dist(v + 3 * i, n, d);
        c->dist[i] = x;
        nan |= x != x;
        l = x < l ? x : l;
        h = x > h ? x : h;
        b = fabs(x) > b ? fabs(x) : b;
    }
    *lo = nan ? NAN : l;
    *hi = nan ? NAN : h;
    *big = nan ? NAN : b;
}

bbkc_cells *bbkc_cells_start(int64_t num_nodes, const int64_t *node_plane, const int64_t *children,
                             const uint8_t *structural, const double *plane_normals, const double *plane_dists,
                             const double *squares, int64_t root, int64_t n_box, const double *box_verts,
                             const int64_t *box_plane, const double *box_normals, const double *box_dists,
                             const int64_t *box_sides, double eps) {
    bbkc_cells *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->num_nodes = num_nodes, c->node_plane = node_plane, c->children = children, c->structural = structural;
    c->plane_normals = plane_normals, c->plane_dists = plane_dists, c->squares = squares, c->eps = eps;
    c->slot = malloc(((size_t)num_nodes + 1) * sizeof(int64_t));
    c->is_active = calloc((size_t)num_nodes + 1, 1);
    c->active = malloc(((size_t)num_nodes + 1) * sizeof(int64_t));
    c->work = grow_to(NULL, &c->cap_work, n_box, sizeof(cp_portal));
    if (!c->slot || !c->is_active || !c->active || !c->work) {
        bbkc_cells_free(c);
        return NULL;
    }
    for (int64_t i = 0; i < n_box; i++) {
        cp_portal *p = c->work + i;
        if ((p->at = add_verts(c, box_verts + 12 * i, 4)) < 0) {
            bbkc_cells_free(c);
            return NULL;
        }
        p->count = 4, p->plane_id = box_plane[i], p->side[0] = box_sides[2 * i], p->side[1] = box_sides[2 * i + 1];
        memcpy(p->n, box_normals + 3 * i, sizeof p->n);
        p->d = box_dists[i];
    }
    c->n_work = n_box;
    c->n_active = root >= 0 && structural[root] ? 1 : 0;
    c->active[0] = root;
    return c;
}

static int final_side(const bbkc_cells *c, int64_t s) { return s < 0 || !c->structural[s]; }

/* The cross-sections of the active nodes, appended to c->next in active order. */
static int cross_sections(bbkc_cells *c, int64_t *n_next) {
    const int64_t na = c->n_active;
    int64_t *count = calloc((size_t)na + 1, sizeof(int64_t));
    if (!count)
        return BBKC_ERR_MEMORY;
    int64_t total = 0;
    for (int side = 0; side < 2; side++)
        for (int64_t i = 0; i < c->n_work; i++) {
            const int64_t s = c->work[i].side[side];
            if (s >= 0 && c->is_active[s])
                count[c->slot[s] + 1]++, total++;
        }
    for (int64_t k = 0; k < na; k++)
        count[k + 1] += count[k];
    int64_t *pos = malloc(((size_t)na + 1) * sizeof(int64_t)), *hit = malloc(((size_t)total + 1) * sizeof(int64_t));
    int64_t *key = malloc(((size_t)total + 1) * sizeof(int64_t));
    if (!pos || !hit || !key) {
        free(count), free(pos), free(hit), free(key);
        return BBKC_ERR_MEMORY;
    }
    memcpy(pos, count, (size_t)na * sizeof(int64_t));
    /* per node, its bounding portals in the reference's order: side 0's in working-set order, then side 1's */
    for (int side = 0; side < 2; side++)
        for (int64_t i = 0; i < c->n_work; i++) {
            const int64_t s = c->work[i].side[side];
            if (s >= 0 && c->is_active[s]) {
                const int64_t at = pos[c->slot[s]]++;
                hit[at] = 2 * i + side;
                key[at] = 2 * c->work[i].plane_id + side;
            }
        }
    int rc = BBKC_OK;
    for (int64_t k = 0; k < na && rc == BBKC_OK; k++) {
        const int64_t node = c->active[k];
        const int64_t plane = c->node_plane[node];
        if (!ensure_poly(c, 4)) {
            rc = BBKC_ERR_MEMORY;
            break;
        }
        memcpy(c->poly, c->squares + 12 * node, 12 * sizeof(double));
        int64_t n = 4;
        int64_t n_uniq = 0; /* the distinct (plane, side) keys met so far, in key[count[k] ..] */
        for (int64_t a = count[k]; a < count[k + 1]; a++) {
            int seen = 0; /* the first of each distinct (plane, side) only */
            for (int64_t b = count[k]; b < count[k] + n_uniq && !seen; b++)
                seen = key[b] == key[a];
            if (seen)
                continue;
            key[count[k] + n_uniq] = key[a], hit[count[k] + n_uniq] = hit[a], n_uniq++;
            if (n == 0)
                continue;
            const int64_t h = hit[count[k] + n_uniq - 1];
            const cp_portal *p = c->work + (h >> 1);
            const double sign = (h & 1) ? 1.0 : -1.0;
            const double cn[3] = {sign * p->n[0], sign * p->n[1], sign * p->n[2]}, cd = sign * p->d;
            double lo, hi, big;
            distances(c, c->poly, n, cn, cd, &lo, &hi, &big);
            if (lo >= -c->eps) { /* nothing behind the plane */
                n = 0;
                continue;
            }
            if (hi <= c->eps) /* wholly behind: as it is */
                continue;
            if (!ensure_poly(c, 2 * n + 2)) {
                rc = BBKC_ERR_MEMORY;
                break;
            }
            int64_t nf, nb;
            bbkc_split_polygons(1, n, c->poly, &n, c->dist, cn, &cd, c->eps, c->fo, &nf, c->bo, &nb);
            n = nb < 3 ? 0 : nb;
            memcpy(c->poly, c->bo, 3 * (size_t)n * sizeof(double));
        }
        if (rc != BBKC_OK || n < 3)
            continue;
        cp_portal q;
        if ((q.at = add_verts(c, c->poly, n)) < 0) {
            rc = BBKC_ERR_MEMORY;
            break;
        }
        q.count = n, q.plane_id = plane, q.side[0] = c->children[2 * node], q.side[1] = c->children[2 * node + 1];
        memcpy(q.n, c->plane_normals + 3 * plane, sizeof q.n);
        q.d = c->plane_dists[plane];
        c->next[(*n_next)++] = q;
    }
    free(count), free(pos), free(hit), free(key);
    return rc;
}

/* The portals of `in` whose side `side` is an active node, split by its plane: out gets the
 * others (in order), then the front pieces, then the back pieces (each in order). */
static int split_by_nodes(bbkc_cells *c, const cp_portal *in, int64_t n_in, int side, cp_portal *out,
                          int64_t *n_out, cp_portal *backs) {
    int64_t n = 0, nb_all = 0;
    for (int64_t i = 0; i < n_in; i++) {
        const int64_t s = in[i].side[side];
        if (!(s >= 0 && c->is_active[s]))
            out[n++] = in[i];
    }
    for (int64_t i = 0; i < n_in; i++) {
        const cp_portal *p = in + i;
        const int64_t node = p->side[side];
        if (!(node >= 0 && c->is_active[node]))
            continue;
        const int64_t plane = c->node_plane[node];
        const double *pn = c->plane_normals + 3 * plane, pd = c->plane_dists[plane];
        if (!ensure_poly(c, 2 * p->count + 2))
            return BBKC_ERR_MEMORY;
        double lo, hi, big;
        distances(c, c->verts + 3 * p->at, p->count, pn, pd, &lo, &hi, &big);
        int whole_front = lo >= -c->eps, whole_back = !whole_front && hi <= c->eps;
        if (big <= c->eps && !(dot3(p->n, pn) * (side == 0 ? 1.0 : -1.0) > 0)) /* on the plane, facing away */
            whole_front = 0, whole_back = 1;
        cp_portal f = *p, b = *p;
        f.side[side] = c->children[2 * node], b.side[side] = c->children[2 * node + 1];
        int64_t nf = whole_front ? p->count : 0, nb = whole_back ? p->count : 0;
        if (!whole_front && !whole_back) {
            bbkc_split_polygons(1, p->count, c->verts + 3 * p->at, &p->count, c->dist, pn, &pd, c->eps, c->fo, &nf,
                                c->bo, &nb);
            nf = nf < 3 ? 0 : nf;
            nb = nb < 3 ? 0 : nb;
            if (nf && (f.at = add_verts(c, c->fo, nf)) < 0)
                return BBKC_ERR_MEMORY;
            if (nb && (b.at = add_verts(c, c->bo, nb)) < 0)
                return BBKC_ERR_MEMORY;
        }
        f.count = nf, b.count = nb;
        if (nf >= 3)
            out[n++] = f;
        if (nb >= 3)
            backs[nb_all++] = b;
    }
    memcpy(out + n, backs, (size_t)nb_all * sizeof(cp_portal));
    *n_out = n + nb_all;
    return BBKC_OK;
}

static int64_t touched(const bbkc_cells *c, const cp_portal *in, int64_t n, int side) {
    int64_t t = 0;
    for (int64_t i = 0; i < n; i++)
        t += in[i].side[side] >= 0 && c->is_active[in[i].side[side]];
    return t;
}

int64_t bbkc_cells_step(bbkc_cells *c) {
    const int64_t level = c->n_active;
    if (!c->n_active) { /* no structural node left: the rest are cells' portals too */
        GROW(c->done, c->cap_done, c->n_done + c->n_work, cp_portal);
        memcpy(c->done + c->n_done, c->work, (size_t)c->n_work * sizeof(cp_portal));
        c->n_done += c->n_work, c->n_work = 0;
        return 0;
    }
    for (int64_t k = 0; k < c->n_active; k++)
        c->is_active[c->active[k]] = 1, c->slot[c->active[k]] = k;
    int64_t n_fresh = 0, n1, n2;
    GROW(c->next, c->cap_next, c->n_active + 1, cp_portal);
    int rc = cross_sections(c, &n_fresh); /* into c->next */
    if (rc != BBKC_OK)
        return rc;
    const int64_t t0 = touched(c, c->work, c->n_work, 0);
    GROW(c->first, c->cap_first, c->n_work + t0 + 1, cp_portal);
    GROW(c->backs, c->cap_backs, t0 + 1, cp_portal);
    if ((rc = split_by_nodes(c, c->work, c->n_work, 0, c->first, &n1, c->backs)) != BBKC_OK)
        return rc;
    const int64_t t1 = touched(c, c->first, n1, 1);
    GROW(c->second, c->cap_second, n1 + t1 + n_fresh + 1, cp_portal);
    GROW(c->backs, c->cap_backs, t1 + 1, cp_portal);
    if ((rc = split_by_nodes(c, c->first, n1, 1, c->second, &n2, c->backs)) != BBKC_OK)
        return rc;
    cp_portal *second = c->second;
    memcpy(second + n2, c->next, (size_t)n_fresh * sizeof(cp_portal));
    n2 += n_fresh;
    int64_t n_final = 0;
    for (int64_t i = 0; i < n2; i++)
        n_final += final_side(c, second[i].side[0]) && final_side(c, second[i].side[1]);
    GROW(c->done, c->cap_done, c->n_done + n_final, cp_portal);
    GROW(c->work, c->cap_work, n2 - n_final + 1, cp_portal);
    int64_t w = 0;
    for (int64_t i = 0; i < n2; i++) {
        if (final_side(c, second[i].side[0]) && final_side(c, second[i].side[1]))
            c->done[c->n_done++] = second[i];
        else
            c->work[w++] = second[i];
    }
    c->n_work = w;
    for (int64_t k = 0; k < c->n_active; k++)
        c->is_active[c->active[k]] = 0;
    /* the next level: each active node's structural children, front first (next holds them for a moment) */
    GROW(c->next, c->cap_next, 2 * c->n_active + 1, cp_portal);
    int64_t *kids = (int64_t *)c->next, na = 0;
    for (int64_t k = 0; k < c->n_active; k++)
        for (int ch = 0; ch < 2; ch++) {
            const int64_t x = c->children[2 * c->active[k] + ch];
            if (x >= 0 && c->structural[x])
                kids[na++] = x;
        }
    memcpy(c->active, kids, (size_t)na * sizeof(int64_t));
    c->n_active = na;
    return level;
}

int64_t bbkc_cells_pending(const bbkc_cells *c) { return c->n_active; }

void bbkc_cells_size(const bbkc_cells *c, int64_t *count, int64_t *width) {
    int64_t w = 3;
    for (int64_t i = 0; i < c->n_done; i++)
        w = c->done[i].count > w ? c->done[i].count : w;
    *count = c->n_done;
    *width = w;
}

void bbkc_cells_take(const bbkc_cells *c, int64_t width, double *verts, int64_t *counts, double *normals,
                     double *dists, int64_t *plane_id, int64_t *sides) {
    for (int64_t i = 0; i < c->n_done; i++) {
        const cp_portal *p = c->done + i;
        memcpy(verts + 3 * width * i, c->verts + 3 * p->at, 3 * (size_t)p->count * sizeof(double));
        counts[i] = p->count, plane_id[i] = p->plane_id, dists[i] = p->d;
        memcpy(normals + 3 * i, p->n, sizeof p->n);
        sides[2 * i] = p->side[0], sides[2 * i + 1] = p->side[1];
    }
}

void bbkc_cells_free(bbkc_cells *c) {
    if (!c)
        return;
    free(c->work), free(c->done), free(c->first), free(c->second), free(c->next), free(c->backs);
    free(c->verts), free(c->active), free(c->slot);
    free(c->is_active), free(c->poly), free(c->dist), free(c->fo), free(c->bo);
    free(c);
}
