"""What the server says to people, in English and Japanese.

The language is chosen once, from the `locale` the client sends in
`initialize` ("ja", "ja-JP", ...); anything else, or none, is English.
Hover titles and labels, diagnostics, progress, code lenses and outline
names all go through `Messages`.

Markup diagnostics come from the core in llvm-symbolizer's English
wording (which users compare with llvm's output); in Japanese they are
reworded from their stable `code` and the values in the English text.
"""

from __future__ import annotations

import re

from stackmark.markup.diagnostics import Diagnostic

EN: dict[str, str] = {
    # hover titles
    "title.bt": "frame #{frame}",
    "title.pc": "pc",
    "title.data": "data",
    "title.symbol": "symbol",
    "title.module": "module #{id}",
    "title.mmap": "mmap",
    "title.hexdict": "hexdict",
    "title.dumpfile": "dumpfile",
    "title.reset": "reset",
    "title.other": "element",
    # hover lines
    "hover.inline_chain": "inline chain (innermost first)",
    "hover.module": "module",
    "hover.relative": "module-relative address",
    "hover.lookup": "looked up at {address} (return address − 1)",
    "hover.build_id": "build ID",
    "hover.symbols_from": "symbols from",
    "hover.no_symbols": "no symbols: {reason}",
    "hover.looked_in": "looked in",
    "hover.no_frames": "the symbols say nothing about this address",
    "hover.no_mmap": "no mmap covers this address",
    "hover.unknown_module": "module #{id} is not declared before this element",
    "hover.size": "size",
    "hover.mmaps": "mappings",
    "hover.binary": "binary",
    "hover.mangled": "mangled",
    "hover.offset": "offset",
    "hover.no_data_symbol": "no symbol covers this address",
    "hover.no_values": "no value falls in a mapped module",
    "hover.dump_type": "type",
    "hover.dump_file": "file",
    "hover.dump_missing": "no such file next to the log",
    "hover.reset": "forgets every module and mapping declared before it "
    "(a new process starts here)",
    "hover.other": "a tag the markup specification does not define; kept as it is",
    # diagnostics the server adds
    "diag.no_binary": "could not find build ID {build_id} for module #{id} “{name}”",
    "diag.no_binary.searched": "looked in: {places}",
    "diag.no_file": "“{name}” is mapped by the kernel and has no file: its addresses stay "
    "unresolved",
    # progress
    "progress.download": "Downloading debug info for {name}",
    "progress.convert": "Converting {name} to GSYM",
    "progress.symbolize": "Symbolizing {name}",
    "progress.done": "done",
    "progress.lines": "{done} of {total} lines",
    # code lens, outline
    "lens.symbolize": "Symbolize",
    "outline.crash": "crash report at line {line}",
    "outline.top": "before the first reset",
    "outline.backtrace": "backtrace",
    "outline.frames": "{count} frames",
    "outline.module": "#{id} {build_id}",
    # settings
    "settings.not-a-list": "stackmark: setting “{key}” must be a list of strings; ignored",
    "settings.not-a-string": "stackmark: setting “{key}” must be a string; ignored",
    "settings.not-an-object": "stackmark: setting “{key}” must map old prefixes to new; ignored",
    "settings.not-a-number": "stackmark: setting “{key}” must be a number of seconds, "
    "0 or more; ignored",
    "settings.not-a-boolean": "stackmark: setting “{key}” must be true or false; ignored",
    "settings.unknown-key": "stackmark: unknown setting “{key}”; ignored",
    "settings.debuginfod": "stackmark: debuginfod is not usable: {reason}",
    "link.source": "open {path}",
    "link.dump": "open the dump {path}",
}

