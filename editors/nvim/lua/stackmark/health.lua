-- :checkhealth stackmark: is the server command there, and can its Python run it?

local M = {}

local health = vim.health or require("health")
local start = health.start or health.report_start
local ok = health.ok or health.report_ok
local warn = health.warn or health.report_warn
local fail = health.error or health.report_error
local info = health.info or health.report_info

-- The same check as the VS Code extension's: version, then the packages, without importing them.
local PROBE = table.concat({
  "import json, sys",
  "out = {'version': list(sys.version_info[:3]), 'executable': sys.executable}",
  "if tuple(sys.version_info[:2]) >= (3, 11):",
  "    from importlib.util import find_spec",
  "    for name in ('stackmark_lsp', 'stackmark', 'pygls', 'lsprotocol'):",
  "        if find_spec(name) is None:",
  "            out['missing'] = name",
  "            break",
  "print(json.dumps(out))",
}, "\n")

--- The Python behind `cmd`: `{python, "-m", ...}` or a console script's #! line.
local function python_of(cmd)
  if cmd[2] == "-m" then
    return cmd[1]
  end
  local path = vim.fn.exepath(cmd[1])
  if path == "" then
    return nil
  end
  local first = (vim.fn.readfile(path, "", 1)[1] or "")
  local interpreter, argument = first:match("^#!%s*(%S+)%s*(%S*)")
  if interpreter and interpreter:match("/env$") and argument ~= "" then
    return vim.fn.exepath(argument)
  end
  return interpreter
end

function M.check()
  local stackmark = require("stackmark")
  start("stackmark language server")
  local cmd = stackmark.command()
  info("command: " .. table.concat(cmd, " "))
  if vim.fn.executable(cmd[1]) ~= 1 then
    fail(("%s was not found"):format(cmd[1]), {
      "install the server from a stackmark checkout (it is not on PyPI): "
        .. "pipx install '/path/to/stackmark[lsp]' (Python 3.11 or newer)",
      "or pass cmd = {...} or python = '/path/to/python' to require('stackmark').setup()",
    })
    return
  end
  local python = python_of(cmd)
  if not python or python == "" then
    ok("found " .. vim.fn.exepath(cmd[1]) .. " (not a Python script: not checked further)")
    return
  end
  local output = vim.fn.system({ python, "-c", PROBE })
  local decoded, answer = pcall(vim.fn.json_decode, vim.trim(output))
  if vim.v.shell_error ~= 0 or not decoded then
    fail(("%s did not run: %s"):format(python, vim.trim(output)))
    return
  end
  local version = table.concat(answer.version, ".")
  if answer.version[1] < 3 or (answer.version[1] == 3 and answer.version[2] < 11) then
    fail(("%s is Python %s; the server needs 3.11 or newer"):format(python, version), {
      "point cmd or python in setup() at a newer Python with stackmark[lsp] installed",
    })
  elseif answer.missing then
    fail(("%s (Python %s) cannot import %s"):format(python, version, answer.missing), {
      ("%s -m pip install '/path/to/stackmark[lsp]' (from a stackmark checkout)"):format(python),
    })
  else
    ok(("%s (Python %s) has stackmark, its language server and pygls"):format(python, version))
  end
  if #stackmark.clients() == 0 then
    warn("no stackmark client is running (open a log with symbolizer markup)")
  else
    ok(("%d stackmark client(s) running"):format(#stackmark.clients()))
  end
end

return M
