-- Neovim 0.11's own recipe, as editors/nvim/README.md documents it: the
-- plugin for detection only (autostart = false), lsp/stackmark.lua from the
-- runtimepath, vim.lsp.config + vim.lsp.enable. Opens the log, waits for the
-- client, hovers, and writes what it saw as JSON to $STACKMARK_NVIM_OUT.
--
-- Environment: STACKMARK_NVIM_PLUGIN, STACKMARK_NVIM_PYTHON, STACKMARK_NVIM_LOG,
-- STACKMARK_NVIM_DEBUG_DIR, STACKMARK_NVIM_LINE, STACKMARK_NVIM_COL, STACKMARK_NVIM_OUT.

local env = vim.env
vim.opt.runtimepath:prepend(env.STACKMARK_NVIM_PLUGIN)
vim.cmd("runtime plugin/stackmark.lua")
require("stackmark").setup({ autostart = false })
vim.lsp.config("stackmark", {
  cmd = { env.STACKMARK_NVIM_PYTHON, "-m", "stackmark_lsp" },
  settings = { stackmark = { debugFileDirectories = { env.STACKMARK_NVIM_DEBUG_DIR } } },
})
vim.lsp.enable("stackmark")
vim.cmd("edit " .. vim.fn.fnameescape(env.STACKMARK_NVIM_LOG))
local attached = vim.wait(30000, function()
  local client = require("stackmark").client_for(0)
  return client ~= nil and client.initialized == true
end, 20)
local hover = ""
if attached then
  local answers = vim.lsp.buf_request_sync(0, "textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(0) },
    position = { line = tonumber(env.STACKMARK_NVIM_LINE), character = tonumber(env.STACKMARK_NVIM_COL) },
  }, 30000)
  for _, answer in pairs(answers or {}) do
    if answer.result then
      hover = answer.result.contents.value
    end
  end
end
local config = vim.lsp.config.stackmark
vim.fn.writefile({ vim.fn.json_encode({
  attached = attached,
  filetype = vim.bo.filetype,
  filetypes = config.filetypes,
  hover = hover,
}) }, env.STACKMARK_NVIM_OUT)
vim.cmd("qall!")
