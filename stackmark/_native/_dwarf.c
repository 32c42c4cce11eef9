/* stackmark._native._dwarf: compiled kernels of stackmark.dwarf.
 *
 * Each function here is the C twin of one pure-Python function, named in its
 * comment, and returns exactly what that function computes, or None when its
 * input is outside what it handles (a read past the buffer, a value wider than
 * 64 bits, a register leaving the range the reference keeps). The caller then
 * runs the reference, which gives the result or raises the FormatError (see
 * stackmark/_native/__init__.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "reading.h"
#include "slots.h"

#define ROW_WIDTH 7 /* stackmark.dwarf.lines.WIDTH: LineRow's fields */

/* ---- the line-number program (stackmark.dwarf.lines._run_program) ---------- */

typedef struct {
    U64s rows;      /* ROW_WIDTH values per row */
    U64s seqs;      /* low, high, first, end per sequence */
} LineOutput;

static int emit_row(LineOutput *out, uint64_t address, uint64_t file, int64_t line,
                    uint64_t column, uint64_t is_stmt, uint64_t end_seq, uint64_t discriminator) {
    /* A negative line makes the reference wrap every line of the table to 32
     * bits: left to it. */
    if (line < 0 || !u64s_reserve(&out->rows, ROW_WIDTH)) return 0;
    uint64_t *row = out->rows.items + out->rows.len;
    row[0] = address;
    row[1] = file;
    row[2] = (uint64_t)line;
    row[3] = column;
    row[4] = is_stmt;
    row[5] = end_seq;
    row[6] = discriminator;
    out->rows.len += ROW_WIDTH;
    return 1;
}

/* address += (advance // max_ops) * min_inst, op_index = advance % max_ops;
 * 0 when the address would pass 64 bits (the reference's integers do not wrap). */
static int advance_address(uint64_t *address, uint64_t *op_index, uint64_t operation_advance,
                           uint64_t max_ops, uint64_t min_inst) {
    uint64_t advance, step, moved;
    if (__builtin_add_overflow(*op_index, operation_advance, &advance)) return 0;
    if (__builtin_mul_overflow(advance / max_ops, min_inst, &step)) return 0;
    if (__builtin_add_overflow(*address, step, &moved)) return 0;
    *address = moved;
    *op_index = advance % max_ops;
    return 1;
}

static int run_program(const Bytes *b, uint64_t pos, uint64_t end, unsigned opcode_base,
                       uint64_t min_inst, uint64_t max_ops, uint64_t default_is_stmt,
                       int line_base, unsigned line_range, const uint8_t *std_lengths,
                       int little, LineOutput *out) {
    uint64_t sp_ops[256] = {0};
    int64_t sp_line[256] = {0};
    for (unsigned opcode = opcode_base; opcode < 256; opcode++) {
        unsigned adjusted = (opcode - opcode_base) & 0xFF;
        if (line_range) {
            sp_ops[opcode] = adjusted / line_range;
            sp_line[opcode] = line_base + (int64_t)(adjusted % line_range);
        }
    }
    uint64_t const_add_ops = line_range ? ((255 - opcode_base) & 0xFF) / line_range : 0;

    uint64_t address = 0, op_index = 0, file = 1, column = 0, discriminator = 0;
    int64_t line = 1;
    uint64_t is_stmt = default_is_stmt;
    size_t seq_first = 0, tomb_first = 0;
    int tombstoned = 0, wide;
    uint64_t value;

    while (pos < end) {
        uint64_t opcode;
        if (!read_u8(b, pos++, &opcode)) return 0;
        if (opcode >= opcode_base) {
            if (!advance_address(&address, &op_index, sp_ops[opcode], max_ops, min_inst)) return 0;
            if (__builtin_add_overflow(line, sp_line[opcode], &line)) return 0;
            if (!emit_row(out, address, file, line, column, is_stmt, 0, discriminator)) return 0;
            discriminator = 0;
        } else if (opcode == 5 || opcode == 4) { /* DW_LNS_set_column, DW_LNS_set_file */
            if (!read_uleb(b, &pos, &value, &wide)) return 0;
            if (value >= 0x80 || wide) value &= 0xFFFF;
            if (opcode == 5) column = value; else file = value;
        } else if (opcode == 1) { /* DW_LNS_copy */
            if (!emit_row(out, address, file, line, column, is_stmt, 0, discriminator)) return 0;
            discriminator = 0;
        } else if (opcode == 6) { /* DW_LNS_negate_stmt */
            is_stmt ^= 1;
        } else if (opcode == 3) { /* DW_LNS_advance_line */
            int64_t delta;
            if (!read_sleb(b, &pos, &delta)) return 0;
            if (__builtin_add_overflow(line, delta, &line)) return 0;
        } else if (opcode == 0) { /* extended opcode */
            uint64_t length, sub;
            if (!read_uleb(b, &pos, &length, &wide) || wide) return 0;
            if (length == 0) continue;
            if (length > UINT64_MAX - pos) return 0;
            uint64_t ext_end = pos + length;
            if (!read_u8(b, pos, &sub)) return 0;
            if (sub == 4) { /* DW_LNE_set_discriminator */
                uint64_t at = pos + 1;
                if (!read_uleb(b, &at, &discriminator, &wide) || wide) return 0;
            } else if (sub == 1) { /* DW_LNE_end_sequence */
                if (!emit_row(out, address, file, line, column, is_stmt, 1, discriminator)) return 0;
                size_t rows = out->rows.len / ROW_WIDTH;
                if (tombstoned) {
                    out->rows.len = tomb_first * ROW_WIDTH; /* llvm emits nothing at a tombstone */
                    rows = tomb_first;
                } else {
                    uint64_t low = out->rows.items[seq_first * ROW_WIDTH];
                    if (low < address) {
                        if (!u64s_reserve(&out->seqs, 4)) return 0;
                        uint64_t *seq = out->seqs.items + out->seqs.len;
                        seq[0] = low;
                        seq[1] = address;
                        seq[2] = seq_first;
                        seq[3] = rows;
                        out->seqs.len += 4;
                    }
                }
                seq_first = tomb_first = rows;
                address = op_index = column = discriminator = 0;
                file = 1;
                line = 1;
                is_stmt = default_is_stmt;
            } else if (sub == 2) { /* DW_LNE_set_address */
                uint64_t size = length - 1;
                if (size == 1 || size == 2 || size == 4 || size == 8) {
                    if (!read_uint(b, pos + 1, (unsigned)size, little, &address)) return 0;
                    op_index = 0;
                    uint64_t tombstone = size == 8 ? UINT64_MAX : (((uint64_t)1 << (8 * size)) - 1);
                    if (address == tombstone) {
                        if (!tombstoned) {
                            tombstoned = 1;
                            tomb_first = out->rows.len / ROW_WIDTH;
                        }
                    } else if (tombstoned) {
                        tombstoned = 0;
                        out->rows.len = tomb_first * ROW_WIDTH;
                        if (tomb_first < seq_first) seq_first = tomb_first;
                    }
                }
            }
            /* DW_LNE_define_file (obsolete) and unknown opcodes: skipped by length. */
            pos = ext_end;
        } else if (opcode == 8) { /* DW_LNS_const_add_pc */
            if (!advance_address(&address, &op_index, const_add_ops, max_ops, min_inst)) return 0;
        } else if (opcode == 2) { /* DW_LNS_advance_pc */
            if (!read_uleb(b, &pos, &value, &wide) || wide) return 0;
            if (!advance_address(&address, &op_index, value, max_ops, min_inst)) return 0;
        } else if (opcode == 9) { /* DW_LNS_fixed_advance_pc */
            if (!read_uint(b, pos, 2, little, &value)) return 0;
            if (__builtin_add_overflow(address, value, &address)) return 0;
            op_index = 0;
            pos += 2;
        } else if (opcode == 7 || opcode == 10 || opcode == 11) {
            /* basic_block, prologue_end, epilogue_begin */
        } else if (opcode == 12) { /* DW_LNS_set_isa */
            if (!skip_leb(b, &pos)) return 0;
        } else { /* an opcode this reader does not know: skip its LEB128 operands */
            for (unsigned i = 0; i < std_lengths[opcode - 1]; i++) {
                if (!skip_leb(b, &pos)) return 0;
            }
        }
    }
    if (tombstoned) out->rows.len = tomb_first * ROW_WIDTH;
    return 1;
}

/* One field of the rows (ROW_WIDTH apart from `field` on) as a (typecode, bytes)
 * pair: uint16 ("H"), uint32 ("I", or "Q" when a value needs more) or uint64. */
static PyObject *row_column(const U64s *rows, size_t field, char narrow) {
    size_t n = rows->len / ROW_WIDTH;
    const uint64_t *v = rows->items + field;
    char code = narrow;
    if (narrow == 'I') {
        for (size_t i = 0; i < n; i++) {
            if (v[i * ROW_WIDTH] > UINT32_MAX) {
                code = 'Q';
                break;
            }
        }
    }
    size_t size = code == 'H' ? 2 : code == 'I' ? 4 : 8;
    PyObject *data = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n * size));
    if (data == NULL) return NULL;
    char *at = PyBytes_AS_STRING(data);
    for (size_t i = 0; i < n; i++) {
        uint64_t value = v[i * ROW_WIDTH];
        if (size == 2) {
            uint16_t x = (uint16_t)value; /* files and columns are 16-bit registers */
            memcpy(at + 2 * i, &x, 2);
        } else if (size == 4) {
            uint32_t x = (uint32_t)value;
            memcpy(at + 4 * i, &x, 4);
        } else {
            memcpy(at + 8 * i, &value, 8);
        }
    }
    return Py_BuildValue("(CN)", code, data);
}

/* The row store as RowColumns' six (typecode, bytes) pairs; the flags byte holds
 * is_stmt (1) and end_sequence (2). */
static PyObject *row_columns(const U64s *rows) {
    size_t n = rows->len / ROW_WIDTH;
    PyObject *flags = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (flags == NULL) return NULL;
    uint8_t *f = (uint8_t *)PyBytes_AS_STRING(flags);
    for (size_t i = 0; i < n; i++) {
        const uint64_t *row = rows->items + i * ROW_WIDTH;
        f[i] = (uint8_t)((row[4] ? 1 : 0) | (row[5] ? 2 : 0));
    }
    PyObject *flag_column = Py_BuildValue("(CN)", 'B', flags);
    if (flag_column == NULL) return NULL;
    /* the fields in RowColumns' order (ROW_WIDTH fields 4 and 5 are the flags) */
    static const size_t fields[5] = {0, 1, 2, 3, 6};
    static const char narrow[5] = {'Q', 'H', 'I', 'H', 'I'};
    PyObject *columns = PyTuple_New(6);
    if (columns == NULL) {
        Py_DECREF(flag_column);
        return NULL;
    }
    PyTuple_SET_ITEM(columns, 5, flag_column);
    for (int i = 0; i < 5; i++) {
        PyObject *column = row_column(rows, fields[i], narrow[i]);
        if (column == NULL) {
            Py_DECREF(columns);
            return NULL;
        }
        PyTuple_SET_ITEM(columns, i, column);
    }
    return columns;
}

PyDoc_STRVAR(run_line_program_doc,
"run_line_program(buf, pos, end, opcode_base, min_inst, max_ops, default_is_stmt,\n"
"                 line_base, line_range, standard_opcode_lengths, little_endian)\n"
"--\n\n"
"stackmark.dwarf.lines._run_program over buf[pos:end]: (columns, sequences) with\n"
"columns the row store column by column, each a (typecode, bytes) pair in host order\n"
"(stackmark.dwarf.lines.RowColumns: addresses Q, files H, lines I or Q, columns H,\n"
"discriminators I or Q, flags B) and sequences a list of (low, high, first, end),\n"
"in program order; None when the reference must run.");

static PyObject *run_line_program(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view, lengths;
    unsigned long long pos, end, min_inst, max_ops;
    unsigned int opcode_base, line_range;
    int default_is_stmt, line_base, little;
    if (!PyArg_ParseTuple(args, "y*KKIKKpiIy*p", &view, &pos, &end, &opcode_base, &min_inst,
                          &max_ops, &default_is_stmt, &line_base, &line_range, &lengths,
                          &little))
        return NULL;
    PyObject *result = NULL;
    LineOutput out = {{NULL, 0, 0}, {NULL, 0, 0}};
    Bytes b = {(const uint8_t *)view.buf, (uint64_t)view.len};
    int ok = 0;
    if (opcode_base <= 256 && max_ops >= 1 && (Py_ssize_t)lengths.len >= (Py_ssize_t)opcode_base - 1) {
        Py_BEGIN_ALLOW_THREADS
        ok = run_program(&b, pos, end, opcode_base, min_inst, max_ops, default_is_stmt ? 1 : 0,
                         line_base, line_range, (const uint8_t *)lengths.buf, little, &out);
        Py_END_ALLOW_THREADS
    }
    if (!ok) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *rows = row_columns(&out.rows);
    PyObject *seqs = PyList_New((Py_ssize_t)(out.seqs.len / 4));
    if (rows == NULL || seqs == NULL) {
        Py_XDECREF(rows);
        Py_XDECREF(seqs);
        goto done;
    }
    for (size_t i = 0; i < out.seqs.len / 4; i++) {
        const uint64_t *s = out.seqs.items + 4 * i;
        PyObject *item = Py_BuildValue("(KKKK)", s[0], s[1], s[2], s[3]);
        if (item == NULL) {
            Py_DECREF(rows);
            Py_DECREF(seqs);
            goto done;
        }
        PyList_SET_ITEM(seqs, (Py_ssize_t)i, item);
    }
    result = Py_BuildValue("(NN)", rows, seqs);
done:
    free(out.rows.items);
    free(out.seqs.items);
    PyBuffer_Release(&view);
    PyBuffer_Release(&lengths);
    return result;
}

PyDoc_STRVAR(wide_rows_doc,
"wide_rows(addresses, files, lines, columns, discriminators, flags)\n"
"--\n\n"
"stackmark.dwarf.lines._wide_rows: the RowColumns arrays as one flat store of 7\n"
"native uint64 per row (LineRow's field order), as bytes.");