JA: dict[str, str] = {
    "title.bt": "フレーム #{frame}",
    "title.pc": "pc",
    "title.data": "データ",
    "title.symbol": "シンボル",
    "title.module": "モジュール #{id}",
    "title.mmap": "mmap",
    "title.hexdict": "hexdict",
    "title.dumpfile": "ダンプファイル",
    "title.reset": "リセット",
    "title.other": "要素",
    "hover.inline_chain": "インライン展開の連鎖（内側から）",
    "hover.module": "モジュール",
    "hover.relative": "モジュール相対アドレス",
    "hover.lookup": "{address} で検索（戻りアドレス − 1）",
    "hover.build_id": "ビルド ID",
    "hover.symbols_from": "シンボルの出所",
    "hover.no_symbols": "シンボルなし: {reason}",
    "hover.looked_in": "探した場所",
    "hover.no_frames": "このアドレスについてシンボル情報がありません",
    "hover.no_mmap": "このアドレスを含む mmap がありません",
    "hover.unknown_module": "モジュール #{id} はこの要素より前に宣言されていません",
    "hover.size": "サイズ",
    "hover.mmaps": "マッピング",
    "hover.binary": "バイナリ",
    "hover.mangled": "マングル名",
    "hover.offset": "オフセット",
    "hover.no_data_symbol": "このアドレスを含むシンボルがありません",
    "hover.no_values": "マップされたモジュールに入る値はありません",
    "hover.dump_type": "種別",
    "hover.dump_file": "ファイル",
    "hover.dump_missing": "ログと同じ場所にそのファイルはありません",
    "hover.reset": "それ以前に宣言されたモジュールとマッピングをすべて忘れます"
    "（ここから新しいプロセス）",
    "hover.other": "マークアップ仕様にないタグです。そのまま残します",
    "diag.no_binary": "モジュール #{id}「{name}」のビルド ID {build_id} が見つかりません",
    "diag.no_binary.searched": "探した場所: {places}",
    "diag.no_file": "「{name}」はカーネルがマップしたもので、ファイルがありません。"
    "そのアドレスは解決されません",
    "progress.download": "{name} のデバッグ情報をダウンロード中",
    "progress.convert": "{name} を GSYM に変換中",
    "progress.symbolize": "{name} をシンボル化中",
    "progress.done": "完了",
    "progress.lines": "{total} 行中 {done} 行",
    "lens.symbolize": "シンボル化",
    "outline.crash": "クラッシュレポート（{line} 行目）",
    "outline.top": "最初のリセットより前",
    "outline.backtrace": "バックトレース",
    "outline.frames": "{count} フレーム",
    "outline.module": "#{id} {build_id}",
    "settings.not-a-list": "stackmark: 設定「{key}」は文字列のリストでなければなりません。"
    "無視します",
    "settings.not-a-string": "stackmark: 設定「{key}」は文字列でなければなりません。無視します",
    "settings.not-an-object": "stackmark: 設定「{key}」は旧接頭辞から新接頭辞への"
    "対応でなければなりません。無視します",
    "settings.not-a-number": "stackmark: 設定「{key}」は 0 以上の秒数でなければなりません。"
    "無視します",
    "settings.not-a-boolean": "stackmark: 設定「{key}」は true か false でなければなりません。"
    "無視します",
    "settings.unknown-key": "stackmark: 不明な設定「{key}」です。無視します",
    "settings.debuginfod": "stackmark: debuginfod を使えません: {reason}",
    "link.source": "{path} を開く",
    "link.dump": "ダンプ {path} を開く",
}

# The core's diagnostics, by code: how to read the values out of the English
# text, and the Japanese wording.
_WHAT_JA = {
    "address": "アドレス",
    "module ID": "モジュール ID",
    "size": "サイズ",
    "frame number": "フレーム番号",
    "build ID": "ビルド ID",
    "mode": "モード",
    "PC type": "PC 種別",
    "hex value": "16 進値",
}
_CORE_JA: dict[str, tuple[re.Pattern[str], str]] = {
    "bad-tag": (re.compile(r"tags must be all lowercase characters"),
                "タグは英小文字だけで書きます"),
    "field-count": (re.compile(r"expected (?P<n>\d+) field\(s\); found (?P<m>\d+)"),
                    "フィールドは {n} 個のはずですが {m} 個あります"),
    "too-few-fields": (re.compile(r"expected at least (?P<n>\d+) field\(s\); found (?P<m>\d+)"),
                       "フィールドが少なくとも {n} 個必要ですが {m} 個です"),
    "too-many-fields": (re.compile(r"expected at most (?P<n>\d+) field\(s\); found (?P<m>\d+)"),
                        "フィールドは多くても {n} 個ですが {m} 個あります"),
    "bad-field": (re.compile(r"expected (?P<what>.+?); found '(?P<text>.*)'", re.S),
                  "{what}が必要ですが「{text}」があります"),
    "bad-hex-value": (re.compile(r"expected (?P<what>hex value); found '(?P<text>.*)'", re.S),
                      "{what}が必要ですが「{text}」があります"),
    "unknown-module-type": (re.compile(r"unknown module type"), "不明なモジュール種別です"),
    "unknown-mmap-type": (re.compile(r"unknown mmap type"), "不明な mmap 種別です"),
    "duplicate-id": (re.compile(r"duplicate module ID"), "モジュール ID が重複しています"),
    "unknown-module": (re.compile(r"unknown module ID"), "宣言されていないモジュール ID です"),
    "overlapping-mmap": (re.compile(r"overlapping mmap: (?P<where>.*)", re.S),
                         "既存の mmap と重なっています: {where}"),
    "no-mmap": (re.compile(r"no mmap covers address"), "このアドレスを含む mmap がありません"),
}  # fmt: skip


def language_of(locale: str | None) -> str:
    """'ja' for Japanese locales, else 'en'."""
    if locale and locale.replace("_", "-").lower().split("-")[0] == "ja":
        return "ja"
    return "en"


class Messages:
    """Messages in one language (English for anything but Japanese)."""

    def __init__(self, locale: str | None = None) -> None:
        self.language = language_of(locale)
        self._table = JA if self.language == "ja" else EN

    def __call__(self, message_id: str, /, **values: object) -> str:
        template = self._table.get(message_id) or EN[message_id]
        return template.format(**values)

    def diagnostic(self, diag: Diagnostic) -> str:
        """A core diagnostic's message in this language."""
        if self.language == "en":
            return diag.message
        known = _CORE_JA.get(diag.code)
        if known is None:
            return diag.message
        pattern, template = known
        match = pattern.fullmatch(diag.message)
        if match is None:
            return diag.message
        values = match.groupdict()
        if "what" in values:
            values["what"] = _WHAT_JA.get(values["what"], values["what"])
        return template.format(**values)
