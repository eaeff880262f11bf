-- nn.attention on every device: a 3-token case worked by hand (Q = K = 0, so
-- each token averages the values up to it), nn.gradcheck alone and inside a
-- small GPT-like stack, and argument errors (net:to and checkpoints: tests/lua/test_sequence.lua).
local t = dofile("tests/lua/t.lua")
local nn = require "vela.nn"

local host = t.host

t.each_device(function(id)
  t.test(id .. ": attention of 3 tokens by hand: Q = K = 0 gives the running mean of V", function()
    local a = nn.attention(1, 1, {context = 3})
    copy(from{{0}, {0}, {1}}, a.Wqkv)  -- Q = K = 0, V = x
    copy(from{{2}}, a.Wo)
    -- two sequences (3, 6, 9) and (1, 2, 3): y = 2·(3, 4.5, 6) and 2·(1, 1.5, 2)
    local y = host(a:forward(from{{3, 6, 9, 1, 2, 3}}))[1]
    local want = {6, 9, 12, 2, 3, 4}
    for j = 1, 6 do t.near(y[j], want[j], 1e-5, "y" .. j) end
  end)

  t.test(id .. ": nn.gradcheck passes nn.attention, alone and in a stack", function()
    local a = nn.attention(8, 2, {context = 4, seed = 3})
    local r = nn.gradcheck(a, randn(8, 12, 5), {entries = math.huge})
    assert(r.ok, tostring(r))
    assert(r.errors["Wqkv"] or r.errors["1.Wqkv"], tostring(r))
    local net = nn.sequential{nn.embedding(7, 6, {seed = 1}), nn.layernorm(6),
      nn.attention(6, 3, {context = 3, seed = 2}), nn.linear(6, 7, {seed = 4})}
    local r2 = nn.gradcheck(net, from{{1, 3, 3, 7, 2, 5}}, {entries = 48})
    assert(r2.ok, tostring(r2))
  end)
end)

t.test("nn.attention: argument errors name the function", function()
  device("cpu")
  t.raises(function() nn.attention(6, 4) end, "nn.attention: heads (4) must divide dim (6)")
  t.raises(function() nn.attention(6, 2, {causal = false}) end, "nn.attention: only causal = true is implemented")
  t.raises(function() nn.attention(6, 2, {contxt = 3}) end, "nn.attention: unknown option 'contxt'")
  t.raises(function() nn.attention(6, 2, {context = 4}):forward(zeros(6, 6)) end,
    "input has 6 tokens, not a multiple of the context 4")
  t.raises(function() nn.attention(6, 2):backward(zeros(6, 2)) end, "nn.attention: backward before forward")
end)

t.done()
