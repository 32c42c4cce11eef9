// The transport under the language server's open, as VS Code's `vscode-jsonrpc`
// writes a message: JSON.stringify of the didOpen message, Buffer.from of the
// result, then the header and the bytes written to a child's stdin (node's stdio
// is a socket pair). The child (a Python program given as an argument) reads the
// message as pygls does and prints its own times; this prints the writer's.
//
//   node bench/lsp_floor_node.js LOG PYTHON READER_SOURCE
//
// Prints two JSON lines: {stringify_s, buffer_s} and the reader's
// {transfer_s, loads_s} (from the header's first line to the whole body read,
// then the body decoded).
"use strict";

const fs = require("fs");
const { spawn } = require("child_process");

const [logPath, python, reader] = process.argv.slice(2);
const text = fs.readFileSync(logPath, "utf8");
const child = spawn(python, ["-c", reader], { stdio: ["pipe", "inherit", "inherit"] });
const params = { textDocument: { uri: "file:///log", languageId: "log", version: 1, text } };
const message = { jsonrpc: "2.0", method: "textDocument/didOpen", params };

setTimeout(() => {
  const started = performance.now();
  const body = JSON.stringify(message);
  const encoded = performance.now();
  const bytes = Buffer.from(body, "utf8");
  const converted = performance.now();
  child.stdin.write(`Content-Length: ${bytes.length}\r\n\r\n`);
  child.stdin.write(bytes);
  child.stdin.end();
  process.stdout.write(
    JSON.stringify({
      stringify_s: (encoded - started) / 1000,
      buffer_s: (converted - encoded) / 1000,
    }) + "\n"
  );
}, 300); // the child has started
