// "Show Symbolized Log": the whole log as `stackmark symbolize` prints it, beside
// the log, at the line under the cursor. The server renders it (command
// `stackmark.symbolizedText`) and serves it as a virtual document under the
// `stackmark-symbolized` scheme; vscode-languageclient provides that scheme's
// content (LSP 3.18 workspace/textDocumentContent) and refreshes it when the
// log changes. A server that did not register the scheme still returns the
// text, which then opens as an untitled document.

import * as vscode from "vscode";
import { ExecuteCommandRequest } from "vscode-languageclient/node";
import { isMarkupLog, type StackmarkClient } from "./client";

interface Symbolized {
  uri: string;
  line: number;
  text?: string;
}

export async function showSymbolizedLog(
  stackmark: StackmarkClient,
  uri?: vscode.Uri,
  line?: number,
): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const document = uri
    ? await vscode.workspace.openTextDocument(uri)
    : editor?.document;
  if (!document || !isMarkupLog(document)) {
    void vscode.window.showInformationMessage(
      vscode.l10n.t("Open a log with symbolizer markup first."),
    );
    return;
  }
  const client = await stackmark.get();
  if (!client) return;
  const at = line ?? (editor?.document === document ? editor.selection.active.line : 0);
  const result = await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Window,
      title: vscode.l10n.t("Symbolizing {0}", vscode.workspace.asRelativePath(document.uri)),
    },
    () =>
      client.sendRequest(ExecuteCommandRequest.type, {
        command: "stackmark.symbolizedText",
        arguments: [document.uri.toString(), at],
      }) as Promise<Symbolized>,
  );
  const selection = new vscode.Range(result.line, 0, result.line, 0);
  const options: vscode.TextDocumentShowOptions = {
    viewColumn: vscode.ViewColumn.Beside,
    preview: false,
    selection,
  };
  let view: vscode.TextDocument;
  try {
    view = await vscode.workspace.openTextDocument(vscode.Uri.parse(result.uri));
  } catch {
    view = await vscode.workspace.openTextDocument({ content: result.text ?? "", language: "log" });
  }
  const shown = await vscode.window.showTextDocument(view, options);
  shown.revealRange(selection, vscode.TextEditorRevealType.AtTop);
}