/* Element `i` of an unsigned array of 1, 2, 4 or 8 bytes per item. */
static uint64_t item_at(const Py_buffer *v, Py_ssize_t i) {
    const char *at = (const char *)v->buf + i * v->itemsize;
    switch (v->itemsize) {
    case 1: return *(const uint8_t *)at;
    case 2: { uint16_t x; memcpy(&x, at, 2); return x; }
    case 4: { uint32_t x; memcpy(&x, at, 4); return x; }
    default: { uint64_t x; memcpy(&x, at, 8); return x; }
    }
}

static PyObject *wide_rows(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer v[6];
    int got = 0;
    PyObject *result = NULL;
    for (; got < 6; got++) {
        PyObject *column = PyTuple_GetItem(args, got);
        if (column == NULL || PyObject_GetBuffer(column, &v[got], PyBUF_FORMAT) < 0) goto done;
        const char *format = v[got].format;
        if (format == NULL || strlen(format) != 1 || strchr("BHIQ", format[0]) == NULL ||
            (v[got].itemsize != 1 && v[got].itemsize != 2 && v[got].itemsize != 4 &&
             v[got].itemsize != 8) ||
            v[got].len / v[got].itemsize != v[0].len / v[0].itemsize) {
            got++;
            PyErr_SetString(PyExc_ValueError, "six unsigned arrays of one length expected");
            goto done;
        }
    }
    Py_ssize_t n = v[0].len / v[0].itemsize;
    result = PyBytes_FromStringAndSize(NULL, n * ROW_WIDTH * (Py_ssize_t)sizeof(uint64_t));
    if (result == NULL) goto done;
    uint64_t *out = (uint64_t *)PyBytes_AS_STRING(result);
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t flags = item_at(&v[5], i), *row = out + i * ROW_WIDTH;
        row[0] = item_at(&v[0], i);
        row[1] = item_at(&v[1], i);
        row[2] = item_at(&v[2], i);
        row[3] = item_at(&v[3], i);
        row[4] = flags & 1;
        row[5] = (flags >> 1) & 1;
        row[6] = item_at(&v[4], i);
    }
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    return result;
}

/* ---- the DIE walks (stackmark.dwarf.functions._walk) ------------------------
 *
 * The per-unit tables (`make_walk_tables`) hold, by abbreviation code, what
 * functions._CodeTables holds plus the attribute layout of the subroutine
 * codes; the Python side decides every form's meaning, so this code only
 * moves over bytes and reads the values it is told to.
 */

/* Variable-size form classes: stackmark.dwarf.abbrev.V_* */
enum { V_ULEB = -1, V_SLEB = -2, V_STRING = -3, V_BLOCK_ULEB = -4, V_BLOCK1 = -5,
       V_BLOCK2 = -6, V_BLOCK4 = -7, V_U24 = -8, V_INDIRECT = -9 };

/* Walk kinds: stackmark.dwarf.functions._SKIP ... (-1: not in the kernel's domain) */
enum { K_SKIP = 0, K_DESCEND = 1, K_SUBROUTINE = 2, K_SCOPE = 3, K_LOCAL_TYPE = 4 };

/* What a subroutine attribute is to the walk, and what its value means. */
enum { R_OTHER = 0, R_LOW_PC, R_HIGH_PC, R_RANGES, R_CALL_FILE, R_CALL_LINE, R_CALL_COLUMN,
       R_COUNT };
enum { M_VALUE = 0, M_CONSTANT = 1, M_ZERO = 2 };

typedef struct {
    int8_t role, meaning;
    int32_t size; /* >= 0: fixed bytes (0: the implicit value), else V_* */
    int64_t implicit;
} Spec;

typedef struct {
    int8_t kind, children, subprogram;
    int8_t sibling;         /* 0: none; else the value's width, or -1 for a LEB128 */
    int8_t sibling_ref_addr;
    int64_t fixed_size;     /* Plan.fixed_size */
    size_t skip, nskip;     /* into WalkTables.steps */
    size_t before, nbefore; /* the skip plan up to DW_AT_sibling */
    size_t specs, nspecs;   /* into WalkTables.specs (subroutine codes) */
} Code;

typedef struct {
    Code *codes;
    size_t ncodes;
    int64_t *steps;
    size_t nsteps;
    Spec *specs;
    size_t nspecs;
} WalkTables;

#define TABLES_CAPSULE "stackmark._native._dwarf.WalkTables"

static void tables_free(PyObject *capsule) {
    WalkTables *t = PyCapsule_GetPointer(capsule, TABLES_CAPSULE);
    if (t == NULL) return;
    free(t->codes);
    free(t->steps);
    free(t->specs);
    free(t);
}

/* Append the ints of `seq` (a tuple) to t->steps; its start in *at, length in *n. */
static int add_steps(WalkTables *t, size_t *cap, PyObject *seq, size_t *at, size_t *n) {
    Py_ssize_t len = PyTuple_Size(seq);
    if (len < 0) return 0;
    if (t->nsteps + (size_t)len > *cap) {
        size_t grown = *cap ? *cap : 256;
        while (grown < t->nsteps + (size_t)len) grown *= 2;
        int64_t *items = realloc(t->steps, grown * sizeof(int64_t));
        if (items == NULL) { PyErr_NoMemory(); return 0; }
        t->steps = items;
        *cap = grown;
    }
    *at = t->nsteps;
    *n = (size_t)len;
    for (Py_ssize_t i = 0; i < len; i++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) return 0;
        t->steps[t->nsteps++] = v;
    }
    return 1;
}

PyDoc_STRVAR(make_walk_tables_doc,
"make_walk_tables(codes) -> tables\n--\n\n"
"The walk tables of one unit. `codes[code]` is None (not in the kernel's domain)\n"
"or (kind, has_children, is_subprogram, fixed_size, skip, sibling, specs) with\n"
"skip a tuple of skip-plan steps, sibling None or (before, width, is_ref_addr)\n"
"(width -1: LEB128) and specs None or a tuple of (role, meaning, size, implicit).");

static PyObject *make_walk_tables(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "codes must be a list");
        return NULL;
    }
    WalkTables *t = calloc(1, sizeof(WalkTables));
    if (t == NULL) return PyErr_NoMemory();
    size_t step_cap = 0, spec_cap = 0;
    t->ncodes = (size_t)PyList_GET_SIZE(arg);
    t->codes = calloc(t->ncodes ? t->ncodes : 1, sizeof(Code));
    if (t->codes == NULL) { PyErr_NoMemory(); goto fail; }
    for (size_t code = 0; code < t->ncodes; code++) {
        Code *c = &t->codes[code];
        PyObject *item = PyList_GET_ITEM(arg, (Py_ssize_t)code);
        c->kind = -1;
        if (item == Py_None) continue;
        int kind, children, subprogram;
        long long fixed_size;
        PyObject *skip, *sibling, *specs;
        if (!PyArg_ParseTuple(item, "iiiLO!OO", &kind, &children, &subprogram, &fixed_size,
                              &PyTuple_Type, &skip, &sibling, &specs))
            goto fail;
        c->kind = (int8_t)kind;
        c->children = (int8_t)children;
        c->subprogram = (int8_t)subprogram;
        c->fixed_size = fixed_size;
        if (!add_steps(t, &step_cap, skip, &c->skip, &c->nskip)) goto fail;
        if (sibling != Py_None) {
            PyObject *before;
            int width, ref_addr;
            if (!PyArg_ParseTuple(sibling, "O!ii", &PyTuple_Type, &before, &width, &ref_addr))
                goto fail;
            if (!add_steps(t, &step_cap, before, &c->before, &c->nbefore)) goto fail;
            c->sibling = (int8_t)width;
            c->sibling_ref_addr = (int8_t)ref_addr;
        }
        if (specs != Py_None) {
            if (!PyTuple_Check(specs)) {
                PyErr_SetString(PyExc_TypeError, "specs must be a tuple");
                goto fail;
            }
            size_t n = (size_t)PyTuple_GET_SIZE(specs);
            if (t->nspecs + n > spec_cap) {
                size_t grown = spec_cap ? spec_cap : 256;
                while (grown < t->nspecs + n) grown *= 2;
                Spec *items = realloc(t->specs, grown * sizeof(Spec));
                if (items == NULL) { PyErr_NoMemory(); goto fail; }
                t->specs = items;
                spec_cap = grown;
            }
            c->specs = t->nspecs;
            c->nspecs = n;
            for (size_t i = 0; i < n; i++) {
                int role, meaning, size;
                long long implicit;
                if (!PyArg_ParseTuple(PyTuple_GET_ITEM(specs, (Py_ssize_t)i), "iiiL", &role,
                                      &meaning, &size, &implicit))
                    goto fail;
                Spec *sp = &t->specs[t->nspecs++];
                sp->role = (int8_t)role;
                sp->meaning = (int8_t)meaning;
                sp->size = size;
                sp->implicit = implicit;
            }
        }
    }
    PyObject *capsule = PyCapsule_New(t, TABLES_CAPSULE, tables_free);
    if (capsule != NULL) return capsule;
fail:
    free(t->codes);
    free(t->steps);
    free(t->specs);
    free(t);
    return NULL;
}

typedef struct {
    Bytes b;            /* the .debug_info buffer */
    uint64_t end;       /* buffer position of the unit's end */
    uint64_t unit_start, base;
    int little;
    const WalkTables *t;
    /* range lists: .debug_rnglists (version 5) or .debug_ranges */
    Bytes rb;
    uint64_t r_start, r_end;
    int version, addr_size;
    uint64_t base_address;
} Walk;

/* stackmark.dwarf.abbrev.skip_attributes */
static int skip_steps(const Walk *w, uint64_t *pos, const int64_t *steps, size_t n) {
    uint64_t p = *pos, value;
    int wide;
    for (size_t i = 0; i < n; i++) {
        int64_t size = steps[i];
        if (size > 0) {
            p += (uint64_t)size;
        } else if (size == V_ULEB || size == V_SLEB) {
            if (!skip_leb(&w->b, &p)) return 0;
        } else if (size == V_STRING) {
            if (p >= w->b.size) return 0;
            const uint8_t *nul = memchr(w->b.data + p, 0, w->b.size - p);
            if (nul == NULL) return 0;
            p = (uint64_t)(nul - w->b.data) + 1;
        } else if (size == V_BLOCK_ULEB) {
            if (!read_uleb(&w->b, &p, &value, &wide) || wide) return 0;
            if (__builtin_add_overflow(p, value, &p)) return 0;
        } else if (size == V_BLOCK1 || size == V_BLOCK2 || size == V_BLOCK4) {
            unsigned width = size == V_BLOCK1 ? 1 : size == V_BLOCK2 ? 2 : 4;
            if (!read_uint(&w->b, p, width, w->little, &value)) return 0;
            p += width + value;
        } else if (size == V_U24) {
            p += 3;
        } else {
            return 0; /* V_INDIRECT: the reference's */
        }
        if (p > ((uint64_t)1 << 62)) return 0; /* past any buffer: the reference fails too */
    }
    *pos = p;
    return 1;
}

/* How deep past_subtree and skip_children may call each other (a DIE whose
 * DW_AT_sibling points backwards has its children skipped one by one): beyond,
 * the reference runs, whose Python recursion limit ends it. */
#define MAX_NESTING 2000

static int skip_children(const Walk *w, uint64_t *pos, int nesting);

/* stackmark.dwarf.functions._past_subtree */
static int past_subtree(const Walk *w, uint64_t *pos, const Code *c, int nesting) {
    uint64_t p = *pos;
    if (nesting > MAX_NESTING) return 0;
    if (c->sibling) {
        uint64_t at = p, value;
        if (!skip_steps(w, &at, w->t->steps + c->before, c->nbefore)) return 0;
        if (c->sibling > 0) {
            if (!read_uint(&w->b, at, (unsigned)c->sibling, w->little, &value)) return 0;
        } else {
            int wide;
            if (!read_uleb(&w->b, &at, &value, &wide) || wide) return 0;
        }
        uint64_t target;
        if (__builtin_add_overflow(c->sibling_ref_addr ? w->base : w->unit_start, value, &target))
            return 0;
        if (target > p) {
            *pos = target;
            return 1;
        }
    }
    if (!skip_steps(w, &p, w->t->steps + c->skip, c->nskip)) return 0;
    if (!skip_children(w, &p, nesting + 1)) return 0;
    *pos = p;
    return 1;
}

/* The abbreviation code at *pos (advancing it) and its entry; 0 at a code the
 * kernel does not handle. A null entry gives code 0 and *code_out NULL. */
static int read_code(const Walk *w, uint64_t *pos, uint64_t *code, const Code **entry) {
    int wide;
    if (!read_uleb(&w->b, pos, code, &wide) || wide) return 0;
    *entry = NULL;
    if (*code == 0) return 1;
    if (*code >= w->t->ncodes || w->t->codes[*code].kind < 0) return 0;
    *entry = &w->t->codes[*code];
    return 1;
}

/* stackmark.dwarf.functions._skip_children */
static int skip_children(const Walk *w, uint64_t *pos, int nesting) {
    uint64_t p = *pos, code;
    size_t depth = 1;
    const Code *c;
    for (;;) {
        if (!read_code(w, &p, &code, &c)) return 0;
        if (c == NULL) {
            if (--depth == 0) break;
            continue;
        }
        if (c->children) {
            if (c->sibling) {
                if (!past_subtree(w, &p, c, nesting + 1)) return 0;
                continue;
            }
            if (!skip_steps(w, &p, w->t->steps + c->skip, c->nskip)) return 0;
            depth++;
        } else if (c->fixed_size >= 0) {
            p += (uint64_t)c->fixed_size;
        } else if (!skip_steps(w, &p, w->t->steps + c->skip, c->nskip)) {
            return 0;
        }
        if (p > ((uint64_t)1 << 62)) return 0;
    }
    *pos = p;
    return 1;
}

typedef struct {
    uint64_t value;
    int present, negative;
    int8_t meaning;
} Attr;

