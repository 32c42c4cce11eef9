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
 *   convert_functions(functions, out, tools, unit_tools) -> True | None
 *                     UnitConverter.convert's loop (_convert_function): a unit's
 *                     FunctionInfos, their line tables (_row_runs and the row
 *                     loop below) and inline trees (inline_tree's code)
 *   inline_tree(calls, root, all_ranges, tools) -> True | None
 *                     UnitConverter._inline's whole recursion for one function
 *                     range: the InlineInfo tree under `root`, NodeExtras,
 *                     names from the origin cache, strings, files, warnings
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
#include <structmember.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "slots.h"

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

/* The state of UnitConverter._line_table's loop across a function's runs. */
typedef struct {
    PyObject *rows, *last_file, *first_file;
    uint64_t first_addr, first_line, prev_addr, last_line;
    int seen, has_prev, stop_all;
} RowLoop;

static void row_loop_clear(RowLoop *st) {
    Py_CLEAR(st->rows);
    Py_CLEAR(st->last_file);
    Py_CLEAR(st->first_file);
}

/* Rows [first, stop) of the flat store through the loop; 0, or -1 on error. */
static int row_loop_run(RowLoop *st, const uint64_t *flat, Py_ssize_t width, Py_ssize_t first,
                        Py_ssize_t stop, uint64_t low, uint64_t high, PyObject *cache,
                        PyObject *file_index, PyObject *warn, PyTypeObject *type) {
    for (Py_ssize_t r = first; r < stop; r++) {
        const uint64_t *row = flat + r * width;
        uint64_t addr = row[0], line = row[2] & 0xFFFFFFFFu;
        int end_sequence = row[5] != 0;
        st->seen = 1;
        PyObject *key = PyLong_FromUnsignedLongLong(row[1]);
        if (key == NULL)
            return -1;
        PyObject *file = PyDict_GetItemWithError(cache, key); /* borrowed */
        if (file == Py_None) /* `cache.get` gives None: a miss there too */
            file = NULL;
        Py_XINCREF(file);
        if (file == NULL && !PyErr_Occurred())
            file = PyObject_CallOneArg(file_index, key);
        Py_DECREF(key);
        if (file == NULL)
            return -1;
        if (file == Py_None) {
            Py_DECREF(file);
            if (warn_with(warn, s_invalid_file) < 0)
                return -1;
            continue;
        }
        uint64_t row_addr = addr;
        if (addr < low) {
            if (warn_with(warn, s_between_rows) < 0) {
                Py_DECREF(file);
                return -1;
            }
            row_addr = low;
        } else if (addr >= high) {
            Py_DECREF(file);
            continue;
        }
        if (st->has_prev && addr < st->prev_addr) {
            int duplicate = PyList_GET_SIZE(st->rows) && st->first_addr == row_addr
                && st->first_line == line;
            if (duplicate && (duplicate = same(st->first_file, file)) < 0) {
                Py_DECREF(file);
                return -1;
            }
            Py_DECREF(file);
            if (warn_with(warn, duplicate ? s_duplicate : s_not_increasing) < 0)
                return -1;
            st->stop_all = 1;
            return 0;
        }
        int repeat = 0;
        if (st->last_file != NULL && line == st->last_line
            && (repeat = same(file, st->last_file)) < 0) {
            Py_DECREF(file);
            return -1;
        }
        if (repeat) {
            Py_DECREF(file);
            continue;
        }
        if (end_sequence) {
            st->has_prev = 0;
            Py_DECREF(file);
            continue;
        }
        PyObject *entry = new_entry(type, row_addr, file, line);
        if (entry == NULL || PyList_Append(st->rows, entry) < 0) {
            Py_XDECREF(entry);
            Py_DECREF(file);
            return -1;
        }
        Py_DECREF(entry);
        if (PyList_GET_SIZE(st->rows) == 1) {
            st->first_addr = row_addr;
            st->first_line = line;
            Py_INCREF(file);
            st->first_file = file;
        }
        Py_XSETREF(st->last_file, file); /* takes the reference */
        st->last_line = line;
        st->has_prev = 1;
        st->prev_addr = addr;
    }
    return 0;
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
    PyObject *result = NULL;
    RowLoop st = {0};
    if (width < 6 || view.len % 8 || !PyType_IsSubtype(type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_ValueError, "a flat row store of uint64 and a tuple type expected");
        goto done;
    }
    const uint64_t *flat = view.buf;
    Py_ssize_t nrows = view.len / 8 / width;
    if ((st.rows = PyList_New(0)) == NULL)
        goto done;
    for (Py_ssize_t run = 0; run < PyList_GET_SIZE(runs) && !st.stop_all; run++) {
        PyObject *pair = PyList_GET_ITEM(runs, run);
        Py_ssize_t first, stop;
        if (!PyTuple_Check(pair) || !PyArg_ParseTuple(pair, "nn", &first, &stop))
            goto fail_type;
        if (first < 0 || stop > nrows || first > stop) {
            PyErr_SetString(PyExc_IndexError, "a row run lies outside the row store");
            goto done;
        }
        if (row_loop_run(&st, flat, width, first, stop, low, high, cache, file_index, warn,
                         type) < 0)
            goto done;
    }
    result = Py_BuildValue("(OO)", st.rows, st.seen ? Py_True : Py_False);
    goto done;
fail_type:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "row runs must be (first, stop) pairs");
done:
    row_loop_clear(&st);
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

/* ---- a function's inline tree (UnitConverter._inline, the whole recursion) -- */

/* The slots of DieFunction the kernels read and of InlineInfo they set, as
 * its __init__ sets them (stackmark/_native/slots.h). */
enum { DIE_RANGES, DIE_CHILDREN, DIE_ORIGIN, DIE_CALL_FILE, DIE_CALL_LINE, DIE_CALL_COLUMN,
       DIE_SLOTS };
enum { INFO_NAME, INFO_RANGES, INFO_CALL_FILE, INFO_CALL_LINE, INFO_CHILDREN, INFO_SLOTS };
static const char *const die_slot_names[DIE_SLOTS] = {
    "ranges", "children", "origin", "call_file_here", "call_line", "call_column"};
static const char *const info_slot_names[INFO_SLOTS] = {"name", "ranges", "call_file",
                                                        "call_line", "children"};

static SlotMap die_slots, info_slots;

typedef struct {
    PyTypeObject *die, *info, *extra;
    PyObject *origin_names, *names_of, *strings, *insert_string, *file_cache, *file_index;
    PyObject *warn, *extras, *reference;
} Tools;

/* An inline node as its children see it: the InlineInfo, its ranges (merged,
 * those its own parent holds), the call's ranges merged (`all_parent_ranges`
 * of the reference) and, made when the reference first needs it, those as a
 * list. */
typedef struct {
    PyObject *node, *children;
    const Spans *kept, *all;
    PyObject *all_list;
} Parent;

enum { MAX_TREE_DEPTH = 200 }; /* deeper subtrees go to the reference (bounded C stack) */

static PyObject *s_uncontained, *s_invalid_call_file, *s_call_file_attr, *no_file, *zero;

/* from_dwarf.UnitConverter._inline for `call`, as the reference. */
static int tree_reference(const Tools *t, PyObject *call, Parent *parent) {
    if (parent->all_list == NULL && (parent->all_list = spans_list(parent->all)) == NULL)
        return -1;
    PyObject *argv[3] = {call, parent->node, parent->all_list};
    PyObject *r = PyObject_Vectorcall(t->reference, argv, 3, NULL);
    Py_XDECREF(r);
    return r == NULL ? -1 : 0;
}

/* `found` unpacked into three borrowed items, as `a, b, c = found` does. */
static PyObject *three(PyObject *found) {
    PyObject *items = PySequence_Tuple(found);
    if (items != NULL && PyTuple_GET_SIZE(items) != 3) {
        if (PyTuple_GET_SIZE(items) > 3)
            PyErr_SetString(PyExc_ValueError, "too many values to unpack (expected 3)");
        else
            PyErr_Format(PyExc_ValueError, "not enough values to unpack (expected 3, got %zd)",
                         PyTuple_GET_SIZE(items));
        Py_CLEAR(items);
    }
    return items;
}

/* The node's ranges as a list: the call's own (start, end) tuples when it
 * keeps them all as they are (the usual single range), else new ones. */
static PyObject *kept_ranges(const Spans *kept, const Spans *own, PyObject *own_list) {
    if (kept->len != own->len || PyList_GET_SIZE(own_list) != (Py_ssize_t)own->len ||
        memcmp(kept->items, own->items, kept->len * sizeof(Span)) != 0)
        return spans_list(kept);
    PyObject *out = PyList_New((Py_ssize_t)kept->len);
    for (Py_ssize_t i = 0; out != NULL && i < (Py_ssize_t)kept->len; i++)
        PyList_SET_ITEM(out, i, Py_NewRef(PyList_GET_ITEM(own_list, i)));
    return out;
}

/* UnitConverter.names_of(die): an origin's answer from the cache, else the
 * method; a new reference to a 3-tuple. */
static PyObject *names_of(const Tools *t, PyObject *die, PyObject *origin) {
    PyObject *names = NULL;
    if (origin != Py_None) {
        names = PyDict_GetItemWithError(t->origin_names, origin);
        if (names == NULL && PyErr_Occurred()) return NULL;
        if (names == Py_None) names = NULL;
        Py_XINCREF(names);
    }
    if (names == NULL && (names = PyObject_CallOneArg(t->names_of, die)) == NULL) return NULL;
    if (!PyTuple_CheckExact(names) || PyTuple_GET_SIZE(names) != 3) Py_SETREF(names, three(names));
    return names;
}

/* `None if text is None else sink.insert_string(text)`: a string the sink
 * holds costs a dict lookup. A new reference. */
static PyObject *string_of(const Tools *t, PyObject *text) {
    if (text == Py_None) return Py_NewRef(Py_None);
    PyObject *name = t->strings == Py_None ? NULL : PyDict_GetItemWithError(t->strings, text);
    if (name == NULL && PyErr_Occurred()) return NULL;
    if (name != NULL && PyLong_CheckExact(name)) return Py_NewRef(name);
    return PyObject_CallOneArg(t->insert_string, text);
}

static int tree_call(const Tools *t, PyObject *call, Parent *parent, int depth);

/* The inline node of `call` under `parent`: 0 done (kept, dropped or left to
 * the reference), -1 a Python error. */
static int tree_call(const Tools *t, PyObject *call, Parent *parent, int depth) {
    if (!Py_IS_TYPE(call, t->die) || depth > MAX_TREE_DEPTH) return tree_reference(t, call, parent);
    PyObject *ranges = SLOT(call, die_slots, DIE_RANGES);
    PyObject *children = SLOT(call, die_slots, DIE_CHILDREN);
    PyObject *origin = SLOT(call, die_slots, DIE_ORIGIN);
    PyObject *own_file = SLOT(call, die_slots, DIE_CALL_FILE);
    PyObject *line = SLOT(call, die_slots, DIE_CALL_LINE);
    PyObject *column = SLOT(call, die_slots, DIE_CALL_COLUMN);
    if (ranges == NULL || children == NULL || origin == NULL || own_file == NULL ||
        line == NULL || column == NULL || !PyList_CheckExact(children) || !PyLong_Check(line) ||
        !PyLong_Check(column))
        return tree_reference(t, call, parent);
    /* Held, so that no callback can free them under the kernel: it reads the
     * call's slots once (names_of, insert_string and file_index only read it). */
    Py_INCREF(ranges);
    Py_INCREF(children);
    Py_INCREF(origin);
    Py_INCREF(own_file);
    Py_INCREF(line);
    Py_INCREF(column);
    Spans own, all, kept;
    spans_init(&own);
    spans_init(&all);
    spans_init(&kept);
    int status = -1;
    PyObject *names = NULL, *name = NULL, *dwarf_file = NULL, *file = NULL, *node = NULL;
    PyObject *kept_list = NULL;
    int read = spans_read(ranges, &own);
    if (read != 1) {
        if (read == 0) status = tree_reference(t, call, parent);
        goto done;
    }
    /* UnitConverter._inline_ranges */
    for (size_t i = 0; i < own.len; i++) {
        if (own.items[i].start < own.items[i].end &&
            !spans_insert(&all, own.items[i].start, own.items[i].end))
            goto no_memory;
    }
    for (size_t i = 0; i < all.len; i++) {
        uint64_t start = all.items[i].start, end = all.items[i].end;
        if (spans_contain(parent->kept, start, end)) {
            if (!spans_insert(&kept, start, end)) goto no_memory;
        } else if (!spans_contain(parent->all, start, end) && warn_with(t->warn, s_uncontained) < 0) {
            goto done;
        }
    }
    if (kept.len == 0) {
        status = 0;
        goto done;
    }
    if ((kept_list = kept_ranges(&kept, &own, ranges)) == NULL) goto done;
    if ((names = names_of(t, call, origin)) == NULL) goto done;
    PyObject *linkage = PyTuple_GET_ITEM(names, 1), *short_name = PyTuple_GET_ITEM(names, 2);
    if ((name = string_of(t, PyTuple_GET_ITEM(names, 0))) == NULL) goto done;
    if (name == Py_None) Py_SETREF(name, Py_NewRef(zero)); /* `0 if name is None` */
    /* _call_file: DW_AT_call_file when an int in the DIE, else found recursively */
    if (PyLong_Check(own_file)) {
        dwarf_file = Py_NewRef(own_file);
    } else if ((dwarf_file = PyObject_GetAttr(call, s_call_file_attr)) == NULL) {
        goto done;
    } else if (dwarf_file == Py_None) {
        Py_SETREF(dwarf_file, Py_NewRef(no_file));
    }
    /* file_index: the converter's cache, else the method (which fills it) */
    file = PyDict_GetItemWithError(t->file_cache, dwarf_file);
    if (file == NULL && PyErr_Occurred()) goto done;
    if (file == Py_None) file = NULL;
    Py_XINCREF(file);
    if (file == NULL && (file = PyObject_CallOneArg(t->file_index, dwarf_file)) == NULL) goto done;
    if (file == Py_None) {
        status = warn_with(t->warn, s_invalid_call_file);
        goto done;
    }
    unsigned long long masked = PyLong_AsUnsignedLongLongMask(line); /* `& 0xFFFFFFFF` */
    if (masked == (unsigned long long)-1 && PyErr_Occurred()) goto done;
    PyObject *line_obj; /* an exact int the mask leaves alone is kept as it is */
    unsigned long long exact = PyLong_CheckExact(line) ? PyLong_AsUnsignedLongLong(line) : 0;
    int keep = PyLong_CheckExact(line) && !PyErr_Occurred() && exact <= 0xFFFFFFFFull;
    PyErr_Clear(); /* negative, or 2**64 and more: masked below */
    if (keep)
        line_obj = Py_NewRef(line);
    else
        line_obj = PyLong_FromUnsignedLongLong(masked & 0xFFFFFFFFull);
    PyObject *node_children = line_obj ? PyList_New(0) : NULL;
    node = node_children ? t->info->tp_alloc(t->info, 0) : NULL;
    if (node == NULL) {
        Py_XDECREF(line_obj);
        Py_XDECREF(node_children);
        goto done;
    }
    SLOT(node, info_slots, INFO_NAME) = Py_NewRef(name);
    SLOT(node, info_slots, INFO_RANGES) = Py_NewRef(kept_list);
    SLOT(node, info_slots, INFO_CALL_FILE) = Py_NewRef(file);
    SLOT(node, info_slots, INFO_CALL_LINE) = line_obj;
    SLOT(node, info_slots, INFO_CHILDREN) = node_children;
    if (t->extras != Py_None) {
        PyObject *extra = t->extra->tp_alloc(t->extra, 3);
        PyObject *key = extra ? PyLong_FromVoidPtr(node) : NULL;
        int stored = -1;
        if (key != NULL) {
            PyTuple_SET_ITEM(extra, 0, Py_NewRef(linkage));
            PyTuple_SET_ITEM(extra, 1, Py_NewRef(short_name));
            PyTuple_SET_ITEM(extra, 2, Py_NewRef(column));
            stored = PyDict_SetItem(t->extras, key, extra);
        }
        Py_XDECREF(extra);
        Py_XDECREF(key);
        if (stored < 0) goto done;
    }
    Parent self = {node, node_children, &kept, &all, NULL};
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(children); i++) {
        PyObject *child = Py_NewRef(PyList_GET_ITEM(children, i));
        int r = tree_call(t, child, &self, depth + 1);
        Py_DECREF(child);
        if (r < 0) {
            Py_XDECREF(self.all_list);
            goto done;
        }
    }
    Py_XDECREF(self.all_list);
    status = PyList_Append(parent->children, node);
    goto done;
no_memory:
    PyErr_NoMemory();
done:
    Py_XDECREF(names);
    Py_XDECREF(name);
    Py_XDECREF(dwarf_file);
    Py_XDECREF(file);
    Py_XDECREF(node);
    Py_XDECREF(kept_list);
    Py_DECREF(ranges);
    Py_DECREF(children);
    Py_DECREF(origin);
    Py_DECREF(own_file);
    Py_DECREF(line);
    Py_DECREF(column);
    spans_free(&own);
    spans_free(&all);
    spans_free(&kept);
    return status;
}

