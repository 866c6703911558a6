/* One pass of a crowd tick (core/runtime/crowd.py Crowd._pass) in C: the same steps, claims and
 * moves as the NumPy pass, bit for bit (tests/core/test_crowd.py), in four loops over the avatars
 * instead of some twenty NumPy passes, the scattered reads (the step table, the occupancy, the
 * tag bases) prefetched AHEAD avatars ahead.  A kernel of the Python crowd, not of the engines'
 * run-time API (runtime_c/brushbake.h).  GPL-3.0-or-later.
 *
 * The NumPy pass, and why these loops give its answers:
 *   1. every avatar's landing place kb = step[dir * stride + place] (0, the sink, when refused)
 *      and its claim tag base + dir; 2. kb sent to the sink when occupied: all read before any
 *      claim is written, as NumPy gathers the whole batch first;
 *   3. the claims written in avatar order (NumPy writes repeated indices in order: the last
 *      wins), then the sink cleared;
 *   4. each avatar wins when its tag is at kb; it leaves its place (0) when it wins, else marks it
 *      taken (1); a winner's place becomes kb and its tag base place_base[kb].  NumPy reads every
 *      claim back before writing the leaves; here they interleave, which reads the same values:
 *      a claimed place was free when the pass began, so no avatar stands there, and the places
 *      avatars leave are all distinct from the claimed ones (and from the sink, place 0).
 * Loop 4 is branch-free (selects): half the avatars lose, at random. */
#include "bbk_compiler.h"

/* how many avatars ahead the step and occupancy reads are prefetched */
#define AHEAD 64

#define CROWD_PASS(NAME, T)                                                                                   \
    static int64_t NAME(int64_t n, const int64_t *who, const uint8_t *dirs, int64_t *place, T *base,          \
                        const int32_t *step, int64_t stride, T *occ, const T *place_base, int32_t *kb,        \
                        T *tag, int64_t *refused) {                                                           \
        for (int64_t j = 0; j < n; j++) {                                                                     \
            if (j + AHEAD < n) {                                                                              \
                int64_t ja = who ? who[j + AHEAD] : j + AHEAD;                                                \
                __builtin_prefetch(step + (int64_t)dirs[j + AHEAD] * stride + place[ja]);                     \
            }                                                                                                 \
            int64_t a = who ? who[j] : j;                                                                     \
            kb[j] = step[(int64_t)dirs[j] * stride + place[a]];                                               \
            tag[j] = (T)(base[a] + dirs[j]);                                                                  \
        }                                                                                                     \
        for (int64_t j = 0; j < n; j++) {                                                                     \
            if (j + AHEAD < n) __builtin_prefetch(occ + kb[j + AHEAD]);                                       \
            kb[j] = occ[kb[j]] ? 0 : kb[j];                                                                   \
        }                                                                                                     \
        for (int64_t j = 0; j < n; j++) {                                                                     \
            if (j + AHEAD < n) __builtin_prefetch(occ + kb[j + AHEAD], 1);                                    \
            occ[kb[j]] = tag[j];                                                                              \
        }                                                                                                     \
        occ[0] = 0;                                                                                           \
        int64_t wins = 0, out = 0;                                                                            \
        for (int64_t j = 0; j < n; j++) {                                                                     \
            if (j + AHEAD < n) {                                                                              \
                __builtin_prefetch(occ + kb[j + AHEAD]);                                                      \
                __builtin_prefetch(place_base + kb[j + AHEAD]);                                               \
            }                                                                                                 \
            int64_t a = who ? who[j] : j;                                                                     \
            int32_t k = kb[j];                                                                                \
            int64_t p = place[a];                                                                             \
            int win = occ[k] == tag[j];                                                                       \
            T nb = place_base[k];                                                                             \
            occ[p] = (T)!win;                                                                                 \
            place[a] = win ? (int64_t)k : p;                                                                  \
            base[a] = win ? nb : base[a];                                                                     \
            wins += win;                                                                                      \
            if (refused) {                                                                                    \
                refused[out] = a;                                                                             \
                out += !win;                                                                                  \
            }                                                                                                 \
        }                                                                                                     \
        return refused ? out : wins;                                                                          \
    }

CROWD_PASS(pass8, uint8_t)
CROWD_PASS(pass16, uint16_t)
CROWD_PASS(pass32, uint32_t)

int64_t bbkc_crowd_pass(int64_t n, const int64_t *who, const uint8_t *dirs, int64_t *place, void *base,
                        const int32_t *step, int64_t stride, void *occ, const void *place_base, int tag_bytes,
                        int32_t *kb, void *tag, int64_t *refused) {
    switch (tag_bytes) {
    case 1:
        return pass8(n, who, dirs, place, (uint8_t *)base, step, stride, (uint8_t *)occ,
                     (const uint8_t *)place_base, kb, (uint8_t *)tag, refused);
    case 2:
        return pass16(n, who, dirs, place, (uint16_t *)base, step, stride, (uint16_t *)occ,
                      (const uint16_t *)place_base, kb, (uint16_t *)tag, refused);
    case 4:
        return pass32(n, who, dirs, place, (uint32_t *)base, step, stride, (uint32_t *)occ,
                      (const uint32_t *)place_base, kb, (uint32_t *)tag, refused);
    default:
        return -1;
    }
}
