-- Content-based detection: a buffer whose first lines carry symbolizer
-- markup contexts gets filetype `stackmark`, whatever its name (*.log files
-- that start with `#0 {{{bt:...}}}` are otherwise detected as `conf`, and
-- other logs get no filetype at all). `set filetype=` rather than
-- `setfiletype`, so that it overrides what the name suggested.

local M = {}

M.patterns = {
  "{{{reset}}}",
  "{{{module:%d",
  "{{{mmap:0x",
  "{{{bt:%d+:0x",
  "{{{pc:0x",
}

--- Whether the first `lines` lines of `bufnr` carry markup.
function M.is_markup_log(bufnr, lines)
  for _, text in ipairs(vim.api.nvim_buf_get_lines(bufnr, 0, lines or 200, false)) do
    if text:find("{{{", 1, true) then
      for _, pattern in ipairs(M.patterns) do
        if text:find(pattern) then
          return true
        end
      end
    end
  end
  return false
end

function M.check(bufnr, lines)
  if vim.bo[bufnr].buftype ~= "" or vim.bo[bufnr].filetype == "stackmark" then
    return
  end
  if M.is_markup_log(bufnr, lines) then
    vim.api.nvim_buf_call(bufnr, function()
      vim.cmd("set filetype=stackmark")
    end)
  end
end

--- Check every file read or created from now on (after Neovim's own detection).
function M.install(group, lines)
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "StdinReadPost" }, {
    group = group,
    pattern = "*",
    callback = function(event)
      M.check(event.buf, lines)
    end,
  })
end

return M
