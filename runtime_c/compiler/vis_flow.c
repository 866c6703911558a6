/* The full portal flow, one source at a time: core/compile/vis/pvs_merged.py's _Wave.run for a
 * single source, with pvs_winding.py's clip_front, tangent_planes and clip_by_cutting and
 * pvs_merged.py's extents and pass_polygons written as plain loops.  Why in C: the NumPy path
 * spends about 8 us a state on array bookkeeping over batches of small polygons; here a state is
 * a few loops over a few vertices.  The NumPy path stays the reference: every sum below is the
 * reference's, term for term in its order (built with -ffp-contract=off), so the rows, the states
 * expanded and the growths are the same.  GPL-3.0-or-later. */
#include "bbk_compiler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int bbkc_version(void) { return BBKC_VERSION; }

/* A waiting state: its rank (the distance of its portal's nearest vertex from the source's plane,
 * on the key grid), then the order it was queued in (the reference's stable sort of [still
 * waiting, newly grown in portal order]). */
typedef struct wait_item {
    int64_t key, seq, q;
} wait_item;

typedef struct work {
    const bbkc_flow *f;
    int64_t s, k, c8, vmax;
    int64_t dirty;            /* slots below this were used by an earlier source of the call */
    int32_t *slot;            /* (D,) slot of state (s, q), -1 until reached */
    int64_t used, cap;
    double *h;                /* (cap, K) the pass polygon's k-DOP */
    uint8_t *might;           /* (cap, c8) clusters the chains to q might still see */
    int32_t *grown;           /* (cap,) growths */
    uint8_t *waiting;         /* (cap,) queued */
    double *pend_ext;         /* (cap, K) this step's largest extents */
    uint8_t *pend_mig;        /* (cap, c8) this step's might, OR-ed */
    uint8_t *pend_on;         /* (cap,) touched this step */
    int64_t *touched;         /* (cap,) portals of the states touched this step */
    int64_t *slot_q;          /* (cap,) the portal of each slot (to clear slot[] for the next source) */
    int64_t ntouched;
    wait_item *heap;
    int64_t nheap, heapcap, seq;
    uint8_t *row, *have, *smight;
    double *sw, *pw, *pw2, *tw, *tw2, *dbuf, *pn, *pd, *hcopy, *ext;
    int64_t *kids;
    bbkc_flow_counts counts;
} work;

static int bit(const uint8_t *row, int64_t j) { return (row[j >> 3] >> (j & 7)) & 1; }

/* The cluster-row loops, on restrict pointers and a local count so that the compiler makes them
 * vector loops (uint8_t stores may alias anything: without restrict every byte reloads the count). */
static void or_and_into(uint8_t *restrict out, const uint8_t *restrict a, const uint8_t *restrict b, int64_t n)
{
    int64_t j;
    for (j = 0; j < n; j++)
        out[j] |= a[j] & b[j];
}

static void or_into(uint8_t *restrict out, const uint8_t *restrict a, int64_t n)
{
    int64_t j;
    for (j = 0; j < n; j++)
        out[j] |= a[j];
}

/* Whether a has a bit b lacks. */
static int any_new(const uint8_t *restrict a, const uint8_t *restrict b, int64_t n)
{
    uint8_t acc = 0;
    int64_t j;
    for (j = 0; j < n; j++)
        acc |= a[j] & (uint8_t)~b[j];
    return acc != 0;
}

/* Whether a & b has a bit c lacks. */
static int any_new2(const uint8_t *restrict a, const uint8_t *restrict b, const uint8_t *restrict c, int64_t n)
{
    uint8_t acc = 0;
    int64_t j;
    for (j = 0; j < n; j++)
        acc |= a[j] & b[j] & (uint8_t)~c[j];
    return acc != 0;
}

/* clip_front: keep where n . x - d + margin >= 0.  Returns -1 when w is left as it is (nothing
 * cut, or more than max_winding vertices would come out: a superset), else the new count (0 below
 * three vertices) with the polygon in out. */
