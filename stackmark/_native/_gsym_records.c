/* GSYM FunctionInfo records, encoded in C: the compiled twin of
 * `stackmark.formats.gsym.creator.encode_records`.
 *
 * The pure-Python encoders (`function_info.py`, `line_table.py`,
 * `inline_info.py`) are the reference: they say, beside the spec, which
 * bytes LLVM's writer gives. This file repeats their happy path with native
 * integers. Whatever it cannot represent or would refuse (a value outside
 * 0..2^64-1, a line outside u32, an empty table, rows out of order, a child
 * range outside its parent, merged functions, call sites, unknown records,
 * a type that is not the one the records use) is not handled here at all:
 * the function's bytes written so far are dropped and the Python encoder
 * encodes that one function, so it gives the bytes, or raises its own error,
 * exactly as the pure path does.
 *
 *   encode_records(functions, little, fallback) -> (bytes, list[int])
 *   stl_sort_functions(functions, detail_less) -> list   (creator.sort_functions's
 *                      exact std::sort, at the end of this file)
 *   inline_equal(a, b, inline_type) -> bool | None      (InlineInfo trees compared
 *                      as `a == b` does, for the sort and finalize)
 *
 * `fallback(info)` is the Python encoding of one record laid out from
 * offset 0 (so without padding); it is placed at the next multiple of 4.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slots.h"

/* Results of the encoders below. */
#define OK 0
#define FAILED (-1)  /* a Python exception is set: pass it on */
#define REFERENCE 1  /* not for this code: let the Python encoder do it */

#define MAX_LINE_RANGE 14
#define MAX_NATIVE_DEPTH 200 /* deeper inline trees go to the Python encoder,
                                which recurses too and has its own limit */

typedef struct {
    unsigned char *data;
    Py_ssize_t len, cap;
    int little;
} Buf;

static int
buf_reserve(Buf *b, Py_ssize_t extra)
{
    if (b->len + extra <= b->cap)
        return OK;
    Py_ssize_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    unsigned char *data = PyMem_Realloc(b->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return FAILED;
    }
    b->data = data;
    b->cap = cap;
    return OK;
}

static inline int
put_u8(Buf *b, unsigned v)
{
    if (b->len >= b->cap && buf_reserve(b, 1) < 0)
        return FAILED;
    b->data[b->len++] = (unsigned char)v;
    return OK;
}

static void
store_u32(Buf *b, Py_ssize_t at, uint32_t v)
{
    unsigned char *p = b->data + at;
    if (b->little) {
        p[0] = v & 0xFF; p[1] = (v >> 8) & 0xFF; p[2] = (v >> 16) & 0xFF; p[3] = v >> 24;
    } else {
        p[3] = v & 0xFF; p[2] = (v >> 8) & 0xFF; p[1] = (v >> 16) & 0xFF; p[0] = v >> 24;
    }
}

static int
put_u32(Buf *b, uint32_t v)
{
    if (buf_reserve(b, 4) < 0)
        return FAILED;
    store_u32(b, b->len, v);
    b->len += 4;
    return OK;
}

static int
put_uleb(Buf *b, uint64_t v)
{
    if (buf_reserve(b, 10) < 0)
        return FAILED;
    do {
        unsigned char byte = v & 0x7F;
        v >>= 7;
        b->data[b->len++] = v ? (byte | 0x80) : byte;
    } while (v);
    return OK;
}

static int
put_sleb(Buf *b, int64_t v)
{
    if (buf_reserve(b, 10) < 0)
        return FAILED;
    for (;;) {
        unsigned char byte = v & 0x7F;
        v >>= 7; /* arithmetic shift, as Python's >> */
        if ((v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40))) {
            b->data[b->len++] = byte;
            return OK;
        }
        b->data[b->len++] = byte | 0x80;
    }
}

static int
put_bytes(Buf *b, const char *p, Py_ssize_t n)
{
    if (buf_reserve(b, n) < 0)
        return FAILED;
    memcpy(b->data + b->len, p, (size_t)n);
    b->len += n;
    return OK;
}

