/* Itanium C++ names demangled by libstdc++'s `__cxa_demangle`, called directly:
 * the compiled twin of the ctypes call in `stackmark.demangle.itanium`.
 *
 *   cxa_demangle(name) -> str | None
 *
 * The same call as the ctypes path, with the same result: `name` encoded as
 * UTF-8 (None when it cannot be: a lone surrogate), demangled with no buffer
 * and no status pointer, None when libstdc++ gives no result, else its text
 * decoded as UTF-8 with `surrogateescape`. The point is start-up: the ctypes
 * path imports ctypes and loads libffi before its first name (about 8 million
 * instructions, 4% of a one-frame `stackmark symbolize`). Linked with
 * -lstdc++ (build_native.py).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

extern char *__cxa_demangle(const char *mangled, char *buffer, size_t *length, int *status);

static PyObject *
cxa_demangle(PyObject *self, PyObject *name)
{
    (void)self;
    if (!PyUnicode_Check(name)) {
        PyErr_SetString(PyExc_TypeError, "cxa_demangle: name must be a str");
        return NULL;
    }
    const char *raw = PyUnicode_AsUTF8(name);
    if (raw == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        return NULL;
    }
    /* Like ctypes' c_char_p, libstdc++ reads up to the first NUL. */
    char *text = __cxa_demangle(raw, NULL, NULL, NULL);
    if (text == NULL) {
        Py_RETURN_NONE;
    }
    PyObject *result = PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text), "surrogateescape");
    free(text);
    return result;
}

static PyMethodDef methods[] = {
    {"cxa_demangle", cxa_demangle, METH_O,
     "cxa_demangle(name) -> str | None: libstdc++'s demangling of name (see "
     "stackmark.demangle.itanium)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "stackmark._native._demangle",
    "libstdc++'s __cxa_demangle without ctypes (see stackmark.demangle.itanium).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__demangle(void)
{
    return PyModule_Create(&module_def);
}
