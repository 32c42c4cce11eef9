/* The DWARF-to-GSYM converter's per-row loops, in C: the compiled twins of
 * two loops of `stackmark.formats.gsym.from_dwarf`.
 *
 *   line_entries(flat, width, runs, low, high, cache, file_index, warn, entry)
 *       -> (rows, seen)   UnitConverter._line_table's loop over DWARF rows
 *   column_points(addresses, columns) -> (addresses, columns)
 *                     ExtrasCollector.column_points
 *   column_runs(flat, width, runs) -> (addresses, columns) | None
 *                     the loop of UnitConverter._collect_columns
 *   inline_ranges(call, parent, all_parent) -> (all_ranges, ranges, uncontained)
 *                     the range sets of UnitConverter._inline
 *   rebuild_functions(starts, sizes, names, row_counts, row_addrs, row_files,
 *                     row_lines, node_counts, nodes, strings, files,
 *                     function, inline, entry) -> [FunctionInfo] | None
 *                     stackmark.formats.gsym.dwarf_units._rebuild_functions
 *                     (a worker's flat arrays back into FunctionInfos)
 *   flatten_functions(functions, roots, nodes, no_extra) -> (9 arrays' bytes,
 *                     extras) | None
 *                     the worker's side: dwarf_units._flatten_functions
 *
 * `line_entries` reads the rows `runs` names ((first, stop) row indexes)
 * from stackmark.dwarf's flat row store (an array of `width` uint64 per
 * row: address, file, line, column, is_stmt, end_sequence, discriminator)
 * and makes the GSYM rows of [low, high) exactly as the Python loop does:
 * DWARF file numbers become GSYM file indexes through the converter's
 * `cache` dict and `file_index` (called on a miss, as the loop calls it),
 * LLVM's warnings are counted through `warn` in the same order, and each
 * row is an `entry` (LineEntry) tuple. `seen` says whether there was any
 * row at all. The callbacks have effects (files inserted, warnings
 * counted), so this kernel never hands a half-done table back: the caller
 * decides before calling whether the input is its own (an array store).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sorting.h"

static PyObject *s_invalid_file, *s_between_rows, *s_duplicate, *s_not_increasing;

static PyObject *
new_entry(PyTypeObject *type, uint64_t addr, PyObject *file, uint64_t line)
{
    /* As tuple.__new__(LineEntry, (addr, file, line)) makes it. */
    PyObject *a = PyLong_FromUnsignedLongLong(addr), *l = PyLong_FromUnsignedLongLong(line);
    PyObject *entry = a && l ? type->tp_alloc(type, 3) : NULL;
    if (entry == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(l);
        return NULL;
    }
    Py_INCREF(file);
    PyTuple_SET_ITEM(entry, 0, a);
    PyTuple_SET_ITEM(entry, 1, file);
    PyTuple_SET_ITEM(entry, 2, l);
    return entry;
}

