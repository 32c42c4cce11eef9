"""The DWARF numbers stackmark reads (DWARF 5 standard, section 7, plus GNU extensions).

Only the constants the reader uses are listed; names follow the standard.
"""

from __future__ import annotations

# -- unit types (7.5.1) -------------------------------------------------------
DW_UT_compile = 0x01
DW_UT_type = 0x02
DW_UT_partial = 0x03
DW_UT_skeleton = 0x04
DW_UT_split_compile = 0x05
DW_UT_split_type = 0x06

# -- tags (7.5.3) ---------------------------------------------------------------
DW_TAG_array_type = 0x01
DW_TAG_class_type = 0x02
DW_TAG_enumeration_type = 0x04
DW_TAG_formal_parameter = 0x05
DW_TAG_label = 0x0A
DW_TAG_lexical_block = 0x0B
DW_TAG_member = 0x0D
DW_TAG_pointer_type = 0x0F
DW_TAG_reference_type = 0x10
DW_TAG_compile_unit = 0x11
DW_TAG_structure_type = 0x13
DW_TAG_subroutine_type = 0x15
DW_TAG_typedef = 0x16
DW_TAG_union_type = 0x17
DW_TAG_unspecified_parameters = 0x18
DW_TAG_variant = 0x19
DW_TAG_inheritance = 0x1C
DW_TAG_inlined_subroutine = 0x1D
DW_TAG_ptr_to_member_type = 0x1F
DW_TAG_subrange_type = 0x21
DW_TAG_base_type = 0x24
DW_TAG_const_type = 0x26
DW_TAG_enumerator = 0x28
DW_TAG_subprogram = 0x2E
DW_TAG_template_type_parameter = 0x2F
DW_TAG_template_value_parameter = 0x30
DW_TAG_variable = 0x34
DW_TAG_volatile_type = 0x35
DW_TAG_namespace = 0x39
DW_TAG_imported_module = 0x3A
DW_TAG_unspecified_type = 0x3B
DW_TAG_partial_unit = 0x3C
DW_TAG_imported_unit = 0x3D
DW_TAG_rvalue_reference_type = 0x42
DW_TAG_type_unit = 0x41
DW_TAG_call_site = 0x48
DW_TAG_call_site_parameter = 0x49
DW_TAG_skeleton_unit = 0x4A
DW_TAG_GNU_template_parameter_pack = 0x4107
DW_TAG_GNU_formal_parameter_pack = 0x4108
DW_TAG_GNU_call_site = 0x4109
DW_TAG_GNU_call_site_parameter = 0x410A

# -- attributes (7.5.4) ---------------------------------------------------------
DW_AT_sibling = 0x01
DW_AT_location = 0x02
DW_AT_name = 0x03
DW_AT_byte_size = 0x0B
DW_AT_stmt_list = 0x10
DW_AT_low_pc = 0x11
DW_AT_high_pc = 0x12
DW_AT_language = 0x13
DW_AT_comp_dir = 0x1B
DW_AT_const_value = 0x1C
DW_AT_inline = 0x20
DW_AT_lower_bound = 0x22
DW_AT_producer = 0x25
DW_AT_upper_bound = 0x2F
DW_AT_abstract_origin = 0x31
DW_AT_declaration = 0x3C
DW_AT_decl_column = 0x39
DW_AT_decl_file = 0x3A
DW_AT_decl_line = 0x3B
DW_AT_external = 0x3F
DW_AT_frame_base = 0x40
DW_AT_specification = 0x47
DW_AT_type = 0x49
DW_AT_count = 0x37
DW_AT_ranges = 0x55
DW_AT_call_column = 0x57
DW_AT_call_file = 0x58
DW_AT_call_line = 0x59
DW_AT_entry_pc = 0x52
DW_AT_signature = 0x69
DW_AT_linkage_name = 0x6E
DW_AT_str_offsets_base = 0x72
DW_AT_addr_base = 0x73
DW_AT_rnglists_base = 0x74
DW_AT_dwo_name = 0x76
DW_AT_loclists_base = 0x8C
DW_AT_MIPS_linkage_name = 0x2007
DW_AT_GNU_dwo_name = 0x2130
DW_AT_GNU_dwo_id = 0x2131
DW_AT_GNU_ranges_base = 0x2132
DW_AT_GNU_addr_base = 0x2133
DW_AT_GNU_pubnames = 0x2134
DW_AT_GNU_discriminator = 0x2136

