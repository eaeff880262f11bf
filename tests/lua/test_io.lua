-- vela.save / vela.load against NumPy itself: what vela writes, numpy.load
-- reads with the right shape, type and values, and what numpy.save and
-- numpy.savez write, vela reads, on every usable device. The values are a
-- formula both sides compute on their own: v(i, j) = 10·i + j/8 (exact in
-- float32), 1-based as vela counts.
local t = dofile("tests/lua/t.lua")

local python = "/usr/bin/python3"
-- NumPy is the reference: without it these tests fail (scripts/setup.sh installs python3-numpy).
local has_numpy = os.execute(python .. " -c 'import numpy' 2>/dev/null")
t.test("NumPy is installed as " .. python, function() assert(has_numpy, "no numpy: apt-get install python3-numpy") end)
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))

local ids = t.devices()
device("cpu")

local function v(i, j) return 10 * i + j / 8 end
local function formula(rows, cols, dev)
  local m = zeros(rows, cols, "float32", dev)
  for i = 1, rows do for j = 1, cols do m:set(i, j, v(i, j)) end end
  return m
end
local function check_formula(m, rows, cols, what)
  assert(m.rows == rows and m.cols == cols, ("%s: shape %d×%d, expected %d×%d"):format(what, m.rows, m.cols, rows, cols))
  local tab = m:to("cpu"):totable()
  for i = 1, rows do for j = 1, cols do
    assert(tab[i][j] == v(i, j), ("%s: (%d, %d) is %g, expected %g"):format(what, i, j, tab[i][j], v(i, j)))
  end end
end

local function py(code)
  local f = assert(io.open(dir .. "/check.py", "w"))
  f:write("import numpy as np, sys\n", code, "\n")
  f:close()
  local ok = os.execute(python .. " " .. dir .. "/check.py")
  assert(ok, "python check failed: " .. code)
end

for _, id in ipairs(ids) do
  t.test("save .npy from " .. id .. ": numpy reads float32 and uint8, Fortran order", function()
    local m = formula(3, 5, id)
    vela.save(dir .. "/f.npy", m)
    -- A transposed view is written as what it shows.
    vela.save(dir .. "/ft.npy", formula(5, 3, id):t())
    local u = zeros(2, 3, "uint8", id)
    for i = 1, 2 do for j = 1, 3 do u:set(i, j, 100 * i + j + 50) end end
    vela.save(dir .. "/u.npy", u)
    py([==[
a = np.load(sys.argv[0].rsplit('/', 1)[0] + '/f.npy')
assert a.dtype == np.float32 and a.shape == (3, 5), (a.dtype, a.shape)
assert a.flags['F_CONTIGUOUS']
for i in range(3):
    for j in range(5):
        assert a[i, j] == 10 * (i + 1) + (j + 1) / 8, (i, j, a[i, j])
b = np.load(sys.argv[0].rsplit('/', 1)[0] + '/ft.npy')
assert b.shape == (3, 5) and all(b[i, j] == 10 * (j + 1) + (i + 1) / 8 for i in range(3) for j in range(5)), b
u = np.load(sys.argv[0].rsplit('/', 1)[0] + '/u.npy')
assert u.dtype == np.uint8 and u.shape == (2, 3)
assert [[int(x) for x in r] for r in u] == [[151, 152, 153], [251, 252, 253]], u]==])
  end)

  t.test("save .npz from " .. id .. ": numpy.load sees every name", function()
    vela.save(dir .. "/s.npz", {w = formula(4, 2, id), b = formula(4, 1, id), note = "text member"})
    py([==[
z = np.load(sys.argv[0].rsplit('/', 1)[0] + '/s.npz')
assert sorted(z.files) == ['b', 'note', 'w'], z.files
w = z['w']
assert w.shape == (4, 2) and w.dtype == np.float32
for i in range(4):
    for j in range(2):
        assert w[i, j] == 10 * (i + 1) + (j + 1) / 8
assert z['b'].shape == (4, 1)]==])
  end)

  t.test("load onto " .. id .. " what numpy wrote: C and Fortran order, 1-D, float64, savez_compressed", function()
    py([==[
d = sys.argv[0].rsplit('/', 1)[0]
a = np.array([[10 * i + j / 8 for j in range(1, 6)] for i in range(1, 4)], dtype=np.float32)
np.save(d + '/c.npy', a)
np.save(d + '/fo.npy', np.asfortranarray(a))
np.save(d + '/d64.npy', a.astype(np.float64))
np.save(d + '/one.npy', np.array([1, 2, 3], dtype=np.uint8))
np.savez(d + '/z.npz', a=a, u=np.array([[7, 8]], dtype=np.uint8))
np.savez_compressed(d + '/zc.npz', a=a)]==])
    for _, name in ipairs{"c.npy", "fo.npy", "d64.npy"} do
      local m = vela.load(dir .. "/" .. name, id)
      assert(m:dtype() == "float32")
      assert(tostring(m:device()):match("^" .. id:gsub("%p", "%%%0")), tostring(m:device()))
      check_formula(m, 3, 5, name)
    end
    local one = vela.load(dir .. "/one.npy", id)
    assert(one:dtype() == "uint8" and one.rows == 3 and one.cols == 1)
    assert(one:get(1, 1) == 1 and one:get(3, 1) == 3)
    local z = vela.load(dir .. "/z.npz", id)
    check_formula(z.a, 3, 5, "z.npz a")
    assert(z.u:dtype() == "uint8" and z.u:get(1, 2) == 8)
    check_formula(vela.load(dir .. "/zc.npz", id).a, 3, 5, "zc.npz a")
  end)