static int
align4(Buf *b)
{
    while (b->len % 4)
        if (put_u8(b, 0) < 0)
            return FAILED;
    return OK;
}

/* An int in 0..2^64-1, or REFERENCE (anything else, the error cleared). */
static int
as_u64(PyObject *o, uint64_t *out)
{
    if (!PyLong_Check(o))
        return REFERENCE;
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return REFERENCE;
    }
    *out = (uint64_t)v;
    return OK;
}

/* Reads the attribute `name` of `o` (a new reference), or REFERENCE. */
static int
attribute(PyObject *o, PyObject *name, PyObject **out)
{
    *out = PyObject_GetAttr(o, name);
    if (*out == NULL) {
        PyErr_Clear();
        return REFERENCE;
    }
    return OK;
}

static PyObject *s_start, *s_size, *s_name, *s_line_table, *s_inline, *s_merged,
    *s_call_sites, *s_other_records, *s_ranges, *s_call_file, *s_call_line, *s_children;

/* -- line tables (line_table.encode_line_table) --------------------------- */

typedef struct {
    uint64_t addr, file;
    int64_t line; /* 0..2^32-1 */
} Row;

static int
compare_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* (MinDelta, MaxDelta) as line_table._delta_window chooses them. */
static int
delta_window(const Row *rows, Py_ssize_t n, int64_t *min_out, int64_t *max_out)
{
    int64_t min_delta = 0, max_delta = 0;
    if (n > 1) {
        min_delta = max_delta = rows[1].line - rows[0].line;
        for (Py_ssize_t i = 2; i < n; i++) {
            int64_t d = rows[i].line - rows[i - 1].line;
            if (d < min_delta) min_delta = d;
            if (d > max_delta) max_delta = d;
        }
    }
    if (max_delta - min_delta > MAX_LINE_RANGE) {
        /* The window of width <= 14 over the distinct deltas that covers the
           most rows; ties go to the lowest starting delta. */
        Py_ssize_t m = n - 1;
        int64_t *deltas = PyMem_Malloc(sizeof(int64_t) * (size_t)m);
        Py_ssize_t *counts = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)m);
        if (deltas == NULL || counts == NULL) {
            PyMem_Free(deltas);
            PyMem_Free(counts);
            PyErr_NoMemory();
            return FAILED;
        }
        for (Py_ssize_t i = 0; i < m; i++)
            deltas[i] = rows[i + 1].line - rows[i].line;
        qsort(deltas, (size_t)m, sizeof(int64_t), compare_i64);
        Py_ssize_t k = 0; /* distinct deltas, with their counts */
        for (Py_ssize_t i = 0; i < m; i++) {
            if (k && deltas[k - 1] == deltas[i]) {
                counts[k - 1]++;
            } else {
                deltas[k] = deltas[i];
                counts[k++] = 1;
            }
        }
        Py_ssize_t best_start = 0, best_end = 0, best_count = 0;
        for (Py_ssize_t i = 0; i < k; i++) {
            Py_ssize_t total = 0, j = i;
            while (j < k && deltas[j] - deltas[i] <= MAX_LINE_RANGE)
                total += counts[j++];
            if (total > best_count) {
                best_start = i;
                best_end = j - 1;
                best_count = total;
            }
        }
        min_delta = deltas[best_start];
        max_delta = deltas[best_end];
        PyMem_Free(deltas);
        PyMem_Free(counts);
    }
    if (min_delta == max_delta && 0 < min_delta && min_delta < MAX_LINE_RANGE)
        min_delta = 0;
    *min_out = min_delta;
    *max_out = max_delta;
    return OK;
}

