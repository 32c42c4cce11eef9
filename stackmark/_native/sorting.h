/* A stable sort for arrays that are a few ascending runs, shared by the C kernels.
 *
 * The GSYM cache build sorts numbers that mostly arrive in order: a unit's
 * column points are its line sequences one after another, each ascending,
 * and a function's index points are its rows, its inline segments and its
 * columns, three ascending lists. A natural merge sort finds those runs and
 * merges neighbours pass after pass, so a few runs cost a few linear passes
 * (qsort compared and copied through function pointers, n log n times).
 * Stable: of equal keys the earlier stays first, as Python's `sorted`.
 *
 *   NATURAL_MERGE_SORT(name, type, less)
 *       defines static void name(type *v, size_t n, type *tmp), sorting
 *       v[0..n) with `tmp` (n elements) as scratch; less(a, b) compares keys.
 */
#ifndef STACKMARK_NATIVE_SORTING_H
#define STACKMARK_NATIVE_SORTING_H

#include <stddef.h>
#include <string.h>

#define NATURAL_MERGE_SORT(name, type, less)                                              \
    /* The end of the ascending run that starts at `i`. */                                \
    static size_t name##_run_end(const type *v, size_t i, size_t n)                      \
    {                                                                                     \
        for (i++; i < n && !less(v[i], v[i - 1]); i++)                                    \
            ;                                                                             \
        return i;                                                                         \
    }                                                                                     \
    static void name(type *v, size_t n, type *tmp)                                        \
    {                                                                                     \
        type *src = v, *dst = tmp;                                                        \
        while (n > 1 && name##_run_end(src, 0, n) < n) { /* one pass per loop */          \
            size_t i = 0;                                                                 \
            while (i < n) {                                                               \
                size_t mid = name##_run_end(src, i, n);                                   \
                size_t hi = mid < n ? name##_run_end(src, mid, n) : n;                    \
                size_t a = i, b = mid, k = i;                                             \
                while (a < mid && b < hi) /* the left one first on ties: stable */        \
                    dst[k++] = less(src[b], src[a]) ? src[b++] : src[a++];                \
                memcpy(dst + k, src + a, (mid - a) * sizeof(type));                       \
                k += mid - a;                                                             \
                memcpy(dst + k, src + b, (hi - b) * sizeof(type));                        \
                i = hi;                                                                   \
            }                                                                             \
            type *swap = src;                                                             \
            src = dst;                                                                    \
            dst = swap;                                                                   \
        }                                                                                 \
        if (src != v)                                                                     \
            memcpy(v, src, n * sizeof(type));                                             \
    }

#endif
