/* The address index of a GSYM extras file, built in C: the compiled twin of
 * the bounds, states and paths that `stackmark.formats.gsym.extras.
 * ExtrasBuilder.add_functions` makes (`_add_group`, `_index_function`,
 * `_paint`, `_bound`).
 *
 *   index_functions(functions, indexed, column_address, column_value)
 *       -> (bound_address, bound_state, state_function, state_file,
 *           state_line, state_column, state_path, path_first, path_node)
 *          as bytes in the host's byte order, or None
 *
 *   node_tables(functions, nodes, node_type)
 *       -> (strings, strtab, first_node, linkage, name, call_file, call_line,
 *           call_column), or None
 *
 * the compiled twin of `ExtrasBuilder._add_nodes` over every function into an
 * empty builder: `strings` (text -> offset) and `strtab` (a bytearray) are the
 * builder's string table, the others u32 tables as bytes in the host's byte
 * order (`first_node` without its leading 0).
 *
 * `indexed[k]` is nonzero when function k has extras nodes (DWARF).
 * The Python builder is the reference and says why each step is what it is.
 * This code takes what the converter makes: lists of tuples of ints within
 * 0..2^64-1, lines and files within u32, inline trees without shared nodes.
 * For anything else it returns None before any result exists, and the
 * caller runs the Python builder, which then answers (or fails) as always.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sorting.h"

#define NO_STATE 0xFFFFFFFFu
#define NO_COLUMN 0xFFFFFFFFu
#define MAX_TREE_NODES (1 << 24)

/* Results: OK, FAILED (a Python exception is set), REFERENCE (input this
   code does not take: the Python builder must do the work). */
#define OK 0
#define FAILED (-1)
#define REFERENCE 1

/* -- growable arrays ------------------------------------------------------- */

#define VEC(name, type)                                                              \
    typedef struct { type *v; Py_ssize_t n, cap; } name;                             \
    static int name##_push(name *a, type x)                                          \
    {                                                                                \
        if (a->n == a->cap) {                                                        \
            Py_ssize_t cap = a->cap ? a->cap * 2 : 64;                               \
            type *v = PyMem_Realloc(a->v, sizeof(type) * (size_t)cap);               \
            if (v == NULL) {                                                         \
                PyErr_NoMemory();                                                    \
                return FAILED;                                                       \
            }                                                                        \
            a->v = v;                                                                \
            a->cap = cap;                                                            \
        }                                                                            \
        a->v[a->n++] = x;                                                            \
        return OK;                                                                   \
    }

VEC(U64s, uint64_t)
VEC(U32s, uint32_t)

typedef struct { uint64_t start, end; } Range;
VEC(Ranges, Range)

typedef struct { PyObject *node; uint32_t index; } NodeIndex;
VEC(NodeIndexes, NodeIndex)

typedef struct {
    uint64_t start, end;
    Py_ssize_t path, path_len; /* in the function's path pool */
    int64_t path_id;           /* -1: not looked up yet */
} Segment;
VEC(Segments, Segment)

typedef struct {
    PyObject *node;
    Py_ssize_t path, path_len;     /* in the path pool */
    Py_ssize_t region, region_len; /* in the range pool */
} Work;
VEC(Works, Work)

typedef struct { uint64_t addr, file, line; } Row;
VEC(Rows, Row)

/* Everything one call builds, and the scratch space reused per function. */
typedef struct {
    /* results */
    U64s bound_address;
    U32s bound_state, state_function, state_file, state_line, state_column, state_path;
    U32s path_first, path_node;
    PyObject *paths; /* tuple of node indexes -> path id */
    /* scratch */
    NodeIndexes tree;
    Ranges pool, claimed;
    U32s path_pool;
    Segments segments;
    Works work;
    Rows rows;
    U64s points;
    uint64_t *scratch; /* for sorting the points */
    Py_ssize_t scratch_cap;
    uint32_t *table; /* open addressing: state ids + 1 (0: free) */
    Py_ssize_t table_cap, table_used; /* allocated; in use for this function */
    const uint64_t *column_address;
    const uint32_t *column_value;
    Py_ssize_t ncolumns;
} Index;

static PyObject *s_start, *s_size, *s_line_table, *s_inline, *s_ranges, *s_children;
static PyObject *s_call_file, *s_call_line;

/* -- reading the records ----------------------------------------------------- */

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

/* Appends the ranges list `list` ((start, end) tuples) to `out`. */
static int
read_ranges(PyObject *list, Ranges *out)
{
    if (!PyList_CheckExact(list))
        return REFERENCE;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
        PyObject *r = PyList_GET_ITEM(list, i);
        Range range;
        if (!PyTuple_Check(r) || PyTuple_GET_SIZE(r) != 2
            || as_u64(PyTuple_GET_ITEM(r, 0), &range.start) != OK
            || as_u64(PyTuple_GET_ITEM(r, 1), &range.end) != OK)
            return REFERENCE;
        if (Ranges_push(out, range) < 0)
            return FAILED;
    }
    return OK;
}