static int
warn_with(PyObject *warn, PyObject *category)
{
    PyObject *r = PyObject_CallOneArg(warn, category);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* 1 when `a` == `b` (ints), 0 when not, -1 on error. */
static int
same(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (a == NULL || b == NULL)
        return 0;
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

static PyObject *
line_entries(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    Py_ssize_t width;
    unsigned long long low, high;
    PyObject *runs, *cache, *file_index, *warn, *entry_type;
    if (!PyArg_ParseTuple(args, "y*nO!KKO!OOO!:line_entries", &view, &width, &PyList_Type, &runs,
                          &low, &high, &PyDict_Type, &cache, &file_index, &warn, &PyType_Type,
                          &entry_type))
        return NULL;
    PyTypeObject *type = (PyTypeObject *)entry_type;
    PyObject *rows = NULL, *last_file = NULL, *first_file = NULL, *result = NULL;
    uint64_t first_addr = 0, first_line = 0;
    if (width < 6 || view.len % 8 || !PyType_IsSubtype(type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_ValueError, "a flat row store of uint64 and a tuple type expected");
        goto done;
    }
    const uint64_t *flat = view.buf;
    Py_ssize_t nrows = view.len / 8 / width;
    if ((rows = PyList_New(0)) == NULL)
        goto done;
    int seen = 0, has_prev = 0, stop_all = 0;
    uint64_t prev_addr = 0, last_line = 0;
    for (Py_ssize_t run = 0; run < PyList_GET_SIZE(runs) && !stop_all; run++) {
        PyObject *pair = PyList_GET_ITEM(runs, run);
        Py_ssize_t first, stop;
        if (!PyTuple_Check(pair) || !PyArg_ParseTuple(pair, "nn", &first, &stop))
            goto fail_type;
        if (first < 0 || stop > nrows || first > stop) {
            PyErr_SetString(PyExc_IndexError, "a row run lies outside the row store");
            goto done;
        }
        for (Py_ssize_t r = first; r < stop; r++) {
            const uint64_t *row = flat + r * width;
            uint64_t addr = row[0], line = row[2] & 0xFFFFFFFFu;
            int end_sequence = row[5] != 0;
            seen = 1;
            PyObject *key = PyLong_FromUnsignedLongLong(row[1]);
            if (key == NULL)
                goto done;
            PyObject *file = PyDict_GetItemWithError(cache, key); /* borrowed */
            if (file == Py_None) /* `cache.get` gives None: a miss there too */
                file = NULL;
            Py_XINCREF(file);
            if (file == NULL && !PyErr_Occurred())
                file = PyObject_CallOneArg(file_index, key);
            Py_DECREF(key);
            if (file == NULL)
                goto done;
            if (file == Py_None) {
                Py_DECREF(file);
                if (warn_with(warn, s_invalid_file) < 0)
                    goto done;
                continue;
            }
            uint64_t row_addr = addr;
            if (addr < low) {
                if (warn_with(warn, s_between_rows) < 0) {
                    Py_DECREF(file);
                    goto done;
                }
                row_addr = low;
            } else if (addr >= high) {
                Py_DECREF(file);
                continue;
            }
            if (has_prev && addr < prev_addr) {
                int duplicate = PyList_GET_SIZE(rows) && first_addr == row_addr
                    && first_line == line;
                if (duplicate && (duplicate = same(first_file, file)) < 0) {
                    Py_DECREF(file);
                    goto done;
                }
                Py_DECREF(file);
                if (warn_with(warn, duplicate ? s_duplicate : s_not_increasing) < 0)
                    goto done;
                stop_all = 1;
                break;
            }
            int repeat = 0;
            if (last_file != NULL && line == last_line && (repeat = same(file, last_file)) < 0) {
                Py_DECREF(file);
                goto done;
            }
            if (repeat) {
                Py_DECREF(file);
                continue;
            }
            if (end_sequence) {
                has_prev = 0;
                Py_DECREF(file);
                continue;
            }
            PyObject *entry = new_entry(type, row_addr, file, line);
            if (entry == NULL || PyList_Append(rows, entry) < 0) {
                Py_XDECREF(entry);
                Py_DECREF(file);
                goto done;
            }
            Py_DECREF(entry);
            if (PyList_GET_SIZE(rows) == 1) {
                first_addr = row_addr;
                first_line = line;
                Py_INCREF(file);
                first_file = file;
            }
            Py_XSETREF(last_file, file); /* takes the reference */
            last_line = line;
            has_prev = 1;
            prev_addr = addr;
        }
    }
    result = Py_BuildValue("(OO)", rows, seen ? Py_True : Py_False);
    goto done;
fail_type:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "row runs must be (first, stop) pairs");
done:
    Py_XDECREF(rows);
    Py_XDECREF(last_file);
    Py_XDECREF(first_file);
    PyBuffer_Release(&view);
    return result;
}

/* -- column points (ExtrasCollector.column_points) ---------------------------- */

typedef struct { uint64_t addr; Py_ssize_t order; } Point;

/* By address; the sort is stable, so row order breaks ties. */
#define POINT_LESS(a, b) ((a).addr < (b).addr)
NATURAL_MERGE_SORT(sort_points, Point, POINT_LESS)

static PyObject *
column_points(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer addresses = {0}, values = {0};
    PyObject *result = NULL;
    Point *points = NULL, *scratch = NULL;
    uint64_t *out_addr = NULL;
    uint32_t *out_value = NULL;
    if (!PyArg_ParseTuple(args, "y*y*:column_points", &addresses, &values))
        return NULL;
    if (addresses.len % 8 || values.len % 4 || addresses.len / 8 != values.len / 4) {
        PyErr_SetString(PyExc_ValueError, "column addresses and values differ in length");
        goto done;
    }
    Py_ssize_t n = addresses.len / 8;
    const uint64_t *addr = addresses.buf;
    const uint32_t *value = values.buf;
    points = PyMem_Malloc(sizeof(Point) * (size_t)(n ? n : 1));
    scratch = PyMem_Malloc(sizeof(Point) * (size_t)(n ? n : 1));
    out_addr = PyMem_Malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    out_value = PyMem_Malloc(sizeof(uint32_t) * (size_t)(n ? n : 1));
    if (points == NULL || scratch == NULL || out_addr == NULL || out_value == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* Plain memory from here to the result, and the two buffers stay exported
       (an array cannot be resized meanwhile): other threads may run (the GSYM
       cache sorts the points on another core while the records are encoded). */
    Py_ssize_t m = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        points[i].addr = addr[i];
        points[i].order = i;
    }
    sort_points(points, (size_t)n, scratch);
    int64_t last = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t column = value[points[i].order];
        if ((int64_t)column != last) {
            out_addr[m] = points[i].addr;
            out_value[m++] = column;
            last = column;
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(y#y#)", (const char *)out_addr, m * (Py_ssize_t)sizeof(uint64_t),
                           (const char *)out_value, m * (Py_ssize_t)sizeof(uint32_t));
done:
    PyMem_Free(points);
    PyMem_Free(scratch);
    PyMem_Free(out_addr);
    PyMem_Free(out_value);
    PyBuffer_Release(&addresses);
    PyBuffer_Release(&values);
    return result;
}

/* ---- an inlined call's ranges (UnitConverter._inline) ----------------------- */

typedef struct {
    uint64_t start, end;
} Span;

typedef struct {
    Span *items;
    size_t len, cap;
    Span small[8];
} Spans;

static void spans_init(Spans *s) {
    s->items = s->small;
    s->len = 0;
    s->cap = 8;
}

static void spans_free(Spans *s) {
    if (s->items != s->small) free(s->items);
}

static int spans_reserve(Spans *s, size_t extra) {
    if (s->len + extra <= s->cap) return 1;
    size_t cap = s->cap * 2;
    while (cap < s->len + extra) cap *= 2;
    Span *grown = s->items == s->small ? malloc(cap * sizeof(Span))
                                       : realloc(s->items, cap * sizeof(Span));
    if (grown == NULL) return 0;
    if (s->items == s->small) memcpy(grown, s->small, s->len * sizeof(Span));
    s->items = grown;
    s->cap = cap;
    return 1;
}

/* A list of (start, end) pairs of ints below 2**64; 0 (no exception) when it
 * is anything else: the reference runs. */
static int spans_read(PyObject *list, Spans *out) {
    if (!PyList_Check(list)) return 0;
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (!spans_reserve(out, (size_t)n)) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(list, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) return 0;
        PyObject *a = PyTuple_GET_ITEM(pair, 0), *b = PyTuple_GET_ITEM(pair, 1);
        if (!PyLong_CheckExact(a) || !PyLong_CheckExact(b)) return 0;
        unsigned long long start = PyLong_AsUnsignedLongLong(a), end = 0;
        if (!PyErr_Occurred()) end = PyLong_AsUnsignedLongLong(b);
        if (PyErr_Occurred()) { /* negative, or 2**64 and more */
            PyErr_Clear();
            return 0;
        }
        out->items[out->len].start = start;
        out->items[out->len].end = end;
        out->len++;
    }
    return 1;
}

/* stackmark.formats.gsym.ranges.insert_range */
static int spans_insert(Spans *s, uint64_t start, uint64_t end) {
    if (start >= end) return 1;
    size_t i = 0;
    while (i < s->len && (s->items[i].start < start ||
                          (s->items[i].start == start && s->items[i].end <= end)))
        i++; /* bisect_right(ranges, (start, end)): the lists are short */
    size_t j = i;
    while (j < s->len && s->items[j].start <= end) j++;
    if (i != j) {
        if (s->items[j - 1].end > end) end = s->items[j - 1].end;
        memmove(s->items + i, s->items + j, (s->len - j) * sizeof(Span));
        s->len -= j - i;
    }
    if (i > 0 && start <= s->items[i - 1].end) {
        if (end > s->items[i - 1].end) s->items[i - 1].end = end;
        return 1;
    }
    if (!spans_reserve(s, 1)) return 0;
    memmove(s->items + i + 1, s->items + i, (s->len - i) * sizeof(Span));
    s->items[i].start = start;
    s->items[i].end = end;
    s->len++;
    return 1;
}

/* stackmark.formats.gsym.ranges.contains_range */
static int spans_contain(const Spans *s, uint64_t start, uint64_t end) {
    if (start >= end) return 0;
    size_t i = 0;
    while (i < s->len && s->items[i].start <= start) i++;
    return i > 0 && end <= s->items[i - 1].end;
}

static PyObject *spans_list(const Spans *s) {
    PyObject *out = PyList_New((Py_ssize_t)s->len);
    if (out == NULL) return NULL;
    for (size_t i = 0; i < s->len; i++) {
        PyObject *pair = Py_BuildValue("(KK)", (unsigned long long)s->items[i].start,
                                       (unsigned long long)s->items[i].end);
        if (pair == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, pair);
    }
    return out;
}

static PyObject *inline_ranges(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *call_list, *parent_list, *all_parent_list, *result = NULL;
    if (!PyArg_ParseTuple(args, "OOO", &call_list, &parent_list, &all_parent_list)) return NULL;
    Spans call, parent, all_parent, all, kept;
    spans_init(&call);
    spans_init(&parent);
    spans_init(&all_parent);
    spans_init(&all);
    spans_init(&kept);
    int read = spans_read(call_list, &call);
    if (read == 1) read = spans_read(parent_list, &parent);
    if (read == 1) read = spans_read(all_parent_list, &all_parent);
    if (read != 1) {
        if (read == 0) result = Py_NewRef(Py_None);
        goto done;
    }
    long uncontained = 0;
    for (size_t i = 0; i < call.len; i++) { /* from_dwarf._merged */
        if (call.items[i].start < call.items[i].end &&
            !spans_insert(&all, call.items[i].start, call.items[i].end)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (size_t i = 0; i < all.len; i++) {
        uint64_t start = all.items[i].start, end = all.items[i].end;
        if (spans_contain(&parent, start, end)) {
            if (!spans_insert(&kept, start, end)) {
                PyErr_NoMemory();
                goto done;
            }
        } else if (!spans_contain(&all_parent, start, end)) {
            uncontained++;
        }
    }
    PyObject *all_out = spans_list(&all);
    PyObject *kept_out = all_out ? spans_list(&kept) : NULL;
    if (kept_out != NULL) result = Py_BuildValue("(NNl)", all_out, kept_out, uncontained);
    else Py_XDECREF(all_out);
done:
    spans_free(&call);
    spans_free(&parent);
    spans_free(&all_parent);
    spans_free(&all);
    spans_free(&kept);
    return result;
}



/* ---- a unit's column points (UnitConverter._collect_columns) ----------------- */

#define NO_COLUMN 0xFFFFFFFFu

static PyObject *column_runs(PyObject *module, PyObject *args) {
    (void)module;
    Py_buffer view;
    Py_ssize_t width;
    PyObject *runs, *result = NULL;
    uint64_t *out_addr = NULL;
    uint32_t *out_value = NULL;
    if (!PyArg_ParseTuple(args, "y*nO!:column_runs", &view, &width, &PyList_Type, &runs))
        return NULL;
    if (width < 4 || view.len % 8) goto outside;
    const uint64_t *flat = view.buf;
    Py_ssize_t nrows = view.len / 8 / width, capacity = 0;
    Py_ssize_t nruns = PyList_GET_SIZE(runs);
    /* At most one point per row of each run, and its end. */
    for (Py_ssize_t k = 0; k < nruns; k++) {
        PyObject *run = PyList_GET_ITEM(runs, k);
        Py_ssize_t first, end;
        if (!PyTuple_CheckExact(run) || PyTuple_GET_SIZE(run) != 3) goto outside;
        first = PyLong_AsSsize_t(PyTuple_GET_ITEM(run, 0));
        end = first == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(PyTuple_GET_ITEM(run, 1));
        if (PyErr_Occurred()) {
            PyErr_Clear();
            goto outside;
        }
        Py_ssize_t stop = end - 1 > first ? end - 1 : first;
        if (first < 0 || stop > nrows) goto outside;
        capacity += stop - first + 1;
    }
    out_addr = PyMem_Malloc(sizeof(uint64_t) * (size_t)(capacity ? capacity : 1));
    out_value = PyMem_Malloc(sizeof(uint32_t) * (size_t)(capacity ? capacity : 1));
    if (out_addr == NULL || out_value == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t k = 0; k < nruns; k++) {
        PyObject *run = PyList_GET_ITEM(runs, k);
        Py_ssize_t first = PyLong_AsSsize_t(PyTuple_GET_ITEM(run, 0));
        Py_ssize_t end = PyLong_AsSsize_t(PyTuple_GET_ITEM(run, 1));
        unsigned long long high = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(run, 2));
        if (PyErr_Occurred()) { /* negative, or 2**64 and more: the array refuses it */
            PyErr_Clear();
            goto outside;
        }
        Py_ssize_t stop = end - 1 > first ? end - 1 : first;
        uint64_t last = 0;
        int has_last = 0; /* the reference's -1: no column yet */
        for (Py_ssize_t r = first; r < stop; r++) {
            const uint64_t *row = flat + r * width;
            if (!has_last || row[3] != last) {
                if (row[3] > 0xFFFFFFFFu) goto outside; /* array("I") refuses it */
                out_addr[m] = row[0];
                out_value[m++] = (uint32_t)row[3];
                last = row[3];
                has_last = 1;
            }
        }
        out_addr[m] = high;
        out_value[m++] = NO_COLUMN;
    }
    result = Py_BuildValue("(y#y#)", (const char *)out_addr, m * (Py_ssize_t)sizeof(uint64_t),
                           (const char *)out_value, m * (Py_ssize_t)sizeof(uint32_t));
    goto done;
outside:
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(out_addr);
    PyMem_Free(out_value);
    PyBuffer_Release(&view);
    return result;
}

/* ---- a worker's functions from its flat arrays (dwarf_units._rebuild_functions) */

typedef struct {
    const void *buf;
    Py_ssize_t len; /* items */
} Column;

/* `view` as items of `size` bytes; 0 when its length is not a multiple. */
static int column_of(const Py_buffer *view, Py_ssize_t size, Column *out) {
    if (view->len % size) return 0;
    out->buf = view->buf;
    out->len = view->len / size;
    return 1;
}

/* list[index] (a new reference), or NULL with no exception when out of range. */
static PyObject *item_at(PyObject *list, uint64_t index) {
    if (index >= (uint64_t)PyList_GET_SIZE(list)) return NULL;
    return Py_NewRef(PyList_GET_ITEM(list, (Py_ssize_t)index));
}

typedef struct {
    PyObject *children; /* borrowed: the node holds it */
    uint64_t awaited;
} OpenNode;

/* One tree from nodes[*at]: name, call file, call line, child count, range
 * count, the ranges' pairs; depth first. NULL with no exception: out of
 * bounds (the reference runs). */
static PyObject *read_tree(const uint64_t *nodes, Py_ssize_t count, Py_ssize_t *at,
                           PyObject *strings, PyObject *files, PyObject *inline_type) {
    OpenNode *open = NULL;
    size_t depth = 0, cap = 0;
    PyObject *root = NULL;
    for (;;) {
        Py_ssize_t i = *at;
        if (count - i < 5) goto out_of_bounds;
        uint64_t name = nodes[i], call_file = nodes[i + 1], call_line = nodes[i + 2];
        uint64_t child_count = nodes[i + 3], range_count = nodes[i + 4];
        i += 5;
        if (range_count > (uint64_t)(count - i) / 2) goto out_of_bounds;
        PyObject *name_obj = item_at(strings, name);
        PyObject *file_obj = name_obj ? item_at(files, call_file) : NULL;
        if (file_obj == NULL) {
            Py_XDECREF(name_obj);
            goto out_of_bounds;
        }
        PyObject *ranges = PyList_New((Py_ssize_t)range_count);
        PyObject *line_obj = ranges ? PyLong_FromUnsignedLongLong(call_line) : NULL;
        PyObject *children = line_obj ? PyList_New(0) : NULL;
        for (uint64_t r = 0; children != NULL && r < range_count; r++) {
            PyObject *pair = Py_BuildValue("(KK)", (unsigned long long)nodes[i],
                                           (unsigned long long)nodes[i + 1]);
            i += 2;
            if (pair == NULL) Py_CLEAR(children);
            else PyList_SET_ITEM(ranges, (Py_ssize_t)r, pair);
        }
        PyObject *node = NULL;
        if (children != NULL) {
            PyObject *argv[5] = {name_obj, ranges, file_obj, line_obj, children};
            node = PyObject_Vectorcall(inline_type, argv, 5, NULL);
        }
        Py_DECREF(name_obj);
        Py_DECREF(file_obj);
        Py_XDECREF(ranges);
        Py_XDECREF(line_obj);
        if (node == NULL) {
            Py_XDECREF(children);
            goto fail;
        }
        *at = i;
        if (depth) {
            OpenNode *parent = &open[depth - 1];
            int appended = PyList_Append(parent->children, node);
            Py_DECREF(node);
            if (appended < 0) {
                Py_DECREF(children);
                goto fail;
            }
            if (--parent->awaited == 0) depth--;
        } else {
            root = node;
        }
        if (child_count) {
            if (depth == cap) {
                size_t grown_cap = cap ? cap * 2 : 16;
                OpenNode *grown = PyMem_Realloc(open, grown_cap * sizeof(OpenNode));
                if (grown == NULL) {
                    Py_DECREF(children);
                    PyErr_NoMemory();
                    goto fail;
                }
                open = grown;
                cap = grown_cap;
            }
            open[depth].children = children; /* the node, held by the tree, keeps it */
            open[depth].awaited = child_count;
            depth++;
        }
        Py_DECREF(children);
        if (!depth) {
            PyMem_Free(open);
            return root;
        }
    }
out_of_bounds:
fail:
    PyMem_Free(open);
    Py_XDECREF(root);
    return NULL;
}

static PyObject *rebuild_functions(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer views[9] = {{0}};
    PyObject *strings, *files, *function_type, *inline_type, *entry_type, *result = NULL;
    PyObject *out = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*O!O!OOO!:rebuild_functions", &views[0],
                          &views[1], &views[2], &views[3], &views[4], &views[5], &views[6],
                          &views[7], &views[8], &PyList_Type, &strings, &PyList_Type, &files,
                          &function_type, &inline_type, &PyType_Type, &entry_type))
        return NULL;
    /* starts Q, sizes Q, names I, row_counts q, row_addrs Q, row_files I,
     * row_lines I, node_counts I, nodes Q */
    static const Py_ssize_t sizes_of[9] = {8, 8, 4, 8, 8, 4, 4, 4, 8};
    Column col[9];
    for (int k = 0; k < 9; k++)
        if (!column_of(&views[k], sizes_of[k], &col[k])) goto outside;
    PyTypeObject *entry = (PyTypeObject *)entry_type;
    if (!PyType_IsSubtype(entry, &PyTuple_Type)) goto outside;
    Py_ssize_t n = col[0].len;
    if (col[1].len != n || col[2].len != n || col[3].len != n || col[7].len != n) goto outside;
    if (col[5].len != col[4].len || col[6].len != col[4].len) goto outside;
    const uint64_t *starts = col[0].buf, *sizes = col[1].buf, *row_addrs = col[4].buf;
    const uint64_t *nodes = col[8].buf;
    const uint32_t *names = col[2].buf, *row_files = col[5].buf, *row_lines = col[6].buf;
    const uint32_t *node_counts = col[7].buf;
    const int64_t *row_counts = col[3].buf;
    Py_ssize_t rows_total = col[4].len, row = 0, at = 0;
    if ((out = PyList_New(n)) == NULL) goto done;
    for (Py_ssize_t f = 0; f < n; f++) {
        PyObject *line_table = NULL, *tree = NULL;
        int64_t count = row_counts[f];
        if (count >= 0) {
            if (count > rows_total - row) goto outside;
            if ((line_table = PyList_New((Py_ssize_t)count)) == NULL) goto done;
            for (int64_t r = 0; r < count; r++, row++) {
                PyObject *file = item_at(files, row_files[row]);
                if (file == NULL) {
                    Py_DECREF(line_table);
                    goto outside;
                }
                PyObject *e = new_entry(entry, row_addrs[row], file, row_lines[row]);
                Py_DECREF(file);
                if (e == NULL) {
                    Py_DECREF(line_table);
                    goto done;
                }
                PyList_SET_ITEM(line_table, (Py_ssize_t)r, e);
            }
        }
        if (node_counts[f]) {
            tree = read_tree(nodes, col[8].len, &at, strings, files, inline_type);
            if (tree == NULL) {
                Py_XDECREF(line_table);
                if (PyErr_Occurred()) goto done;
                goto outside;
            }
        }
        PyObject *name = item_at(strings, names[f]);
        PyObject *start = name ? PyLong_FromUnsignedLongLong(starts[f]) : NULL;
        PyObject *size = start ? PyLong_FromUnsignedLongLong(sizes[f]) : NULL;
        PyObject *info = NULL;
        if (size != NULL) {
            PyObject *argv[5] = {start, size, name, line_table ? line_table : Py_None,
                                 tree ? tree : Py_None};
            info = PyObject_Vectorcall(function_type, argv, 5, NULL);
        }
        int missing_name = name == NULL && !PyErr_Occurred();
        Py_XDECREF(name);
        Py_XDECREF(start);
        Py_XDECREF(size);
        Py_XDECREF(line_table);
        Py_XDECREF(tree);
        if (info == NULL) {
            if (missing_name) goto outside;
            goto done;
        }
        PyList_SET_ITEM(out, f, info);
    }
    result = Py_NewRef(out);
    goto done;
outside:
    if (!PyErr_Occurred()) result = Py_NewRef(Py_None);
done:
    Py_XDECREF(out);
    for (int k = 0; k < 9; k++) PyBuffer_Release(&views[k]);
    return result;
}