static int64_t clip(const double *w, int64_t n, double nx, double ny, double nz, double pd, double margin,
                    int64_t max_winding, double *out, double *d)
{
    int64_t i, kept = 0, cross = 0, count, o = 0;
    for (i = 0; i < n; i++) {
        d[i] = w[3 * i] * nx + w[3 * i + 1] * ny + w[3 * i + 2] * nz - pd + margin;
        kept += d[i] >= 0;
    }
    if (kept == n)
        return -1;
    for (i = 0; i < n; i++) {
        int64_t j = i + 1 < n ? i + 1 : 0;
        cross += (d[i] >= 0) != (d[j] >= 0);
    }
    count = kept + cross;
    if (count > max_winding)
        return -1;
    if (count < 3)
        return 0;
    for (i = 0; i < n; i++) {
        int64_t j = i + 1 < n ? i + 1 : 0;
        int ki = d[i] >= 0, kj = d[j] >= 0;
        if (ki) {
            out[3 * o] = w[3 * i];
            out[3 * o + 1] = w[3 * i + 1];
            out[3 * o + 2] = w[3 * i + 2];
            o++;
        }
        if (ki != kj) {
            double t = d[i] / (d[i] - d[j]);
            out[3 * o] = w[3 * i] + t * (w[3 * j] - w[3 * i]);
            out[3 * o + 1] = w[3 * i + 1] + t * (w[3 * j + 1] - w[3 * i + 1]);
            out[3 * o + 2] = w[3 * i + 2] + t * (w[3 * j + 2] - w[3 * i + 2]);
            o++;
        }
    }
    return count;
}

/* Clips *w (count *n) in place by the plane; *w and *spare swap when the result is new. */
static void clip_into(double **w, int64_t *n, double **spare, double nx, double ny, double nz, double pd,
                      const work *k)
{
    int64_t r = clip(*w, *n, nx, ny, nz, pd, k->f->clip_margin, k->f->max_winding, *spare, k->dbuf);
    if (r >= 0) {
        double *t = *w;
        *w = *spare;
        *spare = t;
        *n = r;
    }
}

static void copy_winding(double *out, const bbkc_flow *f, int64_t p)
{
    memcpy(out, f->windings + p * f->width * 3, (size_t)f->count[p] * 3 * sizeof(double));
}

/* pvs_winding.tangent_planes for source a (na vertices) and pass b (nb), then its _separates test;
 * the planes kept are appended to (pn, pd) from column m, negated when neg (the second way round
 * of packed_separators).  Returns the new column count. */