static int
children_of(PyObject *node, PyObject **out)
{
    int rc = attribute(node, s_children, out);
    if (rc == OK && !PyList_CheckExact(*out)) {
        Py_DECREF(*out);
        return REFERENCE;
    }
    return rc;
}

static int
compare_nodes(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const NodeIndex *)a)->node;
    uintptr_t y = (uintptr_t)((const NodeIndex *)b)->node;
    return (x > y) - (x < y);
}

/* The tree's nodes with their depth-first indexes (extras._tree_nodes), sorted
   by object address for `index_of`; a node met twice goes to the reference. */
static int
number_nodes(Index *ix, PyObject *root)
{
    ix->tree.n = 0;
    ix->work.n = 0;
    Work first = {root, 0, 0, 0, 0};
    if (Works_push(&ix->work, first) < 0)
        return FAILED;
    while (ix->work.n) {
        PyObject *node = ix->work.v[--ix->work.n].node;
        NodeIndex entry = {node, (uint32_t)ix->tree.n};
        if (ix->tree.n >= MAX_TREE_NODES)
            return REFERENCE;
        if (NodeIndexes_push(&ix->tree, entry) < 0)
            return FAILED;
        PyObject *children;
        int rc = children_of(node, &children);
        if (rc != OK)
            return rc;
        for (Py_ssize_t i = PyList_GET_SIZE(children) - 1; i >= 0; i--) {
            Work w = {PyList_GET_ITEM(children, i), 0, 0, 0, 0};
            if (Works_push(&ix->work, w) < 0) {
                Py_DECREF(children);
                return FAILED;
            }
        }
        Py_DECREF(children); /* the tree keeps its nodes alive */
    }
    qsort(ix->tree.v, (size_t)ix->tree.n, sizeof(NodeIndex), compare_nodes);
    for (Py_ssize_t i = 1; i < ix->tree.n; i++)
        if (ix->tree.v[i].node == ix->tree.v[i - 1].node)
            return REFERENCE;
    return OK;
}

/* The depth-first index of `node`; REFERENCE if it was not numbered (a tree
   whose `children` give other objects on a second reading). */
static int
index_of(Index *ix, PyObject *node, uint32_t *out)
{
    NodeIndex key = {node, 0};
    NodeIndex *found = bsearch(&key, ix->tree.v, (size_t)ix->tree.n, sizeof(NodeIndex),
                               compare_nodes);
    if (found == NULL)
        return REFERENCE;
    *out = found->index;
    return OK;
}

/* -- painting (extras._paint) ------------------------------------------------ */

static int
add_segment(Index *ix, Range r, Py_ssize_t path, Py_ssize_t path_len)
{
    Segment s = {r.start, r.end, path, path_len, -1};
    return Segments_push(&ix->segments, s);
}

static const uint32_t *path_pool_base;

static int
compare_segments(const void *a, const void *b)
{
    const Segment *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    Py_ssize_t n = x->path_len < y->path_len ? x->path_len : y->path_len;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t p = path_pool_base[x->path + i], q = path_pool_base[y->path + i];
        if (p != q)
            return p < q ? -1 : 1;
    }
    return (x->path_len > y->path_len) - (x->path_len < y->path_len);
}

