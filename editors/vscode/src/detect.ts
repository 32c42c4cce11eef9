// Content-based detection: a plain-text document whose first lines carry
// symbolizer markup contexts becomes a "Symbolizer markup log". Documents
// of any other language (the built-in `log` above all) are left alone:
// the server already reads those and the injection grammar colours them.

import * as vscode from "vscode";

const LINES = 200;
const CONTEXT = /\{\{\{(?:reset\}\}\}|module:\d|mmap:0x|bt:\d+:0x|pc:0x)/;

export function looksLikeMarkupLog(document: vscode.TextDocument): boolean {
  const last = Math.min(document.lineCount, LINES);
  for (let line = 0; line < last; line++) {
    if (CONTEXT.test(document.lineAt(line).text)) return true;
  }
  return false;
}

export async function detectMarkupLog(document: vscode.TextDocument): Promise<void> {
  if (document.languageId !== "plaintext") return;
  if (document.uri.scheme !== "file" && document.uri.scheme !== "untitled") return;
  if (looksLikeMarkupLog(document)) {
    await vscode.languages.setTextDocumentLanguage(document, "stackmark-log");
  }
}
