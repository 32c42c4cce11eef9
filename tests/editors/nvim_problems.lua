-- The two set-ups people get wrong, in a real headless Neovim: a server
-- command that is not installed, and a Python without stackmark. Records
-- what the plugin told the user (vim.notify) and what :checkhealth says.
--
-- Input: the JSON file named by $STACKMARK_NVIM_SCENARIO:
--   { plugin, log, missing_cmd, bare_python, out }

local scenario = vim.fn.json_decode(table.concat(vim.fn.readfile(os.getenv("STACKMARK_NVIM_SCENARIO")), "\n"))
local out = { notified = {} }

vim.notify = function(message, level)
  table.insert(out.notified, { message = message, level = level })
end

vim.opt.runtimepath:prepend(scenario.plugin)
vim.cmd("runtime plugin/stackmark.lua")
local stackmark = require("stackmark")

local function health()
  vim.cmd("checkhealth stackmark")
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd("bwipeout!")
  return lines
end

-- 1. A command that does not exist: a message, no client.
stackmark.setup({ cmd = { scenario.missing_cmd, "lsp" } })
vim.cmd("edit " .. vim.fn.fnameescape(scenario.log))
out.missing = { filetype = vim.bo.filetype, clients = #stackmark.clients(), health = health() }

-- 2. A Python without stackmark[lsp]: :checkhealth says what to install.
stackmark.setup({ python = scenario.bare_python })
out.bare = { health = health() }

vim.fn.writefile({ vim.fn.json_encode(out) }, scenario.out)
vim.cmd("qall!")
