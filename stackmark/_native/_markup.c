/* The markup filter's run of lone `bt` lines, in C: the compiled twin of
 * `stackmark.markup.fastpath.BtLines.lines_bytes`.
 *
 *   bt_lines(data, start, end, find, templates, make_template, out) -> stop
 *
 * From `start`, each whole line of `data` (before `end`) that holds one
 * `{{{bt:N:0xADDR[:ra|:pc]}}}` and no other `{{{`, no ESC, is rendered from
 * its frame template, as `lines_bytes` renders it; the run stops at the first
 * line that is not one, whose address `find` (the context's) places in no
 * mapping, or whose template `make_template(module, relative, eol)` cannot
 * make (None). The rendered lines are appended to the list `out` as one
 * bytes object; the return value is where the run stopped.
 *
 * Within one call the context does not change, and its mappings never
 * overlap (a zero-size one never lies inside another: `MarkupContext`
 * refuses such an mmap), so the mapping `find` gave for one address is what
 * it gives for any other address that mapping covers: the last one found is
 * kept, with its module and bounds, and `find` and the mapping's
 * `to_module_relative` are called again only for an address outside it (or
 * for a mapping whose fields do not fit 64 bits).
 *
 * `templates` is the Python side's dict: (build ID, module name, module-
 * relative address, line end) -> template bytes, with \x00 where the frame
 * number goes and \x01 where the address goes. `make_template` fills it.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define OK 0
#define FAILED (-1)

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buf;

static int
put(Buf *b, const char *p, Py_ssize_t n)
{
    if (b->len + n > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 8192;
        while (cap < b->len + n)
            cap *= 2;
        char *data = PyMem_Realloc(b->data, (size_t)cap);
        if (data == NULL) {
            PyErr_NoMemory();
            return FAILED;
        }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, (size_t)n);
    b->len += n;
    return OK;
}

static PyObject *s_module, *s_build_id, *s_name, *s_to_module_relative, *s_lf, *s_crlf;
static PyObject *s_segment, *s_start, *s_size, *s_module_relative;

/* The mapping `find` gave last, while one call runs (see the top comment). */
typedef struct {
    PyObject *module, *build_id, *name; /* NULL: nothing kept */
    uint64_t start, end, module_relative;
} LastMapping;

static void
forget(LastMapping *last)
{
    Py_CLEAR(last->module);
    Py_CLEAR(last->build_id);
    Py_CLEAR(last->name);
}

/* 1 with *out set: `obj.name` as a u64; 0: missing or wider (not kept); -1: error. */
static int
u64_attr(PyObject *obj, PyObject *name, uint64_t *out)
{
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL)
        return -1;
    int got = 0;
    if (PyLong_CheckExact(value)) {
        unsigned long long v = PyLong_AsUnsignedLongLong(value);
        if (v == (unsigned long long)-1 && PyErr_Occurred())
            PyErr_Clear();
        else {
            *out = v;
            got = 1;
        }
    }
    Py_DECREF(value);
    return got;
}

/* Keep `mapping` (its module, build ID and name, given) for the next lines:
 * 0 kept or not keepable, -1 error. Mapping.contains and to_module_relative
 * read `segment.start`, `.size` and `.module_relative`; they are kept when
 * each fits 64 bits, as the wrapped arithmetic below then equals theirs. */
static int
keep(LastMapping *last, PyObject *mapping, PyObject *mod, PyObject *build_id, PyObject *name)
{
    forget(last);
    PyObject *segment = PyObject_GetAttr(mapping, s_segment);
    if (segment == NULL)
        return -1;
    uint64_t start, size, module_relative;
    int got = u64_attr(segment, s_start, &start);
    if (got == 1)
        got = u64_attr(segment, s_size, &size);
    if (got == 1)
        got = u64_attr(segment, s_module_relative, &module_relative);
    Py_DECREF(segment);
    if (got != 1)
        return got;
    last->start = start;
    last->end = start + size; /* (start + size) & U64_MASK */
    last->module_relative = module_relative;
    last->module = Py_NewRef(mod);
    last->build_id = Py_NewRef(build_id);
    last->name = Py_NewRef(name);
    return 0;
}

static int
hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* One line from `pos` as fastpath._BT_LINE matches it (with `end` as the end
   of the text); 0 when it does not. */
