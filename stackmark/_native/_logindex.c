/* The language server's log index, in C: the compiled twin of the bulk frame
 * check's address scan in `stackmark_lsp.index.Index._check_frames`.
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
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

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

static PyMethodDef methods[] = {
    {"frame_span", frame_span, METH_VARARGS,
     "frame_span(text, begin, end) -> (count, lowest, highest) of the plain frames' "
     "addresses in text[begin:end], or None (see stackmark_lsp.index)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "stackmark._native._logindex",
    "The language server's log index: the bulk frame check's address scan in C.", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__logindex(void)
{
    return PyModule_Create(&module_def);
}
