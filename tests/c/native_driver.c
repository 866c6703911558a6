/* native_driver.c -- run tests/native_battery.py's jobs through a native library loaded at run time
 * (LoadLibrary on Windows, dlopen elsewhere) and write every answer record, as native_battery.run_ctypes
 * does through ctypes.  tests/test_native_wine.py builds it for Windows with zig cc and runs it under
 * Wine on the shipped DLL, then compares the bytes with the Linux library's.
 *
 *     native_driver LIBRARY LEVEL.bbk JOBS.bin ANSWERS.bin
 *
 * Exit status 0, or 1 with a line on stderr saying what failed.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "brushbake.h"

#ifdef _WIN32
#include <windows.h>
typedef HMODULE library_t;
static library_t open_library(const char *path) { return LoadLibraryA(path); }
static void *symbol(library_t lib, const char *name) { return (void *)GetProcAddress(lib, name); }
#else
#include <dlfcn.h>
typedef void *library_t;
static library_t open_library(const char *path) { return dlopen(path, RTLD_NOW); }
static void *symbol(library_t lib, const char *name) { return dlsym(lib, name); }
#endif

typedef int (*load_fn)(const void *, size_t, bbk_level **, char *, size_t);
typedef void (*free_fn)(bbk_level *);
typedef void (*info_fn)(const bbk_level *, bbk_info *);
typedef void (*move_defaults_fn)(bbk_move_settings *);
typedef int (*leaf_many_fn)(const bbk_level *, size_t, const double *, int32_t *);
typedef int (*trace_many_fn)(const bbk_level *, uint32_t, size_t, const double *, int, bbk_hit *);
typedef int (*transition_many_fn)(const bbk_level *, uint32_t, size_t, const double *, bbk_transition *);
typedef int (*cull_many_fn)(const bbk_level *, size_t, const double *, int, uint8_t *, bbk_cull_stats *);
typedef int (*shift_many_fn)(const bbk_level *, const bbk_shape *, size_t, const double *, bbk_hit *);
typedef int (*move_many_fn)(const bbk_level *, uint32_t, size_t, const double *, const double *, const double *,
                            const bbk_move_settings *, const double *, int, bbk_move_result *);

static int fail(const char *what, const char *detail) {
    fprintf(stderr, "native_driver: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    return 1;
}

static unsigned char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *data = malloc(n > 0 ? (size_t)n : 1);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return data;
}

static uint32_t u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

#define NEED(name, type) type name = (type)symbol(lib, #name); if (!name) return fail("missing export", #name)

int main(int argc, char **argv) {
    if (argc != 5) return fail("usage", "native_driver LIBRARY LEVEL.bbk JOBS.bin ANSWERS.bin");
    library_t lib = open_library(argv[1]);
    if (!lib) return fail("cannot load", argv[1]);
    NEED(bbk_load, load_fn);
    NEED(bbk_free, free_fn);
    NEED(bbk_get_info, info_fn);
    NEED(bbk_move_defaults, move_defaults_fn);
    NEED(bbk_point_leaf_many, leaf_many_fn);
    NEED(bbk_trace_many, trace_many_fn);
    NEED(bbk_find_first_transition_many, transition_many_fn);
    NEED(bbk_cull_many, cull_many_fn);
    NEED(bbk_shift_trace_many, shift_many_fn);
    NEED(bbk_move_many, move_many_fn);

    size_t level_size, jobs_size;
    unsigned char *level_bytes = read_all(argv[2], &level_size), *jobs = read_all(argv[3], &jobs_size);
    if (!level_bytes || !jobs) return fail("cannot read", !level_bytes ? argv[2] : argv[3]);
    bbk_level *level = NULL;
    char message[512];
    if (bbk_load(level_bytes, level_size, &level, message, sizeof message) != BBK_OK) return fail("bbk_load", message);
    bbk_info info;
    bbk_get_info(level, &info);
    bbk_move_settings settings;
    bbk_move_defaults(&settings);
    FILE *out = fopen(argv[4], "wb");
    if (!out) return fail("cannot write", argv[4]);
    if (jobs_size < 12 || memcmp(jobs, "BBKQ", 4) != 0 || u32(jobs + 4) != 1) return fail("bad jobs file", argv[3]);
    uint32_t count = u32(jobs + 8);
    size_t at = 12;
    for (uint32_t j = 0; j < count; j++) {
        static const size_t width[] = {0, 3, 6, 6, 8, 6, 7};
        if (at + 64 > jobs_size) return fail("jobs file truncated", NULL);
        uint32_t kind = u32(jobs + at), arg = u32(jobs + at + 4), flag = u32(jobs + at + 8);
        size_t n = (size_t)u64(jobs + at + 16);
        double shape_numbers[5];
        memcpy(shape_numbers, jobs + at + 24, sizeof shape_numbers);
        at += 64;
        if (kind < 1 || kind > 6 || at + n * width[kind] * 8 > jobs_size) return fail("bad job", NULL);
        double *rows = malloc(n * width[kind] * 8 + 8);
        memcpy(rows, jobs + at, n * width[kind] * 8);
        at += n * width[kind] * 8;
        int code = BBK_OK;
        if (kind == 1) {
            int32_t *leaves = malloc(n * sizeof *leaves + 1);
            code = bbk_point_leaf_many(level, n, rows, leaves);
            fwrite(leaves, sizeof *leaves, n, out);
            free(leaves);
        } else if (kind == 2 || kind == 5) {
            bbk_hit *hits = calloc(n + 1, sizeof *hits);
            if (kind == 2) {
                code = bbk_trace_many(level, arg, n, rows, (int)flag, hits);
            } else {
                bbk_shape shape = {(int32_t)arg, 0, shape_numbers[0], shape_numbers[1],
                                   {shape_numbers[2], shape_numbers[3], shape_numbers[4]}, NULL, 0};
                code = bbk_shift_trace_many(level, &shape, n, rows, hits);
            }
            fwrite(hits, sizeof *hits, n, out);
            free(hits);
        } else if (kind == 3) {
            bbk_transition *tr = calloc(n + 1, sizeof *tr);
            code = bbk_find_first_transition_many(level, arg, n, rows, tr);
            fwrite(tr, sizeof *tr, n, out);
            free(tr);
        } else if (kind == 4) {
            uint8_t *drawn = calloc(n * info.leaves + 1, 1);
            bbk_cull_stats *stats = calloc(n + 1, sizeof *stats);
            code = bbk_cull_many(level, n, rows, (int)arg, drawn, stats);
            fwrite(drawn, 1, n * info.leaves, out);
            fwrite(stats, sizeof *stats, n, out);
            free(drawn);
            free(stats);
        } else {
            double *pos = malloc(n * 24 + 8), *vel = malloc(n * 24 + 8), *dt = malloc(n * 8 + 8);
            for (size_t i = 0; i < n; i++) {
                memcpy(pos + 3 * i, rows + 7 * i, 24);
                memcpy(vel + 3 * i, rows + 7 * i + 3, 24);
                dt[i] = rows[7 * i + 6];
            }
            bbk_move_result *res = calloc(n + 1, sizeof *res);
            code = bbk_move_many(level, arg, n, pos, vel, dt, &settings, NULL, (int)flag, res);
            fwrite(res, sizeof *res, n, out);
            free(res);
            free(pos);
            free(vel);
            free(dt);
        }
        free(rows);
        if (code != BBK_OK) {
            snprintf(message, sizeof message, "job %u (kind %u) returned %d", j, kind, code);
            return fail("query failed", message);
        }
    }
    fclose(out);
    bbk_free(level);
    free(level_bytes);
    free(jobs);
    return 0;
}