static int64_t tangent_planes(const double *a, int64_t na, const double *b, int64_t nb, const bbkc_flow *f,
                              double *pn, double *pd, int64_t m, int neg)
{
    double c[3], mn2 = f->min_normal * f->min_normal, eps = f->plane_epsilon;
    int64_t i, j, side;
    if (na <= 0)
        return m;
    c[0] = a[0], c[1] = a[1], c[2] = a[2];
    for (i = 1; i < na; i++)
        c[0] += a[3 * i], c[1] += a[3 * i + 1], c[2] += a[3 * i + 2];
    c[0] /= (double)na, c[1] /= (double)na, c[2] /= (double)na;
    for (i = 0; i < na; i++) {
        const double *ai = a + 3 * i, *an = a + 3 * (i + 1 < na ? i + 1 : 0);
        double e[3], t[3], u[3], v[3], ee, te, s, uu, au, av, best[2], x, y;
        int64_t pick[2] = {0, 0};
        for (j = 0; j < 3; j++)
            e[j] = an[j] - ai[j], t[j] = c[j] - ai[j];
        ee = e[0] * e[0] + e[1] * e[1] + e[2] * e[2];
        te = t[0] * e[0] + t[1] * e[1] + t[2] * e[2];
        s = te / (ee > 0 ? ee : 1.0);
        for (j = 0; j < 3; j++)
            u[j] = t[j] - s * e[j];
        uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
        v[0] = e[1] * u[2] - e[2] * u[1];
        v[1] = e[2] * u[0] - e[0] * u[2];
        v[2] = e[0] * u[1] - e[1] * u[0];
        au = ai[0] * u[0] + ai[1] * u[1] + ai[2] * u[2];
        av = ai[0] * v[0] + ai[1] * v[1] + ai[2] * v[2];
        best[0] = best[1] = -INFINITY;
        for (j = 0; j < nb; j++) {
            const double *q = b + 3 * j;
            double key;
            x = q[0] * u[0] + q[1] * u[1] + q[2] * u[2] - au;
            y = q[0] * v[0] + q[1] * v[1] + q[2] * v[2] - av;
            if (!(ee * (x * x) + y * y > mn2 * uu))
                continue;
            side = y > 0 ? 0 : y < 0 ? 1 : 2;
            /* x <= 0 (or NaN) makes key <= 0 (or NaN): it cannot pass a positive best, so the
             * division is skipped; the picks are those of computing every key */
            if (side == 2 || (best[side] > 0 && !(x > 0)))
                continue;
            key = x / fabs(y);
            if (key > best[side])
                best[side] = key, pick[side] = j;
        }
        for (side = 0; side < 2; side++) {
            const double *p = b + 3 * pick[side];
            double w[3], n[3], length, dist, dc, lo, hi, least, most;
            if (!(best[side] > -INFINITY))
                continue;
            for (j = 0; j < 3; j++)
                w[j] = p[j] - ai[j];
            n[0] = e[1] * w[2] - e[2] * w[1];
            n[1] = e[2] * w[0] - e[0] * w[2];
            n[2] = e[0] * w[1] - e[1] * w[0];
            length = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
            if (!(length > f->min_normal))
                continue;
            n[0] /= length, n[1] /= length, n[2] /= length;
            dist = n[0] * ai[0] + n[1] * ai[1] + n[2] * ai[2];
            dc = n[0] * c[0] + n[1] * c[1] + n[2] * c[2] - dist;
            lo = hi = n[0] * b[0] + n[1] * b[1] + n[2] * b[2] - dist;
            for (j = 1; j < nb; j++) {
                const double *q = b + 3 * j;
                double dq = n[0] * q[0] + n[1] * q[1] + n[2] * q[2] - dist;
                lo = dq < lo ? dq : lo;
                hi = dq > hi ? dq : hi;
            }
            if (dc > 0) {
                n[0] = -n[0], n[1] = -n[1], n[2] = -n[2], dist = -dist;
                least = -hi, most = -lo;
            } else {
                least = lo, most = hi;
            }
            if (!(fabs(dc) > eps && least >= -eps && most > eps))
                continue;
            if (neg)
                n[0] = -n[0], n[1] = -n[1], n[2] = -n[2], dist = -dist;
            pn[3 * m] = n[0], pn[3 * m + 1] = n[1], pn[3 * m + 2] = n[2];
            pd[m] = dist;
            m++;
        }
    }
    return m;
}

/* clip_by_cutting for one target: emptied when some plane has every vertex behind it, else
 * clipped in turn by the planes with some vertex behind them (of the target as it came). */
static void clip_by_cutting(double **w, int64_t *n, double **spare, const double *pn, const double *pd,
                            int64_t np_, work *k)
{
    const double margin = k->f->clip_margin;
    int64_t j, i, ncut = 0;
    int64_t *cut = k->kids + k->f->num_portals; /* scratch after the children */
    if (*n <= 0)
        return;
    for (j = 0; j < np_; j++) {
        int64_t behind = 0;
        for (i = 0; i < *n; i++) {
            const double *x = *w + 3 * i;
            double d = pn[3 * j] * x[0] + pn[3 * j + 1] * x[1] + pn[3 * j + 2] * x[2] - pd[j] + margin;
            behind += d < 0;
        }
        if (behind == *n) {
            *n = 0;
            return;
        }
        if (behind)
            cut[ncut++] = j;
    }
    for (i = 0; i < ncut && *n > 0; i++) {
        j = cut[i];
        clip_into(w, n, spare, pn[3 * j], pn[3 * j + 1], pn[3 * j + 2], pd[j], k);
    }
}

