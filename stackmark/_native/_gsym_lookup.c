/* A warm lookup in the GSYM cache, in C: the compiled twin of
 * `stackmark.symbols.gsym_source.GsymSource._gsym_frames` (with the
 * `Extras.state_at`, `Extras.path` and `Extras.string` steps it runs).
 *
 *   index = ExtrasIndex(first_node, linkage, name, call_file, call_line,
 *                       call_column, bound_address, bound_state,
 *                       state_function, state_file, state_line,
 *                       state_column, state_path, path_first, path_node,
 *                       strtab)
 *       holds the extras' tables (buffers of host-order u32, bound_address
 *       of u64) until `index.release()`;
 *   index.frames(address, strings, paths, path_of, states, states_kept,
 *                frame_type)
 *       -> the frames at `address` (a list of `frame_type(linkage, name,
 *          file, line, column)`, innermost first), False when no state
 *          holds `address` (NO_STATE), or None.
 *
 * `strings` is the extras' decoded-string cache (reference -> str, the one
 * `Extras.string` keeps), `paths` the source's file-path cache, `path_of`
 * its method that fills it, `states` its chains per state (emptied when it
 * holds more than `states_kept`).
 *
 * None means: input this code does not check the way the reference does
 * (an index out of range, a string outside the table, damaged tables). The
 * caller then runs the Python reference on the same address, which answers
 * or raises as always; nothing here has changed a cache by then except for
 * strings and paths that the reference would have made the same way.
 * The Python code is the reference and says why each step is what it is.
 *
 * A frame is made as `frame_type.__init__` makes it: its five slots
 * (linkage_name, name, file, line, column: `stackmark.model.SourceFrame`,
 * whose `__init__` only assigns them) are filled in a new instance, without
 * running `__init__` (a tenth of a warm lookup's time). When `frame_type`
 * does not have those five writable object slots, or its own `__new__`,
 * the type is called instead.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#define NO_STATE 0xFFFFFFFFu

enum {
    FIRST_NODE,
    LINKAGE,
    NAME,
    CALL_FILE,
    CALL_LINE,
    CALL_COLUMN,
    BOUND_ADDRESS,
    BOUND_STATE,
    STATE_FUNCTION,
    STATE_FILE,
    STATE_LINE,
    STATE_COLUMN,
    STATE_PATH,
    PATH_FIRST,
    PATH_NODE,
    STRTAB,
    NUM_TABLES
};

static const char *const table_names[NUM_TABLES] = {
    "first_node", "linkage", "name", "call_file", "call_line", "call_column",
    "bound_address", "bound_state", "state_function", "state_file", "state_line",
    "state_column", "state_path", "path_first", "path_node", "strtab",
};

#define NUM_FIELDS 5
static const char *const frame_fields[NUM_FIELDS] = {
    "linkage_name", "name", "file", "line", "column",
};

typedef struct {
    PyObject_HEAD
    Py_buffer views[NUM_TABLES];
    int held; /* the views are held (released by release() or dealloc) */
    PyObject *frame_type; /* the type `offsets` describe (NULL: none yet) */
    Py_ssize_t offsets[NUM_FIELDS]; /* its slots' offsets; offsets[0] < 0: call the type */
} ExtrasIndex;

/* Where `type` keeps each field of `frame_fields`, into self->offsets (all -1
 * when the instance cannot be filled directly: see the top comment). */
static int learn_frame_type(ExtrasIndex *self, PyObject *type)
{
    Py_XSETREF(self->frame_type, Py_NewRef(type));
    for (int f = 0; f < NUM_FIELDS; f++) self->offsets[f] = -1;
    if (!PyType_Check(type) || ((PyTypeObject *)type)->tp_new != PyBaseObject_Type.tp_new)
        return 0;
    Py_ssize_t offsets[NUM_FIELDS];
    for (int f = 0; f < NUM_FIELDS; f++) {
        PyObject *descr = PyObject_GetAttrString(type, frame_fields[f]);
        if (descr == NULL) {
            PyErr_Clear();
            return 0;
        }
        int fits = Py_IS_TYPE(descr, &PyMemberDescr_Type);
        if (fits) {
            PyMemberDescrObject *member = (PyMemberDescrObject *)descr;
            fits = member->d_member->type == T_OBJECT_EX
                && !(member->d_member->flags & READONLY)
                && PyType_IsSubtype((PyTypeObject *)type, PyDescr_TYPE(member));
            offsets[f] = member->d_member->offset;
        }
        Py_DECREF(descr);
        if (!fits) return 0;
    }
    memcpy(self->offsets, offsets, sizeof offsets);
    return 0;
}

