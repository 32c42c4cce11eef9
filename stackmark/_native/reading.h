/* Bounds-checked reads over a Python buffer, shared by the C kernels.
 *
 * Every read goes through these helpers: each checks the position against
 * the buffer's length and returns 0 when it lies outside (or a value does
 * not fit the kernel's 64-bit registers). A kernel then gives up and
 * returns None, and its caller runs the pure-Python reference, which raises
 * the FormatError a user sees (see stackmark/_native/__init__.py).
 */
#ifndef STACKMARK_NATIVE_READING_H
#define STACKMARK_NATIVE_READING_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const uint8_t *data;
    uint64_t size;
} Bytes;

/* One byte at `pos`. */
static inline int read_u8(const Bytes *b, uint64_t pos, uint64_t *out) {
    if (pos >= b->size) return 0;
    *out = b->data[pos];
    return 1;
}

/* An unsigned integer of `width` (1..8) bytes at `pos`, in the given byte order. */
static inline int read_uint(const Bytes *b, uint64_t pos, unsigned width, int little, uint64_t *out) {
    if (pos > b->size || width > b->size - pos) return 0;
    uint64_t value = 0;
    const uint8_t *p = b->data + pos;
    if (little) {
        for (unsigned i = width; i > 0; i--) value = (value << 8) | p[i - 1];
    } else {
        for (unsigned i = 0; i < width; i++) value = (value << 8) | p[i];
    }
    *out = value;
    return 1;
}

/* The unsigned LEB128 at *pos, advancing *pos. `*wide` is set when the value
 * does not fit 64 bits (the low 64 bits are still in *out). */
static inline int read_uleb(const Bytes *b, uint64_t *pos, uint64_t *out, int *wide) {
    uint64_t p = *pos, result = 0;
    unsigned shift = 0;
    *wide = 0;
    for (;;) {
        if (p >= b->size) return 0;
        uint8_t byte = b->data[p++];
        uint64_t bits = byte & 0x7F;
        if (shift < 64) {
            result |= bits << shift;
            if (shift > 57 && (bits >> (64 - shift)) != 0) *wide = 1;
        } else if (bits != 0) {
            *wide = 1;
        }
        if (byte < 0x80) break;
        shift += 7;
    }
    *pos = p;
    *out = result;
    return 1;
}

/* The signed LEB128 at *pos, advancing *pos; 0 also when it has more than
 * nine bytes (such a value may not fit 64 bits: the reference handles it). */
static inline int read_sleb(const Bytes *b, uint64_t *pos, int64_t *out) {
    uint64_t p = *pos, result = 0;
    unsigned shift = 0;
    uint8_t byte;
    do {
        if (p >= b->size || shift >= 63) return 0;
        byte = b->data[p++];
        result |= (uint64_t)(byte & 0x7F) << shift;
        shift += 7;
    } while (byte >= 0x80);
    if (byte & 0x40) result |= ~(uint64_t)0 << shift;
    *pos = p;
    *out = (int64_t)result;
    return 1;
}

/* Step over a LEB128 (signed or not) at *pos. */
static inline int skip_leb(const Bytes *b, uint64_t *pos) {
    uint64_t p = *pos;
    for (;;) {
        if (p >= b->size) return 0;
        if (b->data[p++] < 0x80) break;
    }
    *pos = p;
    return 1;
}

/* A growable array of uint64 (the kernels' row and record stores). */
typedef struct {
    uint64_t *items;
    size_t len, cap;
} U64s;

static inline int u64s_reserve(U64s *v, size_t extra) {
    if (v->len + extra <= v->cap) return 1;
    size_t cap = v->cap ? v->cap : 64;
    while (cap < v->len + extra) cap *= 2;
    uint64_t *grown = realloc(v->items, cap * sizeof(uint64_t));
    if (grown == NULL) return 0;
    v->items = grown;
    v->cap = cap;
    return 1;
}

#endif
