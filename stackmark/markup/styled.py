"""Text output with llvm-symbolizer's colour behaviour.

The filter keeps the log's own SGR state (a colour 30-37 and a bold flag,
both reset at the start of every line). With colour off, the recognised
SGR codes are dropped. With colour on, it writes its own sequences the way
LLVM's raw_ostream does: `ESC[0;3Xm` for a colour, `ESC[0;1;3Xm` for bold
plus colour, `ESC[1m` for bold alone, `ESC[0m` to reset. Symbolized output
is blue (cyan when the log's colour is already blue) with values in green,
and the log's colour is restored after it.
"""

from __future__ import annotations

BLUE, CYAN, GREEN = 4, 6, 2
RESET_CODE = "\x1b[0m"
BOLD_CODE = "\x1b[1m"


def colour_code(colour: int, bold: bool) -> str:
    return f"\x1b[0;1;3{colour}m" if bold else f"\x1b[0;3{colour}m"


class StyledWriter:
    """Collects output text; `take()` returns what was written since the last call."""

    __slots__ = ("_parts", "bold", "colour", "enabled")

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.colour: int | None = None
        self.bold = False
        self._parts: list[str] = []

    def write(self, text: str) -> None:
        self._parts.append(text)

    def take(self) -> str:
        text = "".join(self._parts)
        self._parts.clear()
        return text

    # --- the log's own SGR state ------------------------------------------

    def reset_state(self) -> None:
        """Back to the default state (start of a line, or ESC[0m in the log)."""
        if self.colour is None and not self.bold:
            return
        self.colour = None
        self.bold = False
        if self.enabled:
            self._parts.append(RESET_CODE)

    def sgr(self, code: int) -> None:
        """Apply one SGR code found in the log's text."""
        if code == 0:
            self.reset_state()
        elif code == 1:
            self.bold = True
            if self.enabled:
                self._parts.append(BOLD_CODE)
        else:
            self.colour = code - 30
            if self.enabled:
                # The colour is re-emitted without bold (as llvm does).
                self._parts.append(colour_code(self.colour, False))

    # --- highlighting symbolized output ------------------------------------

    def highlight(self) -> None:
        if self.enabled:
            self._parts.append(colour_code(CYAN if self.colour == BLUE else BLUE, self.bold))

    def value(self, text: str) -> None:
        """A value (name, number, path) inside highlighted output."""
        if self.enabled:
            self._parts.append(colour_code(GREEN, self.bold))
            self._parts.append(text)
            self._parts.append(colour_code(CYAN if self.colour == BLUE else BLUE, self.bold))
        else:
            self._parts.append(text)

    def restore(self) -> None:
        """Back to the log's own colour after highlighted output."""
        if not self.enabled:
            return
        if self.colour is not None:
            self._parts.append(colour_code(self.colour, self.bold))
        else:
            self._parts.append(RESET_CODE)
            if self.bold:
                self._parts.append(BOLD_CODE)
