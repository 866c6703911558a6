/* brushbake.c -- the brushbake level run-time in plain C99 (see brushbake.h).
 *
 * The loader follows docs/FORMAT.md ("What a reader checks") rule for rule, as exporters/native.py
 * does; the queries follow core/runtime/ (tree.py, trace.py, shift.py, pvs.py; camera.py, cull.py
 * and portal_walk.py in the camera queries' part at the end) operation for operation.  Nothing here allocates after bbk_load, and no walk recurses deeper than the tree
 * (which the loader proves is at most BBK_MAX_TREE_DEPTH nodes deep).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "brushbake.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tolerances, the values of core/tolerances.py */
#define TOUCH_EPSILON 1e-7          /* a point within it of a plane is on the plane */
#define SHIFT_CONTACT_EPSILON 1e-7  /* plane shifting: a start touching a shifted plane */
#define RETRY_BACKOFF 1e-3          /* the retry of a start found solid */
#define RETRY_SLACK 1e-9
#define RETRY_SLACK_ABS 1e-12
#define NORMAL_LENGTH_TOLERANCE 1e-6
#define SUPPORT_MIN_LENGTH 1e-300
#define CYLINDER_HORIZONTAL_EPSILON 1e-12

#define STACK_SIZE (BBK_MAX_TREE_DEPTH + 4)
#ifdef BBK_STATS  /* counters of an instrumented build (the benchmarks' analysis), never in a shipped one */
unsigned long long bbk_stats[8];
#define STAT(x) x
#else
#define STAT(x)
#endif
#define LANES 8                     /* segments the batch walk follows at once (fast_many) */
#define CHUNK 1024                  /* segments a batch trace prepares at once (fewer: the lanes' drain at its end costs) */
#define RETRY_LIMIT (RETRY_BACKOFF * (1 + RETRY_SLACK) + RETRY_SLACK_ABS)  /* trace_retried's bound */

struct lane_entry {           /* a far half waiting on a lane's stack */
    int32_t code, entry;
    double t[2];              /* its piece [t0, t1] */
};

typedef struct seg {          /* a segment: start, end - start */
    double sx, sy, sz, dx, dy, dz;
} seg;

typedef struct span {         /* a batch's segments as the caller holds them: segment i from */
    const double *s, *e;      /* s + stride * i to e + stride * i (packed: e = s + 3, stride 6) */
    size_t stride;
} span;

struct chunk {                /* scratch of a batch trace: CHUNK segments and their retries */
    seg g[CHUNK], g2[CHUNK];
    bbk_transition tr[CHUNK], tr2[CHUNK];
    double hit_t[CHUNK], length[CHUNK], length2[CHUNK];
    int32_t plane[CHUNK];
    int start_solid[CHUNK];
    uint32_t again[CHUNK];
    signed char st[CHUNK], st2[CHUNK];
};

/* ---------------------------------------------------------------------------------------------
 * The level in memory */

typedef struct node {         /* a node with its plane, packed for the walks (made at load) */
    double nx, ny, nz, d;
    int32_t child[2];         /* front, back */
    int32_t plane, pad;
} node;

typedef struct tree {
    const node *nodes;        /* (n) packed copies of the three arrays below */
    const double *skip;       /* (bits, n, 6): the skip boxes per hull bit and node (made at load) */
    const uint8_t *skip_flag; /* (bits, n): SKIP_NONE, SKIP_TEST or SKIP_EMPTY */
    uint32_t bit0, bits;      /* the hull bits they cover: bit0 .. bit0 + bits - 1 */
    uint32_t skip_on;         /* bit h: the batch walk skips for hull bit h (it pays there) */
    const int32_t *plane;     /* (n) */
    const int32_t *children;  /* (n, 2): front, back */
    const uint32_t *solid;    /* (l) */
    uint32_t n, l;
    int32_t root;             /* 0, or -1 (leaf 0) when there are no nodes */
} tree;

typedef struct piece {        /* the open walk's pieces along a segment */
    double t;
    int32_t plane;
    int32_t solid;
} piece;

struct bbk_level {
    uint8_t *file;            /* the copied file, 8-aligned */
    uint16_t version_major, version_minor;
    uint32_t planes, faces, vertices, brushes, hulls, leaf_faces, max_depth;
    const double *normals, *dists;
    tree point, onion, bevel;
    const int32_t *leaf_cluster;
    const double *hull_boxes, *world;
    const uint32_t *hull_index;  /* (hulls, 2): offset, length into hull_text */
    const uint8_t *hull_text;
    const int32_t *vis_leaf_cluster;
    const uint32_t *vis_row_offset;
    const uint8_t *vis_rows;
    uint32_t clusters, row_bytes;
    uint64_t vis_bytes;
    piece *pieces;            /* scratch of the open walk */
    size_t pieces_cap;
    uint8_t *row;             /* scratch: one decompressed PVS row */
    node *packed;             /* the trees' nodes, packed */
    double *skips;            /* the trees' skip boxes */
    uint8_t *skip_flags;      /* and flags */
    struct cull_state *cull;  /* the camera queries' tables and scratch (the part at the end) */
    struct lane_entry *lanes; /* scratch of the batch walk: LANES stacks of lane_depth entries */
    struct chunk *chunk;      /* scratch of a batch trace */
    double *offsets;          /* scratch of a batch of plane shifting: the shape's h(n) per plane */
    uint32_t lane_depth;
};

/* ---------------------------------------------------------------------------------------------
 * Little helpers */

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

static void crc_table(uint32_t table[256]) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1u ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
}
static uint32_t crc_update(const uint32_t table[256], uint32_t crc, const uint8_t *p, uint64_t n) {
    crc = ~crc;
    for (uint64_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
    return ~crc;
}

static int fail(char *message, size_t size, int code, const char *format, ...) {
    if (message && size) {
        va_list args;
        va_start(args, format);
        vsnprintf(message, size, format, args);
        va_end(args);
    }
    return code;
}

static int is_finite(double x) { return x - x == 0.0; }

/* Python's max(a, b) and min(a, b): the first unless the second is strictly beyond it */
static double py_max(double a, double b) { return b > a ? b : a; }
static double py_min(double a, double b) { return b < a ? b : a; }

/* ---------------------------------------------------------------------------------------------
 * Sections */

enum {
    S_PLNN, S_PLND, S_NODP, S_NODC, S_LFSD, S_LFCL, S_LFBB, S_LFFF, S_LFFC, S_LFFI, S_FCPL, S_FCFV,
    S_FCNV, S_FCBR, S_FCFL, S_VERT, S_ONNP, S_ONNC, S_ONLS, S_HULB, S_WBND, S_BRSN, S_BRST, S_HULN,
    S_HULT, S_REQUIRED, S_BVNP = S_REQUIRED, S_BVNC, S_BVLS, S_VSLC, S_VSRO, S_VSRD,
    S_CQNC, S_CQPC, S_CQPL, S_CQPF, S_CQPN, S_CQPV,  /* culling portals: the camera queries' part below */
    S_KNOWN
};

static const struct { char tag[5]; uint32_t record_size, element_size; } KNOWN[S_KNOWN] = {
    {"PLNN", 24, 8}, {"PLND", 8, 8}, {"NODP", 4, 4}, {"NODC", 8, 4}, {"LFSD", 4, 4}, {"LFCL", 4, 4},
    {"LFBB", 48, 8}, {"LFFF", 4, 4}, {"LFFC", 4, 4}, {"LFFI", 4, 4}, {"FCPL", 4, 4}, {"FCFV", 4, 4},
    {"FCNV", 4, 4}, {"FCBR", 4, 4}, {"FCFL", 4, 4}, {"VERT", 24, 8}, {"ONNP", 4, 4}, {"ONNC", 8, 4},
    {"ONLS", 4, 4}, {"HULB", 48, 8}, {"WBND", 48, 8}, {"BRSN", 8, 4}, {"BRST", 1, 1}, {"HULN", 8, 4},
    {"HULT", 1, 1}, {"BVNP", 4, 4}, {"BVNC", 8, 4}, {"BVLS", 4, 4}, {"VSLC", 4, 4}, {"VSRO", 4, 4},
    {"VSRD", 1, 1}, {"CQNC", 4, 4}, {"CQPC", 8, 4}, {"CQPL", 4, 4}, {"CQPF", 4, 4}, {"CQPN", 4, 4},
    {"CQPV", 24, 8},
};

typedef struct entry {
    uint32_t tag, record_size, crc;
    uint64_t count, offset, size;
} entry;

typedef struct section {
    int present;
    uint64_t count, offset, size;
} section;

static int cmp_span(const void *a, const void *b) {
    const entry *x = (const entry *)a, *y = (const entry *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return 0;
}
static int cmp_tag(const void *a, const void *b) {
    uint32_t x = ((const entry *)a)->tag, y = ((const entry *)b)->tag;
    return x < y ? -1 : x > y;
}

static int valid_tag(const uint8_t *t) {
    for (int i = 0; i < 4; i++)
        if (!((t[i] >= 'A' && t[i] <= 'Z') || (t[i] >= '0' && t[i] <= '9'))) return 0;
    return 1;
}

static int zero_bytes(const uint8_t *p, uint64_t start, uint64_t stop) {
    for (uint64_t i = start; i < stop; i++)
        if (p[i]) return 0;
    return 1;
}

/* Strict UTF-8, as Python decodes it (no overlongs, surrogates or code points past U+10FFFF). */
static int valid_utf8(const uint8_t *s, uint64_t n) {
    uint64_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        int more;
        uint8_t lo = 0x80, hi = 0xBF;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) more = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else return 0;
        if (n - i - 1 < (uint64_t)more) return 0;
        if (s[i + 1] < lo || s[i + 1] > hi) return 0;
        for (int k = 2; k <= more; k++)
            if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
        i += 1 + (uint64_t)more;
    }
    return 1;
}

static int host_big_endian(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 0;
}

