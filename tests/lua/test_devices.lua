-- Devices and measurement from Lua: devices(), device(), the device
-- userdata, sync, stats (also vela.stats), mem, who, threads, seed, time,
-- bench, profile, compare; and that moving work between devices gives the
-- same numbers.
local t = dofile("tests/lua/t.lua")
local vela = require "vela"

local list = devices()
local ids = {}
for _, d in ipairs(list) do
  if d.usable then ids[#ids + 1] = d.id end
end

t.test("devices() lists cpu first with its description", function()
  assert(#list >= 1)
  local cpu = list[1]
  assert(cpu.id == "cpu" and cpu.type == "cpu" and cpu.usable)
  assert(type(cpu.name) == "string" and #cpu.name > 0)
  assert(type(cpu.driver) == "string" and cpu.memory > 0)
  assert(type(cpu.limits) == "table")
  for k, d in ipairs(list) do
    if k > 1 then
      assert(d.id == ("vulkan:%d"):format(k - 2), d.id)
      assert(type(d.subgroup) == "number" and type(d.software) == "boolean")
      assert(d.usable or #d.reason > 0, "an unusable device says why")
    end
  end
end)

t.test("device(): select by spec, one userdata per device", function()
  local cpu = device("cpu")
  assert(device() == cpu and device("cpu") == cpu)
  assert(cpu:name() == "cpu")
  assert(tostring(cpu):find("^cpu %("), tostring(cpu))
  assert(zeros(1, 1):device() == cpu)
  assert(device(cpu) == cpu)
  local info = cpu:info()
  assert(info.id == "cpu" and info.memory > 0)
  for _, id in ipairs(ids) do
    local d = device(id)
    assert(d:name() == id and device() == d)
    assert(zeros(1, 1):device() == d, "new matrices go to the current device")
    if id ~= "cpu" then
      assert(tostring(d):find("^" .. id .. " %("), tostring(d))
      if d:info().software then assert(tostring(d):find(", software)", 1, true), tostring(d)) end
    end
  end
  if ids[2] then
    local name = list[2].driver
    assert(device("vulkan"):name() == "vulkan:0")
    if name and #name > 0 then assert(device(name:lower()):name():find("^vulkan:")) end
  end
  device("cpu")
end)

for _, id in ipairs(ids) do
  local D = id .. ": "

  t.test(D .. "sync, stats, vela.stats, mem", function()
    local d = device(id)
    local x, y = ones(64, 64), zeros(64, 64)
    local s0 = stats()
    for _ = 1, 10 do axpy(1, x, y) end
    sync()
    sync(d)
    d:sync()
    local s1 = stats(d)
    assert(s1.dispatches - s0.dispatches >= 10, "ten kernels counted")
    assert(s1.submissions >= s0.submissions and s1.host_waits >= s0.host_waits)
    assert(vela.stats == stats)
    local s2 = d:stats()
    assert(s2.dispatches == s1.dispatches)
    assert(y:get(1, 1) == 10)
    local m = mem(d)
    assert(m.used >= 2 * 64 * 64 * 4, "both matrices are counted")
    assert(m.reserved >= m.used)
    local before = mem(d).used
    local big = zeros(256, 256)
    assert(mem(d).used >= before + 256 * 256 * 4)
    big:release()
    sync(d)  -- a buffer still used by queued work is freed when that work has finished
    assert(mem(d).used < before + 256 * 256 * 4, "release frees at once")
    assert(type(mem().used) == "number")
  end)

  t.test(D .. "time, bench, profile", function()
    device(id)
    local calls = 0
    local s = time(function() calls = calls + 1 end)
    assert(calls == 1 and s.seconds >= 0 and s.calls == 1)
    assert(tostring(s):find("^[%d.]+ %S*s$"), tostring(s))
    s = time(function() calls = calls + 1 end, 3)
    assert(calls == 4 and s.seconds >= 0)
    assert(tostring(s):find(" per call %(3 calls%)$"), tostring(s))
    local a, b, c = rand(64, 64, 1), rand(64, 64, 2), zeros(64, 64)
    local r = bench(function() mm(a, b, c) end, {n = 5, warmup = 2})
    assert(r.n == 5 and r.min <= r.median and r.median <= r.max and r.min > 0)
    assert(tostring(r):find("^median .* min .* max .*%(n = 5%)"), tostring(r))
    local auto = bench(function() axpy(1, a, c) end)
    assert(auto.n >= 5 and auto.n <= 1000)
    local p = profile(function()
      for _ = 1, 3 do mm(a, b, c) end
      tanh(c)
    end)
    local byname = {}
    for _, row in ipairs(p) do byname[row.kernel] = row end
    assert(byname.mm and byname.mm.calls == 3 and byname.mm.device == id, "mm profiled")
    assert(byname.tanh and byname.tanh.calls == 1, "tanh profiled")
    local share = 0
    for _, row in ipairs(p) do share = share + row.share end
    t.near(share, 1, 1e-9, "shares add up")
    assert(p[1].ms >= p[#p].ms, "sorted by time")
    -- an error inside fn propagates and leaves profiling off
    t.raises(function() profile(function() error("boom") end) end, "boom")
    assert(sum(ones(2, 2)) == 4)
  end)
end

t.test("who lists live matrices with names, shapes, devices, bytes", function()
  device("cpu")
  who_test_matrix = zeros(3, 5)
  local view = who_test_matrix:t()
  local w = who{all = true}
  local found, found_view
  for _, e in ipairs(w) do
    if e.name == "who_test_matrix" then found = e end
    if e.view and e.rows == 5 and e.cols == 3 then found_view = e end
  end
  assert(found and found.rows == 3 and found.cols == 5 and found.bytes == 60 and found.device == "cpu")
  assert(found.dtype == "float32" and not found.view)
  assert(found_view and found_view.bytes == 60, "views show their buffer")
  who_test_matrix:release()
  for _, e in ipairs(who()) do
    if e.name == "who_test_matrix" then assert(e.released) end
  end
  who_test_matrix = nil
  view = nil
  for _, e in ipairs(who{all = true}) do assert(e.name ~= "who_test_matrix") end
end)

t.test("who lists the user's globals one row each and folds the rest into one line", function()
  device("cpu")
  local nn, optim = require "vela.nn", require "vela.optim"
  who_net = nn.sequential{nn.linear(6, 5, "relu", {seed = 1}), nn.linear(5, 3, nil, {seed = 2})}
  who_opt = optim.sgd{lr = 0.1, momentum = 0.9}
  who_set = {images = zeros(4, 10, "uint8"), labels = ones(1, 10), n = 10}
  who_x = rand(6, 8, 1)
  who_view = who_x:columns(1, 2)
  -- One training step: gradients, buffers and momentum are the net's, not rows of their own.
  local lf = nn.softmax_xent()
  lf:forward(who_net:forward(who_x), from{{1, 2, 3, 1, 2, 3, 1, 2}})
  who_net:backward(lf:backward())
  who_opt:step(who_net)
  local temp = {}
  for i = 1, 40 do temp[i] = who_x:col(1) end  -- 40 views held by a local: internal
  local w = who()
  local by = {}
  for _, e in ipairs(w) do by[e.name] = e end
  assert(by.who_net and by.who_net.kind == "network", "the net is one row")
  assert(by.who_net.what:find("53 parameters", 1, true), by.who_net.what)  -- 6·5 + 5 + 5·3 + 3
  assert(by.who_opt and by.who_opt.kind == "optimizer")
  assert(by.who_set and by.who_set.kind == "data set")
  assert(by.who_x.kind == "matrix" and by.who_x.bytes == 6 * 8 * 4)
  assert(by.who_view.kind == "view" and by.who_view.rows == 6 and by.who_view.cols == 2)
  -- The net's bytes: W, b, dW, db, momentum (twice the parameters and more) and batch buffers.
  assert(by.who_net.bytes >= 3 * 53 * 4, by.who_net.bytes)
  for _, e in ipairs(w) do assert(e.name ~= "-", "no nameless rows") end
  local text = tostring(w)
  assert(text:find("internal matri", 1, true), text)
  assert(select(2, text:gsub("\n", "")) == #w + 1, "a header, one line per row, one summary line: " .. text)
  assert(#who{all = true} > #w + 40)
  who_net, who_opt, who_set, who_x, who_view = nil, nil, nil, nil, nil
  assert(#temp == 40)
end)

t.test("threads and seed", function()
  local n = threads()
  assert(math.type(n) == "integer" and n >= 1)
  assert(threads(1) == 1 and threads() == 1)
  assert(sum(mm(ones(300, 300), ones(300, 300), zeros(300, 300))) == 300 * 300 * 300)
  threads(n)
  assert(threads() == n)
  seed(11)
  local a = rand(3, 3)
  seed(11)
  assert(rand(3, 3):get(2, 2) == a:get(2, 2))
end)

-- OpenBLAS's pthreads build starts one worker per core but one as it loads,
-- each spinning a tenth of a second for work; vela stops them before main and
-- keeps OpenBLAS on one thread (src/cpu/blas_core.cpp). A fresh process runs
-- the main thread and the pool's threads() − 1 workers, nothing else.
t.test("threads: a fresh process runs the pool's threads only, none of OpenBLAS's", function()
  local child = dofile("tests/lua/helpers/child.lua")
  local status, out = child.run([[
    local n = threads()
    local f = assert(io.open("/proc/self/stat"))
    local pid = f:read("n")
    f:close()
    local tasks = 0
    for _ in io.popen("ls /proc/" .. pid .. "/task"):lines() do tasks = tasks + 1 end
    print("TASKS " .. tasks .. " THREADS " .. n)
  ]])
  child.done()
  assert(status == 0, out)
  local tasks, n = out:match("TASKS (%d+) THREADS (%d+)")
  assert(tasks, out)
  assert(tonumber(tasks) == tonumber(n), ("%s threads in the process, want %s (main and the pool's workers): %s"):format(tasks, n, out))
end)

t.test("compare: times and differences per device", function()
  local r = compare(function(dev)
    assert(device() == dev)
    local a = rand(32, 16, 5)
    return mm(a, a:t(), zeros(32, 32))
  end, {"cpu", "cpu"})
  assert(#r == 2 and r[1].device == "cpu" and r[2].max_abs == 0 and r[2].max_rel == 0)
  assert(r[1].seconds > 0)
  assert(device():name() == "cpu", "the current device is restored")
  -- every usable device by default; rand is bit-identical everywhere
  local all = compare(function() return rand(16, 16, 99) end)
  assert(#all == #ids)
  for _, row in ipairs(all) do assert(row.max_abs == 0, row.device .. " rand differs") end
  local g = compare(function() return randn(16, 16, 99) end)
  for _, row in ipairs(g) do assert(row.max_abs == 0, row.device .. " randn differs") end
  local k = compare(function()
    local w, x = randn(50, 40, 1), rand(40, 30, 2)
    local y = zeros(50, 30)
    dense(w, x, rand(50, 1, 3), y, "tanh")
    return softmax(y)
  end)
  for _, row in ipairs(k) do assert(row.max_rel < 1e-5, row.device .. ": " .. row.max_rel) end
  t.raises(function() compare(function() error("inside") end, {"cpu"}) end, "inside")
  assert(device():name() == "cpu")
end)

t.test("a matrix moved across every device and back is unchanged", function()
  device("cpu")
  local m = randn(37, 11, 4)
  local here = m
  for _, id in ipairs(ids) do here = here:to(id) end
  local back = here:to("cpu")
  sub(m, back, back)
  assert(asum(back) == 0)
end)

t.done()
