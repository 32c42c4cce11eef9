"""LLVM's POSIX path rules, where they decide GSYM bytes.

GSYM's file table splits each path with LLVM's `sys::path::parent_path` and
`sys::path::filename`, and DWARF file names are built with
`sys::path::append`. These differ from Python's `os.path` in corner cases
("/a.c" has parent "/", "a//b.c" has parent "a", "a/b/" has file name "."),
so they are reimplemented here from their documented behaviour.
"""

from __future__ import annotations

_NPOS = -1


def _is_sep(ch: str) -> bool:
    return ch == "/"


def _filename_pos(path: str) -> int:
    if path and _is_sep(path[-1]):
        return len(path) - 1
    pos = path.rfind("/", 0, len(path) - 1 + 1) if path else -1
    if pos == -1 or (pos == 1 and _is_sep(path[0])):
        return 0
    return pos + 1


def _root_dir_start(path: str) -> int:
    # "//net" (a root name) followed by its root directory.
    if len(path) > 3 and _is_sep(path[0]) and path[0] == path[1] and not _is_sep(path[2]):
        return path.find("/", 2)
    if path and _is_sep(path[0]):
        return 0
    return _NPOS


def has_root_name(path: str) -> bool:
    return len(path) > 2 and _is_sep(path[0]) and path[0] == path[1] and not _is_sep(path[2])


def _parent_path_end(path: str) -> int:
    end_pos = _filename_pos(path)
    filename_was_sep = bool(path) and end_pos < len(path) and _is_sep(path[end_pos])
    root_dir_pos = _root_dir_start(path)
    while (
        end_pos > 0
        and (root_dir_pos == _NPOS or end_pos > root_dir_pos)
        and _is_sep(path[end_pos - 1])
    ):
        end_pos -= 1
    if end_pos == root_dir_pos and not filename_was_sep:
        return root_dir_pos + 1
    return end_pos


def llvm_parent_path(path: str) -> str:
    """`sys::path::parent_path` (POSIX style)."""
    end = _parent_path_end(path)
    return "" if end == _NPOS else path[:end]


def llvm_filename(path: str) -> str:
    """`sys::path::filename` (POSIX style): the last component; "." after a trailing /."""
    root_dir_pos = _root_dir_start(path)
    end_pos = len(path)
    while end_pos > 0 and (end_pos - 1) != root_dir_pos and _is_sep(path[end_pos - 1]):
        end_pos -= 1
    if path and _is_sep(path[-1]) and (root_dir_pos == _NPOS or end_pos - 1 > root_dir_pos):
        return "."
    start_pos = _filename_pos(path[:end_pos])
    return path[start_pos:end_pos]


def llvm_append(path: str, *components: str) -> str:
    """`sys::path::append`: join with "/" unless one is already there."""
    for component in components:
        if path and _is_sep(path[-1]):
            path += component.lstrip("/")
            continue
        if not (component and _is_sep(component[0])) and not (not path or has_root_name(component)):
            path += "/"
        path += component
    return path


def is_absolute_posix_or_windows(path: str) -> bool:
    """LLVM treats a DWARF file name as absolute in either style."""
    if path.startswith("/"):
        return True
    # Windows: a drive letter and a separator, or a UNC root.
    if len(path) >= 3 and path[1] == ":" and path[0].isalpha() and path[2] in "/\\":
        return True
    return path.startswith("\\\\")
