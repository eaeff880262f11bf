-- vela.torch: what a Torch7 or PyTorch user types first, answered with
-- vela's spelling instead of a raw Lua error. The shell makes it the global
-- `torch`: every field of it is an error naming the vela equivalent. It also
-- makes require "nn", "torch", "optim" (Torch7's packages) errors that say
-- vela's modules are already loaded as globals. torch._attach gives vela.nn
-- and vela.optim the same for Torch's names (nn.Linear, nn.ReLU, optim.SGD).
local torch = {}
local fmt = string.format

local spelled = {
  Tensor = "matrix(rows, cols), zeros(rows, cols) or from{{1, 2}, {3, 4}}",
  FloatTensor = "matrix(rows, cols) (vela's matrices are float32)",
  ByteTensor = "matrix(rows, cols, 'uint8')",
  tensor = "from{{1, 2}, {3, 4}}",
  zeros = "zeros(rows, cols)", ones = "ones(rows, cols)", rand = "rand(rows, cols [, seed])",
  randn = "randn(rows, cols [, seed])", mm = "mm(a, b, c) (c ← a·b)", addmm = "mm(alpha, a, b, beta, c)",
  mv = "mv(a, x, y)", matmul = "mm(a, b, c)", add = "axpy(alpha, x, y) or x + y", mul = "mul(a, b [, c]) or s * m",
  cmul = "mul(a, b [, c])", sum = "sum(x) or sum(x, dim)", mean = "mean(x) or mean(x, dim)",
  max = "max(x) or max(x, dim) (values, indices)", min = "min(x) or min(x, dim) (values, indices)",
  manualSeed = "seed(n)", manual_seed = "seed(n)",
  clone = "clone(x)", reshape = "reshape(x, rows, cols) (column-major order)", view = "x:view(rows, cols)",
  transpose = "transpose(x) (a copy) or x:t() (a view)", t = "x:t()", narrow = "narrow(x, dim, start, len)",
  select = "x:select(dim, i)", cat = "cat(a, b [, dim])", eye = "eye(n [, m])", linspace = "linspace(a, b, n)",
  arange = "arange(a, b [, step])", range = "arange(a, b + 1) (arange excludes b)", randperm = "randperm(n [, seed])",
  gt = "gt(a, b)", lt = "lt(a, b)", ge = "ge(a, b)", le = "le(a, b)", eq = "eq(a, b)", ne = "ne(a, b)",
  pow = "pow(x, p [, y]) or x ^ p",
  save = "vela.save(path, m) (NumPy .npy) or nn.save(path, net, opt) for a checkpoint",
  load = "vela.load(path) or nn.load(path)", device = "device('vulkan:0') or device('cpu')",
  cuda = "a Vulkan device: device('vulkan:0'), m:to('vulkan:0')", no_grad = "nothing: vela's backward is explicit",
  nn = "the global nn (nn.linear, nn.sequential, nn.softmax_xent)", optim = "the global optim (optim.sgd{...})",
  setdefaulttensortype = "nothing: vela's matrices are float32",
}

setmetatable(torch, {
  __index = function(_, k)
    local s = spelled[k]
    if s then error(fmt("torch.%s: vela spells it %s", tostring(k), s), 2) end
    error(fmt("torch.%s: vela is not Torch; its functions are globals (help() lists them, ?name finds a "
      .. "Torch name's vela equivalent)", tostring(k)), 2)
  end,
  __tostring = function() return "torch: not in vela (help() lists vela's functions)" end,
})

local function refuse(name, what)
  package.preload[name] = function()
    error(fmt("require '%s': %s", name, what), 3)
  end
end
refuse("nn", "vela's nn is already the global nn (or require 'vela.nn'); nn.linear(784, 10), not nn.Linear")
refuse("torch", "vela is not Torch; its matrices and kernels are globals (zeros, mm, ...; help() lists them)")
refuse("optim", "vela's optim is already the global optim (or require 'vela.optim'); optim.sgd{lr = 0.1}")
refuse("cunn", "vela runs on GPUs through Vulkan: device('vulkan:0'), net:to('vulkan:0')")
refuse("cutorch", "vela runs on GPUs through Vulkan: device('vulkan:0'), m:to('vulkan:0')")

-- ---------------------------------------------------------------------------
-- Torch7 and PyTorch names in vela's modules (nn.ReLU, optim.SGD): one clear
-- error naming vela's spelling, instead of "attempt to call a nil value".
-- nn.Linear and nn.Sequential are the classes (what getmetatable(layer) is),
-- callable only to say so.
-- ---------------------------------------------------------------------------

local module_names = {
  ["nn.ReLU"] = "activations are an argument of the layer: nn.linear(784, 128, 'relu')",
  ["nn.Tanh"] = "activations are an argument of the layer: nn.linear(784, 128, 'tanh')",
  ["nn.Sigmoid"] = "activations are an argument of the layer: nn.linear(784, 128, 'sigmoid')",
  ["nn.SoftMax"] = "softmax is fused with the loss: nn.softmax_xent(), or softmax(x, y) for the values",
  ["nn.Softmax"] = "softmax is fused with the loss: nn.softmax_xent(), or softmax(x, y) for the values",
  ["nn.LogSoftMax"] = "use nn.softmax_xent() (softmax and cross-entropy in one kernel)",
  ["nn.LogSoftmax"] = "use nn.softmax_xent() (softmax and cross-entropy in one kernel)",
  ["nn.CrossEntropyLoss"] = "vela spells it nn.softmax_xent() (it takes the logits, as PyTorch's does)",
  ["nn.CrossEntropyCriterion"] = "vela spells it nn.softmax_xent()",
  ["nn.ClassNLLCriterion"] = "use nn.softmax_xent() on the logits (softmax and NLL in one kernel)",
  ["nn.NLLLoss"] = "use nn.softmax_xent() on the logits (softmax and NLL in one kernel)",
  ["nn.MSECriterion"] = "vela spells it nn.quadratic() (half the squared error against one-hot targets)",
  ["nn.MSELoss"] = "vela spells it nn.quadratic() (half the squared error against one-hot targets)",
  ["nn.Module"] = "vela's layers are plain tables with forward and backward; see ?nn.linear",
  ["nn.functional"] = "vela's functions are the global kernels: relu(x), softmax(x, y), mm(a, b, c) ...",
  ["optim.SGD"] = "vela spells it optim.sgd{lr = 0.1, momentum = 0.9}; then opt:step(net) after net:backward",
  ["optim.Adam"] = "vela spells it optim.adam{lr = 0.001}; then opt:step(net) after net:backward",
  ["optim.AdamW"] = "vela spells it optim.adamw{lr = 0.001, weight_decay = 0.01}",
  ["optim.RMSprop"] = "vela spells it optim.rmsprop{lr = 0.01, alpha = 0.99}",
  ["optim.Adagrad"] = "vela spells it optim.adagrad{lr = 0.01}",
  ["optim.lr_scheduler"] = "schedules are functions of the epoch: optim.step_lr(lr, every, gamma), optim.cosine(lr, epochs)",
  ["nn.Linear"] = "vela spells it nn.linear(inputs, outputs [, activation]), e.g. nn.linear(784, 10)",
  ["nn.Sequential"] = "vela spells it nn.sequential{layer, ...}, e.g. nn.sequential{nn.linear(784, 128, 'relu'), nn.linear(128, 10)}",
}

local function refusal(name)
  return function() error(fmt("%s: %s", name, module_names[name]), 2) end
end

-- torch._attach(name, module): module's Torch names become errors ("nn" also
-- makes its classes nn.Linear and nn.Sequential say how vela spells them;
-- they keep their metatables, the layer base of lua/vela/layer.lua).
function torch._attach(name, module)
  if name == "nn" then
    getmetatable(module.Linear).__call = refusal("nn.Linear")
    getmetatable(module.Sequential).__call = refusal("nn.Sequential")
  end
  setmetatable(module, {__index = function(_, k)
    local full = name .. "." .. tostring(k)
    if module_names[full] then error(fmt("%s: %s", full, module_names[full]), 2) end
  end})
end

return torch