/* A DIE's attributes (stackmark.dwarf.abbrev.decode_attributes, keeping only those
 * the tables give a role: `nroles` of them, role 0 none), and the value of its spec
 * number `capture` besides (SIZE_MAX: none) in *captured, its meaning M_ZERO when
 * not an int. A value the tables step over (DW_FORM_string, blocks) is where it
 * starts in the buffer. The walks read subroutines with it (R_* roles), the name
 * search any DIE (ROLE_*). */
static int decode_roles(const Walk *w, uint64_t *pos, const Code *c, Attr *attrs, size_t nroles,
                        size_t capture, Attr *captured) {
    uint64_t p = *pos, value = 0;
    int wide = 0;
    memset(attrs, 0, sizeof(Attr) * nroles);
    for (size_t i = 0; i < c->nspecs; i++) {
        const Spec *s = &w->t->specs[c->specs + i];
        uint64_t at = p;
        int negative = 0;
        if (s->size > 0) {
            if (s->size <= 8) {
                if (!read_uint(&w->b, p, (unsigned)s->size, w->little, &value)) return 0;
            } else if (p > w->b.size || (uint64_t)s->size > w->b.size - p) {
                return 0;
            }
            p += (uint64_t)s->size;
        } else if (s->size == 0) {
            value = (uint64_t)s->implicit;
            negative = s->implicit < 0;
        } else if (s->size == V_ULEB) {
            if (!read_uleb(&w->b, &p, &value, &wide)) return 0;
            if (wide && (s->role != R_OTHER || i == capture)) return 0;
        } else if (s->size == V_SLEB) {
            int64_t signed_value;
            if (!read_sleb(&w->b, &p, &signed_value)) return 0;
            value = (uint64_t)signed_value;
            negative = signed_value < 0;
        } else if (s->size == V_U24) {
            if (!read_uint(&w->b, p, 3, w->little, &value)) return 0;
            p += 3;
        } else {
            int64_t step = s->size;
            if (!skip_steps(w, &p, &step, 1)) return 0;
            if (p > w->b.size) return 0;
            value = at; /* meaningless to the walks (M_ZERO); the name search's text */
        }
        if (s->role != R_OTHER) {
            Attr *a = &attrs[s->role];
            a->present = 1;
            a->value = value;
            a->negative = negative;
            a->meaning = s->meaning;
        }
        if (i == capture) {
            captured->present = 1;
            captured->value = value;
            captured->negative = negative;
            int is_int = (s->size >= 0 && s->size <= 8) || s->size == V_ULEB ||
                         s->size == V_SLEB || s->size == V_U24;
            captured->meaning = is_int ? M_VALUE : M_ZERO;
        }
    }
    *pos = p;
    return 1;
}

/* A new (low, high) tuple of ints, as Py_BuildValue("(KK)") makes it. */
static PyObject *range_pair(uint64_t low, uint64_t high) {
    PyObject *first = PyLong_FromUnsignedLongLong(low);
    PyObject *second = first ? PyLong_FromUnsignedLongLong(high) : NULL;
    PyObject *pair = second ? PyTuple_New(2) : NULL;
    if (pair == NULL) {
        Py_XDECREF(first);
        Py_XDECREF(second);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, first);
    PyTuple_SET_ITEM(pair, 1, second);
    return pair;
}

/* stackmark.dwarf.ranges._read_rnglist, without the indexed entries. */
static int read_rnglist(const Walk *w, uint64_t offset, PyObject *out) {
    const Bytes *b = &w->rb;
    if (offset >= w->r_end - w->r_start) return 0;
    uint64_t pos = w->r_start + offset, base = w->base_address, low, high, kind, length;
    unsigned size = (unsigned)w->addr_size;
    uint64_t tombstone = size == 8 ? UINT64_MAX : (((uint64_t)1 << (8 * size)) - 1);
    int wide;
    while (pos < w->r_end) {
        if (!read_u8(b, pos++, &kind)) return 0;
        if (kind == 4) { /* DW_RLE_offset_pair: wrapped sums are exact mod 2**64 */
            if (!read_uleb(b, &pos, &low, &wide) || !read_uleb(b, &pos, &high, &wide)) return 0;
            low += base;
            high += base;
        } else if (kind == 0) { /* DW_RLE_end_of_list */
            return 1;
        } else if (kind == 5) { /* DW_RLE_base_address */
            if (!read_uint(b, pos, size, w->little, &base)) return 0;
            pos += size;
            continue;
        } else if (kind == 6) { /* DW_RLE_start_end */
            if (!read_uint(b, pos, size, w->little, &low)) return 0;
            if (!read_uint(b, pos + size, size, w->little, &high)) return 0;
            pos += 2 * size;
        } else if (kind == 7) { /* DW_RLE_start_length */
            if (!read_uint(b, pos, size, w->little, &low)) return 0;
            pos += size;
            if (!read_uleb(b, &pos, &length, &wide)) return 0;
            high = low + length;
        } else { /* indexed entries (need .debug_addr) and unknown kinds */
            return 0;
        }
        if (low != tombstone) {
            PyObject *pair = range_pair(low, high);
            if (pair == NULL) return -1;
            int failed = PyList_Append(out, pair);
            Py_DECREF(pair);
            if (failed) return -1;
        }
    }
    return 0;
}

/* stackmark.dwarf.ranges._read_debug_ranges */
static int read_debug_ranges(const Walk *w, uint64_t offset, PyObject *out) {
    unsigned size = (unsigned)w->addr_size;
    uint64_t max_address = size == 8 ? UINT64_MAX : (((uint64_t)1 << (8 * size)) - 1);
    uint64_t tombstone = max_address - 1, base = w->base_address, pos = offset, start = 0, end = 0;
    uint64_t section_size = w->r_end - w->r_start;
    for (;;) {
        if (pos > section_size || 2 * size > section_size - pos) return 0;
        read_uint(&w->rb, w->r_start + pos, size, w->little, &start);
        read_uint(&w->rb, w->r_start + pos + size, size, w->little, &end);
        pos += 2 * size;
        if (start == 0 && end == 0) return 1;
        if (start == max_address) {
            base = end;
            continue;
        }
        if (start == tombstone || base == tombstone) continue;
        PyObject *pair = range_pair(start + base, end + base);
        if (pair == NULL) return -1;
        int failed = PyList_Append(out, pair);
        Py_DECREF(pair);
        if (failed) return -1;
    }
}

/* stackmark.dwarf.unit.Unit.die_ranges for the forms the tables let through:
 * a new list, NULL with an exception set, or NULL with *fallback set. */
static PyObject *die_ranges(const Walk *w, const Attr *attrs, int *fallback) {
    const Attr *low = &attrs[R_LOW_PC], *high = &attrs[R_HIGH_PC], *ranges = &attrs[R_RANGES];
    *fallback = 1;
    if (low->present) {
        if (low->negative) return NULL;
        if (high->present) {
            uint64_t end = high->value;
            if (high->negative) return NULL;
            if (high->meaning == M_CONSTANT && __builtin_add_overflow(low->value, high->value, &end))
                return NULL;
            *fallback = 0;
            PyObject *pair = range_pair(low->value, end);
            PyObject *one = pair ? PyList_New(1) : NULL;
            if (one == NULL) {
                Py_XDECREF(pair);
                return NULL;
            }
            PyList_SET_ITEM(one, 0, pair);
            return one;
        }
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        *fallback = 0;
        return NULL;
    }
    if (ranges->present) {
        if (ranges->negative) {
            Py_DECREF(out);
            return NULL;
        }
        int done = w->version >= 5 ? read_rnglist(w, ranges->value, out)
                                   : read_debug_ranges(w, ranges->value, out);
        if (done != 1) {
            Py_DECREF(out);
            *fallback = done == 0;
            return NULL;
        }
    }
    *fallback = 0;
    return out;
}

typedef struct {
    int64_t current; /* -1: no subroutine (None), -2: the walk's root, else an index */
    int in_function;
} Frame;

static PyObject *attr_int(const Attr *a) {
    if (!a->present || a->meaning == M_ZERO) return PyLong_FromLong(0);
    if (a->negative) return PyLong_FromLongLong((long long)a->value);
    return PyLong_FromUnsignedLongLong(a->value);
}

/* The walk proper; 1 done, 0 not in the kernel's domain, -1 a Python error. */
static int walk_dies(const Walk *w, uint64_t pos, int lazy, PyObject *out) {
    Frame *stack = NULL;
    size_t depth = 0, cap = 0;
    int64_t current = lazy ? -1 : -2;
    int in_function = !lazy;
    Attr attrs[R_COUNT];
    int status = 0;
    while (pos < w->end) {
        uint64_t die_pos = pos, code;
        const Code *c;
        if (!read_code(w, &pos, &code, &c)) goto done;
        if (c == NULL) {
            if (depth == 0) {
                status = 1;
                goto done;
            }
            depth--;
            current = stack[depth].current;
            in_function = stack[depth].in_function;
            continue;
        }
        int kind = c->kind;
        if (kind == K_SKIP || (kind == K_LOCAL_TYPE && !in_function)) {
            if (c->children) {
                if (!past_subtree(w, &pos, c, 0)) goto done;
            } else if (c->fixed_size >= 0) {
                pos += (uint64_t)c->fixed_size;
            } else if (!skip_steps(w, &pos, w->t->steps + c->skip, c->nskip)) {
                goto done;
            }
            continue;
        }
        int push = 0, scope = kind == K_SCOPE;
        if (kind != K_SUBROUTINE) {
            if (c->fixed_size >= 0) {
                pos += (uint64_t)c->fixed_size;
            } else if (!skip_steps(w, &pos, w->t->steps + c->skip, c->nskip)) {
                goto done;
            }
            push = c->children;
        } else {
            uint64_t attrs_pos = pos;
            if (!decode_roles(w, &pos, c, attrs, R_COUNT, SIZE_MAX, NULL)) goto done;
            int fallback;
            PyObject *ranges = die_ranges(w, attrs, &fallback);
            if (ranges == NULL) {
                status = fallback ? 0 : -1;
                goto done;
            }
            if (PyList_GET_SIZE(ranges) == 0) {
                Py_DECREF(ranges);
                if (c->children) {
                    if (c->subprogram) {
                        push = scope = 1; /* look inside, as for a scope */
                    } else {
                        pos = attrs_pos;
                        if (!past_subtree(w, &pos, c, 0)) goto done;
                    }
                }
            } else {
                int64_t parent = c->subprogram || lazy ? -1 : current;
                int64_t children_pos = -1;
                if (c->children && lazy) {
                    children_pos = (int64_t)pos;
                    pos = attrs_pos;
                    if (!past_subtree(w, &pos, c, 0)) {
                        Py_DECREF(ranges);
                        goto done;
                    }
                }
                PyObject *item = Py_BuildValue(
                    "(KKLLNNNN)", (unsigned long long)(die_pos - w->base),
                    (unsigned long long)code, (long long)parent, (long long)children_pos, ranges,
                    attr_int(&attrs[R_CALL_FILE]), attr_int(&attrs[R_CALL_LINE]),
                    attr_int(&attrs[R_CALL_COLUMN]));
                if (item == NULL || PyList_Append(out, item) < 0) {
                    Py_XDECREF(item);
                    status = -1;
                    goto done;
                }
                Py_DECREF(item);
                if (c->children && !lazy) {
                    if (depth == cap) {
                        size_t grown = cap ? cap * 2 : 64;
                        Frame *frames = realloc(stack, grown * sizeof(Frame));
                        if (frames == NULL) {
                            PyErr_NoMemory();
                            status = -1;
                            goto done;
                        }
                        stack = frames;
                        cap = grown;
                    }
                    stack[depth].current = current;
                    stack[depth].in_function = in_function;
                    depth++;
                    current = PyList_GET_SIZE(out) - 1;
                    in_function = 1;
                }
                continue;
            }
        }
        if (push) {
            if (depth == cap) {
                size_t grown = cap ? cap * 2 : 64;
                Frame *frames = realloc(stack, grown * sizeof(Frame));
                if (frames == NULL) {
                    PyErr_NoMemory();
                    status = -1;
                    goto done;
                }
                stack = frames;
                cap = grown;
            }
            stack[depth].current = current;
            stack[depth].in_function = in_function;
            depth++;
            if (scope) {
                current = -1; /* what lies inside belongs to no code of ours */
                in_function = 1;
            }
        }
    }
done:
    free(stack);
    return status;
}

PyDoc_STRVAR(walk_doc,
"walk(tables, buf, pos, end, unit_start, base, little_endian, lazy, ranges_buf,\n"
"     ranges_start, ranges_end, version, addr_size, base_address)\n"
"--\n\n"
"stackmark.dwarf.functions._walk from buffer position `pos`: a list of\n"
"(offset, code, parent, children_pos, ranges, call_file, call_line, call_column),\n"
"one per subroutine with code in DIE order, parent -1 (none), -2 (the walk's root)\n"
"or an earlier item's index, children_pos -1 unless left for later (lazy walk);\n"
"None when the reference must run.");

static PyObject *walk(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule;
    Py_buffer view, rview;
    unsigned long long pos, end, unit_start, base, r_start, r_end, base_address;
    int little, lazy, version, addr_size;
    if (!PyArg_ParseTuple(args, "Oy*KKKKppy*KKiiK", &capsule, &view, &pos, &end, &unit_start,
                          &base, &little, &lazy, &rview, &r_start, &r_end, &version, &addr_size,
                          &base_address))
        return NULL;
    PyObject *result = NULL;
    const WalkTables *t = PyCapsule_GetPointer(capsule, TABLES_CAPSULE);
    if (t == NULL) goto release;
    Walk w = {
        .b = {(const uint8_t *)view.buf, (uint64_t)view.len},
        .end = end, .unit_start = unit_start, .base = base, .little = little, .t = t,
        .rb = {(const uint8_t *)rview.buf, (uint64_t)rview.len},
        .r_start = r_start, .r_end = r_end, .version = version, .addr_size = addr_size,
        .base_address = base_address,
    };
    if (end > w.b.size || r_end > w.rb.size || r_start > r_end ||
        !(addr_size == 2 || addr_size == 4 || addr_size == 8)) {
        result = Py_NewRef(Py_None);
        goto release;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) goto release;
    int status = walk_dies(&w, pos, lazy, out);
    if (status == 1) {
        result = out;
    } else {
        Py_DECREF(out);
        if (status == 0) result = Py_NewRef(Py_None);
    }
release:
    PyBuffer_Release(&view);
    PyBuffer_Release(&rview);
    return result;
}

