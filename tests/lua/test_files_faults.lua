-- The fault suite for files (issue 24, items 6 and 7): in a child vela under
-- an address-space limit (prlimit --as), a save of a matrix a third of the
-- limit succeeds (it streams from the device in pieces: no host copy of the
-- whole), and loads of files larger than the limit end in errors naming the
-- file, after which the session goes on. The large files are sparse: they
-- take no disk.
local t = dofile("tests/lua/t.lua")

local child_helper = dofile("tests/lua/helpers/child.lua")
local dir = child_helper.dir
local LIMIT = 1400000000  -- bytes of address space for the child
local function child(code) return child_helper.run(code, "timeout 300 prlimit --as=" .. LIMIT) end

local status0, probe = child('print("alive")')
local usable = status0 == 0 and probe:find("alive")
if not usable then print("skipped: vela does not start under prlimit --as (a sanitizer build reserves more address space)") end

-- The session goes on: a kernel on fresh matrices gives the right sum.
local goes_on = [[
print("SUM " .. sum(axpy(2, ones(2, 2, "cpu"), ones(2, 2, "cpu"))))
]]

if usable then
  t.test("under a 1.4 GB limit: saving a 512 MiB matrix as .npy and .npz succeeds, and it loads back", function()
    -- Item 7: save made two host copies (.npy) or three (.npz) of the whole matrix.
    local status, out = child([[
      local m = fill(zeros(8192, 16384, "cpu"), 0.5)
      m:set(8192, 16384, 7)
      print(select(2, pcall(vela.save, dir .. "/big.npy", m)))
      print(select(2, pcall(vela.save, dir .. "/big.npz", {m = m, note = "x"})))
      m:release()
      local back = vela.load(dir .. "/big.npy")
      print("NPY " .. back:get(8192, 16384) .. " " .. back:get(1, 1))
      back:release()
      local z = vela.load(dir .. "/big.npz")
      print("NPZ " .. z.m:get(8192, 16384) .. " " .. z.note)
    ]] .. goes_on)
    assert(status == 0, out)
    assert(out:find("NPY 7.0 0.5", 1, true) and out:find("NPZ 7.0 x", 1, true) and out:find("SUM 12.0", 1, true), out)
    os.execute("rm -f " .. dir .. "/big.np?")
  end)

  t.test("under a 1.4 GB limit: loading a 4 GiB .npy or a 3 GiB .npz member is an error naming the file", function()
    -- Item 6: load read the whole file into memory before looking at it.
    local status, out = child([[
      local hdr = "{'descr': '<f4', 'fortran_order': True, 'shape': (32768, 32768), }"
      hdr = hdr .. string.rep(" ", 63 - (10 + #hdr) % 64) .. "\n"
      local f = io.open(dir .. "/huge.npy", "wb")
      f:write("\x93NUMPY\1\0" .. string.pack("<I2", #hdr) .. hdr)
      f:seek("set", 10 + #hdr + 4 * 32768 * 32768 - 1)
      f:write("\0")
      f:close()
      print(select(2, pcall(vela.load, dir .. "/huge.npy")))
      -- a stored .npz member of 24576×32768 float32 (3 GiB): the zip's records, the data sparse
      local name = "m.npy"
      local h2 = "{'descr': '<f4', 'fortran_order': True, 'shape': (24576, 32768), }"
      h2 = h2 .. string.rep(" ", 63 - (10 + #h2) % 64) .. "\n"
      local npyhead = "\x93NUMPY\1\0" .. string.pack("<I2", #h2) .. h2
      local size = #npyhead + 4 * 24576 * 32768
      local loc = string.pack("<I4I2I2I2I2I2I4I4I4I2I2", 0x04034b50, 20, 0, 0, 0, 0x21, 0, size, size, #name, 0) .. name
      local cd = string.pack("<I4I2I2I2I2I2I2I4I4I4I2I2I2I2I2I4I4", 0x02014b50, 20, 20, 0, 0, 0, 0x21, 0, size, size,
        #name, 0, 0, 0, 0, 0, 0) .. name
      local at = #loc + size
      f = io.open(dir .. "/huge.npz", "wb")
      f:write(loc, npyhead)
      f:seek("set", at)
      f:write(cd, string.pack("<I4I2I2I2I2I4I4I2", 0x06054b50, 0, 0, 1, 1, #cd, at, 0))
      f:close()
      print(select(2, pcall(vela.load, dir .. "/huge.npz")))
    ]] .. goes_on)
    assert(status == 0, out)
    assert(out:find("load: '" .. dir .. "/huge.npy': 1073741824 float32 elements (4096.0 MiB) requested", 1, true), out)
    assert(out:find("load: '" .. dir .. "/huge.npz' member 'm.npy': 805306368 float32 elements (3072.0 MiB) requested", 1, true), out)
    assert(select(2, out:gsub("MiB available %(RLIMIT_AS", "")) == 2, out)
    assert(out:find("SUM 12.0", 1, true), out)
    os.execute("rm -f " .. dir .. "/huge.np?")
  end)
end

child_helper.done()
t.done()