/* The largest d_k . x over the vertices, for each direction of portal q, plus the clip margin. */
static void extents(const double *w, int64_t n, const bbkc_flow *f, int64_t q, double *out)
{
    int64_t kk, i;
    for (kk = 0; kk < f->kdop; kk++) {
        const double *d = f->dirs + (q * f->kdop + kk) * 3;
        double best = -INFINITY;
        for (i = 0; i < n; i++) {
            double x = w[3 * i] * d[0] + w[3 * i + 1] * d[1] + w[3 * i + 2] * d[2];
            best = x > best ? x : best;
        }
        out[kk] = best + f->clip_margin;
    }
}

static int grow_slots(work *k, int64_t need)
{
    int64_t cap = k->cap * 2 > need ? k->cap * 2 : need, i;
    if (cap < 256)
        cap = 256;
#define GROW(p, type, per)                                                                                     \
    do {                                                                                                       \
        type *t_ = realloc(k->p, (size_t)(cap * (per)) * sizeof(type));                                        \
        if (!t_)                                                                                               \
            return BBKC_ERR_MEMORY;                                                                            \
        k->p = t_;                                                                                             \
    } while (0)
    GROW(h, double, k->k);
    GROW(might, uint8_t, k->c8);
    GROW(grown, int32_t, 1);
    GROW(waiting, uint8_t, 1);
    GROW(pend_ext, double, k->k);
    GROW(pend_mig, uint8_t, k->c8);
    GROW(pend_on, uint8_t, 1);
    GROW(touched, int64_t, 1);
    GROW(slot_q, int64_t, 1);
#undef GROW
    for (i = k->cap; i < cap; i++) {
        int64_t j;
        for (j = 0; j < k->k; j++)
            k->h[i * k->k + j] = -INFINITY, k->pend_ext[i * k->k + j] = -INFINITY;
        memset(k->might + i * k->c8, 0, (size_t)k->c8);
        memset(k->pend_mig + i * k->c8, 0, (size_t)k->c8);
        k->grown[i] = 0, k->waiting[i] = 0, k->pend_on[i] = 0;
    }
    k->cap = cap;
    return BBKC_OK;
}

/* _mark for one non-empty target: the sighting, and its extents and might merged into this
 * step's pending growth of state (s, q). */
static int mark(work *k, int64_t q, const double *w, int64_t n, const uint8_t *might_a, const uint8_t *might_b)
{
    const bbkc_flow *f = k->f;
    int64_t sl = k->slot[q], j;
    double *pe;
    uint8_t *pm;
    if (n <= 0)
        return BBKC_OK;
    k->row[f->dst[q] >> 3] |= (uint8_t)(1u << (f->dst[q] & 7));
    if (sl < 0) {
        if (k->used == k->cap && grow_slots(k, k->used + 1) != BBKC_OK)
            return BBKC_ERR_MEMORY;
        sl = k->used++;
        k->slot[q] = (int32_t)sl;
        k->slot_q[sl] = q;
        if (sl < k->dirty) { /* used by an earlier source of the call: made as grow_slots makes it */
            for (j = 0; j < k->k; j++)
                k->h[sl * k->k + j] = -INFINITY;
            memset(k->might + sl * k->c8, 0, (size_t)k->c8);
            k->grown[sl] = 0;
        }
    }
    extents(w, n, f, q, k->ext);
    pe = k->pend_ext + sl * k->k;
    pm = k->pend_mig + sl * k->c8;
    for (j = 0; j < k->k; j++)
        pe[j] = k->ext[j] > pe[j] ? k->ext[j] : pe[j];
    or_and_into(pm, might_a, might_b, k->c8);
    if (!k->pend_on[sl]) {
        k->pend_on[sl] = 1;
        k->touched[k->ntouched++] = q;
    }
    return BBKC_OK;
}