/* ---- attribute decoding (stackmark.dwarf.abbrev.decode_attributes) ---------- */

typedef struct {
    PyObject *attr; /* the attribute number, as the dict key */
    int32_t size;   /* >= 0: fixed bytes (0: `implicit`), else V_* */
    int64_t implicit;
} DecodeSpec;

typedef struct {
    size_t n;
    DecodeSpec *specs;
    size_t *order; /* the reference's dict insertion order, as spec indexes */
} DecodePlan;

#define PLAN_CAPSULE "stackmark._native._dwarf.DecodePlan"

static void plan_release(DecodePlan *p) {
    for (size_t i = 0; i < p->n; i++) Py_XDECREF(p->specs[i].attr);
    free(p->specs);
    free(p->order);
    free(p);
}

static void plan_free(PyObject *capsule) {
    DecodePlan *p = PyCapsule_GetPointer(capsule, PLAN_CAPSULE);
    if (p != NULL) plan_release(p);
}

PyDoc_STRVAR(make_decode_plan_doc,
"make_decode_plan(specs, order) -> plan\n--\n\n"
"A decode plan: specs a tuple of (attribute, size, implicit value) in DIE order\n"
"(size as stackmark.dwarf.abbrev.form_size gives it, 0 for the implicit ones),\n"
"order the spec indexes in the order the reference fills its dict.");

static PyObject *make_decode_plan(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *specs, *order;
    if (!PyArg_ParseTuple(args, "O!O!", &PyTuple_Type, &specs, &PyTuple_Type, &order)) return NULL;
    size_t n = (size_t)PyTuple_GET_SIZE(specs);
    if ((size_t)PyTuple_GET_SIZE(order) != n) {
        PyErr_SetString(PyExc_ValueError, "order must list every spec");
        return NULL;
    }
    DecodePlan *p = calloc(1, sizeof(DecodePlan));
    if (p == NULL) return PyErr_NoMemory();
    p->specs = calloc(n ? n : 1, sizeof(DecodeSpec));
    p->order = calloc(n ? n : 1, sizeof(size_t));
    if (p->specs == NULL || p->order == NULL) {
        plan_release(p);
        return PyErr_NoMemory();
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *attr;
        int size;
        long long implicit;
        long long at = PyLong_AsLongLong(PyTuple_GET_ITEM(order, (Py_ssize_t)i));
        if (at == -1 && PyErr_Occurred()) goto fail;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(specs, (Py_ssize_t)i), "OiL", &attr, &size,
                              &implicit))
            goto fail;
        if (at < 0 || (size_t)at >= n) {
            PyErr_SetString(PyExc_ValueError, "order out of range");
            goto fail;
        }
        p->specs[i].attr = Py_NewRef(attr);
        p->specs[i].size = size;
        p->specs[i].implicit = implicit;
        p->order[i] = (size_t)at;
        p->n = i + 1;
    }
    PyObject *capsule = PyCapsule_New(p, PLAN_CAPSULE, plan_free);
    if (capsule != NULL) return capsule;
fail:
    plan_release(p);
    return NULL;
}

/* One value; NULL with no exception set: not in the kernel's domain. */
static PyObject *decode_value(const Bytes *b, uint64_t *pos, const DecodeSpec *s, int little) {
    uint64_t p = *pos, value;
    int wide;
    PyObject *out;
    if (s->size == 0) {
        out = PyLong_FromLongLong(s->implicit);
    } else if (s->size > 0 && s->size <= 8) {
        if (!read_uint(b, p, (unsigned)s->size, little, &value)) return NULL;
        p += (uint64_t)s->size;
        out = PyLong_FromUnsignedLongLong(value);
    } else if (s->size > 8) {
        if (p > b->size || (uint64_t)s->size > b->size - p) return NULL;
        out = PyBytes_FromStringAndSize((const char *)b->data + p, s->size);
        p += (uint64_t)s->size;
    } else if (s->size == V_ULEB) {
        if (!read_uleb(b, &p, &value, &wide) || wide) return NULL;
        out = PyLong_FromUnsignedLongLong(value);
    } else if (s->size == V_SLEB) {
        int64_t signed_value;
        if (!read_sleb(b, &p, &signed_value)) return NULL;
        out = PyLong_FromLongLong(signed_value);
    } else if (s->size == V_U24) {
        if (!read_uint(b, p, 3, little, &value)) return NULL;
        p += 3;
        out = PyLong_FromUnsignedLongLong(value);
    } else if (s->size == V_STRING) {
        if (p >= b->size) return NULL;
        const uint8_t *nul = memchr(b->data + p, 0, b->size - p);
        if (nul == NULL) return NULL;
        out = PyUnicode_DecodeUTF8((const char *)b->data + p, (Py_ssize_t)(nul - (b->data + p)),
                                   "surrogateescape");
        p = (uint64_t)(nul - b->data) + 1;
    } else if (s->size == V_BLOCK_ULEB || s->size == V_BLOCK1 || s->size == V_BLOCK2 ||
               s->size == V_BLOCK4) {
        uint64_t length;
        if (s->size == V_BLOCK_ULEB) {
            if (!read_uleb(b, &p, &length, &wide) || wide) return NULL;
        } else {
            unsigned width = s->size == V_BLOCK1 ? 1 : s->size == V_BLOCK2 ? 2 : 4;
            if (!read_uint(b, p, width, little, &length)) return NULL;
            p += width;
        }
        if (p > b->size || length > b->size - p) return NULL;
        out = PyBytes_FromStringAndSize((const char *)b->data + p, (Py_ssize_t)length);
        p += length;
    } else {
        return NULL; /* V_INDIRECT */
    }
    *pos = p;
    return out;
}

/* The values of one DIE at *pos (advancing it), as a new dict in the reference's
 * order; NULL with an exception set, or NULL alone: not in the kernel's domain. */
static PyObject *decode_dict(const DecodePlan *p, const Bytes *b, uint64_t *pos, int little) {
    PyObject *values = NULL, *small[32], **read = small;
    size_t done = 0;
    uint64_t at_pos = *pos;
    if (p->n > 32 && (read = calloc(p->n, sizeof(PyObject *))) == NULL) return PyErr_NoMemory();
    for (; done < p->n; done++) {
        read[done] = decode_value(b, &at_pos, &p->specs[done], little);
        if (read[done] == NULL) goto clear;
    }
    values = PyDict_New();
    if (values == NULL) goto clear;
    for (size_t i = 0; i < p->n; i++) {
        size_t at = p->order[i];
        if (PyDict_SetItem(values, p->specs[at].attr, read[at]) < 0) {
            Py_CLEAR(values);
            goto clear;
        }
    }
    *pos = at_pos;
clear:
    for (size_t i = 0; i < done; i++) Py_DECREF(read[i]);
    if (read != small) free(read);
    return values;
}

PyDoc_STRVAR(decode_doc,
"decode(plan, buf, pos, little_endian) -> (values, next_pos) | None\n--\n\n"
"stackmark.dwarf.abbrev.decode_attributes for a plan made by make_decode_plan.");

static PyObject *decode(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule;
    Py_buffer view;
    unsigned long long start;
    int little;
    if (!PyArg_ParseTuple(args, "Oy*Kp", &capsule, &view, &start, &little)) return NULL;
    PyObject *result = NULL, *values;
    const DecodePlan *p = PyCapsule_GetPointer(capsule, PLAN_CAPSULE);
    if (p == NULL) goto release;
    Bytes b = {(const uint8_t *)view.buf, (uint64_t)view.len};
    uint64_t pos = start;
    values = decode_dict(p, &b, &pos, little);
    if (values != NULL) {
        result = Py_BuildValue("(OK)", values, (unsigned long long)pos);
        Py_DECREF(values);
    } else if (!PyErr_Occurred()) {
        result = Py_NewRef(Py_None);
    }
release:
    PyBuffer_Release(&view);
    return result;
}

/* ---- the converter's DIE walk (stackmark.formats.gsym.dwarf_walk.UnitWalk) ---
 *
 * Its own tables (make_walk_tables, with the walk kinds of dwarf_walk.py) and
 * the decode plans of the subroutine codes: the walk returns every subprogram
 * and inlined call with code, with its whole attribute dict, and records the
 * parent of every DIE it reaches, exactly as the reference does.
 */

/* Walk kinds: stackmark.formats.gsym.dwarf_walk._JUMP ... */
enum { G_JUMP = 0, G_SUB_CODE = 1, G_SUB_ABSTRACT = 2, G_INLINED = 3, G_BLOCK = 4, G_CONTEXT = 5 };

/* dwarf_walk.UnitWalk._skip_children: the subtree skipped by structure alone. */
static int gsym_skip_children(const Walk *w, uint64_t *pos) {
    uint64_t p = *pos, code;
    size_t depth = 1;
    const Code *c;
    for (;;) {
        if (!read_code(w, &p, &code, &c)) return 0;
        if (c == NULL) {
            if (--depth == 0) break;
            continue;
        }
        if (!skip_steps(w, &p, w->t->steps + c->skip, c->nskip)) return 0;
        if (c->children) depth++;
    }
    *pos = p;
    return 1;
}

/* dwarf_walk.UnitWalk._jump: past a DIE's subtree, by DW_AT_sibling when it
 * points past the DIE's own start. */
static int gsym_jump(const Walk *w, uint64_t die_pos, uint64_t *pos, const Code *c) {
    uint64_t p = *pos;
    if (c->sibling) {
        uint64_t at = p, value, target;
        if (!skip_steps(w, &at, w->t->steps + c->before, c->nbefore)) return 0;
        if (c->sibling > 0) {
            if (!read_uint(&w->b, at, (unsigned)c->sibling, w->little, &value)) return 0;
        } else {
            int wide;
            if (!read_uleb(&w->b, &at, &value, &wide) || wide) return 0;
        }
        if (__builtin_add_overflow(c->sibling_ref_addr ? w->base : w->unit_start, value, &target))
            return 0;
        if (target > die_pos) {
            *pos = target;
            return 1;
        }
    }
    if (!skip_steps(w, &p, w->t->steps + c->skip, c->nskip)) return 0;
    if (!gsym_skip_children(w, &p)) return 0;
    *pos = p;
    return 1;
}

typedef struct {
    uint64_t offset;
    int64_t node; /* the inline context: an item's index, or -1 (None) */
} GsymFrame;

/* The slots of dwarf_walk.DieFunction the walk sets (stackmark/_native/slots.h). */
enum { N_UNIT, N_OFFSET, N_ABBREV, N_VALUES, N_RANGES, N_TAG, N_CHILDREN, N_ORIGIN, N_CALL_FILE,
       N_CALL_LINE, N_CALL_COLUMN, N_SLOTS };
static const char *const node_slot_names[N_SLOTS] = {
    "unit", "offset", "abbrev", "_values", "ranges", "tag", "children", "origin",
    "call_file_here", "call_line", "call_column"};
static SlotMap node_slots;

/* What a converter walk makes its nodes with: the DieFunction class, the unit,
 * and by code the Abbrev objects, their tags and how DW_AT_abstract_origin
 * names the node. */
typedef struct {
    PyTypeObject *cls;
    PyObject *unit, *abbrevs;
    PyObject **tags;         /* by code: the Abbrev's tag (new references), or NULL */
    int *origins;            /* by code: 0, or how DW_AT_abstract_origin names the node */
    size_t *origin_specs;    /* by code: the index of that attribute among its specs */
    PyObject *unit_offset;   /* the unit's .debug_info offset, for local references */
    uint64_t unit_start;     /* the same, when below 2**62 (else UINT64_MAX) */
    size_t ncodes;
} NodeMaker;

static PyObject *s_tag;

/* dwarf_walk.DieFunction.origin: Unit.ref_attr's DW_AT_abstract_origin for the
 * codes whose calls are named by their origin alone (1: a unit-local reference,
 * 2: DW_FORM_ref_addr), else None; `value` is the attribute as the walk read
 * it. A new reference, NULL on an error. */
static PyObject *node_origin(const NodeMaker *m, uint64_t code, const Attr *value) {
    int mode = m->origins[code];
    if (mode == 0 || !value->present || value->meaning != M_VALUE) return Py_NewRef(Py_None);
    if (mode == 1 && !value->negative && m->unit_start < ((uint64_t)1 << 62) &&
        value->value < ((uint64_t)1 << 62))
        return PyLong_FromUnsignedLongLong(m->unit_start + value->value);
    PyObject *number = value->negative ? PyLong_FromLongLong((long long)value->value)
                                       : PyLong_FromUnsignedLongLong(value->value);
    if (number == NULL || mode != 1) return number;
    Py_SETREF(number, PyNumber_Add(m->unit_offset, number));
    return number;
}

/* dwarf_walk.DieFunction.call_file_here: the int the DIE holds, else None. */
static PyObject *own_call_file(const Attr *a) {
    if (!a->present || a->meaning == M_ZERO) return Py_NewRef(Py_None);
    return attr_int(a);
}

/* A new DieFunction, as its __init__ makes it but with its values left to be
 * decoded when asked for; steals `ranges`. */
