-- Neovim on a real terminal (tmux): the log with the plugin, a hover on a
-- frame with an inline chain, inlay hints on. When the hover window is on
-- screen, writes $STACKMARK_NVIM_READY, so that the test captures the
-- terminal then (a condition, not a delay).
--
-- Environment: STACKMARK_NVIM_PLUGIN, STACKMARK_NVIM_PYTHON, STACKMARK_NVIM_LOG,
-- STACKMARK_NVIM_DEBUG_DIR, STACKMARK_NVIM_LINE, STACKMARK_NVIM_COL (0-based),
-- STACKMARK_NVIM_READY.

local env = vim.env
vim.o.termguicolors = true
vim.o.number = true
vim.o.signcolumn = "yes"
vim.o.swapfile = false
vim.opt.runtimepath:prepend(env.STACKMARK_NVIM_PLUGIN)
vim.cmd("runtime plugin/stackmark.lua")
local stackmark = require("stackmark")
stackmark.setup({
  python = env.STACKMARK_NVIM_PYTHON,
  settings = { debugFileDirectories = { env.STACKMARK_NVIM_DEBUG_DIR } },
})
vim.cmd("edit " .. vim.fn.fnameescape(env.STACKMARK_NVIM_LOG))
local line, col = tonumber(env.STACKMARK_NVIM_LINE), tonumber(env.STACKMARK_NVIM_COL)

local function ready(status)
  vim.fn.writefile({ status }, env.STACKMARK_NVIM_READY)
end

local function float_shown()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      return true
    end
  end
  return false
end

local function hints_shown()
  return #vim.lsp.inlay_hint.get({ bufnr = 0 }) > 0
end

local deadline = vim.loop.now() + 60000
local function poll(condition, after)
  if condition() then
    after()
  elseif vim.loop.now() > deadline then
    ready("timeout")
  else
    vim.defer_fn(function()
      poll(condition, after)
    end, 50)
  end
end

poll(function()
  local client = stackmark.client_for(0)
  return client ~= nil and client.initialized == true and hints_shown()
end, function()
  vim.api.nvim_win_set_cursor(0, { line + 1, col })
  vim.cmd("normal! zz")
  vim.lsp.buf.hover()
  poll(float_shown, function()
    vim.cmd("redraw")
    ready("shown")
  end)
end)