static int
read_rows(PyObject *lines, Row **out, Py_ssize_t *count)
{
    if (!PyList_CheckExact(lines) || PyList_GET_SIZE(lines) == 0)
        return REFERENCE;
    Py_ssize_t n = PyList_GET_SIZE(lines);
    Row *rows = PyMem_Malloc(sizeof(Row) * (size_t)n);
    if (rows == NULL) {
        PyErr_NoMemory();
        return FAILED;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *entry = PyList_GET_ITEM(lines, i);
        uint64_t line;
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3
            || as_u64(PyTuple_GET_ITEM(entry, 0), &rows[i].addr) != OK
            || as_u64(PyTuple_GET_ITEM(entry, 1), &rows[i].file) != OK
            || as_u64(PyTuple_GET_ITEM(entry, 2), &line) != OK || line > 0xFFFFFFFFu) {
            PyMem_Free(rows);
            return REFERENCE;
        }
        rows[i].line = (int64_t)line;
    }
    *out = rows;
    *count = n;
    return OK;
}

static int
encode_line_table(Buf *b, PyObject *lines, uint64_t base_addr)
{
    Row *rows;
    Py_ssize_t n;
    int rc = read_rows(lines, &rows, &n);
    if (rc != OK)
        return rc;
    int64_t min_delta, max_delta;
    if (delta_window(rows, n, &min_delta, &max_delta) < 0)
        goto failed;
    int64_t line_range = max_delta - min_delta + 1;
    if (put_sleb(b, min_delta) < 0 || put_sleb(b, max_delta) < 0
        || put_uleb(b, (uint64_t)rows[0].line) < 0)
        goto failed;
    uint64_t prev_addr = base_addr, prev_file = 1;
    int64_t prev_line = rows[0].line;
    int64_t base_special = 4 - min_delta;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t addr = rows[i].addr, file = rows[i].file;
        int64_t line = rows[i].line, line_delta;
        if (addr < prev_addr) { /* the Python encoder raises ValueError */
            PyMem_Free(rows);
            return REFERENCE;
        }
        uint64_t addr_delta = addr - prev_addr;
        if (line >= prev_line) {
            line_delta = line - prev_line;
        } else { /* as LLVM's int32 subtraction */
            int64_t diff = (prev_line - line) & 0xFFFFFFFF;
            line_delta = -(diff >= 0x80000000LL ? diff - 0x100000000LL : diff);
        }
        if (file != prev_file && (put_u8(b, 1) < 0 || put_uleb(b, file) < 0))
            goto failed;
        prev_addr = addr;
        prev_file = file;
        prev_line = line;
        if (min_delta <= line_delta && line_delta <= max_delta && addr_delta <= 255) {
            int64_t special = line_delta + base_special + (int64_t)addr_delta * line_range;
            if (special <= 255) {
                if (put_u8(b, (unsigned)special) < 0)
                    goto failed;
                continue;
            }
        }
        if (line_delta != 0 && (put_u8(b, 3) < 0 || put_sleb(b, line_delta) < 0))
            goto failed;
        if (put_u8(b, 2) < 0 || put_uleb(b, addr_delta) < 0)
            goto failed;
    }
    PyMem_Free(rows);
    return put_u8(b, 0);
failed:
    PyMem_Free(rows);
    return FAILED;
}

/* -- inline trees (inline_info.encode_inline_info) ------------------------ */

/* (start, end) of the range tuple `r`, or REFERENCE. */
static int
read_range(PyObject *r, uint64_t *start, uint64_t *end)
{
    if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2)
        return REFERENCE;
    if (as_u64(PyTuple_GET_ITEM(r, 0), start) != OK || as_u64(PyTuple_GET_ITEM(r, 1), end) != OK)
        return REFERENCE;
    return OK;
}

/* ranges.contains_range over the parent's ranges (bisect_right included, so an
   unsorted list answers as it does there). */
static int
contains_range(PyObject *ranges, uint64_t start, uint64_t end, int *inside)
{
    *inside = 0;
    if (start >= end)
        return OK;
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(ranges);
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        uint64_t s, e;
        if (read_range(PyList_GET_ITEM(ranges, mid), &s, &e) != OK)
            return REFERENCE;
        if (start < s) /* (start, 2**64) < (s, e) */
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo == 0)
        return OK;
    uint64_t s, e;
    if (read_range(PyList_GET_ITEM(ranges, lo - 1), &s, &e) != OK)
        return REFERENCE;
    *inside = end <= e;
    return OK;
}

