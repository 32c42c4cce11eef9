"""A terminal program's screen as text and as a PNG: tmux runs it, Chromium draws it.

`capture(...)` runs a command in a private tmux server (its own socket, no
config), waits for a file the program writes when its screen is ready,
and returns the screen with its colours (`capture-pane -e`). `to_png`
turns that into HTML (SGR colours to CSS) and has headless Chromium
screenshot it.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
_BASIC = [
    "#1d1f21", "#cc6666", "#b5bd68", "#f0c674", "#81a2be", "#b294bb", "#8abeb7", "#c5c8c6",
    "#666666", "#d54e53", "#b9ca4a", "#e7c547", "#7aa6da", "#c397d8", "#70c0b1", "#eaeaea",
]  # fmt: skip
FOREGROUND, BACKGROUND = "#e0e2ea", "#14161b"  # Neovim 0.10+'s default colours


def capture(
    command: Sequence[str],
    env: Mapping[str, str],
    ready: Path,
    *,
    width: int = 140,
    height: int = 42,
    timeout: float = 120,
) -> tuple[str, str]:
    """(screen with SGR codes, what the program wrote to `ready`)."""
    socket = f"stackmark-test-{os.getpid()}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    environment = {**env, "TERM": "xterm-256color"}
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "screen", "-x", str(width), "-y", str(height),
         "--", *command],
        env=environment,
        check=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + timeout
        while not ready.exists():  # the program says when its screen is ready
            if time.monotonic() > deadline:
                raise TimeoutError(f"{command[0]} did not write {ready}")
            time.sleep(0.05)
        status = ready.read_text().strip()
        screen = subprocess.run(
            [*tmux, "capture-pane", "-p", "-e", "-t", "screen"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    return screen, status


def plain(screen: str) -> str:
    return _SGR.sub("", screen)


def _colour(codes: list[int], at: int) -> tuple[str | None, int]:
    """The colour of an extended SGR code at `at` (38/48), and how many codes it used."""
    if at + 1 < len(codes) and codes[at + 1] == 5 and at + 2 < len(codes):
        n = codes[at + 2]
        if n < 16:
            return _BASIC[n], 3
        if n < 232:
            n -= 16
            steps = [0, 95, 135, 175, 215, 255]
            return f"#{steps[n // 36]:02x}{steps[n // 6 % 6]:02x}{steps[n % 6]:02x}", 3
        grey = 8 + 10 * (n - 232)
        return f"#{grey:02x}{grey:02x}{grey:02x}", 3
    if at + 4 < len(codes) and codes[at + 1] == 2:
        r, g, b = codes[at + 2 : at + 5]
        return f"#{r:02x}{g:02x}{b:02x}", 5
    return None, 1


def to_html(screen: str) -> str:
    fg: str | None = None
    bg: str | None = None
    bold = italic = underline = reverse = False
    parts: list[str] = []
    pos = 0

    def emit(text: str) -> None:
        if not text:
            return
        front, back = fg or FOREGROUND, bg or BACKGROUND
        if reverse:
            front, back = back, front
        style = f"color:{front};background:{back}"
        style += ";font-weight:bold" if bold else ""
        style += ";font-style:italic" if italic else ""
        style += ";text-decoration:underline" if underline else ""
        parts.append(f'<span style="{style}">{html.escape(text)}</span>')

    for match in _SGR.finditer(screen):
        emit(screen[pos : match.start()])
        pos = match.end()
        codes = [int(c) if c else 0 for c in re.split("[;:]", match.group(1))] or [0]
        i = 0
        while i < len(codes):
            code = codes[i]
            used = 1
            if code == 0:
                fg = bg = None
                bold = italic = underline = reverse = False
            elif code == 1:
                bold = True
            elif code == 3:
                italic = True
            elif code == 4:
                underline = True
            elif code == 7:
                reverse = True
            elif code == 22:
                bold = False
            elif code == 23:
                italic = False
            elif code == 24:
                underline = False
            elif code == 27:
                reverse = False
            elif 30 <= code <= 37:
                fg = _BASIC[code - 30]
            elif 90 <= code <= 97:
                fg = _BASIC[code - 90 + 8]
            elif 40 <= code <= 47:
                bg = _BASIC[code - 40]
            elif 100 <= code <= 107:
                bg = _BASIC[code - 100 + 8]
            elif code == 39:
                fg = None
            elif code == 49:
                bg = None
            elif code in (38, 48):
                colour, used = _colour(codes, i)
                if code == 38:
                    fg = colour
                else:
                    bg = colour
            i += used
    emit(screen[pos:])
    return (
        "<!doctype html><meta charset='utf-8'><body style='margin:0;background:"
        f"{BACKGROUND}'><pre style='margin:0;padding:8px;font:14px/1.25 \"DejaVu Sans Mono\","
        f"monospace;color:{FOREGROUND}'>{''.join(parts)}</pre></body>"
    )


def to_png(screen: str, out: Path, *, chromium: Path, width: int, height: int) -> Path:
    """Draw `screen` with headless Chromium (no network: a local file, background traffic off)."""
    with tempfile.TemporaryDirectory() as work:
        page = Path(work) / "screen.html"
        page.write_text(to_html(screen))
        subprocess.run(
            [
                str(chromium),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={work}/profile",
                "--hide-scrollbars",
                f"--window-size={width},{height}",
                f"--screenshot={out}",
                page.as_uri(),
            ],
            capture_output=True,
            timeout=120,
            check=True,
            env={**os.environ, "XDG_CONFIG_HOME": work, "XDG_CACHE_HOME": work},
        )
    if not out.exists():
        raise RuntimeError(f"chromium wrote no {out}")
    return out
