// Where the language server comes from: which command starts `stackmark lsp`,
// and whether that Python can run it (a version check and an import check
// before the first start, so that a wrong interpreter gives a message that
// says so instead of a server that dies four times).

import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";

/** The oldest Python the server runs on (pyproject.toml's requires-python). */
export const MIN_PYTHON: [number, number] = [3, 11];

/** How to start the server, and where that choice came from (for messages). */
export interface Launch {
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  origin: string;
}

/** Why no server could be started: shown to the user as it is. */
export class LaunchError extends Error {
  constructor(
    message: string,
    readonly tried: string[],
  ) {
    super(message);
  }
}

interface ProbeAnswer {
  version?: number[];
  executable?: string;
  missing?: string;
}

// Runs under whatever Python the user has, so it stays valid Python 2 and 3.
// It looks the server's packages up without importing them (that is the
// server's start-up work, not the check's).
const PROBE = [
  "import json, sys",
  "out = {'version': list(sys.version_info[:3]), 'executable': sys.executable}",
  `if tuple(sys.version_info[:2]) >= (${MIN_PYTHON[0]}, ${MIN_PYTHON[1]}):`,
  "    from importlib.util import find_spec",
  "    for name in ('stackmark_lsp', 'stackmark', 'pygls', 'lsprotocol'):",
  "        if find_spec(name) is None:",
  "            out['missing'] = name",
  "            break",
  "print(json.dumps(out))",
].join("\n");

/** The extension's own copy of the Python dependencies (`npm run package:bundled`). */
export function bundledLibs(extensionPath: string): string | undefined {
  const libs = path.join(extensionPath, "bundled", "libs");
  return fs.existsSync(path.join(libs, "stackmark_lsp")) ? libs : undefined;
}

function withPythonPath(libs: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PYTHONUNBUFFERED: "1" };
  if (libs) {
    env.PYTHONPATH = [libs, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter);
  }
  return env;
}

