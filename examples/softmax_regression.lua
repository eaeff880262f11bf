-- softmax_regression.lua — the one-layer net: 784 inputs straight to 10
-- softmax outputs (multinomial logistic regression), trained with plain SGD
-- (lr 0.5, batch 256) for 5000 iterations, written as an explicit loop over
-- the kernels rather than nn.fit, so every step of training is in view.
-- The loss is read from the device only every 500 iterations.
--
--   build/vela examples/softmax_regression.lua [device=cpu] [iterations=5000] [fashion] [threads=N]
local vela = require "vela"
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"

local opts = require("vela.options").parse(arg,
  "build/vela examples/softmax_regression.lua [device=cpu] [iterations=5000] [fashion] [threads=N]", {
  {"device", nil, "the device to train on (default: the first GPU, else the cpu)"},
  {"iterations", 5000, "SGD steps"},
  {"lr", 0.5, "learning rate"},
  {"batch", 256, "batch size"},
  {"seed", 1, "seed of the weights and the shuffle"},
  {"fashion", false, "Fashion-MNIST instead of MNIST"},
  {"threads", nil, "OpenBLAS threads on the cpu"},
})

local sets = opts.fashion and data.fashion_mnist() or data.mnist()
local net = nn.sequential{nn.linear(784, 10, "identity", {init = "xavier", seed = opts.seed})}
local lossfn = nn.softmax_xent()
local sgd = optim.sgd{lr = opts.lr}
local loader = data.loader(sets.train, opts.batch, {seed = opts.seed})
local loss_sum = vela.zeros(1, opts.batch)       -- per-sample losses, summed on the device

print(("softmax regression on %s: %s, batch %d, lr %g, %d iterations"):format(
  tostring(vela.device()), tostring(net), opts.batch, opts.lr, opts.iterations))
local t0, c0 = vela.clock(), os.clock()
local it, epoch = 0, 0
while it < opts.iterations do
  epoch = epoch + 1
  for x, y, _, n in loader:epoch(epoch) do
    it = it + 1
    local z = net:forward(x)                     -- z  = W·x + b          (10×n)
    local loss = lossfn:forward(z, y)            -- ℓ  = −log softmax(z)[y] (1×n)
    net:backward(lossfn:backward())              -- dW = (softmax(z) − onehot(y))·xᵀ / n, db
    sgd:step(net)                                -- W ← W − lr·dW, b ← b − lr·db
    vela.axpy(1 / n, loss, n == opts.batch and loss_sum or loss_sum:columns(1, n))
    if it % 500 == 0 then
      print(("iteration %5d  epoch %3d  mean loss of the last 500 batches %.4f"):format(
        it, epoch, vela.sum(loss_sum) / 500))
      vela.fill(loss_sum, 0)
    end
    if it == opts.iterations then break end
  end
end
local acc = nn.evaluate(net, sets.test)
local secs, cpu = vela.clock() - t0, os.clock() - c0
print(("test accuracy %.2f%% after %d iterations in %.2f s (%.0f examples/s; %.2f s of processor time)"):format(
  100 * acc, it, secs, it * opts.batch / secs, cpu))
data.show_weights(net, 10, 5)
