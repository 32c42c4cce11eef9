"""Conversions: read one format, write another.

The formats are leaves (`stackmark/formats/*` import no other format), so
what joins two of them lives here, above both:

- `files`: `convert_file`, the work of `stackmark gsym convert`: an ELF,
  Mach-O (thin, universal, `.dSYM`) or Breakpad input to GSYM files on disk,
  and llvm-gsymutil's log;
- `from_breakpad`: a Breakpad `.sym` to GSYM (`convert_breakpad`, also for
  the Breakpad symbol store's cache, `symbols/breakpad_store.py`).

The GSYM side of each conversion is the format's own creator and pipeline
(`formats/gsym/creator.py`, `formats/gsym/convert.py`).
"""
