"""The debugger-agnostic half of the GDB and LLDB plugins.

Commands are declared once here (`commands.py`) over a small
`DebuggerBackend` protocol (`backend.py`) that each debugger implements;
this package never imports gdb or lldb.
"""
