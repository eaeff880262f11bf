-- Training throughput of examples/gpt.lua's character GPT (embedding, learned
-- positions, `layers` pre-norm blocks of causal attention and a gelu MLP of
-- 4·dim, a final layer norm, a linear to the vocabulary; softmax
-- cross-entropy, Adam lr 0.003) in tokens per second, on each device and in
-- PyTorch (scripts/bench/gpt_torch.py, the same model, sizes and batch)
-- side by side. The batches are 8 fixed windows of random tokens made before
-- the clock starts, so both figures are the training step alone (forward,
-- backward, Adam, the loss read to the host). Each run times `steps` steps
-- after 3 of warm-up; the figure is the median of `runs` runs, and the
-- per-cpu-second rate (processor time of all threads) beside it is what a
-- machine shared with other work distorts least.
--
--   build/vela scripts/bench/gpt.lua [steps=20] [runs=5] [batch=16] [context=64] [dim=128] [layers=4] [heads=4]
--                                   [devices=cpu] [torch=yes|no] [threads=N]
--
-- PyTorch: Debian's python3-torch (apt-get install python3-torch); without it
-- the torch row says so.
local vela = require "vela"
local nn, optim = require "vela.nn", require "vela.optim"
local bench = dofile("scripts/bench/train_bench.lua")
local fmt = string.format

local o = bench.options{steps = 20, runs = 5, batch = 16, context = 64, dim = 128, layers = 4, heads = 4, vocab = 113,
  devices = "cpu", torch = "yes"}
local T, B, dim, V = o.context, o.batch, o.dim, o.vocab

-- 8 batches of random tokens (1..V) and their targets, the same for every device (Philox, seed 7).
local function batches(dev)
  local out = {}
  for k = 1, 8 do
    local r = vela.rand(2, T * B, 7 + k, "cpu"):totable()
    local x, y = {}, {}
    for j = 1, T * B do x[j], y[j] = 1 + math.floor(r[1][j] * V), 1 + math.floor(r[2][j] * V) end
    out[k] = {vela.matrix(1, T * B, x, "float32", dev), vela.matrix(1, T * B, y, "float32", dev)}
  end
  return out
end

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

local function device_row(id)
  vela.device(id)
  local layers = {nn.embedding(V, dim, {seed = 1}), nn.posembed(T, dim, {seed = 2})}
  for l = 1, o.layers do layers[#layers + 1] = nn.block(dim, o.heads, {context = T, seed = 10 * l}) end
  layers[#layers + 1] = nn.layernorm(dim)
  layers[#layers + 1] = nn.linear(dim, V, {seed = 3})
  local net, opt, loss = nn.sequential(layers), optim.adam{lr = 0.003}, nn.softmax_xent()
  local data = batches(vela.device())
  local k = 0
  local function step()
    k = k + 1
    local b = data[(k - 1) % #data + 1]
    local l = nn.mean(loss:forward(net:forward(b[1]), b[2]))
    net:backward(loss:backward())
    opt:step(net)
    return l
  end
  for _ = 1, 3 do step() end
  local rates, cpu_rates, l = {}, {}, 0
  for _ = 1, o.runs do
    vela.sync()
    local t0, c0 = vela.clock(), os.clock()
    for _ = 1, o.steps do l = step() end
    vela.sync()
    rates[#rates + 1] = o.steps * T * B / (vela.clock() - t0)
    cpu_rates[#cpu_rates + 1] = o.steps * T * B / (os.clock() - c0)
  end
  return fmt("%8.0f tokens/s (median of %d runs of %d steps; %6.0f per cpu-second)   loss %.3f",
    median(rates), o.runs, o.steps, median(cpu_rates), l), net:nparams()
end

local rows, nparams = {}, nil
for id in tostring(o.devices):gmatch("[^,]+") do
  local ok, row, np = pcall(device_row, id)
  rows[#rows + 1] = {id, ok and row or ("failed: " .. tostring(row))}
  nparams = nparams or np
end
print(fmt("GPT %d blocks, %d heads, width %d, context %d, batch %d×%d tokens, vocabulary %d (%s parameters), Adam, %d cpu threads",
  o.layers, o.heads, dim, T, B, T, V, tostring(nparams), vela.threads()))
for _, r in ipairs(rows) do print(fmt("%-12s %s", r[1], r[2])) end
if o.torch == "no" then return end
local py
for _, cand in ipairs{"python3", "/usr/bin/python3"} do
  if os.execute(cand .. " -c 'import torch' 2>/dev/null") then py = cand break end
end
if not py then print(fmt("%-12s %s", "pytorch", "not installed (apt-get install python3-torch to compare)")) return end
local cmd = fmt("%s scripts/bench/gpt_torch.py --steps %d --runs %d --batch %d --context %d --dim %d --layers %d "
  .. "--heads %d --vocab %d --threads %d 2>&1", py, o.steps, o.runs, B, T, dim, o.layers, o.heads, V, vela.threads())
local p = io.popen(cmd)
local last
for line in p:lines() do last = line end
p:close()
print(fmt("%-12s %s", "pytorch", last or "no output"))