# -- forms (7.5.6) ------------------------------------------------------------------
DW_FORM_addr = 0x01
DW_FORM_block2 = 0x03
DW_FORM_block4 = 0x04
DW_FORM_data2 = 0x05
DW_FORM_data4 = 0x06
DW_FORM_data8 = 0x07
DW_FORM_string = 0x08
DW_FORM_block = 0x09
DW_FORM_block1 = 0x0A
DW_FORM_data1 = 0x0B
DW_FORM_flag = 0x0C
DW_FORM_sdata = 0x0D
DW_FORM_strp = 0x0E
DW_FORM_udata = 0x0F
DW_FORM_ref_addr = 0x10
DW_FORM_ref1 = 0x11
DW_FORM_ref2 = 0x12
DW_FORM_ref4 = 0x13
DW_FORM_ref8 = 0x14
DW_FORM_ref_udata = 0x15
DW_FORM_indirect = 0x16
DW_FORM_sec_offset = 0x17
DW_FORM_exprloc = 0x18
DW_FORM_flag_present = 0x19
DW_FORM_strx = 0x1A
DW_FORM_addrx = 0x1B
DW_FORM_ref_sup4 = 0x1C
DW_FORM_strp_sup = 0x1D
DW_FORM_data16 = 0x1E
DW_FORM_line_strp = 0x1F
DW_FORM_ref_sig8 = 0x20
DW_FORM_implicit_const = 0x21
DW_FORM_loclistx = 0x22
DW_FORM_rnglistx = 0x23
DW_FORM_ref_sup8 = 0x24
DW_FORM_strx1 = 0x25
DW_FORM_strx2 = 0x26
DW_FORM_strx3 = 0x27
DW_FORM_strx4 = 0x28
DW_FORM_addrx1 = 0x29
DW_FORM_addrx2 = 0x2A
DW_FORM_addrx3 = 0x2B
DW_FORM_addrx4 = 0x2C
DW_FORM_GNU_addr_index = 0x1F01
DW_FORM_GNU_str_index = 0x1F02
DW_FORM_GNU_ref_alt = 0x1F20
DW_FORM_GNU_strp_alt = 0x1F21

# -- form classes (7.5.5): the forms a value of one kind is written in ------------------
STRX_FORMS = frozenset(
    {
        DW_FORM_strx,
        DW_FORM_strx1,
        DW_FORM_strx2,
        DW_FORM_strx3,
        DW_FORM_strx4,
        DW_FORM_GNU_str_index,
    }
)
"""An index into the unit's part of .debug_str_offsets."""
ADDRX_FORMS = frozenset(
    {
        DW_FORM_addrx,
        DW_FORM_addrx1,
        DW_FORM_addrx2,
        DW_FORM_addrx3,
        DW_FORM_addrx4,
        DW_FORM_GNU_addr_index,
    }
)
"""An index into the unit's part of .debug_addr."""
LOCAL_REF_FORMS = frozenset(
    {DW_FORM_ref1, DW_FORM_ref2, DW_FORM_ref4, DW_FORM_ref8, DW_FORM_ref_udata}
)
"""A reference within the unit (an offset from the unit's start)."""
CONSTANT_FORMS = frozenset(
    {
        DW_FORM_data1,
        DW_FORM_data2,
        DW_FORM_data4,
        DW_FORM_data8,
        DW_FORM_udata,
        DW_FORM_sdata,
        DW_FORM_implicit_const,
    }
)
"""A constant (class constant; DW_FORM_data16 is left out: no value stackmark reads uses it)."""

# -- range list entries (7.25) ------------------------------------------------------
DW_RLE_end_of_list = 0x00
DW_RLE_base_addressx = 0x01
DW_RLE_startx_endx = 0x02
DW_RLE_startx_length = 0x03
DW_RLE_offset_pair = 0x04
DW_RLE_base_address = 0x05
DW_RLE_start_end = 0x06
DW_RLE_start_length = 0x07

# -- location list entries (7.29) ------------------------------------------------------
DW_LLE_end_of_list = 0x00
DW_LLE_base_addressx = 0x01
DW_LLE_startx_endx = 0x02
DW_LLE_startx_length = 0x03
DW_LLE_offset_pair = 0x04
DW_LLE_default_location = 0x05
DW_LLE_base_address = 0x06
DW_LLE_start_end = 0x07
DW_LLE_start_length = 0x08

# -- line number program (6.2.5) ------------------------------------------------------
DW_LNS_copy = 0x01
DW_LNS_advance_pc = 0x02
DW_LNS_advance_line = 0x03
DW_LNS_set_file = 0x04
DW_LNS_set_column = 0x05
DW_LNS_negate_stmt = 0x06
DW_LNS_set_basic_block = 0x07
DW_LNS_const_add_pc = 0x08
DW_LNS_fixed_advance_pc = 0x09
DW_LNS_set_prologue_end = 0x0A
DW_LNS_set_epilogue_begin = 0x0B
DW_LNS_set_isa = 0x0C

DW_LNE_end_sequence = 0x01
DW_LNE_set_address = 0x02
DW_LNE_define_file = 0x03
DW_LNE_set_discriminator = 0x04

# line number header entry formats (6.2.4.1)
DW_LNCT_path = 0x1
DW_LNCT_directory_index = 0x2
DW_LNCT_timestamp = 0x3
DW_LNCT_size = 0x4
DW_LNCT_MD5 = 0x5