/* The tools tuple (see inline_tree's docstring): 1, 0 when the classes are
 * not of the shape the kernel reads (the reference runs), -1 on error. */
static int tools_read(PyObject *tools_tuple, Tools *t) {
    PyObject *die, *info, *extra;
    if (!PyArg_ParseTuple(tools_tuple, "O!O!O!O!OOOO!OOOO:inline_tree tools", &PyType_Type, &die,
                          &PyType_Type, &info, &PyType_Type, &extra, &PyDict_Type,
                          &t->origin_names, &t->names_of, &t->strings, &t->insert_string,
                          &PyDict_Type, &t->file_cache, &t->file_index, &t->warn, &t->extras,
                          &t->reference))
        return -1;
    t->die = (PyTypeObject *)die;
    t->info = (PyTypeObject *)info;
    t->extra = (PyTypeObject *)extra;
    if ((t->strings != Py_None && !PyDict_CheckExact(t->strings)) ||
        (t->extras != Py_None && !PyDict_Check(t->extras)) ||
        !PyType_IsSubtype(t->extra, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "inline_tree: tools of the wrong kinds");
        return -1;
    }
    int mapped = slot_map(&die_slots, t->die, die_slot_names, DIE_SLOTS);
    if (mapped == 1) mapped = slot_map(&info_slots, t->info, info_slot_names, INFO_SLOTS);
    return mapped;
}

