-- vela.train: training and evaluation of vela.nn nets: nn.fit (the training
-- loop with its progress bar), nn.evaluate, nn.predict and nn.confusion.
-- vela.nn attaches these to its own table, so scripts call them as nn.fit etc.;
-- the layers and losses they drive stay in lua/vela/nn.lua.
local vela = require "vela"
local options = require "vela.options"

local training = {}

local fmt = string.format

-- Set by training.attach: the nn module (its losses) and the helpers nn.lua
-- allocates its buffers with.
local nn, alloc, buffers, same_device

-- training.attach(nn, {alloc =, buffers =, same_device =}) makes nn.fit,
-- nn.evaluate, nn.predict and nn.confusion these functions (called once, by
-- vela.nn as it loads).
function training.attach(nn_module, helpers)
  nn, alloc, buffers, same_device = nn_module, helpers.alloc, helpers.buffers, helpers.same_device
  nn.fit, nn.evaluate, nn.predict, nn.confusion = training.fit, training.evaluate, training.predict, training.confusion
  return nn
end

local clock = vela.clock or os.clock

local matrix_mt = getmetatable(vela.zeros(0, 0, "float32", "cpu"))

-- The arguments every entry point shares, checked before anything runs: a
-- net, a set (or for nn.predict a matrix of images) on the net's device.
local function check_net_set(fn, net, set, what)
  if type(net) ~= "table" or type(net.forward) ~= "function" then
    error(fmt("%s: net must be a net (nn.sequential{...}), got %s", fn, type(net)), 3)
  end
  local images
  if what == "images" then
    if getmetatable(set) == matrix_mt then images = set
    elseif type(set) == "table" and getmetatable(set.images) == matrix_mt then images = set.images
    else
      error(fmt("%s: images must be a matrix (one sample per column) or a set {images =, n =}, got %s", fn,
        type(set) == "table" and "a table without images" or type(set)), 3)
    end
  elseif type(set) ~= "table" or set.images == nil or set.labels == nil then
    error(fmt("%s: expected a set {images =, labels =, n =}, got %s", fn, type(set)), 3)
  else
    images = set.images
  end
  local ok, dev = pcall(net.device, net)
  if ok and dev and not same_device(images:device(), dev) then
    local d, nd = images:device():name(), dev:name()
    error(fmt("%s: the %s on %s but the net is on %s (move one: %s, data.to(sets, '%s') for a whole data set, "
      .. "or net:to('%s'))", fn, getmetatable(set) == matrix_mt and "images are" or "set is", d, nd,
      getmetatable(set) == matrix_mt and fmt("x:to('%s')", nd) or fmt("set:to('%s')", nd), nd, d), 3)
  end
end

-- Counts correct predictions of one batch on the device, without a host
-- wait: pred ← argmax(z); c ← 1/(1 + 10⁶·(pred − y)²), 1 where right and
-- at most 10⁻⁶ where wrong; acc ← acc + c. The sum rounds to the count.
local Counter = {}
Counter.__index = Counter

local function counter(dev, cap)
  return setmetatable({buf = buffers(dev, {pred = 1, c = 1}), acc = alloc(dev, 1, cap),
                       loss = alloc(dev, 1, cap), cap = cap, views = {}}, Counter)
end

-- Per-batch mean losses between two reads (nn.fit): slot k holds the mean
-- loss of the k-th batch since the last read, written on the device by one
-- mv with a ones vector, so a non-finite loss is traced to its batch when
-- the reads find one, without a host wait per batch.
function Counter:track(every)
  self.every = every
  self.batch_means = alloc(self.acc:device(), 1, every)
  self.ones = vela.fill(alloc(self.acc:device(), self.cap, 1), 1)
  self.slots, self.ones_n = {}, {}
end

