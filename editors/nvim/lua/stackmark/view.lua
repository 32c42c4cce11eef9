-- The symbolized view: the whole log as `stackmark symbolize` prints it, in
-- a scratch buffer in a split, at the line of the backtrace asked about.
-- The server renders it (command `stackmark.symbolizedText`, which returns
-- { uri, line, text }); Neovim has no virtual documents, so the text goes
-- into a `buftype=nofile` buffer named after the log.

local compat = require("stackmark.compat")

local M = {}

local function split_lines(text)
  local normalized = text:gsub("\r\n", "\n")
  local lines = vim.split(normalized, "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  return lines
end

local function find_buffer(name)
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(bufnr) and vim.api.nvim_buf_get_name(bufnr) == name then
      return bufnr
    end
  end
  return nil
end

--- The buffer name of the view of the log at `uri`.
function M.name(uri)
  return "stackmark://symbolized/" .. vim.uri_to_fname(uri):gsub("^/", "")
end

--- Show `result` (the server's answer for the log at `uri`) and return its buffer.
function M.show(uri, result, split)
  local name = M.name(uri)
  local bufnr = find_buffer(name)
  if not bufnr then
    bufnr = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(bufnr, name)
    vim.bo[bufnr].buftype = "nofile"
    vim.bo[bufnr].bufhidden = "hide"
    vim.bo[bufnr].swapfile = false
    vim.bo[bufnr].filetype = "stackmarkview"
  end
  vim.bo[bufnr].modifiable = true
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, split_lines(result.text or ""))
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].modified = false
  local window = vim.fn.bufwinid(bufnr)
  if window == -1 then
    vim.cmd(split or "vsplit")
    window = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(window, bufnr)
  else
    vim.api.nvim_set_current_win(window)
  end
  local last = vim.api.nvim_buf_line_count(bufnr)
  local line = math.min(math.max((result.line or 0) + 1, 1), last)
  vim.api.nvim_win_set_cursor(window, { line, 0 })
  vim.cmd("normal! zt")
  return bufnr
end

--- Ask `client` for the symbolized text of the log at `uri` and show it at `line`.
function M.open(client, uri, line, split)
  if not client then
    vim.notify("stackmark: no language server for this buffer", vim.log.levels.WARN)
    return
  end
  local params = { command = "stackmark.symbolizedText", arguments = { uri, line or 0 } }
  compat.request(client, "workspace/executeCommand", params, function(err, result)
    if err then
      vim.notify("stackmark: symbolizing failed: " .. (err.message or vim.inspect(err)),
        vim.log.levels.ERROR)
      return
    end
    M.show(uri, result, split)
  end, vim.uri_to_bufnr(uri))
end

return M