static int item_less(const wait_item *a, const wait_item *b)
{
    return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

static int push(work *k, int64_t q)
{
    const bbkc_flow *f = k->f;
    const double *w = f->windings + q * f->width * 3, *sn = f->normal + 3 * k->s;
    double dist = INFINITY, top = 1048576.0 - 1.0; /* 2 ** 20 - 1 */
    wait_item it;
    int64_t i;
    for (i = 0; i < f->count[q]; i++) { /* the portal's vertex nearest the source's plane */
        double d = w[3 * i] * sn[0] + w[3 * i + 1] * sn[1] + w[3 * i + 2] * sn[2] - f->dist[k->s];
        dist = d < dist ? d : dist;
    }
    dist = dist < 0.0 ? 0.0 : dist > top ? top : dist;
    it.key = (int64_t)floor(dist / f->wait_key_step);
    it.seq = k->seq++;
    it.q = q;
    if (k->nheap == k->heapcap) {
        int64_t cap = k->heapcap ? 2 * k->heapcap : 256;
        wait_item *t = realloc(k->heap, (size_t)cap * sizeof(wait_item));
        if (!t)
            return BBKC_ERR_MEMORY;
        k->heap = t, k->heapcap = cap;
    }
    i = k->nheap++;
    while (i > 0 && item_less(&it, &k->heap[(i - 1) / 2])) {
        k->heap[i] = k->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    k->heap[i] = it;
    k->waiting[k->slot[q]] = 1;
    return BBKC_OK;
}

static int64_t pop(work *k)
{
    wait_item top = k->heap[0], last = k->heap[--k->nheap];
    int64_t i = 0, n = k->nheap;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && item_less(&k->heap[c + 1], &k->heap[c]))
            c++;
        if (!item_less(&k->heap[c], &last))
            break;
        k->heap[i] = k->heap[c];
        i = c;
    }
    if (n > 0)
        k->heap[i] = last;
    return top.q;
}

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* _grow: this step's extents and might merged into the states, in portal order; the states that
 * grew and are not waiting are queued. */
static int grow(work *k)
{
    const bbkc_flow *f = k->f;
    int64_t t, j;
    if (k->ntouched > 1)
        qsort(k->touched, (size_t)k->ntouched, sizeof(int64_t), cmp_int64);
    for (t = 0; t < k->ntouched; t++) {
        int64_t sl = k->slot[k->touched[t]];
        double *h = k->h + sl * k->k, *pe = k->pend_ext + sl * k->k;
        uint8_t *m = k->might + sl * k->c8, *pm = k->pend_mig + sl * k->c8;
        int changed = 0;
        for (j = 0; j < k->k; j++)
            changed |= pe[j] > h[j] + f->growth_epsilon;
        changed |= any_new(pm, m, k->c8);
        if (changed) {
            k->grown[sl]++;
            if (k->grown[sl] > k->counts.most_growths)
                k->counts.most_growths = k->grown[sl];
            for (j = 0; j < k->k; j++)
                h[j] = k->grown[sl] > f->max_growth ? INFINITY : (pe[j] > h[j] ? pe[j] : h[j]);
            or_into(m, pm, k->c8);
            if (!k->waiting[sl] && push(k, k->touched[t]) != BBKC_OK)
                return BBKC_ERR_MEMORY;
        }
        for (j = 0; j < k->k; j++)
            pe[j] = -INFINITY;
        memset(pm, 0, (size_t)k->c8);
        k->pend_on[sl] = 0;
    }
    k->ntouched = 0;
    return BBKC_OK;
}

