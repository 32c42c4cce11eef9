/* The object slots of a Python class with __slots__, read and written in place.
 *
 * A kernel that makes or reads many instances of a pure-Python class
 * (dwarf_walk.DieFunction, inline_info.InlineInfo) finds where each named
 * slot lives once, from the class's member descriptors, and then reads and
 * writes it as those descriptors do, without an attribute lookup per access.
 * A name that is not a writable object slot of the class (a property, a
 * subclass's change) is reported, and the kernel leaves the work to Python.
 */
#ifndef STACKMARK_NATIVE_SLOTS_H
#define STACKMARK_NATIVE_SLOTS_H

#include <Python.h>
#include <structmember.h>
#include <string.h>

enum { MAX_SLOTS = 12 };

typedef struct {
    PyTypeObject *type; /* a strong reference once found */
    Py_ssize_t offset[MAX_SLOTS];
} SlotMap;

/* The offsets of `names` in `type`'s instances (1); 0 with no exception when
 * one is not a writable object slot of the type, -1 with one set. */
static int slot_map(SlotMap *map, PyTypeObject *type, const char *const names[], int count) {
    if (map->type == type) return 1;
    Py_ssize_t offset[MAX_SLOTS];
    if (count > MAX_SLOTS) return 0;
    for (int i = 0; i < count; i++) {
        PyObject *descr = PyObject_GetAttrString((PyObject *)type, names[i]);
        if (descr == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) return -1;
            PyErr_Clear();
            return 0;
        }
        int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type) &&
                 PyType_IsSubtype(type, ((PyMemberDescrObject *)descr)->d_common.d_type) &&
                 ((PyMemberDescrObject *)descr)->d_member->type == T_OBJECT_EX &&
                 !(((PyMemberDescrObject *)descr)->d_member->flags & READONLY);
        if (ok) offset[i] = ((PyMemberDescrObject *)descr)->d_member->offset;
        Py_DECREF(descr);
        if (!ok) return 0;
    }
    Py_XSETREF(map->type, (PyTypeObject *)Py_NewRef(type));
    memcpy(map->offset, offset, sizeof(Py_ssize_t) * (size_t)count);
    return 1;
}

/* The slot itself (a PyObject * lvalue; NULL while unset). */
#define SLOT(obj, map, i) (*(PyObject **)((char *)(obj) + (map).offset[i]))

#endif