/* A new InlineInfo(name, ranges) with no children, as its __init__ makes it. */
static PyObject *new_root(const Tools *t, PyObject *name, PyObject *ranges) {
    PyObject *children = PyList_New(0);
    PyObject *node = children ? t->info->tp_alloc(t->info, 0) : NULL;
    if (node == NULL) {
        Py_XDECREF(children);
        return NULL;
    }
    SLOT(node, info_slots, INFO_NAME) = Py_NewRef(name);
    SLOT(node, info_slots, INFO_RANGES) = Py_NewRef(ranges);
    SLOT(node, info_slots, INFO_CALL_FILE) = Py_NewRef(zero);
    SLOT(node, info_slots, INFO_CALL_LINE) = Py_NewRef(zero);
    SLOT(node, info_slots, INFO_CHILDREN) = children;
    return node;
}

static PyObject *inline_tree(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *calls, *root, *all_list, *tools_tuple;
    if (!PyArg_ParseTuple(args, "O!OOO!:inline_tree", &PyList_Type, &calls, &root, &all_list,
                          &PyTuple_Type, &tools_tuple))
        return NULL;
    Tools t;
    int mapped = tools_read(tools_tuple, &t);
    if (mapped != 1) return mapped < 0 ? NULL : Py_NewRef(Py_None);
    if (!Py_IS_TYPE(root, t.info)) Py_RETURN_NONE;
    PyObject *root_ranges = SLOT(root, info_slots, INFO_RANGES);
    PyObject *root_children = SLOT(root, info_slots, INFO_CHILDREN);
    if (root_ranges == NULL || root_children == NULL || !PyList_Check(root_children))
        Py_RETURN_NONE;
    Spans kept, all;
    spans_init(&kept);
    spans_init(&all);
    PyObject *result = NULL;
    int read = spans_read(root_ranges, &kept);
    if (read == 1) read = spans_read(all_list, &all);
    if (read != 1) {
        if (read == 0) result = Py_NewRef(Py_None); /* before any effect: the reference runs */
        goto done;
    }
    Py_INCREF(root_children);
    Parent parent = {root, root_children, &kept, &all, Py_NewRef(all_list)};
    int status = 0;
    for (Py_ssize_t i = 0; status == 0 && i < PyList_GET_SIZE(calls); i++) {
        PyObject *call = Py_NewRef(PyList_GET_ITEM(calls, i));
        status = tree_call(&t, call, &parent, 1);
        Py_DECREF(call);
    }
    Py_DECREF(parent.all_list);
    Py_DECREF(root_children);
    if (status == 0) result = Py_NewRef(Py_True);
done:
    spans_free(&kept);
    spans_free(&all);
    return result;
}