typedef struct {
    Py_ssize_t element, element_end, newline; /* the element [element, element_end) */
    uint64_t number, address;
    int number_fits; /* the frame number is at most 2**64 - 1 */
    int precise;     /* `:pc` */
} BtLine;

static int
match_line(const unsigned char *d, Py_ssize_t pos, Py_ssize_t end, BtLine *m)
{
    /* Text before the element: no line feed, no ESC, no `{{{`; the element is
       at the first `{{{`. */
    Py_ssize_t i = pos;
    for (;; i++) {
        if (i >= end || d[i] == '\n' || d[i] == 0x1b)
            return 0;
        if (d[i] == '{' && i + 2 < end && d[i + 1] == '{' && d[i + 2] == '{')
            break;
    }
    m->element = i;
    i += 3;
    if (end - i < 3 || memcmp(d + i, "bt:", 3) != 0)
        return 0;
    i += 3;
    Py_ssize_t digits = 0;
    uint64_t number = 0;
    int fits = 1;
    while (i < end && d[i] >= '0' && d[i] <= '9') {
        if (++digits > 20)
            return 0;
        unsigned v = d[i] - '0';
        if (number > (UINT64_MAX - v) / 10)
            fits = 0;
        number = number * 10 + v;
        i++;
    }
    if (digits == 0 || end - i < 3 || d[i] != ':' || d[i + 1] != '0' || d[i + 2] != 'x')
        return 0;
    i += 3;
    Py_ssize_t hex = 0;
    uint64_t address = 0;
    while (i < end && hex_value(d[i]) >= 0) {
        if (++hex > 16)
            return 0;
        address = (address << 4) | (uint64_t)hex_value(d[i]);
        i++;
    }
    if (hex == 0)
        return 0;
    m->precise = 0;
    if (end - i >= 3 && d[i] == ':' && ((d[i + 1] == 'r' && d[i + 2] == 'a')
                                        || (d[i + 1] == 'p' && d[i + 2] == 'c'))) {
        m->precise = d[i + 1] == 'p';
        i += 3;
    }
    if (end - i < 3 || d[i] != '}' || d[i + 1] != '}' || d[i + 2] != '}')
        return 0;
    i += 3;
    m->element_end = i;
    /* Text after it: the same, up to and with the line feed. */
    for (;; i++) {
        if (i >= end || d[i] == 0x1b)
            return 0;
        if (d[i] == '\n')
            break;
        if (d[i] == '{' && i + 2 < end && d[i + 1] == '{' && d[i + 2] == '{')
            return 0;
    }
    m->newline = i;
    m->number = number;
    m->number_fits = fits;
    m->address = address;
    return 1;
}

/* `template` with its placeholders filled (fastpath: `(b"#%d" % number).rjust(6)`
   for \x00, `b" 0x%016x " % address` for \x01). */
static int
render(Buf *b, PyObject *template, uint64_t number, uint64_t address)
{
    char header[32], where[32];
    int n = snprintf(header, sizeof header, "#%llu", (unsigned long long)number);
    char padded[32];
    int hlen = n < 6 ? 6 : n;
    memset(padded, ' ', (size_t)(hlen - n));
    memcpy(padded + (hlen - n), header, (size_t)n);
    int wlen = snprintf(where, sizeof where, " 0x%016llx ", (unsigned long long)address);
    const char *t = PyBytes_AS_STRING(template);
    Py_ssize_t len = PyBytes_GET_SIZE(template), run = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        if (t[i] == 0 || t[i] == 1) {
            if (put(b, t + run, i - run) < 0)
                return FAILED;
            if (t[i] == 0 ? put(b, padded, hlen) < 0 : put(b, where, wlen) < 0)
                return FAILED;
            run = i + 1;
        }
    }
    return put(b, t + run, len - run);
}

