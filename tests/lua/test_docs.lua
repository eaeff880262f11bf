-- Every public function has documentation that help() and ?name find: each
-- function field of require "vela" and of the modules nn, optim, data, plot,
-- every matrix method, and every method of the nn, optim and data objects
-- (layers, nets, losses, optimizers, loaders). Names starting with "_" are
-- private. A new function without vela.doc (or doc() in C++) fails here.
local t = dofile("tests/lua/t.lua")
local nn, optim, data, plot = require "vela.nn", require "vela.optim", require "vela.data", require "vela.plot"

local missing = {}
local function check(where, fn)
  if not vela.doc(fn) then missing[#missing + 1] = where end
end
local function check_table(prefix, tbl, sep)
  for k, v in pairs(tbl) do
    if type(k) == "string" and not k:match("^_") and type(v) == "function" then check(prefix .. sep .. k, v) end
  end
end

t.test("every function of the vela module is documented", function()
  missing = {}
  check_table("vela", vela, ".")
  check_table("Matrix", getmetatable(zeros(1, 1)), ":")
  table.sort(missing)
  assert(#missing == 0, "undocumented: " .. table.concat(missing, ", "))
end)

t.test("every nn, optim, data and plot function and method is documented", function()
  missing = {}
  check_table("nn", nn, ".")
  check_table("optim", optim, ".")
  check_table("data", data, ".")
  check_table("plot", plot, ".")
  local layer = nn.linear(4, 3)
  local net = nn.sequential{layer}
  check_table("layer", getmetatable(layer), ":")
  check_table("net", getmetatable(net), ":")
  check_table("softmax_xent", getmetatable(nn.softmax_xent()), ":")
  check_table("quadratic", getmetatable(nn.quadratic()), ":")
  check_table("sgd", getmetatable(optim.sgd{}), ":")
  check_table("adam", getmetatable(optim.adam{}), ":")
  for _, kind in ipairs{"adamw", "rmsprop", "adagrad"} do check_table(kind, getmetatable(optim[kind]{}), ":") end
  local set = {images = zeros(4, 6, "uint8"), labels = ones(1, 6), n = 6}
  check_table("loader", getmetatable(data.loader(set, 2)), ":")
  table.sort(missing)
  assert(#missing == 0, "undocumented: " .. table.concat(missing, ", "))
end)

t.test("?name finds the methods a Torch7 or PyTorch user types first", function()
  for _, name in ipairs{"net:forward", "net:backward", "sgd:step", "nn.save", "nn.fit", "nn.linear", "data.loader",
                        "data.to", "loader:epoch"} do
    assert(vela.doc(name), "no entry " .. name)
  end
end)

t.done()