/* ---- a unit's functions (UnitConverter.convert's loop, _convert_function) --- */

typedef struct {
    int64_t low, high, first, end; /* below 2**62: no overflow in the arithmetic */
} Seq;

typedef struct {
    Py_ssize_t first, stop;
} Run;

/* bisect_right over the addresses of rows [lo, hi) of the flat store. */
static int64_t bisect_rows(const uint64_t *flat, Py_ssize_t width, uint64_t x, int64_t lo,
                           int64_t hi) {
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (x < flat[mid * width]) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* from_dwarf._row_runs for [low, high) into runs (room for n); the count, or
 * -1 when a bisection would read outside the store (the reference runs). */
static Py_ssize_t row_runs(const Seq *seqs, size_t n, const uint64_t *flat, Py_ssize_t width,
                           int64_t nrows, uint64_t low, uint64_t high, Run *runs) {
    size_t lo = 0, hi = n;
    while (lo < hi) { /* bisect_right(highs, low) */
        size_t mid = (lo + hi) / 2;
        if (low < (uint64_t)seqs[mid].high) hi = mid;
        else lo = mid + 1;
    }
    size_t i = lo;
    Py_ssize_t count = 0;
    if (i == n || !((uint64_t)seqs[i].low <= low)) return 0;
    int first = 1;
    for (; i < n && (uint64_t)seqs[i].low < high; i++) {
        const Seq *seq = &seqs[i];
        int64_t from = seq->first + 1, to = seq->end - 1;
        if (from < to && (to > nrows)) return -1;
        int64_t start = seq->first, stop = seq->end;
        if (first) {
            start = bisect_rows(flat, width, low, from, to) - 1;
            first = 0;
        }
        if ((uint64_t)seq->low <= high - 1 && high - 1 < (uint64_t)seq->high)
            stop = bisect_rows(flat, width, high - 1, from, to);
        runs[count].first = (Py_ssize_t)start;
        runs[count].stop = (Py_ssize_t)stop;
        count++;
    }
    return count;
}

typedef struct {
    const Tools *t;
    PyObject *out, *function_type, *entry_type, *is_valid, *roots, *line_table, *decl_line_table;
    int text_mode; /* 0: ask `is_valid`; 1: every address is text; 2: those in `text` */
    Spans text;    /* GsymCreator.text_ranges, when the checker is the creator's */
    PyObject *reference;
    uint64_t highest;
    const uint64_t *flat; /* NULL: line tables through `line_table` */
    Py_ssize_t width;
    int64_t nrows;
    Seq *seqs;
    size_t nseqs;
    Run *runs; /* room for nseqs */
} Functions;

static PyObject *s_no_name, *s_outside;

/* The line table of [low, high): the flat store's rows by the compiled loop
 * (with the declaration's row when there are none), else the method. A new
 * reference (None: no table). */
static PyObject *function_lines(const Functions *f, PyObject *function, uint64_t low,
                                uint64_t high, PyObject *low_obj, PyObject *high_obj) {
    Py_ssize_t count = f->flat == NULL ? -1
                                       : row_runs(f->seqs, f->nseqs, f->flat, f->width, f->nrows,
                                                  low, high, f->runs);
    for (Py_ssize_t r = 0; r < count; r++)
        if (f->runs[r].first < 0 || f->runs[r].stop > f->nrows || f->runs[r].first > f->runs[r].stop)
            count = -1;
    if (count < 0) {
        PyObject *argv[3] = {function, low_obj, high_obj};
        return PyObject_Vectorcall(f->line_table, argv, 3, NULL);
    }
    RowLoop st = {0};
    if ((st.rows = PyList_New(0)) == NULL) return NULL;
    for (Py_ssize_t r = 0; r < count && !st.stop_all; r++) {
        if (row_loop_run(&st, f->flat, f->width, f->runs[r].first, f->runs[r].stop, low, high,
                         f->t->file_cache, f->t->file_index, f->t->warn,
                         (PyTypeObject *)f->entry_type) < 0) {
            row_loop_clear(&st);
            return NULL;
        }
    }
    PyObject *result;
    if (!st.seen) {
        PyObject *argv[2] = {function, low_obj};
        result = PyObject_Vectorcall(f->decl_line_table, argv, 2, NULL);
    } else {
        result = Py_NewRef(PyList_GET_SIZE(st.rows) ? st.rows : Py_None);
    }
    row_loop_clear(&st);
    return result;
}

/* UnitConverter._convert_function; 0, or -1 on a Python error. */
static int convert_function(const Functions *f, PyObject *function) {
    const Tools *t = f->t;
    PyObject *ranges = NULL, *children = NULL, *origin = NULL;
    if (Py_IS_TYPE(function, t->die)) {
        ranges = SLOT(function, die_slots, DIE_RANGES);
        children = SLOT(function, die_slots, DIE_CHILDREN);
        origin = SLOT(function, die_slots, DIE_ORIGIN);
    }
    if (ranges == NULL || children == NULL || origin == NULL || !PyList_CheckExact(ranges) ||
        !PyList_CheckExact(children)) {
        PyObject *argv[2] = {function, f->out};
        PyObject *r = PyObject_Vectorcall(f->reference, argv, 2, NULL);
        Py_XDECREF(r);
        return r == NULL ? -1 : 0;
    }
    if (PyList_GET_SIZE(ranges) == 0) return 0;
    Spans raw, all;
    spans_init(&raw);
    spans_init(&all);
    int read = spans_read(ranges, &raw);
    if (read != 1) {
        spans_free(&raw);
        if (read < 0) return -1;
        PyObject *argv[2] = {function, f->out};
        PyObject *r = PyObject_Vectorcall(f->reference, argv, 2, NULL);
        Py_XDECREF(r);
        return r == NULL ? -1 : 0;
    }
    Py_INCREF(children);
    Py_INCREF(origin);
    int status = -1;
    PyObject *names = NULL, *name = NULL;
    if ((names = names_of(t, function, origin)) == NULL) goto done;
    PyObject *linkage = PyTuple_GET_ITEM(names, 1), *short_name = PyTuple_GET_ITEM(names, 2);
    if ((name = string_of(t, PyTuple_GET_ITEM(names, 0))) == NULL) goto done;
    if (name == Py_None) {
        status = warn_with(t->warn, s_no_name);
        goto done;
    }
    for (size_t i = 0; i < raw.len; i++) { /* from_dwarf._merged */
        if (raw.items[i].start < raw.items[i].end &&
            !spans_insert(&all, raw.items[i].start, raw.items[i].end)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (size_t i = 0; i < raw.len; i++) {
        uint64_t low = raw.items[i].start, high = raw.items[i].end;
        if (low >= high || low == f->highest) break;
        PyObject *low_obj = PyLong_FromUnsignedLongLong(low);
        int truth = low_obj == NULL ? -1 : f->text_mode == 1;
        if (low_obj != NULL && f->text_mode == 2) { /* GsymCreator.is_valid_text_address */
            for (size_t k = 0; !truth && k < f->text.len; k++)
                truth = f->text.items[k].start <= low && low < f->text.items[k].end;
        } else if (low_obj != NULL && f->text_mode == 0) {
            PyObject *valid = PyObject_CallOneArg(f->is_valid, low_obj);
            truth = valid ? PyObject_IsTrue(valid) : -1;
            Py_XDECREF(valid);
        }
        if (truth <= 0) {
            Py_XDECREF(low_obj);
            if (truth == 0) status = low != 0 ? warn_with(t->warn, s_outside) : 0;
            goto done;
        }
        PyObject *high_obj = PyLong_FromUnsignedLongLong(high);
        PyObject *lines = Py_NewRef(Py_None), *inline_root = Py_NewRef(Py_None);
        if (high_obj != NULL && f->line_table != Py_None)
            Py_SETREF(lines, function_lines(f, function, low, high, low_obj, high_obj));
        int ok = high_obj != NULL && lines != NULL;
        if (ok && PyList_GET_SIZE(children) > 0) {
            PyObject *pair = PyTuple_Pack(2, low_obj, high_obj);
            PyObject *root_ranges = pair ? PyList_New(1) : NULL;
            if (root_ranges != NULL) PyList_SET_ITEM(root_ranges, 0, Py_NewRef(pair));
            Py_XDECREF(pair);
            PyObject *root = root_ranges ? new_root(t, name, root_ranges) : NULL;
            Py_XDECREF(root_ranges);
            ok = root != NULL;
            if (ok) {
                Spans own;
                spans_init(&own);
                own.items[0].start = low;
                own.items[0].end = high;
                own.len = 1;
                PyObject *root_children = SLOT(root, info_slots, INFO_CHILDREN);
                Parent parent = {root, root_children, &own, &all, NULL};
                for (Py_ssize_t c = 0; ok && c < PyList_GET_SIZE(children); c++) {
                    PyObject *call = Py_NewRef(PyList_GET_ITEM(children, c));
                    ok = tree_call(t, call, &parent, 1) == 0;
                    Py_DECREF(call);
                }
                Py_XDECREF(parent.all_list);
                if (ok && PyList_GET_SIZE(root_children) > 0) Py_SETREF(inline_root, root);
                else Py_DECREF(root);
            }
        }
        PyObject *size_obj = ok ? PyLong_FromUnsignedLongLong(high - low) : NULL;
        PyObject *info = NULL;
        if (size_obj != NULL) {
            PyObject *argv[5] = {low_obj, size_obj, name, lines, inline_root};
            info = PyObject_Vectorcall(f->function_type, argv, 5, NULL);
        }
        Py_XDECREF(low_obj);
        Py_XDECREF(high_obj);
        Py_XDECREF(size_obj);
        Py_XDECREF(lines);
        Py_XDECREF(inline_root);
        if (info == NULL) goto done;
        if (f->roots != Py_None) {
            PyObject *extra = t->extra->tp_alloc(t->extra, 3);
            PyObject *key = extra ? PyLong_FromVoidPtr(info) : NULL;
            int stored = -1;
            if (key != NULL) {
                PyTuple_SET_ITEM(extra, 0, Py_NewRef(linkage));
                PyTuple_SET_ITEM(extra, 1, Py_NewRef(short_name));
                PyTuple_SET_ITEM(extra, 2, Py_NewRef(zero));
                stored = PyDict_SetItem(f->roots, key, extra);
            }
            Py_XDECREF(extra);
            Py_XDECREF(key);
            if (stored < 0) {
                Py_DECREF(info);
                goto done;
            }
        }
        int appended = PyList_Append(f->out, info);
        Py_DECREF(info);
        if (appended < 0) goto done;
    }
    status = 0;
done:
    Py_XDECREF(names);
    Py_XDECREF(name);
    Py_DECREF(children);
    Py_DECREF(origin);
    spans_free(&raw);
    spans_free(&all);
    return status;
}

/* Reads a unit's sequences (Sequence tuples: low, high, first, end); 0 when
 * one is of another shape or its values reach 2**62 (the method runs). */
static int read_seqs(PyObject *sequences, Seq **out, size_t *count) {
    Py_ssize_t n = PyList_GET_SIZE(sequences);
    Seq *seqs = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Seq));
    if (seqs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *seq = PyList_GET_ITEM(sequences, i);
        int64_t v[4];
        if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != 4) goto other;
        for (int k = 0; k < 4; k++) {
            PyObject *item = PyTuple_GET_ITEM(seq, k);
            if (!PyLong_CheckExact(item)) goto other;
            int overflow;
            long long value = PyLong_AsLongLongAndOverflow(item, &overflow);
            if (value == -1 && PyErr_Occurred()) {
                PyMem_Free(seqs);
                return -1;
            }
            if (overflow || value < 0 || value >= ((long long)1 << 62)) goto other;
            v[k] = value;
        }
        seqs[i].low = v[0];
        seqs[i].high = v[1];
        seqs[i].first = v[2];
        seqs[i].end = v[3];
    }
    *out = seqs;
    *count = (size_t)n;
    return 1;
other:
    PyMem_Free(seqs);
    return 0;
}

