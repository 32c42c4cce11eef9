"""The editor clients agree with the server and with themselves, without an editor.

- The extension's settings and the Neovim plugin's `setting_keys` are the
  keys the server reads (stackmark_lsp.settings.KEYS).
- Every `%placeholder%` of package.json has an English and a Japanese text,
  and every runtime message (`vscode.l10n.t("...")`) a Japanese one.
- The grammars are valid JSON, the injection goes into the built-in log
  language, and the extension does not redefine that language.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from stackmark_lsp.settings import KEYS

from tests.editors.conftest import EDITORS

VSCODE = EDITORS / "vscode"


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_extension_settings_are_the_server_keys() -> None:
    properties = _json(VSCODE / "package.json")["contributes"]["configuration"]["properties"]
    server_keys = {
        key.removeprefix("stackmark.")
        for key in properties
        if not key.startswith(("stackmark.server.", "stackmark.trace."))
    }
    assert server_keys == set(KEYS)
    client_ts = (VSCODE / "src" / "client.ts").read_text()
    listed = re.search(r"SERVER_SETTINGS = \[(.*?)\]", client_ts, re.S)
    assert listed is not None
    assert re.findall(r'"(\w+)"', listed.group(1)) == list(KEYS)


def test_nvim_setting_keys_are_the_server_keys() -> None:
    init = (EDITORS / "nvim" / "lua" / "stackmark" / "init.lua").read_text()
    listed = re.search(r"M\.setting_keys = \{(.*?)\}", init, re.S)
    assert listed is not None
    assert re.findall(r'"(\w+)"', listed.group(1)) == list(KEYS)


def test_every_manifest_text_is_translated() -> None:
    manifest = (VSCODE / "package.json").read_text()
    placeholders = set(re.findall(r'"%([\w.]+)%"', manifest))
    english = _json(VSCODE / "package.nls.json")
    japanese = _json(VSCODE / "package.nls.ja.json")
    assert placeholders == set(english) == set(japanese)
    for key, text in japanese.items():
        assert text and text != english[key], key


def test_every_runtime_message_is_translated() -> None:
    messages: set[str] = set()
    for source in (VSCODE / "src").glob("*.ts"):
        messages |= set(re.findall(r'l10n\.t\(\s*"((?:[^"\\]|\\.)*)"', source.read_text()))
    assert messages
    bundle = _json(VSCODE / "l10n" / "bundle.l10n.ja.json")
    assert {json.loads(f'"{m}"') for m in messages} == set(bundle)
    for english, japanese in bundle.items():
        placeholders = sorted(re.findall(r"\{\d\}", english))
        assert placeholders == sorted(re.findall(r"\{\d\}", japanese)), english


def test_grammars_inject_into_the_log_language() -> None:
    manifest = _json(VSCODE / "package.json")["contributes"]
    assert "log" not in {language["id"] for language in manifest["languages"]}
    grammars = {g["scopeName"]: g for g in manifest["grammars"]}
    injection = grammars["stackmark.markup.injection"]
    assert injection["injectTo"] == ["text.log"]
    injected = _json(VSCODE / injection["path"])
    assert injected["injectionSelector"].startswith("L:text.log")
    own = _json(VSCODE / grammars["text.stackmark-log"]["path"])
    element = own["repository"]["element"]
    assert injected["patterns"] == [{"include": "text.stackmark-log#element"}]
    assert element["name"] == "meta.tag.stackmark"
    for pattern in element["patterns"]:
        re.compile(pattern["match"])  # Python's re reads these Oniguruma patterns alike