function probe(python: string, env: NodeJS.ProcessEnv): Promise<ProbeAnswer | Error> {
  return new Promise((resolve) => {
    execFile(python, ["-c", PROBE], { env, timeout: 30000 }, (error, stdout, stderr) => {
      if (error && !stdout) {
        const reason = (error as NodeJS.ErrnoException).code === "ENOENT"
          ? vscode.l10n.t("not found")
          : (stderr || error.message).trim();
        resolve(new Error(reason));
        return;
      }
      try {
        resolve(JSON.parse(stdout.trim().split("\n").pop() ?? "") as ProbeAnswer);
      } catch {
        resolve(new Error((stderr || stdout).trim()));
      }
    });
  });
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The interpreter of a console script (`#!/venv/bin/python`), to check it like the others. */
function shebangPython(script: string): string | undefined {
  try {
    const fd = fs.openSync(script, "r");
    const head = Buffer.alloc(256);
    const read = fs.readSync(fd, head, 0, 256, 0);
    fs.closeSync(fd);
    const first = head.subarray(0, read).toString("utf8").split("\n")[0];
    const match = /^#!\s*(\S+)(?:\s+(\S+))?/.exec(first);
    if (!match) return undefined;
    if (path.basename(match[1]) === "env" && match[2]) return onPath(match[2]);
    return match[1];
  } catch {
    return undefined;
  }
}

/** The Python the ms-python extension has selected for `resource`, if it is installed. */
async function selectedPython(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension("ms-python.python");
  if (!extension) return undefined;
  try {
    const api: unknown = extension.isActive ? extension.exports : await extension.activate();
    const environments = (api as { environments?: PythonEnvironments }).environments;
    if (!environments) return undefined;
    const active = environments.getActiveEnvironmentPath(resource);
    const resolved = await environments.resolveEnvironment(active);
    return resolved?.executable?.uri?.fsPath;
  } catch {
    return undefined;
  }
}

interface PythonEnvironments {
  getActiveEnvironmentPath(resource?: vscode.Uri): unknown;
  resolveEnvironment(
    environment: unknown,
  ): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
}

function describe(python: string, answer: ProbeAnswer): string {
  return `${python} (Python ${(answer.version ?? []).join(".")})`;
}

/**
 * The command to start the server, in this order: the `stackmark.server.command`
 * setting; `stackmark.server.pythonPath`; the Python extension's interpreter; the
 * bundled dependencies with `python3`; `stackmark` on PATH; `python3`.
 * Each Python is checked before it is chosen; a Python that was asked for by
 * name and fails the check is an error, not something to skip.
 */
export async function findServer(
  extensionPath: string,
  resource: vscode.Uri | undefined,
): Promise<Launch> {
  const config = vscode.workspace.getConfiguration("stackmark", resource);
  const logLevel = config.get<string>("server.logLevel", "warning");
  const serverArgs = ["--log-level", logLevel];
  const command = config.get<string[]>("server.command", []).filter((part) => part.length > 0);
  if (command.length > 0) {
    return {
      command: command[0],
      args: command.slice(1),
      env: withPythonPath(undefined),
      origin: "stackmark.server.command",
    };
  }
  const libs = bundledLibs(extensionPath);
  const tried: string[] = [];
  const check = async (python: string, origin: string, required: boolean) => {
    const env = withPythonPath(libs);
    const answer = await probe(python, env);
    if (answer instanceof Error) {
      tried.push(`${python}: ${answer.message}`);
      if (required) {
        throw new LaunchError(
          vscode.l10n.t("The Python set in {0} cannot be started: {1} ({2}).", origin, python,
            answer.message),
          tried,
        );
      }
      return undefined;
    }
    const version = answer.version ?? [0, 0];
    if (version[0] < MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] < MIN_PYTHON[1])) {
      tried.push(vscode.l10n.t("{0}: too old", describe(python, answer)));
      if (required) {
        throw new LaunchError(
          vscode.l10n.t("{0} from {1} is too old: the stackmark server needs Python {2}.{3} or newer.",
            describe(python, answer), origin, MIN_PYTHON[0], MIN_PYTHON[1]),
          tried,
        );
      }
      return undefined;
    }
    if (answer.missing) {
      tried.push(vscode.l10n.t("{0}: cannot import {1}", describe(python, answer), answer.missing));
      if (required) {
        throw new LaunchError(
          vscode.l10n.t("{0} from {1} cannot import {2}. Install the server into it from a stackmark checkout (it is not on PyPI) with: {3} -m pip install '/path/to/stackmark[lsp]'",
            describe(python, answer), origin, answer.missing, python),
          tried,
        );
      }
      return undefined;
    }
    const launch: Launch = {
      command: python,
      args: ["-m", "stackmark_lsp", ...serverArgs],
      env,
      origin,
    };
    return launch;
  };

  const configured = config.get<string>("server.pythonPath", "").trim();
  if (configured) {
    const python = configured.startsWith("~")
      ? path.join(process.env.HOME ?? "", configured.slice(1))
      : configured;
    return (await check(python, "stackmark.server.pythonPath", true))!;
  }
  const selected = await selectedPython(resource);
  if (selected) {
    const found = await check(selected, vscode.l10n.t("the Python extension"), false);
    if (found) return found;
  }
  const python3 = process.platform === "win32" ? "py" : "python3";
  if (libs) {
    const found = await check(python3, vscode.l10n.t("the bundled dependencies"), false);
    if (found) return found;
  }
  const script = onPath(process.platform === "win32" ? "stackmark.exe" : "stackmark");
  if (script) {
    const python = shebangPython(script);
    if (python) {
      const found = await check(python, script, false);
      if (found) return found;
    } else {
      return { command: script, args: ["lsp", ...serverArgs], env: withPythonPath(undefined),
        origin: script };
    }
  }
  const found = await check(python3, python3, false);
  if (found) return found;
  throw new LaunchError(
    vscode.l10n.t("No stackmark language server found. Install it from a stackmark checkout (it is not on PyPI): `pipx install '/path/to/stackmark[lsp]'` puts `stackmark` on PATH; or install it into a Python {0}.{1} or newer with `python3 -m pip install '/path/to/stackmark[lsp]'` and set stackmark.server.pythonPath to that Python.",
      MIN_PYTHON[0], MIN_PYTHON[1]),
    tried,
  );
}