static int
paint(Index *ix, PyObject *root)
{
    int rc;
    ix->segments.n = ix->pool.n = ix->path_pool.n = ix->work.n = 0;
    PyObject *ranges;
    if ((rc = attribute(root, s_ranges, &ranges)) != OK)
        return rc;
    rc = read_ranges(ranges, &ix->pool);
    Py_DECREF(ranges);
    if (rc != OK)
        return rc;
    uint32_t root_index;
    if ((rc = index_of(ix, root, &root_index)) != OK)
        return rc;
    if (U32s_push(&ix->path_pool, root_index) < 0)
        return FAILED;
    Work first = {root, 0, 1, 0, ix->pool.n};
    if (Works_push(&ix->work, first) < 0)
        return FAILED;
    while (ix->work.n) {
        Work w = ix->work.v[--ix->work.n];
        /* `remaining` lives at the end of the pool from here on. */
        Py_ssize_t remaining = ix->pool.n;
        for (Py_ssize_t i = 0; i < w.region_len; i++)
            if (Ranges_push(&ix->pool, ix->pool.v[w.region + i]) < 0)
                return FAILED;
        Py_ssize_t nremaining = w.region_len;
        PyObject *children;
        if ((rc = children_of(w.node, &children)) != OK)
            return rc;
        for (Py_ssize_t c = 0; c < PyList_GET_SIZE(children) && nremaining; c++) {
            PyObject *child = PyList_GET_ITEM(children, c), *child_list;
            if ((rc = attribute(child, s_ranges, &child_list)) != OK)
                goto fail_children;
            ix->claimed.n = 0;
            rc = read_ranges(child_list, &ix->claimed);
            Py_DECREF(child_list);
            if (rc != OK)
                goto fail_children;
            Range *mine = ix->claimed.v; /* the child's ranges */
            Py_ssize_t nmine = ix->claimed.n;
            Py_ssize_t claimed = ix->pool.n, nclaimed = 0, left, nleft = 0;
            if (nmine == 1 && nremaining == 1) {
                Range b = ix->pool.v[remaining];
                uint64_t low = mine[0].start > b.start ? mine[0].start : b.start;
                uint64_t high = mine[0].end < b.end ? mine[0].end : b.end;
                if (low >= high)
                    continue;
                Range got = {low, high}, before = {b.start, low}, after = {high, b.end};
                if (Ranges_push(&ix->pool, got) < 0)
                    goto nomem;
                nclaimed = 1;
                left = ix->pool.n;
                if (before.start < before.end) {
                    if (Ranges_push(&ix->pool, before) < 0)
                        goto nomem;
                    nleft++;
                }
                if (after.start < after.end) {
                    if (Ranges_push(&ix->pool, after) < 0)
                        goto nomem;
                    nleft++;
                }
            } else {
                /* _intersect(child ranges, remaining) */
                Py_ssize_t i = 0, j = 0;
                while (i < nmine && j < nremaining) {
                    Range a = mine[i], b = ix->pool.v[remaining + j];
                    uint64_t lo = a.start > b.start ? a.start : b.start;
                    uint64_t hi = a.end < b.end ? a.end : b.end;
                    if (lo < hi) {
                        Range got = {lo, hi};
                        if (Ranges_push(&ix->pool, got) < 0)
                            goto nomem;
                        nclaimed++;
                    }
                    if (a.end < b.end)
                        i++;
                    else
                        j++;
                }
                if (!nclaimed)
                    continue;
                /* _subtract(remaining, claimed) */
                left = ix->pool.n;
                Py_ssize_t t = 0;
                for (Py_ssize_t r = 0; r < nremaining; r++) {
                    Range region = ix->pool.v[remaining + r];
                    uint64_t cursor = region.start;
                    while (t < nclaimed && ix->pool.v[claimed + t].end <= cursor)
                        t++;
                    for (Py_ssize_t k = t; k < nclaimed && ix->pool.v[claimed + k].start < region.end;
                         k++) {
                        Range taken = ix->pool.v[claimed + k];
                        if (taken.start > cursor) {
                            Range piece = {cursor, taken.start};
                            if (Ranges_push(&ix->pool, piece) < 0)
                                goto nomem;
                            nleft++;
                        }
                        if (taken.end > cursor)
                            cursor = taken.end;
                    }
                    if (cursor < region.end) {
                        Range piece = {cursor, region.end};
                        if (Ranges_push(&ix->pool, piece) < 0)
                            goto nomem;
                        nleft++;
                    }
                }
            }
            /* The child's work: its path is this node's plus its own index. */
            Py_ssize_t path = ix->path_pool.n;
            for (Py_ssize_t p = 0; p < w.path_len; p++)
                if (U32s_push(&ix->path_pool, ix->path_pool.v[w.path + p]) < 0)
                    goto nomem;
            uint32_t child_index;
            if ((rc = index_of(ix, child, &child_index)) != OK)
                goto fail_children;
            if (U32s_push(&ix->path_pool, child_index) < 0)
                goto nomem;
            Work next = {child, path, w.path_len + 1, claimed, nclaimed};
            if (Works_push(&ix->work, next) < 0)
                goto nomem;
            remaining = left;
            nremaining = nleft;
        }
        Py_DECREF(children);
        for (Py_ssize_t r = 0; r < nremaining; r++)
            if (add_segment(ix, ix->pool.v[remaining + r], w.path, w.path_len) < 0)
                return FAILED;
        continue;
    nomem:
        rc = FAILED;
    fail_children:
        Py_DECREF(children);
        return rc;
    }
    path_pool_base = ix->path_pool.v;
    qsort(ix->segments.v, (size_t)ix->segments.n, sizeof(Segment), compare_segments);
    return OK;
}

/* -- the index (extras.ExtrasBuilder) ---------------------------------------- */

static void
bound(Index *ix, uint64_t address, uint32_t state)
{
    /* Called only after `reserve_bound`: pushes cannot fail. */
    U64s *ba = &ix->bound_address;
    U32s *bs = &ix->bound_state;
    if (ba->n && ba->v[ba->n - 1] == address) {
        bs->v[bs->n - 1] = state;
        if (bs->n > 1 && bs->v[bs->n - 2] == state) {
            ba->n--;
            bs->n--;
        }
    } else if (!bs->n || bs->v[bs->n - 1] != state) {
        ba->v[ba->n++] = address;
        bs->v[bs->n++] = state;
    }
}

