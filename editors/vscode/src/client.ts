// The language client: one `stackmark lsp` process for the window, started
// when the first markup log is open, restarted on demand or when a
// `stackmark.server.*` setting changes. vscode-languageclient restarts a server
// that crashes (unless it crashed 5 times in 3 minutes) and shows its stderr
// in the output channel.

import * as vscode from "vscode";
import {
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
} from "vscode-languageclient/node";
import { findServer, type Launch, LaunchError } from "./launch";

/** The documents the server reads: the built-in log language and our own. */
export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "log" },
  { scheme: "untitled", language: "log" },
  { scheme: "file", language: "stackmark-log" },
  { scheme: "untitled", language: "stackmark-log" },
];

/** The server's command behind the "Symbolize" code lens (server/stackmark_lsp/commands.py). */
const SYMBOLIZE_COMMAND = "stackmark.symbolize";

/** Setting keys the server reads (server/stackmark_lsp/settings.py). */
export const SERVER_SETTINGS = [
  "debugFileDirectories",
  "objects",
  "symbolPaths",
  "gsymPaths",
  "cacheDir",
  "debuginfodUrls",
  "debuginfodTimeout",
  "debuginfodCachePath",
  "debuginfodOffline",
  "sourcePathMap",
] as const;

export function isMarkupLog(document: vscode.TextDocument): boolean {
  return vscode.languages.match(DOCUMENT_SELECTOR, document) > 0;
}

function serverSettings(): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration("stackmark");
  const values: Record<string, unknown> = {};
  for (const key of SERVER_SETTINGS) values[key] = config.get(key);
  return values;
}

export class StackmarkClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  private launch: Launch | undefined;

  constructor(
    private readonly extensionPath: string,
    readonly output: vscode.LogOutputChannel,
    private readonly traceOutput: vscode.LogOutputChannel,
  ) {}

  /** Whether a server was started (or tried) in this window. */
  get started(): boolean {
    return this.client !== undefined || this.starting !== undefined;
  }

  /** The running client, starting it if needed; undefined when it cannot start. */
  async get(): Promise<LanguageClient | undefined> {
    if (this.client && this.client.state === State.Running) return this.client;
    if (!this.starting) {
      this.starting = this.start().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  private async start(): Promise<LanguageClient | undefined> {
    if (this.client) {
      const old = this.client;
      this.client = undefined;
      await old.dispose().catch(() => undefined);
    }
    const resource = vscode.window.activeTextEditor?.document.uri;
    try {
      this.launch = await findServer(this.extensionPath, resource);
    } catch (error) {
      this.reportLaunchError(error);
      return undefined;
    }
    const launch = this.launch;
    this.output.appendLine(
      vscode.l10n.t("Starting the server: {0} (from {1})",
        [launch.command, ...launch.args].join(" "), launch.origin),
    );
    // No `transport`: the server talks stdio anyway, and a transport adds `--stdio`.
    const serverOptions: ServerOptions = {
      command: launch.command,
      args: launch.args,
      options: { env: launch.env },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      synchronize: { configurationSection: "stackmark" },
      initializationOptions: serverSettings(),
      outputChannel: this.output,
      traceOutputChannel: this.traceOutput,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: {
        // The "Symbolize" code lens runs the server's `stackmark.symbolize`, which
        // shows the view with window/showDocument: LSP cannot ask for a column, so
        // VS Code would open it over the log. The extension's own command opens it
        // beside the log, at the same line.
        executeCommand: (command, args, next) => {
          if (command === SYMBOLIZE_COMMAND && typeof args[0] === "string") {
            return vscode.commands.executeCommand(
              "stackmark.showSymbolizedLog",
              vscode.Uri.parse(args[0]),
              typeof args[1] === "number" ? args[1] : undefined,
            );
          }
          return next(command, args);
        },
      },
    };
    const client = new LanguageClient("stackmark", "Stackmark", serverOptions, clientOptions);
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.output.appendLine(String(error));
      void this.offerOutput(
        vscode.l10n.t("The stackmark language server did not start: {0}", String(error)),
      );
      return undefined;
    }
    return client;
  }

  async restart(): Promise<void> {
    if (this.starting) await this.starting;
    if (this.client) {
      const old = this.client;
      this.client = undefined;
      await old.stop().catch(() => undefined);
      await old.dispose().catch(() => undefined);
    }
    await this.get();
  }

  private reportLaunchError(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    this.output.appendLine(message);
    if (error instanceof LaunchError) {
      for (const line of error.tried) this.output.appendLine(`  ${line}`);
    }
    const openSettings = vscode.l10n.t("Open Settings");
    const showOutput = vscode.l10n.t("Show Output");
    void vscode.window.showErrorMessage(message, openSettings, showOutput).then((choice) => {
      if (choice === openSettings) {
        void vscode.commands.executeCommand("workbench.action.openSettings", "stackmark.server");
      } else if (choice === showOutput) {
        this.output.show(true);
      }
    });
  }

  private async offerOutput(message: string): Promise<void> {
    const showOutput = vscode.l10n.t("Show Output");
    if ((await vscode.window.showErrorMessage(message, showOutput)) === showOutput) {
      this.output.show(true);
    }
  }

  async dispose(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) await client.dispose().catch(() => undefined);
  }
}