function Counter:record(k, loss)
  local n = loss.cols
  local slot = self.slots[k]
  if not slot then slot = self.batch_means:view(1, k, 1, 1); self.slots[k] = slot end
  local ones = self.ones_n[n]
  if not ones then ones = self.ones:view(1, 1, n, 1); self.ones_n[n] = ones end
  vela.mv(1 / n, loss, ones, 0, slot)
end

-- The first batch (1-based, since the last read) whose mean loss is not finite, and that loss.
function Counter:first_bad(count)
  local means = self.batch_means:to("cpu"):totable()[1]
  for k = 1, count do
    local v = means[k]
    if v ~= v or v == math.huge or v == -math.huge then return k, v end
  end
end

-- pred (optional, 1×n): where the batch's predicted classes go (evaluation
-- keeps them for nn.confusion); the count reads them there.
function Counter:add(z, y, loss, pred)
  local n = z.cols
  local b = self.buf:get(n)
  local v = self.views[n]
  if not v then
    v = {acc = n == self.cap and self.acc or self.acc:columns(1, n), loss = n == self.cap and self.loss or self.loss:columns(1, n)}
    self.views[n] = v
  end
  pred = pred or b.pred
  vela.argmax(z, pred)
  vela.sub(pred, y, b.c)
  vela.sqr(b.c)
  vela.linear_frac(b.c, 0, 1, 1e6, 1)
  vela.axpy(1, b.c, v.acc)
  if loss then vela.axpy(1 / n, loss, v.loss) end
end

-- Reads and clears: (number correct, sum of batch-mean losses). The host waits here.
function Counter:read()
  local correct, loss = vela.sum(self.acc), vela.sum(self.loss)
  vela.fill(self.acc, 0)
  vela.fill(self.loss, 0)
  return math.floor(correct + 0.5), loss
end

-- Evaluation mode for the duration of fn (nn.dropout keeps every unit,
-- nn.batchnorm uses its running statistics); the net's mode is put back after.
local function in_eval(net, fn, ...)
  if type(net.train) ~= "function" then return fn(...) end
  local was = net.training ~= false
  net:train(false)
  local res = table.pack(pcall(fn, ...))
  net:train(was)
  if not res[1] then error(res[2], 0) end
  return table.unpack(res, 2, res.n)
end

-- The labels of a set read to the host, each checked to be a class index
-- 1..k, in the kernels' words (core/index_check.hpp): evaluate's count and
-- confusion's table would otherwise take a bad label as a wrong prediction, or
-- round it.
local function host_labels(fn, labels, k)
  local v = labels:to("cpu"):totable()[1]
  for j = 1, #v do
    local x = v[j]
    if x ~= math.floor(x) or x < 1 or x > k then  -- NaN too (NaN ~= NaN)
      error(fmt("%s: labels at position %d is not a class index (an integer in 1..%d)", fn, j, k), 3)
    end
  end
  return v
end

local eval_cache = setmetatable({}, {__mode = "k"})

-- The loader and counter evaluate uses for a set, kept while the set lives.
local function eval_tools(set, batch)
  local t = eval_cache[set]
  local dev = set.images:device()
  if not t or t.batch ~= batch or not same_device(t.dev, dev) then
    local data = require "vela.data"
    local b = math.min(batch, set.n or set.images.cols)
    t = {batch = batch, dev = dev, loader = data.loader(set, b, {shuffle = false}), counter = counter(dev, b)}
    eval_cache[set] = t
  end
  return t
end

-- nn.evaluate(net, set [, {batch = 1000, loss = nn.softmax_xent()}]) →
-- accuracy in [0, 1], and the mean loss when a loss is given.
-- evaluate(..., pred): nn.fit's, which also keeps the predictions (see training._evaluate).
local function evaluate(net, set, opts, pred)
  check_net_set("nn.evaluate", net, set)
  options.check("nn.evaluate", opts, {"batch", "loss"})
  host_labels("nn.evaluate", set.labels, net.outputs)
  return in_eval(net, training._evaluate, net, set, opts, pred)
end

function training.evaluate(net, set, opts) return evaluate(net, set, opts) end