static PyObject *
bt_lines(PyObject *module, PyObject *args)
{
    (void)module;
    Py_buffer view;
    Py_ssize_t start, end;
    PyObject *find, *templates, *make_template, *out;
    if (!PyArg_ParseTuple(args, "y*nnOO!OO!:bt_lines", &view, &start, &end, &find,
                          &PyDict_Type, &templates, &make_template, &PyList_Type, &out))
        return NULL;
    const unsigned char *d = view.buf;
    if (start < 0 || end > view.len || start > end) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "start and end must lie within the data");
        return NULL;
    }
    Buf b = {NULL, 0, 0};
    LastMapping last = {NULL, NULL, NULL, 0, 0, 0};
    Py_ssize_t pos = start;
    int failed = 0;
    while (pos < end) {
        BtLine m;
        if (!match_line(d, pos, end, &m) || !m.number_fits)
            break;
        uint64_t address = m.precise ? m.address : m.address - 1;
        PyObject *relative, *mod, *build_id, *name;
        if (last.module != NULL && last.start <= address && address < last.end) {
            relative = PyLong_FromUnsignedLongLong(address - last.start + last.module_relative);
            mod = Py_NewRef(last.module);
            build_id = Py_NewRef(last.build_id);
            name = Py_NewRef(last.name);
            if (relative == NULL) {
                Py_CLEAR(mod);
                Py_CLEAR(build_id);
                Py_CLEAR(name);
            }
        } else {
            PyObject *addr = PyLong_FromUnsignedLongLong(address);
            if (addr == NULL) {
                failed = 1;
                break;
            }
            PyObject *mapping = PyObject_CallOneArg(find, addr);
            if (mapping == NULL || mapping == Py_None) {
                Py_DECREF(addr);
                Py_XDECREF(mapping);
                failed = mapping == NULL;
                break;
            }
            relative = PyObject_CallMethodOneArg(mapping, s_to_module_relative, addr);
            Py_DECREF(addr);
            mod = relative ? PyObject_GetAttr(mapping, s_module) : NULL;
            build_id = mod ? PyObject_GetAttr(mod, s_build_id) : NULL;
            name = build_id ? PyObject_GetAttr(mod, s_name) : NULL;
            if (name != NULL && keep(&last, mapping, mod, build_id, name) < 0)
                Py_CLEAR(name);
            Py_DECREF(mapping);
        }
        int crlf = m.newline > m.element_end && d[m.newline - 1] == '\r';
        PyObject *eol = crlf ? s_crlf : s_lf;
        PyObject *key = name ? PyTuple_Pack(4, build_id, name, relative, eol) : NULL;
        Py_XDECREF(build_id);
        Py_XDECREF(name);
        PyObject *template = NULL;
        if (key != NULL) {
            template = PyDict_GetItemWithError(templates, key);
            Py_XINCREF(template);
            if (template == NULL && !PyErr_Occurred())
                template = PyObject_CallFunctionObjArgs(make_template, mod, relative, eol, NULL);
        }
        Py_XDECREF(key);
        Py_XDECREF(mod);
        Py_XDECREF(relative);
        if (template == NULL) {
            failed = 1;
            break;
        }
        if (template == Py_None) {
            Py_DECREF(template);
            break;
        }
        if (!PyBytes_Check(template)) {
            Py_DECREF(template);
            PyErr_SetString(PyExc_TypeError, "a template must be bytes");
            failed = 1;
            break;
        }
        int bad = put(&b, (const char *)d + pos, m.element - pos) < 0
            || render(&b, template, m.number, address) < 0
            || put(&b, (const char *)d + m.element_end, m.newline + 1 - m.element_end) < 0;
        Py_DECREF(template);
        if (bad) {
            failed = 1;
            break;
        }
        pos = m.newline + 1;
    }
    forget(&last);
    PyBuffer_Release(&view);
    if (!failed && b.len) {
        PyObject *rendered = PyBytes_FromStringAndSize(b.data, b.len);
        failed = rendered == NULL || PyList_Append(out, rendered) < 0;
        Py_XDECREF(rendered);
    }
    PyMem_Free(b.data);
    return failed ? NULL : PyLong_FromSsize_t(pos);
}

static PyMethodDef methods[] = {
    {"bt_lines", bt_lines, METH_VARARGS,
     "bt_lines(data, start, end, find, templates, make_template, out) -> stop: the run of "
     "lone bt lines from start, rendered onto out (see stackmark.markup.fastpath)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "stackmark._native._markup",
    "The markup filter's lone-bt lines rendered in C (see stackmark.markup.fastpath).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__markup(void)
{
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_module, "module");
    INTERN(s_build_id, "build_id");
    INTERN(s_name, "name");
    INTERN(s_to_module_relative, "to_module_relative");
    INTERN(s_lf, "\n");
    INTERN(s_crlf, "\r\n");
    INTERN(s_segment, "segment");
    INTERN(s_start, "start");
    INTERN(s_size, "size");
    INTERN(s_module_relative, "module_relative");
#undef INTERN
    return PyModule_Create(&module_def);
}
