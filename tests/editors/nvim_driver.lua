-- Drives a real headless Neovim (0.7 or 0.11) through the stackmark plugin,
-- the way a person would: open a log, hover, go to definition, read the
-- diagnostics and inlay hints, run :StackmarkSymbolize. Every step waits on
-- a condition (vim.wait), never on time. The observations go to a JSON file
-- that tests/editors/test_nvim.py checks; a step that fails records its
-- error and the next steps still run.
--
-- Input: the JSON file named by $STACKMARK_NVIM_SCENARIO:
--   { plugin, python, log, debug_dir, out, hover = {line, col},
--     definition = {line, col}, diagnostic_line, symbolize_line }   (0-based lines and byte columns)

local scenario = vim.fn.json_decode(table.concat(vim.fn.readfile(os.getenv("STACKMARK_NVIM_SCENARIO")), "\n"))
local out = { version = vim.version(), steps = {} }
local TIMEOUT = 30000

local function save()
  vim.fn.writefile({ vim.fn.json_encode(out) }, scenario.out)
end

local function step(name, body)
  local ok, result = pcall(body)
  if ok then
    out[name] = result
  else
    out[name] = { error = tostring(result) }
  end
  table.insert(out.steps, name)
  save()
end

local function wait_for(what, condition)
  if not vim.wait(TIMEOUT, condition, 20) then
    error("timed out waiting for " .. what)
  end
end

local function floats()
  local found = {}
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= "" then
      table.insert(found, win)
    end
  end
  return found
end

local function close_floats()
  for _, win in ipairs(floats()) do
    pcall(vim.api.nvim_win_close, win, true)
  end
end

vim.opt.runtimepath:prepend(scenario.plugin)
vim.cmd("runtime plugin/stackmark.lua")
local stackmark = require("stackmark")
stackmark.setup({
  python = scenario.python,
  settings = { debugFileDirectories = { scenario.debug_dir } },
  view_split = "vsplit",
})

local log_buf
step("open", function()
  vim.cmd("edit " .. vim.fn.fnameescape(scenario.log))
  log_buf = vim.api.nvim_get_current_buf()
  local filetype = vim.bo[log_buf].filetype
  wait_for("the client to initialize", function()
    local client = stackmark.client_for(log_buf)
    return client ~= nil and client.initialized == true
  end)
  return { filetype = filetype, client = stackmark.client_for(log_buf).name }
end)

step("diagnostics", function()
  local function on_line()
    local found = {}
    for _, d in ipairs(vim.diagnostic.get(log_buf, { lnum = scenario.diagnostic_line })) do
      table.insert(found, { line = d.lnum, col = d.col, end_col = d.end_col, message = d.message,
        severity = d.severity, code = d.code, source = d.source })
    end
    return found
  end
  wait_for("a diagnostic on line " .. scenario.diagnostic_line, function()
    return #on_line() > 0
  end)
  return { items = on_line(), total = #vim.diagnostic.get(log_buf) }
end)

step("hover", function()
  vim.api.nvim_set_current_buf(log_buf)
  vim.api.nvim_win_set_cursor(0, { scenario.hover.line + 1, scenario.hover.col })
  close_floats()
  vim.lsp.buf.hover()
  wait_for("the hover window", function()
    for _, win in ipairs(floats()) do
      local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false)
      if #lines > 0 and table.concat(lines, "") ~= "" then
        return true
      end
    end
    return false
  end)
  local text = {}
  for _, win in ipairs(floats()) do
    vim.list_extend(text, vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false))
  end
  close_floats()
  return { lines = text }
end)

step("definition", function()
  vim.api.nvim_set_current_buf(log_buf)
  vim.api.nvim_win_set_cursor(0, { scenario.definition.line + 1, scenario.definition.col })
  vim.lsp.buf.definition()
  wait_for("another buffer", function()
    return vim.api.nvim_get_current_buf() ~= log_buf
  end)
  local result = {
    file = vim.api.nvim_buf_get_name(0),
    line = vim.api.nvim_win_get_cursor(0)[1] - 1,
    text = vim.api.nvim_get_current_line(),
  }
  vim.api.nvim_set_current_buf(log_buf)
  return result
end)

step("inlay_hints", function()
  if not (vim.lsp.inlay_hint and vim.fn.has("nvim-0.10") == 1) then
    return { supported = false }
  end
  vim.api.nvim_set_current_buf(log_buf)
  local enabled = vim.lsp.inlay_hint.is_enabled({ bufnr = log_buf })
  local hints
  wait_for("inlay hints", function()
    hints = vim.lsp.inlay_hint.get({ bufnr = log_buf })
    return #hints > 0
  end)
  local items = {}
  for _, item in ipairs(hints) do
    local label = item.inlay_hint.label
    if type(label) == "table" then
      local parts = {}
      for _, part in ipairs(label) do
        table.insert(parts, part.value)
      end
      label = table.concat(parts)
    end
    table.insert(items, {
      line = item.inlay_hint.position.line,
      character = item.inlay_hint.position.character,
      label = label,
    })
  end
  return { supported = true, enabled = enabled, items = items }
end)

step("codelens", function()
  if vim.fn.has("nvim-0.11") ~= 1 then
    return { supported = false }
  end
  local lenses
  wait_for("code lenses", function()
    lenses = vim.lsp.codelens.get(log_buf)
    return #lenses > 0
  end)
  local items = {}
  for _, lens in ipairs(lenses) do
    table.insert(items, { line = lens.range.start.line, title = lens.command and lens.command.title })
  end
  return { supported = true, items = items }
end)

step("symbolize", function()
  vim.api.nvim_set_current_buf(log_buf)
  vim.api.nvim_win_set_cursor(0, { scenario.symbolize_line + 1, 0 })
  local windows = #vim.api.nvim_list_wins()
  vim.cmd("StackmarkSymbolize")
  wait_for("the symbolized view", function()
    return vim.api.nvim_buf_get_name(0):find("stackmark://symbolized/", 1, true) ~= nil
  end)
  return {
    name = vim.api.nvim_buf_get_name(0),
    windows_before = windows,
    windows_after = #vim.api.nvim_list_wins(),
    buftype = vim.bo.buftype,
    cursor_line = vim.api.nvim_win_get_cursor(0)[1] - 1,
    cursor_text = vim.api.nvim_get_current_line(),
    lines = vim.api.nvim_buf_get_lines(0, 0, -1, false),
  }
end)

step("restart", function()
  vim.cmd("wincmd o")
  vim.api.nvim_set_current_buf(log_buf)
  local old = stackmark.client_for(log_buf).id
  vim.cmd("StackmarkRestart")
  wait_for("a new client", function()
    local client = stackmark.client_for(log_buf)
    return client ~= nil and client.id ~= old and client.initialized == true
  end)
  return { old = old, new = stackmark.client_for(log_buf).id }
end)

step("stop", function()
  local ids = {}
  for _, client in ipairs(stackmark.clients()) do
    table.insert(ids, client.id)
    require("stackmark.compat").stop(client)
  end
  wait_for("the server to stop", function()
    for _, id in ipairs(ids) do
      if vim.lsp.get_client_by_id(id) ~= nil then
        return false
      end
    end
    return true
  end)
  return { stopped = #ids }
end)

step("health", function()
  vim.cmd("checkhealth stackmark")
  wait_for("the health report", function()
    return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n"):find("stackmark", 1, true) ~= nil
  end)
  return { lines = vim.api.nvim_buf_get_lines(0, 0, -1, false) }
end)

save()
vim.cmd("qall!")