/* ---- a worker's functions into flat arrays (dwarf_units._flatten_functions) -- */

typedef struct {
    char *data;
    size_t len, cap;
} Bytes;

static int bytes_put(Bytes *b, const void *item, size_t size) {
    if (b->len + size > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + size) cap *= 2;
        char *grown = PyMem_Realloc(b->data, cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, item, size);
    b->len += size;
    return 0;
}

/* An int in [0, limit] into *out; 0 with no exception when it is not one
 * (the array the reference appends to would refuse it), -1 on error. */
static int read_uint(PyObject *value, uint64_t limit, uint64_t *out) {
    if (!PyLong_Check(value)) return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(value);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        PyErr_Clear();
        return 0;
    }
    if (v > limit) return 0;
    *out = v;
    return 1;
}

static int put_u64(Bytes *b, uint64_t v) { return bytes_put(b, &v, 8); }
static int put_u32(Bytes *b, uint32_t v) { return bytes_put(b, &v, 4); }

/* The attribute `name` of `obj` read as a uint of at most `limit`; 1, 0 (not
 * one: the reference runs) or -1. */
static int attr_uint(PyObject *obj, PyObject *name, uint64_t limit, uint64_t *out) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) return -1;
    int ok = read_uint(value, limit, out);
    Py_DECREF(value);
    return ok;
}

