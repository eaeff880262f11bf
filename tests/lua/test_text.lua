-- text: the character-level text set (lua/vela/text.lua): vocabulary and
-- encoding, the split, Philox windows (the same on every device, matching
-- the text at their offsets), the unigram/bigram baselines worked by hand,
-- and the errors.
local t = dofile("tests/lua/t.lua")
local data, text = require "vela.data", require "vela.text"

local ids = t.devices()

t.test("vocabulary, encode and decode on a hand-written text", function()
  local txt = data.text{text = "hello, wörld\n"}
  -- sorted distinct characters, by code point (ö is U+00F6, after every ASCII one)
  local want = {"\n", " ", ",", "d", "e", "h", "l", "o", "r", "w", "ö"}
  t.near(txt.size, #want, 0, "size")
  for v, c in ipairs(want) do assert(txt.vocab[v] == c, ("vocab[%d] = %q, want %q"):format(v, txt.vocab[v], c)) end
  t.near(txt.n, 13, 0, "characters (ö is one)")
  local e = txt:encode("wörld")
  local we = {10, 11, 9, 7, 4}
  for i = 1, #we do t.near(e[i], we[i], 0, "encode " .. i) end
  assert(txt:decode(e) == "wörld")
  assert(txt:decode(txt:encode("hello, wörld\n")) == "hello, wörld\n")
  -- the stored tokens are the encoding of the whole text
  local all = txt:encode("hello, wörld\n")
  for i = 1, #all do t.near(txt.tokens:byte(i), all[i], 0, "token " .. i) end
  -- decode takes a matrix of one row or one column too
  assert(txt:decode(from{{6, 5, 7}}) == "hel")
  assert(txt:decode(from{{6}, {5}}) == "he")
  t.raises(function() txt:encode("x") end, "text:encode", "'x'", "not in the vocabulary")
  t.raises(function() txt:decode{1, 12} end, "text:decode", "token 2", "1..11")
  t.raises(function() txt:decode{1.5} end, "text:decode", "token 1")
end)

t.test("the split: the first n - floor(val·n) characters train", function()
  local s = string.rep("abcdefghij", 10)  -- 100 characters
  local txt = data.text{text = s}
  t.near(txt.ntrain, 90, 0); t.near(txt.nval, 10, 0)
  assert(txt:decode{txt:split("val"):byte(1, -1)} == "abcdefghij")
  local t2 = data.text{text = "abcdefg", val = 0.3}  -- floor(2.1) = 2
  t.near(t2.ntrain, 5, 0); t.near(t2.nval, 2, 0)
  assert(t2:decode{t2:split("train"):byte(1, -1)} == "abcde")
  assert(t2:decode{t2:split("val"):byte(1, -1)} == "fg")
  local t3 = data.text{text = "abc", val = 0}
  t.near(t3.ntrain, 3, 0); t.near(t3.nval, 0, 0)
end)

t.test("the window draw is vela's Philox (the word rand uses)", function()
  for _, seed in ipairs{1, 7, 2^33 + 5} do
    local r = rand(1, 40, seed, "cpu"):totable()[1]
    for k = 0, 39 do
      t.near(text.philox_word(seed, k) >> 8, r[k + 1] * 2^24, 0, ("seed %d, k %d"):format(seed, k))
    end
  end
end)

-- A text whose characters all differ, so a window's contents name its offset.
local distinct = {}
for c = 33, 126 do distinct[#distinct + 1] = string.char(c) end
distinct = table.concat(distinct)  -- 94 characters

t.test("windows match the text at their offsets, y one token ahead", function()
  local txt = data.text{text = distinct, val = 0.2}  -- train 76, val 18
  for _, split in ipairs{"train", "val"} do
    local T, B = 5, 7
    local L = txt:loader(T, B, {seed = 3, split = split, device = "cpu"})
    local first = split == "train" and 0 or txt.ntrain
    local len = split == "train" and txt.ntrain or txt.nval
    for step = 1, 3 do
      local x, y = L:batch(step)
      t.near(x.rows, 1, 0); t.near(x.cols, T * B, 0)
      local xs, ys = x:totable()[1], y:totable()[1]
      for j, s in ipairs(L:starts(step)) do
        assert(s >= 1 and s + T <= len, "window inside the split")
        for i = 1, T do
          local col = (j - 1) * T + i
          -- token numbers of distinct characters are their positions in the sorted text
          t.near(xs[col], first + s + i - 1, 0, "x")
          t.near(ys[col], first + s + i, 0, "y")
        end
      end
    end
    -- the starts are the formula's, from the Philox word
    local s2 = L:starts(2)
    for j = 1, B do
      local w = text.philox_word(3, B + j - 1)
      t.near(s2[j], 1 + (w * (len - T) >> 32), 0, "start")
    end
  end
  -- different seeds, different windows; the same seed, the same
  local a = txt:loader(5, 8, {seed = 1}):starts(1)
  local b = txt:loader(5, 8, {seed = 2}):starts(1)
  local c = txt:loader(5, 8, {seed = 1}):starts(1)
  local same = 0
  for j = 1, 8 do
    if a[j] == b[j] then same = same + 1 end
    t.near(a[j], c[j], 0)
  end
  assert(same < 8, "seeds 1 and 2 drew the same windows")
end)

t.test("every device gets the same windows for a seed", function()
  local txt = data.text{text = string.rep(distinct, 3)}
  local ref
  for _, id in ipairs(ids) do
    local L = txt:loader(16, 4, {seed = 11, device = id})
    local x, y = L:batch(5)
    assert(x:device() == y:device())
    local got = {x:to("cpu"):totable()[1], y:to("cpu"):totable()[1]}
    if not ref then ref = got else
      for k = 1, 2 do for i = 1, #ref[k] do t.near(got[k][i], ref[k][i], 0, id) end end
    end
  end
  assert(#ids >= 1)
end)

t.test("shuffle = seed shuffles the lines by Philox before the split", function()
  local lines = {"alpha\n", "bravo\n", "charlie\n", "delta\n", "echo\n"}
  local s = table.concat(lines)
  local moved = 0
  for _, seed in ipairs{1, 2, 9} do
    -- Fisher–Yates from the last line down, j = 1 + floor(u·i), u from rand (the C++ Philox) at counter i
    local u = rand(1, 6, seed, "cpu"):totable()[1]
    local want = {table.unpack(lines)}
    for i = #want, 2, -1 do
      local j = 1 + math.floor(u[i + 1] * i)
      want[i], want[j] = want[j], want[i]
    end
    local got = require("vela.text").shuffle_lines(s, seed)
    assert(got == table.concat(want), ("seed %d: %q, want %q"):format(seed, got, table.concat(want)))
    if got ~= s then moved = moved + 1 end
    local txt = data.text{text = s, shuffle = seed, val = 0.2}
    assert(txt:decode{txt.tokens:byte(1, -1)} == got)
  end
  assert(moved > 0, "no seed moved a line")
  -- a last line without its newline gets one; the lines are the same set
  local got = require("vela.text").shuffle_lines("x\ny", 3)
  assert(got == "x\ny\n" or got == "y\nx\n", got)
  t.raises(function() data.text{text = s, shuffle = 1.5} end, "data.text", "shuffle", "integer seed")
end)

t.test("the baselines worked by hand", function()
  -- "abab", val 0.5: train "ab", val "ab", V = 2; the one target is val's 'b' after 'a'.
  --   unigram p(b) = (1 + 1)/(2 + 2) = 1/2        -> ln 2
  --   bigram p(b | a) = (1 + 1)/(1 + 2) = 2/3      -> ln 1.5
  local b = data.text{text = "abab", val = 0.5}:baselines()
  t.near(b.unigram, math.log(2), 1e-12, "unigram")
  t.near(b.bigram, math.log(1.5), 1e-12, "bigram")
  -- "aaabba", val 0.5: train "aaa", val "bba", V = 2 (a, b); targets val's 'b' (after 'b'), 'a' (after 'b').
  --   unigram: p(a) = 4/5, p(b) = 1/5: (ln 5 + ln 5/4)/2
  --   bigram: train pairs a→a twice, nothing from b: p(· | b) = 1/2 each: ln 2
  local c = data.text{text = "aaabba", val = 0.5}:baselines()
  t.near(c.unigram, (math.log(5) + math.log(5 / 4)) / 2, 1e-12, "unigram 2")
  t.near(c.bigram, math.log(2), 1e-12, "bigram 2")
  t.raises(function() data.text{text = "abc", val = 0.5}:baselines() end, "text:baselines", "1 tokens")
end)

t.test("the packages' texts", function()
  local ok, f = pcall(data.text, "fortunes")
  if ok then
    assert(f.n > 2000000 and f.size > 90, tostring(f))
    assert(f.index["\n"] and f.index[" "] and f.index["e"], "newline, space, e")
    local b = f:baselines()
    assert(b.bigram < b.unigram and b.unigram < math.log(f.size), ("%g %g"):format(b.unigram, b.bigram))
  else
    assert(tostring(f):find("fortunes-min and fortunes", 1, true), f)
  end
end)

t.test("errors", function()
  t.raises(function() data.text{text = "abc", spilt = 0.2} end, "data.text", "unknown option 'spilt'", "val")
  t.raises(function() data.text{text = "abcd"}:loader(2, 2, {sede = 1}) end, "text:loader", "unknown option 'sede'", "seed")
  t.raises(function() data.text("abc", 5) end, "data.text", "options must be a table")
  -- T larger than the split: 9 training characters hold no window of 10 + 1
  local txt = data.text{text = "abcdefghij"}
  t.raises(function() txt:loader(10, 1) end, "text:loader", "T = 10 needs 11 tokens", "train split", "holds 9")
  t.raises(function() txt:loader(1, 1, {split = "val"}) end, "needs 2 tokens", "val split", "holds 1")
  t.raises(function() txt:loader(0, 1) end, "text:loader", "T (the context)")
  t.raises(function() txt:loader(2, 1.5) end, "text:loader", "batch")
  t.raises(function() txt:loader(2, 1, {split = "test"}) end, "text:loader", "'train' or 'val'")
  t.raises(function() txt:loader(2, 1):batch(0) end, "loader:batch", "step")
  t.raises(function() txt:loader(2, 1, {device = "vulkan:99"}) end, "text:loader", "device", "vulkan:99")
  t.raises(function() data.text{text = "abc", val = 1} end, "data.text", "val")
  t.raises(function() data.text{text = "a"} end, "data.text", "at least 2")
  t.raises(function() data.text{text = "ab\xff"} end, "data.text", "not UTF-8", "byte 3")
  t.raises(function() data.text() end, "data.text", "expected a source")
  t.raises(function() data.text("/nonexistent/file.txt") end, "data.text", "cannot open", "/nonexistent/file.txt")
  -- the size is checked before reading
  local p = os.tmpname()
  local f = io.open(p, "wb"); f:write(string.rep("x", 100)); f:close()
  t.raises(function() data.text(p, {max_bytes = 99}) end, "data.text", "holds 100 bytes", "max_bytes = 99")
  t.near(data.text(p, {max_bytes = 100}).n, 100, 0)
  os.remove(p)
  t.raises(function() data.text{text = "abc", max_bytes = 2} end, "data.text", "3 bytes")
  -- more than 255 distinct characters
  local many = {}
  for cp = 256, 600 do many[#many + 1] = utf8.char(cp) end
  t.raises(function() data.text{text = table.concat(many)} end, "data.text", "345 distinct characters", "255")
end)

t.done()