static int
encode_inline(Buf *b, PyObject *node, uint64_t base_addr, int depth)
{
    if (depth > MAX_NATIVE_DEPTH)
        return REFERENCE;
    PyObject *ranges = NULL, *children = NULL, *name = NULL, *call_file = NULL,
             *call_line = NULL;
    int rc = REFERENCE;
    if (attribute(node, s_ranges, &ranges) != OK || attribute(node, s_children, &children) != OK
        || attribute(node, s_name, &name) != OK || attribute(node, s_call_file, &call_file) != OK
        || attribute(node, s_call_line, &call_line) != OK)
        goto done;
    if (!PyList_CheckExact(ranges) || PyList_GET_SIZE(ranges) == 0
        || !PyList_CheckExact(children) || !PyLong_Check(name))
        goto done;
    Py_ssize_t nranges = PyList_GET_SIZE(ranges), nchildren = PyList_GET_SIZE(children);
    uint64_t file, line, first_start = 0, first_end = 0;
    if (as_u64(call_file, &file) != OK || as_u64(call_line, &line) != OK)
        goto done;
    if ((rc = put_uleb(b, (uint64_t)nranges)) != OK)
        goto done;
    for (Py_ssize_t i = 0; i < nranges; i++) {
        uint64_t start, end;
        if ((rc = read_range(PyList_GET_ITEM(ranges, i), &start, &end)) != OK)
            goto done;
        if (start < base_addr || end < start) { /* a ValueError (or worse) there */
            rc = REFERENCE;
            goto done;
        }
        if (i == 0) {
            first_start = start;
            first_end = end;
        }
        if ((rc = put_uleb(b, start - base_addr)) != OK || (rc = put_uleb(b, end - start)) != OK)
            goto done;
    }
    if ((rc = put_u8(b, nchildren ? 1 : 0)) != OK
        || (rc = put_u32(b, (uint32_t)PyLong_AsUnsignedLongLongMask(name))) != OK)
        goto done;
    if (PyErr_Occurred()) {
        rc = FAILED;
        goto done;
    }
    if ((rc = put_uleb(b, file)) != OK || (rc = put_uleb(b, line)) != OK)
        goto done;
    for (Py_ssize_t c = 0; c < nchildren; c++) {
        PyObject *child = PyList_GET_ITEM(children, c), *child_ranges;
        if ((rc = attribute(child, s_ranges, &child_ranges)) != OK)
            goto done;
        if (!PyList_CheckExact(child_ranges)) {
            Py_DECREF(child_ranges);
            rc = REFERENCE;
            goto done;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(child_ranges); i++) {
            uint64_t start, end;
            int inside;
            rc = read_range(PyList_GET_ITEM(child_ranges, i), &start, &end);
            if (rc == OK) {
                if (nranges == 1)
                    inside = first_start <= start && start < end && end <= first_end;
                else
                    rc = contains_range(ranges, start, end, &inside);
            }
            if (rc == OK && !inside)
                rc = REFERENCE; /* "child range not contained in parent" */
            if (rc != OK) {
                Py_DECREF(child_ranges);
                goto done;
            }
        }
        Py_DECREF(child_ranges);
        if ((rc = encode_inline(b, child, first_start, depth + 1)) != OK)
            goto done;
    }
    rc = nchildren ? put_u8(b, 0) : OK;
done:
    Py_XDECREF(ranges);
    Py_XDECREF(children);
    Py_XDECREF(name);
    Py_XDECREF(call_file);
    Py_XDECREF(call_line);
    return rc;
}

/* -- FunctionInfo (function_info.encode_function_info) -------------------- */