static int
reserve_bounds(Index *ix, Py_ssize_t extra)
{
    while (ix->bound_address.n + extra > ix->bound_address.cap) {
        Py_ssize_t cap = ix->bound_address.cap ? ix->bound_address.cap * 2 : 1024;
        uint64_t *a = PyMem_Realloc(ix->bound_address.v, sizeof(uint64_t) * (size_t)cap);
        if (a == NULL)
            goto nomem;
        ix->bound_address.v = a;
        uint32_t *s = PyMem_Realloc(ix->bound_state.v, sizeof(uint32_t) * (size_t)cap);
        if (s == NULL)
            goto nomem;
        ix->bound_state.v = s;
        ix->bound_address.cap = ix->bound_state.cap = cap;
    }
    return OK;
nomem:
    PyErr_NoMemory();
    return FAILED;
}

static Py_ssize_t
bisect_right(const uint64_t *a, Py_ssize_t n, uint64_t x)
{
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (x < a[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

#define U64_LESS(a, b) ((a) < (b))
NATURAL_MERGE_SORT(sort_u64, uint64_t, U64_LESS)

/* The path id of segment `s` (ExtrasBuilder._paths), assigned on first use. */
static int
path_id(Index *ix, Segment *s, uint32_t *out)
{
    if (s->path_id < 0) {
        PyObject *key = PyTuple_New(s->path_len);
        if (key == NULL)
            return FAILED;
        for (Py_ssize_t i = 0; i < s->path_len; i++) {
            PyObject *v = PyLong_FromUnsignedLong(ix->path_pool.v[s->path + i]);
            if (v == NULL) {
                Py_DECREF(key);
                return FAILED;
            }
            PyTuple_SET_ITEM(key, i, v);
        }
        PyObject *found = PyDict_GetItemWithError(ix->paths, key);
        if (found != NULL) {
            s->path_id = PyLong_AsLongLong(found);
        } else if (PyErr_Occurred()) {
            Py_DECREF(key);
            return FAILED;
        } else {
            Py_ssize_t id = PyDict_GET_SIZE(ix->paths);
            PyObject *value = PyLong_FromSsize_t(id);
            int bad = value == NULL || PyDict_SetItem(ix->paths, key, value) < 0;
            Py_XDECREF(value);
            for (Py_ssize_t i = 0; !bad && i < s->path_len; i++)
                bad = U32s_push(&ix->path_node, ix->path_pool.v[s->path + i]) < 0;
            if (bad || U32s_push(&ix->path_first, (uint32_t)ix->path_node.n) < 0) {
                Py_DECREF(key);
                return FAILED;
            }
            s->path_id = id;
        }
        Py_DECREF(key);
    }
    *out = (uint32_t)s->path_id;
    return OK;
}

static uint64_t
mix(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    uint64_t h = a * 0x9E3779B97F4A7C15ull;
    h = (h ^ b) * 0xC2B2AE3D27D4EB4Full;
    h = (h ^ c) * 0x165667B19E3779F9ull;
    h = (h ^ d) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

/* The state of (file, line, column, path) in function k, made when new; the
   states of one function never meet another's (k is part of the key). */
static int
state_of(Index *ix, uint32_t k, uint32_t file, uint32_t line,
         uint32_t column, uint32_t path, uint32_t *out)
{
    Py_ssize_t mask = ix->table_used - 1;
    for (Py_ssize_t slot = (Py_ssize_t)(mix(file, line, column, path) & (uint64_t)mask);;
         slot = (slot + 1) & mask) {
        uint32_t entry = ix->table[slot];
        if (entry == 0) {
            uint32_t state = (uint32_t)ix->state_function.n;
            if (U32s_push(&ix->state_function, k) < 0 || U32s_push(&ix->state_file, file) < 0
                || U32s_push(&ix->state_line, line) < 0
                || U32s_push(&ix->state_column, column) < 0
                || U32s_push(&ix->state_path, path) < 0)
                return FAILED;
            ix->table[slot] = state + 1;
            *out = state;
            return OK;
        }
        uint32_t s = entry - 1;
        if (ix->state_file.v[s] == file && ix->state_line.v[s] == line
            && ix->state_column.v[s] == column && ix->state_path.v[s] == path) {
            *out = s;
            return OK;
        }
    }
}

static int
index_function(Index *ix, uint32_t k, PyObject *info, uint64_t start, uint64_t size,
               uint64_t low, int has_high, uint64_t high)
{
    int rc;
    uint64_t end = has_high ? high : (start + size > low + 1 ? start + size : low + 1);
    /* rows */
    PyObject *lines, *tree;
    ix->rows.n = 0;
    if ((rc = attribute(info, s_line_table, &lines)) != OK)
        return rc;
    if (lines != Py_None) {
        if (!PyList_CheckExact(lines)) {
            Py_DECREF(lines);
            return REFERENCE;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lines); i++) {
            PyObject *entry = PyList_GET_ITEM(lines, i);
            Row row;
            if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3
                || as_u64(PyTuple_GET_ITEM(entry, 0), &row.addr) != OK
                || as_u64(PyTuple_GET_ITEM(entry, 1), &row.file) != OK
                || as_u64(PyTuple_GET_ITEM(entry, 2), &row.line) != OK
                || row.file > 0xFFFFFFFFu || row.line > 0xFFFFFFFFu) {
                Py_DECREF(lines);
                return REFERENCE;
            }
            if (Rows_push(&ix->rows, row) < 0) {
                Py_DECREF(lines);
                return FAILED;
            }
        }
    }
    Py_DECREF(lines);
    /* the inline tree's segments */
    ix->segments.n = 0;
    if ((rc = attribute(info, s_inline, &tree)) != OK)
        return rc;
    if (tree != Py_None) {
        rc = number_nodes(ix, tree);
        if (rc == OK)
            rc = paint(ix, tree);
    }
    Py_DECREF(tree);
    if (rc != OK)
        return rc;
    /* the points: where the row, the column or the path may change */
    Py_ssize_t c = bisect_right(ix->column_address, ix->ncolumns, low);
    Py_ssize_t c1 = end > low ? bisect_right(ix->column_address, ix->ncolumns, end - 1) : c;
    ix->points.n = 0;
    if (U64s_push(&ix->points, low) < 0)
        return FAILED;
    for (Py_ssize_t i = 0; i < ix->rows.n; i++)
        if (low < ix->rows.v[i].addr && ix->rows.v[i].addr < end
            && U64s_push(&ix->points, ix->rows.v[i].addr) < 0)
            return FAILED;
    for (Py_ssize_t i = 0; i < ix->segments.n; i++)
        if (low < ix->segments.v[i].start && ix->segments.v[i].start < end
            && U64s_push(&ix->points, ix->segments.v[i].start) < 0)
            return FAILED;
    for (Py_ssize_t i = c; i < c1; i++)
        if (U64s_push(&ix->points, ix->column_address[i]) < 0)
            return FAILED;
    /* rows, segments and columns: three ascending runs after `low` */
    if (ix->points.n > ix->scratch_cap) {
        uint64_t *scratch = PyMem_Realloc(ix->scratch, sizeof(uint64_t) * (size_t)ix->points.n);
        if (scratch == NULL) {
            PyErr_NoMemory();
            return FAILED;
        }
        ix->scratch = scratch;
        ix->scratch_cap = ix->points.n;
    }
    sort_u64(ix->points.v, (size_t)ix->points.n, ix->scratch);
    Py_ssize_t npoints = 0;
    for (Py_ssize_t i = 0; i < ix->points.n; i++)
        if (!npoints || ix->points.v[npoints - 1] != ix->points.v[i])
            ix->points.v[npoints++] = ix->points.v[i];
    /* a fresh state table for this function */
    Py_ssize_t cap = 16;
    while (cap < 2 * npoints)
        cap *= 2;
    if (cap > ix->table_cap) {
        uint32_t *table = PyMem_Realloc(ix->table, sizeof(uint32_t) * (size_t)cap);
        if (table == NULL) {
            PyErr_NoMemory();
            return FAILED;
        }
        ix->table = table;
        ix->table_cap = cap;
    }
    ix->table_used = cap;
    memset(ix->table, 0, sizeof(uint32_t) * (size_t)cap);
    if (reserve_bounds(ix, npoints) < 0)
        return FAILED;
    Py_ssize_t row_i = -1, seg_i = 0, nrows = ix->rows.n, nsegs = ix->segments.n;
    for (Py_ssize_t p = 0; p < npoints; p++) {
        uint64_t address = ix->points.v[p];
        while (row_i + 1 < nrows && ix->rows.v[row_i + 1].addr <= address)
            row_i++;
        while (c < ix->ncolumns && ix->column_address[c] <= address)
            c++;
        while (seg_i < nsegs && ix->segments.v[seg_i].end <= address)
            seg_i++;
        uint32_t path = 0;
        if (seg_i < nsegs && ix->segments.v[seg_i].start <= address
            && path_id(ix, &ix->segments.v[seg_i], &path) < 0)
            return FAILED;
        uint32_t value = c > 0 ? ix->column_value[c - 1] : NO_COLUMN;
        uint32_t file = 0, line = 0, column = NO_COLUMN, state;
        if (!(row_i < 0 || value == NO_COLUMN || ix->rows.v[row_i].file == 0)) {
            file = (uint32_t)ix->rows.v[row_i].file;
            line = (uint32_t)ix->rows.v[row_i].line;
            column = value;
        }
        if (state_of(ix, k, file, line, column, path, &state) < 0)
            return FAILED;
        bound(ix, address, state);
    }
    return OK;
}

/* ExtrasBuilder.add_functions' grouping (_add_group), for the bounds only. */
static int
index_all(Index *ix, PyObject *seq, const char *indexed)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    uint64_t *starts = PyMem_Malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    uint64_t *sizes = PyMem_Malloc(sizeof(uint64_t) * (size_t)(n ? n : 1));
    int rc = OK;
    if (starts == NULL || sizes == NULL) {
        PyErr_NoMemory();
        rc = FAILED;
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *start, *size;
        if ((rc = attribute(items[k], s_start, &start)) != OK)
            goto done;
        if ((rc = attribute(items[k], s_size, &size)) != OK) {
            Py_DECREF(start);
            goto done;
        }
        rc = as_u64(start, &starts[k]);
        if (rc == OK)
            rc = as_u64(size, &sizes[k]);
        Py_DECREF(start);
        Py_DECREF(size);
        if (rc == OK && sizes[k] > UINT64_MAX - starts[k])
            rc = REFERENCE; /* the end does not fit the u64 bounds */
        if (rc != OK)
            goto done;
    }
    if (n > (Py_ssize_t)0xFFFFFFFFu) {
        rc = REFERENCE;
        goto done;
    }
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t j = i;
        while (j < n && starts[j] == starts[i])
            j++;
        int has_region_end = j < n;
        uint64_t region_end = has_region_end ? starts[j] : 0;
        uint64_t start = starts[i], cursor = start;
        int open_ended = 0;
        for (Py_ssize_t k = i; k < j; k++) {
            int has_stop = 1;
            uint64_t stop;
            if (sizes[k] == 0) {
                has_stop = has_region_end;
                stop = region_end;
            } else {
                stop = start + sizes[k];
                if (has_region_end && region_end < stop)
                    stop = region_end;
            }
            if (has_stop && stop <= cursor)
                continue;
            if (indexed[k]) {
                if ((rc = index_function(ix, (uint32_t)k, items[k], starts[k], sizes[k], cursor,
                                         has_stop, stop)) != OK)
                    goto done;
            } else {
                if ((rc = reserve_bounds(ix, 1)) != OK)
                    goto done;
                bound(ix, cursor, NO_STATE);
            }
            if (!has_stop) {
                open_ended = 1;
                break;
            }
            cursor = stop;
        }
        if (!open_ended) {
            if ((rc = reserve_bounds(ix, 1)) != OK)
                goto done;
            bound(ix, cursor, NO_STATE);
        }
        i = j;
    }
done:
    PyMem_Free(starts);
    PyMem_Free(sizes);
    return rc;
}

