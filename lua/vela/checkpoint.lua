-- vela.checkpoint: saving and loading nets, attached to vela.nn as
-- net:save(path), nn.save(path, net [, opt [, extra]]) and nn.load(path [, dev]).
-- A checkpoint is data: nothing in a file is ever run (DESIGN.md, "Untrusted
-- input"), every size it declares is checked against what the file holds
-- before anything is allocated, and every error names nn.load and the file.
--
-- Two formats:
--   net:save  the VELANN binary (weights of linear layers only):
--     bytes  what
--     8      magic "VELANN\r\n" (the \r\n catches text-mode mangling)
--     4      format version, uint32 little-endian (1)
--     4      number of layers L
--     L ×    4 layer kind (1 = linear), 4 inputs, 4 outputs,
--            4 activation (its index in vela.activations − 1: 0 identity, 1 relu, 2 sigmoid, 3 tanh, ...),
--            then outputs·inputs float32 W (column-major), outputs float32 b
--     8      "VELAEND\n": a truncated file is caught even at a layer boundary
--   nn.save   a NumPy .npz (vela.save's layout, so numpy.load opens it too)
--     holding each parameter as "1.w", "1.b", ..., each optimizer state
--     matrix as "1.w.v", "1.w.m", ..., and a text member "vela_checkpoint":
--     the manifest, JSON (vela.manifest; json.loads(z['vela_checkpoint'].decode())
--     reads it) with the format version (2), the layers (kind, shape,
--     activation), the optimizer (kind, hyperparameters, step count), its
--     per-parameter numbers, the state of rand/randn's seed sequence and
--     `extra` (the caller's numbers, strings, booleans and tables of them).
--     Format 1 (the checkpoints of vela 0.1) kept the manifest as a Lua table literal; it
--     is read as data by the same parser's Lua-literal mode, never run.
-- Loading a checkpoint and stepping on gives the same next loss as a run
-- never interrupted.
local vela = require "vela"
local manifest = require "vela.manifest"

local M = {}
local fmt = string.format

local MAGIC, TRAILER, VERSION = "VELANN\r\n", "VELAEND\n", 1
local CHECKPOINT_VERSION = 2
-- Codes are the order of vela.activations (the op table appends only).
local act_code, act_of_code = {}, {}
for i, name in ipairs(vela.activations) do act_code[name], act_of_code[i - 1] = i - 1, name end
local activation_list = table.concat(vela.activations, ", ")

-- What each optimizer keeps: its numbers, and the state matrices each
-- parameter must have once it has stepped (a checkpoint without them would
-- resume from zero state, silently).
local optimizer_fields = {sgd = {"lr", "momentum", "weight_decay", "nesterov", "steps"},
                          adam = {"lr", "beta1", "beta2", "eps", "steps"}}
local function state_needed(o)
  if (o.steps or 0) == 0 then return {} end
  if o.name == "adam" then return {"m", "v"} end
  if o.name == "sgd" and (o.momentum or 0) ~= 0 then return {"v"} end
  return {}
end

-- The biggest layer a file may declare: 2^31 elements in a matrix.
local MAX_ELEMENTS = 1 << 31

function M.attach(nn, h)
  local Sequential, Linear, resolve, release_all = h.Sequential, h.Linear, h.resolve, h.release_all

  local function check_saveable(fn, i, l)
    if l.custom then
      error(fmt("%s: %s uses the kernel '%s' written at the prompt as its activation; only the op " ..
        "table's activations (%s) can be saved", fn, tostring(l), l.activation, activation_list), 3)
    end
  end

  -- Column-major float32 bytes of a matrix, read from its device once.
  local function pack_matrix(m)
    local rows = m:to("cpu"):totable()
    local flat, k, parts = {}, 0, {}
    for j = 1, m.cols do
      for i = 1, m.rows do
        k = k + 1
        flat[k] = rows[i][j]
        if k == 4096 then parts[#parts + 1] = string.pack(string.rep("<f", k), table.unpack(flat, 1, k)); k = 0 end
      end
    end
    if k > 0 then parts[#parts + 1] = string.pack(string.rep("<f", k), table.unpack(flat, 1, k)) end
    return table.concat(parts)
  end

  function Sequential:save(path)
    if type(path) ~= "string" then error("net:save: path must be a string, got " .. type(path), 2) end
    local out = {MAGIC, string.pack("<I4I4", VERSION, #self.layers)}
    for i, l in ipairs(self.layers) do
      if getmetatable(l) ~= Linear then
        error(fmt("net:save: layer %d (%s) is not a linear layer; net:save writes linear layers only " ..
          "(nn.save(path, net) keeps every kind)", i, tostring(l)), 2)
      end
      check_saveable("net:save", i, l)
      out[#out + 1] = string.pack("<I4I4I4I4", 1, l.inputs, l.outputs, act_code[l.activation])
      out[#out + 1] = pack_matrix(l.w)
      out[#out + 1] = pack_matrix(l.b)
    end
    out[#out + 1] = TRAILER
    -- A unique unnamed temporary renamed over the target (vela.save's way).
    local ok, err = pcall(vela._files.write_bytes, path, table.concat(out), "net:save")
    if not ok then error(tostring(err):gsub("^[^:]*:%d+: ", ""), 2) end
    return path
  end

  -- nn.save(path, net [, opt [, extra]]) -> path
  function nn.save(path, net, opt, extra)
    if type(path) ~= "string" then error("nn.save: path must be a string, got " .. type(path), 2) end
    if getmetatable(net) ~= Sequential then
      error("nn.save: net must be an nn.sequential{...}, got " .. (type(net) == "table" and tostring(net) or type(net)), 2)
    end
    if opt ~= nil and (type(opt) ~= "table" or not optimizer_fields[opt.name]) then
      error("nn.save: opt must be an optimizer from optim.sgd{...} or optim.adam{...}, got " .. tostring(opt), 2)
    end
    if extra ~= nil and type(extra) ~= "table" then error("nn.save: extra must be a table, got " .. type(extra), 2) end
    local files, meta = {}, {format = CHECKPOINT_VERSION, layers = {}, state = {}}
    for i, l in ipairs(net.layers) do
      if getmetatable(l) ~= Linear and l.describe then
        -- Another kind of layer: its description (kind and constructor
        -- arguments, for nn.layer_kinds[kind]) and its buffers (running statistics).
        meta.layers[i] = l:describe()
        for name, m in pairs(l.buffers and l:buffers() or {}) do files[i .. "." .. name] = m end
      elseif getmetatable(l) ~= Linear then
        error(fmt("nn.save: layer %d (%s) cannot be saved (it has no describe)", i, tostring(l)), 2)
      else
        check_saveable("nn.save", i, l)
        meta.layers[i] = {kind = "linear", inputs = l.inputs, outputs = l.outputs, activation = l.activation}
      end
    end
    for _, p in ipairs(net:params()) do
      files[p.name] = p[1]
      local numbers = {}
      for k, v in pairs(p[3]) do
        if type(v) == "number" then numbers[k] = v else files[p.name .. "." .. k] = v end
      end
      meta.state[p.name] = numbers
    end
    if opt then
      local o = {name = opt.name}
      for _, k in ipairs(optimizer_fields[opt.name]) do o[k] = opt[k] end
      meta.optimizer = o
    end
    local seed, count = vela._seed_sequence()
    meta.seed_sequence = {seed, count}
    meta.extra = extra or {}
    local ok, text = pcall(manifest.encode, meta, "checkpoint", "nn.save")
    if not ok then error((text:gsub("checkpoint%.extra", "extra")), 2) end
    files.vela_checkpoint = text .. "\n"
    local saved, err = pcall(vela.save, path, files)
    if not saved then error("nn.save: " .. tostring(err):gsub("^[^:]*:%d+: ", ""):gsub("^save: ", ""), 2) end
    return path
  end

  -- Checks a checkpoint's manifest against the shapes of its members, before
  -- anything is allocated. Returns the manifest.
  local function check_checkpoint(path, index, bad)
    local text = index.vela_checkpoint
    if type(text) ~= "string" then bad("is a .npz without a vela_checkpoint member (not a vela checkpoint)") end
    local meta, why
    if text:match("^%s*return") then meta, why = manifest.decode_lua(text)  -- format 1, read as data
    else meta, why = manifest.decode(text) end
    if type(meta) ~= "table" then bad("has a damaged vela_checkpoint member (%s)", tostring(why or "not a table")) end
    if meta.format ~= 1 and meta.format ~= CHECKPOINT_VERSION then
      bad("has checkpoint format %s; this vela reads formats 1 and %d", tostring(meta.format), CHECKPOINT_VERSION)
    end
    if type(meta.layers) ~= "table" or #meta.layers == 0 then bad("holds no layers") end
    local function member(name, rows, cols)
      local m = index[name]
      if type(m) ~= "table" then bad("has no member %s", name) end
      if rows and (m.rows ~= rows or m.cols ~= cols) then
        bad("member %s is %d×%d, expected %d×%d", name, m.rows, m.cols, rows, cols)
      end
      return m
    end
    local prev
    for i, d in ipairs(meta.layers) do
      if type(d) ~= "table" then bad("layer %d is not described", i) end
      if d.kind == "linear" then
        local a, b = d.inputs, d.outputs
        if math.type(a) ~= "integer" or math.type(b) ~= "integer" or a < 1 or b < 1 or a > MAX_ELEMENTS or
          b > MAX_ELEMENTS or a * b > MAX_ELEMENTS then
          bad("layer %d has bad size %s→%s", i, tostring(a), tostring(b))
        end
        if type(d.activation) ~= "string" or not act_code[d.activation] then
          bad("layer %d has an unknown activation '%s'", i, tostring(d.activation))
        end
        if prev and prev ~= a then bad("layer %d takes %d inputs but layer %d gives %d outputs", i, a, i - 1, prev) end
        member(i .. ".w", b, a)
        member(i .. ".b", b, 1)
        prev = b
      elseif type(d.kind) ~= "string" or not nn.layer_kinds[d.kind] then
        bad("layer %d has unknown kind '%s'", i, tostring(d.kind))
      else
        prev = nil  -- its shape is the layer's own; its constructor checks the description
      end
    end
    local o = meta.optimizer
    if o ~= nil then
      if type(o) ~= "table" or not optimizer_fields[o.name] then
        bad("names an unknown optimizer '%s'", type(o) == "table" and tostring(o.name) or tostring(o))
      end
      for _, k in ipairs(optimizer_fields[o.name]) do
        local v = o[k]
        if k == "nesterov" then
          if v ~= nil and type(v) ~= "boolean" then bad("optimizer field %s is %s", k, tostring(v)) end
        elseif v ~= nil and (type(v) ~= "number" or v ~= v) then
          bad("optimizer field %s is %s", k, tostring(v))
        end
      end
      -- Every parameter has the state the optimizer made at its first step.
      for name in pairs(type(meta.state) == "table" and meta.state or {}) do
        local m = index[name]
        for _, key in ipairs(state_needed(o)) do
          local s = index[name .. "." .. key]
          if type(s) ~= "table" then
            bad("has optimizer %s at step %s but no state %s.%s (the optimizer's state is missing: " ..
              "resuming would start it from zero)", o.name, tostring(o.steps), name, key)
          end
          if type(m) ~= "table" or s.rows ~= m.rows or s.cols ~= m.cols then bad("state %s.%s has the wrong shape", name, key) end
        end
      end
    end
    local ss = meta.seed_sequence
    if ss ~= nil and (type(ss) ~= "table" or math.type(ss[1]) ~= "integer" or math.type(ss[2]) ~= "integer") then
      bad("has a bad seed_sequence")
    end
    if meta.extra ~= nil and type(meta.extra) ~= "table" then bad("has a bad extra") end
    return meta
  end

  local function load_checkpoint(path, dev, bad)
    local ok, index = pcall(vela._files.npz_index, path, "nn.load")
    if not ok then bad("is not a vela net or checkpoint (%s)", tostring(index):gsub("^[^:]*:%d+: ", ""):gsub("^nn%.load: '[^']*'%s*:?%s*", "")) end
    local meta = check_checkpoint(path, index, bad)
    local okf, files = pcall(vela.load, path, dev)
    if not okf then bad("cannot be loaded (%s)", tostring(files):gsub("^[^:]*:%d+: ", ""):gsub("^load: '[^']*'%s*:?%s*", "")) end
    local layers = {}
    for i, d in ipairs(meta.layers) do
      if d.kind ~= "linear" then
        -- Another kind of layer: made from its description, then its parameters and buffers.
        local okl, l = pcall(nn.layer_kinds[d.kind], d, dev)
        if not okl then bad("layer %d (%s): %s", i, tostring(d.kind), tostring(l):gsub("^[^:]*:%d+: ", "")) end
        local want = {}
        for _, p in ipairs(l:params()) do want[p.name:match("[^.]*$")] = p[1] end
        for name, m in pairs(l.buffers and l:buffers() or {}) do want[name] = m end
        for name, m in pairs(want) do
          local f = files[i .. "." .. name]
          if not f then bad("has no %d.%s for layer %d (%s)", i, name, i, d.kind) end
          if f.rows ~= m.rows or f.cols ~= m.cols then
            bad("%d.%s is %d×%d, expected %d×%d", i, name, f.rows, f.cols, m.rows, m.cols)
          end
          vela.copy(f, m)
        end
        layers[i] = l
      else
        local l = nn.linear(d.inputs, d.outputs, d.activation, {device = dev, seed = 1})
        vela.copy(files[i .. ".w"], l.w)
        vela.copy(files[i .. ".b"], l.b)
        layers[i] = l
      end
    end
    local net = nn.sequential(layers)
    -- Optimizer state: the matrices named <param>.<key>, the numbers from the manifest.
    for _, p in ipairs(net:params()) do
      local st = p[3]
      local numbers = (type(meta.state) == "table" and meta.state[p.name]) or {}
      for k, v in pairs(type(numbers) == "table" and numbers or {}) do
        if type(k) == "string" and type(v) == "number" then st[k] = v end
      end
      for name, m in pairs(files) do
        local key = type(name) == "string" and name:match("^" .. p.name:gsub("%.", "%%.") .. "%.(%a+)$")
        if key then
          if m.rows ~= p[1].rows or m.cols ~= p[1].cols then bad("state %s has the wrong shape", name) end
          st[key] = m
        end
      end
    end
    local opt
    if meta.optimizer then
      local optim = require "vela.optim"
      local o = meta.optimizer
      local args = {}
      for _, k in ipairs(optimizer_fields[o.name]) do if k ~= "steps" then args[k] = o[k] end end
      local oko, made = pcall(optim[o.name], args)
      if not oko then bad("has a bad optimizer: %s", tostring(made):gsub("^[^:]*:%d+: ", "")) end
      opt = made
      for _, k in ipairs(optimizer_fields[o.name]) do opt[k] = o[k] end
      net.optimizer = opt
    end
    if meta.seed_sequence then vela._seed_sequence(meta.seed_sequence[1], meta.seed_sequence[2]) end
    return net, opt, meta.extra or {}
  end

  -- The VELANN format of net:save: everything the file declares is checked
  -- before anything is allocated; a failure while making the layers releases
  -- those already made.
  local function load_velann(s, dev, bad)
    local made = {}
    local ok, res = pcall(function()
      if #s < 16 or s:sub(1, 8) ~= MAGIC then bad("is not a vela net or checkpoint (no VELANN magic, not a .npz)") end
      local version, nlayers, pos = string.unpack("<I4I4", s, 9)
      if version ~= VERSION then bad("has format version %d; this vela reads version %d", version, VERSION) end
      if nlayers < 1 or nlayers > 1000 then bad("declares %d layers", nlayers) end
      local specs, p = {}, pos
      for i = 1, nlayers do
        if p + 16 > #s + 1 then bad("is truncated in layer %d's header", i) end
        local kind, inputs, outputs, act
        kind, inputs, outputs, act, p = string.unpack("<I4I4I4I4", s, p)
        if kind ~= 1 then bad("layer %d has unknown kind %d (1 = linear)", i, kind) end
        if not act_of_code[act] then bad("layer %d has unknown activation code %d", i, act) end
        -- Each size alone first: two 32-bit sizes multiplied may exceed 2^63.
        if inputs < 1 or outputs < 1 or inputs > MAX_ELEMENTS or outputs > MAX_ELEMENTS or
          inputs * outputs > MAX_ELEMENTS then
          bad("layer %d has bad size %d→%d", i, inputs, outputs)
        end
        if i > 1 and inputs ~= specs[i - 1].outputs then
          bad("layer %d takes %d inputs but layer %d gives %d outputs", i, inputs, i - 1, specs[i - 1].outputs)
        end
        local nw, nb = inputs * outputs, outputs
        if p + 4 * (nw + nb) > #s + 1 then bad("is truncated in layer %d's parameters", i) end
        specs[i] = {inputs = inputs, outputs = outputs, act = act_of_code[act], at = p}
        p = p + 4 * (nw + nb)
      end
      if s:sub(p, p + 7) ~= TRAILER or p + 8 ~= #s + 1 then bad("is truncated or has trailing bytes (no end marker where expected)") end
      local layers = {}
      for i, sp in ipairs(specs) do
        local l = nn.linear(sp.inputs, sp.outputs, sp.act, {device = dev, seed = 1})
        made[#made + 1] = l.w; made[#made + 1] = l.b; made[#made + 1] = l.dw; made[#made + 1] = l.db
        pos = sp.at
        local function read(m, count)
          local vals, k = {}, 0
          while k < count do
            local c = math.min(4096, count - k)
            local chunk = {string.unpack(string.rep("<f", c), s, pos)}
            pos = chunk[c + 1]
            for t = 1, c do vals[k + t] = chunk[t] end
            k = k + c
          end
          local tmp = vela.matrix(m.rows, m.cols, vals, "float32", dev)
          vela.copy(tmp, m)
          tmp:release()
        end
        read(l.w, sp.inputs * sp.outputs)
        read(l.b, sp.outputs)
        layers[i] = l
      end
      return nn.sequential(layers)
    end)
    if not ok then release_all(made) error(res, 0) end
    return res
  end

  -- nn.load(path [, dev]) → a sequential net on dev (default: the current
  -- device); for a checkpoint of nn.save also the optimizer and the extra table.
  function nn.load(path, dev)
    if type(path) ~= "string" then error(fmt("nn.load: path must be a string, got %s", type(path)), 2) end
    local function bad(what, ...) error(fmt("nn.load: '%s' " .. what, path, ...), 0) end
    -- The first bytes say which format; a device, a pipe or a directory is refused unread.
    local okh, head = pcall(vela._files.read_bytes, path, "nn.load", 4)
    if not okh then error((tostring(head):gsub("^[^:]*:%d+: ", "")), 2) end
    dev = dev and resolve(dev, "nn.load") or vela.device()
    local ok, net, opt, extra
    if head == "PK\3\4" then
      ok, net, opt, extra = pcall(load_checkpoint, path, dev, bad)
    else
      ok, net = pcall(function()
        local okr, s = pcall(vela._files.read_bytes, path, "nn.load")
        if not okr then error((tostring(s):gsub("^[^:]*:%d+: ", "")), 0) end
        return load_velann(s, dev, bad)
      end)
    end
    if not ok then
      local msg = tostring(net):gsub("^[^:]*:%d+: ", "")
      if not msg:find("^nn%.load:") then msg = "nn.load: " .. msg end
      error(msg, 2)
    end
    return net, opt, extra
  end

  nn.format_version = VERSION
  nn.checkpoint_version = CHECKPOINT_VERSION

  if vela.doc then
    vela.doc("nn.load", "nn.load(path [, dev]) -> net [, opt, extra]",
      "Loads a checkpoint of nn.save (the net, its optimizer with its state and step count, and extra; the seed sequence of rand/randn is restored) or a net of net:save, onto dev (default: the current device). Training resumes with the same next loss as an uninterrupted run, on any device. The file is data: nothing in it is run, and every size it declares is checked against its members before anything is allocated; checkpoints of older vela (format 1) load too. torch.load.", nn.load)
    vela.doc("nn.save", "nn.save(path, net [, opt [, extra]]) -> path",
      "A checkpoint (.npz, numpy.load reads it; its manifest member vela_checkpoint is JSON): weights, the optimizer's state, hyperparameters and step count, the seed sequence of rand/randn, and extra (a table of numbers, strings, booleans, lists and string-keyed tables: the epoch, the schedule position). Written as vela.save writes. local net, opt, extra = nn.load(path) resumes. torch.save.", nn.save)
    vela.doc("net:save", "net:save(path) -> path",
      "Writes the weights only (the VELANN format; nn.load reads it), as vela.save writes files. nn.save(path, net, opt) keeps the optimizer too.", Sequential.save)
  end
end

return M
