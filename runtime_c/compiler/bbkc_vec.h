/* The small vector sums the compiler's kernels share, each in the fixed order of its NumPy
 * reference (core/detmath.py; built with -ffp-contract=off): dot3 is detmath.dot, plane_dist one
 * element of detmath.matmul(points, normals.T) - dists, cross3 geometry.cross3.
 * GPL-3.0-or-later. */
#ifndef BBKC_VEC_H
#define BBKC_VEC_H

/* x, then + y, then + z */
static inline double dot3(const double *a, const double *b) {
    double d = a[0] * b[0];
    d = d + a[1] * b[1];
    d = d + a[2] * b[2];
    return d;
}

/* ((x nx + y ny) + z nz) - d */
static inline double plane_dist(const double *p, const double *n, double d) {
    double s = p[0] * n[0];
    s += p[1] * n[1];
    s += p[2] * n[2];
    return s - d;
}

/* (a1 b2 - a2 b1, a2 b0 - a0 b2, a0 b1 - a1 b0) */
static inline void cross3(const double *a, const double *b, double *out) {
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

#endif
