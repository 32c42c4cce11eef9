-- Neovim 0.11+: a config for vim.lsp.config / vim.lsp.enable, found on the
-- runtimepath as lsp/stackmark.lua. Without require("stackmark").setup():
--
--   vim.lsp.config("stackmark", { settings = { stackmark = { debugFileDirectories = { "/srv/debug" } } } })
--   vim.lsp.enable("stackmark")
--
-- Files get filetype `stackmark` from the plugin's detection (setup() with
-- default options, or `:set filetype=stackmark`).
return {
  cmd = { "stackmark", "lsp" },
  filetypes = { "stackmark" },
  root_markers = { ".git" },
  settings = { stackmark = {} },
}