static PyObject *make_node(const NodeMaker *m, uint64_t offset, uint64_t code, const Attr *attrs,
                           const Attr *origin_value, PyObject *ranges, PyObject **children) {
    PyObject *node = m->cls->tp_alloc(m->cls, 0);
    if (node == NULL) {
        Py_DECREF(ranges);
        return NULL;
    }
    /* every slot is set, or the node is freed with those it has */
    SLOT(node, node_slots, N_RANGES) = ranges;
    PyObject *kids = PyList_New(0);
    if (kids == NULL) goto fail;
    SLOT(node, node_slots, N_CHILDREN) = kids;
    if ((SLOT(node, node_slots, N_OFFSET) = PyLong_FromUnsignedLongLong(offset)) == NULL ||
        (SLOT(node, node_slots, N_ORIGIN) = node_origin(m, code, origin_value)) == NULL ||
        (SLOT(node, node_slots, N_CALL_FILE) = own_call_file(&attrs[R_CALL_FILE])) == NULL ||
        (SLOT(node, node_slots, N_CALL_LINE) = attr_int(&attrs[R_CALL_LINE])) == NULL ||
        (SLOT(node, node_slots, N_CALL_COLUMN) = attr_int(&attrs[R_CALL_COLUMN])) == NULL)
        goto fail;
    SLOT(node, node_slots, N_UNIT) = Py_NewRef(m->unit);
    SLOT(node, node_slots, N_ABBREV) = Py_NewRef(PyList_GET_ITEM(m->abbrevs, (Py_ssize_t)code));
    SLOT(node, node_slots, N_TAG) = Py_NewRef(m->tags[code]);
    SLOT(node, node_slots, N_VALUES) = Py_NewRef(Py_None);
    *children = kids; /* borrowed from here on: the node holds it */
    return node;
fail:
    Py_DECREF(node);
    return NULL;
}

/* The walk proper; 1 done, 0 not in the kernel's domain, -1 a Python error. */
static int gsym_walk_dies(const Walk *w, uint64_t pos, uint64_t top, const NodeMaker *maker,
                          PyObject *out, U64s parents[2]) {
    PyObject **children = NULL; /* by node index: its children list (borrowed) */
    size_t nodes = 0, nodes_cap = 0;
    GsymFrame *stack = malloc(64 * sizeof(GsymFrame));
    size_t depth = 1, cap = 64;
    Attr attrs[R_COUNT], origin_value;
    int status = 0;
    if (stack == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    stack[0].offset = top;
    stack[0].node = -1;
    while (pos < w->end && depth > 0) {
        uint64_t die_pos = pos, code;
        const Code *c;
        if (!read_code(w, &pos, &code, &c)) goto done;
        if (c == NULL) {
            depth--;
            continue;
        }
        uint64_t offset = die_pos - w->base;
        int64_t context = stack[depth - 1].node;
        if (!u64s_reserve(&parents[0], 1) || !u64s_reserve(&parents[1], 1)) {
            PyErr_NoMemory();
            status = -1;
            goto done;
        }
        parents[0].items[parents[0].len++] = offset;
        parents[1].items[parents[1].len++] = stack[depth - 1].offset;
        int kind = c->kind, push = c->children;
        int64_t node = -1;
        if (kind == G_JUMP) {
            if (c->children) {
                if (!gsym_jump(w, die_pos, &pos, c)) goto done;
            } else if (c->fixed_size >= 0) {
                pos += (uint64_t)c->fixed_size;
            } else if (!skip_steps(w, &pos, w->t->steps + c->skip, c->nskip)) {
                goto done;
            }
            if (pos > ((uint64_t)1 << 62)) goto done;
            continue;
        }
        if (kind == G_SUB_CODE || kind == G_INLINED) {
            memset(&origin_value, 0, sizeof origin_value);
            if (!decode_roles(w, &pos, c, attrs, R_COUNT, maker->origin_specs[code], &origin_value))
                goto done;
            if (pos > ((uint64_t)1 << 62)) goto done;
            if (kind == G_INLINED && context < 0) {
                if (c->children && !gsym_skip_children(w, &pos)) goto done;
                continue;
            }
            int fallback;
            PyObject *ranges = die_ranges(w, attrs, &fallback);
            if (ranges == NULL) {
                status = fallback ? 0 : -1;
                goto done;
            }
            if (PyList_GET_SIZE(ranges) > 0) {
                if (nodes == nodes_cap) {
                    size_t grown = nodes_cap ? 2 * nodes_cap : 256;
                    PyObject **more = realloc(children, grown * sizeof(PyObject *));
                    if (more == NULL) {
                        Py_DECREF(ranges);
                        PyErr_NoMemory();
                        status = -1;
                        goto done;
                    }
                    children = more;
                    nodes_cap = grown;
                }
                PyObject *item = make_node(maker, offset, code, attrs, &origin_value, ranges,
                                           &children[nodes]);
                PyObject *into = kind == G_SUB_CODE ? out : children[context];
                if (item == NULL || PyList_Append(into, item) < 0) {
                    Py_XDECREF(item);
                    status = -1;
                    goto done;
                }
                Py_DECREF(item);
                node = (int64_t)nodes++;
            } else {
                Py_DECREF(ranges);
                if (kind == G_INLINED) {
                    if (c->children && !gsym_skip_children(w, &pos)) goto done;
                    continue;
                }
            }
        } else {
            if (c->fixed_size >= 0) {
                pos += (uint64_t)c->fixed_size;
            } else if (!skip_steps(w, &pos, w->t->steps + c->skip, c->nskip)) {
                goto done;
            }
            if (pos > ((uint64_t)1 << 62)) goto done;
            node = kind == G_BLOCK ? context : -1;
        }
        if (push) {
            if (depth == cap) {
                GsymFrame *frames = realloc(stack, 2 * cap * sizeof(GsymFrame));
                if (frames == NULL) {
                    PyErr_NoMemory();
                    status = -1;
                    goto done;
                }
                stack = frames;
                cap *= 2;
            }
            stack[depth].offset = offset;
            stack[depth].node = node;
            depth++;
        }
    }
    status = 1;
done:
    free(stack);
    free(children);
    return status;
}

PyDoc_STRVAR(gsym_walk_doc,
"gsym_walk(tables, buf, pos, end, unit_start, base, little_endian,\n"
"          ranges_buf, ranges_start, ranges_end, version, addr_size, base_address,\n"
"          top_offset, node_class, unit, abbrevs, origins, origin_specs, unit_offset)\n"
"--\n\n"
"stackmark.formats.gsym.dwarf_walk.UnitWalk._walk from buffer position `pos`\n"
"(after the unit DIE at `top_offset`): (functions, offsets, parents), or None\n"
"when the reference must run. functions: the subprograms with code in DIE order,\n"
"each a `node_class` (DieFunction) of `unit` with its inline tree of inlined\n"
"calls in `children`, its call fields and origin set and its `values` left to\n"
"be decoded when asked for. offsets and parents: the DIEs reached and their\n"
"parents' offsets, as native uint64 arrays (bytes), in DIE order.\n"
"`abbrevs[code]` is each code's Abbrev, `origins[code]` how its\n"
"DW_AT_abstract_origin names the node (DieFunction.origin: 0 none, 1 a\n"
"reference within the unit at `unit_offset`, 2 DW_FORM_ref_addr) and\n"
"`origin_specs[code]` that attribute's index among the code's specs (-1 none).");

/* The maker's tables by code; 1, 0 when a list is not of the shape the kernel
 * reads (the reference runs), -1 on an error. */
static int maker_read(NodeMaker *m, PyObject *origins, PyObject *origin_specs) {
    size_t n = m->ncodes;
    m->tags = calloc(n ? n : 1, sizeof(PyObject *));
    m->origins = calloc(n ? n : 1, sizeof(int));
    m->origin_specs = calloc(n ? n : 1, sizeof(size_t));
    if (m->tags == NULL || m->origins == NULL || m->origin_specs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        PyObject *abbrev = PyList_GET_ITEM(m->abbrevs, (Py_ssize_t)i);
        long mode = PyLong_AsLong(PyList_GET_ITEM(origins, (Py_ssize_t)i));
        long long at = PyLong_AsLongLong(PyList_GET_ITEM(origin_specs, (Py_ssize_t)i));
        if ((mode == -1 || at == -1) && PyErr_Occurred()) return -1;
        if (mode < 0 || mode > 2 || (mode != 0 && at < 0)) return 0;
        m->origins[i] = (int)mode;
        m->origin_specs[i] = at < 0 ? SIZE_MAX : (size_t)at;
        if (abbrev != Py_None && (m->tags[i] = PyObject_GetAttr(abbrev, s_tag)) == NULL) return -1;
    }
    return 1;
}

static void maker_free(NodeMaker *m) {
    if (m->tags != NULL)
        for (size_t i = 0; i < m->ncodes; i++) Py_XDECREF(m->tags[i]);
    free(m->tags);
    free(m->origins);
    free(m->origin_specs);
}

static PyObject *gsym_walk(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule, *origins, *origin_specs;
    Py_buffer view, rview;
    unsigned long long pos, end, unit_start, base, r_start, r_end, base_address, top;
    int little, version, addr_size;
    NodeMaker maker = {0};
    if (!PyArg_ParseTuple(args, "Oy*KKKKpy*KKiiKKO!OO!O!O!O!", &capsule, &view, &pos, &end,
                          &unit_start, &base, &little, &rview, &r_start, &r_end, &version,
                          &addr_size, &base_address, &top, &PyType_Type, &maker.cls, &maker.unit,
                          &PyList_Type, &maker.abbrevs, &PyList_Type, &origins, &PyList_Type,
                          &origin_specs, &PyLong_Type, &maker.unit_offset))
        return NULL;
    PyObject *result = NULL;
    U64s pairs[2] = {{NULL, 0, 0}, {NULL, 0, 0}};
    const WalkTables *t = PyCapsule_GetPointer(capsule, TABLES_CAPSULE);
    if (t == NULL) goto release;
    Walk w = {
        .b = {(const uint8_t *)view.buf, (uint64_t)view.len},
        .end = end, .unit_start = unit_start, .base = base, .little = little, .t = t,
        .rb = {(const uint8_t *)rview.buf, (uint64_t)rview.len},
        .r_start = r_start, .r_end = r_end, .version = version, .addr_size = addr_size,
        .base_address = base_address,
    };
    if (end > w.b.size || r_end > w.rb.size || r_start > r_end || base > w.b.size ||
        (size_t)PyList_GET_SIZE(maker.abbrevs) != t->ncodes ||
        (size_t)PyList_GET_SIZE(origins) != t->ncodes ||
        (size_t)PyList_GET_SIZE(origin_specs) != t->ncodes ||
        !(addr_size == 2 || addr_size == 4 || addr_size == 8)) {
        result = Py_NewRef(Py_None);
        goto release;
    }
    maker.ncodes = t->ncodes;
    maker.unit_start = PyLong_AsUnsignedLongLong(maker.unit_offset);
    if (maker.unit_start == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear(); /* negative or past 64 bits: added as Python ints */
        maker.unit_start = UINT64_MAX;
    }
    int ready = slot_map(&node_slots, maker.cls, node_slot_names, N_SLOTS);
    if (ready == 1) ready = maker_read(&maker, origins, origin_specs);
    if (ready != 1) {
        if (ready == 0) result = Py_NewRef(Py_None);
        goto release;
    }
    if (!u64s_reserve(&pairs[0], 1) || !u64s_reserve(&pairs[1], 1)) { /* never NULL: y# */
        PyErr_NoMemory();
        goto release;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) goto release;
    int status = gsym_walk_dies(&w, pos, top, &maker, out, pairs);
    if (status == 1) {
        result = Py_BuildValue(
            "(Ny#y#)", out, (const char *)pairs[0].items,
            (Py_ssize_t)(pairs[0].len * sizeof(uint64_t)), (const char *)pairs[1].items,
            (Py_ssize_t)(pairs[1].len * sizeof(uint64_t)));
    } else {
        Py_DECREF(out);
        if (status == 0) result = Py_NewRef(Py_None);
    }
release:
    maker_free(&maker);
    free(pairs[0].items);
    free(pairs[1].items);
    PyBuffer_Release(&view);
    PyBuffer_Release(&rview);
    return result;
}

PyDoc_STRVAR(read_rnglist_doc,
"read_rnglist(buf, start, end, offset, addr_size, little_endian, base_address)\n--\n\n"
"stackmark.dwarf.ranges._read_rnglist over the section buf[start:end]: the list\n"
"of (low, high), or None when the reference must run (indexed entries, damage).");

static PyObject *read_rnglist_py(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    unsigned long long start, end, offset, base_address;
    int addr_size, little;
    if (!PyArg_ParseTuple(args, "y*KKKipK", &view, &start, &end, &offset, &addr_size, &little,
                          &base_address))
        return NULL;
    PyObject *result = NULL;
    Walk w = {.rb = {(const uint8_t *)view.buf, (uint64_t)view.len}, .r_start = start,
              .r_end = end, .addr_size = addr_size, .little = little,
              .base_address = base_address};
    if (end > w.rb.size || start > end || !(addr_size == 2 || addr_size == 4 || addr_size == 8)) {
        result = Py_NewRef(Py_None);
        goto release;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) goto release;
    int status = read_rnglist(&w, offset, out);
    if (status == 1) {
        result = out;
    } else {
        Py_DECREF(out);
        if (status == 0) result = Py_NewRef(Py_None);
    }
release:
    PyBuffer_Release(&view);
    return result;
}

/* ---- address maps (stackmark.dwarf.functions._AddressMap.insert) ------------ */

typedef struct {
    uint64_t *starts, *ends;
    /* the int objects the bounds came from (borrowed from the input), given back
     * as they are: the reference's map shares them with the ranges too */
    PyObject **start_objs, **end_objs;
    size_t *nodes;
    size_t len, cap;
} AddressMap;

static size_t bisect_left_u64(const uint64_t *a, size_t n, uint64_t key) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static size_t bisect_right_u64(const uint64_t *a, size_t n, uint64_t key) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (key < a[mid]) hi = mid; else lo = mid + 1;
    }
    return lo;
}

static int map_grow(AddressMap *m) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *starts = realloc(m->starts, cap * sizeof(uint64_t));
    if (starts == NULL) return 0;
    m->starts = starts;
    uint64_t *ends = realloc(m->ends, cap * sizeof(uint64_t));
    if (ends == NULL) return 0;
    m->ends = ends;
    PyObject **start_objs = realloc(m->start_objs, cap * sizeof(PyObject *));
    if (start_objs == NULL) return 0;
    m->start_objs = start_objs;
    PyObject **end_objs = realloc(m->end_objs, cap * sizeof(PyObject *));
    if (end_objs == NULL) return 0;
    m->end_objs = end_objs;
    size_t *nodes = realloc(m->nodes, cap * sizeof(size_t));
    if (nodes == NULL) return 0;
    m->nodes = nodes;
    m->cap = cap;
    return 1;
}