static int
encode_function(Buf *b, PyObject *info)
{
    PyObject *start = NULL, *size = NULL, *name = NULL, *lines = NULL, *tree = NULL,
             *merged = NULL, *sites = NULL, *others = NULL;
    int rc = REFERENCE;
    uint64_t start_v, size_v, name_v;
    if (attribute(info, s_start, &start) != OK || attribute(info, s_size, &size) != OK
        || attribute(info, s_name, &name) != OK || attribute(info, s_line_table, &lines) != OK
        || attribute(info, s_inline, &tree) != OK || attribute(info, s_merged, &merged) != OK
        || attribute(info, s_call_sites, &sites) != OK
        || attribute(info, s_other_records, &others) != OK)
        goto done;
    if (merged != Py_None || sites != Py_None || !PyList_CheckExact(others)
        || PyList_GET_SIZE(others) != 0)
        goto done;
    if (as_u64(start, &start_v) != OK || as_u64(size, &size_v) != OK
        || as_u64(name, &name_v) != OK || name_v == 0)
        goto done;
    if ((rc = align4(b)) != OK || (rc = put_u32(b, (uint32_t)size_v)) != OK
        || (rc = put_u32(b, (uint32_t)name_v)) != OK)
        goto done;
    if (lines != Py_None) {
        if ((rc = put_u32(b, 1)) != OK || (rc = put_u32(b, 0)) != OK)
            goto done;
        Py_ssize_t payload = b->len;
        if ((rc = encode_line_table(b, lines, start_v)) != OK)
            goto done;
        store_u32(b, payload - 4, (uint32_t)(b->len - payload));
    }
    if (tree != Py_None) {
        if ((rc = put_u32(b, 2)) != OK || (rc = put_u32(b, 0)) != OK)
            goto done;
        Py_ssize_t payload = b->len;
        if ((rc = encode_inline(b, tree, start_v, 0)) != OK)
            goto done;
        store_u32(b, payload - 4, (uint32_t)(b->len - payload));
    }
    if ((rc = put_u32(b, 0)) == OK)
        rc = put_u32(b, 0);
done:
    Py_XDECREF(start);
    Py_XDECREF(size);
    Py_XDECREF(name);
    Py_XDECREF(lines);
    Py_XDECREF(tree);
    Py_XDECREF(merged);
    Py_XDECREF(sites);
    Py_XDECREF(others);
    return rc;
}

static PyObject *
encode_records(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *functions, *fallback;
    int little;
    if (!PyArg_ParseTuple(args, "OpO:encode_records", &functions, &little, &fallback))
        return NULL;
    PyObject *seq = PySequence_Fast(functions, "functions must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Buf b = {NULL, 0, 0, little};
    PyObject *offsets = PyList_New(n), *result = NULL;
    if (offsets == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *info = PySequence_Fast_GET_ITEM(seq, i);
        Py_ssize_t mark = b.len;
        int rc = encode_function(&b, info);
        if (rc == FAILED)
            goto done;
        Py_ssize_t at = mark + (4 - mark % 4) % 4;
        if (rc == REFERENCE) {
            b.len = mark;
            PyObject *bytes = PyObject_CallOneArg(fallback, info);
            if (bytes == NULL)
                goto done;
            if (!PyBytes_Check(bytes)) {
                Py_DECREF(bytes);
                PyErr_SetString(PyExc_TypeError, "fallback must return bytes");
                goto done;
            }
            int put = align4(&b) < 0
                || put_bytes(&b, PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes)) < 0;
            Py_DECREF(bytes);
            if (put)
                goto done;
        }
        PyObject *offset = PyLong_FromSsize_t(at);
        if (offset == NULL)
            goto done;
        PyList_SET_ITEM(offsets, i, offset);
    }
    PyObject *data = PyBytes_FromStringAndSize(b.data ? (const char *)b.data : "", b.len);
    if (data != NULL) {
        result = PyTuple_Pack(2, data, offsets);
        Py_DECREF(data);
    }
done:
    PyMem_Free(b.data);
    Py_XDECREF(offsets);
    Py_DECREF(seq);
    return result;
}

/* ---- std::sort of FunctionInfos (creator.sort_functions's exact path) --------
 *
 * stackmark.formats.gsym.stl_sort.stl_sort with creator.function_less, step
 * for step: the same comparisons in the same order, so ties fall where
 * libstdc++ leaves them. Ranges compare in C; only entries with the same
 * range call `detail_less` (creator._detail_less).
 */

