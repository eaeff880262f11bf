-- vela.text: a character-level text set for sequence models (issue 28).
--
--   local txt = data.text("fortunes")              -- Debian's fortunes, ~2.7 MB of prose
--   local batches = txt:loader(64, 32, {seed = 1})  -- context T = 64, 32 windows a batch
--   local x, y = batches:batch(1)                   -- 1 × (64·32) token numbers, y = x shifted by one
--   print(txt:baselines().bigram)                   -- nats per character to beat
--
-- The vocabulary is the sorted distinct characters of the whole text (UTF-8
-- characters, in code-point order; at most 255). Token v is vocab[v], 1-based
-- as the column of an embedding table. The text is kept encoded as a string
-- of bytes (byte k = the k-th token's number), so windows are read with
-- string.byte and a 2.7 MB text costs 2.7 MB.
--
-- Split: the first n − floor(val·n) tokens train, the last floor(val·n)
-- validate (val = 0.1 unless given): contiguous, as nanoGPT does, so no
-- validation window overlaps a training one.
--
-- Windows: batch b of step s takes window j (1-based) from Philox draw
-- k = (s − 1)·batch + (j − 1) under the loader's seed: w = the first 32-bit
-- word of philox4x32_10(counter {lo32(k), hi32(k), 0, 0}, key {lo32(seed),
-- hi32(seed)}), the word vela.rand uses (core/philox.hpp); the window starts
-- at token 1 + ⌊w·m / 2³²⌋ of the split, m = (split length − T) the number of
-- places a window of T + 1 tokens fits. The draw is made on the host, so the
-- windows are the same on every device by construction.
--
-- Layout (docs/sequence.md): one token per column. x and y are 1 × (T·batch)
-- float32 rows of token numbers; window j is columns (j − 1)·T + 1 .. j·T, and
-- y(c) = the token after x(c) in the text.
local vela = require "vela"

local text = {}
local fmt = string.format

text.max_bytes = 64 * 1024 * 1024  -- the largest text read (opts.max_bytes changes it)

-- Known sources: a Debian package's files.
local sources = {
  fortunes = {packages = {"fortunes-min", "fortunes"}, dir = "/usr/share/games/fortunes/",
              fallback = {"/usr/share/games/fortunes/fortunes"}},
  words = {packages = {"wamerican"}, files = {"/usr/share/dict/american-english"}},
}

local function check_opts(opts, fn, allowed)
  if opts == nil then return {} end
  if type(opts) ~= "table" then error(fmt("%s: options must be a table, got %s", fn, type(opts)), 3) end
  for k in pairs(opts) do
    if not allowed[k] then
      local names = {}
      for n in pairs(allowed) do names[#names + 1] = n end
      table.sort(names)
      error(fmt("%s: unknown option '%s' (the options are: %s)", fn, tostring(k), table.concat(names, ", ")), 3)
    end
  end
  return opts
end

-- A file's bytes, its size checked against max before anything is read.
local function read_file(path, max, fn)
  local f, err = io.open(path, "rb")
  if not f then error(fmt("%s: cannot open '%s' (%s)", fn, path, tostring(err)), 0) end
  local size = f:seek("end")
  if not size then f:close(); error(fmt("%s: '%s' is not a regular file", fn, path), 0) end
  if size > max then
    f:close()
    error(fmt("%s: '%s' holds %d bytes, more than max_bytes = %d", fn, path, size, max), 0)
  end
  f:seek("set", 0)
  local s = f:read("a") or ""
  f:close()
  if #s ~= size then error(fmt("%s: read %d of the %d bytes of '%s'", fn, #s, size, path), 0) end
  return s
end

local function exists(path)  -- a file that can be opened for reading
  local f = io.open(path, "rb")
  return f ~= nil and f:close() == true
end

-- The files of a known source: the fortune files as dpkg lists them (no
-- .dat index, no .u8 link), sorted by path, or the fixed list.
local function source_files(src, name, fn)
  local files = {}
  if src.files then
    for _, p in ipairs(src.files) do if exists(p) then files[#files + 1] = p end end
  else
    for _, pkg in ipairs(src.packages) do
      local f = io.open("/var/lib/dpkg/info/" .. pkg .. ".list", "r")
      if f then
        for line in f:lines() do
          if line:sub(1, #src.dir) == src.dir and not line:sub(#src.dir + 1):find("[/.]") and exists(line) then
            files[#files + 1] = line
          end
        end
        f:close()
      end
    end
    if #files == 0 then
      for _, p in ipairs(src.fallback) do if exists(p) then files[#files + 1] = p end end
    end
    table.sort(files)
  end
  if #files == 0 then
    error(fmt("%s: no '%s' text: install the Debian package%s %s (scripts/setup.sh does)", fn, name,
      #src.packages > 1 and "s" or "", table.concat(src.packages, " and ")), 0)
  end
  return files
end

local Text = {}
Text.__index = Text

-- data.text(source [, opts]) / data.text{text = "..."}: see the header.
function text.load(source, opts)
  local fn = "data.text"
  if type(source) == "table" and opts == nil then source, opts = nil, source end
  opts = check_opts(opts, fn, {text = true, val = true, max_bytes = true, shuffle = true})
  local max = opts.max_bytes or text.max_bytes
  if math.type(max) ~= "integer" or max < 1 then
    error(fmt("%s: max_bytes must be a positive integer, got %s", fn, tostring(opts.max_bytes)), 2)
  end
  local val = opts.val or 0.1
  if type(val) ~= "number" or not (val >= 0 and val < 1) then
    error(fmt("%s: val (the validation fraction) must be a number in [0, 1), got %s", fn, tostring(opts.val)), 2)
  end
  local s, name
  if opts.text ~= nil then
    if source ~= nil then error(fmt("%s: give a source or opts.text, not both", fn), 2) end
    if type(opts.text) ~= "string" then error(fmt("%s: text must be a string, got %s", fn, type(opts.text)), 2) end
    if #opts.text > max then error(fmt("%s: text holds %d bytes, more than max_bytes = %d", fn, #opts.text, max), 2) end
    s, name = opts.text, "text"
  elseif type(source) == "string" then
    local ok, res = pcall(function()
      if sources[source] then
        local parts, total = {}, 0
        for _, p in ipairs(source_files(sources[source], source, fn)) do
          parts[#parts + 1] = read_file(p, max - total, fn)
          total = total + #parts[#parts]
        end
        return table.concat(parts)
      end
      return read_file(source, max, fn)
    end)
    if not ok then error(res, 2) end
    s, name = res, source
  else
    error(fmt("%s: expected a source ('fortunes', 'words' or a file's path) or {text = ...}, got %s",
      fn, type(source)), 2)
  end
  if opts.shuffle ~= nil then
    if math.type(opts.shuffle) ~= "integer" then
      error(fmt("%s: shuffle must be an integer seed, got %s", fn, tostring(opts.shuffle)), 2)
    end
    s = text.shuffle_lines(s, opts.shuffle)
  end
  local n = utf8.len(s)
  if not n then
    local _, bad = utf8.len(s)
    error(fmt("%s: '%s' is not UTF-8 text (byte %d)", fn, name, bad), 2)
  end
  if n < 2 then error(fmt("%s: '%s' holds %d characters; at least 2 are needed", fn, name, n), 2) end
  -- The vocabulary: every ASCII byte found by one scan each, then the
  -- multi-byte characters (sorted UTF-8 is code-point order).
  local seen, vocab = {}, {}
  for b = 0, 127 do
    local c = string.char(b)
    if s:find(c, 1, true) then vocab[#vocab + 1] = c; seen[c] = true end
  end
  for c in s:gmatch("[\xC2-\xF4][\x80-\xBF]*") do
    if not seen[c] then seen[c] = true; vocab[#vocab + 1] = c end
  end
  table.sort(vocab)
  if #vocab > 255 then
    error(fmt("%s: '%s' holds %d distinct characters; a character set keeps at most 255", fn, name, #vocab), 2)
  end
  local index, code = {}, {}
  for v, c in ipairs(vocab) do index[c], code[c] = v, string.char(v) end
  local tokens = s:gsub(utf8.charpattern, code)
  local nval = math.floor(val * n)
  local self = setmetatable({name = name, vocab = vocab, index = index, size = #vocab, n = n,
                             tokens = tokens, ntrain = n - nval, nval = nval}, Text)
  return self
end

-- txt:split(which) -> the encoded string of "train" or "val".
function Text:split(which)
  if which == "train" then return self.tokens:sub(1, self.ntrain) end
  if which == "val" then return self.tokens:sub(self.ntrain + 1) end
  error(fmt("text: split must be 'train' or 'val', got %s", tostring(which)), 3)
end

-- txt:encode(s) -> {token numbers}; an unknown character is an error.
function Text:encode(s)
  if type(s) ~= "string" then error(fmt("text:encode: expected a string, got %s", type(s)), 2) end
  if not utf8.len(s) then error("text:encode: the string is not UTF-8", 2) end
  local out = {}
  for _, cp in utf8.codes(s) do
    local c = utf8.char(cp)
    local v = self.index[c]
    if not v then error(fmt("text:encode: '%s' (U+%04X) is not in the vocabulary of '%s'", c, cp, self.name), 2) end
    out[#out + 1] = v
  end
  return out
end

-- txt:decode(ids) -> string: ids a table of token numbers or a matrix of one row or column.
function Text:decode(ids)
  if type(ids) == "userdata" then
    local m = ids:to("cpu"):totable()
    local flat = {}
    if #m == 1 then flat = m[1] else for i, r in ipairs(m) do
      if #r ~= 1 then error(fmt("text:decode: expected a matrix of one row or one column, got %d×%d", #m, #r), 2) end
      flat[i] = r[1]
    end end
    ids = flat
  end
  if type(ids) ~= "table" then error(fmt("text:decode: expected a table or a matrix of token numbers, got %s", type(ids)), 2) end
  local out = {}
  for i, v in ipairs(ids) do
    local k = math.tointeger(v)
    if not k or not self.vocab[k] then
      error(fmt("text:decode: token %d is %s, not a number in 1..%d", i, tostring(v), self.size), 2)
    end
    out[i] = self.vocab[k]
  end
  return table.concat(out)
end

-- ---------------------------------------------------------------------------
-- Philox 4x32-10, as core/philox.hpp: the first word of draw (seed, k).
-- ---------------------------------------------------------------------------

local M32 = 0xFFFFFFFF

function text.philox_word(seed, k)
  local c0, c1, c2, c3 = k & M32, (k >> 32) & M32, 0, 0
  local k0, k1 = seed & M32, (seed >> 32) & M32
  for round = 0, 9 do
    if round > 0 then k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32 end
    local p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2  -- < 2^64: wraps as an unsigned product
    c0, c1, c2, c3 = ((p1 >> 32) ~ c1 ~ k0) & M32, p1 & M32, ((p0 >> 32) ~ c3 ~ k1) & M32, p0 & M32
  end
  return c0
end

-- The lines of s (each with its newline; a last line without one gets one)
-- in an order drawn by Philox under seed: Fisher–Yates from the last line
-- down, line i swapped with line 1 + ⌊w·i / 2³²⌋, w = philox_word(seed, i).
function text.shuffle_lines(s, seed)
  local lines = {}
  for line in s:gmatch("[^\n]*\n?") do
    if line ~= "" then lines[#lines + 1] = line:sub(-1) == "\n" and line or line .. "\n" end
  end
  for i = #lines, 2, -1 do
    local j = 1 + ((text.philox_word(seed, i) * i) >> 32)
    lines[i], lines[j] = lines[j], lines[i]
  end
  return table.concat(lines)
end

-- ---------------------------------------------------------------------------
-- Batches of random windows
-- ---------------------------------------------------------------------------

local Loader = {}
Loader.__index = Loader

-- txt:loader(T, batch [, {seed = 1, split = "train", device =}]) -> loader
function Text:loader(T, batch, opts)
  local fn = "text:loader"
  opts = check_opts(opts, fn, {seed = true, split = true, device = true})
  if math.type(T) ~= "integer" or T < 1 then
    error(fmt("%s: T (the context) must be a positive integer, got %s", fn, tostring(T)), 2)
  end
  if math.type(batch) ~= "integer" or batch < 1 then
    error(fmt("%s: batch must be a positive integer, got %s", fn, tostring(batch)), 2)
  end
  local seed = opts.seed or 1
  if math.type(seed) ~= "integer" then error(fmt("%s: seed must be an integer, got %s", fn, tostring(seed)), 2) end
  local split = opts.split or "train"
  if split ~= "train" and split ~= "val" then
    error(fmt("%s: split must be 'train' or 'val', got %s", fn, tostring(split)), 2)
  end
  local tokens = self:split(split)
  if #tokens < T + 1 then
    error(fmt("%s: context T = %d needs %d tokens, but the %s split of '%s' holds %d", fn, T, T + 1, split,
      self.name, #tokens), 2)
  end
  local dev = opts.device or vela.device()
  local ok, x, y = pcall(function()
    return vela.zeros(1, T * batch, "float32", dev), vela.zeros(1, T * batch, "float32", dev)
  end)
  if not ok then error(fmt("%s: device: %s", fn, tostring(x):gsub("^[^:]*:%d+: ", "")), 2) end
  return setmetatable({text = self, tokens = tokens, T = T, batch_size = batch, seed = seed, split = split,
                       places = #tokens - T, x = x, y = y, dev = dev}, Loader)
end

-- loader:starts(step) -> {first token of each window}, 1-based in the split.
function Loader:starts(step)
  if math.type(step) ~= "integer" or step < 1 then
    error(fmt("loader:batch: step must be a positive integer, got %s", tostring(step)), 3)
  end
  local out = {}
  for j = 1, self.batch_size do
    local w = text.philox_word(self.seed, (step - 1) * self.batch_size + (j - 1))
    out[j] = 1 + ((w * self.places) >> 32)
  end
  return out
end

-- loader:batch(step) -> x, y (1 × T·batch on the loader's device, reused buffers).
function Loader:batch(step)
  local starts = self:starts(step)
  local T, tok = self.T, self.tokens
  local xs, ys = {}, {}
  for j, s in ipairs(starts) do
    local w = {tok:byte(s, s + T)}
    local base = (j - 1) * T
    for i = 1, T do xs[base + i], ys[base + i] = w[i], w[i + 1] end
  end
  local n = T * self.batch_size
  vela.copy(vela.matrix(1, n, xs, "float32", self.dev), self.x)
  vela.copy(vela.matrix(1, n, ys, "float32", self.dev), self.y)
  return self.x, self.y
end

-- ---------------------------------------------------------------------------
-- Baselines
-- ---------------------------------------------------------------------------

-- txt:baselines() -> {unigram =, bigram =}: the validation cross-entropy in
-- nats per character of two count models of the training split, each with
-- add-one smoothing over the vocabulary (V = txt.size):
--   unigram  p(c)     = (count(c) + 1) / (ntrain + V)
--   bigram   p(c | a) = (count(a c) + 1) / (count(a ·) + V), count(a ·) the pairs starting with a
-- Both score the same targets: validation tokens 2..nval, each predicted
-- (by the bigram) from the token before it, as a model with context ≥ 1 is.
function Text:baselines()
  if self.nval < 2 then
    error(fmt("text:baselines: the validation split of '%s' holds %d tokens; at least 2 are needed",
      self.name, self.nval), 2)
  end
  local V = self.size
  local train, valid = self:split("train"), self:split("val")
  local uni, big, out = {}, {}, {}
  for v = 1, V do uni[v], out[v] = 0, 0 end
  local prev
  for i = 1, #train do
    local c = train:byte(i)
    uni[c] = uni[c] + 1
    if prev then
      local key = prev * 256 + c
      big[key] = (big[key] or 0) + 1
      out[prev] = out[prev] + 1
    end
    prev = c
  end
  local lu, lb, m = 0, 0, 0
  local log = math.log
  for i = 2, #valid do
    local a, c = valid:byte(i - 1), valid:byte(i)
    lu = lu - log((uni[c] + 1) / (#train + V))
    lb = lb - log(((big[a * 256 + c] or 0) + 1) / (out[a] + V))
    m = m + 1
  end
  return {unigram = lu / m, bigram = lb / m}
end

function Text:__tostring()
  return fmt("text '%s': %d characters, vocabulary %d, train %d, val %d", self.name, self.n, self.size,
    self.ntrain, self.nval)
end

if vela.doc then
  vela.doc("data.text", "data.text(source [, {val = 0.1, max_bytes =, shuffle =}]) | data.text{text = s} -> txt",
    "A character-level text set: source 'fortunes' (Debian's fortunes-min and fortunes), 'words' (wamerican's "
    .. "word list) or a file's path (at most max_bytes, 64 MiB, checked before reading). txt.vocab holds the sorted "
    .. "distinct characters, txt.size their number; the first n - floor(val·n) characters train, the rest validate. "
    .. "shuffle = seed first shuffles the lines (for word lists: data.text('words', {shuffle = 1})). "
    .. "local txt = data.text{text = 'abab'}; print(txt.size, txt:decode(txt:encode('ba')))", text.load)
  vela.doc("text:encode", "txt:encode(s) -> {token numbers}",
    "The tokens (1..txt.size) of the characters of s; a character not in the vocabulary is an error. "
    .. "data.text{text = 'abc'}:encode('cab') --> {3, 1, 2}", Text.encode)
  vela.doc("text:decode", "txt:decode(ids) -> string",
    "The characters of token numbers (a table, or a matrix of one row or column). "
    .. "data.text{text = 'abc'}:decode{3, 1, 2} --> 'cab'", Text.decode)
  vela.doc("text:loader", "txt:loader(T, batch [, {seed = 1, split = 'train', device =}]) -> loader",
    "Random windows of T + 1 tokens of the train or val split, drawn by Philox from (seed, step): the same on "
    .. "every device. loader:batch(step) returns x, y: 1 × (T·batch) token rows, one token per column, window j in "
    .. "columns (j-1)·T+1..j·T, y the next token of each x. local x, y = data.text{text = 'abcabcabc'}:loader(4, 2):batch(1)",
    Text.loader)
  vela.doc("textloader:batch", "loader:batch(step) -> x, y",
    "The windows of a step (see txt:loader), written into the loader's two reused 1 × (T·batch) matrices. "
    .. "local x, y = data.text{text = 'abcabcabc'}:loader(4, 2):batch(3)", Loader.batch)
  vela.doc("textloader:starts", "loader:starts(step) -> {first tokens}",
    "Where each window of a step starts in its split (1-based): 1 + floor(w·(len - T) / 2^32), w the Philox "
    .. "word of (seed, (step-1)·batch + j-1). data.text{text = 'abcabcabc'}:loader(4, 2):starts(1)", Loader.starts)
  vela.doc("text:split", "txt:split('train' | 'val') -> string",
    "The tokens of a split as a string of bytes (byte k = the k-th token's number). "
    .. "local t = data.text{text = 'abcabc', val = 0.5}; print(t:decode{t:split('val'):byte(1, -1)})", Text.split)
  vela.doc("text.shuffle_lines", "require('vela.text').shuffle_lines(s, seed) -> string",
    "The lines of s (each ending in a newline) in an order drawn by Philox under seed (Fisher-Yates), as "
    .. "data.text{shuffle = seed} uses them. require('vela.text').shuffle_lines('a\\nb\\nc\\n', 1)", text.shuffle_lines)
  vela.doc("text.philox_word", "require('vela.text').philox_word(seed, k) -> integer",
    "The first 32-bit word of Philox 4x32-10 at counter k under seed: the word rand uses (its uniform is "
    .. "(w >> 8)·2^-24). require('vela.text').philox_word(1, 0)", text.philox_word)
  vela.doc("text:baselines", "txt:baselines() -> {unigram =, bigram =}",
    "Validation cross-entropy (nats per character) of add-one-smoothed unigram and bigram counts of the training "
    .. "split, on validation tokens 2..nval: the losses a sequence model must beat. "
    .. "data.text{text = 'abab', val = 0.5}:baselines() --> {unigram = ln 2, bigram = ln 1.5}", Text.baselines)
end

text.Text, text.Loader = Text, Loader
return text