static PyObject *
u64_bytes(U64s *a)
{
    return PyBytes_FromStringAndSize(a->v ? (const char *)a->v : "",
                                     a->n * (Py_ssize_t)sizeof(uint64_t));
}

static PyObject *
u32_bytes(U32s *a)
{
    return PyBytes_FromStringAndSize(a->v ? (const char *)a->v : "",
                                     a->n * (Py_ssize_t)sizeof(uint32_t));
}

static PyObject *
index_functions(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *functions, *result = NULL, *seq = NULL;
    Py_buffer indexed = {0}, addresses = {0}, values = {0};
    if (!PyArg_ParseTuple(args, "Oy*y*y*:index_functions", &functions, &indexed, &addresses,
                          &values))
        return NULL;
    Index ix;
    memset(&ix, 0, sizeof ix);
    if (addresses.len % 8 || values.len % 4 || addresses.len / 8 != values.len / 4) {
        PyErr_SetString(PyExc_ValueError, "column addresses and values differ in length");
        goto done;
    }
    if ((seq = PySequence_Fast(functions, "functions must be a sequence")) == NULL)
        goto done;
    if (indexed.len != PySequence_Fast_GET_SIZE(seq)) {
        PyErr_SetString(PyExc_ValueError, "one flag per function expected");
        goto done;
    }
    ix.column_address = addresses.buf;
    ix.column_value = values.buf;
    ix.ncolumns = addresses.len / 8;
    if ((ix.paths = PyDict_New()) == NULL)
        goto done;
    PyObject *empty = PyTuple_New(0), *zero = PyLong_FromLong(0);
    int bad = empty == NULL || zero == NULL || PyDict_SetItem(ix.paths, empty, zero) < 0;
    Py_XDECREF(empty);
    Py_XDECREF(zero);
    if (bad || U32s_push(&ix.path_first, 0) < 0 || U32s_push(&ix.path_first, 0) < 0)
        goto done;
    int rc = index_all(&ix, seq, indexed.buf);
    if (rc == FAILED)
        goto done;
    if (rc == REFERENCE) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = Py_BuildValue("(NNNNNNNNN)", u64_bytes(&ix.bound_address),
                           u32_bytes(&ix.bound_state), u32_bytes(&ix.state_function),
                           u32_bytes(&ix.state_file), u32_bytes(&ix.state_line),
                           u32_bytes(&ix.state_column), u32_bytes(&ix.state_path),
                           u32_bytes(&ix.path_first), u32_bytes(&ix.path_node));
done:
    PyMem_Free(ix.bound_address.v);
    PyMem_Free(ix.bound_state.v);
    PyMem_Free(ix.state_function.v);
    PyMem_Free(ix.state_file.v);
    PyMem_Free(ix.state_line.v);
    PyMem_Free(ix.state_column.v);
    PyMem_Free(ix.state_path.v);
    PyMem_Free(ix.path_first.v);
    PyMem_Free(ix.path_node.v);
    PyMem_Free(ix.tree.v);
    PyMem_Free(ix.pool.v);
    PyMem_Free(ix.claimed.v);
    PyMem_Free(ix.path_pool.v);
    PyMem_Free(ix.segments.v);
    PyMem_Free(ix.work.v);
    PyMem_Free(ix.rows.v);
    PyMem_Free(ix.points.v);
    PyMem_Free(ix.scratch);
    PyMem_Free(ix.table);
    Py_XDECREF(ix.paths);
    Py_XDECREF(seq);
    PyBuffer_Release(&indexed);
    PyBuffer_Release(&addresses);
    PyBuffer_Release(&values);
    return result;
}

