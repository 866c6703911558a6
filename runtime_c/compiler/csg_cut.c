/* The CSG's cutting of faces (core/compile/trees/csg.py _cut_faces and _remove_inside_batch, the
 * reference) in C, face by face.  The NumPy cuts every live piece by its next cutter in rounds
 * across all faces; a face cut by hundreds of brushes (a floor slab) then costs hundreds of rounds
 * of NumPy calls.  Here each face is a depth-first walk: a piece is cut by the first brush on its
 * list, and each part it leaves goes on with the rest of the list (narrowed to the part's bounds
 * when the part changed), the parts in order, so the pieces come out in the reference's order.
 * Every distance is detmath's ((x nx + y ny) + z nz) - d and every split split.c's (built with
 * -ffp-contract=off), so the pieces are the reference's to the bit (tests/core/test_csg_cut_c.py).
 * GPL-3.0-or-later. */
#include "bbk_compiler.h"
#include "bbkc_vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A growable array of items of one size. */
typedef struct {
    void *p;
    size_t cap, item;
} grow;

static int reserve(grow *g, size_t n) {
    if (n <= g->cap)
        return 1;
    size_t c = g->cap ? g->cap : 64;
    while (c < n)
        c *= 2;
    void *q = realloc(g->p, c * g->item);
    if (!q)
        return 0;
    g->p = q;
    g->cap = c;
    return 1;
}

/* A piece waiting on the walk's stack: its vertices and cutter list in the two arenas. */
typedef struct {
    int64_t vert_at, count, list_at, list_len;
    int whole;
} entry;

/* A part one cutter leaves of a piece (in the parts buffer). */
typedef struct {
    int64_t vert_at, count;
    int changed, whole;
} part;

typedef struct {
    grow stack, verts, lists;           /* the walk */
    grow parts, part_verts, rest_list;  /* one piece's cut */
    grow lo, hi, flush, rest, pd, fo, bo; /* one cutter's planes, the piece left, a split */
} work;

/* Each plane's least and greatest distance of the polygon's vertices (NaN when one is NaN, as
 * NumPy's min and max). */
static void extremes(const double *pv, int64_t count, const double *nrm, const double *dst, int64_t kc, double *lo,
                     double *hi) {
    for (int64_t k = 0; k < kc; k++) {
        double l = 0.0, h = 0.0;
        int nan = 0;
        for (int64_t r = 0; r < count; r++) {
            const double d = plane_dist(pv + 3 * r, nrm + 3 * k, dst[k]);
            nan |= d != d;
            l = (r == 0 || d < l) ? d : l;
            h = (r == 0 || d > h) ? d : h;
        }
        lo[k] = nan ? NAN : l;
        hi[k] = nan ? NAN : h;
    }
}

static int add_part(work *w, const double *pv, int64_t count, int changed, int whole, int64_t *n_parts,
                    int64_t *n_part_verts) {
    if (!reserve(&w->parts, (size_t)*n_parts + 1) || !reserve(&w->part_verts, 3 * (size_t)(*n_part_verts + count)))
        return 0;
    part *p = (part *)w->parts.p + *n_parts;
    p->vert_at = *n_part_verts, p->count = count, p->changed = changed, p->whole = whole;
    memcpy((double *)w->part_verts.p + 3 * *n_part_verts, pv, 3 * (size_t)count * sizeof(double));
    *n_parts += 1;
    *n_part_verts += count;
    return 1;
}

/* _remove_inside_batch for one piece and its cutter c: the parts kept, in order (fronts as they
 * are split off, then the rest), into w->parts.  Returns 0 when out of memory. */