typedef struct {
    uint64_t start, size;
    PyObject *info;
} SortItem;

typedef struct {
    PyObject *detail_less;
    int failed;
} SortLess;

static int sort_less(SortLess *c, const SortItem *a, const SortItem *b) {
    if (a->start != b->start) return a->start < b->start;
    if (a->size != b->size) return a->size < b->size;
    if (c->failed) return 0;
    PyObject *answer = PyObject_CallFunctionObjArgs(c->detail_less, a->info, b->info, NULL);
    int truth = answer == NULL ? -1 : PyObject_IsTrue(answer);
    Py_XDECREF(answer);
    if (truth < 0) {
        c->failed = 1;
        return 0;
    }
    return truth;
}

#define STL_THRESHOLD 16

static void stl_swap(SortItem *a, Py_ssize_t i, Py_ssize_t j) {
    SortItem t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static void stl_adjust_heap(SortLess *c, SortItem *a, Py_ssize_t first, Py_ssize_t hole,
                            Py_ssize_t length, SortItem value) {
    Py_ssize_t top = hole, child = hole;
    while (child < (length - 1) / 2) {
        child = 2 * (child + 1);
        if (sort_less(c, &a[first + child], &a[first + child - 1])) child--;
        a[first + hole] = a[first + child];
        hole = child;
    }
    if (length % 2 == 0 && child == (length - 2) / 2) {
        child = 2 * (child + 1);
        a[first + hole] = a[first + child - 1];
        hole = child - 1;
    }
    Py_ssize_t parent = (hole - 1) / 2;
    while (hole > top && sort_less(c, &a[first + parent], &value)) {
        a[first + hole] = a[first + parent];
        hole = parent;
        parent = (hole - 1) / 2;
    }
    a[first + hole] = value;
}

static void stl_heap_sort(SortLess *c, SortItem *a, Py_ssize_t first, Py_ssize_t last) {
    Py_ssize_t length = last - first;
    if (length >= 2) {
        for (Py_ssize_t parent = (length - 2) / 2;; parent--) {
            stl_adjust_heap(c, a, first, parent, length, a[first + parent]);
            if (parent == 0) break;
        }
    }
    while (last - first > 1) {
        last--;
        SortItem value = a[last];
        a[last] = a[first];
        stl_adjust_heap(c, a, first, 0, last - first, value);
    }
}

static void stl_move_median_to_first(SortLess *c, SortItem *a, Py_ssize_t result, Py_ssize_t x,
                                     Py_ssize_t y, Py_ssize_t z) {
    Py_ssize_t pick;
    if (sort_less(c, &a[x], &a[y])) {
        if (sort_less(c, &a[y], &a[z])) pick = y;
        else if (sort_less(c, &a[x], &a[z])) pick = z;
        else pick = x;
    } else if (sort_less(c, &a[x], &a[z])) {
        pick = x;
    } else if (sort_less(c, &a[y], &a[z])) {
        pick = z;
    } else {
        pick = y;
    }
    stl_swap(a, result, pick);
}

static Py_ssize_t stl_unguarded_partition(SortLess *c, SortItem *a, Py_ssize_t first,
                                          Py_ssize_t last, Py_ssize_t pivot) {
    SortItem p = a[pivot];
    for (;;) {
        while (sort_less(c, &a[first], &p)) first++;
        last--;
        while (sort_less(c, &p, &a[last])) last--;
        if (!(first < last)) return first;
        stl_swap(a, first, last);
        first++;
    }
}

static void stl_introsort_loop(SortLess *c, SortItem *a, Py_ssize_t first, Py_ssize_t last,
                               Py_ssize_t depth) {
    while (last - first > STL_THRESHOLD) {
        if (depth == 0) {
            stl_heap_sort(c, a, first, last);
            return;
        }
        depth--;
        Py_ssize_t mid = first + (last - first) / 2;
        stl_move_median_to_first(c, a, first, first + 1, mid, last - 1);
        Py_ssize_t cut = stl_unguarded_partition(c, a, first + 1, last, first);
        stl_introsort_loop(c, a, cut, last, depth);
        last = cut;
    }
}

static void stl_unguarded_linear_insert(SortLess *c, SortItem *a, Py_ssize_t last) {
    SortItem value = a[last];
    Py_ssize_t next = last - 1;
    while (sort_less(c, &value, &a[next])) {
        a[last] = a[next];
        last = next;
        next--;
    }
    a[last] = value;
}

static void stl_insertion_sort(SortLess *c, SortItem *a, Py_ssize_t first, Py_ssize_t last) {
    for (Py_ssize_t i = first + 1; i < last; i++) {
        SortItem value = a[i];
        if (sort_less(c, &value, &a[first])) {
            memmove(&a[first + 1], &a[first], (size_t)(i - first) * sizeof(SortItem));
            a[first] = value;
        } else {
            stl_unguarded_linear_insert(c, a, i);
        }
    }
}

static PyObject *stl_sort_functions(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *functions, *detail_less, *result = NULL;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &functions, &detail_less)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(functions);
    SortItem *a = malloc((size_t)(n ? n : 1) * sizeof(SortItem));
    if (a == NULL) return PyErr_NoMemory();
    Py_ssize_t held = 0;
    for (; held < n; held++) {
        PyObject *info = PyList_GET_ITEM(functions, held);
        PyObject *start = PyObject_GetAttrString(info, "start");
        PyObject *size = start ? PyObject_GetAttrString(info, "size") : NULL;
        int ok = size != NULL && PyLong_CheckExact(start) && PyLong_CheckExact(size);
        if (ok) {
            a[held].start = PyLong_AsUnsignedLongLong(start);
            if (!PyErr_Occurred()) a[held].size = PyLong_AsUnsignedLongLong(size);
            ok = !PyErr_Occurred(); /* equal starts: ends compare as the sizes do */
        }
        Py_XDECREF(start);
        Py_XDECREF(size);
        if (!ok) {
            PyErr_Clear();
            result = Py_NewRef(Py_None);
            goto done;
        }
        a[held].info = Py_NewRef(info);
    }
    SortLess c = {detail_less, 0};
    if (n >= 2) {
        Py_ssize_t depth = 0;
        for (size_t m = (size_t)n; m > 1; m >>= 1) depth++; /* bit_length - 1 */
        stl_introsort_loop(&c, a, 0, n, 2 * depth);
        if (n > STL_THRESHOLD) {
            stl_insertion_sort(&c, a, 0, STL_THRESHOLD);
            for (Py_ssize_t i = STL_THRESHOLD; i < n; i++) stl_unguarded_linear_insert(&c, a, i);
        } else {
            stl_insertion_sort(&c, a, 0, n);
        }
    }
    if (c.failed) goto done;
    result = PyList_New(n);
    if (result == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) PyList_SET_ITEM(result, i, Py_NewRef(a[i].info));
done:
    for (Py_ssize_t i = 0; i < held; i++) Py_DECREF(a[i].info);
    free(a);
    return result;
}

