-- vela.manifest: plain data (numbers, strings, booleans, lists and
-- string-keyed tables) to and from text, for the description a checkpoint
-- keeps beside its matrices. The text is JSON (json.loads reads it; NaN and
-- ±Infinity written as Python's json writes them; integers without a point,
-- other numbers with one, so each comes back as the Lua number it was).
-- Reading is a small parser with bounds on length and depth: a checkpoint is
-- data, and nothing in it is ever run.
--
-- Also: the description of checkpoint format 1 (before vela wrote JSON) was
-- a Lua table literal ("return {[\"format\"] = 1, ...}"); decode_lua reads
-- that literal subset as data, without running it.
local M = {}
local fmt = string.format

M.max_depth = 64

-- ---------------------------------------------------------------------------
-- encoding
-- ---------------------------------------------------------------------------

local escapes = {['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
                 ["\b"] = "\\b", ["\f"] = "\\f"}
local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c) return escapes[c] or fmt("\\u%04x", c:byte()) end) .. '"'
end

-- `where` names the value in errors ("extra.epoch"); `fn` the function the user called.
local function encode(v, where, fn, depth)
  local tv = type(v)
  if tv == "number" then
    if math.type(v) == "integer" then return fmt("%d", v) end
    if v ~= v then return "NaN" end
    if v == math.huge then return "Infinity" end
    if v == -math.huge then return "-Infinity" end
    local s = fmt("%.17g", v)
    if not s:find("[.eEn]") then s = s .. ".0" end
    return s
  elseif tv == "string" then return quote(v)
  elseif tv == "boolean" then return tostring(v)
  elseif tv == "table" and getmetatable(v) == nil then
    if depth >= M.max_depth then error(fmt("%s: %s is nested more than %d deep", fn, where, M.max_depth), 0) end
    local n, strings, others = #v, {}, 0
    for k in pairs(v) do
      if type(k) == "string" then strings[#strings + 1] = k
      elseif math.type(k) == "integer" and k >= 1 and k <= n then -- a list element
      else others = others + 1 end
    end
    if others > 0 or (n > 0 and #strings > 0) then
      error(fmt("%s: %s mixes keys (a checkpoint keeps lists {1, 2, 3} and tables with string keys)", fn, where), 0)
    end
    local parts = {}
    if n > 0 then
      for i = 1, n do parts[i] = encode(v[i], where .. "[" .. i .. "]", fn, depth + 1) end
      return "[" .. table.concat(parts, ", ") .. "]"
    end
    table.sort(strings)
    for i, k in ipairs(strings) do parts[i] = quote(k) .. ": " .. encode(v[k], where .. "." .. k, fn, depth + 1) end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  error(fmt("%s: %s is a %s (a checkpoint keeps numbers, strings, booleans and plain tables)", fn, where, tv), 0)
end

function M.encode(v, where, fn) return encode(v, where, fn, 0) end

-- ---------------------------------------------------------------------------
-- decoding: JSON, and format 1's Lua literal
-- ---------------------------------------------------------------------------

local Parser = {}
Parser.__index = Parser

function Parser:bad(why)
  error(fmt("%s (at byte %d of %d)", why, self.at, #self.s), 0)
end

function Parser:space()
  self.at = self.s:find("[^ \t\r\n]", self.at) or #self.s + 1
end

function Parser:peek()
  self:space()
  return self.s:sub(self.at, self.at)
end

function Parser:expect(c)
  if self:peek() ~= c then self:bad(fmt("expected '%s'", c)) end
  self.at = self.at + 1
end

function Parser:literal(words)
  for word, value in pairs(words) do
    if self.s:sub(self.at, self.at + #word - 1) == word then
      self.at = self.at + #word
      return true, value
    end
  end
  return false
end

function Parser:number()
  local s = self.s:match("^-?[%d.][%d.eE+%-]*", self.at)
  if not s or #s > 40 then self:bad("expected a value") end
  local v = math.tointeger(tonumber(s)) or tonumber(s)
  if not v then self:bad("a malformed number '" .. s .. "'") end
  if s:find("[.eE]") then v = v + 0.0 end
  self.at = self.at + #s
  return v
end

local json_escapes = {['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t"}
function Parser:json_string()
  self:expect('"')
  local out = {}
  while true do
    local stop = self.s:find('["\\%c]', self.at)
    if not stop then self:bad("an unterminated string") end
    out[#out + 1] = self.s:sub(self.at, stop - 1)
    local c = self.s:sub(stop, stop)
    self.at = stop + 1
    if c == '"' then return table.concat(out) end
    if c ~= "\\" then self:bad("a control character in a string") end
    local e = self.s:sub(self.at, self.at)
    if json_escapes[e] then
      out[#out + 1] = json_escapes[e]
      self.at = self.at + 1
    elseif e == "u" and self.s:match("^%x%x%x%x", self.at + 1) then
      out[#out + 1] = utf8.char(tonumber(self.s:sub(self.at + 1, self.at + 4), 16))
      self.at = self.at + 5
    else
      self:bad("a bad escape in a string")
    end
  end
end

local json_words = {["true"] = true, ["false"] = false, ["NaN"] = 0 / 0, ["Infinity"] = math.huge,
                    ["-Infinity"] = -math.huge, ["null"] = nil}
function Parser:json_value(depth)
  if depth > M.max_depth then self:bad("values nested more than " .. M.max_depth .. " deep") end
  local c = self:peek()
  if c == '"' then return self:json_string() end
  if c == "{" or c == "[" then
    self.at = self.at + 1
    local t, close, n = {}, c == "{" and "}" or "]", 0
    if self:peek() == close then self.at = self.at + 1 return t end
    repeat
      if close == "}" then
        local k = self:json_string()
        self:expect(":")
        t[k] = self:json_value(depth + 1)
      else
        n = n + 1
        t[n] = self:json_value(depth + 1)
      end
      local sep = self:peek()
      self.at = self.at + 1
    until sep ~= ","
    if self.s:sub(self.at - 1, self.at - 1) ~= close then self.at = self.at - 1 self:bad("expected '" .. close .. "'") end
    return t
  end
  local ok, v = self:literal(json_words)
  if ok then return v end
  return self:number()
end

local lua_escapes = {n = "\n", r = "\r", t = "\t", a = "\a", b = "\b", f = "\f", v = "\v", ["\\"] = "\\",
                     ['"'] = '"', ["'"] = "'", ["\n"] = "\n"}
function Parser:lua_string()
  local q = self:peek()
  if q ~= '"' and q ~= "'" then self:bad("expected a string") end
  self.at = self.at + 1
  local out = {}
  while true do
    local stop = self.s:find("[" .. q .. "\\\n]", self.at)
    if not stop then self:bad("an unterminated string") end
    out[#out + 1] = self.s:sub(self.at, stop - 1)
    local c = self.s:sub(stop, stop)
    self.at = stop + 1
    if c == q then return table.concat(out) end
    if c == "\n" then self:bad("a newline in a string") end
    local e = self.s:sub(self.at, self.at)
    local digits = self.s:match("^%d%d?%d?", self.at)
    if lua_escapes[e] then
      out[#out + 1] = lua_escapes[e]
      self.at = self.at + 1
    elseif digits and tonumber(digits) < 256 then
      out[#out + 1] = string.char(tonumber(digits))
      self.at = self.at + #digits
    else
      self:bad("a bad escape in a string")
    end
  end
end

local lua_words = {["true"] = true, ["false"] = false, ["0/0"] = 0 / 0, ["1/0"] = math.huge, ["-1/0"] = -math.huge}
function Parser:lua_value(depth)
  if depth > M.max_depth then self:bad("values nested more than " .. M.max_depth .. " deep") end
  local c = self:peek()
  if c == '"' or c == "'" then return self:lua_string() end
  if c == "{" then
    self.at = self.at + 1
    local t = {}
    while self:peek() ~= "}" do
      self:expect("[")
      local k = (self:peek() == '"' or self:peek() == "'") and self:lua_string() or self:number()
      if k ~= k or (type(k) == "number" and math.type(k) ~= "integer") then self:bad("a key that is not a name or an integer") end
      self:expect("]")
      self:expect("=")
      t[k] = self:lua_value(depth + 1)
      if self:peek() ~= "," then break end
      self.at = self.at + 1
    end
    self:expect("}")
    return t
  end
  local ok, v = self:literal(lua_words)
  if ok then return v end
  return self:number()
end

-- Parses all of text with `value` (a Parser method); value, or nil and a message.
local function parse(text, value, prefix)
  local p = setmetatable({s = text, at = 1}, Parser)
  local ok, v = pcall(function()
    if prefix then
      p:space()
      if p.s:sub(p.at, p.at + #prefix - 1) ~= prefix then p:bad("expected '" .. prefix .. "'") end
      p.at = p.at + #prefix
    end
    local v = value(p, 0)
    p:space()
    if p.at <= #p.s then p:bad("text after the value") end
    return v
  end)
  if ok then return v end
  return nil, v
end

-- decode(text) -> value, or nil and a message.
function M.decode(text) return parse(text, Parser.json_value) end

-- decode_lua("return {...}") -> value, or nil and a message: format 1's literal, read as data.
function M.decode_lua(text) return parse(text, Parser.lua_value, "return") end

return M
