-- compare, profile, diverge and trace on the cpu and on every Vulkan device
-- present: rows never mislabelled, profile's wall time covers the device time,
-- a planted divergence found at its line, a per-step loss read at the top of
-- the trace.
local t = dofile("tests/lua/t.lua")
local nn, optim = require "vela.nn", require "vela.optim"

local all, vk = {}, {}
for _, d in ipairs(devices()) do
  if d.usable then
    all[#all + 1] = d.id
    if d.id ~= "cpu" then vk[#vk + 1] = d.id end
  end
end
local here = debug.getinfo(1, "S").short_src

-- float64 host reference of a·b (column-major tables from totable: rows of values).
local function host_mm(a, b)
  local A, B = a:to("cpu"):totable(), b:to("cpu"):totable()
  local m, k, n = #A, #B, #B[1]
  local C = {}
  for i = 1, m do
    C[i] = {}
    for j = 1, n do
      local s = 0
      for p = 1, k do s = s + A[i][p] * B[p][j] end
      C[i][j] = s
    end
  end
  return C
end

local function max_rel_to(m, C)
  local M = m:to("cpu"):totable()
  local dmax, cmax = 0, 0
  for i = 1, #C do
    for j = 1, #C[1] do
      dmax = math.max(dmax, math.abs(M[i][j] - C[i][j]))
      cmax = math.max(cmax, math.abs(C[i][j]))
    end
  end
  return dmax / cmax
end

t.test("the tools are in the module table too", function()
  local vela = require "vela"
  for _, name in ipairs{"compare", "profile", "diverge", "trace"} do
    assert(type(vela[name]) == "function", name)
  end
  local r = vela.trace(function() end)
  assert(#r == 0 and tostring(r) == "no host waits, transfers or submissions", tostring(r))
end)

for _, home in ipairs(all) do
  for _, other in ipairs(all) do
    if other ~= home then
      t.test("compare: a closure over matrices on " .. home .. " is refused for the " .. other .. " row", function()
        device(home)
        local x, w, c = rand(32, 16, 1), rand(8, 32, 2), zeros(8, 16)
        t.raises(function() return compare(function() return mm(w, x, c) end, {home, other}) end,
          "the " .. other .. " row called mm at " .. here, "with a matrix on " .. home, "compare(fn, {inputs = {")
      end)

      t.test("compare: a result on " .. home .. " is not a row for " .. other, function()
        device(home)
        local x = rand(4, 3, 1)
        t.raises(function() return compare(function() return x end, {home, other}) end,
          "the " .. other .. " row returned a matrix on " .. home)
      end)

      t.test("compare: inputs on " .. home .. " move to " .. other .. " and back", function()
        device(home)
        local x, w, c = rand(32, 16, 1), rand(8, 32, 2), zeros(8, 16)
        local want = host_mm(w, x)
        local x0 = x:to("cpu"):totable()
        local ran = {}
        local s0 = {}
        for _, id in ipairs({home, other}) do s0[id] = stats(id).dispatches end
        local r = compare(function(dev)
          ran[#ran + 1] = {dev:name(), x:device():name(), c:device():name()}
          local out = mm(w, x, c)
          assert(max_rel_to(out, want) < 1e-5, "wrong product on " .. dev:name())
          return out
        end, {inputs = {w, x, c}, devices = {home, other}})
        assert(#r == 2 and r[1].device == home and r[2].device == other)
        assert(r[2].max_rel < 1e-5, "max_rel " .. r[2].max_rel)
        for _, row in ipairs(ran) do
          assert(row[1] == row[2] and row[1] == row[3], ("fn(%s) saw x on %s, c on %s"):format(row[1], row[2], row[3]))
        end
        for _, id in ipairs({home, other}) do assert(stats(id).dispatches > s0[id], "nothing ran on " .. id) end
        assert(x:device():name() == home and c:device():name() == home and w:device():name() == home)
        local x1 = x:to("cpu"):totable()
        for i = 1, #x0 do for j = 1, #x0[1] do assert(x1[i][j] == x0[i][j]) end end
        local s = tostring(r)
        assert(s:find(home, 1, true) and s:find(other, 1, true) and s:find("max rel diff", 1, true), s)
      end)

      t.test("compare: a network and an optimizer on " .. home .. " run truly on " .. other, function()
        device(home)
        local net = nn.sequential{nn.linear(12, 8, "relu", {seed = 4}), nn.linear(8, 3, nil, {seed = 5})}
        local bx = rand(12, 6, 7)
        local opt = optim.sgd{lr = 0.1}
        local r = compare(function() return net:forward(bx) end, {inputs = {net, bx, opt}, devices = {home, other}})
        assert(r[2].device == other and r[2].max_rel < 1e-5, tostring(r))
        assert(net.layers[1].w:device():name() == home and bx:device():name() == home)
        -- The natural call without inputs is refused.
        t.raises(function() return compare(function() return net:forward(bx) end, {home, other}) end,
          "inputs = {net, x")
      end)
    end
  end

  t.test("profile on " .. home .. ": wall time covers the device time, one name per call, transfers with bytes", function()
    device(home)
    local x, w, c = rand(256, 128, 1), rand(64, 256, 2), zeros(64, 128)
    local r = profile(function() for i = 1, 20 do mm(w, x, c) end end)
    assert(#r == 1 and r[1].kernel == "mm" and r[1].device == home and r[1].calls == 20, tostring(r))
    assert(r.device_ms > 0 and r.wall * 1e3 >= r.device_ms, ("wall %g ms < device %g ms"):format(r.wall * 1e3, r.device_ms))
    local y = rand(1000, 1, 3)
    r = profile(function() for i = 1, 5 do axpy(0.5, y, y) end; axpby(1, y, 2, y) end)
    local names = {}
    for _, row in ipairs(r) do names[row.kernel] = row.calls end
    assert(names.axpy == 5 and names.axpby == 1, tostring(r))
    assert(not names.upload and not names.download, "a transfer row with nothing moved: " .. tostring(r))
    r = profile(function() local h = y:to("cpu") end)
    local bytes = 0
    for _, row in ipairs(r) do if row.kernel == "download" then bytes = row.bytes end end
    if home ~= "cpu" then assert(bytes == 4000, tostring(r)) end
  end)

  t.test("trace on " .. home .. ": the per-step loss read is the top line", function()
    device(home)
    local net = nn.sequential{nn.linear(10, 8, "tanh", {seed = 1}), nn.linear(8, 4, nil, {seed = 2})}
    local lossfn, opt = nn.softmax_xent(), optim.sgd{lr = 0.1}
    local x = rand(10, 16, 1)
    local labels = {}
    for j = 1, 16 do labels[j] = (j % 4) + 1 end
    local y = from({labels})
    local read_line
    local r = trace(function()
      for step = 1, 10 do
        local l = lossfn:forward(net:forward(x), y)
        net:backward(lossfn:backward())
        opt:step(net)
        read_line = read_line or debug.getinfo(1, "l").currentline + 1
        local v = sum(l)
      end
    end)
    assert(#r >= 1, tostring(r))
    assert(r[1].line == here .. ":" .. read_line, ("top line %s, expected %s:%d\n%s"):format(r[1].line, here, read_line, tostring(r)))
    assert(r[1].waits >= 10, tostring(r))
    assert(tostring(r):find("wait ms", 1, true))
  end)

  t.test("diverge on " .. home .. ": every kernel agrees with the reference", function()
    local ref = home == "cpu" and vk[1] or "cpu"
    if not ref then return end
    device(home)
    local x, w, c = rand(64, 32, 1), rand(16, 64, 2), zeros(16, 32)
    local r = diverge(function() mm(w, x, c); tanh(c); local s = sum(c) end, {ref = ref})
    assert(not r.diverged and r.kernels == 3, tostring(r))
    assert(r.worst and r.worst.max_rel < 1e-4, tostring(r))
    assert(tostring(r):find("all 3 kernels agreed", 1, true), tostring(r))
    t.raises(function() return diverge(function() end, {ref = home}) end, "is the current device")
  end)

  t.test("diverge on " .. home .. ": a planted divergence is found at its line", function()
    local ref = home == "cpu" and vk[1] or "cpu"
    if not ref then return end
    local cmd = ("VELA_PERTURB=dense@%s %s tests/lua/helpers/planted_divergence.lua %s %s 2>&1"):format(home, arg[-1], home, ref)
    local p = io.popen(cmd)
    local out = p:read("a")
    local ok = p:close()
    assert(ok and out:find("^ok\tdense\t"), cmd .. "\n" .. out)
  end)
end

t.done()
