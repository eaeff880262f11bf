-- gpt.lua — a small character GPT trained step by step on a Debian package's
-- text (data.text: the fortunes by default), then sampled with a temperature.
--
--   build/vela examples/gpt.lua [device=cpu|vulkan:0] [steps=300] [layers=4] [heads=4] [dim=128] [context=64]
--                               [batch=16] [lr=0.003] [text=fortunes|words] [seed=1] [every=25] [save=gpt.npz]
--                               [sample=400] [temperature=0.8] [threads=N]
--
--   idx 1×n ─embedding→ dim×n ─posembed→ ─block×layers→ ─layernorm→ ─linear→ vocab×n logits
--
-- One token per column (docs/sequence.md): a step takes `batch` windows of
-- `context` + 1 characters drawn by Philox (the same windows on every
-- device), x their first `context` characters and y the next one of each.
-- Every `every` steps it prints the mean training loss since the last line
-- and the validation loss (the same 8 validation batches each time) beside
-- the unigram and bigram baselines (count models of the training split,
-- txt:baselines()); at the end the loss curve, a checkpoint (nn.save) and a
-- sample. Sampling is seeded with Philox on the host (text.philox_word), so a
-- seed draws the same characters on every device where the logits agree.
local vela = require "vela"
local nn, optim, data, plot = require "vela.nn", require "vela.optim", require "vela.data", require "vela.plot"
local text = require "vela.text"
local fmt = string.format

local usage = "build/vela examples/gpt.lua [device=cpu|vulkan:0] [steps=300] [layers=4] [heads=4] [dim=128] " ..
  "[context=64] [batch=16] [lr=0.003] [text=fortunes] [seed=1] [every=25] [save=gpt.npz] [sample=400] [temperature=0.8]"
local opts = require("vela.options").parse(arg, usage, {
  {"device", nil, "the device to train on (default: the first GPU, else the cpu)"},
  {"steps", 300, "training steps", min = 1},
  {"layers", 4, "transformer blocks", min = 1},
  {"heads", 4, "attention heads (must divide dim)", min = 1},
  {"dim", 128, "the width of a token", min = 1},
  {"context", 64, "tokens per sequence (T)", min = 1},
  {"batch", 16, "sequences per step", min = 1},
  {"lr", 0.003, "Adam's learning rate (decays along a cosine to lr/10)", min = 0},
  {"text", "fortunes", "the text: fortunes, words (data.text) or a file"},
  {"seed", 1, "seed of the weights, the windows and the sample"},
  {"every", 25, "steps between progress lines", min = 1},
  {"save", "gpt.npz", "the checkpoint (nn.save); save=none skips it"},
  {"sample", 400, "characters to sample at the end", min = 0},
  {"temperature", 0.8, "the sample's temperature (> 0)"},
  {"threads", nil, "OpenBLAS threads on the cpu"},
})
for _, k in ipairs{"steps", "layers", "heads", "dim", "context", "batch", "seed", "every", "sample"} do
  if math.type(opts[k]) ~= "integer" then
    io.stderr:write(fmt("gpt.lua: option %s must be an integer, got %s\n", k, tostring(opts[k]))); os.exit(1)
  end
end
if opts.dim % opts.heads ~= 0 then
  io.stderr:write(fmt("gpt.lua: heads (%d) must divide dim (%d)\n", opts.heads, opts.dim)); os.exit(1)
end
if not (opts.temperature > 0) then
  io.stderr:write(fmt("gpt.lua: temperature must be > 0, got %s\n", tostring(opts.temperature))); os.exit(1)
end

local T, B, dim, s = opts.context, opts.batch, opts.dim, opts.seed
local txt = data.text(opts.text)
local V = txt.size
local base = txt:baselines()
print(fmt("%s on %s: %d characters, vocabulary %d; baselines (validation, nats/char): uniform %.3f, unigram %.3f, bigram %.3f",
  txt.name, tostring(vela.device()), txt.ntrain + txt.nval, V, math.log(V), base.unigram, base.bigram))

