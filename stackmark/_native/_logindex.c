/* The language server's log index, in C: the compiled twins of the bulk frame
 * check's address scan in `stackmark_lsp.index.Index._check_frames`, and of
 * the reading of a crash report's contextual lines, `stackmark_lsp.scan.context_rows`
 * (what `Index._read_context` replays).
 *
 *   frame_span(text, begin, end) -> (count, lowest, highest) or None
 *
 * The addresses of the plain frames of text[begin:end], as
 * `scan.FRAME_ADDRESS.findall(text, begin, end)` finds them and `int(a, 16)`
 * reads them:
 *
 *   \{\{\{(?:bt:[0-9]{1,19}:|pc:|data:)0x([0-9a-fA-F]{1,16})
 *
 * matched left to right without overlaps, `end` acting as the end of the text.
 * Given: how many, and the lowest and highest of them (0, 0 when there are
 * none). None when `text` is not a str of one byte per character (the
 * reference runs then).
 *
 *   context_rows(text, pos) -> (end, rows) or None
 *
 * The run of lines from `pos` on that each match `scan.CONTEXT_ROW`
 *
 *   ([^{\n]*)\{\{\{(?:(reset)|module:ID:([^:{}\n]*):elf:([0-9a-fA-F]+)
 *                   |mmap:ADDR:ID:load:ID:((?=[rwxRWX])[rR]?[wW]?[xX]?):ADDR)\}\}\}[^{\n]*\n
 *   ID   = 0|[1-9][0-9]{0,18}|0[xX][0-9a-fA-F]{1,16}
 *   ADDR = 0x[0-9a-fA-F]{1,16}
 *
 * each read as `scan.context_rows` reads it: (column,) for a reset,
 * (column, module ID, name, build ID in lower case and whole bytes) for a
 * module, (column, start, size, module ID, mode in lower case, relative
 * address) for an mmap; `end` is the position after the run. None when
 * `text` is not a str of one byte per character.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static int
hex_digit(Py_UCS1 c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The frame whose `{{{` is at `at`, read within [at, end): 1 and its address
 * and end, or 0 when the pattern does not match there. */
static int
frame_at(const Py_UCS1 *s, Py_ssize_t at, Py_ssize_t end, uint64_t *address, Py_ssize_t *after)
{
    Py_ssize_t p = at + 3;
    if (end - p >= 3 && s[p] == 'b' && s[p + 1] == 't' && s[p + 2] == ':') {
        p += 3;
        Py_ssize_t digits = 0;
        while (p < end && s[p] >= '0' && s[p] <= '9') {
            p++;
            digits++;
        }
        if (digits < 1 || digits > 19 || p >= end || s[p] != ':')
            return 0;
        p++;
    } else if (end - p >= 3 && s[p] == 'p' && s[p + 1] == 'c' && s[p + 2] == ':') {
        p += 3;
    } else if (end - p >= 5 && s[p] == 'd' && s[p + 1] == 'a' && s[p + 2] == 't'
               && s[p + 3] == 'a' && s[p + 4] == ':') {
        p += 5;
    } else {
        return 0;
    }
    if (end - p < 3 || s[p] != '0' || s[p + 1] != 'x' || hex_digit(s[p + 2]) < 0)
        return 0;
    p += 2;
    uint64_t value = 0;
    int taken = 0;
    int digit;
    while (taken < 16 && p < end && (digit = hex_digit(s[p])) >= 0) {
        value = (value << 4) | (uint64_t)digit;
        p++;
        taken++;
    }
    *address = value;
    *after = p;
    return 1;
}

static PyObject *
frame_span(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *text;
    Py_ssize_t begin, end;
    if (!PyArg_ParseTuple(args, "Unn", &text, &begin, &end))
        return NULL;
    if (PyUnicode_READY(text) < 0)
        return NULL;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND)
        Py_RETURN_NONE;
    const Py_UCS1 *s = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    if (begin < 0)
        begin = 0;
    if (end > length)
        end = length;
    Py_ssize_t count = 0;
    uint64_t lowest = 0, highest = 0;
    Py_ssize_t p = begin;
    while (end - p >= 3) {
        const Py_UCS1 *brace = memchr(s + p, '{', (size_t)(end - p - 2));
        if (brace == NULL)
            break;
        Py_ssize_t at = brace - s;
        uint64_t address;
        Py_ssize_t after;
        if (s[at + 1] == '{' && s[at + 2] == '{' && frame_at(s, at, end, &address, &after)) {
            if (count == 0 || address < lowest)
                lowest = address;
            if (count == 0 || address > highest)
                highest = address;
            count++;
            p = after;
        } else {
            p = at + 1;
        }
    }
    return Py_BuildValue("(nKK)", count, (unsigned long long)lowest, (unsigned long long)highest);
}

