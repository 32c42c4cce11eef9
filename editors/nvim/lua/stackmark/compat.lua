-- Calls whose form changed between Neovim 0.7 and 0.11: client methods
-- became colon calls (client:request) in 0.11, where the dot form is
-- deprecated.

local M = {}

local colon = vim.fn.has("nvim-0.11") == 1

--- client.request / client:request
function M.request(client, method, params, handler, bufnr)
  if colon then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.stop(client, force)
  if colon then
    return client:stop(force)
  end
  return client.stop(force)
end

function M.is_stopped(client)
  if colon then
    return client:is_stopped()
  end
  return client.is_stopped()
end

return M