end

t.test("a round trip keeps every float32 bit", function()
  local m = randn(17, 9, 4)
  vela.save(dir .. "/r.npy", m)
  local back = vela.load(dir .. "/r.npy")
  local a, b = m:totable(), back:totable()
  for i = 1, 17 do for j = 1, 9 do assert(a[i][j] == b[i][j]) end end
end)

t.test("a 1-D array round-trips as 1-D (.npy and a .npz member), a 0-D as 0-D; copies and views are 2-D", function()
  py([==[
d = sys.argv[0].rsplit('/', 1)[0]
np.save(d + '/v1.npy', np.array([1.5, 2.5, 3.5], dtype=np.float32))
np.save(d + '/s0.npy', np.array(7.25, dtype=np.float32))
np.savez(d + '/v1.npz', v=np.array([4, 5], dtype=np.uint8), c=np.array([[1], [2]], dtype=np.float32))]==])
  local v = vela.load(dir .. "/v1.npy")
  assert(v.rows == 3 and v.cols == 1, v:shape())  -- a column in vela, as before
  vela.save(dir .. "/v1_back.npy", v)
  vela.save(dir .. "/v1_copy.npy", v:copy())
  vela.save(dir .. "/v1_t.npy", v:t())
  local s = vela.load(dir .. "/s0.npy")
  assert(s.rows == 1 and s.cols == 1 and s:get(1, 1) == 7.25)
  vela.save(dir .. "/s0_back.npy", s)
  local z = vela.load(dir .. "/v1.npz")
  assert(z.v.rows == 2 and z.v.cols == 1 and z.c.rows == 2 and z.c.cols == 1)
  vela.save(dir .. "/v1_back.npz", {v = z.v, c = z.c, fresh = from{{1}, {2}}})
  py([==[
d = sys.argv[0].rsplit('/', 1)[0]
a = np.load(d + '/v1_back.npy')
assert a.shape == (3,) and a.dtype == np.float32 and list(a) == [1.5, 2.5, 3.5], (a.shape, a)
assert np.load(d + '/v1_copy.npy').shape == (3, 1), np.load(d + '/v1_copy.npy').shape
assert np.load(d + '/v1_t.npy').shape == (1, 3)
s = np.load(d + '/s0_back.npy')
assert s.shape == () and s == 7.25, (s.shape, s)
z = np.load(d + '/v1_back.npz')
assert z['v'].shape == (2,) and z['v'].dtype == np.uint8 and list(z['v']) == [4, 5], z['v']
assert z['c'].shape == (2, 1) and z['fresh'].shape == (2, 1), (z['c'].shape, z['fresh'].shape)]==])
end)

t.test("bad, truncated and foreign files are errors naming the file", function()
  vela.save(dir .. "/good.npy", formula(4, 4))
  local good = assert(io.open(dir .. "/good.npy", "rb")):read("a")
  local function write(name, s) return t.write_file(dir .. "/" .. name, s) end
  t.raises(function() vela.load(write("cut.npy", good:sub(1, #good - 5))) end, "cut.npy", "is truncated", "4×4")
  t.raises(function() vela.load(write("head.npy", good:sub(1, 40))) end, "head.npy", "truncated in its header")
  t.raises(function() vela.load(write("text.npy", "hello world")) end, "text.npy", "neither a .npy")
  t.raises(function() vela.load(write("cut.npz", "PK\3\4 and then nothing")) end, "cut.npz", "not a readable .npz")
  t.raises(function() vela.load(write("bad.npy", good:gsub("<f4", ">f4"))) end, "bad.npy", "'>f4'")
  t.raises(function() vela.load(dir .. "/missing.npy") end, "missing.npy", "cannot open")
  t.raises(function() vela.save(dir .. "/x.npz", formula(2, 2)) end, "x.npz", "one matrix")
  t.raises(function() vela.save(dir .. "/x.npz", {a = 1}) end, "'a' is a number")
  t.raises(function() vela.save(dir .. "/no/such/dir/x.npy", formula(2, 2)) end, "no/such/dir/x.npy", "cannot create")
end)

t.test("a failed save leaves the old file and no temporary behind", function()
  local path = dir .. "/keep.npz"
  vela.save(path, {a = formula(2, 2)})
  local before = assert(io.open(path, "rb")):read("a")
  local gone = zeros(2, 2)
  gone:release()
  t.raises(function() vela.save(path, {a = formula(2, 2), b = gone}) end, "released")
  assert(assert(io.open(path, "rb")):read("a") == before)
  local p = io.popen("ls " .. dir)
  local listing = p:read("a")
  p:close()
  assert(not listing:find("tmp"), listing)
end)

os.execute("rm -rf " .. dir)
t.done()