-- The model: GPT-2's layout at a small size (pre-norm blocks, a final layer norm).
local layers = {nn.embedding(V, dim, {seed = s}), nn.posembed(T, dim, {seed = s + 1})}
for l = 1, opts.layers do layers[#layers + 1] = nn.block(dim, opts.heads, {context = T, seed = s + 10 * l}) end
layers[#layers + 1] = nn.layernorm(dim)
layers[#layers + 1] = nn.linear(dim, V, {seed = s + 2})
local net = nn.sequential(layers)
print(fmt("%d layers, %d heads, width %d, context %d, batch %d×%d tokens: %d parameters",
  opts.layers, opts.heads, dim, T, B, T, net:nparams()))

local train = txt:loader(T, B, {seed = s})
local val = txt:loader(T, B, {seed = s, split = "val"})
local opt, loss = optim.adam{lr = opts.lr}, nn.softmax_xent()

-- The mean loss of the first 8 validation batches (the same windows every time).
local function validate()
  local sum = 0
  for k = 1, 8 do
    local x, y = val:batch(k)
    sum = sum + nn.mean(loss:forward(net:forward(x), y))
  end
  return sum / 8
end

local curve, since, count = {}, 0, 0
local t0, last_val, tval = vela.clock(), nil, 0  -- tval: seconds spent validating (left out of tokens/s)
for step = 1, opts.steps do
  -- the rate: a cosine from lr down to lr/10 over the run
  opt.lr = opts.lr * (0.55 + 0.45 * math.cos(math.pi * (step - 1) / opts.steps))
  local x, y = train:batch(step)
  local l = nn.mean(loss:forward(net:forward(x), y))  -- the host waits here: the loss of this batch
  if l ~= l or l == math.huge then error(fmt("gpt.lua: the loss is %s at step %d", tostring(l), step), 0) end
  net:backward(loss:backward())
  opt:step(net)
  curve[#curve + 1], since, count = l, since + l, count + 1
  if step % opts.every == 0 or step == opts.steps then
    local v0 = vela.clock()
    local trained = v0 - t0 - tval  -- the seconds of the steps so far
    last_val = validate()
    tval = tval + vela.clock() - v0
    print(fmt("step %4d/%d  train %.3f  val %.3f  (unigram %.3f, bigram %.3f)  %6.0f tokens/s  %.0f s",
      step, opts.steps, since / count, last_val, base.unigram, base.bigram, step * B * T / trained, trained))
    since, count = 0, 0
  end
end
local seconds = vela.clock() - t0 - tval

plot(curve, {title = "training loss (nats/char), every step", height = 8})
print(fmt("validation loss %.3f after %d steps (bigram %.3f: %s), %.1f s training, %.0f tokens/s on %s",
  last_val, opts.steps, base.bigram, last_val < base.bigram and "below" or "NOT below", seconds,
  opts.steps * B * T / seconds, tostring(vela.device())))
if opts.save ~= "none" then
  print("saved to " .. nn.save(opts.save, net, opt, {step = opts.steps, seed = s}))
end

-- Sampling: the characters so far at the start of a window of T (the rest
-- padded; the mask keeps the padding out of earlier positions), the logits of
-- the last real one divided by the temperature, softmax in float64 on the
-- host, and a character drawn with the Philox word k of seed s:
-- u = (w >> 8)·2⁻²⁴, the first c whose cumulative probability passes u.
local function sample(n, temperature, prompt)
  local ids = txt:encode(prompt)
  local window, out = vela.zeros(1, T, "float32", net:device()), {}
  for k = 1, n do
    local len = math.min(#ids, T)
    local w = {}
    for i = 1, T do w[i] = ids[#ids - len + math.min(i, len)] end
    vela.copy(vela.matrix(1, T, w, "float32", net:device()), window)
    local z = net:forward(window):columns(len, 1):to("cpu"):totable()
    local m = -math.huge
    for c = 1, V do m = math.max(m, z[c][1] / temperature) end
    local p, sum = {}, 0
    for c = 1, V do p[c] = math.exp(z[c][1] / temperature - m); sum = sum + p[c] end
    local u = (text.philox_word(s, k - 1) >> 8) * 2 ^ -24 * sum
    local c, acc = V, 0
    for i = 1, V do
      acc = acc + p[i]
      if acc > u then c = i; break end
    end
    ids[#ids + 1], out[k] = c, txt.vocab[c]
  end
  return table.concat(out)
end

if opts.sample > 0 then
  print(fmt("a sample of %d characters at temperature %g (seed %d):", opts.sample, opts.temperature, s))
  print(sample(opts.sample, opts.temperature, "\n"))
end