/* Element count of table `t` (u64 for the bound addresses, bytes for the strings). */
static inline Py_ssize_t count(const ExtrasIndex *x, int t)
{
    Py_ssize_t width = t == BOUND_ADDRESS ? 8 : t == STRTAB ? 1 : 4;
    return x->views[t].len / width;
}

static inline uint32_t u32(const ExtrasIndex *x, int t, Py_ssize_t i)
{
    uint32_t v;
    memcpy(&v, (const char *)x->views[t].buf + 4 * i, 4);
    return v;
}

static inline uint64_t u64(const ExtrasIndex *x, int t, Py_ssize_t i)
{
    uint64_t v;
    memcpy(&v, (const char *)x->views[t].buf + 8 * i, 8);
    return v;
}

static void release_views(ExtrasIndex *x)
{
    if (x->held) {
        for (int t = 0; t < NUM_TABLES; t++) PyBuffer_Release(&x->views[t]);
        x->held = 0;
    }
}

static int ExtrasIndex_init(ExtrasIndex *self, PyObject *args, PyObject *kwargs)
{
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError, "ExtrasIndex takes positional arguments only");
        return -1;
    }
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != NUM_TABLES) {
        PyErr_Format(PyExc_TypeError, "ExtrasIndex takes %d tables", NUM_TABLES);
        return -1;
    }
    release_views(self);
    for (int t = 0; t < NUM_TABLES; t++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, t), &self->views[t], PyBUF_SIMPLE) < 0) {
            for (int u = 0; u < t; u++) PyBuffer_Release(&self->views[u]);
            return -1;
        }
        Py_ssize_t width = t == BOUND_ADDRESS ? 8 : t == STRTAB ? 1 : 4;
        if (self->views[t].len % width != 0) {
            for (int u = 0; u <= t; u++) PyBuffer_Release(&self->views[u]);
            PyErr_Format(PyExc_ValueError, "table %s is not a whole number of items",
                         table_names[t]);
            return -1;
        }
    }
    self->held = 1;
    return 0;
}

