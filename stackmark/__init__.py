"""stackmark: turn raw crash addresses back into functions, files and lines.

The core library. It never imports a debugger, an editor or pygls; the
front ends (CLI, language server, GDB and LLDB plugins) import it.
"""

__version__ = "0.1.0"