static void swap_elements(uint8_t *p, uint64_t bytes, uint32_t size) {
    if (size < 2) return;
    for (uint64_t i = 0; i + size <= bytes; i += size)
        for (uint32_t a = 0, b = size - 1; a < b; a++, b--) {
            uint8_t t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
}

/* ---------------------------------------------------------------------------------------------
 * The container: header, table, sections (FORMAT.md "What a reader checks", rules 1-5) */

typedef struct loader {
    const uint8_t *data;
    uint64_t size;
    char *msg;
    size_t msg_size;
    section sec[S_KNOWN];
    uint32_t crc[256];
} loader;

static int check_header(loader *ld, uint32_t *header_size, uint32_t *entry_size, uint32_t *count) {
    const uint8_t *d = ld->data;
    uint64_t size = ld->size;
    uint64_t m = size < 4 ? size : 4;
    if (memcmp(d, "BRBK", (size_t)m) != 0)
        return fail(ld->msg, ld->msg_size, BBK_ERR_MAGIC, "is not a brushbake level: it does not start with BRBK");
    if (size < 8) return fail(ld->msg, ld->msg_size, BBK_ERR_TRUNCATED, "is truncated: not even the header is complete");
    if (le16(d + 4) != BBK_FORMAT_MAJOR)
        return fail(ld->msg, ld->msg_size, BBK_ERR_VERSION, "uses format version %u.%u; this loader reads %u.x",
                    le16(d + 4), le16(d + 6), BBK_FORMAT_MAJOR);
    if (size < 40) return fail(ld->msg, ld->msg_size, BBK_ERR_TRUNCATED, "is truncated: not even the header is complete");
    uint32_t flags = le32(d + 8);
    *header_size = le32(d + 12);
    *entry_size = le32(d + 16);
    *count = le32(d + 20);
    uint64_t file_size = le64(d + 24);
    uint32_t crc = le32(d + 32);
    if (*header_size < 40 || *entry_size < 40 || *header_size % 8 || *entry_size % 8)
        return fail(ld->msg, ld->msg_size, BBK_ERR_HEADER, "has a corrupt header (header size %u, entry size %u)",
                    *header_size, *entry_size);
    uint64_t table_end = (uint64_t)*header_size + (uint64_t)*count * *entry_size;
    if (table_end > size)
        return fail(ld->msg, ld->msg_size, BBK_ERR_TRUNCATED, "is truncated or its header is corrupt: its table "
                    "would end at %llu", (unsigned long long)table_end);
    static const uint8_t zero4[4] = {0, 0, 0, 0};
    uint32_t c = crc_update(ld->crc, 0, d, 32);
    c = crc_update(ld->crc, c, zero4, 4);
    c = crc_update(ld->crc, c, d + 36, table_end - 36);
    if (c != crc) return fail(ld->msg, ld->msg_size, BBK_ERR_CHECKSUM, "is corrupt: the header checksum does not match");
    if (file_size != size)
        return fail(ld->msg, ld->msg_size, BBK_ERR_TRUNCATED, "%s: the header says %llu bytes, the file has %llu",
                    file_size > size ? "is truncated" : "has extra bytes at the end",
                    (unsigned long long)file_size, (unsigned long long)size);
    if (size % 8) return fail(ld->msg, ld->msg_size, BBK_ERR_HEADER, "is not a multiple of 8 bytes long");
    if (flags & 0xFFFFu)
        return fail(ld->msg, ld->msg_size, BBK_ERR_FLAGS, "needs features (flags 0x%x) this loader does not know", flags);
    return BBK_OK;
}

static int check_table(loader *ld) {
    uint32_t header_size = 0, entry_size = 0, count = 0;
    int err = check_header(ld, &header_size, &entry_size, &count);
    if (err) return err;
    const uint8_t *d = ld->data;
    uint64_t table_end = (uint64_t)header_size + (uint64_t)count * entry_size;
    entry *e = (entry *)malloc(count ? count * sizeof *e : 1);
    if (!e) return fail(ld->msg, ld->msg_size, BBK_ERR_NOMEM, "out of memory");
    for (uint32_t i = 0; i < count && !err; i++) {
        const uint8_t *p = d + header_size + (uint64_t)i * entry_size;
        entry *x = &e[i];
        x->tag = le32(p);
        x->record_size = le32(p + 4);
        x->count = le64(p + 8);
        x->offset = le64(p + 16);
        x->size = le64(p + 24);
        x->crc = le32(p + 32);
        if (!valid_tag(p))
            err = fail(ld->msg, ld->msg_size, BBK_ERR_TABLE, "section table entry %u has a bad tag", i);
        else if ((x->count && x->record_size > UINT64_MAX / x->count) ? 1 : (x->record_size * x->count != x->size))
            err = fail(ld->msg, ld->msg_size, BBK_ERR_TABLE, "section %.4s's records do not fill its size", (const char *)p);
        else if (x->offset % 8 || x->offset < table_end || x->size > ld->size || x->offset > ld->size - x->size)
            err = fail(ld->msg, ld->msg_size, BBK_ERR_TABLE, "section %.4s lies outside the data area", (const char *)p);
    }
    if (!err) {  /* each tag once */
        qsort(e, count, sizeof *e, cmp_tag);
        for (uint32_t i = 1; i < count && !err; i++)
            if (e[i].tag == e[i - 1].tag)
                err = fail(ld->msg, ld->msg_size, BBK_ERR_TABLE, "the section table repeats a tag");
    }
    if (!err) {  /* no overlaps, zero padding (before any checksum: their work is then the file's size) */
        qsort(e, count, sizeof *e, cmp_span);
        uint64_t end = table_end;
        for (uint32_t i = 0; i < count && !err; i++) {
            if (e[i].offset < end)
                err = fail(ld->msg, ld->msg_size, BBK_ERR_LAYOUT, "a section overlaps the table or another section");
            else if (!zero_bytes(d, end, e[i].offset))
                err = fail(ld->msg, ld->msg_size, BBK_ERR_LAYOUT, "padding bytes are not zero");
            else end = e[i].offset + e[i].size;
        }
        if (!err && !zero_bytes(d, end, ld->size))
            err = fail(ld->msg, ld->msg_size, BBK_ERR_LAYOUT, "padding bytes are not zero");
    }
    for (uint32_t i = 0; i < count && !err; i++) {
        if (crc_update(ld->crc, 0, d + e[i].offset, e[i].size) != e[i].crc)
            err = fail(ld->msg, ld->msg_size, BBK_ERR_CHECKSUM, "is corrupt: a section checksum does not match");
        for (int k = 0; k < S_KNOWN && !err; k++)
            if (e[i].tag == le32((const uint8_t *)KNOWN[k].tag)) {
                section *s = &ld->sec[k];
                if (e[i].record_size != KNOWN[k].record_size)
                    err = fail(ld->msg, ld->msg_size, BBK_ERR_RECORD, "section %s has %u-byte records, expected %u",
                               KNOWN[k].tag, e[i].record_size, KNOWN[k].record_size);
                s->present = 1;
                s->count = e[i].count;
                s->offset = e[i].offset;
                s->size = e[i].size;
            }
    }
    free(e);
    if (err) return err;
    for (int k = 0; k < S_REQUIRED; k++)
        if (!ld->sec[k].present)
            return fail(ld->msg, ld->msg_size, BBK_ERR_MISSING, "the required section %s is missing", KNOWN[k].tag);
    if (ld->sec[S_WBND].count != 1)
        return fail(ld->msg, ld->msg_size, BBK_ERR_RECORD, "section WBND has %llu records, expected 1",
                    (unsigned long long)ld->sec[S_WBND].count);
    int bevel = ld->sec[S_BVNP].present + ld->sec[S_BVNC].present + ld->sec[S_BVLS].present;
    if (bevel != 0 && bevel != 3)
        return fail(ld->msg, ld->msg_size, BBK_ERR_MISSING, "has only some of the beveled tree's sections BVNP, BVNC, BVLS");
    int vis = ld->sec[S_VSLC].present + ld->sec[S_VSRO].present + ld->sec[S_VSRD].present;
    if (vis != 0 && vis != 3)
        return fail(ld->msg, ld->msg_size, BBK_ERR_MISSING, "has only some of the visibility sections VSLC, VSRO, VSRD");
    return BBK_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The meaning (FORMAT.md "What a reader checks", rule 6; exporters/native.py check_level_fields) */

typedef struct checker {
    char *msg;
    size_t msg_size;
    const uint8_t *file;
    const section *sec;
    uint32_t *refs;           /* scratch: max(N + L) counters */
    int32_t *frontier;        /* scratch: max(N) + 1 entries */
} checker;

#define AT(ck, k) ((const void *)((ck)->file + (ck)->sec[k].offset))

/* the camera queries' part (at the end of this file): its sections' checks, its tables and scratch */
static int check_cull(const checker *ck);
static int cull_setup(bbk_level *lv, const section *sec);
static int skip_setup(bbk_level *lv);

static int check_indices(const checker *ck, int k, int64_t low, int64_t high, const char *what) {
    const int32_t *v = (const int32_t *)AT(ck, k);
    for (uint64_t i = 0; i < ck->sec[k].count; i++)
        if (v[i] < low || v[i] >= high)
            return fail(ck->msg, ck->msg_size, BBK_ERR_INDEX, "%s[%llu] is %d, not in [%lld, %lld)", what,
                        (unsigned long long)i, v[i], (long long)low, (long long)high);
    return BBK_OK;
}

static int check_ranges(const checker *ck, int first_k, int count_k, int64_t min_count, uint64_t size,
                        const char *owner) {
    const int32_t *first = (const int32_t *)AT(ck, first_k), *count = (const int32_t *)AT(ck, count_k);
    for (uint64_t i = 0; i < ck->sec[first_k].count; i++)
        if (first[i] < 0 || count[i] < min_count || (int64_t)first[i] + count[i] > (int64_t)size)
            return fail(ck->msg, ck->msg_size, BBK_ERR_INDEX, "%s %llu's range lies outside its array", owner,
                        (unsigned long long)i);
    return BBK_OK;
}

static int check_solid_bits(const checker *ck, int k, uint32_t hulls) {
    const uint32_t *v = (const uint32_t *)AT(ck, k);
    if (hulls >= 32) return BBK_OK;
    for (uint64_t i = 0; i < ck->sec[k].count; i++)
        if (v[i] >> hulls)
            return fail(ck->msg, ck->msg_size, BBK_ERR_HULLS, "%s[%llu] sets solid bits of hulls beyond the %u there are",
                        KNOWN[k].tag, (unsigned long long)i, hulls);
    return BBK_OK;
}

/* FORMAT.md "The tree's shape": children later nodes or existing leaves, every node but the root
 * and every leaf referenced exactly once, at most BBK_MAX_TREE_DEPTH nodes deep.  O(N + L). */
static int check_tree(const checker *ck, int plane_k, int children_k, uint64_t n, uint64_t l, uint64_t planes,
                      int may_be_empty, uint32_t *depth_out) {
    int err = check_indices(ck, plane_k, 0, (int64_t)planes, KNOWN[plane_k].tag);
    if (err) return err;
    const int32_t *ch = (const int32_t *)AT(ck, children_k);
    for (uint64_t i = 0; i < n; i++)
        for (int s = 0; s < 2; s++) {
            int64_t c = ch[2 * i + (uint64_t)s];
            if ((c >= 0 && (c <= (int64_t)i || c >= (int64_t)n)) || c < -(int64_t)l)
                return fail(ck->msg, ck->msg_size, BBK_ERR_TREE, "%s node %llu's %s child %lld is neither a later "
                            "node nor a leaf", KNOWN[children_k].tag, (unsigned long long)i, s ? "back" : "front", (long long)c);
        }
    *depth_out = 0;
    if (n == 0 && l == 0 && may_be_empty) return BBK_OK;
    uint32_t *refs = ck->refs;
    memset(refs, 0, (size_t)(n + l) * sizeof *refs);
    refs[n > 0 ? 0 : n] += 1;  /* the root: node 0, or leaf 0 */
    for (uint64_t i = 0; i < 2 * n; i++) {
        int64_t c = ch[i];
        refs[c >= 0 ? (uint64_t)c : n + (uint64_t)(-1 - c)] += 1;
    }
    for (uint64_t i = 0; i < n + l; i++)
        if (refs[i] != 1)
            return fail(ck->msg, ck->msg_size, BBK_ERR_TREE, "%s: %s %llu is %s: the nodes must form a tree",
                        KNOWN[children_k].tag, i < n ? "node" : "leaf", (unsigned long long)(i < n ? i : i - n),
                        refs[i] ? "shared" : "the child of no node");
    uint64_t count = n > 0, depth = 0;
    int32_t *frontier = ck->frontier;
    frontier[0] = 0;
    while (count > 0) {
        if (++depth > BBK_MAX_TREE_DEPTH)
            return fail(ck->msg, ck->msg_size, BBK_ERR_DEPTH, "%s: the tree is more than %d nodes deep",
                        KNOWN[children_k].tag, BBK_MAX_TREE_DEPTH);
        uint64_t next = 0;
        for (uint64_t k = 0; k < count; k++)
            for (int s = 0; s < 2; s++) {
                int32_t c = ch[2 * (uint64_t)frontier[k] + (uint64_t)s];
                if (c >= 0) frontier[count + next++] = c;  /* after the current level: at most N in all */
            }
        memmove(frontier, frontier + count, (size_t)next * sizeof *frontier);
        count = next;
    }
    *depth_out = (uint32_t)depth;
    return BBK_OK;
}

/* Quake's RLE rows: every row decodes to exactly R bytes inside VSRD, starts on no count, has no
 * zero count (two zero bytes in a row anywhere) and no bit at or beyond C (pvs.decompress_rows). */
static int check_vis(const checker *ck, uint64_t leaves) {
    const section *sec = ck->sec;
    if (!sec[S_VSLC].present) return BBK_OK;
    uint64_t clusters = sec[S_VSRO].count, bytes = sec[S_VSRD].count, row = (clusters + 7) / 8;
    if (clusters < 1 || clusters > leaves)
        return fail(ck->msg, ck->msg_size, BBK_ERR_VIS, "has %llu visibility clusters for %llu leaves",
                    (unsigned long long)clusters, (unsigned long long)leaves);
    if (sec[S_VSLC].count != leaves)
        return fail(ck->msg, ck->msg_size, BBK_ERR_VIS, "VSLC does not have one cluster per leaf");
    int err = check_indices(ck, S_VSLC, -1, (int64_t)clusters, "VSLC");
    if (err) return err;
    const uint32_t *offsets = (const uint32_t *)AT(ck, S_VSRO);
    const uint8_t *data = (const uint8_t *)AT(ck, S_VSRD);
    for (uint64_t i = 1; i < bytes; i++)
        if (data[i] == 0 && data[i - 1] == 0)
            return fail(ck->msg, ck->msg_size, BBK_ERR_VIS, "has a zero run of count 0 in its visibility rows");
    for (uint64_t c = 0; c < clusters; c++) {
        uint64_t at = offsets[c], out = 0;
        if (at >= bytes || (at > 0 && data[at - 1] == 0))
            return fail(ck->msg, ck->msg_size, BBK_ERR_VIS, "cluster %llu's row starts outside VSRD or on a count",
                        (unsigned long long)c);
        uint8_t last = 0;
        while (out < row) {
            if (at >= bytes) break;
            if (data[at]) {
                last = data[at++];
                out++;
            } else {
                if (at + 1 >= bytes) { out = row + 1; break; }
                out += data[at + 1];
                last = 0;
                at += 2;
            }
        }
        if (out != row)
            return fail(ck->msg, ck->msg_size, BBK_ERR_VIS, "cluster %llu's row does not decode to exactly %llu bytes",
                        (unsigned long long)c, (unsigned long long)row);
        if (clusters % 8 && last >> (clusters % 8))
            return fail(ck->msg, ck->msg_size, BBK_ERR_VIS, "cluster %llu's row sets bits beyond the clusters",
                        (unsigned long long)c);
    }
    return BBK_OK;
}

static int check_names(const checker *ck, int index_k, int text_k) {
    const uint32_t *index = (const uint32_t *)AT(ck, index_k);
    const uint8_t *text = (const uint8_t *)AT(ck, text_k);
    uint64_t size = ck->sec[text_k].count, total = 0;
    for (uint64_t i = 0; i < ck->sec[index_k].count; i++) {
        uint64_t off = index[2 * i], len = index[2 * i + 1];
        if (off + len > size)
            return fail(ck->msg, ck->msg_size, BBK_ERR_NAME, "%s[%llu] lies outside its text section",
                        KNOWN[index_k].tag, (unsigned long long)i);
        total += len; /* overlapping names would cost names x text bytes to check */
        if (total > size)
            return fail(ck->msg, ck->msg_size, BBK_ERR_NAME, "%s[%llu] brings the names past their text section's size",
                        KNOWN[index_k].tag, (unsigned long long)i);
        if (!valid_utf8(text + off, len))
            return fail(ck->msg, ck->msg_size, BBK_ERR_NAME, "%s[%llu] is not valid UTF-8", KNOWN[index_k].tag,
                        (unsigned long long)i);
    }
    return BBK_OK;
}

static int check_counts(const checker *ck) {
    static const int groups[][6] = {
        {S_PLNN, S_PLND, -1}, {S_NODP, S_NODC, -1}, {S_LFSD, S_LFCL, S_LFBB, S_LFFF, S_LFFC, -1},
        {S_FCPL, S_FCFV, S_FCNV, S_FCBR, S_FCFL, -1}, {S_ONNP, S_ONNC, -1}, {S_HULB, S_HULN, -1},
        {S_BRSN, -1}, {S_LFFI, -1}, {S_VERT, -1}, {S_ONLS, -1},
    };
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
        for (int k = 1; groups[g][k] >= 0; k++)
            if (ck->sec[groups[g][k]].count != ck->sec[groups[g][0]].count)
                return fail(ck->msg, ck->msg_size, BBK_ERR_COUNT, "%s and %s disagree on their count",
                            KNOWN[groups[g][0]].tag, KNOWN[groups[g][k]].tag);
    static const int floats[] = {S_PLNN, S_PLND, S_LFBB, S_VERT, S_HULB, S_WBND};
    for (size_t f = 0; f < sizeof floats / sizeof floats[0]; f++) {
        const double *v = (const double *)AT(ck, floats[f]);
        uint64_t n = ck->sec[floats[f]].size / 8;
        for (uint64_t i = 0; i < n; i++)
            if (!is_finite(v[i]))
                return fail(ck->msg, ck->msg_size, BBK_ERR_FLOAT, "%s holds NaN or infinite values", KNOWN[floats[f]].tag);
    }
    return BBK_OK;
}

static int check_planes(const checker *ck) {
    uint64_t p = ck->sec[S_PLND].count;
    const double *n = (const double *)AT(ck, S_PLNN), *d = (const double *)AT(ck, S_PLND);
    if (p % 2) return fail(ck->msg, ck->msg_size, BBK_ERR_PLANE, "has an odd number of planes; planes come in flip pairs");
    for (uint64_t i = 0; i < p; i++) {
        double length = sqrt(n[3 * i] * n[3 * i] + n[3 * i + 1] * n[3 * i + 1] + n[3 * i + 2] * n[3 * i + 2]);
        if (!(fabs(length - 1.0) <= NORMAL_LENGTH_TOLERANCE))
            return fail(ck->msg, ck->msg_size, BBK_ERR_PLANE, "plane %llu's normal is not of length 1", (unsigned long long)i);
    }
    for (uint64_t i = 0; i < p; i += 2)
        if (n[3 * i + 3] != -n[3 * i] || n[3 * i + 4] != -n[3 * i + 1] || n[3 * i + 5] != -n[3 * i + 2] ||
            d[i + 1] != -d[i])
            return fail(ck->msg, ck->msg_size, BBK_ERR_PLANE, "planes %llu and %llu are not exact flips",
                        (unsigned long long)i, (unsigned long long)i + 1);
    return BBK_OK;
}

static int check_meaning(checker *ck, uint32_t *max_depth) {
    const section *sec = ck->sec;
    int err;
    if ((err = check_names(ck, S_BRSN, S_BRST)) || (err = check_names(ck, S_HULN, S_HULT))) return err;
    if ((err = check_counts(ck)) || (err = check_planes(ck))) return err;
    uint64_t planes = sec[S_PLND].count, leaves = sec[S_LFSD].count, hulls = sec[S_HULN].count;
    if (leaves < 1) return fail(ck->msg, ck->msg_size, BBK_ERR_TREE, "has no leaves; even an empty level has one leaf");
    uint32_t depth[3] = {0, 0, 0};
    if ((err = check_tree(ck, S_NODP, S_NODC, sec[S_NODP].count, leaves, planes, 0, &depth[0]))) return err;
    if ((err = check_tree(ck, S_ONNP, S_ONNC, sec[S_ONNP].count, sec[S_ONLS].count, planes, 1, &depth[1]))) return err;
    if (sec[S_BVNP].present) {
        if (sec[S_BVNC].count != sec[S_BVNP].count)
            return fail(ck->msg, ck->msg_size, BBK_ERR_COUNT, "BVNP and BVNC disagree on their count");
        if ((err = check_tree(ck, S_BVNP, S_BVNC, sec[S_BVNP].count, sec[S_BVLS].count, planes, 1, &depth[2])) ||
            (err = check_solid_bits(ck, S_BVLS, 1)))
            return err;
    }
    if ((err = check_vis(ck, leaves))) return err;
    if ((err = check_ranges(ck, S_LFFF, S_LFFC, 0, sec[S_LFFI].count, "leaf")) ||
        (err = check_indices(ck, S_LFFI, 0, (int64_t)sec[S_FCPL].count, "LFFI")) ||
        (err = check_indices(ck, S_LFCL, 0, (int64_t)leaves, "LFCL")))
        return err;
    if (hulls < 1 || hulls > BBK_MAX_HULLS)
        return fail(ck->msg, ck->msg_size, BBK_ERR_HULLS, "has %llu hulls; a level has 1 to %d", (unsigned long long)hulls,
                    BBK_MAX_HULLS);
    if ((hulls > 1) != (sec[S_ONLS].count > 0))
        return fail(ck->msg, ck->msg_size, BBK_ERR_HULLS, "its hull table and onion tree disagree (%llu hulls, %llu onion leaves)",
                    (unsigned long long)hulls, (unsigned long long)sec[S_ONLS].count);
    if ((err = check_solid_bits(ck, S_LFSD, (uint32_t)hulls)) || (err = check_solid_bits(ck, S_ONLS, (uint32_t)hulls)) ||
        (err = check_indices(ck, S_FCPL, 0, (int64_t)planes, "FCPL")) ||
        (err = check_ranges(ck, S_FCFV, S_FCNV, 3, sec[S_VERT].count, "face")) ||
        (err = check_indices(ck, S_FCBR, 0, (int64_t)sec[S_BRSN].count, "FCBR")))
        return err;
    const double *boxes[2] = {(const double *)AT(ck, S_HULB), (const double *)AT(ck, S_WBND)};
    uint64_t box_count[2] = {hulls, 1};
    for (int b = 0; b < 2; b++)
        for (uint64_t i = 0; i < box_count[b]; i++)
            for (int a = 0; a < 3; a++)
                if (boxes[b][6 * i + (uint64_t)a] > boxes[b][6 * i + 3 + (uint64_t)a])
                    return fail(ck->msg, ck->msg_size, BBK_ERR_BOUNDS, "%s has a box whose mins exceed its maxs",
                                b ? "WBND" : "HULB");
    *max_depth = depth[0] > depth[1] ? depth[0] : depth[1];
    if (depth[2] > *max_depth) *max_depth = depth[2];
    return check_cull(ck);
}

/* ---------------------------------------------------------------------------------------------
 * Loading */

static void set_tree(tree *t, const uint8_t *file, const section *sec, int plane_k, int children_k, int solid_k) {
    t->plane = (const int32_t *)(file + sec[plane_k].offset);
    t->children = (const int32_t *)(file + sec[children_k].offset);
    t->solid = (const uint32_t *)(file + sec[solid_k].offset);
    t->n = (uint32_t)sec[plane_k].count;
    t->l = (uint32_t)sec[solid_k].count;
    t->root = t->n > 0 ? 0 : -1;
}

int bbk_load(const void *data, size_t size, bbk_level **out, char *message, size_t message_size) {
    if (message && message_size) message[0] = '\0';
    if (!out) return fail(message, message_size, BBK_ERR_ARGUMENT, "no place for the level (out is NULL)");
    *out = NULL;
    if (!data && size) return fail(message, message_size, BBK_ERR_ARGUMENT, "no data");
    loader ld;
    memset(&ld, 0, sizeof ld);
    ld.data = (const uint8_t *)data;
    ld.size = size;
    ld.msg = message;
    ld.msg_size = message_size;
    crc_table(ld.crc);
    if (!data) return fail(message, message_size, BBK_ERR_TRUNCATED, "is empty");
    int err = check_table(&ld);
    if (err) return err;

    bbk_level *lv = (bbk_level *)calloc(1, sizeof *lv);
    uint8_t *file = (uint8_t *)malloc(size ? size : 1);  /* malloc aligns for double */
    if (!lv || !file) {
        free(lv);
        free(file);
        return fail(message, message_size, BBK_ERR_NOMEM, "out of memory");
    }
    memcpy(file, data, size);
    lv->file = file;
    if (host_big_endian())
        for (int k = 0; k < S_KNOWN; k++)
            if (ld.sec[k].present) swap_elements(file + ld.sec[k].offset, ld.sec[k].size, KNOWN[k].element_size);

    const section *sec = ld.sec;
    uint64_t scratch = 1;
    static const int trees[3][2] = {{S_NODP, S_LFSD}, {S_ONNP, S_ONLS}, {S_BVNP, S_BVLS}};
    for (int t = 0; t < 3; t++) {
        uint64_t nl = sec[trees[t][0]].count + sec[trees[t][1]].count + 1;
        if (nl > scratch) scratch = nl;
    }
    checker ck = {message, message_size, file, ld.sec, NULL, NULL};
    ck.refs = (uint32_t *)malloc((size_t)scratch * sizeof *ck.refs);
    ck.frontier = (int32_t *)malloc((size_t)scratch * sizeof *ck.frontier);
    if (!ck.refs || !ck.frontier) err = fail(message, message_size, BBK_ERR_NOMEM, "out of memory");
    else err = check_meaning(&ck, &lv->max_depth);
    free(ck.refs);
    free(ck.frontier);
    if (err) {
        bbk_free(lv);
        return err;
    }

    lv->version_major = le16(file + 4);
    lv->version_minor = le16(file + 6);
    lv->planes = (uint32_t)sec[S_PLND].count;
    lv->normals = (const double *)(file + sec[S_PLNN].offset);
    lv->dists = (const double *)(file + sec[S_PLND].offset);
    set_tree(&lv->point, file, sec, S_NODP, S_NODC, S_LFSD);
    set_tree(&lv->onion, file, sec, S_ONNP, S_ONNC, S_ONLS);
    if (sec[S_BVLS].present && sec[S_BVLS].count > 0) set_tree(&lv->bevel, file, sec, S_BVNP, S_BVNC, S_BVLS);
    else lv->bevel = lv->point;  /* no beveled tree: shapes sweep through the point tree */
    lv->leaf_cluster = (const int32_t *)(file + sec[S_LFCL].offset);
    lv->faces = (uint32_t)sec[S_FCPL].count;
    lv->vertices = (uint32_t)sec[S_VERT].count;
    lv->brushes = (uint32_t)sec[S_BRSN].count;
    lv->leaf_faces = (uint32_t)sec[S_LFFI].count;
    lv->hulls = (uint32_t)sec[S_HULN].count;
    lv->hull_boxes = (const double *)(file + sec[S_HULB].offset);
    lv->world = (const double *)(file + sec[S_WBND].offset);
    lv->hull_index = (const uint32_t *)(file + sec[S_HULN].offset);
    lv->hull_text = file + sec[S_HULT].offset;
    if (sec[S_VSLC].present) {
        lv->vis_leaf_cluster = (const int32_t *)(file + sec[S_VSLC].offset);
        lv->vis_row_offset = (const uint32_t *)(file + sec[S_VSRO].offset);
        lv->vis_rows = file + sec[S_VSRD].offset;
        lv->clusters = (uint32_t)sec[S_VSRO].count;
        lv->row_bytes = (lv->clusters + 7) / 8;
        lv->vis_bytes = sec[S_VSRD].count;
    }
    /* the open walk meets each leaf at most once, and a combination of two piece lists needs at
       most as many again */
    uint32_t most = lv->point.l > lv->onion.l ? lv->point.l : lv->onion.l;
    lv->pieces_cap = 2 * (size_t)most + 16;
    lv->pieces = (piece *)malloc(lv->pieces_cap * sizeof *lv->pieces);
    lv->row = (uint8_t *)malloc(lv->row_bytes + 1);
    lv->lane_depth = lv->max_depth + 1;
    lv->lanes = (struct lane_entry *)malloc((size_t)LANES * lv->lane_depth * sizeof *lv->lanes);
    lv->chunk = (struct chunk *)malloc(sizeof *lv->chunk);
    lv->offsets = (double *)malloc(((size_t)lv->planes + 1) * sizeof *lv->offsets);
    int has_bevel = lv->bevel.solid != lv->point.solid;
    size_t packed = (size_t)lv->point.n + lv->onion.n + (has_bevel ? lv->bevel.n : 0);
    lv->packed = (node *)malloc((packed ? packed : 1) * sizeof *lv->packed);
    if (lv->packed) {
        node *at = lv->packed;
        tree *ts[3] = {&lv->point, &lv->onion, &lv->bevel};
        for (int k = 0; k < 3; k++) {
            if (k == 2 && !has_bevel) {
                lv->bevel.nodes = lv->point.nodes;
                break;
            }
            ts[k]->nodes = at;
            for (uint32_t i = 0; i < ts[k]->n; i++, at++) {
                int32_t p = ts[k]->plane[i];
                at->nx = lv->normals[3 * (size_t)p];
                at->ny = lv->normals[3 * (size_t)p + 1];
                at->nz = lv->normals[3 * (size_t)p + 2];
                at->d = lv->dists[p];
                at->child[0] = ts[k]->children[2 * (size_t)i];
                at->child[1] = ts[k]->children[2 * (size_t)i + 1];
                at->plane = p;
                at->pad = 0;
            }
        }
    }
    if (!lv->pieces || !lv->row || !lv->packed || !lv->lanes || !lv->chunk || !lv->offsets || cull_setup(lv, sec) ||
        skip_setup(lv)) {
        bbk_free(lv);
        return fail(message, message_size, BBK_ERR_NOMEM, "out of memory");
    }
    *out = lv;
    return BBK_OK;
}

void bbk_free(bbk_level *level) {
    if (!level) return;
    free(level->file);
    free(level->pieces);
    free(level->row);
    free(level->lanes);
    free(level->chunk);
    free(level->offsets);
    free(level->packed);
    free(level->skips);
    free(level->skip_flags);
    free(level->cull);
    free(level);
}

const char *bbk_error_name(int code) {
    static const char *names[BBK_ERR_COUNT_OF_CODES] = {
        "ok", "out of memory", "not a .bbk file", "unsupported major version", "truncated", "corrupt header",
        "checksum mismatch", "unknown required flag", "corrupt section table", "overlap or non-zero padding",
        "missing section", "wrong record size or count", "counts disagree", "NaN or infinite value",
        "bad plane", "index out of range", "not a tree", "tree too deep", "hull table", "inverted box",
        "bad name", "corrupt visibility", "bad argument", "no such hull", "no visibility",
        "internal bound exceeded (a bug)", "no culling portals",
    };
    return code >= 0 && code < BBK_ERR_COUNT_OF_CODES ? names[code] : "unknown error";
}

void bbk_get_info(const bbk_level *lv, bbk_info *info) {
    memset(info, 0, sizeof *info);
    if (!lv) return;
    info->version_major = lv->version_major;
    info->version_minor = lv->version_minor;
    info->planes = lv->planes;
    info->nodes = lv->point.n;
    info->leaves = lv->point.l;
    info->leaf_faces = lv->leaf_faces;
    info->faces = lv->faces;
    info->vertices = lv->vertices;
    info->brushes = lv->brushes;
    info->hulls = lv->hulls;
    info->onion_nodes = lv->onion.n;
    info->onion_leaves = lv->onion.l;
    if (lv->bevel.solid != lv->point.solid) {
        info->bevel_nodes = lv->bevel.n;
        info->bevel_leaves = lv->bevel.l;
    }
    info->clusters = lv->clusters;
    info->max_depth = lv->max_depth;
    memcpy(info->world_bounds, lv->world, sizeof info->world_bounds);
}

int bbk_hull_box(const bbk_level *lv, uint32_t hull, double box[2][3]) {
    if (!lv || !box) return BBK_ERR_ARGUMENT;
    if (hull >= lv->hulls) return BBK_ERR_NO_HULL;
    memcpy(box, lv->hull_boxes + 6 * (size_t)hull, 6 * sizeof(double));
    return BBK_OK;
}

int bbk_hull_name(const bbk_level *lv, uint32_t hull, const char **name, uint32_t *length) {
    if (!lv || !name || !length) return BBK_ERR_ARGUMENT;
    if (hull >= lv->hulls) return BBK_ERR_NO_HULL;
    *name = (const char *)lv->hull_text + lv->hull_index[2 * hull];
    *length = lv->hull_index[2 * hull + 1];
    return BBK_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Points (core/runtime/tree.py) */

static uint32_t leaf_of(const bbk_level *lv, const tree *t, const double q[3]) {
    int32_t code = t->root;
    (void)lv;
    while (code >= 0) {
        const node *nd = &t->nodes[code];
        double d = nd->nx * q[0] + nd->ny * q[1] + nd->nz * q[2] - nd->d;
        code = nd->child[d < 0 ? 1 : 0];
    }
    return (uint32_t)(-1 - code);
}

uint32_t bbk_point_leaf(const bbk_level *lv, const double p[3]) { return leaf_of(lv, &lv->point, p); }

/* Is the point solid below `code`, solids open (TreeLists.solid_open): 1 solid, 0 not, -1 a bug. */
static int solid_open(const bbk_level *lv, const tree *t, int32_t code, double x, double y, double z, uint32_t bit) {
    int32_t todo[STACK_SIZE];
    int sp = 0;
    (void)lv;
    todo[sp++] = code;
    while (sp) {
        code = todo[--sp];
        while (code >= 0) {
            const node *nd = &t->nodes[code];
            double d = nd->nx * x + nd->ny * y + nd->nz * z - nd->d;
            if (fabs(d) <= TOUCH_EPSILON) {  /* -eps <= d <= eps, one test */
                if (sp >= STACK_SIZE) return -1;
                todo[sp++] = nd->child[1];
                code = nd->child[0];
            } else {
                code = nd->child[d > 0 ? 0 : 1];
            }
        }
        if (!(t->solid[-1 - code] & bit)) return 0;
    }
    return 1;
}

static int finite3(const double *v) { return is_finite(v[0]) && is_finite(v[1]) && is_finite(v[2]); }

static int hull_tree(const bbk_level *lv, uint32_t hull, const tree **t) {
    if (hull >= lv->hulls) return BBK_ERR_NO_HULL;
    if (hull > 0 && lv->onion.l == 0) return BBK_ERR_NO_HULL;
    *t = hull == 0 ? &lv->point : &lv->onion;
    return BBK_OK;
}

int bbk_point_solid(const bbk_level *lv, uint32_t hull, const double p[3], int *solid) {
    const tree *t;
    if (!lv || !p || !solid || !finite3(p)) return BBK_ERR_ARGUMENT;
    int err = hull_tree(lv, hull, &t);
    if (err) return err;
    int s = solid_open(lv, t, t->root, p[0], p[1], p[2], 1u << hull);
    if (s < 0) return BBK_ERR_INTERNAL;
    *solid = s;
    return BBK_OK;
}

/* ---------------------------------------------------------------------------------------------
 * find_first_transition (core/runtime/trace.py): the fast walk, and the open walk it hands
 * starts on a plane and pieces lying in one to */

/* how a fast walk ends: its transition found, stopped on a plane (the open walk decides), a bug;
 * the batch walks: a retry settled early (FAST_PAST, see fast_many), and a lane going on (FAST_GO) */
enum { FAST_DONE = 0, FAST_ON_PLANE = 1, FAST_BUG = -1, FAST_PAST = 2, FAST_GO = 3 };


/* one node of _fft_fast's walk over the piece [t0, t1] of segment g: -1 when the piece starts on
 * the node's plane (the open walk decides), else the side of the near child (0 front, 1 back);
 * *tm is where the piece crosses the plane, when it straddles it (*straddle) */
static inline int node_side(const node *nd, const seg *g, double t0, double t1, int *straddle, double *tm) {
    double ds = nd->nx * g->sx + nd->ny * g->sy + nd->nz * g->sz - nd->d;
    double dd = nd->nx * g->dx + nd->ny * g->dy + nd->nz * g->dz;
    double d0 = ds + t0 * dd, d1 = ds + t1 * dd;
    int on1 = fabs(d1) <= TOUCH_EPSILON, front0;
    if (fabs(d0) <= TOUCH_EPSILON) {
        if (on1 || t0 == 0.0) return -1;
        front0 = d1 > 0;
    } else {
        front0 = d0 > 0;
    }
    *straddle = !(on1 || (d1 > 0) == front0);
    if (*straddle) *tm = py_min(py_max(-ds / dd, t0), t1);
    return front0 ? 0 : 1;
}

/* _fft_fast: the leaves along the segment in order, up to the first change of state */
static int fft_fast(const bbk_level *lv, const tree *t, const seg *g, uint32_t bit, bbk_transition *out) {
    struct { int32_t code, entry; double t0, t1; } stack[STACK_SIZE];
    int sp = 0, state = -1;
    int32_t code = t->root, entry = -1;
    (void)lv;
    double t0 = 0.0, t1 = 1.0;
    for (;;) {
        while (code >= 0) {
            const node *nd = &t->nodes[code];
            int32_t p = nd->plane;
            int straddle;
            double tm = 0.0;
            int near = node_side(nd, g, t0, t1, &straddle, &tm);
            if (near < 0) return FAST_ON_PLANE;
            if (straddle) {  /* the far half waits */
                if (sp >= STACK_SIZE) return FAST_BUG;
                stack[sp].code = nd->child[1 - near];
                stack[sp].t0 = tm;
                stack[sp].t1 = t1;
                stack[sp].entry = p ^ near;
                sp++;
                t1 = tm;
            }
            code = nd->child[near];
        }
        int leaf_solid = (t->solid[-1 - code] & bit) ? 1 : 0;
        if (state < 0) {
            state = leaf_solid;
        } else if (leaf_solid != state) {
            out->kind = leaf_solid ? BBK_RAY_E2S : BBK_RAY_S2E;
            out->t = t0;
            out->plane = entry;
            return FAST_DONE;
        }
        if (!sp) {
            out->kind = state ? BBK_RAY_S : BBK_RAY_E;
            out->t = 1.0;
            out->plane = -1;
            return FAST_DONE;
        }
        sp--;
        code = stack[sp].code;
        t0 = stack[sp].t0;
        t1 = stack[sp].t1;
        entry = stack[sp].entry;
    }
}

typedef struct walker {
    const bbk_level *lv;
    const tree *t;
    const seg *g;
    uint32_t bit;
    size_t top;
    int bug;
} walker;

static void push_piece(walker *w, double t, int solid, int32_t plane) {
    if (w->top >= w->lv->pieces_cap) {
        w->bug = 1;
        return;
    }
    piece *p = &w->lv->pieces[w->top++];
    p->t = t;
    p->solid = solid;
    p->plane = plane;
}

/* _lying: the pieces of a piece lying in a plane from its children's pieces a = [a0, b0) (front)
 * and b = [b0, top) (back): solid where both are; the result replaces both, from a0 on. */
static void lying(walker *w, size_t a0, size_t b0, double t0) {
    piece *ps = w->lv->pieces;
    size_t na = b0 - a0, nb = w->top - b0;
    if (na == 0 || nb == 0) {
        w->bug = 1;
        return;
    }
    piece *a = ps + a0, *b = ps + b0;
    int all_a = 1, all_b = 1;
    for (size_t i = 1; i < na; i++) all_a &= a[i].solid == a[0].solid;
    for (size_t i = 1; i < nb; i++) all_b &= b[i].solid == b[0].solid;
    int32_t start_plane = a[0].plane >= 0 ? a[0].plane : b[0].plane;
    if (all_b && b[0].solid) {
        a[0].plane = start_plane;
        w->top = b0;
        return;
    }
    if (all_a && a[0].solid) {
        b[0].plane = start_plane;
        memmove(a, b, nb * sizeof *a);
        w->top = a0 + nb;
        return;
    }
    if ((all_a && !a[0].solid) || (all_b && !b[0].solid)) {
        a[0].t = t0;
        a[0].solid = 0;
        a[0].plane = start_plane;
        w->top = a0 + 1;
        return;
    }
    /* _both: merged by t, into the space after b, then moved down */
    size_t out = w->top, i = 0, j = 0;
    int sa = 0, sb = 0;
    if (out + na + nb > w->lv->pieces_cap) {
        w->bug = 1;
        return;
    }
    while (i < na || j < nb) {
        double ta = i < na ? a[i].t : HUGE_VAL, tb = j < nb ? b[j].t : HUGE_VAL;
        double t = py_min(ta, tb);
        int changed = 0, st[2];
        int32_t pl[2];
        if (i < na && a[i].t == t) {
            sa = a[i].solid;
            st[changed] = sa;
            pl[changed++] = a[i].plane;
            i++;
        }
        if (j < nb && b[j].t == t) {
            sb = b[j].solid;
            st[changed] = sb;
            pl[changed++] = b[j].plane;
            j++;
        }
        int both = sa && sb;
        int32_t plane = -1;
        for (int k = 0; k < changed; k++)
            if (st[k] == both && pl[k] >= 0) {
                plane = pl[k];
                break;
            }
        piece *o = &ps[out++];
        o->t = t;
        o->solid = both;
        o->plane = plane;
    }
    size_t n = out - w->top;
    memmove(ps + a0, ps + w->top, n * sizeof *ps);
    w->top = a0 + n;
}

/* _pieces / _walk_down: the pieces along [t0, t1] below `code`, appended in order.  Recursion
 * goes one node down per call, so it is at most the tree's depth (<= BBK_MAX_TREE_DEPTH) deep. */
static void pieces(walker *w, int32_t code, double t0, double t1, int32_t entry) {
    const bbk_level *lv = w->lv;
    const tree *t = w->t;
    const seg *g = w->g;
    while (code >= 0 && !w->bug) {
        const node *nd = &t->nodes[code];
        int32_t p = nd->plane;
        double ds = nd->nx * g->sx + nd->ny * g->sy + nd->nz * g->sz - nd->d;
        double dd = nd->nx * g->dx + nd->ny * g->dy + nd->nz * g->dz;
        double d0 = ds + t0 * dd, d1 = ds + t1 * dd;
        int32_t front = nd->child[0], back = nd->child[1];
        int on0 = fabs(d0) <= TOUCH_EPSILON, on1 = fabs(d1) <= TOUCH_EPSILON;
        if (on0 && on1) {  /* lying in the plane: solid where both children are */
            size_t a0 = w->top;
            pieces(w, front, t0, t1, entry);
            size_t b0 = w->top;
            pieces(w, back, t0, t1, entry);
            if (!w->bug) lying(w, a0, b0, t0);
            return;
        }
        int front0 = on0 ? d1 > 0 : d0 > 0;
        int near = front0 ? 0 : 1;
        int32_t near_child = near ? back : front, far_child = near ? front : back;
        if (on0 && t0 == 0.0 && entry < 0) {
            int s = solid_open(lv, t, far_child, g->sx, g->sy, g->sz, w->bit);
            if (s < 0) {
                w->bug = 1;
                return;
            }
            if (!s) entry = p ^ (1 - near);  /* the start on this plane, open space across it */
        }
        if (on1 || (d1 > 0) == front0) {
            code = near_child;
            continue;
        }
        double tm = py_min(py_max(-ds / dd, t0), t1);
        pieces(w, near_child, t0, tm, entry);  /* the near half first, then the far half */
        code = far_child;
        t0 = tm;
        entry = p ^ near;
    }
    if (!w->bug) push_piece(w, t0, (t->solid[-1 - code] & w->bit) ? 1 : 0, entry);
}

/* _fft_open: find_first_transition with open solids everywhere */
static int fft_open(const bbk_level *lv, const tree *t, const seg *g, uint32_t bit, bbk_transition *out) {
    int start = solid_open(lv, t, t->root, g->sx, g->sy, g->sz, bit);
    if (start < 0) return BBK_ERR_INTERNAL;
    walker w = {lv, t, g, bit, 0, 0};
    pieces(&w, t->root, 0.0, 1.0, -1);
    if (w.bug || w.top == 0) return BBK_ERR_INTERNAL;
    const piece *ps = lv->pieces;
    int state = ps[0].solid;
    if (state != start && ps[0].plane >= 0) {
        out->kind = state ? BBK_RAY_E2S : BBK_RAY_S2E;
        out->t = 0.0;
        out->plane = ps[0].plane;
        return BBK_OK;
    }
    for (size_t i = 1; i < w.top; i++)
        if (ps[i].solid != state) {
            out->kind = ps[i].solid ? BBK_RAY_E2S : BBK_RAY_S2E;
            out->t = ps[i].t;
            out->plane = ps[i].plane;
            return BBK_OK;
        }
    out->kind = state ? BBK_RAY_S : BBK_RAY_E;
    out->t = state ? 0.0 : 1.0;
    out->plane = -1;
    return BBK_OK;
}

static int transition(const bbk_level *lv, const tree *t, const double s[3], const double e[3], uint32_t bit,
                      bbk_transition *out) {
    seg g = {s[0], s[1], s[2], e[0] - s[0], e[1] - s[1], e[2] - s[2]};
    int r = fft_fast(lv, t, &g, bit, out);
    if (r == FAST_BUG) return BBK_ERR_INTERNAL;
    if (r == FAST_ON_PLANE) {
        int err = fft_open(lv, t, &g, bit, out);
        if (err) return err;
    }
    if (out->kind < BBK_RAY_E2S) out->t = out->kind == BBK_RAY_E ? 1.0 : 0.0;
    return BBK_OK;
}

int bbk_find_first_transition(const bbk_level *lv, uint32_t hull, const double start[3], const double end[3],
                              bbk_transition *out) {
    const tree *t;
    if (!lv || !start || !end || !out || !finite3(start) || !finite3(end)) return BBK_ERR_ARGUMENT;
    int err = hull_tree(lv, hull, &t);
    if (err) return err;
    return transition(lv, t, start, end, 1u << hull, out);
}

/* ---------------------------------------------------------------------------------------------
 * Skipping: the batch walk passes a subtree with no solid leaf near its piece of the segment in one
 * test (made at load, used by fast_many where it pays).
 *
 * For each node and hull bit, its skip box holds every cell of a leaf below the node that is solid
 * for the hull, widened by SKIP_MARGIN (and SKIP_RELATIVE of the coordinate), far more than the
 * walks' reach past a cell (TOUCH_EPSILON and rounding).  A cell's box is its parent's clipped by
 * the node's half-space (exact for one half-space, a superset after several; each bound widened by
 * its rounding), from the whole space at the root.  When the state so far is not solid and the
 * piece [t0, t1] of the segment misses the node's box, every leaf below the node the walk could
 * meet is empty: the walk goes on as after an empty leaf, with the same state, the same stack, so
 * the same transition, t and plane.  (Had the piece started on or lain in a plane below, the fast
 * walk would have handed the segment to the open walk: its pieces there are empty too and the
 * start's open state is then empty, so it finds the same first transition.)
 *
 * Where skipping pays depends on the level: in a level whose empty space is wide (or open to the
 * outside), random segments pass whole subtrees; in one whose walls are everywhere near, the tests
 * cost more than they save.  So skip_setup walks SKIP_PROBES segments between pseudo-random points
 * of the world's box (a fixed sequence: the same level always decides the same) both ways, counting
 * steps and tests, and turns skipping on for the hull only when it saves SKIP_PAYS of the steps. */
#define SKIP_MARGIN 1e-5
#define SKIP_RELATIVE 1e-9
#define SKIP_FAR 1e300          /* an empty box: the point (FAR, FAR, FAR), which no bounded segment nears */
#define SKIP_COORDINATE 1e6     /* m: segments (and worlds) reaching beyond it walk without skipping: within it
                                   the walks' rounding stays below 1e-8 m, far inside the margin */
#define SKIP_MAX_BITS 4         /* the onion tree's skip boxes cover hulls 1 .. 4 (memory: 48 bytes a node and hull) */
#define SKIP_PROBES 256
#define SKIP_TEST_COST 0.9      /* the box test the skipping walk makes at every node it reaches, in node steps
                                   (measured 0.75-1.0 on bench/runtime.py's levels) */
#define SKIP_PAYS 0.95          /* skip when the probes' cost with skipping is below this of without */
enum { SKIP_NONE = 0, SKIP_TEST = 1, SKIP_EMPTY = 2, SKIP_FLAGS = 3 };

/* b (mins, maxs) becomes a box holding b and {x : n.x <= d} (bounds only tightened) */
static void clip_box(double b[6], const double n[3], double d) {
    for (int i = 0; i < 3; i++) {
        if (n[i] == 0.0) continue;
        double other = 0.0, size = fabs(d);
        for (int j = 0; j < 3; j++) {
            if (j == i || n[j] == 0.0) continue;
            double a = n[j] * b[j], c = n[j] * b[3 + j], m = a < c ? a : c;
            other += m;
            size += fabs(m);
        }
        /* the rounding of other and of the division, widened away (with room to spare) */
        double v = (d - other) / n[i], slack = size * 1e-13 / fabs(n[i]);
        if (!(v == v) || !(slack == slack)) continue;
        if (n[i] > 0) {
            v += slack;
            if (v < b[3 + i]) b[3 + i] = v;
        } else {
            v -= slack;
            if (v > b[i]) b[i] = v;
        }
    }
}

static void box_union(double *a, const double *b) {
    for (int i = 0; i < 3; i++) {
        if (b[i] < a[i]) a[i] = b[i];
        if (b[3 + i] > a[3 + i]) a[3 + i] = b[3 + i];
    }
}

static double skip_inverse(double d) { return 1.0 / (fabs(d) < 1e-200 ? 1e-200 : d); }

/* Does the piece [t0, t1] of s + t d (inv = 1 / d, a zero component as 1e-200: the segment moved
 * by 1e-200 m at most, far below the margin) miss box b (mins, maxs)?  The slabs' t ranges: each
 * is finite or infinite, never NaN, for a segment within SKIP_COORDINATE. */
static int piece_misses(double sx, double sy, double sz, double ix, double iy, double iz, double t0, double t1,
                        const double *b) {
    double a0 = (b[0] - sx) * ix, a1 = (b[3] - sx) * ix;
    double b0 = (b[1] - sy) * iy, b1 = (b[4] - sy) * iy;
    double c0 = (b[2] - sz) * iz, c1 = (b[5] - sz) * iz;
    double an = a0 < a1 ? a0 : a1, af = a0 > a1 ? a0 : a1;  /* (the forms of minsd and maxsd: no branch) */
    double bn = b0 < b1 ? b0 : b1, bf = b0 > b1 ? b0 : b1;
    double cn = c0 < c1 ? c0 : c1, cf = c0 > c1 ? c0 : c1;
    t0 = an > t0 ? an : t0;
    t0 = bn > t0 ? bn : t0;
    t0 = cn > t0 ? cn : t0;
    t1 = af < t1 ? af : t1;
    t1 = bf < t1 ? bf : t1;
    t1 = cf < t1 ? cf : t1;
    return t0 > t1;
}

static int bounded(const seg *g) {  /* (one comparison: no branch per coordinate) */
    double a = py_max(py_max(fabs(g->sx), fabs(g->sy)), fabs(g->sz));
    double b = py_max(py_max(fabs(g->sx + g->dx), fabs(g->sy + g->dy)), fabs(g->sz + g->dz));
    return py_max(a, b) < SKIP_COORDINATE;
}

/* The cells' boxes (pre-order from the root), then for each hull bit the solid leaves' boxes
 * (children before parents), their flags and the widened boxes.  0 when made, -1 when out of memory
 * or a bound was exceeded (the tree then walks without skipping). */
static int make_skips(tree *t, uint32_t max_depth, uint32_t bit0, uint32_t bits, double *out, uint8_t *flag) {
    uint32_t n = t->n, cap = max_depth + 2, k = 0, sp = 0;
    double *leafbox = (double *)malloc(((size_t)t->l * 6 + 1) * sizeof *leafbox);
    double *cell = (double *)malloc(((size_t)n * 6 + 1) * sizeof *cell);
    double *stack = (double *)malloc((size_t)cap * 6 * sizeof *stack);
    int32_t *codes = (int32_t *)malloc((size_t)cap * sizeof *codes);
    int32_t *order = (int32_t *)malloc(((size_t)n + 1) * sizeof *order);
    int ok = leafbox && cell && stack && codes && order && n > 0;
    if (ok) {
        for (int i = 0; i < 3; i++) {
            stack[i] = -HUGE_VAL;
            stack[3 + i] = HUGE_VAL;
        }
        codes[sp++] = 0;
    }
    while (ok && sp) {
        int32_t code = codes[--sp];
        double box[6];
        memcpy(box, stack + 6 * (size_t)sp, sizeof box);
        if (code < 0) {
            memcpy(leafbox + 6 * (size_t)(-1 - code), box, sizeof box);
            continue;
        }
        if (k >= n || sp + 2 > cap) {
            ok = 0;
            break;
        }
        order[k++] = code;
        memcpy(cell + 6 * (size_t)code, box, sizeof box);
        const node *nd = &t->nodes[code];
        double nn[3] = {nd->nx, nd->ny, nd->nz}, neg[3] = {-nd->nx, -nd->ny, -nd->nz};
        double *back = stack + 6 * (size_t)sp, *front = back + 6;
        memcpy(back, box, sizeof box);
        clip_box(back, nn, nd->d);
        memcpy(front, box, sizeof box);
        clip_box(front, neg, -nd->d);
        codes[sp++] = nd->child[1];
        codes[sp++] = nd->child[0];
    }
    ok = ok && k == n;
    for (uint32_t h = 0; ok && h < bits; h++) {
        uint32_t bit = 1u << (bit0 + h);
        for (uint32_t i = k; i-- > 0;) {
            const node *nd = &t->nodes[order[i]];
            double *box = out + ((size_t)h * n + (size_t)order[i]) * 6;
            for (int a = 0; a < 3; a++) {
                box[a] = HUGE_VAL;
                box[3 + a] = -HUGE_VAL;
            }
            for (int c = 0; c < 2; c++) {
                int32_t child = nd->child[c];
                if (child >= 0) box_union(box, out + ((size_t)h * n + (size_t)child) * 6);
                else if (t->solid[-1 - child] & bit) box_union(box, leafbox + 6 * (size_t)(-1 - child));
            }
        }
        for (uint32_t i = 0; i < k; i++) {  /* the flag, then the box widened (an empty one: the far point) */
            size_t at = (size_t)h * n + (size_t)order[i];
            double *box = out + at * 6;
            const double *c = cell + 6 * (size_t)order[i];
            int empty = box[0] > box[3] || box[1] > box[4] || box[2] > box[5], covers = 1;
            for (int a = 0; a < 3; a++) {
                box[a] = empty ? SKIP_FAR : box[a] - (SKIP_MARGIN + SKIP_RELATIVE * fabs(box[a]));
                box[3 + a] = empty ? SKIP_FAR : box[3 + a] + (SKIP_MARGIN + SKIP_RELATIVE * fabs(box[3 + a]));
                covers &= box[a] <= c[a] && box[3 + a] >= c[3 + a];
            }
            flag[at] = empty ? SKIP_EMPTY : covers ? SKIP_NONE : SKIP_TEST;  /* covers: a test never misses */
        }
    }
    free(leafbox);
    free(cell);
    free(stack);
    free(codes);
    free(order);
    if (!ok) return -1;
    t->skip = out;
    t->skip_flag = flag;
    t->bit0 = bit0;
    t->bits = bits;
    return 0;
}

/* _fft_fast's steps for one segment (a node or a leaf: 1; skipping, each node reached costs
 * SKIP_TEST_COST more: fast_many_skip tests there whatever the flag), skipping (as fast_many_skip
 * does) or not: the probes of skip_setup */
static double probe_cost(const tree *t, const seg *g, uint32_t h, int skipping, int32_t *codes, double *ts) {
    const double *skip = t->skip + 6 * (size_t)h * t->n;
    const uint8_t *flag = t->skip_flag + (size_t)h * t->n;
    double ix = skip_inverse(g->dx), iy = skip_inverse(g->dy), iz = skip_inverse(g->dz), cost = 0.0;
    uint32_t bit = 1u << (t->bit0 + h);
    int sp = 0, state = -1;
    int32_t code = t->root;
    double t0 = 0.0, t1 = 1.0;
    for (;;) {
        while (code >= 0) {
            int f = skipping && state != 1 ? flag[code] : SKIP_NONE;
            cost += skipping ? SKIP_TEST_COST : 0.0;
            if (f == SKIP_EMPTY || (f == SKIP_TEST && piece_misses(g->sx, g->sy, g->sz, ix, iy, iz, t0, t1,
                                                                   skip + (size_t)code * 6)))
                break;
            const node *nd = &t->nodes[code];
            int straddle;
            double tm = 0.0;
            int near = node_side(nd, g, t0, t1, &straddle, &tm);
            cost += 1.0;
            if (near < 0) return cost;
            if (straddle) {
                if (sp >= STACK_SIZE) return cost;
                codes[sp] = nd->child[1 - near];
                ts[2 * sp] = tm;
                ts[2 * sp + 1] = t1;
                sp++;
                t1 = tm;
            }
            code = nd->child[near];
        }
        int leaf_solid = code < 0 ? ((t->solid[-1 - code] & bit) ? 1 : 0) : 0;  /* (skipped: empty) */
        cost += 1.0;
        if (state < 0) state = leaf_solid;
        else if (leaf_solid != state) return cost;
        if (!sp) return cost;
        sp--;
        code = codes[sp];
        t0 = ts[2 * sp];
        t1 = ts[2 * sp + 1];
    }
}

/* The probes: SKIP_PROBES segments between points of the world's box, a fixed sequence
 * (xorshift64*), so the same level always decides the same */
static void probe_segments(const double *world, seg *g) {
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int k = 0; k < SKIP_PROBES; k++) {
        double p[6];
        for (int i = 0; i < 6; i++) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            double u = (double)((x * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0);
            p[i] = world[i % 3] + u * (world[3 + i % 3] - world[i % 3]);
        }
        seg one = {p[0], p[1], p[2], p[3] - p[0], p[4] - p[1], p[5] - p[2]};
        g[k] = one;
    }
}

/* For each hull: the probes walked with skipping and without; skipping is on for the hull when
 * it saves SKIP_PAYS.  -1 out of memory (then no skipping). */
static int skip_decide(tree *t, const double *world) {
#ifdef BBK_SKIP_FORCE  /* tests: -DBBK_SKIP_FORCE=1 skips for every hull, =0 for none (the answers are the same) */
    (void)world;
    t->skip_on = BBK_SKIP_FORCE ? (1u << t->bits) - 1u : 0u;
    return 0;
#endif
    int32_t codes[STACK_SIZE];
    double ts[2 * STACK_SIZE];
    seg *g = (seg *)malloc(SKIP_PROBES * sizeof *g);
    if (!g) return -1;
    probe_segments(world, g);
    for (uint32_t h = 0; h < t->bits; h++) {
        double plain = 0.0, skipping = 0.0;
        for (int k = 0; k < SKIP_PROBES; k++) {
            plain += probe_cost(t, &g[k], h, 0, codes, ts);
            skipping += probe_cost(t, &g[k], h, 1, codes, ts);
        }
        if (skipping < SKIP_PAYS * plain) t->skip_on |= 1u << h;
        STAT(fprintf(stderr, "skip_decide n=%u bit %u: %.2f steps, %.2f skipping\n", t->n, t->bit0 + h,
                     plain / SKIP_PROBES, skipping / SKIP_PROBES));
    }
    free(g);
    return 0;
}

/* the skip boxes and flags of the point tree (hull 0) and the onion tree (hulls 1 .. H - 1), and
 * where skipping pays; 0, or -1 out of memory */
static int skip_setup(bbk_level *lv) {
    uint32_t onion_bits = lv->onion.n && lv->hulls > 1 ? lv->hulls - 1 : 0;
    if (onion_bits > SKIP_MAX_BITS) onion_bits = SKIP_MAX_BITS;
    size_t boxes = (size_t)lv->point.n + (size_t)lv->onion.n * onion_bits;
    lv->skips = (double *)malloc((boxes ? boxes : 1) * 6 * sizeof *lv->skips);
    lv->skip_flags = (uint8_t *)malloc(boxes ? boxes : 1);
    if (!lv->skips || !lv->skip_flags) return -1;
    int world_ok = 1, err = 0;
    for (int i = 0; i < 6; i++) world_ok &= is_finite(lv->world[i]) && fabs(lv->world[i]) < SKIP_COORDINATE;
    if (lv->point.n && !make_skips(&lv->point, lv->max_depth, 0, 1, lv->skips, lv->skip_flags) && world_ok)
        err |= skip_decide(&lv->point, lv->world);
    if (onion_bits && !make_skips(&lv->onion, lv->max_depth, 1, onion_bits, lv->skips + (size_t)lv->point.n * 6,
                                  lv->skip_flags + lv->point.n) && world_ok)
        err |= skip_decide(&lv->onion, lv->world);
    return err;
}

/* fast_many: _fft_fast for n segments, LANES of them followed at once.  One walk is a chain of
 * dependent steps (load the node, the plane's distances, the side, the child), so a lone walk
 * leaves the processor waiting; interleaving LANES independent walks, one node or leaf each per
 * round, lets their steps overlap.  Each lane does exactly what fft_fast does (the same values in
 * the same order), and the two choices a random segment makes at a node (the near side, whether
 * it straddles) are computed without a branch: the far half is always written to the lane's stack
 * and kept (sp += straddle) only when it straddles.  status[i]: FAST_DONE (res[i] holds the
 * transition), FAST_ON_PLANE (the open walk decides) or FAST_BUG.
 *
 * A box trace's retry (lengths != NULL: the segments' lengths before the back-off) matters only
 * when it finds E2S with t * (length + RETRY_BACKOFF) <= RETRY_LIMIT (trace_retried), so its walk
 * stops with FAST_PAST (no such hit) at a first leaf that is solid, and when the piece it pops
 * starts beyond that bound: every later transition's t is at least that t0 (for a bounded segment
 * tm is never NaN, so each piece lies inside its parent's; the product rounds monotonically), and
 * an open walk met later would list the same pieces before it (docs/FORMAT.md, "Trace").
 *
 * A trace's first walk (past0 = SETTLE_SOLID) ends with FAST_PAST at a first leaf that is solid:
 * the trace then starts solid whatever follows (trace_first reads no more of an S or S2E: t 0,
 * no plane), and the rest of the walk, through the solid and out, would be wasted.  RETRY_LIMIT
 * as its past does that at no cost in the walk: no t0 it pops (t0 <= 1) makes t0 * past exceed
 * RETRY_LIMIT (the least positive double would, too, but its products are subnormal: 15-30% slower). */
#define SETTLE_SOLID RETRY_LIMIT
/* A start found solid at a first leaf whose every plane above it lies farther than RETRY_CLEAR
 * from it (the lane's clear: the least |d0| = |ds| of the nodes it stepped, t0 being 0 there)
 * needs no retry: the start backed off RETRY_BACKOFF lies on the same side of each of those
 * planes, beyond TOUCH_EPSILON (within SKIP_COORDINATE the two ds differ by RETRY_BACKOFF and a
 * rounding below 1e-8), so the retry's walk would step to the same solid leaf first and settle
 * there (FAST_PAST: no hit within the back-off) -- when both segments are bounded, as the retry's
 * settling asks. */
#define RETRY_CLEAR (2 * RETRY_BACKOFF)
typedef struct lane {
    double sx, sy, sz, dx, dy, dz, t0, t1;
    double past;              /* a retry's length + RETRY_BACKOFF, SETTLE_SOLID or 0 (see above) */
    double clear;             /* the least |d0| of the nodes it has stepped (see RETRY_CLEAR) */
    struct lane_entry *stack;
    int32_t code, entry;
    int sp, state;
    size_t job;
} lane;

typedef struct skip_lane {    /* a lane of the skipping walk (fast_many_skip) */
    lane l;
    double ix, iy, iz;        /* 1 / d for the box test */
    int inverse;              /* 1, or -1 when the segment is too far out to skip */
    int mask;                 /* SKIP_FLAGS while the state is not solid, else 0: masks the node's flag */
    int skip;                 /* the lane passes the subtree at its node (skip_ahead decided it) */
} skip_lane;

static void lane_start(lane *l, const tree *t, const seg *g, size_t job, const double *lengths, double past0) {
    l->past = lengths ? (bounded(g) ? lengths[job] + RETRY_BACKOFF : 0.0) : past0;
    l->sx = g->sx;
    l->sy = g->sy;
    l->sz = g->sz;
    l->dx = g->dx;
    l->dy = g->dy;
    l->dz = g->dz;
    l->t0 = 0.0;
    l->t1 = 1.0;
    l->clear = HUGE_VAL;
    l->code = t->root;
    l->entry = -1;
    l->sp = 0;
    l->state = -1;
    l->job = job;
}

/* one node of a lane's walk: FAST_GO to go on, FAST_ON_PLANE to stop.  The far half is written
 * on top of the lane's stack and kept (sp += straddle) only when the piece straddles; the near
 * piece's end is read back from that entry (t[0] = tm when it straddles, else t[1] = t1), with no
 * branch.  The stack holds one far half per straddled node above the lane's node, so sp stays
 * below the tree's depth (bbk_load proves it at most max_depth < lane_depth). */
static inline int lane_node(lane *l, const node *nodes, int clear) {
    const node *nd = &nodes[l->code];
    double t0 = l->t0, t1 = l->t1;
    double ds = nd->nx * l->sx + nd->ny * l->sy + nd->nz * l->sz - nd->d;
    double dd = nd->nx * l->dx + nd->ny * l->dy + nd->nz * l->dz;
    double d0 = ds + t0 * dd, d1 = ds + t1 * dd;
    double a0 = fabs(d0);
    int on0 = a0 <= TOUCH_EPSILON, on1 = fabs(d1) <= TOUCH_EPSILON, front0 = d0 > 0;
    if (on0) {  /* rare: the piece starts on the plane */
        if (on1 || t0 == 0.0) return FAST_ON_PLANE;
        front0 = d1 > 0;
    }
    if (clear) l->clear = py_min(l->clear, a0);  /* (a constant where it is inlined) */
    int near = !front0, straddle = !on1 & ((d1 > 0) != front0);
    struct lane_entry *top = &l->stack[l->sp];
    top->code = nd->child[front0];
    top->entry = nd->plane ^ near;
    top->t[0] = py_min(py_max(-ds / dd, t0), t1);  /* tm, used only when it straddles (dd != 0 then) */
    top->t[1] = t1;
    l->sp += straddle;
    l->t1 = top->t[1 - straddle];
    l->code = nd->child[near];
    return FAST_GO;
}

/* the lane goes on with the far piece its stack holds last */
static inline void lane_pop(lane *l) {
    const struct lane_entry *top = &l->stack[--l->sp];
    l->code = top->code;
    l->t0 = top->t[0];
    l->t1 = top->t[1];
    l->entry = top->entry;
}

/* one leaf of a lane's walk: FAST_DONE when the walk ends (res holds the transition), FAST_PAST
 * when a retry is settled, else FAST_GO */
static inline int lane_leaf(lane *l, const uint32_t *solid, uint32_t bit, bbk_transition *res) {
    int leaf_solid = (solid[-1 - l->code] & bit) ? 1 : 0;
    if (l->state < 0) {
        l->state = leaf_solid;
        if (leaf_solid && l->past > 0.0) {
            res->t = l->clear;  /* (a trace's first walk: see RETRY_CLEAR) */
            return FAST_PAST;
        }
    } else if (leaf_solid != l->state) {
        res->kind = leaf_solid ? BBK_RAY_E2S : BBK_RAY_S2E;
        res->t = l->t0;
        res->plane = l->entry;
        return FAST_DONE;
    }
    if (!l->sp) {
        res->kind = l->state ? BBK_RAY_S : BBK_RAY_E;
        res->t = 1.0;
        res->plane = -1;
        return FAST_DONE;
    }
    lane_pop(l);
    return l->t0 * l->past > RETRY_LIMIT ? FAST_PAST : FAST_GO;
}

/* one round of a lane of fast_many: a node or a leaf */
static inline int lane_round(lane *l, const node *nodes, const uint32_t *solid, uint32_t bit, bbk_transition *res,
                             int clear) {
    if (l->code >= 0) {
        STAT(bbk_stats[0]++);
        return lane_node(l, nodes, clear);
    }
    STAT(bbk_stats[1]++);
    return lane_leaf(l, solid, bit, &res[l->job]);
}

/* lane_leaf for a skipped subtree, as one empty leaf (the state so far is not solid: the lane's
 * mask sees to it): 1 when the walk ends */
static int lane_skipped(lane *l, bbk_transition *res) {
    l->state = 0;
    if (!l->sp) {
        res->kind = BBK_RAY_E;
        res->t = 1.0;
        res->plane = -1;
        return FAST_DONE;
    }
    lane_pop(l);
    return l->t0 * l->past > RETRY_LIMIT ? FAST_PAST : FAST_GO;
}

/* Whether the lane will pass the subtree at the node it has just reached (see "Skipping"), decided
 * at once, with the piece [t0, t1] the lane has there or one holding it: the walk branches on the
 * answer only in the next round, when it is long known (a branch on a test just made would be
 * mispredicted late, and the work after it lost); the test itself is made whatever the flag, so
 * that no branch waits on the node's flag either.  A wider piece misses the box less often, never
 * when the exact one meets it: the answers are the same. */
static inline void skip_ahead(skip_lane *sl, const double *skip, const uint8_t *flag, double t0, double t1) {
    const lane *l = &sl->l;
    int32_t code = l->code;
    size_t c = (size_t)(code & -(int32_t)(code >= 0));  /* (at a leaf: node 0, and skip is not read) */
    int f = flag[c] & sl->mask;
    STAT(bbk_stats[3] += f == SKIP_TEST && code >= 0);
    int miss = piece_misses(l->sx, l->sy, l->sz, sl->ix, sl->iy, sl->iz, t0, t1, skip + c * 6);  /* always: no branch */
    sl->skip = (f >> 1) | (f & miss);  /* SKIP_EMPTY, or SKIP_TEST and the piece misses the box */
}

static void skip_lane_start(skip_lane *sl, const tree *t, const seg *g, size_t job, const double *lengths,
                            double past0) {
    lane_start(&sl->l, t, g, job, lengths, past0);
    sl->ix = skip_inverse(g->dx);
    sl->iy = skip_inverse(g->dy);
    sl->iz = skip_inverse(g->dz);
    sl->inverse = bounded(g) ? 1 : -1;
    sl->mask = sl->inverse > 0 ? SKIP_FLAGS : 0;
    sl->skip = 0;
}

/* one round of a skipping lane (see fast_many_skip): FAST_GO, or how its walk ended */
static inline int skip_round(skip_lane *sl, const node *nodes, const uint32_t *solid, uint32_t bit, const double *skip,
                             const uint8_t *flag, bbk_transition *res, int clear) {
    lane *l = &sl->l;
    int r;
    double t1 = l->t1;  /* the node's piece ends there: the near piece lies within [t0, t1] */
    if (l->code >= 0 && sl->skip) {
        STAT(bbk_stats[2]++);
        r = lane_skipped(l, &res[l->job]);
        t1 = l->t1;
    } else if (l->code >= 0) {
        STAT(bbk_stats[0]++);
        r = lane_node(l, nodes, clear);
    } else {
        STAT(bbk_stats[1]++);
        r = lane_leaf(l, solid, bit, &res[l->job]);
        sl->mask = l->state == 1 || sl->inverse < 0 ? 0 : SKIP_FLAGS;
        t1 = l->t1;
    }
    if (r == FAST_GO) skip_ahead(sl, skip, flag, l->t0, t1);
    return r;
}

/* fast_many where skipping pays: as a lane reaches a node, the node's flag (masked by the state)
 * and when it says so the box test (skip_ahead); in its next round the lane passes the subtree or
 * steps into it */
static void fast_many_skip(const bbk_level *lv, const tree *t, uint32_t h, size_t n, const seg *segs,
                           const double *lengths, double past0, int clear, bbk_transition *res,
                           signed char *status) {
    skip_lane lanes[LANES];
    size_t next = 0;
    int live = 0;
    uint32_t bit = 1u << (t->bit0 + h);
    const double *skip = t->skip + 6 * (size_t)h * t->n;
    const uint8_t *flag = t->skip_flag + (size_t)h * t->n;
    for (int k = 0; k < LANES; k++) {
        lanes[k].l.stack = lv->lanes + (size_t)k * lv->lane_depth;
        if (next < n) {
            skip_lane_start(&lanes[k], t, &segs[next], next, lengths, past0);
            skip_ahead(&lanes[k], skip, flag, 0.0, 1.0);
            next++;
            live++;
        } else {
            lanes[k].l.job = (size_t)-1;
        }
    }
    const node *nodes = t->nodes;  /* (locals: the lanes' stores cannot change them) */
    const uint32_t *solid = t->solid;
    while (next < n) {  /* every lane busy: a lane that ends takes the next segment at once */
        for (int k = 0; k < LANES; k++) {
            skip_lane *sl = &lanes[k];
            int r = clear ? skip_round(sl, nodes, solid, bit, skip, flag, res, 1)  /* (two loops, each */
                          : skip_round(sl, nodes, solid, bit, skip, flag, res, 0);  /* with its own rounds) */
            if (r == FAST_GO) continue;
            status[sl->l.job] = (signed char)r;
            if (next < n) {
                skip_lane_start(sl, t, &segs[next], next, lengths, past0);
                skip_ahead(sl, skip, flag, 0.0, 1.0);
                next++;
            } else {
                sl->l.job = (size_t)-1;
                live--;
            }
        }
    }
    while (live) {  /* the last segments: lanes fall idle */
        for (int k = 0; k < LANES; k++) {
            skip_lane *sl = &lanes[k];
            if (sl->l.job == (size_t)-1) continue;
            int r = skip_round(sl, nodes, solid, bit, skip, flag, res, clear);
            if (r == FAST_GO) continue;
            status[sl->l.job] = (signed char)r;
            sl->l.job = (size_t)-1;
            live--;
        }
    }
}

/* Whether a batch call of n segments skips (skip_setup decided per hull at load; the answers are
 * the same either way).  A call of at least SKIP_CALL_MIN segments checks that decision on its own
 * segments: SKIP_CALL_PROBES of them, evenly spaced, walked both ways.  The load's probes cross the
 * world's box, much of it outside the level on a sealed map; a caller whose segments stay inside
 * (a light bake's shadow and bounce rays, an engine's traces) may find the tests dearer than the
 * subtrees they pass (e3m4: segments between inside points 5.1 -> 3.3 M a second with skipping;
 * their probes cost 1.66 times as much skipping, the world box's 0.79 times).
 * Shorter calls keep the load's decision. */
#define SKIP_CALL_MIN 1024
#define SKIP_CALL_PROBES 64
static int skip_for_call(const tree *t, uint32_t bit, size_t n, const span *in) {
    uint32_t hull = 0;
    while (hull < 31 && !((bit >> hull) & 1u)) hull++;
    if (!t->skip_on || hull < t->bit0 || hull - t->bit0 >= t->bits || !((t->skip_on >> (hull - t->bit0)) & 1u))
        return 0;
#ifdef BBK_SKIP_FORCE
    (void)n; (void)in;
    return 1;
#else
    if (n < SKIP_CALL_MIN) return 1;
    int32_t codes[STACK_SIZE];
    double ts[2 * STACK_SIZE], plain = 0.0, skipping = 0.0;
    for (size_t k = 0; k < SKIP_CALL_PROBES; k++) {
        size_t i = in->stride * (k * (n / SKIP_CALL_PROBES));
        const double *a = in->s + i, *b = in->e + i;
        seg g = {a[0], a[1], a[2], b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        plain += probe_cost(t, &g, hull - t->bit0, 0, codes, ts);
        skipping += probe_cost(t, &g, hull - t->bit0, 1, codes, ts);
    }
    return skipping < SKIP_PAYS * plain;
#endif
}

static void fast_many(const bbk_level *lv, const tree *t, uint32_t bit, size_t n, const seg *segs,
                      const double *lengths, double past0, int clear, bbk_transition *res, signed char *status,
                      int skip) {
    uint32_t hull = 0;
    while (hull < 31 && !((bit >> hull) & 1u)) hull++;
    if (skip && t->skip_on && hull >= t->bit0 && hull - t->bit0 < t->bits && ((t->skip_on >> (hull - t->bit0)) & 1u)) {
        fast_many_skip(lv, t, hull - t->bit0, n, segs, lengths, past0, clear, res, status);
        return;
    }
    lane lanes[LANES];
    size_t next = 0;
    int live = 0;
    for (int k = 0; k < LANES; k++) {
        lanes[k].stack = lv->lanes + (size_t)k * lv->lane_depth;
        if (next < n) {
            lane_start(&lanes[k], t, &segs[next], next, lengths, past0);
            next++;
            live++;
        } else {
            lanes[k].job = (size_t)-1;
        }
    }
    const node *nodes = t->nodes;  /* (locals: the lanes' stores cannot change them) */
    const uint32_t *solid = t->solid;
    while (next < n) {  /* every lane busy: a lane that ends takes the next segment at once */
        for (int k = 0; k < LANES; k++) {
            lane *l = &lanes[k];
            int r = clear ? lane_round(l, nodes, solid, bit, res, 1) : lane_round(l, nodes, solid, bit, res, 0);
            if (r == FAST_GO) continue;
            status[l->job] = (signed char)r;
            if (next < n) {
                lane_start(l, t, &segs[next], next, lengths, past0);
                next++;
            } else {
                l->job = (size_t)-1;
                live--;
            }
        }
    }
    while (live) {  /* the last segments: lanes fall idle */
        for (int k = 0; k < LANES; k++) {
            lane *l = &lanes[k];
            if (l->job == (size_t)-1) continue;
            int r = lane_round(l, nodes, solid, bit, res, clear);
            if (r == FAST_GO) continue;
            status[l->job] = (signed char)r;
            l->job = (size_t)-1;
            live--;
        }
    }
}

/* transition's ending for a fast walk's answer: the open walk where it stopped on a plane */
static int finish_transition(const bbk_level *lv, const tree *t, const seg *g, uint32_t bit, int status,
                             bbk_transition *out) {
    if (status == FAST_BUG) return BBK_ERR_INTERNAL;
    if (status == FAST_ON_PLANE) {
        int err = fft_open(lv, t, g, bit, out);
        if (err) return err;
    }
    if (out->kind < BBK_RAY_E2S) out->t = out->kind == BBK_RAY_E ? 1.0 : 0.0;
    return BBK_OK;
}

/* trace_hulls, the first transition found: hit t, plane, start_solid; *retry_from (when the
 * retry applies) is the start backed off 1e-3 m along the motion, and 1 is returned */
static int trace_first(const double *s, const double *e, const bbk_transition *tr, int retry, double *hit_t,
                       int32_t *plane, int *start_solid, double *length, double retry_from[3]) {
    *start_solid = tr->kind == BBK_RAY_S || tr->kind == BBK_RAY_S2E;
    *hit_t = tr->kind == BBK_RAY_E2S ? tr->t : *start_solid ? 0.0 : 1.0;
    *plane = tr->kind == BBK_RAY_E2S ? tr->plane : -1;
    if (!(retry && *start_solid)) return 0;
    double delta[3] = {e[0] - s[0], e[1] - s[1], e[2] - s[2]};
    *length = sqrt(delta[0] * delta[0] + delta[1] * delta[1] + delta[2] * delta[2]);
    if (!(*length > 0)) return 0;
    for (int k = 0; k < 3; k++) retry_from[k] = s[k] - RETRY_BACKOFF * delta[k] / *length;
    return 1;
}

/* the retry's answer: an E2S within the back-off is a hit at t = 0 with that plane */
static void trace_retried(const bbk_transition *tr2, double length, double *hit_t, int32_t *plane, int *start_solid) {
    if (tr2->kind == BBK_RAY_E2S && tr2->t * (length + RETRY_BACKOFF) <= RETRY_LIMIT) {
        *start_solid = 0;
        *plane = tr2->plane;
        *hit_t = 0.0;
    }
}

/* where a trace stops and the hit plane's normal (zero for none) */
static void trace_point(const bbk_level *lv, const double *s, const double *e, double hit_t, int32_t plane,
                        double point[3], double normal[3]) {
    for (int k = 0; k < 3; k++) {
        point[k] = hit_t >= 1.0 ? e[k] : s[k] + hit_t * (e[k] - s[k]);
        normal[k] = plane >= 0 ? lv->normals[3 * (size_t)plane + (size_t)k] : 0.0;
    }
}

static void trace_hit(const bbk_level *lv, const double *s, const double *e, double hit_t, int32_t plane,
                      int start_solid, bbk_hit *out) {
    out->fraction = hit_t;
    trace_point(lv, s, e, hit_t, plane, out->point, out->normal);
    for (int k = 0; k < 3; k++) out->impact[k] = out->point[k];
    out->plane = plane;
    out->start_solid = start_solid;
    out->hit = hit_t < 1.0;
    out->nodes_visited = 0;
}

/* where a batch trace writes its answers: bbk_hit records (hits), else the arrays of
 * bbk_trace_many_arrays */
typedef struct sink {
    bbk_hit *hits;
    double *fraction, *point, *normal;
    int64_t *plane;
    uint8_t *start_solid, *hit;
} sink;

static void sink_put(const bbk_level *lv, const sink *o, size_t i, const double *s, const double *e, double hit_t,
                     int32_t plane, int start_solid) {
    if (o->hits) {
        trace_hit(lv, s, e, hit_t, plane, start_solid, o->hits + i);
        return;
    }
    o->fraction[i] = hit_t;
    trace_point(lv, s, e, hit_t, plane, o->point + 3 * i, o->normal + 3 * i);
    o->plane[i] = plane;
    o->start_solid[i] = (uint8_t)(start_solid != 0);
    o->hit[i] = (uint8_t)(hit_t < 1.0);
}

/* trace_hulls: the hit of one segment, with the robustness retry for a start found solid */
int bbk_trace(const bbk_level *lv, uint32_t hull, const double s[3], const double e[3], int retry, bbk_hit *out) {
    const tree *t;
    bbk_transition tr;
    if (!lv || !s || !e || !out || !finite3(s) || !finite3(e)) return BBK_ERR_ARGUMENT;
    int err = hull_tree(lv, hull, &t);
    if (err) return err;
    uint32_t bit = 1u << hull;
    if ((err = transition(lv, t, s, e, bit, &tr))) return err;
    double hit_t, length, back[3];
    int32_t plane;
    int start_solid;
    if (trace_first(s, e, &tr, retry, &hit_t, &plane, &start_solid, &length, back)) {
        bbk_transition tr2;
        if ((err = transition(lv, t, back, e, bit, &tr2))) return err;
        trace_retried(&tr2, length, &hit_t, &plane, &start_solid);
    }
    trace_hit(lv, s, e, hit_t, plane, start_solid, out);
    return BBK_OK;
}

/* bbk_trace for CHUNK segments at most, the walks interleaved (fast_many), retries too */
static int trace_chunk(const bbk_level *lv, const tree *t, uint32_t bit, size_t n, const span *in, int retry,
                       const sink *out, size_t at, int skip) {
    struct chunk *c = lv->chunk;
    seg *g = c->g, *g2 = c->g2;
    bbk_transition *tr = c->tr, *tr2 = c->tr2;
    signed char *st = c->st, *st2 = c->st2;
    double *hit_t = c->hit_t, *length = c->length;
    int32_t *plane = c->plane;
    int *start_solid = c->start_solid;
    uint32_t *again = c->again;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const double *s = in->s + in->stride * i, *e = in->e + in->stride * i;
        seg x = {s[0], s[1], s[2], e[0] - s[0], e[1] - s[1], e[2] - s[2]};
        g[i] = x;
    }
    fast_many(lv, t, bit, n, g, NULL, SETTLE_SOLID, retry, tr, st, skip);
    for (size_t i = 0; i < n; i++) {
        const double *s = in->s + in->stride * i, *e = in->e + in->stride * i;
        double back[3];
        double clear = 0.0;
        if (st[i] == FAST_PAST) {  /* a solid start (SETTLE_SOLID): S, as far as the trace reads it */
            clear = tr[i].t;
            tr[i].kind = BBK_RAY_S;
            tr[i].t = 0.0;
            tr[i].plane = -1;
        } else {
            int err = finish_transition(lv, t, &g[i], bit, st[i], &tr[i]);
            if (err) return err;
        }
        if (trace_first(s, e, &tr[i], retry, &hit_t[i], &plane[i], &start_solid[i], &length[i], back)) {
            seg x = {back[0], back[1], back[2], e[0] - back[0], e[1] - back[1], e[2] - back[2]};
            if (clear > RETRY_CLEAR && bounded(&g[i]) && bounded(&x)) continue;  /* its retry settles at once */
            g2[m] = x;
            c->length2[m] = length[i];
            again[m++] = (uint32_t)i;
        }
    }
    fast_many(lv, t, bit, m, g2, c->length2, 0.0, 0, tr2, st2, skip);
    for (size_t j = 0; j < m; j++) {
        uint32_t i = again[j];
        if (st2[j] == FAST_PAST) continue;  /* the retry finds no hit within the back-off */
        int err = finish_transition(lv, t, &g2[j], bit, st2[j], &tr2[j]);
        if (err) return err;
        trace_retried(&tr2[j], length[i], &hit_t[i], &plane[i], &start_solid[i]);
    }
    for (size_t i = 0; i < n; i++)
        sink_put(lv, out, at + i, in->s + in->stride * i, in->e + in->stride * i, hit_t[i], plane[i], start_solid[i]);
    return BBK_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Plane shifting (core/runtime/shift.py HitCheck): the shape's support h(n) per plane, computed
 * as the Python computes it (so no per-shape table is needed) */

/* a hull's n . p, summed as NumPy's matmul does (detmath.matmul: k = 0, 1, 2 in order) */
static double hull_dot(const double *n, const double *q) { return n[0] * q[0] + n[1] * q[1] + n[2] * q[2]; }

static double support(const bbk_shape *sh, const double *n) {
    switch (sh->kind) {
    case BBK_SHAPE_SPHERE: return sh->radius;
    case BBK_SHAPE_CYLINDER: return sh->radius * hypot(n[0], n[1]) + sh->height * py_max(n[2], 0.0);
    case BBK_SHAPE_BOX: return fabs(n[0]) * sh->half[0] + fabs(n[1]) * sh->half[1] + fabs(n[2]) * sh->half[2];
    case BBK_SHAPE_HULL: {  /* the largest n . p (NumPy's max: the value, whichever point has it) */
        double best = hull_dot(n, sh->points);
        for (size_t k = 1; k < sh->point_count; k++) {
            double v = hull_dot(n, sh->points + 3 * k);
            if (v > best) best = v;
        }
        return best;
    }
    default: return 0.0;
    }
}

/* a point of the shape attaining the support in direction d (Shape.support_point) */
static void support_point(const bbk_shape *sh, const double d[3], double out[3]) {
    out[0] = out[1] = out[2] = 0.0;
    if (sh->kind == BBK_SHAPE_SPHERE) {
        double len = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        len = py_max(len, SUPPORT_MIN_LENGTH);
        for (int k = 0; k < 3; k++) out[k] = sh->radius * d[k] / len;
    } else if (sh->kind == BBK_SHAPE_CYLINDER) {
        double horiz = hypot(d[0], d[1]);
        if (horiz > CYLINDER_HORIZONTAL_EPSILON) {
            out[0] = sh->radius * d[0] / horiz;
            out[1] = sh->radius * d[1] / horiz;
        }
        out[2] = d[2] > 0 ? sh->height : d[2] < 0 ? 0.0 : 0.5 * sh->height;
    } else if (sh->kind == BBK_SHAPE_BOX) {
        for (int k = 0; k < 3; k++) out[k] = (d[k] > 0 ? 1.0 : d[k] < 0 ? -1.0 : 0.0) * sh->half[k];
    } else if (sh->kind == BBK_SHAPE_HULL) {  /* the first point of the largest d . p (NumPy's argmax) */
        size_t arg = 0;
        double best = hull_dot(d, sh->points);
        for (size_t k = 1; k < sh->point_count; k++) {
            double v = hull_dot(d, sh->points + 3 * k);
            if (v > best) {
                best = v;
                arg = k;
            }
        }
        memcpy(out, sh->points + 3 * arg, 3 * sizeof(double));
    }
}

static int valid_shape(const bbk_shape *sh) {
    if (!sh) return 0;
    switch (sh->kind) {
    case BBK_SHAPE_POINT: return 1;
    case BBK_SHAPE_SPHERE: return is_finite(sh->radius) && sh->radius >= 0;
    case BBK_SHAPE_CYLINDER:
        return is_finite(sh->radius) && sh->radius >= 0 && is_finite(sh->height) && sh->height >= 0;
    case BBK_SHAPE_BOX: return finite3(sh->half) && sh->half[0] >= 0 && sh->half[1] >= 0 && sh->half[2] >= 0;
    case BBK_SHAPE_HULL:
        if (!sh->points || sh->point_count < 1) return 0;
        for (size_t k = 0; k < sh->point_count; k++)
            if (!finite3(sh->points + 3 * k)) return 0;
        return 1;
    default: return 0;
    }
}

/* HitCheck of one segment; off: the shape's support of every plane (shift_offsets), or NULL to
 * compute it at each node (the same values) */
static int shift_one(const bbk_level *lv, const bbk_shape *sh, const double *off, const double s[3], const double e[3],
                     bbk_hit *out) {
    const tree *t = &lv->bevel;
    struct { int32_t code, entry; double t0, t1; } stack[STACK_SIZE + 2];
    double sx = s[0], sy = s[1], sz = s[2], dx = e[0] - sx, dy = e[1] - sy, dz = e[2] - sz;
    double best = 2.0;
    int32_t best_plane = -1, visited = 0;
    int sp = 0;
    stack[sp].code = t->root;
    stack[sp].t0 = 0.0;
    stack[sp].t1 = 1.0;
    stack[sp].entry = -1;
    sp++;
    while (sp) {
        sp--;
        int32_t code = stack[sp].code, entry = stack[sp].entry;
        double t0 = stack[sp].t0, t1 = stack[sp].t1;
        if (t1 > best) t1 = best;
        if (t0 >= best || t0 > t1) continue;
        if (code < 0) {
            if (t->solid[-1 - code] & 1u) {
                best = t0;
                best_plane = entry;
            }
            continue;
        }
        visited++;
        const node *nd = &t->nodes[code];
        int32_t p = nd->plane;
        const double *n = lv->normals + 3 * (size_t)p;
        double ds = nd->nx * sx + nd->ny * sy + nd->nz * sz - nd->d;
        double dd = nd->nx * dx + nd->ny * dy + nd->nz * dz;
        double up = off ? off[p ^ 1] : support(sh, lv->normals + 3 * (size_t)(p ^ 1));
        double down = off ? off[p] : support(sh, n);
        struct { int32_t code, entry; double a, b; } parts[2];
        int count = 0;
        for (int side = 0; side < 2; side++) {
            double gs = side == 0 ? -down - ds : ds - up, gd = side == 0 ? -dd : dd;
            int32_t face = side == 0 ? p ^ 1 : p;
            double g0 = gs + gd * t0, a, b;
            int32_t ent;
            int ok;
            if (gd > 0) {
                a = t0;
                b = py_min(t1, -gs / gd);
                ent = entry;
                ok = a < b;
            } else if (gd < 0) {
                double tc = -gs / gd;
                a = tc > t0 ? tc : t0;
                b = t1;
                ent = g0 >= -SHIFT_CONTACT_EPSILON ? face : entry;
                ok = a < b || (a == b && t0 == t1);
            } else {
                a = t0;
                b = t1;
                ent = entry;
                ok = side == 0 ? g0 <= 0 : g0 < 0;
            }
            if (ok) {
                parts[count].code = nd->child[side];
                parts[count].a = a;
                parts[count].b = b;
                parts[count].entry = ent;
                count++;
            }
        }
        if (sp + count > STACK_SIZE + 2) return BBK_ERR_INTERNAL;
        /* the part visited first goes on top: back first when moving toward the front */
        int first = (count == 2 && dd > 0) ? 1 : 0;
        for (int k = count - 1; k >= 0; k--) {
            int which = count == 2 ? (k == 0 ? first : 1 - first) : 0;
            stack[sp].code = parts[which].code;
            stack[sp].t0 = parts[which].a;
            stack[sp].t1 = parts[which].b;
            stack[sp].entry = parts[which].entry;
            sp++;
        }
    }
    int hit = best <= 1.0, start_solid = hit && best_plane < 0, ok = hit && !start_solid;
    double frac = hit ? (start_solid ? 0.0 : best) : 1.0;
    double delta[3] = {dx, dy, dz}, minus[3], sp3[3];
    for (int k = 0; k < 3; k++) {
        out->point[k] = hit ? s[k] + frac * delta[k] : e[k];
        out->normal[k] = ok ? lv->normals[3 * (size_t)best_plane + (size_t)k] : 0.0;
        minus[k] = -out->normal[k];
    }
    support_point(sh, minus, sp3);
    for (int k = 0; k < 3; k++) out->impact[k] = ok ? out->point[k] + sp3[k] : out->point[k];
    out->fraction = frac;
    out->plane = ok ? best_plane : -1;
    out->start_solid = start_solid;
    out->hit = hit;
    out->nodes_visited = visited;
    return BBK_OK;
}

int bbk_shift_trace(const bbk_level *lv, const bbk_shape *sh, const double s[3], const double e[3], bbk_hit *out) {
    if (!lv || !s || !e || !out || !valid_shape(sh) || !finite3(s) || !finite3(e)) return BBK_ERR_ARGUMENT;
    return shift_one(lv, sh, NULL, s, e, out);
}

/* ---------------------------------------------------------------------------------------------
 * Visibility (core/runtime/pvs.py) */

/* decompress row c into lv->row (the loader proved every row decodes to exactly row_bytes) */
static const uint8_t *vis_row(const bbk_level *lv, uint32_t c) {
    const uint8_t *in = lv->vis_rows + lv->vis_row_offset[c];
    uint8_t *out = lv->row;
    for (uint32_t o = 0; o < lv->row_bytes;) {
        if (*in) {
            out[o++] = *in++;
            continue;
        }
        uint32_t n = in[1];
        in += 2;
        while (n-- && o < lv->row_bytes) out[o++] = 0;
    }
    return out;
}

int bbk_point_cluster(const bbk_level *lv, const double p[3], int32_t *cluster) {
    if (!lv || !p || !cluster || !finite3(p)) return BBK_ERR_ARGUMENT;
    if (!lv->clusters) return BBK_ERR_NO_VIS;
    *cluster = lv->vis_leaf_cluster[bbk_point_leaf(lv, p)];
    return BBK_OK;
}

int bbk_cluster_can_see(const bbk_level *lv, int32_t a, int32_t b, int *visible) {
    if (!lv || !visible) return BBK_ERR_ARGUMENT;
    if (!lv->clusters) return BBK_ERR_NO_VIS;
    if (a >= (int64_t)lv->clusters || b >= (int64_t)lv->clusters) return BBK_ERR_ARGUMENT;
    if (a < 0 || b < 0) {
        *visible = 1;
        return BBK_OK;
    }
    /* decode row a only as far as byte b >> 3 */
    const uint8_t *in = lv->vis_rows + lv->vis_row_offset[a];
    uint32_t want = (uint32_t)b >> 3, o = 0;
    for (;;) {
        if (*in) {
            if (o == want) {
                *visible = (*in >> (b & 7)) & 1;
                return BBK_OK;
            }
            o++;
            in++;
            continue;
        }
        o += in[1];
        in += 2;
        if (o > want) {
            *visible = 0;
            return BBK_OK;
        }
    }
}

int bbk_can_see_points(const bbk_level *lv, const double a[3], const double b[3], int *visible) {
    int32_t ca, cb;
    int err = bbk_point_cluster(lv, a, &ca);
    if (!err) err = bbk_point_cluster(lv, b, &cb);
    if (!err) err = bbk_cluster_can_see(lv, ca, cb, visible);
    return err;
}

int bbk_visible_leaves(const bbk_level *lv, const double p[3], uint32_t *out, uint32_t capacity, uint32_t *count) {
    int32_t c;
    if (!count || (!out && capacity)) return BBK_ERR_ARGUMENT;
    int err = bbk_point_cluster(lv, p, &c);
    if (err) return err;
    const uint8_t *row = c >= 0 ? vis_row(lv, (uint32_t)c) : NULL;
    uint32_t k = 0;
    for (uint32_t leaf = 0; leaf < lv->point.l; leaf++) {
        int32_t lc = lv->vis_leaf_cluster[leaf];
        int seen = c < 0 || (lc >= 0 && (row[lc >> 3] >> (lc & 7)) & 1);
        if (!seen) continue;
        if (k < capacity) out[k] = leaf;
        k++;
    }
    *count = k;
    return BBK_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Batches */

int bbk_point_leaf_many(const bbk_level *lv, size_t n, const double *points, int32_t *leaves) {
    if (!lv || (n && (!points || !leaves))) return BBK_ERR_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        if (!finite3(points + 3 * i)) return BBK_ERR_ARGUMENT;
        leaves[i] = (int32_t)bbk_point_leaf(lv, points + 3 * i);
    }
    return BBK_OK;
}

int bbk_point_solid_many(const bbk_level *lv, uint32_t hull, size_t n, const double *points, uint8_t *solid) {
    if (!lv || (n && (!points || !solid))) return BBK_ERR_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        int s, err = bbk_point_solid(lv, hull, points + 3 * i, &s);
        if (err) return err;
        solid[i] = (uint8_t)s;
    }
    return BBK_OK;
}

/* the error the single query gives on the first segment that fails (arguments, then the hull) */
static int many_args(const bbk_level *lv, uint32_t hull, size_t n, const span *in, const tree **t) {
    int hull_err = hull_tree(lv, hull, t);
    if (!n) return BBK_OK;
    if (!finite3(in->s) || !finite3(in->e)) return BBK_ERR_ARGUMENT;
    if (hull_err) return hull_err;
    /* x - x is 0 for a finite x, NaN for an infinite or NaN one: the sums are 0 when all are finite
       (six sums, so that no one addition waits on the one before) */
    double sum[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (size_t i = 1; i < n; i++) {
        const double *s = in->s + in->stride * i, *e = in->e + in->stride * i;
        for (int k = 0; k < 3; k++) {
            sum[k] += s[k] - s[k];
            sum[3 + k] += e[k] - e[k];
        }
    }
    return sum[0] + sum[1] + sum[2] + sum[3] + sum[4] + sum[5] == 0.0 ? BBK_OK : BBK_ERR_ARGUMENT;
}

static int trace_many(const bbk_level *lv, uint32_t hull, size_t n, const span *in, int retry, const sink *out) {
    const tree *t = NULL;
    int err = many_args(lv, hull, n, in, &t);
    if (err) return err;
    int skip = skip_for_call(t, 1u << hull, n, in);
    for (size_t at = 0; at < n; at += CHUNK) {
        span part = {in->s + in->stride * at, in->e + in->stride * at, in->stride};
        err = trace_chunk(lv, t, 1u << hull, n - at < CHUNK ? n - at : CHUNK, &part, retry, out, at, skip);
        if (err) return err;
    }
    return BBK_OK;
}

int bbk_trace_many(const bbk_level *lv, uint32_t hull, size_t n, const double *segments, int retry, bbk_hit *out) {
    if (!lv || (n && (!segments || !out))) return BBK_ERR_ARGUMENT;
    span in = {segments, segments + 3, 6};
    sink o = {out, NULL, NULL, NULL, NULL, NULL, NULL};
    return trace_many(lv, hull, n, &in, retry, &o);
}

int bbk_trace_many_split(const bbk_level *lv, uint32_t hull, size_t n, const double *starts, const double *ends,
                         int retry, bbk_hit *out) {
    if (!lv || (n && (!starts || !ends || !out))) return BBK_ERR_ARGUMENT;
    span in = {starts, ends, 3};
    sink o = {out, NULL, NULL, NULL, NULL, NULL, NULL};
    return trace_many(lv, hull, n, &in, retry, &o);
}

int bbk_trace_many_arrays(const bbk_level *lv, uint32_t hull, size_t n, const double *starts, const double *ends,
                          int retry, double *fraction, double *point, double *normal, int64_t *plane,
                          uint8_t *start_solid, uint8_t *hit) {
    if (!lv || (n && (!starts || !ends || !fraction || !point || !normal || !plane || !start_solid || !hit)))
        return BBK_ERR_ARGUMENT;
    span in = {starts, ends, 3};
    sink o = {NULL, fraction, point, normal, plane, start_solid, hit};
    return trace_many(lv, hull, n, &in, retry, &o);
}

int bbk_find_first_transition_many(const bbk_level *lv, uint32_t hull, size_t n, const double *segments,
                                   bbk_transition *out) {
    const tree *t = NULL;
    if (!lv || (n && (!segments || !out))) return BBK_ERR_ARGUMENT;
    span in = {segments, segments + 3, 6};
    int err = many_args(lv, hull, n, &in, &t);
    int skip = err ? 0 : skip_for_call(t, 1u << hull, n, &in);
    for (size_t at = 0; at < n && !err; at += CHUNK) {  /* the walks interleaved, as bbk_trace_many */
        size_t m = n - at < CHUNK ? n - at : CHUNK;
        seg *g = lv->chunk->g;
        for (size_t i = 0; i < m; i++) {
            const double *s = segments + 6 * (at + i), *e = s + 3;
            seg x = {s[0], s[1], s[2], e[0] - s[0], e[1] - s[1], e[2] - s[2]};
            g[i] = x;
        }
        fast_many(lv, t, 1u << hull, m, g, NULL, 0.0, 0, out + at, lv->chunk->st, skip);
        for (size_t i = 0; i < m && !err; i++)
            err = finish_transition(lv, t, &g[i], 1u << hull, lv->chunk->st[i], out + at + i);
    }
    return err;
}

int bbk_shift_trace_many(const bbk_level *lv, const bbk_shape *shape, size_t n, const double *segments, bbk_hit *out) {
    if (!lv || (n && (!segments || !out))) return BBK_ERR_ARGUMENT;
    if (!n) return BBK_OK;
    if (!valid_shape(shape)) return BBK_ERR_ARGUMENT;
    double *off = lv->offsets;  /* h(n_p) for every plane, once: Shape.support over the plane table */
    for (uint32_t p = 0; p < lv->planes; p++) off[p] = support(shape, lv->normals + 3 * (size_t)p);
    for (size_t i = 0; i < n; i++) {
        const double *s = segments + 6 * i, *e = s + 3;
        if (!finite3(s) || !finite3(e)) return BBK_ERR_ARGUMENT;
        int err = shift_one(lv, shape, off, s, e, out + i);
        if (err) return err;
    }
    return BBK_OK;
}

int bbk_can_see_points_many(const bbk_level *lv, size_t n, const double *pairs, uint8_t *visible) {
    if (!lv || (n && (!pairs || !visible))) return BBK_ERR_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        int v, err = bbk_can_see_points(lv, pairs + 6 * i, pairs + 6 * i + 3, &v);
        if (err) return err;
        visible[i] = (uint8_t)v;
    }
    return BBK_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The slide mover (core/runtime/move.py, the single-character path, operation for operation) */

#define QUAKE_UNIT (1.0 / 32.0)
#define SAME_PLANE_DOT 0.99
#define STEP_GAIN_EPSILON 1e-6
#define CREASE_EPSILON 1e-9

void bbk_move_defaults(bbk_move_settings *s) {
    s->max_clip_planes = 5;
    s->max_bumps = 4;
    s->step_height = 18 * QUAKE_UNIT;
    s->ground_normal_z = 0.7;
    s->overclip = 1.001;
    s->surface_gap = 1.0 / 1024.0;
    s->ground_probe = 0.25 * QUAKE_UNIT;
    s->nudge_speed = 1.0 * QUAKE_UNIT;
    s->into_epsilon = 0.1 * QUAKE_UNIT;
}

static int valid_settings(const bbk_move_settings *s) {
    return s->max_clip_planes >= 3 && s->max_clip_planes <= BBK_MAX_CLIP_PLANES && s->max_bumps >= 1 &&
           s->ground_normal_z > 0.0 && s->ground_normal_z <= 1.0 && s->step_height >= 0 && s->surface_gap > 0 &&
           s->ground_probe > s->surface_gap && s->overclip >= 1.0 && is_finite(s->step_height) &&
           is_finite(s->ground_probe) && is_finite(s->overclip) && is_finite(s->nudge_speed) &&
           is_finite(s->into_epsilon);
}

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static void clip_velocity(const double *v, const double *n, double overclip, double *out) {
    double backoff = v[0] * n[0] + v[1] * n[1] + v[2] * n[2];
    backoff = backoff < 0 ? backoff * overclip : backoff / overclip;
    double r[3] = {v[0] - n[0] * backoff, v[1] - n[1] * backoff, v[2] - n[2] * backoff};
    memcpy(out, r, sizeof r);
}

/* _clip_to_planes: 1 when stopped dead */
static int clip_to_planes(double *vel, double (*planes)[3], int count, const bbk_move_settings *s) {
    double eps = s->into_epsilon;
    for (int i = 0; i < count; i++) {
        const double *pi = planes[i];
        if (dot3(vel, pi) >= eps) continue;
        double clip[3];
        clip_velocity(vel, pi, s->overclip, clip);
        for (int j = 0; j < count; j++) {
            const double *pj = planes[j];
            if (j == i || dot3(clip, pj) >= eps) continue;
            clip_velocity(clip, pj, s->overclip, clip);
            if (dot3(clip, pi) >= 0) continue;
            double c[3] = {pi[1] * pj[2] - pi[2] * pj[1], pi[2] * pj[0] - pi[0] * pj[2], pi[0] * pj[1] - pi[1] * pj[0]};
            double length = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]), d[3] = {0.0, 0.0, 0.0};
            if (!(length < CREASE_EPSILON)) {
                d[0] = c[0] / length;
                d[1] = c[1] / length;
                d[2] = c[2] / length;
            }
            double k = dot3(d, vel);
            clip[0] = d[0] * k;
            clip[1] = d[1] * k;
            clip[2] = d[2] * k;
            for (int m = 0; m < count; m++)
                if (m != i && m != j && dot3(clip, planes[m]) < eps) {
                    vel[0] = vel[1] = vel[2] = 0.0;
                    return 1;
                }
        }
        memcpy(vel, clip, sizeof clip);
        return 0;
    }
    return 0;
}

static double backed_off(double t, const double *delta, const double *n, double gap) {
    double into = -(delta[0] * n[0] + delta[1] * n[1] + delta[2] * n[2]);
    if (!(into > 0)) return 0.0;
    return py_min(py_max(t - gap / into, 0.0), t);
}

typedef struct slide {
    double pos[3], vel[3];
    int hits, blocked, stopped, start_solid;
} slide;

static int do_slide(const bbk_level *lv, uint32_t hull, const double *position, const double *velocity, double dt,
                    const bbk_move_settings *s, const double *ground_normal, slide *out) {
    double planes[BBK_MAX_CLIP_PLANES][3], vel[3], pos[3];
    int count = 0, err;
    memcpy(pos, position, sizeof pos);
    memcpy(vel, velocity, sizeof vel);
    if (ground_normal && ground_normal[2] >= s->ground_normal_z) {  /* _seed_planes */
        memcpy(planes[count++], ground_normal, 3 * sizeof(double));
        if (dot3(vel, ground_normal) < 0) clip_velocity(vel, ground_normal, s->overclip, vel);
    }
    double speed = sqrt(vel[0] * vel[0] + vel[1] * vel[1] + vel[2] * vel[2]);
    if (speed > 0) {
        planes[count][0] = vel[0] / speed;
        planes[count][1] = vel[1] / speed;
        planes[count][2] = vel[2] / speed;
        count++;
    }
    out->hits = out->blocked = out->stopped = out->start_solid = 0;
    double time_left = dt;
    for (int bump = 0; bump < s->max_bumps; bump++) {
        double delta[3] = {vel[0] * time_left, vel[1] * time_left, vel[2] * time_left};
        double end[3] = {pos[0] + delta[0], pos[1] + delta[1], pos[2] + delta[2]};
        if (end[0] == pos[0] && end[1] == pos[1] && end[2] == pos[2]) break;
        bbk_hit tr;
        if ((err = bbk_trace(lv, hull, pos, end, 1, &tr))) return err;
        if (tr.start_solid) {
            out->start_solid = 1;
            break;
        }
        if (!tr.hit) {
            memcpy(pos, end, sizeof pos);
            break;
        }
        const double *n = tr.normal;
        double f = backed_off(tr.fraction, delta, n, s->surface_gap);
        if (f > 0)
            for (int k = 0; k < 3; k++) pos[k] = pos[k] + f * delta[k];
        time_left -= time_left * f;
        out->hits++;
        if (n[2] < s->ground_normal_z) out->blocked = 1;
        if (count >= s->max_clip_planes) {
            vel[0] = vel[1] = vel[2] = 0.0;
            out->stopped = 1;
            break;
        }
        int same = 0;
        for (int k = 0; k < count; k++)
            if (dot3(n, planes[k]) > SAME_PLANE_DOT) same = 1;
        if (same) {
            for (int k = 0; k < 3; k++) vel[k] = vel[k] + n[k] * s->nudge_speed;
            continue;
        }
        memcpy(planes[count++], n, 3 * sizeof(double));
        if ((out->stopped = clip_to_planes(vel, planes, count, s))) break;
    }
    memcpy(out->pos, pos, sizeof pos);
    memcpy(out->vel, vel, sizeof vel);
    return BBK_OK;
}

static int ground_check(const bbk_level *lv, uint32_t hull, const double *p, const bbk_move_settings *s,
                        int *on_ground, double *normal) {
    double end[3] = {p[0], p[1], p[2] - s->ground_probe};
    bbk_hit tr;
    int err = bbk_trace(lv, hull, p, end, 1, &tr);
    if (err) return err;
    *on_ground = 0;
    normal[0] = normal[1] = normal[2] = 0.0;
    if (tr.start_solid || !tr.hit) return BBK_OK;
    memcpy(normal, tr.normal, 3 * sizeof(double));
    *on_ground = normal[2] >= s->ground_normal_z;
    return BBK_OK;
}

/* _finish: never end in solid; then the ground check (or the ground the step landed on) */
static int finish(const bbk_level *lv, uint32_t hull, const double *start, const slide *sl, int stepped,
                  const bbk_move_settings *s, const double *landed_normal, bbk_move_result *out) {
    memcpy(out->position, sl->pos, sizeof out->position);
    memcpy(out->velocity, sl->vel, sizeof out->velocity);
    out->clip_planes = sl->hits;
    out->stepped = stepped;
    out->blocked = sl->blocked || sl->stopped;
    out->start_solid = sl->start_solid;
    out->reverted = 0;
    int solid = solid_open(lv, hull == 0 ? &lv->point : &lv->onion, hull == 0 ? lv->point.root : lv->onion.root,
                           sl->pos[0], sl->pos[1], sl->pos[2], 1u << hull);
    if (solid < 0) return BBK_ERR_INTERNAL;
    if (solid) {
        memcpy(out->position, start, sizeof out->position);
        out->velocity[0] = out->velocity[1] = out->velocity[2] = 0.0;
        out->reverted = 1;
        landed_normal = NULL;
    }
    if (landed_normal) {
        out->on_ground = 1;
        memcpy(out->ground_normal, landed_normal, sizeof out->ground_normal);
        return BBK_OK;
    }
    return ground_check(lv, hull, out->position, s, &out->on_ground, out->ground_normal);
}

static int move_args(const bbk_level *lv, uint32_t hull, const double *p, const double *v, double dt,
                     const bbk_move_settings **s, const double *g, bbk_move_settings *defaults) {
    const tree *t;
    if (!lv || !p || !v || !finite3(p) || !finite3(v) || !is_finite(dt) || (g && !finite3(g))) return BBK_ERR_ARGUMENT;
    if (!*s) {
        bbk_move_defaults(defaults);
        *s = defaults;
    }
    if (!valid_settings(*s)) return BBK_ERR_ARGUMENT;
    return hull_tree(lv, hull, &t);
}

int bbk_slide_move(const bbk_level *lv, uint32_t hull, const double position[3], const double velocity[3], double dt,
                   const bbk_move_settings *s, const double *ground_normal, bbk_move_result *out) {
    bbk_move_settings defaults;
    slide sl;
    int err = move_args(lv, hull, position, velocity, dt, &s, ground_normal, &defaults);
    if (err || !out) return err ? err : BBK_ERR_ARGUMENT;
    if ((err = do_slide(lv, hull, position, velocity, dt, s, ground_normal, &sl))) return err;
    return finish(lv, hull, position, &sl, 0, s, NULL, out);
}

int bbk_step_slide_move(const bbk_level *lv, uint32_t hull, const double position[3], const double velocity[3],
                        double dt, const bbk_move_settings *s, const double *ground_normal, bbk_move_result *out) {
    bbk_move_settings defaults;
    int err = move_args(lv, hull, position, velocity, dt, &s, ground_normal, &defaults);
    if (err || !out) return err ? err : BBK_ERR_ARGUMENT;
    if ((err = bbk_slide_move(lv, hull, position, velocity, dt, s, ground_normal, out))) return err;
    if (out->start_solid || !out->blocked || out->reverted || s->step_height <= 0) return BBK_OK;
    const double *start = position;
    bbk_hit tr;
    if (velocity[2] > 0) {  /* never step up while rising, unless there is ground within a step below */
        double below[3] = {start[0], start[1], start[2] - s->step_height};
        if ((err = bbk_trace(lv, hull, start, below, 1, &tr))) return err;
        if (tr.start_solid || !tr.hit || tr.normal[2] < s->ground_normal_z) return BBK_OK;
    }
    double up_end[3] = {start[0], start[1], start[2] + s->step_height};
    if ((err = bbk_trace(lv, hull, start, up_end, 1, &tr))) return err;
    if (tr.start_solid) return BBK_OK;
    double rise = s->step_height;
    if (tr.hit) {
        double up[3] = {0.0, 0.0, s->step_height};
        rise = s->step_height * backed_off(tr.fraction, up, tr.normal, s->surface_gap);
    }
    if (rise <= 0) return BBK_OK;
    double raised[3] = {start[0], start[1], start[2] + rise};
    slide sl;
    if ((err = do_slide(lv, hull, raised, velocity, dt, s, ground_normal, &sl))) return err;
    if (sl.start_solid) return BBK_OK;
    double drop = rise + s->ground_probe, delta[3] = {0.0, 0.0, -drop};
    double down[3] = {sl.pos[0], sl.pos[1], sl.pos[2] - drop};
    if ((err = bbk_trace(lv, hull, sl.pos, down, 1, &tr))) return err;
    if (tr.start_solid || !tr.hit || tr.normal[2] < s->ground_normal_z) return BBK_OK;
    double n[3] = {tr.normal[0], tr.normal[1], tr.normal[2]};
    double f = backed_off(tr.fraction, delta, n, s->surface_gap);
    double landed[3] = {sl.pos[0], sl.pos[1], sl.pos[2] - f * drop};
    double gain_step = hypot(landed[0] - start[0], landed[1] - start[1]);
    double gain_flat = hypot(out->position[0] - start[0], out->position[1] - start[1]);
    if (!(gain_step > gain_flat + STEP_GAIN_EPSILON)) return BBK_OK;
    memcpy(sl.pos, landed, sizeof landed);
    clip_velocity(sl.vel, n, s->overclip, sl.vel);
    sl.start_solid = 0;
    return finish(lv, hull, start, &sl, 1, s, n, out);
}

int bbk_move_many(const bbk_level *lv, uint32_t hull, size_t n, const double *positions, const double *velocities,
                  const double *dt, const bbk_move_settings *s, const double *ground_normals, int step,
                  bbk_move_result *out) {
    if (!lv || (n && (!positions || !velocities || !dt || !out))) return BBK_ERR_ARGUMENT;
    for (size_t i = 0; i < n; i++) {
        const double *g = ground_normals && finite3(ground_normals + 3 * i) ? ground_normals + 3 * i : NULL;
        int err = (step ? bbk_step_slide_move : bbk_slide_move)(lv, hull, positions + 3 * i, velocities + 3 * i,
                                                                  dt[i], s, g, out + i);
        if (err) return err;
    }
    return BBK_OK;
}

/* =============================================================================================
 * Camera queries (core/runtime/camera.py, cull.py, portal_walk.py; docs/CAMERA.md): what a view
 * draws by the PVS, the frustum or the portal walk.  The arithmetic is the NumPy reference's, in
 * its order (detmath.dot sums x, y, z in turn; np.maximum / np.minimum pass NaN on), so the leaves
 * drawn are the same; the walk's scratch is allocated by bbk_load, bounded by the section sizes.
 * ============================================================================================= */

#define CULL_MARGIN 1e-6
#define CULL_EYE_EPSILON 1e-6
#define CULL_SUPPORT_SLACK 1e-7
#define CULL_PORTAL_ON_PLANE 1e-4
#define MAX_CULL_PORTAL_VERTICES 64
#define CULL_WALK_BUDGET 20000
#define MAX_WALK_DEPTH 512
#define CULL_MAX_COORDINATE 1.0e5
#define CULL_DIRECTIONS 16
#define DEG_TO_RAD (3.141592653589793 / 180.0)

/* the view-plane polygons' edge directions: cos and sin of k * 2 pi / 16 as NumPy rounds them,
   |value| < 1e-15 set to 0 (portal_walk.py DIR_A, DIR_B) */
static const double DIR_A[CULL_DIRECTIONS] = {
    1.0, 0.9238795325112867, 0.7071067811865476, 0.38268343236508984, 0.0, -0.3826834323650897,
    -0.7071067811865475, -0.9238795325112867, -1.0, -0.9238795325112868, -0.7071067811865477,
    -0.38268343236509034, 0.0, 0.38268343236509, 0.7071067811865474, 0.9238795325112865};
static const double DIR_B[CULL_DIRECTIONS] = {
    0.0, 0.3826834323650898, 0.7071067811865475, 0.9238795325112867, 1.0, 0.9238795325112867,
    0.7071067811865476, 0.3826834323650899, 0.0, -0.38268343236508967, -0.7071067811865475,
    -0.9238795325112865, -1.0, -0.9238795325112866, -0.7071067811865477, -0.3826834323650904};

typedef struct cull_state {
    uint32_t clusters, portals, leaves;
    int has_portals;
    const int32_t *portal_clusters, *portal_plane, *portal_first, *portal_count;
    const double *portal_vertices, *leaf_bounds;
    const uint32_t *leaf_solid;
    const int32_t *leaf_face_first, *leaf_face_count, *leaf_faces;
    uint32_t *cluster_leaf_first;  /* (C + 1) */
    uint32_t *cluster_leaves;      /* leaves with a cluster, by cluster, then leaf */
    uint32_t *out_first;           /* (C + 1) */
    uint32_t *out_portals;         /* (2Q) directed portals 2q (clusters[q][0] -> [q][1]) and 2q + 1, by source */
    /* scratch */
    double *explored, *pending;    /* (C, 16) supports */
    double *clip;                  /* a clipped portal: (2 * 64 + 2, 3) */
    uint32_t *cur, *next, *explored_list;  /* (C) cluster lists */
    uint8_t *cand, *walk, *drawn;  /* (L) the PVS's leaves, the walk's, the answer */
    uint8_t *reach, *explored_has, *pending_has, *seen;  /* (C) */
    double *proj;                  /* (2Q, 16): a directed portal's projected supports, made once per camera */
    uint8_t *proj_has;             /* (2Q) */
    uint32_t *proj_list;           /* (2Q) the directed portals projected for this camera */
    uint32_t proj_count;
} cull_state;

/* NumPy's maximum and minimum: a NaN on either side gives NaN */
static double np_max(double a, double b) { return (a >= b || a != a) ? a : b; }
static double np_min(double a, double b) { return (a <= b || a != a) ? a : b; }
static double dot_in_order(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/* ---- the sections (exporters/native.py _check_cull) ---- */

static int check_cull(const checker *ck) {
    const section *sec = ck->sec;
    int present = 0;
    for (int k = S_CQNC; k <= S_CQPV; k++) present += sec[k].present;
    if (!present) return BBK_OK;
    if (present != 6)
        return fail(ck->msg, ck->msg_size, BBK_ERR_MISSING, "has only some of the culling portals' sections CQNC, CQPC, "
                    "CQPL, CQPF, CQPN, CQPV");
    if (!sec[S_VSLC].present)
        return fail(ck->msg, ck->msg_size, BBK_ERR_MISSING, "has culling portals but no visibility sections");
    uint64_t clusters = sec[S_VSRO].count, q = sec[S_CQPL].count, nv = sec[S_CQPV].count;
    if (sec[S_CQNC].count != 1 || *(const int32_t *)AT(ck, S_CQNC) != (int64_t)clusters)
        return fail(ck->msg, ck->msg_size, BBK_ERR_VIS, "CQNC is not one record equal to the %llu visibility clusters",
                    (unsigned long long)clusters);
    if (sec[S_CQPC].count != q || sec[S_CQPF].count != q || sec[S_CQPN].count != q)
        return fail(ck->msg, ck->msg_size, BBK_ERR_COUNT, "CQPC, CQPF, CQPN and CQPL disagree on the culling portals' count");
    const int32_t *pair = (const int32_t *)AT(ck, S_CQPC);
    for (uint64_t i = 0; i < 2 * q; i++)
        if (pair[i] < 0 || (int64_t)pair[i] >= (int64_t)clusters)
            return fail(ck->msg, ck->msg_size, BBK_ERR_INDEX, "CQPC[%llu] is %d, not a visibility cluster",
                        (unsigned long long)i, pair[i]);
    for (uint64_t i = 0; i < q; i++)
        if (pair[2 * i] == pair[2 * i + 1])
            return fail(ck->msg, ck->msg_size, BBK_ERR_VIS, "culling portal %llu joins a cluster to itself",
                        (unsigned long long)i);
    int err = check_indices(ck, S_CQPL, 0, (int64_t)sec[S_PLND].count, "CQPL");
    if (err) return err;
    const double *v = (const double *)AT(ck, S_CQPV);
    for (uint64_t i = 0; i < 3 * nv; i++)
        if (!is_finite(v[i])) return fail(ck->msg, ck->msg_size, BBK_ERR_FLOAT, "CQPV holds NaN or infinite values");
    if ((err = check_ranges(ck, S_CQPF, S_CQPN, 3, nv, "culling portal"))) return err;
    const int32_t *first = (const int32_t *)AT(ck, S_CQPF), *count = (const int32_t *)AT(ck, S_CQPN);
    const int32_t *plane = (const int32_t *)AT(ck, S_CQPL);
    const double *normals = (const double *)AT(ck, S_PLNN), *dists = (const double *)AT(ck, S_PLND);
    for (uint64_t i = 0; i < q; i++) {
        if (count[i] > MAX_CULL_PORTAL_VERTICES)
            return fail(ck->msg, ck->msg_size, BBK_ERR_VIS, "culling portal %llu has %d vertices; at most %d are allowed",
                        (unsigned long long)i, count[i], MAX_CULL_PORTAL_VERTICES);
        const double *n = normals + 3 * (size_t)plane[i];
        for (int32_t k = 0; k < count[i]; k++) {
            const double *p = v + 3 * ((size_t)first[i] + (size_t)k);
            if (fabs(dot_in_order(p, n) - dists[plane[i]]) > CULL_PORTAL_ON_PLANE)
                return fail(ck->msg, ck->msg_size, BBK_ERR_VIS, "culling portal %llu has a vertex off its plane",
                            (unsigned long long)i);
        }
    }
    return BBK_OK;
}

/* ---- the tables and scratch, made once by bbk_load ---- */

static size_t align8(size_t n) { return (n + 7) & ~(size_t)7; }

static int cull_setup(bbk_level *lv, const section *sec) {
    uint32_t c = lv->clusters, l = lv->point.l, q = sec[S_CQPL].present ? (uint32_t)sec[S_CQPL].count : 0;
    size_t c1 = (size_t)c + 1, q2 = 2 * (size_t)q + 1;
    size_t doubles = 2 * c1 * CULL_DIRECTIONS + (2 * MAX_CULL_PORTAL_VERTICES + 2) * 3 + q2 * CULL_DIRECTIONS;
    size_t words = 2 * c1 + (size_t)l + 2 * (size_t)q + 3 * c1 + q2, bytes = 3 * (size_t)l + 4 * c1 + q2;
    size_t total = align8(sizeof(cull_state)) + doubles * sizeof(double) + align8(words * sizeof(uint32_t)) + bytes;
    uint8_t *block = (uint8_t *)calloc(1, total);
    if (!block) return 1;
    cull_state *cs = (cull_state *)block;
    lv->cull = cs;
    double *d = (double *)(block + align8(sizeof(cull_state)));
    cs->explored = d;
    cs->pending = d + c1 * CULL_DIRECTIONS;
    cs->clip = d + 2 * c1 * CULL_DIRECTIONS;
    cs->proj = cs->clip + (2 * MAX_CULL_PORTAL_VERTICES + 2) * 3;
    uint32_t *w = (uint32_t *)(d + doubles);
    cs->cluster_leaf_first = w;
    cs->out_first = w + c1;
    cs->cluster_leaves = w + 2 * c1;
    cs->out_portals = cs->cluster_leaves + l;
    cs->cur = cs->out_portals + 2 * (size_t)q;
    cs->next = cs->cur + c1;
    cs->explored_list = cs->next + c1;
    cs->proj_list = cs->explored_list + c1;
    uint8_t *b = (uint8_t *)w + align8(words * sizeof(uint32_t));
    cs->cand = b;
    cs->walk = b + l;
    cs->drawn = b + 2 * (size_t)l;
    cs->reach = b + 3 * (size_t)l;
    cs->explored_has = cs->reach + c1;
    cs->pending_has = cs->explored_has + c1;
    cs->seen = cs->pending_has + c1;
    cs->proj_has = cs->seen + c1;

    const uint8_t *file = lv->file;
    cs->clusters = c;
    cs->leaves = l;
    cs->portals = q;
    cs->has_portals = sec[S_CQPL].present;
    cs->leaf_bounds = (const double *)(file + sec[S_LFBB].offset);
    cs->leaf_solid = lv->point.solid;
    cs->leaf_face_first = (const int32_t *)(file + sec[S_LFFF].offset);
    cs->leaf_face_count = (const int32_t *)(file + sec[S_LFFC].offset);
    cs->leaf_faces = (const int32_t *)(file + sec[S_LFFI].offset);
    if (cs->has_portals) {
        cs->portal_clusters = (const int32_t *)(file + sec[S_CQPC].offset);
        cs->portal_plane = (const int32_t *)(file + sec[S_CQPL].offset);
        cs->portal_first = (const int32_t *)(file + sec[S_CQPF].offset);
        cs->portal_count = (const int32_t *)(file + sec[S_CQPN].offset);
        cs->portal_vertices = (const double *)(file + sec[S_CQPV].offset);
    }
    if (!c) return 0;
    /* leaves by cluster (a counting sort: stable in the leaf index) */
    for (uint32_t i = 0; i < l; i++)
        if (lv->vis_leaf_cluster[i] >= 0) cs->cluster_leaf_first[lv->vis_leaf_cluster[i] + 1]++;
    for (uint32_t k = 0; k < c; k++) cs->cluster_leaf_first[k + 1] += cs->cluster_leaf_first[k];
    for (uint32_t i = 0; i < l; i++) {
        int32_t lc = lv->vis_leaf_cluster[i];
        if (lc >= 0) cs->cluster_leaves[cs->cluster_leaf_first[lc] + cs->cur[lc]++] = i;
    }
    /* directed portals by source cluster, in increasing directed index */
    memset(cs->cur, 0, c1 * sizeof *cs->cur);
    for (uint32_t k = 0; k < 2 * q; k++) cs->out_first[cs->portal_clusters[k] + 1]++;
    for (uint32_t k = 0; k < c; k++) cs->out_first[k + 1] += cs->out_first[k];
    for (uint32_t k = 0; k < 2 * q; k++) {
        int32_t src = cs->portal_clusters[k];  /* directed k leaves clusters[k >> 1][k & 1] */
        cs->out_portals[cs->out_first[src] + cs->cur[src]++] = k;
    }
    memset(cs->cur, 0, c1 * sizeof *cs->cur);
    return 0;
}

/* ---- a camera's frame (camera.py camera_basis, frustum_corners, frustum_planes, the 26 axes) ---- */

typedef struct frame {
    double eye[3], f[3], r[3], u[3], th, tv, far, depth_factor;
    double planes[5][4];      /* left, right, bottom, top, far: inside n.x - d >= 0 */
    double corners[5][3];     /* the eye, then the far rectangle */
    double axes[26][3], lo[26], hi[26];  /* separating axes and the frustum's extent along them */
    double start[CULL_DIRECTIONS];
} frame;

static double np_mod360(double x) {  /* np.mod(x, 360.0) */
    double m = fmod(x, 360.0);
    if (m != 0.0) {
        if (m < 0.0) m += 360.0;
    } else {
        m = 0.0;  /* copysign(0, 360) */
    }
    return m;
}

static double widen(double s) { return is_finite(s) ? s + CULL_SUPPORT_SLACK * (1.0 + fabs(s)) : s; }

static int valid_camera(const double *cam) {
    for (int k = 0; k < 8; k++)
        if (!is_finite(cam[k])) return 0;
    for (int k = 0; k < 3; k++)
        if (fabs(cam[k]) > CULL_MAX_COORDINATE) return 0;
    return cam[4] >= -90.0 && cam[4] <= 90.0 && cam[5] >= 1.0 && cam[5] <= 179.0 && cam[6] >= 0.05 && cam[6] <= 20.0 &&
           cam[7] >= 1e-3 && cam[7] <= 2.0 * CULL_MAX_COORDINATE;
}

static void make_frame(const double *cam, frame *fr) {
    double yaw = np_mod360(cam[3]) * DEG_TO_RAD, pitch = cam[4] * DEG_TO_RAD;
    double cy = cos(yaw), sy = sin(yaw), cp = cos(pitch), sp = sin(pitch);
    double *e = fr->eye, *f = fr->f, *r = fr->r, *u = fr->u;
    memcpy(e, cam, 3 * sizeof *e);
    f[0] = cp * cy, f[1] = cp * sy, f[2] = sp;
    r[0] = sy, r[1] = -cy, r[2] = 0.0;
    u[0] = -sp * cy, u[1] = -sp * sy, u[2] = cp;
    fr->th = tan(cam[5] * DEG_TO_RAD / 2);
    fr->tv = fr->th / cam[6];
    fr->far = cam[7];
    double th = fr->th, tv = fr->tv;
    static const double sx[4] = {-1, 1, 1, -1}, sz[4] = {-1, -1, 1, 1};
    memcpy(fr->corners[0], e, 3 * sizeof *e);
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 3; i++)
            fr->corners[1 + k][i] = e[i] + fr->far * (f[i] + (sx[k] * th) * r[i] + (sz[k] * tv) * u[i]);
    for (int i = 0; i < 3; i++) {
        fr->planes[0][i] = r[i] + th * f[i];
        fr->planes[1][i] = -r[i] + th * f[i];
        fr->planes[2][i] = u[i] + tv * f[i];
        fr->planes[3][i] = -u[i] + tv * f[i];
    }
    for (int k = 0; k < 4; k++) {
        double *n = fr->planes[k], length = sqrt(dot_in_order(n, n));
        for (int i = 0; i < 3; i++) n[i] /= length;
        n[3] = dot_in_order(n, e);
    }
    for (int i = 0; i < 3; i++) fr->planes[4][i] = -f[i];
    fr->planes[4][3] = -(dot_in_order(f, e) + fr->far);
    /* the axes: 5 face normals, the box's 3, and each box axis x each frustum edge (4 lateral, r, u) */
    double edges[6][3];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 3; i++) edges[k][i] = fr->corners[1 + k][i] - fr->corners[0][i];
    memcpy(edges[4], r, sizeof edges[4]);
    memcpy(edges[5], u, sizeof edges[5]);
    double raw[26][3];
    for (int k = 0; k < 5; k++) memcpy(raw[k], fr->planes[k], sizeof raw[k]);
    for (int a = 0; a < 3; a++)
        for (int i = 0; i < 3; i++) raw[5 + a][i] = a == i ? 1.0 : 0.0;
    for (int a = 0; a < 3; a++)
        for (int j = 0; j < 6; j++) {  /* np.cross(e_a, edge_j) */
            double x[3] = {a == 0, a == 1, a == 2}, *b = edges[j], *o = raw[8 + 6 * a + j];
            o[0] = x[1] * b[2] - x[2] * b[1];
            o[1] = x[2] * b[0] - x[0] * b[2];
            o[2] = x[0] * b[1] - x[1] * b[0];
        }
    for (int k = 0; k < 26; k++) {
        double length = np_max(sqrt(dot_in_order(raw[k], raw[k])), 1e-300);
        for (int i = 0; i < 3; i++) fr->axes[k][i] = raw[k][i] / length;
        double lo = 0, hi = 0;
        for (int c = 0; c < 5; c++) {
            double p = dot_in_order(fr->axes[k], fr->corners[c]);
            lo = c ? np_min(lo, p) : p;
            hi = c ? np_max(hi, p) : p;
        }
        fr->lo[k] = lo, fr->hi[k] = hi;
    }
    fr->depth_factor = sqrt(1 + th * th + tv * tv);
    for (int j = 0; j < CULL_DIRECTIONS; j++) fr->start[j] = widen(fabs(DIR_A[j]) * th + fabs(DIR_B[j]) * tv);
}

/* boxes_inside_planes for one box (mins, maxs) and `count` planes */
static int box_inside_planes(const double (*planes)[4], int count, const double *box) {
    double centre[3], half[3], an[3];
    for (int i = 0; i < 3; i++) {
        centre[i] = (box[i] + box[3 + i]) / 2;
        half[i] = (box[3 + i] - box[i]) / 2;
    }
    for (int k = 0; k < count; k++) {
        const double *n = planes[k];
        an[0] = fabs(n[0]), an[1] = fabs(n[1]), an[2] = fabs(n[2]);
        double best = dot_in_order(n, centre) + dot_in_order(an, half) - n[3];
        if (!(best >= -CULL_MARGIN)) return 0;
    }
    return 1;
}

/* boxes_meet_frustums for one box: no separating axis */
static int box_meets_frustum(const frame *fr, const double *box) {
    double centre[3], half[3], an[3];
    for (int i = 0; i < 3; i++) {
        centre[i] = (box[i] + box[3 + i]) / 2;
        half[i] = (box[3 + i] - box[i]) / 2;
    }
    for (int k = 0; k < 26; k++) {
        const double *a = fr->axes[k];
        an[0] = fabs(a[0]), an[1] = fabs(a[1]), an[2] = fabs(a[2]);
        double c = dot_in_order(a, centre), h = dot_in_order(an, half);
        if (c - h > fr->hi[k] + CULL_MARGIN || c + h < fr->lo[k] - CULL_MARGIN) return 0;
    }
    return 1;
}

/* frustum_leaves(exact=True) for one leaf */
static int leaf_in_frustum(const cull_state *cs, const frame *fr, uint32_t leaf) {
    const double *box = cs->leaf_bounds + 6 * (size_t)leaf;
    return box_inside_planes((const double (*)[4])fr->planes, 5, box) && box_meets_frustum(fr, box);
}

/* ---- the portal walk (portal_walk.py) ---- */

/* project_supports for one portal: its widened supports on the view plane, after clipping by the
   near plane depth >= zmin (vertices there kept within CULL_MARGIN); -inf when nothing is left.
   Returns 1 when a frustum through it dies for certain (a support -inf or NaN: np.minimum takes
   it, and s_j + s_opp >= 0 then fails), 0 when every support is finite or +inf. */
static int project_portal(const cull_state *cs, const frame *fr, uint32_t q, double zmin, double *out) {
    const double *e = fr->eye, *f = fr->f;
    int32_t count = cs->portal_count[q];
    const double *verts = cs->portal_vertices + 3 * (size_t)cs->portal_first[q];
    double xs[2 * MAX_CULL_PORTAL_VERTICES + 2], ys[2 * MAX_CULL_PORTAL_VERTICES + 2];
    int low = 0;
    for (int32_t k = 0; k < count; k++) {
        double rel[3] = {verts[3 * k] - e[0], verts[3 * k + 1] - e[1], verts[3 * k + 2] - e[2]};
        double depth = dot_in_order(rel, f);
        if (depth < zmin) {
            low = 1;
            break;
        }
        xs[k] = dot_in_order(rel, fr->r) / depth;
        ys[k] = dot_in_order(rel, fr->u) / depth;
    }
    int32_t n = count;
    if (low) {  /* clip_polygons by the near plane (f, f.e + zmin), then project */
        double d = dot_in_order(f, e) + zmin, dist[MAX_CULL_PORTAL_VERTICES];
        for (int32_t k = 0; k < count; k++) dist[k] = dot_in_order(verts + 3 * k, f) - d + CULL_MARGIN;
        double *o = cs->clip;
        n = 0;
        for (int32_t k = 0; k < count; k++) {
            int32_t m = k + 1 < count ? k + 1 : 0;
            const double *v = verts + 3 * k, *w = verts + 3 * m;
            int in = dist[k] >= 0, in_next = dist[m] >= 0;
            if (in) {
                memcpy(o + 3 * n, v, 3 * sizeof *o);
                n++;
            }
            if (in != in_next) {
                double t = dist[k] / (dist[k] - dist[m]);
                for (int i = 0; i < 3; i++) o[3 * n + i] = v[i] + t * (w[i] - v[i]);
                n++;
            }
        }
        for (int32_t k = 0; k < n; k++) {
            double rel[3] = {o[3 * k] - e[0], o[3 * k + 1] - e[1], o[3 * k + 2] - e[2]};
            double depth = np_max(dot_in_order(rel, f), 1e-300);
            xs[k] = dot_in_order(rel, fr->r) / depth;
            ys[k] = dot_in_order(rel, fr->u) / depth;
        }
    }
    int clean = 1;  /* every x, y finite: no support is NaN, and a plain max is np.maximum */
    for (int32_t k = 0; k < n; k++) clean &= is_finite(xs[k]) & is_finite(ys[k]);
    if (!n) {
        for (int j = 0; j < CULL_DIRECTIONS; j++) out[j] = -HUGE_VAL;
        return 1;
    }
    for (int j = 0; j < CULL_DIRECTIONS; j++) {
        double a = DIR_A[j], b = DIR_B[j], best = a * xs[0] + b * ys[0];
        if (clean) {
            for (int32_t k = 1; k < n; k++) {
                double p = a * xs[k] + b * ys[k];
                best = p > best ? p : best;
            }
        } else {
            for (int32_t k = 1; k < n; k++) best = np_max(best, a * xs[k] + b * ys[k]);
        }
        out[j] = widen(best);
    }
    int dead = 0;
    for (int j = 0; j < CULL_DIRECTIONS; j++) dead |= out[j] != out[j] || out[j] == -HUGE_VAL;
    return dead;
}

/* support_planes and _mark: the leaves of the cluster (still candidates) whose boxes the frustum's
   planes keep */
static void mark_leaves(cull_state *cs, const frame *fr, uint32_t cluster, const double *support) {
    double planes[1 + CULL_DIRECTIONS][4];
    int made = 0;  /* the planes are built for the first leaf that still needs them */
    for (uint32_t k = cs->cluster_leaf_first[cluster]; k < cs->cluster_leaf_first[cluster + 1]; k++) {
        uint32_t leaf = cs->cluster_leaves[k];
        if (!cs->cand[leaf] || cs->walk[leaf]) continue;
        if (!made) {
            const double *f = fr->f, *r = fr->r, *u = fr->u, *e = fr->eye;
            for (int i = 0; i < 3; i++) planes[0][i] = -f[i];
            planes[0][3] = -(dot_in_order(f, e) + fr->far) - CULL_MARGIN;
            for (int j = 0; j < CULL_DIRECTIONS; j++) {
                double *n = planes[1 + j];
                for (int i = 0; i < 3; i++) n[i] = support[j] * f[i] - DIR_A[j] * r[i] - DIR_B[j] * u[i];
                double length = sqrt(dot_in_order(n, n));
                for (int i = 0; i < 3; i++) n[i] /= length;
                n[3] = dot_in_order(n, e) - CULL_MARGIN;
            }
            made = 1;
        }
        if (box_inside_planes((const double (*)[4])planes, 1 + CULL_DIRECTIONS, cs->leaf_bounds + 6 * (size_t)leaf))
            cs->walk[leaf] = 1;
    }
}

/* _step for one frustum: through every portal leaving its cluster into a reachable cluster, the
   narrowed frustums that are not empty, folded into the next frontier (max: the union bound) */
static uint32_t step_frustum(cull_state *cs, const frame *fr, uint32_t cluster, const double *support,
                             const bbk_level *lv, uint32_t next_count) {
    double grown[CULL_DIRECTIONS];
    for (uint32_t k = cs->out_first[cluster]; k < cs->out_first[cluster + 1]; k++) {
        uint32_t directed = cs->out_portals[k], q = directed >> 1;
        double sign = directed & 1 ? -1.0 : 1.0;
        uint32_t dest = (uint32_t)cs->portal_clusters[2 * q + (sign > 0 ? 1 : 0)];
        if (!cs->reach[dest]) continue;
        int32_t plane = cs->portal_plane[q];
        double side = sign * (dot_in_order(lv->normals + 3 * (size_t)plane, fr->eye) - lv->dists[plane]);
        if (!(side < CULL_EYE_EPSILON)) continue;  /* a line of sight crosses from the source side only */
        if (side <= -CULL_EYE_EPSILON) {  /* the projection depends on the eye and the portal only: made once */
            double *proj = cs->proj + (size_t)directed * CULL_DIRECTIONS;
            if (!cs->proj_has[directed]) {
                double zmin = -side / fr->depth_factor * (1 - 1e-9) - CULL_MARGIN;
                cs->proj_has[directed] = 1 + project_portal(cs, fr, q, zmin, proj);
                cs->proj_list[cs->proj_count++] = directed;
            }
            if (cs->proj_has[directed] == 2) continue;  /* np.minimum takes a -inf or NaN: the frustum dies */
            for (int j = 0; j < CULL_DIRECTIONS; j++)  /* supports finite, projections finite or +inf */
                grown[j] = proj[j] < support[j] ? proj[j] : support[j];
        } else {
            memcpy(grown, support, sizeof grown);
        }
        int alive = 1;  /* s_j + s_opp >= 0 for the 8 pairs (the sum is the same either way round) */
        for (int j = 0; j < CULL_DIRECTIONS / 2; j++) alive &= grown[j] + grown[j + CULL_DIRECTIONS / 2] >= 0;
        if (!alive) continue;
        double *pend = cs->pending + (size_t)dest * CULL_DIRECTIONS;
        if (!cs->pending_has[dest]) {
            cs->pending_has[dest] = 1;
            memcpy(pend, grown, sizeof grown);
            cs->next[next_count++] = dest;
        } else {
            for (int j = 0; j < CULL_DIRECTIONS; j++) pend[j] = grown[j] > pend[j] ? grown[j] : pend[j];
        }
    }
    return next_count;
}

/* portal_walk for one camera in `cluster` (>= 0): cs->walk holds the leaves it marks; returns 1
   when the walk overflowed (the caller then gives the frustum's answer) */
static int walk_portals(const bbk_level *lv, cull_state *cs, const frame *fr, uint32_t cluster) {
    uint32_t explored = 0, next_count = 1, cur_count, made = 0, depth = 0;
    int overflow = 0;
    memcpy(cs->pending + (size_t)cluster * CULL_DIRECTIONS, fr->start, sizeof fr->start);
    cs->pending_has[cluster] = 1;
    cs->next[0] = cluster;
    while (next_count) {
        cur_count = 0;  /* _grow: fold the frontier into what was explored; keep what grew */
        for (uint32_t i = 0; i < next_count; i++) {
            uint32_t c = cs->next[i];
            double *pend = cs->pending + (size_t)c * CULL_DIRECTIONS, *old = cs->explored + (size_t)c * CULL_DIRECTIONS;
            cs->pending_has[c] = 0;
            int grew = 1;
            if (cs->explored_has[c]) {
                grew = 0;
                for (int j = 0; j < CULL_DIRECTIONS; j++) {  /* finite: a plain max is np.maximum */
                    grew |= pend[j] > old[j];
                    old[j] = pend[j] > old[j] ? pend[j] : old[j];
                }
            } else {
                cs->explored_has[c] = 1;
                cs->explored_list[explored++] = c;
                memcpy(old, pend, CULL_DIRECTIONS * sizeof *old);
            }
            if (grew) cs->cur[cur_count++] = c;
        }
        next_count = 0;
        if (!cur_count) break;
        for (uint32_t i = 0; i < cur_count; i++)
            mark_leaves(cs, fr, cs->cur[i], cs->explored + (size_t)cs->cur[i] * CULL_DIRECTIONS);
        made += cur_count;
        depth++;
        if (made > CULL_WALK_BUDGET || depth > MAX_WALK_DEPTH) {
            overflow = 1;
            break;
        }
        for (uint32_t i = 0; i < cur_count; i++)
            next_count = step_frustum(cs, fr, cs->cur[i], cs->explored + (size_t)cs->cur[i] * CULL_DIRECTIONS, lv,
                                      next_count);
    }
    for (uint32_t i = 0; i < next_count; i++) cs->pending_has[cs->next[i]] = 0;
    for (uint32_t i = 0; i < explored; i++) cs->explored_has[cs->explored_list[i]] = 0;
    for (uint32_t i = 0; i < cs->proj_count; i++) cs->proj_has[cs->proj_list[i]] = 0;
    cs->proj_count = 0;
    return overflow;
}

/* ---- the modes (cull.py cull): cs->drawn gets the answer ---- */

static int cull_one(const bbk_level *lv, const double *cam, int mode, bbk_cull_stats *stats) {
    cull_state *cs = lv->cull;
    if (!valid_camera(cam) || mode < BBK_CULL_PVS || mode > BBK_CULL_PORTAL) return BBK_ERR_ARGUMENT;
    if (mode != BBK_CULL_FRUSTUM && !lv->clusters) return BBK_ERR_NO_VIS;
    if (mode == BBK_CULL_PORTAL && !cs->has_portals) return BBK_ERR_NO_PORTALS;
    frame fr;
    make_frame(cam, &fr);
    uint32_t l = cs->leaves, leaf = bbk_point_leaf(lv, cam);
    int32_t cluster = lv->clusters ? lv->vis_leaf_cluster[leaf] : -1;
    /* the PVS's empty leaves (every empty leaf without a PVS or a cluster) */
    if (cluster < 0) {
        for (uint32_t i = 0; i < l; i++) cs->cand[i] = !(cs->leaf_solid[i] & 1);
    } else {
        const uint8_t *row = vis_row(lv, (uint32_t)cluster);
        for (uint32_t i = 0; i < l; i++) {
            int32_t lc = lv->vis_leaf_cluster[i];
            cs->cand[i] = lc >= 0 && !(cs->leaf_solid[i] & 1) && ((row[lc >> 3] >> (lc & 7)) & 1);
        }
    }
    int overflow = 0;
    if (mode == BBK_CULL_PVS) {
        memcpy(cs->drawn, cs->cand, l);
    } else if (mode == BBK_CULL_FRUSTUM || cluster < 0) {
        for (uint32_t i = 0; i < l; i++) cs->drawn[i] = cs->cand[i] && leaf_in_frustum(cs, &fr, i);
        overflow = mode == BBK_CULL_PORTAL;
    } else {
        /* the walk enters the clusters with a leaf the frustum's planes keep (a superset of the
           frustum mode's); the exact box test then runs on what it marked */
        memset(cs->reach, 0, cs->clusters);
        for (uint32_t c = 0; c < cs->clusters; c++)
            for (uint32_t k = cs->cluster_leaf_first[c]; k < cs->cluster_leaf_first[c + 1] && !cs->reach[c]; k++) {
                uint32_t i = cs->cluster_leaves[k];
                cs->reach[c] = cs->cand[i] &&
                               box_inside_planes((const double (*)[4])fr.planes, 5, cs->leaf_bounds + 6 * (size_t)i);
            }
        memset(cs->walk, 0, l);
        overflow = walk_portals(lv, cs, &fr, (uint32_t)cluster);
        for (uint32_t i = 0; i < l; i++)
            cs->drawn[i] = cs->cand[i] && (overflow || cs->walk[i]) && leaf_in_frustum(cs, &fr, i);
    }
    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->camera_leaf = (int32_t)leaf;
        stats->camera_cluster = cluster;
        stats->overflow = overflow;
        for (uint32_t i = 0; i < l; i++) {
            if (!cs->drawn[i]) continue;
            stats->leaves++;
            stats->faces += (uint32_t)cs->leaf_face_count[i];
            int32_t lc = lv->clusters ? lv->vis_leaf_cluster[i] : -1;
            if (lc >= 0 && !cs->seen[lc]) {
                cs->seen[lc] = 1;
                stats->clusters++;
            }
        }
        if (stats->clusters)
            for (uint32_t i = 0; i < l; i++)
                if (cs->drawn[i] && lv->vis_leaf_cluster[i] >= 0) cs->seen[lv->vis_leaf_cluster[i]] = 0;
    }
    return BBK_OK;
}