/* -- the nodes' names and call sites (extras.ExtrasBuilder._add_nodes) -------- */

VEC(Chars, char)
VEC(Objects, PyObject *)

typedef struct {
    PyObject *strings; /* text -> offset in strtab */
    Chars strtab;
    U32s first_node, linkage, name, call_file, call_line, call_column;
    Objects stack; /* borrowed: the trees keep their nodes alive */
} NodeTables;

/* `_string`: 0 for None, else the text's offset in the table plus one. */
static int
intern_text(NodeTables *t, PyObject *text, uint32_t *out)
{
    if (text == Py_None) {
        *out = 0;
        return OK;
    }
    if (!PyUnicode_CheckExact(text))
        return REFERENCE;
    Py_ssize_t offset;
    PyObject *found = PyDict_GetItemWithError(t->strings, text);
    if (found != NULL) {
        offset = PyLong_AsSsize_t(found);
        if (offset < 0 && PyErr_Occurred())
            return FAILED;
    } else if (PyErr_Occurred()) {
        return FAILED;
    } else {
        PyObject *encoded = PyUnicode_AsEncodedString(text, "utf-8", "surrogateescape");
        if (encoded == NULL) {
            PyErr_Clear(); /* the reference raises the same UnicodeEncodeError */
            return REFERENCE;
        }
        offset = t->strtab.n;
        const char *bytes = PyBytes_AS_STRING(encoded);
        for (Py_ssize_t i = 0; i <= PyBytes_GET_SIZE(encoded); i++) /* with its NUL */
            if (Chars_push(&t->strtab, bytes[i]) < 0) {
                Py_DECREF(encoded);
                return FAILED;
            }
        Py_DECREF(encoded);
        PyObject *value = PyLong_FromSsize_t(offset);
        int bad = value == NULL || PyDict_SetItem(t->strings, text, value) < 0;
        Py_XDECREF(value);
        if (bad)
            return FAILED;
    }
    if ((uint64_t)offset >= 0xFFFFFFFFu)
        return REFERENCE; /* past what a u32 table holds */
    *out = (uint32_t)offset + 1;
    return OK;
}

