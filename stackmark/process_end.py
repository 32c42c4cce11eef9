"""Large heaps kept to the end of a process that ends without freeing them.

A conversion leaves millions of small objects (line rows, inline nodes,
names): freeing them one by one takes half a second or more after a large
binary, and a command-line run that is about to end does not need that
memory back; the operating system takes it at once. The program's entry
point (`stackmark.cli.main.entry`) says whether the process will end that way
(`end_without_freeing`); code anywhere in the core then hands its large
heaps to `keep_until_exit` instead of dropping them. Anywhere else (the
language server, the symbolication service, a library caller) nothing is
kept and everything is freed as usual.
"""

from __future__ import annotations

_ending_without_freeing = False
_kept: list[object] = []


def end_without_freeing(enabled: bool) -> None:
    """Say whether this process ends without freeing its heap (its entry point
    then ends it with `os._exit` when `anything_kept`)."""
    global _ending_without_freeing
    _ending_without_freeing = enabled


def keep_until_exit(value: object) -> None:
    """Keep `value` alive until the process ends, when it ends without freeing
    its heap; otherwise nothing is kept (the caller's references decide)."""
    if _ending_without_freeing:
        _kept.append(value)


def anything_kept() -> bool:
    return bool(_kept)