/* ---- InlineInfo trees compared (creator._inline_eq, creator._same_function) ----
 *
 * `a == b` for two inline trees (or None): InlineInfo.__eq__ compares name,
 * call_file, call_line, ranges and children in that order, each with `==`,
 * and the children lists compare as list.__eq__ does (lengths, then each pair,
 * the same object being equal to itself). Nodes of exactly `inline_type` are
 * compared here, their fields with PyObject_RichCompare as Python does, so
 * without a Python frame per node; anything else (a subclass, a children
 * value that is not a list, a tree deeper than MAX_NATIVE_DEPTH) is left to
 * the reference.
 */

static const char *const inline_slot_names[] = {"name", "call_file", "call_line", "ranges",
                                                "children"};
enum { I_NAME, I_CALL_FILE, I_CALL_LINE, I_RANGES, I_CHILDREN, I_SLOTS };
static SlotMap inline_slots;

/* 1 equal, 0 different, -1 an error (set), REFERENCE_EQ: the reference's. */
#define REFERENCE_EQ 2

static int field_equal(PyObject *a, PyObject *b) {
    if (a == NULL || b == NULL) return REFERENCE_EQ; /* unset slot: AttributeError there */
    PyObject *answer = PyObject_RichCompare(a, b, Py_EQ);
    if (answer == NULL) return -1;
    int truth = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return truth;
}