static void emit_leaf(const cull_state *cs, uint32_t leaf, uint32_t *leaves, uint32_t leaf_capacity, uint32_t *nl,
                      uint32_t *faces, uint32_t face_capacity, uint32_t *nf) {
    if (*nl < leaf_capacity) leaves[*nl] = leaf;
    (*nl)++;
    for (int32_t k = 0; k < cs->leaf_face_count[leaf]; k++, (*nf)++)
        if (*nf < face_capacity) faces[*nf] = (uint32_t)cs->leaf_faces[cs->leaf_face_first[leaf] + k];
}

int bbk_cull(const bbk_level *lv, const double camera[8], int mode, int flags, uint32_t *leaves,
             uint32_t leaf_capacity, uint32_t *faces, uint32_t face_capacity, bbk_cull_stats *stats) {
    if (!lv || !camera || (!leaves && leaf_capacity) || (!faces && face_capacity)) return BBK_ERR_ARGUMENT;
    bbk_cull_stats own;
    int err = cull_one(lv, camera, mode, stats ? stats : &own);
    if (err) return err;
    const cull_state *cs = lv->cull;
    uint32_t nl = 0, nf = 0;
    if (!(flags & BBK_CULL_BACK_TO_FRONT) || !lv->point.n) {
        for (uint32_t i = 0; i < cs->leaves; i++)
            if (cs->drawn[i]) emit_leaf(cs, i, leaves, leaf_capacity, &nl, faces, face_capacity, &nf);
        return BBK_OK;
    }
    /* DRAW-BSP-TREE: at each node the side away from the eye first (the eye on a plane: front) */
    int32_t stack[STACK_SIZE];
    int top = 0;
    stack[top++] = 0;
    while (top) {
        int32_t code = stack[--top];
        if (code < 0) {
            uint32_t leaf = (uint32_t)(-1 - code);
            if (cs->drawn[leaf]) emit_leaf(cs, leaf, leaves, leaf_capacity, &nl, faces, face_capacity, &nf);
            continue;
        }
        const node *nd = &lv->point.nodes[code];
        double nn[3] = {nd->nx, nd->ny, nd->nz};
        int back = dot_in_order(nn, camera) - nd->d < 0;  /* the eye's side */
        if (top + 2 > STACK_SIZE) return BBK_ERR_INTERNAL;
        stack[top++] = nd->child[back];      /* near: drawn last */
        stack[top++] = nd->child[1 - back];  /* far: drawn first */
    }
    return BBK_OK;
}

int bbk_cull_many(const bbk_level *lv, size_t n, const double *cameras, int mode, uint8_t *drawn,
                  bbk_cull_stats *stats) {
    if (!lv || (n && !cameras)) return BBK_ERR_ARGUMENT;
    for (size_t k = 0; k < n; k++) {
        int err = cull_one(lv, cameras + 8 * k, mode, stats ? stats + k : NULL);
        if (err) return err;
        if (drawn) memcpy(drawn + k * (size_t)lv->cull->leaves, lv->cull->drawn, lv->cull->leaves);
    }
    return BBK_OK;
}