-- pred (nn.fit's, optional): a 1×n matrix that receives the predicted
-- classes of the same pass, for nn.confusion(pred, set).
function training._evaluate(net, set, opts, pred)
  opts = opts or {}
  local t = eval_tools(set, opts.batch or 1000)
  local lossfn = opts.loss
  t.counter:read()
  local first = 1
  for x, y in t.loader:epoch(1) do
    local z = net:forward(x)
    t.counter:add(z, y, lossfn and lossfn:forward(z, y), pred and pred:columns(first, z.cols))
    first = first + z.cols
  end
  local correct, loss = t.counter:read()
  local n = t.loader.set.n
  if not lossfn then return correct / n end  -- one value: the prompt prints no trailing nil
  return correct / n, loss / t.loader.nbatches
end

-- nn.predict(net, images [, batch]) → float 1×n of predicted class indices,
-- 1-based as the labels and nn.confusion, on the device (images: a matrix of
-- one sample per column, or a set).
function training.predict(net, images, batch)
  check_net_set("nn.predict", net, images, "images")
  return in_eval(net, training._predict, net, images, batch)
end

function training._predict(net, images, batch)
  local set = getmetatable(images) == matrix_mt and {images = images, n = images.cols} or images
  set.n = set.n or set.images.cols
  if batch ~= nil and (math.type(batch) ~= "integer" or batch < 1) then
    error(fmt("nn.predict: batch must be a positive integer, got %s", tostring(batch)), 3)
  end
  local data = require "vela.data"
  batch = math.min(batch or 1000, set.n)
  local loader = data.loader({images = set.images, n = set.n}, batch, {shuffle = false})
  local pred = alloc(set.images:device(), 1, set.n)
  local first = 1
  for x, _, _, n in loader:epoch(1) do
    vela.argmax(net:forward(x), pred:columns(first, n))
    first = first + n
  end
  return pred
end

-- nn.confusion(net, set) → counts[true][predicted] (a Lua table) whose
-- printed form is the table with each class's accuracy (it prints nothing
-- itself: the prompt shows it once; a script says print(nn.confusion(...))).
-- nn.confusion(pred, set): the same from predictions already made (a 1×n
-- matrix of class indices: nn.predict's, or nn.fit's hist.test_predictions,
-- which come from the pass that gave the last test accuracy), so the table
-- costs no second pass over the set.
function training.confusion(net, set)
  local pred, k
  if getmetatable(net) == matrix_mt then
    if type(set) ~= "table" or getmetatable(set.labels) ~= matrix_mt then
      error(fmt("nn.confusion: expected a set {images =, labels =, n =} after the predictions, got %s",
        type(set) == "table" and "a table without labels" or type(set)), 2)
    end
    local n = set.n or set.labels.cols
    if net.rows ~= 1 or net.cols ~= n then
      error(fmt("nn.confusion: the predictions are %d×%d but the set has %d samples (expected 1×%d: nn.predict's "
        .. "or nn.fit's hist.test_predictions)", net.rows, net.cols, n, n), 2)
    end
    pred = net:to("cpu"):totable()[1]
    -- the classes: the set's names, else the largest index either side gives
    k = set.classes and #set.classes or 0
    if not set.classes then
      for _, v in ipairs(set.labels:to("cpu"):totable()[1]) do
        if v == v and v == math.floor(v) then k = math.max(k, v) end
      end
    end
    for j = 1, #pred do
      local p = pred[j]
      if p ~= math.floor(p) or p < 1 or (set.classes and p > k) then
        error(fmt("nn.confusion: predictions at position %d is %s, not a class index (an integer in 1..%s)", j,
          tostring(p), set.classes and tostring(k) or "n"), 2)
      end
      if not set.classes then k = math.max(k, p) end
    end
    k = math.tointeger(k) or k
  else
    check_net_set("nn.confusion", net, set)
    k = net.outputs
    pred = training.predict(net, set):to("cpu"):totable()[1]
  end
  local truth = host_labels("nn.confusion", set.labels, k)
  return require("vela.confusion").count(pred, truth, k, set.classes)
