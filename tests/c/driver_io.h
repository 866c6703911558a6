/* What the kernels' test drivers share (the drivers beside it): reading their input file array by
 * array, each into a block of its exact size, so that a read or write past one is the sanitizer's
 * to catch. */
#ifndef BBK_DRIVER_IO_H
#define BBK_DRIVER_IO_H

#include <stdio.h>
#include <stdlib.h>

static FILE *in;

/* The next count items of size bytes from `in`, in a block of their own (exits 2 when short). */
static void *take(size_t count, size_t size) {
    void *p = malloc(count * size + (count == 0));
    if (!p || fread(p, size, count, in) != count) {
        fprintf(stderr, "driver: short input\n");
        exit(2);
    }
    return p;
}

#endif