static PyObject *s_start, *s_size, *s_name, *s_line_table, *s_inline, *s_ranges, *s_call_file,
    *s_call_line, *s_children;

enum { MAX_FLAT_DEPTH = 10000 };

/* `node` and its subtree, depth first (see dwarf_units._Chunk), into `nodes`;
 * with `extras_out`, each node below the root adds its NodeExtra from
 * `extras` (by id) or `no_extra`, as a plain tuple. Returns 1, 0 (the
 * reference runs) or -1. */
static int flatten_node(PyObject *node, Bytes *nodes, uint64_t *count, int depth,
                        PyObject *extras, PyObject *extras_out, PyObject *no_extra) {
    if (depth > MAX_FLAT_DEPTH) return 0;
    uint64_t name, call_file, call_line;
    int ok = attr_uint(node, s_name, UINT64_MAX, &name);
    if (ok == 1) ok = attr_uint(node, s_call_file, UINT64_MAX, &call_file);
    if (ok == 1) ok = attr_uint(node, s_call_line, UINT64_MAX, &call_line);
    if (ok != 1) return ok;
    PyObject *children = PyObject_GetAttr(node, s_children);
    PyObject *ranges = children ? PyObject_GetAttr(node, s_ranges) : NULL;
    if (ranges == NULL) {
        Py_XDECREF(children);
        return -1;
    }
    ok = 0;
    if (!PyList_Check(children) || !PyList_Check(ranges)) goto done;
    (*count)++;
    Py_ssize_t nranges = PyList_GET_SIZE(ranges);
    ok = -1;
    if (put_u64(nodes, name) || put_u64(nodes, call_file) || put_u64(nodes, call_line) ||
        put_u64(nodes, (uint64_t)PyList_GET_SIZE(children)) || put_u64(nodes, (uint64_t)nranges))
        goto done;
    for (Py_ssize_t r = 0; r < nranges; r++) {
        PyObject *pair = PyList_GET_ITEM(ranges, r);
        uint64_t low, high;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            ok = 0;
            goto done;
        }
        ok = read_uint(PyTuple_GET_ITEM(pair, 0), UINT64_MAX, &low);
        if (ok == 1) ok = read_uint(PyTuple_GET_ITEM(pair, 1), UINT64_MAX, &high);
        if (ok != 1) goto done;
        ok = -1;
        if (put_u64(nodes, low) || put_u64(nodes, high)) goto done;
    }
    if (extras_out != NULL && depth > 0) {
        PyObject *key = PyLong_FromVoidPtr(node);
        PyObject *extra = key ? PyDict_GetItemWithError(extras, key) : NULL; /* borrowed */
        Py_XDECREF(key);
        if (extra == NULL && PyErr_Occurred()) goto done;
        PyObject *plain = PySequence_Tuple(extra ? extra : no_extra);
        if (plain == NULL || PyList_Append(extras_out, plain) < 0) {
            Py_XDECREF(plain);
            goto done;
        }
        Py_DECREF(plain);
    }
    ok = 1;
    for (Py_ssize_t c = 0; ok == 1 && c < PyList_GET_SIZE(children); c++) {
        PyObject *child = Py_NewRef(PyList_GET_ITEM(children, c));
        ok = flatten_node(child, nodes, count, depth + 1, extras, extras_out, no_extra);
        Py_DECREF(child);
    }