/* _AddressMap._set */
static int map_set(AddressMap *m, uint64_t key, PyObject *key_obj, uint64_t end,
                   PyObject *end_obj, size_t node) {
    size_t i = bisect_left_u64(m->starts, m->len, key);
    if (i < m->len && m->starts[i] == key) {
        m->ends[i] = end;
        m->end_objs[i] = end_obj;
        m->nodes[i] = node;
        return 1;
    }
    if (m->len == m->cap && !map_grow(m)) return 0;
    size_t tail = m->len - i;
    memmove(m->starts + i + 1, m->starts + i, tail * sizeof(uint64_t));
    memmove(m->ends + i + 1, m->ends + i, tail * sizeof(uint64_t));
    memmove(m->start_objs + i + 1, m->start_objs + i, tail * sizeof(PyObject *));
    memmove(m->end_objs + i + 1, m->end_objs + i, tail * sizeof(PyObject *));
    memmove(m->nodes + i + 1, m->nodes + i, tail * sizeof(size_t));
    m->starts[i] = key;
    m->start_objs[i] = key_obj;
    m->ends[i] = end;
    m->end_objs[i] = end_obj;
    m->nodes[i] = node;
    m->len++;
    return 1;
}

/* _AddressMap.insert, index for index (a stale index included, as the reference has it) */
static int map_insert(AddressMap *m, uint64_t low, PyObject *low_obj, uint64_t high,
                      PyObject *high_obj, size_t node) {
    size_t i = bisect_right_u64(m->starts, m->len, low);
    if (i > 0 && low < m->ends[i - 1]) {
        size_t b = i - 1;
        uint64_t b_start = m->starts[b], b_end = m->ends[b];
        PyObject *b_end_obj = m->end_objs[b];
        size_t b_node = m->nodes[b];
        if (high < b_end && !map_set(m, high, high_obj, b_end, b_end_obj, b_node)) return 0;
        if (low > b_start) {
            m->ends[b] = low;
            m->end_objs[b] = low_obj;
        }
    }
    return map_set(m, low, low_obj, high, high_obj, node);
}

PyDoc_STRVAR(address_map_doc,
"address_map(ranges) -> (starts, ends, indexes) | None\n--\n\n"
"stackmark.dwarf.functions._AddressMap after inserting `ranges`, a list of\n"
"(low, high) with the node of item i being i: its three lists, indexes naming\n"
"the nodes; None when a bound does not fit 64 bits (the reference runs).");

static PyObject *address_map(PyObject *self, PyObject *arg) {
    (void)self;
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "ranges must be a list");
        return NULL;
    }
    AddressMap m = {NULL, NULL, NULL, NULL, NULL, 0, 0};
    PyObject *result = NULL;
    Py_ssize_t n = PyList_GET_SIZE(arg);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(arg, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "ranges must be (low, high) tuples");
            goto done;
        }
        uint64_t bounds[2];
        for (int k = 0; k < 2; k++) {
            PyObject *value = PyTuple_GET_ITEM(pair, k);
            if (!PyLong_Check(value)) {
                PyErr_SetString(PyExc_TypeError, "range bounds must be ints");
                goto done;
            }
            bounds[k] = PyLong_AsUnsignedLongLong(value);
            if (PyErr_Occurred()) { /* negative or wider than 64 bits */
                PyErr_Clear();
                result = Py_NewRef(Py_None);
                goto done;
            }
        }
        if (!map_insert(&m, bounds[0], PyTuple_GET_ITEM(pair, 0), bounds[1],
                        PyTuple_GET_ITEM(pair, 1), (size_t)i)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    PyObject *starts = PyList_New((Py_ssize_t)m.len), *ends = PyList_New((Py_ssize_t)m.len);
    PyObject *nodes = PyList_New((Py_ssize_t)m.len);
    if (starts == NULL || ends == NULL || nodes == NULL) goto lists_failed;
    for (size_t i = 0; i < m.len; i++) {
        PyObject *start = Py_NewRef(m.start_objs[i]);
        PyObject *end = Py_NewRef(m.end_objs[i]);
        PyObject *node = PyLong_FromSize_t(m.nodes[i]);
        if (node == NULL) {
            Py_DECREF(start);
            Py_DECREF(end);
            goto lists_failed;
        }
        PyList_SET_ITEM(starts, (Py_ssize_t)i, start);
        PyList_SET_ITEM(ends, (Py_ssize_t)i, end);
        PyList_SET_ITEM(nodes, (Py_ssize_t)i, node);
    }
    result = Py_BuildValue("(NNN)", starts, ends, nodes);
    goto done;
lists_failed:
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    Py_XDECREF(nodes);
done:
    free(m.starts);
    free(m.ends);
    free(m.start_objs);
    free(m.end_objs);
    free(m.nodes);
    return result;
}

/* ---- abbreviation tables (stackmark.dwarf.abbrev.parse_abbrev_table) -------- */

#define DW_FORM_implicit_const 0x21

/* One entry's attribute specs as a tuple of (attribute, form, implicit); NULL with
 * no exception set: not in the kernel's domain. */
static PyObject *read_specs(const Bytes *b, uint64_t *pos) {
    PyObject *specs = PyList_New(0), *result = NULL;
    if (specs == NULL) return NULL;
    uint64_t p = *pos, attr, form;
    int wide;
    for (;;) {
        if (!read_uleb(b, &p, &attr, &wide) || wide) goto done;
        if (!read_uleb(b, &p, &form, &wide) || wide) goto done;
        if (attr == 0 && form == 0) break;
        int64_t implicit = 0;
        if (form == DW_FORM_implicit_const && !read_sleb(b, &p, &implicit)) goto done;
        PyObject *spec = Py_BuildValue("(KKL)", attr, form, (long long)implicit);
        if (spec == NULL) goto done;
        int failed = PyList_Append(specs, spec);
        Py_DECREF(spec);
        if (failed) goto done;
    }
    result = PyList_AsTuple(specs);
    *pos = p;
done:
    Py_DECREF(specs);
    return result;
}

PyDoc_STRVAR(parse_abbrevs_doc,
"parse_abbrevs(buf, pos, end) -> entries | None\n--\n\n"
"stackmark.dwarf.abbrev.parse_abbrev_table from buffer position `pos` (section end\n"
"`end`): the list of (code, tag, has_children, specs) in table order, or None\n"
"when the reference must run (damage, values wider than 64 bits).");

static PyObject *parse_abbrevs(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    unsigned long long start, end;
    if (!PyArg_ParseTuple(args, "y*KK", &view, &start, &end)) return NULL;
    Bytes b = {(const uint8_t *)view.buf, (uint64_t)view.len};
    PyObject *out = PyList_New(0), *result = NULL;
    if (out == NULL) goto release;
    uint64_t pos = start, code, tag, children;
    int wide;
    while (pos < end) {
        if (!read_uleb(&b, &pos, &code, &wide) || wide) break;
        if (code == 0) {
            result = Py_NewRef(out);
            break;
        }
        if (pos >= end) break;
        if (!read_uleb(&b, &pos, &tag, &wide) || wide) break;
        if (!read_u8(&b, pos++, &children)) break;
        PyObject *specs = read_specs(&b, &pos);
        if (specs == NULL) {
            if (PyErr_Occurred()) goto fail;
            break;
        }
        PyObject *entry = Py_BuildValue("(KKNN)", code, tag, PyBool_FromLong(children != 0), specs);
        if (entry == NULL) goto fail;
        int failed = PyList_Append(out, entry);
        Py_DECREF(entry);
        if (failed) goto fail;
    }
    if (result == NULL) result = Py_NewRef(Py_None);
fail:
    Py_XDECREF(out);
release:
    PyBuffer_Release(&view);
    return result;
}

/* ---- a DIE's names (stackmark.formats.gsym.dwarf_walk.DieFunction.names) ----
 *
 * The linkage name and the name of a subprogram or inlined call: the first
 * found on the DIE or on the DIEs its DW_AT_abstract_origin and
 * DW_AT_specification lead to, in the reference's worklist order (targets
 * read when they are pushed, each at most once). Only the attributes the
 * names need are read, into Attr slots; no dict is made. The tables are walk
 * tables (make_walk_tables) whose specs give every code's name roles and
 * meanings (dwarf_walk._name_spec). References leaving the unit, type
 * signatures, supplementary strings and damaged data go to the reference.
 */

/* An attribute's role for the names (Spec.role): dwarf_walk._NAME_ROLES. */
enum {
    ROLE_OTHER = 0, ROLE_NAME, ROLE_LINKAGE, ROLE_MIPS_LINKAGE, ROLE_ORIGIN, ROLE_SPECIFICATION,
    ROLE_SIGNATURE, /* read only by qualified_prefix, which leaves such DIEs to the reference */
    ROLE_COUNT
};
/* What its form means (Spec.meaning): dwarf_walk._NAME_MEANINGS. F_NONE: a value
 * the reference reads as None (not a string, not a reference it follows). */
enum { F_NONE = 0, F_HAND_BACK, F_STRING, F_STRP, F_LINE_STRP, F_STRX, F_REF_UNIT, F_REF_ADDR };

/* How many DIEs one search may visit before it is left to the reference. */
#define NAME_WORK 64

typedef struct {
    PyObject *tables;                        /* a WalkTables capsule */
    PyObject *info, *str, *line_str, *offs;  /* the sections' buffer objects */
    uint64_t info_start, unit_offset, die_offset, unit_end; /* the last three section-relative */
    uint64_t str_start, str_end, line_str_start, line_str_end, offs_start, offs_end, offs_base;
    int little, offset_size;
} NameScope;

#define SCOPE_CAPSULE "stackmark._native._dwarf.NameScope"

static void scope_free(PyObject *capsule) {
    NameScope *s = PyCapsule_GetPointer(capsule, SCOPE_CAPSULE);
    if (s == NULL) return;
    Py_XDECREF(s->tables);
    Py_XDECREF(s->info);
    Py_XDECREF(s->str);
    Py_XDECREF(s->line_str);
    Py_XDECREF(s->offs);
    free(s);
}

PyDoc_STRVAR(make_name_scope_doc,
"make_name_scope(tables, info, info_start, unit_offset, die_offset, unit_end,\n"
"                little_endian, debug_str, str_start, str_end, line_str,\n"
"                line_str_start, line_str_end, str_offsets, offsets_start,\n"
"                offsets_end, str_offsets_base, offset_size) -> scope\n--\n\n"
"What die_names reads of one unit: its name tables (make_walk_tables, specs\n"
"with name roles), its place in .debug_info (section-relative offsets, the\n"
"section starting at buffer position `info_start`), and the string sections\n"
"(buffer objects with the start and end positions of the section in each).");

static PyObject *make_name_scope(PyObject *self, PyObject *args) {
    (void)self;
    NameScope *s = calloc(1, sizeof(NameScope));
    if (s == NULL) return PyErr_NoMemory();
    unsigned long long info_start, unit_offset, die_offset, unit_end, str_start, str_end,
        line_str_start, line_str_end, offs_start, offs_end, offs_base;
    if (!PyArg_ParseTuple(args, "OOKKKKpOKKOKKOKKKi", &s->tables, &s->info, &info_start,
                          &unit_offset, &die_offset, &unit_end, &s->little, &s->str, &str_start,
                          &str_end, &s->line_str, &line_str_start, &line_str_end, &s->offs,
                          &offs_start, &offs_end, &offs_base, &s->offset_size)) {
        free(s);
        return NULL;
    }
    if (PyCapsule_GetPointer(s->tables, TABLES_CAPSULE) == NULL) {
        free(s);
        return NULL;
    }
    s->info_start = info_start;
    s->unit_offset = unit_offset;
    s->die_offset = die_offset;
    s->unit_end = unit_end;
    s->str_start = str_start;
    s->str_end = str_end;
    s->line_str_start = line_str_start;
    s->line_str_end = line_str_end;
    s->offs_start = offs_start;
    s->offs_end = offs_end;
    s->offs_base = offs_base;
    Py_INCREF(s->tables);
    Py_INCREF(s->info);
    Py_INCREF(s->str);
    Py_INCREF(s->line_str);
    Py_INCREF(s->offs);
    PyObject *capsule = PyCapsule_New(s, SCOPE_CAPSULE, scope_free);
    if (capsule == NULL) {
        Py_DECREF(s->tables);
        Py_DECREF(s->info);
        Py_DECREF(s->str);
        Py_DECREF(s->line_str);
        Py_DECREF(s->offs);
        free(s);
    }
    return capsule;
}

/* A walk over the scope's unit in the .debug_info buffer `info`; 0 when the
 * unit does not lie in the buffer. */
static int scope_walk(const NameScope *s, const Bytes *info, Walk *w) {
    const WalkTables *t = PyCapsule_GetPointer(s->tables, TABLES_CAPSULE);
    if (t == NULL) {
        PyErr_Clear();
        return 0;
    }
    if (s->info_start > info->size || s->unit_end > info->size - s->info_start) return 0;
    memset(w, 0, sizeof *w);
    w->b = *info;
    w->little = s->little;
    w->t = t;
    w->base = s->info_start;
    w->end = s->info_start + s->unit_end;
    w->unit_start = s->info_start + s->unit_offset;
    return 1;
}

/* The name roles of the DIE at section `offset` of the scope's unit
 * (Unit.die, keeping only those): 1 read (*null: a null entry), 0 not in the
 * kernel's domain (outside the unit's DIEs, an unknown code, damage, a DIE
 * running past the unit's end: the reference raises or follows it). */
