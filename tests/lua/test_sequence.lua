-- The sequence layers on every device: layernorm and embedding_backward
-- and softmax_causal against values worked by hand, nn.layernorm and nn.embedding through
-- nn.gradcheck, nn.sequential, net:to (the same output on every device),
-- checkpoints, and their argument errors.
local t = dofile("tests/lua/t.lua")
local nn = require "vela.nn"

local ids = t.devices()
local host = t.host

t.each_device(function(id)
  t.test(id .. ": layernorm worked by hand", function()
    -- column (1, 3): mean 2, var 1, eps 3: rstd = 0.5, x̂ = (−0.5, 0.5)
    local x, g, b = from{{1}, {3}}, from{{2}, {0.5}}, from{{0}, {1}}
    local mean, rstd, y = zeros(1, 1), zeros(1, 1), zeros(2, 1)
    layernorm(x, g, b, mean, rstd, y, 3)
    local Y = host(y)
    t.near(Y[1][1], -1, 1e-6, "y1"); t.near(Y[2][1], 1.25, 1e-6, "y2")
    t.near(mean:get(1, 1), 2, 1e-6, "mean"); t.near(rstd:get(1, 1), 0.5, 1e-6, "rstd")
  end)

  t.test(id .. ": embedding_backward sums repeated tokens", function()
    local dE = embedding_backward(from{{1, 2, 4}}, from{{2, 3, 2}}, zeros(1, 3))
    local E = host(dE)
    assert(E[1][1] == 0 and E[1][2] == 5 and E[1][3] == 2, table.concat(E[1], " "))
    t.raises(function() embedding_backward(from{{1, 2}}, from{{1, 4}}, zeros(1, 3)); sync() end,
      "embedding_backward: idx at position 2 is not a column index of dE (an integer in 1..3)")
  end)

  t.test(id .. ": softmax_causal of 3 tokens by hand, and its backward", function()
    local y = softmax_causal(zeros(3, 3))
    local Y = host(y)
    local want = {{1, 0.5, 1/3}, {0, 0.5, 1/3}, {0, 0, 1/3}}
    for i = 1, 3 do for j = 1, 3 do t.near(Y[i][j], want[i][j], 1e-6, "y") end end
    -- column 3: dy = (1, 2, 3), Σ y·dy = 2, dx = (1/3)·(−1, 0, 1)
    local dx = host(softmax_causal_backward(y, from{{0, 0, 1}, {0, 0, 2}, {0, 0, 3}}, zeros(3, 3)))
    t.near(dx[1][3], -1/3, 1e-6, "dx1"); t.near(dx[2][3], 0, 1e-6, "dx2"); t.near(dx[3][3], 1/3, 1e-6, "dx3")
    t.raises(function() softmax_causal(zeros(2, 3)) end, "softmax_causal: x is 2×3 but must be T×n")
  end)

  t.test(id .. ": bmm by hand, transposed blocks, option errors", function()
    -- A₁ = (1 2), A₂ = (3 4); B₁ = (1 1)ᵀ, B₂ = (2 0)ᵀ; α = 2, β = 1, c = (1 1): (2·3 + 1, 2·6 + 1)
    local c = bmm(2, from{{1, 2, 3, 4}}, from{{1, 2}, {1, 0}}, 1, from{{1, 1}}, 2)
    local C = host(c)
    assert(C[1][1] == 7 and C[1][2] == 13, table.concat(C[1], " "))
    -- ta and tb: A₁ᵀ·B₁ᵀ with A₁ = (1 2)ᵀ (2×1 → 1×2), B₁ = (3 4) (1×2 → 2×1): 11; A₂ = (5 6)ᵀ, B₂ = (1 0): 5
    local c2 = bmm(1, from{{1, 5}, {2, 6}}, from{{3, 4, 1, 0}}, 0, zeros(1, 2), 2, {ta = true, tb = true})
    local C2 = host(c2)
    assert(C2[1][1] == 11 and C2[1][2] == 5, table.concat(C2[1], " "))
    t.raises(function() bmm(1, zeros(2, 6), zeros(3, 4), 0, zeros(2, 4), 2, {tA = true}) end,
      "bmm: unknown option 'tA'")
    t.raises(function() bmm(1, zeros(2, 6), zeros(3, 4), 0, zeros(2, 4), 2, {ta = 1}) end,
      "bmm: option ta must be a boolean, got number")
    t.raises(function() bmm(1, zeros(2, 6), zeros(3, 4), 0, zeros(2, 4), 4) end,
      "bmm: a is 2×6 but count is 4 (count must divide a's 6 columns into equal blocks)")
  end)

  t.test(id .. ": nn.gradcheck passes nn.embedding → nn.layernorm → nn.linear", function()
    local net = nn.sequential{nn.embedding(7, 6, {seed = 3}), nn.layernorm(6), nn.linear(6, 4, "tanh", {seed = 2})}
    vela.randn(net.layers[2].gamma, 5); vela.randn(net.layers[2].beta, 6)
    local idx = from{{1, 3, 3, 7, 2}}
    local r = nn.gradcheck(net, idx, {entries = math.huge})
    assert(r.ok, tostring(r))
    assert(r.errors["1.E"] and r.errors["2.gamma"] and r.errors["2.beta"], tostring(r))
    local ln = nn.layernorm(5)
    vela.randn(ln.gamma, 7)
    local r2 = nn.gradcheck(ln, randn(5, 9, 4), {entries = math.huge})
    assert(r2.ok, tostring(r2))
  end)
end)

t.test("net:to gives the same output on every device; checkpoints keep the layers", function()
  device("cpu")
  local net = nn.sequential{nn.embedding(9, 8, {seed = 1}), nn.layernorm(8),
    nn.attention(8, 2, {context = 3, seed = 5}), nn.linear(8, 9, {seed = 2})}
  local idx = from{{1, 9, 4, 4, 2, 9}}
  local want = host(net:forward(idx))
  for _, id in ipairs(ids) do
    net:to(id)
    local got = host(net:forward(idx:to(id)))
    for i = 1, #want do
      for j = 1, #want[1] do t.near(got[i][j], want[i][j], 1e-4, id) end
    end
  end
  net:to("cpu")
  local path = os.tmpname()
  nn.save(path, net)
  local net2 = nn.load(path)
  os.remove(path)
  local got = host(net2:forward(idx))
  for i = 1, #want do
    for j = 1, #want[1] do t.near(got[i][j], want[i][j], 1e-6, "loaded") end
  end
end)

t.test("argument errors name the function", function()
  device("cpu")
  t.raises(function() nn.layernorm(0) end, "nn.layernorm: dim (the rows of a token) must be a positive integer, got 0")
  t.raises(function() nn.layernorm(4, {epsilon = 1}) end, "nn.layernorm: unknown option 'epsilon'")
  t.raises(function() nn.embedding(5, 2, {sed = 1}) end, "nn.embedding: unknown option 'sed'")
  t.raises(function() nn.embedding(5, 2):forward(from{{1, 6}}) end,
    "gather_cols: idx at position 2 is not a column index of src (an integer in 1..5)")
  t.raises(function() nn.layernorm(4):forward(zeros(3, 2)) end, "input is 3×2 but the layer takes 4 rows")
  t.raises(function() layernorm(zeros(2, 2), zeros(3, 1), zeros(2, 1), zeros(2, 1), zeros(2, 1), zeros(2, 2)) end,
    "layernorm: gamma is 3×1 but must be a vector of 2 elements (one per row of x)")
end)

t.done()