/* _expand for state (s, r). */
static int expand(work *k, int64_t r)
{
    const bbkc_flow *f = k->f;
    const int64_t s = k->s, sl = k->slot[r], cs = f->src[s];
    double *sw = k->sw, *pw = k->pw, *pw2 = k->pw2;
    int64_t sn = f->count[s], pnn = f->count[r], j, nk = 0, nplanes = 0, i;
    double *tmp = k->tw2;
    k->counts.expanded++;
    memcpy(k->smight, k->might + sl * k->c8, (size_t)k->c8);
    memcpy(k->hcopy, k->h + sl * k->k, (size_t)k->k * sizeof(double));
    copy_winding(sw, f, s);
    clip_into(&sw, &sn, &tmp, -f->normal[3 * r], -f->normal[3 * r + 1], -f->normal[3 * r + 2], -f->dist[r], k);
    if (sw != k->sw) { /* keep the source in k->sw, the spare in k->tw2 */
        memcpy(k->sw, sw, (size_t)sn * 3 * sizeof(double));
        sw = k->sw;
    }
    copy_winding(pw, f, r);
    for (j = 0; j < k->k; j++) {
        const double *d = f->dirs + (r * k->k + j) * 3;
        if (k->hcopy[j] < f->full[r * k->k + j] && pnn > 0)
            clip_into(&pw, &pnn, &pw2, -d[0], -d[1], -d[2], -k->hcopy[j], k);
    }
    if (sn <= 0 || pnn <= 0)
        return BBKC_OK;
    {
        const int64_t cl = f->dst[r], pflip = f->plane[r] ^ 1;
        const uint8_t *flood = f->flood_bits + s * f->flood_stride;
        for (i = f->first[cl]; i < f->first[cl + 1]; i++) {
            int64_t q = f->leaving[i], dq = f->dst[q];
            if (!bit(flood, q) || !bit(k->smight, dq) || f->plane[q] == pflip)
                continue;
            if (!(bit(f->test_cl + (q ^ 1) * f->cl_stride, cs) || f->src[q] == cs))
                continue;
            if (bit(k->have, dq)) { /* Quake's 'more' test on cluster bits */
                if (!any_new2(k->smight, f->test_cl + q * f->cl_stride, k->have, k->c8))
                    continue;
            }
            k->kids[nk++] = q;
        }
    }
    if (!nk)
        return BBKC_OK;
    nplanes = tangent_planes(sw, sn, pw, pnn, f, k->pn, k->pd, 0, 0);
    nplanes = tangent_planes(pw, pnn, sw, sn, f, k->pn, k->pd, nplanes, 1);
    for (i = 0; i < nk; i++) {
        int64_t q = k->kids[i], tn = f->count[q];
        double *tw = k->tw, *tspare = k->tw2;
        k->counts.clipped++;
        copy_winding(tw, f, q);
        clip_into(&tw, &tn, &tspare, f->normal[3 * s], f->normal[3 * s + 1], f->normal[3 * s + 2], f->dist[s], k);
        clip_by_cutting(&tw, &tn, &tspare, k->pn, k->pd, nplanes, k);
        if (tn > 0 && mark(k, q, tw, tn, k->smight, f->test_cl + q * f->cl_stride) != BBKC_OK)
            return BBKC_ERR_MEMORY;
    }
    return BBKC_OK;
}

static void release(work *k)
{
    free(k->slot), free(k->h), free(k->might), free(k->grown), free(k->waiting);
    free(k->pend_ext), free(k->pend_mig), free(k->pend_on), free(k->touched), free(k->slot_q), free(k->heap);
    free(k->have), free(k->smight), free(k->sw), free(k->pw), free(k->pw2), free(k->tw), free(k->tw2);
    free(k->dbuf), free(k->pn), free(k->pd), free(k->hcopy), free(k->ext), free(k->kids);
}

static int run(work *k)
{
    const bbkc_flow *f = k->f;
    const int64_t s = k->s, cs = f->src[s], cl = f->dst[s], sflip = f->plane[s] ^ 1;
    const uint8_t *flood = f->flood_bits + s * f->flood_stride;
    int64_t i, taken[64], nt, j;
    /* first step: every portal leaving s's cluster, clipped to the front of s */
    for (i = f->first[cl]; i < f->first[cl + 1]; i++) {
        int64_t q = f->leaving[i], tn = f->count[q];
        double *tw = k->tw, *tspare = k->tw2;
        if (!bit(flood, q) || f->plane[q] == sflip)
            continue;
        if (!(bit(f->test_cl + (q ^ 1) * f->cl_stride, cs) || f->src[q] == cs))
            continue;
        copy_winding(tw, f, q);
        clip_into(&tw, &tn, &tspare, f->normal[3 * s], f->normal[3 * s + 1], f->normal[3 * s + 2], f->dist[s], k);
        if (mark(k, q, tw, tn, f->might_cl + s * f->cl_stride, f->test_cl + q * f->cl_stride) != BBKC_OK)
            return BBKC_ERR_MEMORY;
    }
    if (grow(k) != BBKC_OK)
        return BBKC_ERR_MEMORY;
    while (k->nheap) {
        memcpy(k->have, k->row, (size_t)k->c8);
        for (nt = 0; nt < f->order_k && k->nheap; nt++) {
            taken[nt] = pop(k);
            k->waiting[k->slot[taken[nt]]] = 0;
        }
        for (j = 0; j < nt; j++)
            if (expand(k, taken[j]) != BBKC_OK)
                return BBKC_ERR_MEMORY;
        if (grow(k) != BBKC_OK)
            return BBKC_ERR_MEMORY;
    }
    return BBKC_OK;
}