static PyObject *convert_functions(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *functions, *out, *tools_tuple, *unit_tools, *highest, *flat_obj, *sequences;
    PyObject *text_known, *text_ranges;
    if (!PyArg_ParseTuple(args, "O!O!O!O!:convert_functions", &PyList_Type, &functions,
                          &PyList_Type, &out, &PyTuple_Type, &tools_tuple, &PyTuple_Type,
                          &unit_tools))
        return NULL;
    Tools t;
    int mapped = tools_read(tools_tuple, &t);
    if (mapped != 1) return mapped < 0 ? NULL : Py_NewRef(Py_None);
    Functions f = {0};
    f.t = &t;
    f.out = out;
    if (!PyArg_ParseTuple(unit_tools, "OO!OOOOOOOnOOO:convert_functions unit tools",
                          &f.function_type, &PyType_Type, &f.entry_type, &f.is_valid,
                          &text_known, &text_ranges, &highest, &f.roots, &f.line_table, &flat_obj,
                          &f.width, &sequences, &f.decl_line_table, &f.reference))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)f.entry_type, &PyTuple_Type) ||
        (f.roots != Py_None && !PyDict_Check(f.roots))) {
        PyErr_SetString(PyExc_TypeError, "convert_functions: unit tools of the wrong kinds");
        return NULL;
    }
    if (!PyLong_CheckExact(highest)) Py_RETURN_NONE;
    f.highest = PyLong_AsUnsignedLongLong(highest);
    if (f.highest == (uint64_t)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Py_buffer view = {0};
    int have_view = 0;
    PyObject *result = NULL;
    spans_init(&f.text);
    int known = PyObject_IsTrue(text_known);
    if (known < 0) goto done;
    if (known && text_ranges == Py_None) {
        f.text_mode = 1;
    } else if (known) {
        int read = spans_read(text_ranges, &f.text);
        if (read < 0) goto done;
        if (read == 1) f.text_mode = 2;
    }
    if (flat_obj != Py_None && f.line_table != Py_None && PyList_Check(sequences)) {
        if (PyObject_GetBuffer(flat_obj, &view, PyBUF_SIMPLE) < 0) return NULL;
        have_view = 1;
        int read = 0;
        if (f.width >= 6 && view.len % 8 == 0 && view.len / 8 / f.width < ((int64_t)1 << 62))
            read = read_seqs(sequences, &f.seqs, &f.nseqs);
        if (read < 0) goto done;
        if (read == 1) {
            f.flat = view.buf;
            f.nrows = (int64_t)(view.len / 8 / f.width);
            f.runs = PyMem_Malloc((f.nseqs ? f.nseqs : 1) * sizeof(Run));
            if (f.runs == NULL) {
                PyErr_NoMemory();
                goto done;
            }
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(functions); i++) {
        PyObject *function = Py_NewRef(PyList_GET_ITEM(functions, i));
        int r = convert_function(&f, function);
        Py_DECREF(function);
        if (r < 0) goto done;
    }
    result = Py_NewRef(Py_True);
done:
    spans_free(&f.text);
    PyMem_Free(f.seqs);
    PyMem_Free(f.runs);
    if (have_view) PyBuffer_Release(&view);
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
    {"convert_functions", convert_functions, METH_VARARGS,
     "convert_functions(functions, out, tools, unit_tools) -> True | None: "
     "from_dwarf.UnitConverter.convert's loop, _convert_function for each of a unit's "
     "walked `functions` into `out` (FunctionInfos, line tables from the flat row store, "
     "inline trees as inline_tree builds them, extras' roots). tools: inline_tree's. "
     "unit_tools: (FunctionInfo, LineEntry, is_valid_text_address, text_known, "
     "text_ranges | None, highest, roots | None, "
     "line_table | None, flat | None, width, sequences | None, decl_line_table, reference). "
     "None, before any effect: the reference runs; a function it does not take is handed "
     "to `reference` in place, a line table it cannot read to `line_table`. With "
     "text_known (the checker is GsymCreator's), its text_ranges are read here instead "
     "of calling it (None: every address is text)."},
    {"inline_tree", inline_tree, METH_VARARGS,
     "inline_tree(calls, root, all_ranges, tools) -> True | None: the inline tree of one "
     "function range, as from_dwarf.UnitConverter._inline builds it for each of `calls` under "
     "`root` (InlineInfo nodes, NodeExtras, strings, files and warnings in the same order). "
     "tools: (DieFunction, InlineInfo, NodeExtra, origin_names, names_of, strings | None, "
     "insert_string, file_cache, file_index, warn, extras_nodes | None, reference). "
     "None, before any effect: the reference runs (ranges that are not 64-bit pairs, classes "
     "of another shape); a call it does not take is handed to `reference` in place."},
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
    INTERN(s_uncontained, "Function DIE has uncontained address range");
    INTERN(s_invalid_call_file, "Inlined function die has invlaid file index in DW_AT_call_file");
    INTERN(s_call_file_attr, "call_file");
    INTERN(s_no_name, "Function has no name");
    INTERN(s_outside, "Address range starts outside executable section");
#undef INTERN
    if ((no_file = PyLong_FromLong(0xFFFFFFFFL)) == NULL || (zero = PyLong_FromLong(0)) == NULL)
        return NULL;
    return PyModule_Create(&module_def);
}