/* A cursor over text[p:length): each step reads one character or fails. */
typedef struct {
    const Py_UCS1 *s;
    Py_ssize_t p, length;
} Cursor;

static int
take(Cursor *c, const char *literal)
{
    Py_ssize_t n = (Py_ssize_t)strlen(literal);
    if (c->length - c->p < n || memcmp(c->s + c->p, literal, (size_t)n) != 0)
        return 0;
    c->p += n;
    return 1;
}

/* `0x` and 1-16 hex digits: 1 and the value, else 0. */
static int
take_address(Cursor *c, uint64_t *value)
{
    if (!take(c, "0x"))
        return 0;
    uint64_t v = 0;
    int taken = 0, digit;
    while (c->p < c->length && (digit = hex_digit(c->s[c->p])) >= 0) {
        if (taken == 16)
            return 0; /* the next character must end the field, and cannot be a digit */
        v = (v << 4) | (uint64_t)digit;
        c->p++;
        taken++;
    }
    *value = v;
    return taken > 0;
}

/* ID (then, as every use of it requires, a ':'): 1 and the value, else 0. */
static int
take_id(Cursor *c, uint64_t *value)
{
    const Py_UCS1 *s = c->s;
    Py_ssize_t p = c->p;
    if (c->length - p >= 3 && s[p] == '0' && (s[p + 1] == 'x' || s[p + 1] == 'X')) {
        p += 2;
        uint64_t v = 0;
        int taken = 0, digit;
        while (p < c->length && (digit = hex_digit(s[p])) >= 0 && taken < 17) {
            v = (v << 4) | (uint64_t)digit;
            p++;
            taken++;
        }
        if (taken < 1 || taken > 16)
            return 0;
        *value = v;
    } else if (p < c->length && s[p] == '0') {
        p++;
        *value = 0;
    } else {
        uint64_t v = 0;
        int taken = 0;
        while (p < c->length && s[p] >= '0' && s[p] <= '9' && taken < 20) {
            v = v * 10 + (uint64_t)(s[p] - '0');
            p++;
            taken++;
        }
        if (taken < 1 || taken > 19)
            return 0;
        *value = v;
    }
    c->p = p;
    return take(c, ":");
}

static PyObject *
u64(uint64_t value)
{
    return PyLong_FromUnsignedLongLong((unsigned long long)value);
}

/* The modes, made once: "r", "w", "rw", "x", "rx", "wx", "rwx" by their bits. */
static PyObject *modes[8];

/* One row at c->p (whose line starts there): its tuple, or Py_None (borrowed) when the
 * line does not match, or NULL on a Python error. */
