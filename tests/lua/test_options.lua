-- Option tables: an unknown key is an error naming the function, the key, the
-- nearest accepted key and all of them; Torch7 spellings say so. The wording
-- is checked here literally, as a user reads it.
local t = dofile("tests/lua/t.lua")
local options = require "vela.options"

local adam = {"lr", "beta1", "beta2", "eps", "weight_decay"}

t.test("options.check: the unknown key, the nearest, the list", function()
  local err = t.raises(function() options.check("optim.adam", {learningRate = 0.1}, adam) end,
    "optim.adam: unknown option 'learningRate' (did you mean 'lr'?); options: lr, beta1, beta2, eps, weight_decay",
    "(learningRate is Torch7's name for lr)")
  -- level 3 by default: the error points at the caller's caller, not options.lua
  assert(not err:find("options.lua", 1, true), err)
  t.raises(function() options.check("nn.fit", {epoch = 1}, {"epochs", "batch", "lr"}) end,
    "nn.fit: unknown option 'epoch' (did you mean 'epochs'?); options: epochs, batch, lr")
  t.raises(function() options.check("nn.fit", {batchsize = 1}, {"epochs", "batch_size"}) end,
    "unknown option 'batchsize' (did you mean 'batch_size'?)")
  t.raises(function() options.check("nn.fit", {batchSize = 32}, {"epochs", "batch"}) end,
    "unknown option 'batchSize' (did you mean 'batch'?)", "batchSize is Torch7's name for batch")
  t.raises(function() options.check("optim.adam", {betas = {0.9, 0.99}}, adam) end,
    "(did you mean 'beta1' or 'beta2'?)", "(betas is PyTorch's name for beta1 or beta2)")
  t.raises(function() options.check("optim.adam", {lrate = 1}, adam) end, "(did you mean 'lr'?)")
  -- nothing near: no guess
  local e = t.raises(function() options.check("optim.adam", {colour = 1}, adam) end,
    "optim.adam: unknown option 'colour'; options: lr, beta1")
  assert(not e:find("did you mean", 1, true), e)
end)

t.test("options.check: nil, non-tables, positional values", function()
  local o = options.check("f", nil, {"a"})
  assert(type(o) == "table" and next(o) == nil)
  local given = {a = 1}
  assert(options.check("f", given, {"a", "b"}) == given)
  t.raises(function() options.check("optim.sgd", 0.1, {"lr"}) end, "optim.sgd: opts must be a table of options {lr = ...}, got a number")
  t.raises(function() options.check("f", {1}, {"a", "b"}) end, "f: the options are named (a = ...), got a value at [1]; options: a, b")
end)

t.test("options.nearest", function()
  assert(options.nearest("epoch", {"epochs", "batch"}) == "epochs")
  assert(options.nearest("Epochs", {"epochs"}) == "epochs")
  assert(options.nearest("wieght_decay", {"lr", "weight_decay"}) == "weight_decay")  -- a swap is one edit
  assert(options.nearest("zzz", {"lr", "eps"}) == nil)
end)

t.done()