/* A u32 attribute of an inline node (array("I") takes nothing else). */
static int
u32_attribute(PyObject *node, PyObject *name, uint32_t *out)
{
    PyObject *value;
    int rc = attribute(node, name, &value);
    if (rc != OK)
        return rc;
    uint64_t v;
    rc = as_u64(value, &v);
    Py_DECREF(value);
    if (rc == OK && v > 0xFFFFFFFFu)
        rc = REFERENCE;
    if (rc == OK)
        *out = (uint32_t)v;
    return rc;
}

/* One function's nodes: its extras (names, call column), and the call files and
   lines of its tree's first nodes after the root, in depth-first order. */
static int
function_nodes(NodeTables *t, PyObject *info, PyObject *extras, PyObject *node_type)
{
    if (!PyList_CheckExact(extras))
        return REFERENCE;
    Py_ssize_t count = PyList_GET_SIZE(extras);
    int rc;
    if (count) {
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *extra = PyList_GET_ITEM(extras, i);
            if (Py_TYPE(extra) != (PyTypeObject *)node_type || PyTuple_GET_SIZE(extra) != 3)
                return REFERENCE;
            uint32_t linkage, name;
            if ((rc = intern_text(t, PyTuple_GET_ITEM(extra, 0), &linkage)) != OK)
                return rc;
            if ((rc = intern_text(t, PyTuple_GET_ITEM(extra, 1), &name)) != OK)
                return rc;
            PyObject *column = PyTuple_GET_ITEM(extra, 2);
            if (!PyLong_Check(column))
                return REFERENCE;
            /* `& 0xFFFFFFFF` of any int: its low 32 bits in two's complement */
            unsigned long long low = PyLong_AsUnsignedLongLongMask(column);
            if (low == (unsigned long long)-1 && PyErr_Occurred())
                return FAILED;
            if (U32s_push(&t->linkage, linkage) < 0 || U32s_push(&t->name, name) < 0
                || U32s_push(&t->call_column, (uint32_t)(low & 0xFFFFFFFFu)) < 0)
                return FAILED;
        }
        PyObject *root;
        if ((rc = attribute(info, s_inline, &root)) != OK)
            return rc;
        Py_DECREF(root); /* the function keeps it alive */
        /* _depth_first(info.inline): the whole walk, as the reference reads it */
        Py_ssize_t seen = 0;
        t->stack.n = 0;
        if (U32s_push(&t->call_file, 0) < 0 || U32s_push(&t->call_line, 0) < 0)
            return FAILED;
        if (root != Py_None && Objects_push(&t->stack, root) < 0)
            return FAILED;
        while (t->stack.n) {
            PyObject *node = t->stack.v[--t->stack.n];
            if (++seen > MAX_TREE_NODES)
                return REFERENCE;
            if (seen > 1 && seen <= count) {
                uint32_t file, line;
                if ((rc = u32_attribute(node, s_call_file, &file)) != OK
                    || (rc = u32_attribute(node, s_call_line, &line)) != OK)
                    return rc;
                if (U32s_push(&t->call_file, file) < 0 || U32s_push(&t->call_line, line) < 0)
                    return FAILED;
            }
            PyObject *children;
            if ((rc = children_of(node, &children)) != OK)
                return rc;
            for (Py_ssize_t c = PyList_GET_SIZE(children) - 1; c >= 0; c--)
                if (Objects_push(&t->stack, PyList_GET_ITEM(children, c)) < 0) {
                    Py_DECREF(children);
                    return FAILED;
                }
            Py_DECREF(children);
        }
        /* extras past the tree's nodes (the root's row is written above) */
        for (seen = seen ? seen : 1; seen < count; seen++)
            if (U32s_push(&t->call_file, 0) < 0 || U32s_push(&t->call_line, 0) < 0)
                return FAILED;
    }
    if ((uint64_t)t->linkage.n > 0xFFFFFFFFu)
        return REFERENCE;
    return U32s_push(&t->first_node, (uint32_t)t->linkage.n) < 0 ? FAILED : OK;
}

