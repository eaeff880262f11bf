-- The MLP's training step (784-256-10, batch 128, SGD with momentum 0.9,
-- Fashion-MNIST, cpu) taken apart: nn.fit's step written out, each phase timed
-- with the wall clock, printed per epoch as the mean µs a step of the epoch's
-- last 400 batches; then the big products timed alone (medians of 300 calls)
-- for the bound beside them. fuse=yes (the default) steps as nn.fit does now,
-- each nn.linear's W updated inside its dW product (mm_sgd_step) after the
-- epoch's first step; fuse=no as before, with sgd_step after the backward.
--
--   build/vela scripts/bench/step_phases.lua [epochs=3] [fuse=yes|no]
local vela = require "vela"
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"
local native = require "vela.bench_native"
local bench = dofile("scripts/bench/train_bench.lua")

local opts = bench.options{epochs = 3, fuse = "yes"}
for k in pairs(opts) do
  if k ~= "epochs" and k ~= "fuse" then error(("step_phases.lua: unknown option '%s' (epochs, fuse)"):format(k)) end
end
local fuse = opts.fuse == "yes"
vela.device("cpu")
local sets = data.fashion_mnist()
local net = nn.sequential{nn.linear(784, 256, "relu", {seed = 1}), nn.linear(256, 10, nil, {seed = 2})}
local opt, lossfn = optim.sgd{lr = 0.05, momentum = 0.9}, nn.softmax_xent()
local loader = data.loader(sets.train, 128, {seed = 1})
local L1, L2 = net.layers[1], net.layers[2]
local rest = {net:params()[2], net:params()[4]}  -- the biases: what the optimizer steps itself when fused
local B = 128
local pred, c, acc, lacc = vela.zeros(1, B), vela.zeros(1, B), vela.zeros(1, B), vela.zeros(1, B)
local ones, slot = vela.fill(vela.zeros(B, 1), 1), vela.zeros(1, 1)
local names = {"load", "fwd1", "fwd2", "loss", "bwd2", "bwd1", "check", "optim", "count"}
local now = native.now

for epoch = 1, math.tointeger(opts.epochs) do
  local step, started = optim._epoch_stepper(opt, rest), false
  local T = {}
  for i = 1, #names do T[i] = {} end
  local t, e0 = now(), now()
  local it = loader:epoch(epoch)
  while true do
    local x, y = it()
    if not x then break end
    local inp = fuse and started and opt or nil
    local t1 = now()
    local a1 = L1:forward(x, 1)
    local t2 = now()
    local z = L2:forward(a1, 2)
    local t3 = now()
    local loss = lossfn:forward(z, y)
    local dz = lossfn:backward()
    local t4 = now()
    local d = L2:backward(dz, true, inp)
    local t5 = now()
    L1:backward(d, false, inp)
    local t6 = now()
    vela.sum(loss)
    local t7 = now()
    if inp then step(rest) else step(net:params()) end
    started = true
    local t8 = now()
    if z.cols == B then  -- nn.fit's counters (the last, short batch skips them here)
      vela.argmax(z, pred); vela.sub(pred, y, c); vela.sqr(c); vela.linear_frac(c, 0, 1, 1e6, 1)
      vela.axpy(1, c, acc); vela.axpy(1 / B, loss, lacc); vela.mv(1 / B, loss, ones, 0, slot)
    end
    local t9 = now()
    local r = {t1 - t, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t8 - t7, t9 - t8}
    for i = 1, #names do T[i][#T[i] + 1] = r[i] end
    t = now()
  end
  local line = ("epoch %d: %.3f s; µs a step:"):format(epoch, now() - e0)
  for i, n in ipairs(names) do
    local q, s, k = T[i], 0, 0
    for j = #q, math.max(1, #q - 399), -1 do s, k = s + q[j], k + 1 end
    line = line .. (" %s %.0f"):format(n, s / k * 1e6)
  end
  print(line)
end

local function median_us(f, n)
  local q = {}
  for i = 1, n do local t0 = now(); f(); q[i] = now() - t0 end
  table.sort(q)
  return q[n // 2] * 1e6
end
local xb, d1 = vela.rand(784, B, 7), vela.rand(256, B, 8)
print(("alone (medians of 300): dense 256×784·784×128 relu %.0f µs, dW 256×128·128×784 %.0f µs"):format(
  median_us(function() vela.dense(L1.w, xb, L1.b, d1, "relu") end, 300),
  median_us(function() vela.mm(1, d1, xb:t(), 0, L1.dw) end, 300)))