static void ExtrasIndex_dealloc(ExtrasIndex *self)
{
    release_views(self);
    Py_CLEAR(self->frame_type);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ExtrasIndex_release(ExtrasIndex *self, PyObject *Py_UNUSED(ignored))
{
    release_views(self);
    Py_RETURN_NONE;
}

/* 1: *out is a new reference to the string `ref` names (None for 0), as
 * `Extras.string` gives it (and keeps it in `strings`); 0: outside the
 * table (the reference raises); -1: a Python error. */
static int string_at(const ExtrasIndex *x, PyObject *strings, uint32_t ref, PyObject **out)
{
    PyObject *key = PyLong_FromUnsignedLong(ref);
    if (key == NULL) return -1;
    PyObject *found = PyDict_GetItemWithError(strings, key); /* borrowed */
    if (found == NULL && PyErr_Occurred()) {
        Py_DECREF(key);
        return -1;
    }
    /* The reference decodes again a string kept as "" (its "not found" mark). */
    if (found != NULL && !(PyUnicode_Check(found) && PyUnicode_GET_LENGTH(found) == 0)) {
        Py_DECREF(key);
        Py_INCREF(found);
        *out = found;
        return 1;
    }
    Py_ssize_t size = count(x, STRTAB);
    if (ref == 0 || (Py_ssize_t)(ref - 1) >= size) {
        Py_DECREF(key);
        return 0;
    }
    const char *table = x->views[STRTAB].buf;
    Py_ssize_t start = (Py_ssize_t)ref - 1;
    const char *nul = memchr(table + start, 0, (size_t)(size - start));
    Py_ssize_t end = nul != NULL ? nul - table : size;
    PyObject *text = PyUnicode_DecodeUTF8(table + start, end - start, "surrogateescape");
    if (text == NULL || PyDict_SetItem(strings, key, text) < 0) {
        Py_XDECREF(text);
        Py_DECREF(key);
        return -1;
    }
    Py_DECREF(key);
    *out = text;
    return 1;
}

/* A new reference to the path of file `index` (`GsymSource._path`: from the
 * `paths` cache, else from `path_of`, which fills it), or NULL on an error. */
static PyObject *path_at(PyObject *paths, PyObject *path_of, uint32_t index)
{
    PyObject *key = PyLong_FromUnsignedLong(index);
    if (key == NULL) return NULL;
    PyObject *found = PyDict_GetItemWithError(paths, key);
    if (found != NULL) {
        Py_DECREF(key);
        Py_INCREF(found);
        return found;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    found = PyObject_CallOneArg(path_of, key);
    Py_DECREF(key);
    return found;
}

/* A new frame_type(linkage, name, file, line, column), or NULL. */
static PyObject *make_frame(const ExtrasIndex *x, PyObject *frame_type, PyObject *linkage,
                            PyObject *name, PyObject *file, uint32_t line, uint32_t column)
{
    PyObject *line_obj = PyLong_FromUnsignedLong(line);
    PyObject *column_obj = PyLong_FromUnsignedLong(column);
    PyObject *frame = NULL;
    if (line_obj != NULL && column_obj != NULL) {
        PyObject *argv[NUM_FIELDS] = {linkage, name, file, line_obj, column_obj};
        if (x->offsets[0] < 0) {
            frame = PyObject_Vectorcall(frame_type, argv, NUM_FIELDS, NULL);
        } else {
            PyTypeObject *type = (PyTypeObject *)frame_type;
            frame = type->tp_alloc(type, 0);
            for (int f = 0; frame != NULL && f < NUM_FIELDS; f++)
                *(PyObject **)((char *)frame + x->offsets[f]) = Py_NewRef(argv[f]);
        }
    }
    Py_XDECREF(line_obj);
    Py_XDECREF(column_obj);
    return frame;
}

/* Appends frame_type(names of `node`, file, line, column) to `frames`:
 * 1 done, 0 the reference must answer, -1 a Python error. */
static int append_frame(const ExtrasIndex *x, PyObject *frames, PyObject *strings,
                        PyObject *frame_type, Py_ssize_t node, PyObject *file, uint32_t line,
                        uint32_t column)
{
    if (node >= count(x, LINKAGE) || node >= count(x, NAME)) return 0;
    PyObject *linkage = NULL, *name = NULL;
    int got = string_at(x, strings, u32(x, LINKAGE, node), &linkage);
    if (got == 1) got = string_at(x, strings, u32(x, NAME, node), &name);
    if (got != 1) {
        Py_XDECREF(linkage);
        return got;
    }
    PyObject *frame = make_frame(x, frame_type, linkage, name, file, line, column);
    Py_DECREF(linkage);
    Py_DECREF(name);
    if (frame == NULL) return -1;
    int failed = PyList_Append(frames, frame);
    Py_DECREF(frame);
    return failed ? -1 : 1;
}

static PyObject *ExtrasIndex_frames(ExtrasIndex *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError,
                        "frames(address, strings, paths, path_of, states, states_kept, "
                        "frame_type)");
        return NULL;
    }
    PyObject *strings = args[1], *paths = args[2], *path_of = args[3], *states = args[4];
    PyObject *frame_type = args[6];
    if (!self->held) Py_RETURN_NONE;
    if (frame_type != self->frame_type && learn_frame_type(self, frame_type) < 0) return NULL;
    if (!PyDict_CheckExact(strings) || !PyDict_CheckExact(paths) || !PyDict_CheckExact(states))
        Py_RETURN_NONE;
    int overflow = 0;
    unsigned long long address = PyLong_AsUnsignedLongLong(args[0]);
    if (address == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    long long states_kept = PyLong_AsLongLongAndOverflow(args[5], &overflow);
    if (overflow || (states_kept == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    const ExtrasIndex *x = self;

    /* Extras.state_at: the last bound at or below `address`. */
    Py_ssize_t low = 0, high = count(x, BOUND_ADDRESS);
    while (low < high) {
        Py_ssize_t mid = low + (high - low) / 2;
        if (address < u64(x, BOUND_ADDRESS, mid)) high = mid;
        else low = mid + 1;
    }
    Py_ssize_t bound = low - 1;
    if (bound < 0) Py_RETURN_FALSE;
    if (bound >= count(x, BOUND_STATE)) Py_RETURN_NONE;
    uint32_t state = u32(x, BOUND_STATE, bound);
    if (state == NO_STATE) Py_RETURN_FALSE;
    Py_ssize_t num_states = count(x, STATE_FUNCTION);
    Py_ssize_t num_functions = count(x, FIRST_NODE) - 1;
    if ((Py_ssize_t)state >= num_states || count(x, STATE_FILE) < num_states
        || count(x, STATE_LINE) < num_states || count(x, STATE_COLUMN) < num_states
        || count(x, STATE_PATH) < num_states)
        Py_RETURN_NONE;
    uint32_t function = u32(x, STATE_FUNCTION, state);
    if ((Py_ssize_t)function >= num_functions) Py_RETURN_NONE;

    PyObject *state_key = PyLong_FromUnsignedLong(state);
    if (state_key == NULL) return NULL;
    PyObject *cached = PyDict_GetItemWithError(states, state_key);
    if (cached != NULL) {
        Py_DECREF(state_key);
        Py_INCREF(cached);
        return cached;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(state_key);
        return NULL;
    }

    /* The path's checks come first here: the reference reads the file first,
       but a damaged path makes it fail either way (and then it runs). */
    uint32_t first = u32(x, FIRST_NODE, function);
    uint32_t next_first = u32(x, FIRST_NODE, function + 1);
    uint32_t path = u32(x, STATE_PATH, state);
    Py_ssize_t num_paths = count(x, PATH_FIRST) - 1;
    if (next_first < first || (Py_ssize_t)path >= num_paths) goto reference;
    uint32_t width = next_first - first;
    uint32_t entries = u32(x, PATH_FIRST, path), entries_end = u32(x, PATH_FIRST, path + 1);
    if (entries_end < entries || (Py_ssize_t)entries_end > count(x, PATH_NODE)) goto reference;
    if (entries == entries_end && width == 0) goto reference;
    for (uint32_t e = entries; e < entries_end; e++)
        if (u32(x, PATH_NODE, e) >= width) goto reference;

    PyObject *file;
    uint32_t line = 0, column = 0;
    uint32_t file_index = u32(x, STATE_FILE, state);
    if (file_index == 0) {
        file = Py_NewRef(Py_None);
    } else {
        file = path_at(paths, path_of, file_index);
        if (file == NULL) goto failed;
        line = u32(x, STATE_LINE, state);
        column = u32(x, STATE_COLUMN, state);
    }
    PyObject *frames = PyList_New(0);
    if (frames == NULL) {
        Py_DECREF(file);
        goto failed;
    }
    int done = 1;
    if (entries == entries_end)
        done = append_frame(x, frames, strings, frame_type, first, file, line, column);
    for (uint32_t e = entries_end; done == 1 && e > entries; e--) {
        Py_ssize_t node = (Py_ssize_t)first + u32(x, PATH_NODE, e - 1);
        done = append_frame(x, frames, strings, frame_type, node, file, line, column);
        if (done != 1) break;
        if (node >= count(x, CALL_FILE) || node >= count(x, CALL_LINE)
            || node >= count(x, CALL_COLUMN)) {
            done = 0;
            break;
        }
        Py_DECREF(file);
        file = path_at(paths, path_of, u32(x, CALL_FILE, node));
        if (file == NULL) {
            done = -1;
            break;
        }
        line = u32(x, CALL_LINE, node);
        column = u32(x, CALL_COLUMN, node);
    }
    Py_XDECREF(file);
    if (done != 1) {
        Py_DECREF(frames);
        if (done == 0) goto reference;
        goto failed;
    }
    if (PyDict_GET_SIZE(states) > states_kept) PyDict_Clear(states);
    if (PyDict_SetItem(states, state_key, frames) < 0) {
        Py_DECREF(frames);
        goto failed;
    }
    Py_DECREF(state_key);
    return frames;

reference:
    Py_DECREF(state_key);
    Py_RETURN_NONE;
failed:
    Py_DECREF(state_key);
    return NULL;
}

static PyMethodDef ExtrasIndex_methods[] = {
    {"frames", (PyCFunction)(void (*)(void))ExtrasIndex_frames, METH_FASTCALL,
     "frames(address, strings, paths, path_of, states, states_kept, frame_type) -> the "
     "frames at address, False (no state), or None (the reference answers): see "
     "stackmark.symbols.gsym_source.GsymSource._gsym_frames."},
    {"release", (PyCFunction)ExtrasIndex_release, METH_NOARGS,
     "release() -> None: end the views of the tables (frames() then gives None)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ExtrasIndexType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stackmark._native._gsym_lookup.ExtrasIndex",
    .tp_basicsize = sizeof(ExtrasIndex),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The extras' tables held for warm lookups (see the module's source).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ExtrasIndex_init,
    .tp_dealloc = (destructor)ExtrasIndex_dealloc,
    .tp_methods = ExtrasIndex_methods,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "stackmark._native._gsym_lookup",
    .m_doc = "A warm GSYM cache lookup: the frames at an address (see the C source).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__gsym_lookup(void)
{
    if (PyType_Ready(&ExtrasIndexType) < 0) return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (PyModule_AddObjectRef(module, "ExtrasIndex", (PyObject *)&ExtrasIndexType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
