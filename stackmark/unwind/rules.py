"""The unwind vocabulary's former place: it lives in `stackmark/unwind_rules.py` now.

Re-exported here only until the last modules still importing this name
are changed (tests/unit/test_front_end_imports.py lists them in
`TEMPORARY_REEXPORTS`); then this module goes.
"""

from stackmark.unwind_rules import CFA, Arch, RuleKind, UnwindRow, ValueRule

__all__ = ["CFA", "Arch", "RuleKind", "UnwindRow", "ValueRule"]
