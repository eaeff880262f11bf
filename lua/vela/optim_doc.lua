-- The shell's help entries of vela.optim (?optim.adam, help(optim.rmsprop)):
-- kept apart so that optim.lua holds the math alone. Called once by optim.lua
-- with the module and its optimizer classes.
local vela = require "vela"

return function(optim, classes)
  local doc = vela.doc
  doc("optim.sgd", "optim.sgd{lr = 0.01, momentum = 0, weight_decay = 0, nesterov = false}",
    "SGD in place: with momentum one fused sgd_step per parameter, else one axpy; opt:step(net) or "
    .. "opt:step(net:params()). An unknown option is an error (Torch7's learningRate gets the hint). "
    .. "Example: opt = optim.sgd{lr = 0.1, momentum = 0.9}. PyTorch torch.optim.SGD.", optim.sgd)
  doc("optim.momentum", "optim.momentum{lr =, momentum = 0.9}",
    "SGD with momentum: v ← μv + g, w ← w − lr·v. Example: opt = optim.momentum{lr = 0.1}.", optim.momentum)
  doc("optim.adam", "optim.adam{lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0}",
    "Adam, state on the parameters' device, one fused adam_step per parameter; betas = {0.9, 0.999} as PyTorch "
    .. "spells it is accepted too; weight_decay is L2 in the gradient (PyTorch Adam). Example: "
    .. "opt = optim.adam{lr = 0.001}. PyTorch torch.optim.Adam.", optim.adam)
  doc("optim.adamw", "optim.adamw{lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01}",
    "AdamW: Adam with decoupled weight decay (w ← (1 − lr·weight_decay)·w before the Adam step), one fused "
    .. "adamw_step per parameter. Example: opt = optim.adamw{lr = 0.001, weight_decay = 0.01}. PyTorch "
    .. "torch.optim.AdamW.", optim.adamw)
  doc("optim.rmsprop", "optim.rmsprop{lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false}",
    "RMSprop: sq ← α·sq + (1 − α)·g², w ← w − lr·g/(√sq + ε); centered divides by √(sq − ḡ²) + ε; momentum "
    .. "keeps a buffer of the steps. One fused rmsprop_step per parameter. Example: opt = optim.rmsprop{lr = 0.001}. "
    .. "PyTorch torch.optim.RMSprop.", optim.rmsprop)
  doc("optim.adagrad", "optim.adagrad{lr = 0.01, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0, eps = 1e-10}",
    "Adagrad: sum ← sum + g², w ← w − lrₜ·g/(√sum + ε), lrₜ = lr/(1 + (t − 1)·lr_decay). One fused adagrad_step "
    .. "per parameter. Example: opt = optim.adagrad{lr = 0.05}. PyTorch torch.optim.Adagrad.", optim.adagrad)
  doc("optim.check", "optim.check(opt [, where]) -> opt",
    "Checks an optimizer's hyperparameters (a NaN lr, a beta of 1, a negative eps are errors naming the field); "
    .. "every step and nn.fit do it before changing anything. Example: optim.check(optim.adam{}).", optim.check)
  local steps = {
    sgd = "One SGD update of every parameter from its gradient (after net:backward), in place, one pass per "
      .. "parameter (sgd_step); momentum state lives beside each parameter.",
    adam = "One Adam update of every parameter in one pass each (adam_step; moments and step count kept per "
      .. "parameter, on its device).",
    adamw = "One AdamW update of every parameter in one pass each (adamw_step; state as adam's).",
    rmsprop = "One RMSprop update of every parameter in one pass each (rmsprop_step).",
    adagrad = "One Adagrad update of every parameter in one pass each (adagrad_step).",
  }
  for name, class in pairs(classes) do
    doc(name .. ":step", "opt:step(net)  |  opt:step(net:params())",
      steps[name] .. " The hyperparameters are checked first: a bad one changes nothing. Example: "
      .. "net:backward(loss:backward()); opt:step(net). PyTorch optimizer.step().", class.step)
  end
  doc("optim.step_lr", "optim.step_lr(lr, every, gamma) -> schedule",
    "lr·gamma^⌊(epoch−1)/every⌋, for nn.fit's schedule option. Example: optim.step_lr(0.1, 5, 0.5)(6) is 0.05.",
    optim.step_lr)
  doc("optim.cosine", "optim.cosine(lr, epochs [, min_lr]) -> schedule",
    "Half a cosine from lr to min_lr over the epochs. Example: optim.cosine(0.1, 10)(10) is 0.", optim.cosine)
end