static int read_named_die(const NameScope *s, const Bytes *info, uint64_t offset, Attr *attrs,
                          int *null, uint64_t *code_out) {
    Walk walk, *w = &walk;
    if (!scope_walk(s, info, w)) return 0;
    if (offset < s->die_offset || offset >= s->unit_end) return 0;
    uint64_t p = w->base + offset, code;
    const Code *c;
    if (!read_code(w, &p, &code, &c)) return 0;
    *null = c == NULL;
    *code_out = code;
    if (c == NULL) return 1;
    if (!decode_roles(w, &p, c, attrs, ROLE_COUNT, SIZE_MAX, NULL)) return 0;
    if (p - w->base > s->unit_end) return 0;
    return 1;
}

/* A string section's buffer, got on first use. */
typedef struct {
    PyObject *obj;
    Py_buffer view;
    int held;
} LazyBuffer;

static const Py_buffer *lazy_buffer(LazyBuffer *lb) {
    if (!lb->held) {
        if (PyObject_GetBuffer(lb->obj, &lb->view, PyBUF_SIMPLE) < 0) {
            PyErr_Clear(); /* e.g. a closed mapping: the reference says what is wrong */
            return NULL;
        }
        lb->held = 1;
    }
    return &lb->view;
}

/* stackmark.dwarf.sections.Section.cstring of the section at [start, end) of the
 * buffer; NULL alone when the reference raises (outside, no NUL). */
static PyObject *section_cstring(LazyBuffer *lb, uint64_t start, uint64_t end, uint64_t offset) {
    const Py_buffer *v = lazy_buffer(lb);
    if (v == NULL || end > (uint64_t)v->len || start > end || offset >= end - start) return NULL;
    const char *text = (const char *)v->buf + start + offset;
    const char *nul = memchr(text, 0, end - start - offset);
    if (nul == NULL) return NULL;
    return PyUnicode_DecodeUTF8(text, nul - text, "surrogateescape");
}

/* Unit.string_attr of an attribute found on a DIE of the scope's unit: a new
 * reference (None for a value the reference reads as no string); NULL alone: the
 * reference's, NULL with an exception: an error. `bufs`: the scope's .debug_str,
 * .debug_line_str and .debug_str_offsets. */
static PyObject *name_string(const NameScope *s, const Bytes *info, LazyBuffer bufs[3],
                             const Attr *a) {
    switch (a->meaning) {
    case F_NONE:
        return Py_NewRef(Py_None);
    case F_STRING: {
        if (a->value >= info->size) return NULL;
        const uint8_t *text = info->data + a->value;
        const uint8_t *nul = memchr(text, 0, info->size - a->value);
        if (nul == NULL) return NULL;
        return PyUnicode_DecodeUTF8((const char *)text, nul - text, "surrogateescape");
    }
    case F_STRP:
        return section_cstring(&bufs[0], s->str_start, s->str_end, a->value);
    case F_LINE_STRP:
        return section_cstring(&bufs[1], s->line_str_start, s->line_str_end, a->value);
    case F_STRX: {
        /* Unit._str_offset: entry `value` of the unit's .debug_str_offsets part */
        uint64_t size = (uint64_t)s->offset_size, where, entry;
        if (__builtin_mul_overflow(a->value, size, &where) ||
            __builtin_add_overflow(where, s->offs_base, &where))
            return NULL;
        const Py_buffer *v = lazy_buffer(&bufs[2]);
        if (v == NULL || s->offs_end > (uint64_t)v->len || s->offs_start > s->offs_end ||
            where > s->offs_end - s->offs_start || size > s->offs_end - s->offs_start - where)
            return NULL;
        Bytes ob = {(const uint8_t *)v->buf, (uint64_t)v->len};
        if (!read_uint(&ob, s->offs_start + where, (unsigned)size, s->little, &entry)) return NULL;
        return section_cstring(&bufs[0], s->str_start, s->str_end, entry);
    }
    default:
        return NULL;
    }
}

/* One DIE waiting in the search: its unit's scope and its name roles. */
typedef struct {
    const NameScope *s;
    Attr a[ROLE_COUNT];
} NamedDie;

/* The scope of the unit holding section `offset`, asked of `scope_of`: 1 with *out
 * set (NULL: no unit holds it, the reference goes on), 0 the reference's. `held`
 * keeps the scopes alive until the search ends. */
static int scope_containing(PyObject *scope_of, const NameScope *from, uint64_t offset,
                            const NameScope **out, PyObject **held, size_t *nheld) {
    if (*nheld == NAME_WORK) return 0;
    PyObject *found = PyObject_CallFunction(scope_of, "K", (unsigned long long)offset);
    if (found == NULL) {
        PyErr_Clear(); /* the reference meets the same error and raises it */
        return 0;
    }
    if (found == Py_None) {
        Py_DECREF(found);
        *out = NULL;
        return 1;
    }
    const NameScope *s = PyCapsule_IsValid(found, SCOPE_CAPSULE)
                             ? PyCapsule_GetPointer(found, SCOPE_CAPSULE)
                             : NULL;
    /* the same file's sections, and a unit that holds the offset */
    if (s == NULL || s->info != from->info || s->info_start != from->info_start ||
        s->str != from->str || s->str_start != from->str_start || s->str_end != from->str_end ||
        s->line_str != from->line_str || s->line_str_start != from->line_str_start ||
        s->line_str_end != from->line_str_end || s->offs != from->offs ||
        s->offs_start != from->offs_start || s->offs_end != from->offs_end ||
        offset < s->unit_offset || offset >= s->unit_end) {
        Py_DECREF(found);
        return 0;
    }
    held[(*nheld)++] = found;
    *out = s;
    return 1;
}

PyDoc_STRVAR(die_names_doc,
"die_names(scope, offset, scope_of) -> (linkage_name, name) | None\n--\n\n"
"stackmark.formats.gsym.dwarf_walk.DieFunction.names for the DIE at .debug_info\n"
"`offset` of the scope's unit (make_name_scope), or None when the reference must\n"
"run. A reference leaving the unit asks `scope_of(offset)` for the scope of the\n"
"unit holding it: None when no unit does, False when the reference must run.");