static int remove_inside(work *w, const double *pv, int64_t count, int whole, int64_t c, int64_t f,
                         const int64_t *face_brush, const double *face_normal, int64_t k_max,
                         const int64_t *plane_count, const double *normals, const double *dists, double eps,
                         int64_t *n_parts) {
    const int64_t kc = plane_count[c];
    const double *nrm = normals + 3 * k_max * c, *dst = dists + k_max * c, *fn = face_normal + 3 * f;
    int64_t n_part_verts = 0;
    *n_parts = 0;
    if (!reserve(&w->lo, (size_t)kc + 1) || !reserve(&w->hi, (size_t)kc + 1) || !reserve(&w->flush, (size_t)kc + 1))
        return 0;
    double *lo = w->lo.p, *hi = w->hi.p;
    uint8_t *flush = w->flush.p;
    extremes(pv, count, nrm, dst, kc, lo, hi);
    int kept_whole = 0;
    for (int64_t k = 0; k < kc; k++) {
        flush[k] = dot3(nrm + 3 * k, fn) > 0 && face_brush[f] < c; /* facing the same way, the brush later */
        const int on = hi[k] <= eps && lo[k] >= -eps;
        kept_whole |= (on && flush[k]) || (lo[k] >= -eps && hi[k] > eps);
    }
    if (kept_whole) /* outside (wholly in front of a plane), or flush with a later brush */
        return add_part(w, pv, count, 0, whole, n_parts, &n_part_verts);
    if (!reserve(&w->rest, 3 * (size_t)count))
        return 0;
    memcpy(w->rest.p, pv, 3 * (size_t)count * sizeof(double));
    int64_t rest_n = count, start = 0;
    int rest_whole = whole;
    for (;;) {
        int64_t k = start;
        while (k < kc && !(hi[k] > eps || (hi[k] <= eps && lo[k] >= -eps && flush[k])))
            k++;
        if (k == kc) /* behind every plane left: inside, dropped */
            return 1;
        if (hi[k] <= eps || lo[k] >= -eps) /* flush, or wholly in front: kept */
            return add_part(w, w->rest.p, rest_n, 1, rest_whole, n_parts, &n_part_verts);
        if (!reserve(&w->pd, (size_t)rest_n) || !reserve(&w->fo, 6 * (size_t)rest_n) ||
            !reserve(&w->bo, 6 * (size_t)rest_n))
            return 0;
        double *rest = w->rest.p, *pd = w->pd.p;
        for (int64_t r = 0; r < rest_n; r++)
            pd[r] = plane_dist(rest + 3 * r, nrm + 3 * k, dst[k]);
        int64_t nf, nb;
        bbkc_split_polygons(1, rest_n, rest, &rest_n, pd, nrm + 3 * k, dst + k, eps, w->fo.p, &nf, w->bo.p, &nb);
        nf = nf < 3 ? 0 : nf;
        nb = nb < 3 ? 0 : nb;
        if (nf && !add_part(w, w->fo.p, nf, 1, 0, n_parts, &n_part_verts))
            return 0;
        if (!nb)
            return 1;
        if (!reserve(&w->rest, 3 * (size_t)nb))
            return 0;
        memcpy(w->rest.p, w->bo.p, 3 * (size_t)nb * sizeof(double));
        rest_n = nb, rest_whole = 0, start = k + 1;
        extremes(w->rest.p, rest_n, nrm, dst, kc, lo, hi);
    }
}

/* Whether brush c's grown bounds reach the box [plo, phi] (csg._Cutters.reaches). */
static int reaches(const double *lo, const double *hi, int64_t c, const double *plo, const double *phi) {
    for (int i = 0; i < 3; i++)
        if (!(lo[3 * c + i] <= phi[i]) || !(hi[3 * c + i] >= plo[i]))
            return 0;
    return 1;
}

/* Push a piece: its vertices and its list (the rest list, narrowed to the piece's bounds when
 * narrow). */
static int push(work *w, int64_t *sp, int64_t *v_top, int64_t *l_top, const double *pv, int64_t count, int whole,
                const int64_t *list, int64_t list_len, int narrow, const double *lo, const double *hi) {
    if (!reserve(&w->stack, (size_t)*sp + 1) || !reserve(&w->verts, 3 * (size_t)(*v_top + count)) ||
        !reserve(&w->lists, (size_t)(*l_top + list_len)))
        return 0;
    entry *e = (entry *)w->stack.p + *sp;
    e->vert_at = *v_top, e->count = count, e->list_at = *l_top, e->whole = whole;
    memcpy((double *)w->verts.p + 3 * *v_top, pv, 3 * (size_t)count * sizeof(double));
    int64_t *out = (int64_t *)w->lists.p + *l_top, m = 0;
    if (!narrow) {
        memcpy(out, list, (size_t)list_len * sizeof(int64_t));
        m = list_len;
    } else {
        double plo[3], phi[3];
        for (int i = 0; i < 3; i++) {
            double a = INFINITY, b = -INFINITY;
            int nan = 0;
            for (int64_t r = 0; r < count; r++) {
                const double x = pv[3 * r + i];
                nan |= x != x;
                a = x < a ? x : a;
                b = x > b ? x : b;
            }
            plo[i] = nan ? NAN : a;
            phi[i] = nan ? NAN : b;
        }
        for (int64_t j = 0; j < list_len; j++)
            if (reaches(lo, hi, list[j], plo, phi))
                out[m++] = list[j];
    }
    e->list_len = m;
    *sp += 1;
    *v_top += count;
    *l_top += m;
    return 1;
}