static PyObject *
context_row(Cursor *c)
{
    const Py_UCS1 *s = c->s;
    Py_ssize_t column = 0;
    while (c->p < c->length && s[c->p] != '{' && s[c->p] != '\n') {
        c->p++;
        column++;
    }
    if (!take(c, "{{{"))
        return Py_None;
    PyObject *row;
    if (take(c, "reset")) {
        row = Py_BuildValue("(n)", column);
    } else if (take(c, "module:")) {
        uint64_t id;
        if (!take_id(c, &id))
            return Py_None;
        Py_ssize_t name = c->p;
        while (c->p < c->length && s[c->p] != ':' && s[c->p] != '{' && s[c->p] != '}'
               && s[c->p] != '\n')
            c->p++;
        Py_ssize_t name_end = c->p;
        if (!take(c, ":elf:"))
            return Py_None;
        Py_ssize_t build = c->p;
        while (c->p < c->length && hex_digit(s[c->p]) >= 0)
            c->p++;
        Py_ssize_t digits = c->p - build;
        if (digits == 0 || !take(c, "}}}"))
            return Py_None;
        PyObject *build_id = PyUnicode_New(digits + (digits & 1), 127);
        if (build_id == NULL)
            return NULL;
        Py_UCS1 *out = PyUnicode_1BYTE_DATA(build_id);
        if (digits & 1)
            *out++ = '0';
        for (Py_ssize_t i = 0; i < digits; i++) {
            Py_UCS1 h = s[build + i];
            *out++ = (h >= 'A' && h <= 'F') ? (Py_UCS1)(h - 'A' + 'a') : h;
        }
        PyObject *text_name = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, s + name,
                                                        name_end - name);
        if (text_name == NULL) {
            Py_DECREF(build_id);
            return NULL;
        }
        row = Py_BuildValue("(nNNN)", column, u64(id), text_name, build_id);
        c->p -= 3; /* the closing braces are taken below, as for the other rows */
    } else if (take(c, "mmap:")) {
        uint64_t start, size, id, relative;
        if (!take_address(c, &start) || !take(c, ":") || !take_id(c, &size)
            || !take(c, "load:") || !take_id(c, &id))
            return Py_None;
        int mode = 0;
        if (c->p < c->length && (s[c->p] | 0x20) == 'r') {
            mode |= 1;
            c->p++;
        }
        if (c->p < c->length && (s[c->p] | 0x20) == 'w') {
            mode |= 2;
            c->p++;
        }
        if (c->p < c->length && (s[c->p] | 0x20) == 'x') {
            mode |= 4;
            c->p++;
        }
        if (mode == 0 || !take(c, ":") || !take_address(c, &relative))
            return Py_None;
        if (c->p + 3 > c->length || memcmp(s + c->p, "}}}", 3) != 0)
            return Py_None;
        Py_INCREF(modes[mode]);
        row = Py_BuildValue("(nNNNNN)", column, u64(start), u64(size), u64(id), modes[mode],
                            u64(relative));
    } else {
        return Py_None;
    }
    if (row == NULL)
        return NULL;
    if (!take(c, "}}}")) {
        Py_DECREF(row);
        return Py_None;
    }
    while (c->p < c->length && s[c->p] != '{' && s[c->p] != '\n')
        c->p++;
    if (!take(c, "\n")) {
        Py_DECREF(row);
        return Py_None;
    }
    return row;
}

static PyObject *
context_rows(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *text;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "Un", &text, &pos))
        return NULL;
    if (PyUnicode_READY(text) < 0)
        return NULL;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND)
        Py_RETURN_NONE;
    Cursor c = {PyUnicode_1BYTE_DATA(text), pos, PyUnicode_GET_LENGTH(text)};
    if (c.p < 0)
        c.p = 0;
    if (c.p > c.length)
        c.p = c.length;
    PyObject *rows = PyList_New(0);
    if (rows == NULL)
        return NULL;
    for (;;) {
        Py_ssize_t at = c.p;
        PyObject *row = context_row(&c);
        if (row == NULL) {
            Py_DECREF(rows);
            return NULL;
        }
        if (row == Py_None) {
            c.p = at;
            break;
        }
        int failed = PyList_Append(rows, row);
        Py_DECREF(row);
        if (failed) {
            Py_DECREF(rows);
            return NULL;
        }
    }
    return Py_BuildValue("(nN)", c.p, rows);
}

static PyMethodDef methods[] = {
    {"frame_span", frame_span, METH_VARARGS,
     "frame_span(text, begin, end) -> (count, lowest, highest) of the plain frames' "
     "addresses in text[begin:end], or None (see stackmark_lsp.index)."},
    {"context_rows", context_rows, METH_VARARGS,
     "context_rows(text, pos) -> (end, rows): the run of contextual lines from pos on, "
     "read as stackmark_lsp.scan.context_rows reads them, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "stackmark._native._logindex",
    "The language server's log index in C: the bulk frame check's address scan, the "
    "contextual lines' reading.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__logindex(void)
{
    static const char *spelled[8] = {NULL, "r", "w", "rw", "x", "rx", "wx", "rwx"};
    for (int mode = 1; mode < 8; mode++) {
        if (modes[mode] == NULL && (modes[mode] = PyUnicode_InternFromString(spelled[mode])) == NULL)
            return NULL;
    }
    return PyModule_Create(&module_def);
}