static PyObject *die_names(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule, *scope_of;
    unsigned long long offset;
    if (!PyArg_ParseTuple(args, "OKO", &capsule, &offset, &scope_of)) return NULL;
    const NameScope *s = PyCapsule_GetPointer(capsule, SCOPE_CAPSULE);
    if (s == NULL) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(s->info, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Bytes info = {(const uint8_t *)view.buf, (uint64_t)view.len};
    LazyBuffer bufs[3] = {{s->str, {0}, 0}, {s->line_str, {0}, 0}, {s->offs, {0}, 0}};
    PyObject *linkage = NULL, *name = NULL, *result = NULL; /* NULL: not found yet */
    PyObject *held[NAME_WORK];
    NamedDie work[NAME_WORK], die;
    uint64_t seen[NAME_WORK];
    size_t nwork = 0, nseen = 0, nheld = 0;
    uint64_t code;
    int null;
    work[0].s = s;
    if (!read_named_die(s, &info, offset, work[0].a, &null, &code) || null) goto done;
    nwork = 1;
    while (nwork > 0 && (linkage == NULL || name == NULL)) {
        die = work[--nwork];
        const Attr *a = die.a;
        if (linkage == NULL) {
            const Attr *l = a[ROLE_LINKAGE].present        ? &a[ROLE_LINKAGE]
                            : a[ROLE_MIPS_LINKAGE].present ? &a[ROLE_MIPS_LINKAGE]
                                                        : NULL;
            if (l != NULL && (linkage = name_string(die.s, &info, bufs, l)) == NULL) goto done;
        }
        if (name == NULL && a[ROLE_NAME].present &&
            (name = name_string(die.s, &info, bufs, &a[ROLE_NAME])) == NULL)
            goto done;
        for (int role = ROLE_ORIGIN; role <= ROLE_SPECIFICATION; role++) {
            const Attr *r = &a[role];
            uint64_t target;
            if (!r->present || r->meaning == F_NONE) continue; /* Unit.ref_attr: None */
            if (r->meaning == F_REF_UNIT) {
                if (__builtin_add_overflow(die.s->unit_offset, r->value, &target)) goto done;
            } else if (r->meaning == F_REF_ADDR) {
                target = r->value;
            } else {
                goto done; /* a type signature */
            }
            int known = 0;
            for (size_t i = 0; i < nseen && !known; i++) known = seen[i] == target;
            if (known) continue;
            if (nseen == NAME_WORK || nwork == NAME_WORK) goto done;
            seen[nseen++] = target;
            const NameScope *into = die.s;
            if (target < into->unit_offset || target >= into->unit_end) {
                if (!scope_containing(scope_of, s, target, &into, held, &nheld)) goto done;
                if (into == NULL) continue; /* reader.unit_containing: None */
            }
            work[nwork].s = into;
            if (!read_named_die(into, &info, target, work[nwork].a, &null, &code)) goto done;
            if (!null) nwork++;
        }
    }
    result = PyTuple_Pack(2, linkage ? linkage : Py_None, name ? name : Py_None);
done:
    if (result == NULL && !PyErr_Occurred()) result = Py_NewRef(Py_None);
    Py_XDECREF(linkage);
    Py_XDECREF(name);
    for (size_t i = 0; i < nheld; i++) Py_DECREF(held[i]);
    for (int i = 0; i < 3; i++)
        if (bufs[i].held) PyBuffer_Release(&bufs[i].view);
    PyBuffer_Release(&view);
    return result;
}

/* A reference attribute read by read_named_die as Unit.ref_attr gives it: 1 with
 * *out a new reference (the section offset, or None), 0 the reference's. */
static int context_ref(const NameScope *s, const Attr *r, PyObject **out) {
    uint64_t target;
    if (!r->present || r->meaning == F_NONE) {
        *out = Py_NewRef(Py_None);
        return 1;
    }
    if (r->meaning == F_REF_UNIT) {
        if (__builtin_add_overflow(s->unit_offset, r->value, &target)) return 0;
    } else if (r->meaning == F_REF_ADDR) {
        target = r->value;
    } else {
        return 0; /* a type signature */
    }
    *out = PyLong_FromUnsignedLongLong(target);
    return *out != NULL;
}

PyDoc_STRVAR(die_context_refs_doc,
"die_context_refs(scope, offset) -> (code, specification, abstract_origin) | None\n--\n\n"
"What stackmark.formats.gsym.dwarf_names.NameBuilder's parent-context walk reads\n"
"of the DIE at .debug_info `offset` of the scope's unit (make_name_scope): its\n"
"abbreviation code (0: a null entry) and the section offsets its\n"
"DW_AT_specification and DW_AT_abstract_origin lead to (Unit.ref_attr: None when\n"
"absent or not a reference), or None when the reference must read the DIE.");

static PyObject *die_context_refs(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule;
    unsigned long long offset;
    if (!PyArg_ParseTuple(args, "OK", &capsule, &offset)) return NULL;
    const NameScope *s = PyCapsule_GetPointer(capsule, SCOPE_CAPSULE);
    if (s == NULL) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(s->info, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    Bytes info = {(const uint8_t *)view.buf, (uint64_t)view.len};
    Attr a[ROLE_COUNT];
    uint64_t code = 0;
    int null = 0;
    PyObject *spec = NULL, *origin = NULL, *result = NULL;
    if (!read_named_die(s, &info, offset, a, &null, &code)) goto done;
    if (null) {
        result = Py_BuildValue("(iOO)", 0, Py_None, Py_None);
        goto done;
    }
    if (!context_ref(s, &a[ROLE_SPECIFICATION], &spec) || !context_ref(s, &a[ROLE_ORIGIN], &origin))
        goto done;
    result = Py_BuildValue("(KOO)", (unsigned long long)code, spec, origin);
done:
    PyBuffer_Release(&view);
    Py_XDECREF(spec);
    Py_XDECREF(origin);
    if (result == NULL && !PyErr_Occurred()) result = Py_NewRef(Py_None);
    return result;
}

/* ---- qualified names' prefixes (NameBuilder.name) -----------------------------
 *
 * NameBuilder.parent_context and NameBuilder._prefix for a DIE whose contexts
 * all lie in its own unit, step for step: the context cache (offset -> (unit,
 * offset) or None, None also guarding a DIE being worked out), the prefix
 * cache and its loop rule, parents from DieParents (walked arrays, dicts).
 * Nothing is written to the caches until the walk is done: whatever the
 * kernel does not take (a reference leaving the unit, a parent DieParents has
 * not recorded, a context named through a reference, damage) leaves them as
 * they were, and the reference works the name out from the start.
 */

/* The kinds of DIE the walk tells apart, by abbreviation code: CONTEXT_KINDS. */
enum { K_OTHER = 0, K_CONTEXT, K_LEXICAL_BLOCK, K_INLINED };
#define CONTEXT_WORK 64

typedef struct {
    uint64_t key, value;
    int has; /* 0: None (also while the entry is being worked out) */
} ContextEntry;

typedef struct {
    const NameScope *s;
    const Bytes *info;
    LazyBuffer *bufs;
    PyObject *unit, *cache, *known, *lost, *parent_of;
    const uint64_t *walked, *walked_parents;
    size_t nwalked;
    const uint8_t *kinds;
    size_t nkinds;
    ContextEntry e[CONTEXT_WORK];
    size_t n;
} ContextWalk;

/* 1 done, 0 the reference's, -1 an error (set). */
static int dict_u64(PyObject *dict, uint64_t key, PyObject **out) {
    PyObject *k = PyLong_FromUnsignedLongLong(key);
    if (k == NULL) return -1;
    *out = PyDict_GetItemWithError(dict, k); /* borrowed */
    Py_DECREF(k);
    return *out == NULL && PyErr_Occurred() ? -1 : 1;
}

static int as_u64(PyObject *v, uint64_t *out) {
    if (!PyLong_CheckExact(v)) return 0;
    *out = PyLong_AsUnsignedLongLong(v);
    if (*out == (uint64_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return 1;
}

static int context_of(ContextWalk *c, uint64_t key, int *has, uint64_t *value);

/* DieParents.parent from what is recorded (1, *has 0: None). */
static int recorded_parent(ContextWalk *c, uint64_t key, int *has, uint64_t *parent) {
    PyObject *v;
    if (dict_u64(c->known, key, &v) < 0) return -1;
    if (v != NULL && v != Py_None) {
        *has = 1;
        return as_u64(v, parent);
    }
    size_t i = bisect_left_u64(c->walked, c->nwalked, key);
    if (i < c->nwalked && c->walked[i] == key) {
        *has = 1;
        *parent = c->walked_parents[i];
        return 1;
    }
    if (dict_u64(c->lost, key, &v) < 0) return -1;
    PyObject *found = NULL;
    if (v == NULL) { /* DieParents.parent descends from the unit DIE (and keeps it) */
        found = PyObject_CallFunction(c->parent_of, "K", (unsigned long long)key);
        if (found == NULL) {
            PyErr_Clear(); /* the reference meets it again and raises it */
            return 0;
        }
        v = found;
    }
    int r = 1;
    *has = v != Py_None;
    if (*has) r = as_u64(v, parent);
    Py_XDECREF(found);
    return r;
}

/* NameBuilder._parent_context */
static int context_work(ContextWalk *c, uint64_t key, int *has, uint64_t *value) {
    Attr a[ROLE_COUNT];
    uint64_t code;
    int null, r;
    *has = 0;
    if (!read_named_die(c->s, c->info, key, a, &null, &code)) return 0;
    if (null) return 1;
    for (int role = ROLE_SPECIFICATION; role >= ROLE_ORIGIN; role--) {
        const Attr *ref = &a[role];
        uint64_t target;
        if (!ref->present || ref->meaning == F_NONE) continue;
        if (ref->meaning == F_REF_UNIT) {
            if (__builtin_add_overflow(c->s->unit_offset, ref->value, &target)) return 0;
        } else if (ref->meaning == F_REF_ADDR) {
            target = ref->value;
        } else {
            return 0;
        }
        if (target < c->s->unit_offset || target >= c->s->unit_end) return 0;
        if ((r = context_of(c, target, has, value)) != 1) return r;
        if (*has) return 1;
    }
    if (code >= c->nkinds) return 0;
    if (c->kinds[code] == K_INLINED) return 1;
    uint64_t parent;
    int has_parent;
    if ((r = recorded_parent(c, key, &has_parent, &parent)) != 1) return r;
    if (!has_parent) return 1;
    if (!read_named_die(c->s, c->info, parent, a, &null, &code)) return 0;
    if (null) return 1;
    if (code >= c->nkinds) return 0;
    if (c->kinds[code] == K_CONTEXT) {
        *has = 1;
        *value = parent;
        return 1;
    }
    if (c->kinds[code] == K_LEXICAL_BLOCK) return context_of(c, parent, has, value);
    return 1;
}

/* NameBuilder.parent_context */
static int context_of(ContextWalk *c, uint64_t key, int *has, uint64_t *value) {
    for (size_t i = 0; i < c->n; i++) {
        if (c->e[i].key == key) {
            *has = c->e[i].has;
            *value = c->e[i].value;
            return 1;
        }
    }
    PyObject *v;
    if (dict_u64(c->cache, key, &v) < 0) return -1;
    if (v != NULL) {
        if (v == Py_None) {
            *has = 0;
            return 1;
        }
        if (!PyTuple_CheckExact(v) || PyTuple_GET_SIZE(v) != 2 || PyTuple_GET_ITEM(v, 0) != c->unit)
            return 0;
        *has = 1;
        return as_u64(PyTuple_GET_ITEM(v, 1), value);
    }
    if (c->n == CONTEXT_WORK) return 0;
    size_t at = c->n++;
    c->e[at].key = key;
    c->e[at].has = 0;
    c->e[at].value = 0;
    int r = context_work(c, key, has, value);
    if (r != 1) return r;
    c->e[at].has = *has;
    c->e[at].value = *value;
    return 1;
}

/* NameBuilder.short_name (find_recursively of DW_AT_name) within the unit: a new
 * reference (None: no name); NULL alone: the reference's. */
static PyObject *context_name(ContextWalk *c, uint64_t key) {
    Attr work[NAME_WORK][ROLE_COUNT];
    uint64_t seen[NAME_WORK], code;
    size_t nwork = 0, nseen = 0;
    int null;
    if (!read_named_die(c->s, c->info, key, work[0], &null, &code)) return NULL;
    if (null) return Py_NewRef(Py_None);
    nwork = 1;
    while (nwork > 0) {
        const Attr *a = work[--nwork];
        if (a[ROLE_NAME].present) return name_string(c->s, c->info, c->bufs, &a[ROLE_NAME]);
        if (a[ROLE_SIGNATURE].present) return NULL; /* a type unit's DIE */
        Attr next[2][ROLE_COUNT];
        int pushed = 0;
        for (int role = ROLE_ORIGIN; role <= ROLE_SPECIFICATION; role++) {
            const Attr *r = &a[role];
            uint64_t target;
            if (!r->present) continue;
            if (r->meaning == F_REF_UNIT) {
                if (__builtin_add_overflow(c->s->unit_offset, r->value, &target)) return NULL;
            } else if (r->meaning == F_REF_ADDR) {
                target = r->value;
            } else {
                return NULL; /* a supplementary file's, a signature, no reference */
            }
            int known = 0;
            for (size_t i = 0; i < nseen && !known; i++) known = seen[i] == target;
            if (known) continue;
            if (nseen == NAME_WORK || nwork + (size_t)pushed + 1 >= NAME_WORK) return NULL;
            seen[nseen++] = target;
            if (target < c->s->unit_offset || target >= c->s->unit_end) return NULL;
            if (!read_named_die(c->s, c->info, target, next[pushed], &null, &code)) return NULL;
            if (!null) pushed++;
        }
        for (int i = 0; i < pushed; i++) memcpy(work[nwork++], next[i], sizeof next[i]);
    }
    return Py_NewRef(Py_None);
}

/* NameBuilder._part: a new reference; NULL alone: the reference's. */
static PyObject *context_part(ContextWalk *c, uint64_t key) {
    PyObject *name = context_name(c, key);
    if (name == NULL) return NULL;
    Py_ssize_t n = name == Py_None ? 0 : PyUnicode_GET_LENGTH(name);
    PyObject *part;
    if (n == 0) {
        part = PyUnicode_FromString("");
    } else if (PyUnicode_READ_CHAR(name, 0) == '<' && PyUnicode_READ_CHAR(name, n - 1) == '>') {
        PyObject *inner = PyUnicode_Substring(name, n > 1 ? 1 : n, n > 1 ? n - 1 : n);
        part = inner == NULL ? NULL : PyUnicode_FromFormat("{%U}::", inner);
        Py_XDECREF(inner);
    } else {
        part = PyUnicode_FromFormat("%U::", name);
    }
    Py_DECREF(name);
    return part;
}

PyDoc_STRVAR(qualified_prefix_doc,
"qualified_prefix(scope, unit, offset, kinds, context_cache, prefixes, known,\n"
"                 walked, walked_parents, lost, parent_of) -> str | None\n--\n\n"
"What stackmark.formats.gsym.dwarf_names.NameBuilder.name puts before the short\n"
"name of the DIE at .debug_info `offset` of `unit` (the scope's unit): the\n"
"prefix of its parent context, \"\" when it has none; the caches filled as the\n"
"reference fills them. `kinds`: a byte per abbreviation code (0 other, 1 a\n"
"context, 2 a lexical block, 3 an inlined call); `known`, `walked`,\n"
"`walked_parents` (uint64 arrays) and `lost`: DieParents', `parent_of(offset)`:\n"
"DieParents.parent of the unit for the others. None: the\n"
"reference must work it out (nothing was written).");

static PyObject *qualified_prefix(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule, *unit, *cache, *prefixes, *known, *lost, *parent_of;
    unsigned long long offset;
    Py_buffer kinds, walked, walked_parents;
    if (!PyArg_ParseTuple(args, "OOKy*O!O!O!y*y*O!O", &capsule, &unit, &offset, &kinds,
                          &PyDict_Type, &cache, &PyDict_Type, &prefixes, &PyDict_Type, &known,
                          &walked, &walked_parents, &PyDict_Type, &lost, &parent_of))
        return NULL;
    PyObject *result = NULL, *prefix = NULL;
    PyObject *parts[CONTEXT_WORK];
    uint64_t keys[CONTEXT_WORK];
    size_t nkeys = 0;
    int looped = 0, r = 0, has;
    uint64_t current;
    Py_buffer view;
    int have_view = 0;
    LazyBuffer bufs[3] = {{NULL, {0}, 0}, {NULL, {0}, 0}, {NULL, {0}, 0}};
    const NameScope *s = PyCapsule_GetPointer(capsule, SCOPE_CAPSULE);
    if (s == NULL) goto done;
    if (walked.len != walked_parents.len || walked.len % 8 != 0) goto hand_back;
    if (PyObject_GetBuffer(s->info, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        goto hand_back;
    }
    have_view = 1;
    Bytes info = {(const uint8_t *)view.buf, (uint64_t)view.len};
    bufs[0].obj = s->str;
    bufs[1].obj = s->line_str;
    bufs[2].obj = s->offs;
    ContextWalk *c = malloc(sizeof(ContextWalk));
    if (c == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    c->s = s;
    c->info = &info;
    c->bufs = bufs;
    c->unit = unit;
    c->cache = cache;
    c->known = known;
    c->lost = lost;
    c->parent_of = parent_of;
    c->walked = walked.buf;
    c->walked_parents = walked_parents.buf;
    c->nwalked = (size_t)walked.len / 8;
    c->kinds = kinds.buf;
    c->nkinds = (size_t)kinds.len;
    c->n = 0;
    r = context_of(c, offset, &has, &current);
    while (r == 1 && has) {
        PyObject *known_prefix;
        if ((r = dict_u64(prefixes, current, &known_prefix)) < 0) break;
        if (known_prefix != NULL) {
            if (!PyUnicode_CheckExact(known_prefix)) {
                r = 0;
                break;
            }
            prefix = Py_NewRef(known_prefix);
            break;
        }
        for (size_t i = 0; i < nkeys && !looped; i++) looped = keys[i] == current;
        if (looped) break;
        if (nkeys == CONTEXT_WORK) {
            r = 0;
            break;
        }
        PyObject *part = context_part(c, current);
        if (part == NULL) {
            r = PyErr_Occurred() ? -1 : 0;
            break;
        }
        keys[nkeys] = current;
        parts[nkeys++] = part;
        r = context_of(c, current, &has, &current);
    }
    if (r == 1 && prefix == NULL) prefix = PyUnicode_FromString("");
    if (r == 1 && prefix == NULL) r = -1;
    /* the prefixes, outermost first; kept unless the contexts looped */
    PyObject *made[CONTEXT_WORK];
    size_t nmade = 0;
    for (size_t i = nkeys; r == 1 && i-- > 0;) {
        PyObject *longer = PyUnicode_Concat(prefix, parts[i]);
        if (longer == NULL) {
            r = -1;
            break;
        }
        Py_SETREF(prefix, longer);
        made[nmade++] = Py_NewRef(prefix);
    }
    /* written only now: a hand-back leaves the caches as they were */
    for (size_t i = 0; r == 1 && i < c->n; i++) {
        PyObject *k = PyLong_FromUnsignedLongLong(c->e[i].key);
        PyObject *v = c->e[i].has ? Py_BuildValue("(OK)", unit, (unsigned long long)c->e[i].value)
                                  : Py_NewRef(Py_None);
        if (k == NULL || v == NULL || PyDict_SetItem(cache, k, v) < 0) r = -1;
        Py_XDECREF(k);
        Py_XDECREF(v);
    }
    for (size_t i = 0; r == 1 && !looped && i < nmade; i++) {
        PyObject *k = PyLong_FromUnsignedLongLong(keys[nkeys - 1 - i]);
        if (k == NULL || PyDict_SetItem(prefixes, k, made[i]) < 0) r = -1;
        Py_XDECREF(k);
    }
    for (size_t i = 0; i < nmade; i++) Py_DECREF(made[i]);
    for (size_t i = 0; i < nkeys; i++) Py_DECREF(parts[i]);
    free(c);
    if (r == 1) result = Py_NewRef(prefix);
    else if (r == 0) goto hand_back;
    goto done;
hand_back:
    PyErr_Clear();
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(prefix);
    for (int i = 0; i < 3; i++)
        if (bufs[i].held) PyBuffer_Release(&bufs[i].view);
    if (have_view) PyBuffer_Release(&view);
    PyBuffer_Release(&kinds);
    PyBuffer_Release(&walked);
    PyBuffer_Release(&walked_parents);
    return result;
}

static PyMethodDef methods[] = {
    {"run_line_program", run_line_program, METH_VARARGS, run_line_program_doc},
    {"wide_rows", wide_rows, METH_VARARGS, wide_rows_doc},
    {"make_walk_tables", make_walk_tables, METH_O, make_walk_tables_doc},
    {"walk", walk, METH_VARARGS, walk_doc},
    {"make_decode_plan", make_decode_plan, METH_VARARGS, make_decode_plan_doc},
    {"decode", decode, METH_VARARGS, decode_doc},
    {"read_rnglist", read_rnglist_py, METH_VARARGS, read_rnglist_doc},
    {"gsym_walk", gsym_walk, METH_VARARGS, gsym_walk_doc},
    {"address_map", address_map, METH_O, address_map_doc},
    {"parse_abbrevs", parse_abbrevs, METH_VARARGS, parse_abbrevs_doc},
    {"make_name_scope", make_name_scope, METH_VARARGS, make_name_scope_doc},
    {"die_names", die_names, METH_VARARGS, die_names_doc},
    {"die_context_refs", die_context_refs, METH_VARARGS, die_context_refs_doc},
    {"qualified_prefix", qualified_prefix, METH_VARARGS, qualified_prefix_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "stackmark._native._dwarf",
    "Compiled kernels of stackmark.dwarf (see stackmark/_native/__init__.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__dwarf(void) {
    if ((s_tag = PyUnicode_InternFromString("tag")) == NULL) return NULL;
    return PyModule_Create(&module);
}
