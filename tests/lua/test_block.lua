-- nn.posembed and nn.block on every device: a positional sum worked by hand,
-- a block whose parts are zero worked by hand (the residuals pass x through),
-- nn.gradcheck alone and in a small GPT, net:to (the same output on every
-- device), checkpoints, nn.fit, and the argument errors.
local t = dofile("tests/lua/t.lua")
local nn, optim = require "vela.nn", require "vela.optim"

local ids = t.devices()
local function host(m) return m:to("cpu"):totable() end

local function tiny_gpt(seed)
  return nn.sequential{nn.embedding(7, 4, {seed = seed}), nn.posembed(3, 4, {seed = seed + 1}),
    nn.block(4, 2, {context = 3, mlp = 8, seed = seed + 2}), nn.layernorm(4), nn.linear(4, 7, {seed = seed + 9})}
end

for _, id in ipairs(ids) do
  device(id)
  t.test(id .. ": posembed adds column (j − 1) mod T + 1 of P, backward sums over sequences", function()
    local p = nn.posembed(2, 1)
    copy(from{{10, 20}}, p.P)
    local y = host(p:forward(from{{1, 2, 3, 4, 5, 6}}))[1]
    local want = {11, 22, 13, 24, 15, 26}
    for j = 1, 6 do t.near(y[j], want[j], 1e-6, "y" .. j) end
    local dx = host(p:backward(from{{1, 2, 3, 4, 5, 6}}))[1]
    t.near(dx[4], 4, 0, "dx = dy")
    local dP = host(p.dP)[1]
    t.near(dP[1], 1 + 3 + 5, 1e-6, "dP1"); t.near(dP[2], 2 + 4 + 6, 1e-6, "dP2")
  end)

  t.test(id .. ": a block with zero attention and MLP outputs is the identity (the residuals)", function()
    local b = nn.block(4, 2, {context = 2, mlp = 8, seed = 1})
    fill(b.attn.Wo, 0); fill(b.fc2.w, 0)
    copy(from{{0.5}, {-1}, {0}, {2}}, b.fc2.b)  -- y = x + fc2's bias
    local x = randn(4, 6, 3)
    local X, Y = host(x), host(b:forward(x))
    local bias = {0.5, -1, 0, 2}
    for i = 1, 4 do for j = 1, 6 do t.near(Y[i][j], X[i][j] + bias[i], 1e-6, "y") end end
  end)

  t.test(id .. ": nn.gradcheck passes nn.posembed and nn.block, alone and in a small GPT", function()
    local r = nn.gradcheck(nn.posembed(3, 4, {seed = 2}), randn(4, 9, 3), {entries = math.huge})
    assert(r.ok and r.errors.P, tostring(r))
    local b = nn.block(4, 2, {context = 3, mlp = 8, seed = 5})
    vela.randn(b.ln1.gamma, 11); vela.randn(b.ln2.beta, 12)
    local r2 = nn.gradcheck(b, randn(4, 6, 7), {entries = 40})
    assert(r2.ok, tostring(r2))
    for _, name in ipairs{"ln1_gamma", "ln1_beta", "attn_Wqkv", "attn_Wo", "ln2_gamma", "ln2_beta", "fc1_w", "fc1_b",
        "fc2_w", "fc2_b", "input"} do
      assert(r2.errors[name], "no check of " .. name .. "\n" .. tostring(r2))
    end
    local r3 = nn.gradcheck(tiny_gpt(1), from{{1, 3, 3, 7, 2, 5}}, {entries = 24})
    assert(r3.ok, tostring(r3))
  end)
end

t.test("net:to gives the same output on every device; checkpoints keep posembed and block", function()
  device("cpu")
  local net = tiny_gpt(3)
  local idx = from{{1, 7, 4, 4, 2, 6}}
  local want = host(net:forward(idx))
  for _, id in ipairs(ids) do
    net:to(id)
    local got = host(net:forward(idx:to(id)))
    for i = 1, #want do for j = 1, #want[1] do t.near(got[i][j], want[i][j], 1e-4, id) end end
  end
  net:to("cpu")
  -- one Adam step first, so that the checkpoint has optimizer state for the block's parts
  local opt, loss = optim.adam{lr = 0.01}, nn.softmax_xent()
  loss:forward(net:forward(idx), from{{7, 4, 4, 2, 6, 1}})
  net:backward(loss:backward())
  opt:step(net)
  want = host(net:forward(idx))
  local path = os.tmpname()
  nn.save(path, net, opt)
  local net2 = nn.load(path)
  os.remove(path)
  assert(tostring(net2):find("block(4, 2 heads, mlp 8, context 3)", 1, true), tostring(net2))
  local got = host(net2:forward(idx))
  for i = 1, #want do for j = 1, #want[1] do t.near(got[i][j], want[i][j], 1e-6, "loaded") end end
end)

t.test("nn.fit trains a net with a block (each batch one sequence): the loss falls", function()
  device("cpu")
  -- the label of token v is v mod 5 + 1: learnable from the token alone
  local n, ix, lab = 64, {}, {}
  for j = 1, n do ix[j] = (j * 7) % 9 + 1; lab[j] = ix[j] % 5 + 1 end
  local set = {images = from{ix}, labels = from{lab}, n = n}
  local net = nn.sequential{nn.embedding(9, 8, {seed = 1}), nn.block(8, 2, {seed = 2}), nn.linear(8, 5, {seed = 3})}
  local hist = nn.fit(net, set, {epochs = 6, batch = 16, optimizer = optim.adam{lr = 0.02}, progress = false})
  assert(hist.loss[6] < 0.5 * hist.loss[1], ("loss %g then %g"):format(hist.loss[1], hist.loss[6]))
end)

t.test("argument errors name the function", function()
  device("cpu")
  t.raises(function() nn.posembed(0, 4) end, "nn.posembed: context (the tokens of a sequence) must be a positive integer, got 0")
  t.raises(function() nn.posembed(3, 4, {sed = 1}) end, "nn.posembed: unknown option 'sed'")
  t.raises(function() nn.posembed(3, 4):forward(zeros(4, 4)) end, "input has 4 tokens, not a multiple of the context 3")
  t.raises(function() nn.posembed(3, 4):backward(zeros(4, 3)) end, "nn.posembed: backward before forward")
  t.raises(function() nn.block(4, 2, {contxt = 3}) end, "nn.block: unknown option 'contxt'")
  t.raises(function() nn.block(4, 2, {mlp = 0}) end, "nn.block: mlp (the hidden rows of the MLP) must be a positive integer")
  t.raises(function() nn.block(6, 4) end, "nn.attention: heads (4) must divide dim (6)")
  t.raises(function() nn.block(4, 2, {causal = false}) end, "only causal = true is implemented")
  t.raises(function() nn.block(4, 2):forward(zeros(3, 2)) end, "input is 3×2 but the layer takes 4 rows")
  t.raises(function() nn.block(4, 2):backward(zeros(4, 2)) end, "nn.block: backward before forward")
  t.raises(function() nn.layernorm(4, {epsilon = 1}) end, "nn.layernorm: unknown option 'epsilon' (did you mean 'eps'?)")
end)

t.done()
