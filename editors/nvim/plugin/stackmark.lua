-- Commands; the server itself starts once require("stackmark").setup() ran.
if vim.g.loaded_stackmark then
  return
end
vim.g.loaded_stackmark = true

vim.api.nvim_create_user_command("StackmarkSymbolize", function()
  require("stackmark").symbolize()
end, { desc = "stackmark: show the log symbolized in a split" })

vim.api.nvim_create_user_command("StackmarkRestart", function()
  require("stackmark").restart()
end, { desc = "stackmark: restart the language server" })
