// Open a log in the language server the way VS Code sends it, and time it.
//
// VS Code's language client speaks JSON-RPC through the `vscode-jsonrpc`
// package (editors/vscode/node_modules, installed by `make test` and
// `make bench`); this script uses that same package over the server's stdio,
// so the didOpen message is encoded by V8's JSON.stringify and framed as
// VS Code frames it. bench_lsp.py's own client is pygls, whose encoding of a
// 70 MB text in Python is part of its figure; this one measures what an
// editor user waits for.
//
//   node bench/lsp_open_node.js LOG SETTINGS_JSON SERVER_LOG PYTHON [REPO]
//
// Prints one JSON object: encode_s (the client's JSON.stringify of the
// message, measured separately on the same object), open_to_first_s (from
// the call that sends didOpen to the first publishDiagnostics), head_first
// (whether that one was the first crash reports', published while the
// message arrived), open_to_whole_s (to the whole log's diagnostics),
// open_to_second_s (to the diagnostics with every module's binary looked
// for), open_server_cpu_s (the server's CPU time from didOpen to the whole
// log's diagnostics), and the diagnostics counts.
"use strict";

const fs = require("fs");
const path = require("path");
const { spawn } = require("child_process");
const { pathToFileURL } = require("url");

const [logPath, settingsJson, serverLog, python, repoArg] = process.argv.slice(2);
const repo = repoArg || path.resolve(__dirname, "..");
const rpc = require(path.join(repo, "editors/vscode/node_modules/vscode-jsonrpc/lib/node/main.js"));

const settings = JSON.parse(settingsJson);
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !k.startsWith("DEBUGINFOD_"))
);
const server = spawn(
  python,
  ["-m", "stackmark", "lsp", "--log-level", "info", "--log-file", serverLog],
  { cwd: repo, env, stdio: ["pipe", "pipe", "inherit"] }
);
const connection = rpc.createMessageConnection(
  new rpc.StreamMessageReader(server.stdout),
  new rpc.StreamMessageWriter(server.stdin)
);

const HEAD_LINE = "diagnostics of the first"; // the server's log line for an early publication
const SETTLE_MS = 3000; // without a publication: every module was looked for

const published = [];
let wake = null;
connection.onNotification("textDocument/publishDiagnostics", (params) => {
  published.push([performance.now(), params.diagnostics.length]);
  if (wake) wake();
});
connection.onRequest("workspace/configuration", (params) => params.items.map(() => settings));
connection.onRequest("window/workDoneProgress/create", () => null);
connection.onRequest("client/registerCapability", () => null);
connection.onNotification("$/progress", () => undefined);
connection.onNotification("window/logMessage", () => undefined);
connection.listen();

// The server's CPU time so far (user + system, seconds; its forked child's not counted).
function serverCpu() {
  const fields = fs.readFileSync(`/proc/${server.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function publication(count) {
  return new Promise((resolve) => {
    const check = () => {
      if (published.length >= count) {
        wake = null;
        resolve(published[count - 1][0]);
      }
    };
    wake = check;
    check();
  });
}

async function main() {
  const text = fs.readFileSync(logPath, "utf8");
  const uri = pathToFileURL(path.resolve(logPath)).href;
  await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: null,
    capabilities: {
      workspace: { configuration: true },
      window: { workDoneProgress: true },
      textDocument: { publishDiagnostics: { versionSupport: true } },
    },
    initializationOptions: settings,
  });
  await connection.sendNotification("initialized", {});
  await new Promise((resolve) => setTimeout(resolve, 500)); // let the server settle
  const params = { textDocument: { uri, languageId: "log", version: 1, text } };
  const encodeStart = performance.now();
  JSON.stringify({ jsonrpc: "2.0", method: "textDocument/didOpen", params });
  const encode = performance.now() - encodeStart;
  const logStart = fs.existsSync(serverLog) ? fs.statSync(serverLog).size : 0;
  const cpuBefore = serverCpu();
  const sent = performance.now();
  await connection.sendNotification("textDocument/didOpen", params);
  const first = await publication(1);
  // The first publication may be the first crash reports' (the server's head.py), made
  // while the message was still arriving; the server's log says so before it publishes.
  const headFirst = fs.readFileSync(serverLog).subarray(logStart).includes(HEAD_LINE);
  const whole = headFirst ? await publication(2) : first;
  const cpuOpen = serverCpu() - cpuBefore;
  // Then the diagnostics with every module's binary looked for: the next publication, or
  // the whole log's if none comes (the modules were looked for while the message arrived).
  const second = await Promise.race([
    publication(headFirst ? 3 : 2),
    new Promise((resolve) => setTimeout(() => resolve(whole), SETTLE_MS)),
  ]);
  const result = {
    encode_s: encode / 1000,
    head_first: headFirst,
    open_to_first_s: (first - sent) / 1000,
    open_to_whole_s: (whole - sent) / 1000,
    open_to_second_s: (second - sent) / 1000,
    open_server_cpu_s: cpuOpen,
    first_diagnostics: published[0][1],
    whole_diagnostics: published[headFirst ? 1 : 0][1],
  };
  await connection.sendRequest("shutdown");
  await connection.sendNotification("exit");
  connection.dispose();
  process.stdout.write(JSON.stringify(result) + "\n");
}

main().catch((error) => {
  process.stderr.write(`lsp_open_node.js: ${error.stack || error}\n`);
  server.kill();
  process.exit(1);
});