static void release(work *w) {
    grow *all[] = {&w->stack, &w->verts, &w->lists, &w->parts, &w->part_verts, &w->rest_list, &w->lo,
                   &w->hi, &w->flush, &w->rest, &w->pd, &w->fo, &w->bo};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]->p);
}

int64_t bbkc_cut_faces(int64_t n, const int64_t *face_ids, const double *verts, const int64_t *vert_first,
                       const int64_t *vert_count, const int64_t *face_brush, const double *face_normal,
                       const int64_t *cut_first, const int64_t *cutters, int64_t k_max, const int64_t *plane_count,
                       const double *normals, const double *dists, const double *lo, const double *hi, double eps,
                       int64_t cap_pieces, int64_t cap_verts, int64_t *piece_face, int64_t *piece_count,
                       uint8_t *piece_whole, double *piece_verts, int64_t *n_out) {
    work w = {{0, 0, sizeof(entry)}, {0, 0, sizeof(double)}, {0, 0, sizeof(int64_t)}, {0, 0, sizeof(part)},
              {0, 0, sizeof(double)}, {0, 0, sizeof(int64_t)}, {0, 0, sizeof(double)}, {0, 0, sizeof(double)},
              {0, 0, sizeof(uint8_t)}, {0, 0, sizeof(double)}, {0, 0, sizeof(double)}, {0, 0, sizeof(double)},
              {0, 0, sizeof(double)}};
    int64_t n_pieces = 0, n_verts = 0, done = 0;
    for (; done < n; done++) {
        const int64_t f = face_ids[done];
        const int64_t start_pieces = n_pieces, start_verts = n_verts;
        int64_t sp = 0, v_top = 0, l_top = 0;
        int full = 0;
        if (!push(&w, &sp, &v_top, &l_top, verts + 3 * vert_first[f], vert_count[f], 1, cutters + cut_first[f],
                  cut_first[f + 1] - cut_first[f], 0, lo, hi))
            goto out_of_memory;
        while (sp > 0) {
            const entry e = ((entry *)w.stack.p)[sp - 1];
            const double *pv = (double *)w.verts.p + 3 * e.vert_at;
            if (e.list_len == 0) { /* no cutter left: a piece of the face */
                if (n_pieces + 1 > cap_pieces || (!e.whole && n_verts + e.count > cap_verts)) {
                    full = 1;
                    break;
                }
                piece_face[n_pieces] = done, piece_count[n_pieces] = e.count, piece_whole[n_pieces] = (uint8_t)e.whole;
                if (!e.whole) {
                    memcpy(piece_verts + 3 * n_verts, pv, 3 * (size_t)e.count * sizeof(double));
                    n_verts += e.count;
                }
                n_pieces++;
                sp--, v_top = e.vert_at, l_top = e.list_at;
                continue;
            }
            const int64_t *list = (int64_t *)w.lists.p + e.list_at;
            int64_t n_parts;
            if (!remove_inside(&w, pv, e.count, e.whole, list[0], f, face_brush, face_normal, k_max, plane_count,
                               normals, dists, eps, &n_parts))
                goto out_of_memory;
            const int64_t rest_len = e.list_len - 1;
            if (!reserve(&w.rest_list, (size_t)rest_len + 1))
                goto out_of_memory;
            memcpy(w.rest_list.p, list + 1, (size_t)rest_len * sizeof(int64_t));
            sp--, v_top = e.vert_at, l_top = e.list_at;
            for (int64_t j = n_parts - 1; j >= 0; j--) { /* the first part on top: walked first */
                const part p = ((part *)w.parts.p)[j];
                if (!push(&w, &sp, &v_top, &l_top, (double *)w.part_verts.p + 3 * p.vert_at, p.count, p.whole,
                          w.rest_list.p, rest_len, p.changed, lo, hi))
                    goto out_of_memory;
            }
        }
        if (full) { /* this face's pieces do not fit: the caller makes room and calls again */
            n_pieces = start_pieces, n_verts = start_verts;
            break;
        }
    }
    n_out[0] = n_pieces;
    n_out[1] = n_verts;
    release(&w);
    return done;
out_of_memory:
    release(&w);
    return BBKC_ERR_MEMORY;
}
