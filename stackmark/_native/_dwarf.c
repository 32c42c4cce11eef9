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

PyDoc_STRVAR(run_line_program_doc,
"run_line_program(buf, pos, end, opcode_base, min_inst, max_ops, default_is_stmt,\n"
"                 line_base, line_range, standard_opcode_lengths, little_endian)\n"
"--\n\n"
"stackmark.dwarf.lines._run_program over buf[pos:end]: (rows, sequences) with rows\n"
"the flat row store as bytes (7 native uint64 per row) and sequences a list of\n"
"(low, high, first, end), in program order; None when the reference must run.");

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
    PyObject *rows = PyBytes_FromStringAndSize((const char *)out.rows.items,
                                               (Py_ssize_t)(out.rows.len * sizeof(uint64_t)));
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

static PyMethodDef methods[] = {
    {"run_line_program", run_line_program, METH_VARARGS, run_line_program_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "stackmark._native._dwarf",
    "Compiled kernels of stackmark.dwarf (see stackmark/_native/__init__.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__dwarf(void) { return PyModule_Create(&module); }
