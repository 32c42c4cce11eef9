-- stackmark for Neovim: the `stackmark lsp` language server for logs that
-- carry LLVM symbolizer markup.
--
--   require("stackmark").setup({
--     cmd = { "stackmark", "lsp" },            -- or python = "/path/to/python"
--     settings = { debugFileDirectories = { "/srv/debug" } },
--   })
--
-- setup() detects markup logs by their content (filetype `stackmark`),
-- starts one server for them (vim.lsp.start on 0.8+, start_client on 0.7),
-- and defines :StackmarkSymbolize and :StackmarkRestart.

local compat = require("stackmark.compat")
local detect = require("stackmark.detect")
local view = require("stackmark.view")

local M = {}

local uv = vim.loop

M.name = "stackmark"

-- Setting keys the server reads (server/stackmark_lsp/settings.py).
M.setting_keys = {
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
}

local defaults = {
  cmd = nil, -- default: { "stackmark", "lsp" }, or { python, "-m", "stackmark_lsp" }
  python = nil, -- a Python with stackmark[lsp] installed
  settings = {}, -- the server's settings (keys above)
  root_dir = nil, -- default: the current directory when the server starts
  filetypes = { "stackmark" }, -- filetypes the server attaches to
  detect = true, -- set filetype=stackmark on files whose first lines carry markup
  detect_lines = 200,
  autostart = true, -- false: leave starting to vim.lsp.enable("stackmark") (0.11)
  inlay_hints = true, -- Neovim 0.10+
  codelens = true, -- Neovim 0.11+: the "Symbolize" lens above each backtrace
  keymaps = true, -- buffer-local K (hover, before 0.10) and gd (definition)
  view_split = "vsplit", -- how :StackmarkSymbolize opens its window
  on_attach = nil, -- function(client, bufnr), called after ours
  capabilities = nil,
}

M.config = vim.deepcopy(defaults)
local client_id = nil -- 0.7: the one client, reused for every log

local function notify(message, level)
  vim.notify("stackmark: " .. message, level or vim.log.levels.INFO)
end

local function has(feature)
  return vim.fn.has(feature) == 1
end

--- The command that starts the server.
function M.command()
  local config = M.config
  if config.cmd then
    return config.cmd
  end
  if config.python then
    return { config.python, "-m", "stackmark_lsp" }
  end
  return { "stackmark", "lsp" }
end

local function server_settings()
  local settings = {}
  for _, key in ipairs(M.setting_keys) do
    if M.config.settings[key] ~= nil then
      settings[key] = M.config.settings[key]
    end
  end
  return settings
end

local function get_client(id)
  return id and vim.lsp.get_client_by_id(id) or nil
end

--- The running stackmark clients.
function M.clients()
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ name = M.name })
  end
  local found = {}
  for _, client in pairs(vim.lsp.get_active_clients()) do
    if client.name == M.name then
      table.insert(found, client)
    end
  end
  return found
end