end

local function hms(s)
  s = math.max(0, math.floor(s + 0.5))
  if s >= 3600 then return fmt("%d:%02d:%02d", s // 3600, s % 3600 // 60, s % 60) end
  return fmt("%d:%02d", s // 60, s % 60)
end

local function rate(x)
  if x >= 1e6 then return fmt("%.2fM", x / 1e6) end
  if x >= 1e3 then return fmt("%.1fk", x / 1e3) end
  return fmt("%.0f", x)
end

-- nn.fit(net, train, opts) trains and returns a history table.
--   opts.epochs (10), opts.batch (128), opts.optimizer (optim.sgd{lr = 0.05,
--   momentum = 0.9}), opts.loss (nn.softmax_xent() or a name), opts.test (a
--   set, evaluated after each epoch; hist.test_predictions keeps the last
--   evaluation's predicted classes), opts.seed (1: the shuffle), opts.schedule
--   (epoch → lr), opts.every (20: batches between reads of the accuracy and
--   mean loss the bar shows; each batch's loss sum is also read, before its
--   update), opts.progress (true: a progress bar on a
--   terminal, sized to it and erased when the epoch ends; when stdout is not
--   a terminal, one line per epoch and nothing else), opts.start (1: the
--   first epoch's number, for resuming: the shuffle and the schedule of
--   epoch e are the same whatever epoch a run starts at).
-- The history prints as one summary line (plot(hist) draws its loss).
-- History: {loss = {…}, train_accuracy = {…}, test_accuracy = {…},
--   seconds = {…}, cpu_seconds = {…} (processor time of this process, all
--   threads), examples_per_s = {…}, batch_loss = {…}} per epoch
--   (batch_loss: the mean loss of each stretch of `every` batches).
-- The keys nn.fit takes (a key of another module's hook is added here).
training.fit_options = {"epochs", "batch", "optimizer", "loss", "test", "seed", "schedule", "every", "start",
  "progress", "output", "shift", "devices", "dist", "group"}

function training.fit(net, train, opts)
  check_net_set("nn.fit", net, train)
  opts = options.check("nn.fit", opts, training.fit_options)
  if opts.test ~= nil then check_net_set("nn.fit", net, opts.test) end
  local optim = require "vela.optim"
  local data = require "vela.data"
  local epochs, batch, every = opts.epochs or 10, opts.batch or 128, opts.every or 20
  for name, v in pairs{epochs = epochs, batch = batch, every = every} do
    if math.type(v) ~= "integer" or v < 1 then
      error(fmt("nn.fit: %s must be a positive integer, got %s", name, tostring(v)), 2)
    end
  end
  local opt = opts.optimizer or optim.sgd{lr = 0.05, momentum = 0.9}
  local lossfn = opts.loss or nn.softmax_xent()
  if type(lossfn) == "string" then
    local make = nn.losses[lossfn]
    if not make then error(fmt("nn.fit: unknown loss '%s' (softmax_xent or quadratic)", lossfn), 2) end
    lossfn = make()
  end
  -- (the loader first: it checks group, which the shares below use)
  local loader = data.loader(train, batch, {seed = opts.seed or 1, shift = opts.shift, group = opts.group})
  -- {devices = {...}} or {dist = true}: the step of lua/vela/parallel.lua (nil otherwise).
  local par = require("vela.parallel").fit_step(net, train, opts)
  local progress = opts.progress ~= false and not (par and par.quiet)
  local out = opts.output or io.stdout
  -- A live bar only on a terminal; a log gets the epoch lines alone. In a
  -- notebook (vela._progress, src/jupyter) the bar is one line updated in place.
  local live = out == io.stdout and vela._progress or nil
  local columns = live and 100 or out == io.stdout and vela.terminal_width and vela.terminal_width() or nil
  local first = opts.start or 1
  if math.type(first) ~= "integer" or first < 1 or first > epochs then
    error(fmt("nn.fit: start must be an epoch number in 1..%d (epochs), got %s", epochs, tostring(first)), 2)
  end
  local dev = train.images:device()
  local count = counter(dev, batch)
  count:track(every)
  net.optimizer = opt
  local hist = setmetatable({loss = {}, train_accuracy = {}, test_accuracy = {}, seconds = {},
                             examples_per_s = {}, batch_loss = {}, lr = {}, cpu_seconds = {}, first = first,
                             last = epochs}, training.History)
  local nb, n_total = loader.nbatches, loader.set.n
  local test_pred  -- 1×n: the predicted classes of the last evaluation of opts.test

  -- One training step; run under pcall, so a bad label stops fit naming its batch.
  -- The loss is checked before the update (one host wait per batch, after the
  -- backward pass is queued, so that the device runs it meanwhile): a batch
  -- whose loss is not finite stops fit with the weights and the optimizer's
  -- state as they were before it (the backward writes gradients only).
  local function check_loss(loss)
    local l = vela.sum(loss)
    if l ~= l or l == math.huge or l == -math.huge then error({bad_loss = l / loss.cols}) end
  end
  local step  -- the optimizer's step for this epoch (optim._epoch_stepper: the first checked, the rest not)
  local rest = not par and dev:name() == "cpu" and optim._steps_in_product(opt) and getmetatable(net) == nn.Sequential
    and net:_steps_left() or nil  -- not nil: each nn.linear's W steps in its dW product (Sequential:_steps_left)
  local in_product  -- this epoch's first step is done: the later ones update W in its product
  local function train_step(x, y, k)
    local z, loss
    if par then
      z, y, loss = par:step(x, y, lossfn, opt, check_loss)  -- y: this rank's share
    elseif in_product then
      z = net:forward(x)
      loss = lossfn:forward(z, y)
      check_loss(loss)
      net:_backward(lossfn:backward(), opt)
      step(rest)
    else
      z = net:forward(x)
      loss = lossfn:forward(z, y)
      net:backward(lossfn:backward())
      check_loss(loss)
      step(net:params())
      in_product = rest ~= nil
    end
    count:add(z, y, loss)
    count:record(k, loss)
    return z
  end
  -- A label or index the kernels refused (core/index_check.hpp): on cpu the
  -- step itself raises; on a Vulkan device the next read does (check_loss's,
  -- in the same batch), and the batch is the first since the last read whose
  -- mean loss is NaN (the kernel wrote NaN there), else this one. Other errors
  -- go on unchanged.
  local function stopped(err, epoch, b, k)
    local words = type(err) == "string" and err:match("([%w_]+: [%w_]+ at position %d+ is not [^;]-%(an integer in 1%.%.%d+%))")
    if not words then error(err, 0) end
    local ok, bad = pcall(count.first_bad, count, k)
    if progress then out:write("\n"); out:flush() end
    return fmt("nn.fit: epoch %d, batch %d: %s; training stopped after batch %d", epoch,
      b - k + ((ok and bad) or k), words, b)
  end

  for epoch = first, epochs do
    if type(net.train) == "function" then net:train() end  -- training mode (nn.evaluate switched it off and back)
    if opts.schedule then opt.lr = opts.schedule(epoch) end
    -- a NaN lr (from the schedule too) stops here, nothing changed
    if type(opt) == "table" and optim.specs[rawget(opt, "name") or ""] then
      optim.check(opt, fmt("nn.fit: epoch %d: the optimizer", epoch))
    end
    hist.lr[epoch] = opt.lr
    step, in_product = optim._epoch_stepper(opt, rest), false
    count:read()
    local t0, c0 = clock(), os.clock()
    local seen, seen_at_read, correct_sum, loss_sum, read_batches = 0, 0, 0, 0, 0
    local shown_loss, shown_acc = 0 / 0, 0 / 0
    for x, y, b, n in loader:epoch(epoch) do
      local ok, z = pcall(train_step, x, y, b - read_batches)
      if not ok and type(z) == "table" and z.bad_loss then
        if progress then out:write("\n"); out:flush() end
        error(fmt("nn.fit: the loss of epoch %d, batch %d is %s (a diverging learning rate, or data that is not "
          .. "finite); training stopped before its update: the weights and the optimizer's state are those after "
          .. "batch %d", epoch, b, z.bad_loss ~= z.bad_loss and "nan" or tostring(z.bad_loss), b - 1), 2)
      end
      if not ok then error(stopped(z, epoch, b, b - read_batches), 2) end
      seen = seen + z.cols  -- this rank's share under dist
      if b % every == 0 or b == nb then
        local k = b - read_batches
        local ok2, correct, l = pcall(count.read, count)  -- the bar's read, every `every` batches
        if not ok2 then error(stopped(correct, epoch, b, k), 2) end
        if l ~= l or l == math.huge or l == -math.huge then
          local first, v = count:first_bad(k)
          if progress then out:write("\n"); out:flush() end
          error(fmt("nn.fit: the loss of epoch %d, batch %d is %s (a diverging learning rate, or data that is not "
            .. "finite); training stopped after batch %d", epoch, read_batches + (first or k),
            (v or l) ~= (v or l) and "nan" or tostring(v or l), b), 2)
        end
        correct_sum, loss_sum, read_batches = correct_sum + correct, loss_sum + l, b
        shown_loss, shown_acc = l / k, correct / (seen - seen_at_read)
        seen_at_read = seen
        hist.batch_loss[#hist.batch_loss + 1] = shown_loss
        if progress and columns then
          local dt = clock() - t0
          local head = fmt("epoch %d/%d [", epoch, epochs)
          local tail = fmt("] %d/%d  loss %.4f  acc %5.1f%%  %s ex/s  ETA %s", b, nb, shown_loss,
            100 * shown_acc, rate(seen / math.max(dt, 1e-9)), hms(dt / b * (nb - b)))
          -- The bar takes what the terminal has left (up to 30 cells); the
          -- line never reaches the last column, so it never wraps.
          local width = math.min(30, columns - 1 - #head - #tail)
          local line
          if width >= 5 then
            local done = math.floor(width * b / nb)
            line = head .. string.rep("=", done) .. string.rep(" ", width - done) .. tail
          else
            line = (fmt("epoch %d/%d %d/%d  loss %.4f", epoch, epochs, b, nb, shown_loss)):sub(1, columns - 1)
          end
          if live then live(line) else out:write("\r", line, "\27[K"); out:flush() end
        end
      end
    end
    local dt = clock() - t0
    hist.seconds[epoch] = dt
    hist.cpu_seconds[epoch] = os.clock() - c0
    hist.examples_per_s[epoch] = n_total / dt
    hist.loss[epoch] = loss_sum / nb
    hist.train_accuracy[epoch] = correct_sum / seen
    local line = fmt("epoch %d/%d  loss %.4f  train %.2f%%", epoch, epochs, hist.loss[epoch],
      100 * hist.train_accuracy[epoch])
    if opts.test then
      -- one pass gives the accuracy and the predictions nn.confusion(hist.test_predictions, test) tabulates
      test_pred = test_pred or alloc(opts.test.images:device(), 1, opts.test.n or opts.test.images.cols)
      hist.test_accuracy[epoch] = evaluate(net, opts.test, nil, test_pred)
      hist.test_predictions = test_pred
      line = line .. fmt("  test %.2f%%", 100 * hist.test_accuracy[epoch])
    end
    line = line .. fmt("  %.2f s  %s ex/s", dt, rate(hist.examples_per_s[epoch]))
    if progress then
      -- On a terminal the epoch line replaces the bar (erased to the line's end: no residue).
      if live then live(line, true)
      else out:write(columns and "\r" or "", line, columns and "\27[K\n" or "\n"); out:flush() end
    end
  end
  return hist
end

-- The history of nn.fit prints as one line: epochs, last loss and accuracies, time.
training.History = {__tostring = function(h)
  local e = h.last
  local s = fmt("history of %d epoch%s (%d..%d): loss %.4f, train %.2f%%", e - h.first + 1,
    e == h.first and "" or "s", h.first, e, h.loss[e] or 0 / 0, 100 * (h.train_accuracy[e] or 0 / 0))
  if h.test_accuracy[e] then s = s .. fmt(", test %.2f%%", 100 * h.test_accuracy[e]) end
  local total = 0
  for _, t in pairs(h.seconds) do total = total + t end
  -- two lines, each within 80 columns
  return s .. fmt(", %.2f s\n(fields loss, train_accuracy, test_accuracy, seconds, batch_loss, lr)", total)
end}

-- help(nn.fit), ?nn.evaluate: documentation for the shell's help.
if vela.doc then
  vela.doc("nn.fit", "nn.fit(net, train, {epochs = 10, batch = 128, optimizer =, loss =, test =, seed =, schedule =, every = 20, start = 1, progress = true, shift = 0, group = 1, devices =, dist = false})",
    "Trains, with a progress bar on a terminal (one line per epoch when stdout is redirected); the loss is read from the device every `every` batches. Returns the history {loss, train_accuracy, test_accuracy, seconds, examples_per_s, batch_loss, lr}, indexed by epoch, which prints as one summary line; with test =, hist.test_predictions is the 1×n of predicted classes from the pass that gave the last test accuracy (nn.confusion(hist.test_predictions, test) tabulates it without a second pass). start = e resumes at epoch e (same shuffle and schedule as an uninterrupted run). shift = 2: on-device augmentation (see data.loader). group = T shuffles runs of T columns as one (sequences of T tokens, for nets with context = T; see data.loader), and devices =/dist = share a batch in whole runs. Trains in training mode (net:train(): nn.dropout drops, nn.batchnorm uses batch statistics); the test set is evaluated in evaluation mode. devices = {'cpu', 'vulkan:0'} trains data parallel over those devices (parallel.replicate); dist = true under mpirun shards each batch by rank and averages the gradients (vela.dist), printing from rank 0 only (the train loss and accuracy shown are rank 0's share). Each batch's loss is read before its update (one host wait per batch, while the device runs the backward pass): a label that is not a class index stops it naming the epoch, the batch and the position, on every device, and a loss that is not finite stops it before that batch's update.", training.fit)
  vela.doc("nn.evaluate", "nn.evaluate(net, set [, {batch =, loss =}]) -> accuracy [, mean loss]",
    "The fraction of a set classified right, counted on the device. Every label must be a class index 1..outputs (checked: an error names the first bad position).", training.evaluate)
  vela.doc("nn.predict", "nn.predict(net, images [, batch = 1000]) -> 1×n",
    "Predicted class indices, 1-based as the labels and nn.confusion (argmax of the net's output), in a 1×n matrix on the device; images a matrix (one sample per column) or a set. nn.predict(net, mnist.test.images:columns(1, 5)) -> 1×5. Runs in evaluation mode. PyTorch's net(x).argmax(0) + 1.", training.predict)
  vela.doc("nn.confusion", "nn.confusion(net, set) -> counts  |  nn.confusion(pred, set) -> counts",
    "counts[true][predicted], which prints as the confusion table (rows the true class, columns the predicted one) with each class's accuracy. With a net it predicts the set (one pass); with pred, a 1×n matrix of class indices (nn.predict's, or nn.fit's hist.test_predictions), it only counts, so after nn.fit{test = set} the table and the final accuracy come from the same pass. The classes: net.outputs, or #set.classes, else the largest index in the labels and predictions. In a script: print(nn.confusion(hist.test_predictions, mnist.test)).", training.confusion)
end

return training
