// "Show Symbolized Log": the whole log as `stackmark symbolize` prints it, beside
// the log, at the line under the cursor. The server renders it (command
// `stackmark.symbolizedText`) and serves it as a virtual document under the
// `stackmark-symbolized` scheme; vscode-languageclient provides that scheme's
// content (LSP 3.18 workspace/textDocumentContent) and refreshes it when the
// log changes. A server that did not register the scheme still returns the
// text, which then opens as an untitled document.

import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  type LanguageClient,
  TextDocumentContentRequest,
} from "vscode-languageclient/node";
import { isMarkupLog, type StackmarkClient } from "./client";

/** How long an open view may take to catch up with the server's text. */
const CATCH_UP_MS = 10000;

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
    view = await openCurrentView(client, vscode.Uri.parse(result.uri), result.text);
  } catch {
    view = await vscode.workspace.openTextDocument({ content: result.text ?? "", language: "log" });
  }
  const shown = await vscode.window.showTextDocument(view, options);
  shown.revealRange(selection, vscode.TextEditorRevealType.AtTop);
}

const sameText = (a: string, b: string) => a.replace(/\r\n?/g, "\n") === b.replace(/\r\n?/g, "\n");

/**
 * The view document, holding `text` (what the server just rendered, the text
 * `result.line` counts in). A view already open can be older: the server
 * refreshes it only half a second after the log's last edit, so a command run
 * right after an edit would put the cursor on the old text's line, and the
 * refresh then moved it to the wrong frame. Such a view is asked for its
 * content again, and the selection waits until it has arrived.
 */
async function openCurrentView(
  client: LanguageClient,
  uri: vscode.Uri,
  text: string | undefined,
): Promise<vscode.TextDocument> {
  const view = await vscode.workspace.openTextDocument(uri);
  if (text === undefined || sameText(view.getText(), text)) return view;
  let listener: vscode.Disposable | undefined;
  let timer: NodeJS.Timeout | undefined;
  const caughtUp = new Promise<void>((resolve) => {
    listener = vscode.workspace.onDidChangeTextDocument((event) => {
      if (event.document === view && sameText(view.getText(), text)) resolve();
    });
    // Never hang the command: a log edited again meanwhile has yet another text.
    timer = setTimeout(resolve, CATCH_UP_MS);
  });
  try {
    const feature = client.getFeature(TextDocumentContentRequest.method);
    for (const provider of feature?.getProviders() ?? []) {
      if (provider.scheme === uri.scheme) provider.onDidChangeEmitter.fire(uri);
    }
    await caughtUp;
  } finally {
    listener?.dispose();
    clearTimeout(timer);
  }
  return view;
}
