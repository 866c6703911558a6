/* Points down a tree to their leaves: core/runtime/tree.py's Tree.locate, a point at a time.
 * Why in C: light locates every luxel and patch centre (a quarter of a million on lq_e0m3) to
 * skip the ones a light's leaves cannot reach, and the NumPy walk goes a tree level at a time
 * over arrays of every live point, about 0.2 s of the light's 2.4.  Each distance is the
 * reference's x + y + z - dist in that order (built with -ffp-contract=off): the same leaves and
 * the same touched flags.  GPL-3.0-or-later. */
#include "bbk_compiler.h"

#include <math.h>

int bbkc_locate(int64_t n, const double *points, int64_t root, int64_t num_nodes, int64_t num_planes,
                const int64_t *node_plane, const int64_t *node_children, const double *normals, const double *dists,
                double touch, int64_t *leaf, uint8_t *touched)
{
    int64_t i;
    for (i = 0; i < n; i++) {
        const double *p = points + 3 * i;
        int64_t code = root, steps = 0;
        uint8_t t = 0;
        while (code >= 0) {
            if (code >= num_nodes || ++steps > num_nodes)
                return BBKC_ERR_ARGUMENT; /* a child past the last node, or a cycle: not a tree */
            const int64_t plane = node_plane[code];
            if (plane < 0 || plane >= num_planes)
                return BBKC_ERR_ARGUMENT;
            const double *nn = normals + 3 * plane;
            const double d = nn[0] * p[0] + nn[1] * p[1] + nn[2] * p[2] - dists[plane];
            if (fabs(d) <= touch)
                t = 1;
            code = node_children[2 * code + (d < 0.0 ? 1 : 0)];
        }
        leaf[i] = -1 - code;
        touched[i] = t;
    }
    return BBKC_OK;
}