int bbkc_flow_sources(const bbkc_flow *f, const int64_t *sources, int64_t n, uint8_t *rows,
                      bbkc_flow_counts *counts)
{
    work k;
    int64_t vmax, d, i, t;
    int rc = BBKC_OK;
    if (!f || (n > 0 && (!sources || !rows || !counts)) || n < 0 || f->kdop <= 0 || f->order_k <= 0 ||
        f->order_k > 64 || f->width <= 0)
        return BBKC_ERR_ARGUMENT;
    for (t = 0; t < n; t++)
        if (sources[t] < 0 || sources[t] >= f->num_portals)
            return BBKC_ERR_ARGUMENT;
    memset(&k, 0, sizeof k);
    d = f->num_portals;
    vmax = f->width > f->max_winding ? f->width : f->max_winding;
    k.f = f, k.k = f->kdop, k.c8 = f->cl_stride, k.vmax = vmax;
    k.slot = malloc((size_t)d * sizeof(int32_t));
    k.have = malloc((size_t)k.c8 + 1);
    k.smight = malloc((size_t)k.c8 + 1);
    k.sw = malloc((size_t)vmax * 3 * sizeof(double));
    k.pw = malloc((size_t)vmax * 3 * sizeof(double));
    k.pw2 = malloc((size_t)vmax * 3 * sizeof(double));
    k.tw = malloc((size_t)vmax * 3 * sizeof(double));
    k.tw2 = malloc((size_t)vmax * 3 * sizeof(double));
    k.dbuf = malloc((size_t)vmax * sizeof(double));
    k.pn = malloc((size_t)vmax * 4 * 3 * sizeof(double));
    k.pd = malloc((size_t)vmax * 4 * sizeof(double));
    k.hcopy = malloc((size_t)k.k * sizeof(double));
    k.ext = malloc((size_t)k.k * sizeof(double));
    k.kids = malloc((size_t)(d + 4 * vmax) * sizeof(int64_t));
    if (!k.slot || !k.have || !k.smight || !k.sw || !k.pw || !k.pw2 || !k.tw || !k.tw2 || !k.dbuf || !k.pn ||
        !k.pd || !k.hcopy || !k.ext || !k.kids) {
        release(&k);
        return BBKC_ERR_MEMORY;
    }
    for (i = 0; i < d; i++)
        k.slot[i] = -1;
    /* one source after another on the same buffers: each starts with no state (slot[] cleared
     * where the last one wrote, its slots made anew when reached), so its row and counts are those
     * of a call of its own */
    for (t = 0; t < n && rc == BBKC_OK; t++) {
        uint8_t *row = rows + t * f->cl_stride;
        k.s = sources[t], k.row = row;
        memset(row, 0, (size_t)f->cl_stride);
        memset(&k.counts, 0, sizeof k.counts);
        k.seq = 0;
        rc = run(&k);
        counts[t] = k.counts;
        for (i = 0; i < k.used; i++)
            k.slot[k.slot_q[i]] = -1;
        k.dirty = k.used > k.dirty ? k.used : k.dirty;
        k.used = 0, k.nheap = 0, k.ntouched = 0;
    }
    release(&k);
    return rc;
}

int bbkc_flow_source(const bbkc_flow *f, int64_t source, uint8_t *row, bbkc_flow_counts *counts)
{
    if (!f || !row || !counts || source < 0 || source >= f->num_portals)
        return BBKC_ERR_ARGUMENT;
    return bbkc_flow_sources(f, &source, 1, row, counts);
}