static int tree_equal(PyObject *a, PyObject *b, PyTypeObject *type, int depth) {
    if (depth > MAX_NATIVE_DEPTH) return REFERENCE_EQ;
    for (int i = I_NAME; i <= I_RANGES; i++) {
        int eq = field_equal(SLOT(a, inline_slots, i), SLOT(b, inline_slots, i));
        if (eq != 1) return eq;
    }
    PyObject *ka = SLOT(a, inline_slots, I_CHILDREN), *kb = SLOT(b, inline_slots, I_CHILDREN);
    if (ka == NULL || kb == NULL || !PyList_CheckExact(ka) || !PyList_CheckExact(kb))
        return REFERENCE_EQ;
    Py_ssize_t n = PyList_GET_SIZE(ka);
    if (n != PyList_GET_SIZE(kb)) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyList_GET_ITEM(ka, i), *y = PyList_GET_ITEM(kb, i);
        if (x == y) continue;
        if (!Py_IS_TYPE(x, type) || !Py_IS_TYPE(y, type)) return REFERENCE_EQ;
        int eq = tree_equal(x, y, type, depth + 1);
        if (eq != 1) return eq;
    }
    return 1;
}

static PyObject *inline_equal(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *a, *b, *type;
    if (!PyArg_ParseTuple(args, "OOO!", &a, &b, &PyType_Type, &type)) return NULL;
    if (a == Py_None || b == Py_None) return PyBool_FromLong(a == b);
    if (!Py_IS_TYPE(a, (PyTypeObject *)type) || !Py_IS_TYPE(b, (PyTypeObject *)type))
        Py_RETURN_NONE;
    int mapped = slot_map(&inline_slots, (PyTypeObject *)type, inline_slot_names, I_SLOTS);
    if (mapped < 0) return NULL;
    if (mapped == 0) Py_RETURN_NONE;
    int eq = tree_equal(a, b, (PyTypeObject *)type, 0);
    if (eq < 0) return NULL;
    if (eq == REFERENCE_EQ) Py_RETURN_NONE;
    return PyBool_FromLong(eq);
}

static PyMethodDef methods[] = {
    {"inline_equal", inline_equal, METH_VARARGS,
     "inline_equal(a, b, inline_type) -> bool | None: `a == b` for two InlineInfo trees "
     "of exactly `inline_type` (or None); None when the reference must compare them."},
    {"stl_sort_functions", stl_sort_functions, METH_VARARGS,
     "stl_sort_functions(functions, detail_less) -> list | None: a new list of the "
     "FunctionInfos in the order stl_sort(functions, creator.function_less) leaves them; "
     "None when a start or size is not a 64-bit int (the reference sorts them)."},
    {"encode_records", encode_records, METH_VARARGS,
     "encode_records(functions, little, fallback) -> (bytes, offsets): the FunctionInfo "
     "records laid out from offset 0, each 4-aligned, as creator.encode_records."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "stackmark._native._gsym_records",
    "GSYM FunctionInfo records encoded in C (see stackmark.formats.gsym.creator).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__gsym_records(void)
{
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_start, "start");
    INTERN(s_size, "size");
    INTERN(s_name, "name");
    INTERN(s_line_table, "line_table");
    INTERN(s_inline, "inline");
    INTERN(s_merged, "merged");
    INTERN(s_call_sites, "call_sites");
    INTERN(s_other_records, "other_records");
    INTERN(s_ranges, "ranges");
    INTERN(s_call_file, "call_file");
    INTERN(s_call_line, "call_line");
    INTERN(s_children, "children");
#undef INTERN
    return PyModule_Create(&module_def);
}
