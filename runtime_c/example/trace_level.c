/* trace_level: load a brushbake level (.bbk) and print what a few traces hit.
 *
 *   trace_level LEVEL.bbk [X0 Y0 Z0 X1 Y1 Z1]
 *
 * Prints the level's counts, then for the segment given (default: across the world's bounding box,
 * through its middle) the point hull's trace, every box hull's trace, a sphere of radius 0.25 m by
 * plane shifting, and, when the level has a PVS, whether the two ends may see each other.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "../brushbake.h"

#include <stdio.h>
#include <stdlib.h>

static void print_hit(const char *what, const bbk_hit *h) {
    if (h->start_solid) printf("%-16s starts in solid\n", what);
    else if (!h->hit) printf("%-16s no hit, ends at (%.4f, %.4f, %.4f)\n", what, h->point[0], h->point[1], h->point[2]);
    else
        printf("%-16s hits at t = %.6f, point (%.4f, %.4f, %.4f), plane %d, normal (%.3f, %.3f, %.3f)\n", what,
               h->fraction, h->point[0], h->point[1], h->point[2], (int)h->plane, h->normal[0], h->normal[1],
               h->normal[2]);
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 8) {
        fprintf(stderr, "usage: %s LEVEL.bbk [X0 Y0 Z0 X1 Y1 Z1]\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(size > 0 ? (size_t)size : 1);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: cannot read it\n", argv[1]);
        return 1;
    }
    fclose(f);

    bbk_level *level;
    char message[256];
    int code = bbk_load(data, (size_t)size, &level, message, sizeof message);
    free(data);  /* the level keeps its own copy */
    if (code != BBK_OK) {
        fprintf(stderr, "%s: %s (%s)\n", argv[1], message, bbk_error_name(code));
        return 1;
    }
    bbk_info info;
    bbk_get_info(level, &info);
    printf("format %u.%u: %u planes, %u nodes, %u leaves, %u hulls, onion %u nodes, bevel %u nodes, "
           "%u clusters, depth %u\n", info.version_major, info.version_minor, info.planes, info.nodes, info.leaves,
           info.hulls, info.onion_nodes, info.bevel_nodes, info.clusters, info.max_depth);

    double s[3], e[3];
    for (int k = 0; k < 3; k++) {
        double lo = info.world_bounds[0][k], hi = info.world_bounds[1][k];
        s[k] = argc == 8 ? atof(argv[2 + k]) : lo + 0.1 * (hi - lo);
        e[k] = argc == 8 ? atof(argv[5 + k]) : lo + 0.9 * (hi - lo);
    }
    printf("segment (%.4f, %.4f, %.4f) -> (%.4f, %.4f, %.4f); start in leaf %u\n", s[0], s[1], s[2], e[0], e[1],
           e[2], bbk_point_leaf(level, s));
    bbk_hit hit;
    for (uint32_t h = 0; h < info.hulls; h++) {
        const char *name;
        uint32_t length;
        char label[64];
        bbk_hull_name(level, h, &name, &length);
        snprintf(label, sizeof label, "hull %.*s", (int)(length < 40 ? length : 40), name);
        if ((code = bbk_trace(level, h, s, e, h != 0, &hit)) != BBK_OK) {
            fprintf(stderr, "trace: %s\n", bbk_error_name(code));
            return 1;
        }
        print_hit(label, &hit);
    }
    bbk_shape sphere = {BBK_SHAPE_SPHERE, 0, 0.25, 0.0, {0.0, 0.0, 0.0}, NULL, 0};
    if ((code = bbk_shift_trace(level, &sphere, s, e, &hit)) != BBK_OK) {
        fprintf(stderr, "sphere: %s\n", bbk_error_name(code));
        return 1;
    }
    print_hit("sphere 0.25", &hit);
    if (info.clusters) {
        int visible;
        bbk_can_see_points(level, s, e, &visible);
        printf("%-16s %s\n", "pvs", visible ? "the ends may see each other" : "the ends cannot see each other");
    }
    bbk_free(level);
    return 0;
}
