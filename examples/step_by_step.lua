-- step_by_step.lua — the tutorial path, one kernel-level step at a time:
-- load MNIST, take one batch, make a layer, run it forward, look at the
-- loss, run backward, take one SGD step by hand with axpy and watch the loss
-- fall; then build the two-layer net, train a few hundred steps, move the
-- net (parameters, gradients and optimizer state) to vulkan:0 mid-session
-- and carry on there from where the cpu stopped; and back again.
-- Every line here can be typed or pasted at the vela prompt instead: the
-- names are globals (a `local` typed at the prompt ends with its line), so
-- who() lists them as you go.
--
--   build/vela examples/step_by_step.lua [device=vulkan:0]
vela = require "vela"
nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"
opts = require("vela.options").parse(arg, "build/vela examples/step_by_step.lua [device=vulkan:0]", {
  {"device", nil, "the device the net moves to in step 9 (default vulkan:0; the first steps run on the cpu)"},
})
target = opts.device or "vulkan:0"

function say(...) print("\n-- " .. string.format(...)) end

say("1. the data, on the cpu: uint8 images, one per column, and 1-based labels")
vela.device("cpu")
mnist = data.mnist()
print(mnist.train.images)
print(mnist.train.labels)
data.show(mnist.train, 2)

say("2. one batch of 64, gathered on the device and scaled to [0, 1]")
loader = data.loader(mnist.train, 64, {seed = 1})
x, y = loader:epoch(1)()
print(x)

say("3. a layer: W is 10×784 (Xavier-initialised by seed), b is 10×1 zeros")
layer = nn.linear(784, 10, "identity", {seed = 42})
print(layer, layer.w)

say("4. forward: z = W·x + b, one fused dense kernel")
z = layer:forward(x)
print(z)

say("5. the loss: softmax cross-entropy, per sample on the device; its mean read to the host")
lossfn = nn.softmax_xent()
loss = lossfn:forward(z, y)
before = nn.mean(loss)
print(("mean loss %.4f (chance level is log 10 = %.4f)"):format(before, math.log(10)))

say("6. backward: dz = (softmax(z) − onehot(y))/n, then dW = dz·xᵀ and db = dz·1")
layer:backward(lossfn:backward(), false)
print(("‖dW‖ = %.4f   ‖db‖ = %.4f"):format(vela.nrm2(layer.dw), vela.nrm2(layer.db)))

say("7. one SGD step by hand: W ← W − 0.5·dW, b ← b − 0.5·db (axpy), and the loss again")
vela.axpy(-0.5, layer.dw, layer.w)
vela.axpy(-0.5, layer.db, layer.b)
after = nn.mean(lossfn:forward(layer:forward(x), y))
print(("mean loss %.4f → %.4f on the same batch"):format(before, after))

say("8. the 784-256-10 net and an optimizer; 300 steps on the cpu")
net = nn.sequential{nn.linear(784, 256, "relu", {seed = 1}), nn.linear(256, 10, nil, {seed = 2})}
opt = optim.sgd{lr = 0.05, momentum = 0.9}
function train(steps, set, epoch0)
  local done, e, sum, count = 0, epoch0, 0, 0
  local ld = data.loader(set, 128, {seed = 1})
  while done < steps do
    e = e + 1
    for bx, by in ld:epoch(e) do
      local l = lossfn:forward(net:forward(bx), by)
      net:backward(lossfn:backward())
      opt:step(net)
      done = done + 1
      if done > steps - 20 then sum, count = sum + vela.sum(l) / #l, count + 1 end
      if done == steps then break end
    end
  end
  return sum / count, e
end
l_cpu, epoch = train(300, mnist.train, 0)
print(("mean loss of the last 20 steps %.4f; test accuracy %.2f%%"):format(l_cpu, 100 * nn.evaluate(net, mnist.test)))

say("9. move the net to %s mid-session: parameters, gradients and momentum go along", target)
ok, err = pcall(vela.device, target)
if not ok then
  print("no " .. target .. " here (" .. tostring(err):match("^[^\n]*") .. "); carrying on on the cpu")
  target = "cpu"
  vela.device("cpu")
end
net:to(target)
print(net)
print("the data must move too; mixing devices is an error naming the layer:")
print(select(2, pcall(net.forward, net, x)))
there = data.to(mnist, target)
print(("test accuracy on %s, same weights: %.2f%%"):format(target, 100 * nn.evaluate(net, there.test)))

say("10. carry on training there: 300 more steps")
before_stats = vela.stats()
l_gpu = train(300, there.train, epoch)
after_stats = vela.stats()
print(("mean loss of the last 20 steps %.4f; test accuracy %.2f%%"):format(l_gpu, 100 * nn.evaluate(net, there.test)))
print(("%d kernels dispatched in %d submissions for 300 steps"):format(
  after_stats.dispatches - before_stats.dispatches, after_stats.submissions - before_stats.submissions))

say("11. and back to the cpu, where it still works")
vela.device("cpu")
net:to("cpu")
print(("test accuracy on cpu: %.2f%%"):format(100 * nn.evaluate(net, mnist.test)))