--- The stackmark client attached to `bufnr` (0: current), if any.
function M.client_for(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  for _, client in ipairs(M.clients()) do
    if vim.lsp.buf_is_attached(bufnr, client.id) then
      return client
    end
  end
  return nil
end

local function on_attach(client, bufnr)
  local config = M.config
  if config.keymaps then
    local function map(lhs, rhs, desc)
      vim.api.nvim_buf_set_keymap(bufnr, "n", lhs, rhs, { noremap = true, silent = true, desc = desc })
    end
    if not has("nvim-0.10") then
      map("K", "<cmd>lua vim.lsp.buf.hover()<CR>", "stackmark: hover")
    end
    map("gd", "<cmd>lua vim.lsp.buf.definition()<CR>", "stackmark: go to definition")
    vim.api.nvim_buf_set_option(bufnr, "tagfunc", "v:lua.vim.lsp.tagfunc")
  end
  if config.inlay_hints and has("nvim-0.10") and vim.lsp.inlay_hint then
    vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
  end
  if config.codelens and has("nvim-0.11") then
    vim.lsp.codelens.refresh({ bufnr = bufnr })
    vim.api.nvim_create_autocmd({ "BufEnter", "InsertLeave" }, {
      buffer = bufnr,
      group = vim.api.nvim_create_augroup("stackmark_codelens_" .. bufnr, { clear = true }),
      callback = function()
        vim.lsp.codelens.refresh({ bufnr = bufnr })
      end,
    })
  end
  if config.on_attach then
    config.on_attach(client, bufnr)
  end
end

local function on_exit(code, signal)
  if code ~= 0 and signal == 0 then
    vim.schedule(function()
      notify(
        ("the language server exited with code %d; run :checkhealth stackmark, "
          .. "and see %s"):format(code, vim.lsp.get_log_path()),
        vim.log.levels.ERROR
      )
    end)
  end
end

--- The client configuration handed to vim.lsp.start / start_client.
function M.client_config()
  local cmd = M.command()
  return {
    name = M.name,
    cmd = cmd,
    root_dir = M.config.root_dir or uv.cwd(),
    settings = { stackmark = server_settings() },
    init_options = server_settings(),
    capabilities = M.config.capabilities,
    on_attach = on_attach,
    on_exit = on_exit,
    commands = {
      -- The code lens runs this command: open the view at the lens' backtrace.
      ["stackmark.symbolize"] = function(command, context)
        local arguments = command.arguments or {}
        view.open(get_client(context.client_id), arguments[1], arguments[2] or 0, M.config.view_split)
      end,
    },
  }
end

local function command_missing(cmd)
  if vim.fn.executable(cmd[1]) == 1 then
    return false
  end
  notify(
    ("the language server command %q was not found. Install the server with "
      .. "`pipx install '/path/to/stackmark[lsp]'` from a stackmark checkout (Python 3.11+; "
      .. "stackmark is not on PyPI), or pass cmd = {...} or "
      .. "python = '/path/to/python' to require('stackmark').setup()"):format(cmd[1]),
    vim.log.levels.ERROR
  )
  return true
end

--- Start the server (or reuse the running one) and attach `bufnr` to it.
function M.attach(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local config = M.client_config()
  if command_missing(config.cmd) then
    return nil
  end
  if vim.lsp.start then
    return vim.lsp.start(config, { bufnr = bufnr })
  end
  -- Neovim 0.7: one client, started once and attached to each log.
  if not get_client(client_id) or compat.is_stopped(get_client(client_id)) then
    client_id = vim.lsp.start_client(config)
  end
  if client_id then
    vim.lsp.buf_attach_client(bufnr, client_id)
  end
  return client_id
end

--- Stop every stackmark client and attach its buffers to a new one.
function M.restart()
  local buffers = {}
  for _, client in ipairs(M.clients()) do
    for bufnr in pairs(client.attached_buffers or {}) do
      buffers[bufnr] = true
    end
    compat.stop(client)
  end
  client_id = nil
  local ids = vim.tbl_map(function(client)
    return client.id
  end, M.clients())
  vim.wait(5000, function()
    for _, id in ipairs(ids) do
      local client = get_client(id)
      if client and not compat.is_stopped(client) then
        return false
      end
    end
    return true
  end, 20)
  for bufnr in pairs(buffers) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      M.attach(bufnr)
    end
  end
  if vim.tbl_isempty(buffers) and vim.tbl_contains(M.config.filetypes, vim.bo.filetype) then
    M.attach(0)
  end
end

--- :StackmarkSymbolize: the current log, symbolized, in a split at the cursor's line.
function M.symbolize()
  local client = M.client_for(0)
  if not client then
    notify("this buffer is not attached to the stackmark server", vim.log.levels.WARN)
    return
  end
  local line = vim.api.nvim_win_get_cursor(0)[1] - 1
  view.open(client, vim.uri_from_bufnr(0), line, M.config.view_split)
end

function M.setup(options)
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), options or {})
  local group = vim.api.nvim_create_augroup("stackmark", { clear = true })
  if M.config.autostart then
    vim.api.nvim_create_autocmd("FileType", {
      group = group,
      pattern = M.config.filetypes,
      callback = function(event)
        M.attach(event.buf)
      end,
    })
  end
  if M.config.detect then
    detect.install(group, M.config.detect_lines)
  end
  -- Buffers already open when setup() runs (a lazy-loading plugin manager).
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) then
      if M.config.detect then
        detect.check(bufnr, M.config.detect_lines) -- may attach, through FileType
      end
      local wanted = vim.tbl_contains(M.config.filetypes, vim.bo[bufnr].filetype)
      if M.config.autostart and wanted and not M.client_for(bufnr) then
        M.attach(bufnr)
      end
    end
  end
end

return M
