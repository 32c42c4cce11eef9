// Entry point: wires the client, the commands and content detection.

import * as vscode from "vscode";
import { isMarkupLog, StackmarkClient } from "./client";
import { detectMarkupLog } from "./detect";
import { showSymbolizedLog } from "./symbolizedView";

let stackmark: StackmarkClient | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const output = vscode.window.createOutputChannel("Stackmark", { log: true });
  const trace = vscode.window.createOutputChannel("Stackmark Trace", { log: true });
  const client = new StackmarkClient(context.extensionPath, output, trace);
  stackmark = client;
  context.subscriptions.push(output, trace, client);

  const startFor = (document: vscode.TextDocument) => {
    if (isMarkupLog(document)) void client.get();
  };
  context.subscriptions.push(
    // From the editor title bar VS Code passes (uri, {groupId}), from the palette
    // nothing: only a number is a line.
    vscode.commands.registerCommand("stackmark.showSymbolizedLog",
      (uri?: unknown, line?: unknown) =>
        showSymbolizedLog(
          client,
          uri instanceof vscode.Uri ? uri : undefined,
          typeof line === "number" ? line : undefined,
        )),
    vscode.commands.registerCommand("stackmark.restartServer", () => client.restart()),
    vscode.commands.registerCommand("stackmark.showOutput", () => output.show(true)),
    vscode.workspace.onDidOpenTextDocument(async (document) => {
      await detectMarkupLog(document);
      startFor(document);
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("stackmark.server") && client.started) {
        void client.restart();
      }
    }),
  );
  for (const document of vscode.workspace.textDocuments) {
    void detectMarkupLog(document).then(() => startFor(document));
  }
}

export async function deactivate(): Promise<void> {
  await stackmark?.dispose();
  stackmark = undefined;
}