done:
    Py_DECREF(children);
    Py_DECREF(ranges);
    return ok;
}

static PyObject *flatten_functions(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *functions, *roots, *extras, *no_extra, *result = NULL, *extras_lists = NULL;
    if (!PyArg_ParseTuple(args, "O!OOO:flatten_functions", &PyList_Type, &functions, &roots,
                          &extras, &no_extra))
        return NULL;
    int with_extras = roots != Py_None;
    if (with_extras && (!PyDict_Check(roots) || !PyDict_Check(extras))) {
        PyErr_SetString(PyExc_TypeError, "roots and nodes must be dicts (or None)");
        return NULL;
    }
    /* starts Q, sizes Q, names I, row_counts q, row_addrs Q, row_files I,
     * row_lines I, node_counts I, nodes Q */
    Bytes out[9];
    memset(out, 0, sizeof out);
    if (with_extras && (extras_lists = PyList_New(0)) == NULL) goto done;
    for (Py_ssize_t f = 0; f < PyList_GET_SIZE(functions); f++) {
        PyObject *info = PyList_GET_ITEM(functions, f);
        uint64_t start, size, name;
        int ok = attr_uint(info, s_start, UINT64_MAX, &start);
        if (ok == 1) ok = attr_uint(info, s_size, UINT64_MAX, &size);
        if (ok == 1) ok = attr_uint(info, s_name, UINT32_MAX, &name);
        if (ok == 0) goto outside;
        if (ok < 0) goto done;
        if (put_u64(&out[0], start) || put_u64(&out[1], size) || put_u32(&out[2], (uint32_t)name))
            goto done;
        PyObject *rows = PyObject_GetAttr(info, s_line_table);
        if (rows == NULL) goto done;
        if (rows == Py_None) {
            Py_DECREF(rows);
            if (put_u64(&out[3], (uint64_t)-1)) goto done;
        } else {
            if (!PyList_Check(rows)) {
                Py_DECREF(rows);
                goto outside;
            }
            Py_ssize_t n = PyList_GET_SIZE(rows);
            ok = put_u64(&out[3], (uint64_t)n) ? -1 : 1;
            for (Py_ssize_t r = 0; ok == 1 && r < n; r++) {
                PyObject *row = PyList_GET_ITEM(rows, r);
                uint64_t addr, file, line;
                if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 3) {
                    ok = 0;
                    break;
                }
                ok = read_uint(PyTuple_GET_ITEM(row, 0), UINT64_MAX, &addr);
                if (ok == 1) ok = read_uint(PyTuple_GET_ITEM(row, 1), UINT32_MAX, &file);
                if (ok == 1) ok = read_uint(PyTuple_GET_ITEM(row, 2), UINT32_MAX, &line);
                if (ok == 1 && (put_u64(&out[4], addr) || put_u32(&out[5], (uint32_t)file) ||
                                put_u32(&out[6], (uint32_t)line)))
                    ok = -1;
            }
            Py_DECREF(rows);
            if (ok == 0) goto outside;
            if (ok < 0) goto done;
        }
        PyObject *extra_nodes = NULL; /* this function's list, when it has a root */
        if (with_extras) {
            PyObject *key = PyLong_FromVoidPtr(info);
            PyObject *root = key ? PyDict_GetItemWithError(roots, key) : NULL; /* borrowed */
            Py_XDECREF(key);
            if (root == NULL && PyErr_Occurred()) goto done;
            PyObject *list = PyList_New(0);
            if (list == NULL) goto done;
            if (root != NULL) {
                PyObject *plain = PySequence_Tuple(root);
                if (plain == NULL || PyList_Append(list, plain) < 0) {
                    Py_XDECREF(plain);
                    Py_DECREF(list);
                    goto done;
                }
                Py_DECREF(plain);
                extra_nodes = list;
            }
            int appended = PyList_Append(extras_lists, list);
            Py_DECREF(list); /* extras_lists holds it */
            if (appended < 0) goto done;
        }
        PyObject *tree = PyObject_GetAttr(info, s_inline);
        if (tree == NULL) goto done;
        uint64_t count = 0;
        ok = tree == Py_None ? 1
                             : flatten_node(tree, &out[8], &count, 0, extras, extra_nodes,
                                            no_extra);
        Py_DECREF(tree);
        if (ok == 1 && count > UINT32_MAX) ok = 0;
        if (ok == 0) goto outside;
        if (ok < 0 || put_u32(&out[7], (uint32_t)count)) goto done;
    }
    result = PyTuple_New(10);
    if (result == NULL) goto done;
    for (int k = 0; k < 9; k++) {
        PyObject *data = PyBytes_FromStringAndSize(out[k].data ? out[k].data : "",
                                                   (Py_ssize_t)out[k].len);
        if (data == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyTuple_SET_ITEM(result, k, data);
    }
    PyTuple_SET_ITEM(result, 9, with_extras ? Py_NewRef(extras_lists) : Py_NewRef(Py_None));
    goto done;
outside:
    if (!PyErr_Occurred()) result = Py_NewRef(Py_None);
done:
    for (int k = 0; k < 9; k++) PyMem_Free(out[k].data);
    Py_XDECREF(extras_lists);
    return result;
}