static PyObject *
node_tables(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *functions, *nodes, *node_type, *result = NULL, *fseq = NULL, *nseq = NULL;
    if (!PyArg_ParseTuple(args, "OOO!:node_tables", &functions, &nodes, &PyType_Type, &node_type))
        return NULL;
    NodeTables t;
    memset(&t, 0, sizeof t);
    if (!PyType_IsSubtype((PyTypeObject *)node_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "node_type must be a tuple type");
        return NULL;
    }
    if ((fseq = PySequence_Fast(functions, "functions must be a sequence")) == NULL
        || (nseq = PySequence_Fast(nodes, "nodes must be a sequence")) == NULL
        || (t.strings = PyDict_New()) == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fseq);
    int rc = n == PySequence_Fast_GET_SIZE(nseq) ? OK : REFERENCE;
    for (Py_ssize_t k = 0; rc == OK && k < n; k++)
        rc = function_nodes(&t, PySequence_Fast_GET_ITEM(fseq, k),
                            PySequence_Fast_GET_ITEM(nseq, k), node_type);
    if (rc == FAILED)
        goto done;
    if (rc == REFERENCE) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    result = Py_BuildValue("(ONNNNNNN)", t.strings,
                           PyByteArray_FromStringAndSize(t.strtab.v ? t.strtab.v : "", t.strtab.n),
                           u32_bytes(&t.first_node), u32_bytes(&t.linkage), u32_bytes(&t.name),
                           u32_bytes(&t.call_file), u32_bytes(&t.call_line),
                           u32_bytes(&t.call_column));
done:
    PyMem_Free(t.strtab.v);
    PyMem_Free(t.first_node.v);
    PyMem_Free(t.linkage.v);
    PyMem_Free(t.name.v);
    PyMem_Free(t.call_file.v);
    PyMem_Free(t.call_line.v);
    PyMem_Free(t.call_column.v);
    PyMem_Free(t.stack.v);
    Py_XDECREF(t.strings);
    Py_XDECREF(fseq);
    Py_XDECREF(nseq);
    return result;
}

static PyMethodDef methods[] = {
    {"index_functions", index_functions, METH_VARARGS,
     "index_functions(functions, indexed, column_address, column_value) -> the extras' "
     "bound, state and path tables as bytes (host order), or None: see "
     "stackmark.formats.gsym.extras.ExtrasBuilder."},
    {"node_tables", node_tables, METH_VARARGS,
     "node_tables(functions, nodes, node_type) -> (strings, strtab, first_node, linkage, name, "
     "call_file, call_line, call_column), or None: ExtrasBuilder._add_nodes over every "
     "function into an empty builder (stackmark.formats.gsym.extras)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "stackmark._native._gsym_extras",
    "The GSYM extras' address index built in C (see stackmark.formats.gsym.extras).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__gsym_extras(void)
{
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_start, "start");
    INTERN(s_size, "size");
    INTERN(s_line_table, "line_table");
    INTERN(s_inline, "inline");
    INTERN(s_ranges, "ranges");
    INTERN(s_children, "children");
    INTERN(s_call_file, "call_file");
    INTERN(s_call_line, "call_line");
#undef INTERN
    return PyModule_Create(&module_def);
}