static PyMethodDef methods[] = {
    {"inline_ranges", inline_ranges, METH_VARARGS,
     "inline_ranges(call, parent, all_parent) -> (all_ranges, ranges, uncontained) | None: "
     "from_dwarf.UnitConverter._inline's ranges of an inlined call: its own merged, those "
     "its parent node holds, and how many are in no range of the parent DIE. None: the "
     "reference runs (values that are not 64-bit pairs)."},
    {"line_entries", line_entries, METH_VARARGS,
     "line_entries(flat, width, runs, low, high, cache, file_index, warn, entry) -> (rows, "
     "seen): from_dwarf.UnitConverter._line_table's loop over the DWARF rows of [low, high)."},
    {"flatten_functions", flatten_functions, METH_VARARGS,
     "flatten_functions(functions, roots, nodes, no_extra) -> (starts, sizes, names, "
     "row_counts, row_addrs, row_files, row_lines, node_counts, nodes, extras) | None: "
     "dwarf_units._flatten_functions, a worker's FunctionInfos as the bytes of _Chunk's "
     "arrays (host order) and the extras' plain tuples. None: the reference runs (a value "
     "an array cannot hold, a record of another shape)."},
    {"rebuild_functions", rebuild_functions, METH_VARARGS,
     "rebuild_functions(starts, sizes, names, row_counts, row_addrs, row_files, row_lines, "
     "node_counts, nodes, strings, files, function, inline, entry) -> list | None: "
     "dwarf_units._rebuild_functions, a worker's flat arrays back into FunctionInfos with "
     "global string and file indexes. None: the reference runs (an index or a count "
     "outside the arrays)."},
    {"column_runs", column_runs, METH_VARARGS,
     "column_runs(flat, width, runs) -> (addresses, columns) as bytes (host order) | None: "
     "the loop of from_dwarf.UnitConverter._collect_columns over the (first, end, high) "
     "sequences `runs` of a flat row store. None: the reference runs (a run outside the "
     "store, a column or an end the arrays cannot hold)."},
    {"column_points", column_points, METH_VARARGS,
     "column_points(addresses, columns) -> (addresses, columns) as bytes (host order): "
     "sorted stably by address, without points that repeat the column before them."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "stackmark._native._gsym_convert",
    "The DWARF-to-GSYM converter's row loops in C (see stackmark.formats.gsym.from_dwarf).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__gsym_convert(void)
{
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_invalid_file, "Invalid file index in DWARF line table");
    INTERN(s_between_rows, "Start address lies between valid Row table entries");
    INTERN(s_duplicate, "Duplicate line table detected");
    INTERN(s_not_increasing, "Non-monotonically increasing addresses");
    INTERN(s_start, "start");
    INTERN(s_size, "size");
    INTERN(s_name, "name");
    INTERN(s_line_table, "line_table");
    INTERN(s_inline, "inline");
    INTERN(s_ranges, "ranges");
    INTERN(s_call_file, "call_file");
    INTERN(s_call_line, "call_line");
    INTERN(s_children, "children");
#undef INTERN
    return PyModule_Create(&module_def);
}
