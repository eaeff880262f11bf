-- The shell's help entries of vela.nn's layers, nets and losses (?nn.linear,
-- help(nn.conv2d), ?net:to): kept apart so that the layer files hold the math
-- alone. Called once by nn.lua, after every layer file has attached, with the
-- module and the classes whose methods are documented.
local vela = require "vela"

return function(nn, classes)
  local doc = vela.doc

  -- vela.nn (nn.lua)
  doc("nn.linear", "nn.linear(inputs, outputs [, activation] [, {seed =, init = 'he'|'xavier', device =, f =, df =}])",
    "A fully connected layer a = act(W·x + b); activation one of vela.activations (identity, relu, sigmoid, tanh, elu, gelu, leaky_relu, softplus), or your own: {f = swish, df = swish_prime}, kernels made by map (f(z, a): a ← f(z); df(z, d): d ← f′(z)). layer:forward(x), layer:backward(da [, need_dx]) (δ = da ∘ act′ in one kernel, <act>_backward).", nn.linear)
  doc("nn.sequential", "nn.sequential{layer, ...}",
    "A net of layers in order: net:forward(x), net:backward(dout), net:params(), net:to(dev), net:save(path).", nn.sequential)
  doc("nn.softmax_xent", "nn.softmax_xent()",
    "Softmax + cross-entropy loss (one fused kernel): loss:forward(z, labels) gives per-sample losses (1×n) on the device, loss:backward() the gradient of their mean.", nn.softmax_xent)
  doc("nn.quadratic", "nn.quadratic()",
    "Half the squared error against one-hot targets: loss:forward(a, labels), loss:backward().", nn.quadratic)
  doc("layer:forward", "layer:forward(x) -> a",
    "x (inputs×n, one sample per column) → a = act(W·x + b), one fused dense kernel; a is the layer's buffer, reused by the next forward.", classes.Linear.forward)
  doc("layer:backward", "layer:backward(da [, need_dx]) -> dx",
    "da = ∂L/∂a → fills layer.dw and layer.db; returns dx = ∂L/∂x (none when need_dx is false). After a forward.", classes.Linear.backward)
  doc("layer:params", "layer:params() -> {{w, dw, state, name = 'w'}, ...}",
    "The parameters with their gradients and optimizer state: what opt:step takes.", classes.Linear.params)
  doc("layer:to", "layer:to(dev) -> layer",
    "Moves the parameters and optimizer state to dev (a device or a spec such as 'vulkan:0').", classes.Linear.to)
  doc("layer:train", "layer:train([on = true]) -> layer",
    "Training mode (layer:train(false): evaluation mode) of a layer that has modes (nn.dropout, nn.batchnorm, nn.conv2d: in evaluation it keeps no windows for a backward, the same numbers with less memory); "
    .. "any other layer is left as it is. net:train sets every layer's. Example: d = nn.dropout(0.5):train()",
    classes.Layer.train)
  doc("layer:eval", "layer:eval() -> layer",
    "Evaluation mode: layer:train(false). Example: bn = nn.batchnorm(16):eval()", classes.Layer.eval)
  doc("net:forward", "net:forward(x) -> output",
    "x (inputs×n, one sample per column) through every layer; PyTorch's net(x), Torch7's net:forward(x).", classes.Sequential.forward)
  doc("net:backward", "net:backward(dout)",
    "dout = ∂L/∂output (the loss's backward()) through every layer, filling each layer's dw and db. Torch7 net:backward(x, dout); PyTorch loss.backward().", classes.Sequential.backward)
  doc("net:params", "net:params() -> {{w, dw, state, name = '1.w'}, ...}",
    "Every layer's parameters, gradients and optimizer state, for opt:step(net:params()) (opt:step(net) does the same).", classes.Sequential.params)
  doc("net:to", "net:to(dev) -> net",
    "Moves parameters, gradients and optimizer state to dev mid-session; the same net object carries on there.", classes.Sequential.to)
  doc("net:device", "net:device() -> device", "The device holding the net's parameters.", classes.Sequential.device)
  doc("net:train", "net:train([on = true]) -> net",
    "Training mode (net:train(false): evaluation mode) for every layer that has one: nn.dropout drops units only in training, nn.batchnorm uses the batch's statistics in training and its running ones in evaluation, nn.conv2d keeps no windows for a backward in evaluation (less memory, the same numbers). nn.fit trains in training mode; nn.evaluate and nn.predict run in evaluation mode and put the mode back. PyTorch's net.train().", classes.Sequential.train)
  doc("net:eval", "net:eval() -> net",
    "Evaluation mode: net:train(false). PyTorch's net.eval(), Torch7's net:evaluate().", classes.Sequential.eval)
  doc("net:nparams", "net:nparams() -> count", "The number of parameters (weights and biases).", classes.Sequential.nparams)
  doc("softmax_xent:forward", "loss:forward(z, labels) -> 1×n",
    "Per-sample softmax cross-entropy of logits z (k×n) against 1-based labels (1×n), on the device; nn.mean(loss) reads the mean.", classes.Xent.forward)
  doc("softmax_xent:backward", "loss:backward() -> dz",
    "∂(mean loss)/∂z = (softmax(z) − onehot(labels))/n, from the last forward.", classes.Xent.backward)
  doc("quadratic:forward", "loss:forward(a, labels) -> 1×n",
    "Per-sample ½‖a − onehot(labels)‖² on the device.", classes.Quad.forward)
  doc("quadratic:backward", "loss:backward() -> da",
    "∂(mean loss)/∂a = (a − onehot(labels))/n, from the last forward.", classes.Quad.backward)
  doc("nn.mean", "nn.mean(loss) -> number",
    "The mean of a per-sample loss vector, read to the host.", nn.mean)

  -- nn.conv2d (conv.lua)
  doc("nn.conv2d", "nn.conv2d(in_ch, out_ch, k [, {stride = 1, pad = 0, activation = 'identity', input = {h =, w =}, seed =, init =, device =}])",
    "A 2-D convolution a = act(W ⋆ x + b) over images in vela's layout (C·H·W rows, one image per column; see ?layout): im2col, one mm and to_images with the bias; backward by mm and col2im (on the cpu a stride-1 unpadded layer runs conv, conv_wgrad and conv_dgrad instead, without windows, where the CPU has AVX2; a one-channel layer conv and conv_wgrad everywhere). k, stride and pad are numbers or {height, width}. W is out_ch × (in_ch·k·k), He-initialized for relu. The first image layer of a net is told its image size (input = {h = 28, w = 28}, or 28 for square images); nn.sequential gives the others theirs. layer.image is the {c, h, w} it gives. Example: nn.sequential{nn.conv2d(1, 8, 5, {activation = 'relu', input = 28}), nn.maxpool2d(2), nn.flatten(), nn.linear(8 * 12 * 12, 10)}. PyTorch nn.Conv2d, Torch7 SpatialConvolutionMM.",
    nn.conv2d)

  -- pooling (pool.lua)
  doc("nn.maxpool2d", "nn.maxpool2d(k [, stride = k] [, {pad = 0, input =}])",
    "Max pooling over k×k windows (k, stride, pad numbers or {height, width}; pad at most k/2) of each channel; backward routes each gradient to the pixel that won (the kernel's idx); in net:backward a pool with stride = k and no padding after a relu nn.conv2d applies the conv's relu′ on its own outputs (the same gradients, a smaller pass). Its channels and image size come from the layer before it in nn.sequential. PyTorch nn.MaxPool2d.",
    nn.maxpool2d)
  doc("nn.avgpool2d", "nn.avgpool2d(k [, stride = k] [, {pad = 0, input =}])",
    "Average pooling over k×k windows of each channel (padding counts as zeros: the sum divided by k·k). PyTorch nn.AvgPool2d.",
    nn.avgpool2d)
  doc("nn.flatten", "nn.flatten()",
    "Ends the image layers: the images are already one column of C·H·W rows per sample, so it moves nothing (forward returns its input); the layers after it see C·H·W features. PyTorch nn.Flatten.",
    nn.flatten)

  -- regularization (layers_regularize.lua)
  doc("nn.dropout", "nn.dropout(p [, {seed =, device =}])",
    "Inverted dropout: in training (net:train()) each unit of each sample is zeroed with probability p and the rest scaled by 1/(1 − p), the mask drawn by Philox from (seed, step) with step the layer's count of training forwards, so a seeded run has the same masks on every device (and a checkpoint resumes them); in evaluation (net:eval(), nn.evaluate) the layer passes x through. Its size is its neighbour's in nn.sequential. Example: nn.sequential{nn.linear(784, 256, 'relu'), nn.dropout(0.5), nn.linear(256, 10)}",
    nn.dropout)
  doc("nn.batchnorm", "nn.batchnorm(features [, {channels =, momentum = 0.1, eps = 1e-5, device =}])",
    "Batch normalization: y = γ·(x − μ)/√(σ² + ε) + β per feature (each row; with channels = C each channel of C·H·W image rows, over H·W pixels and the batch). Training uses the batch's μ, σ² and updates the running ones (running ← (1 − momentum)·running + momentum·batch, σ² unbiased); evaluation uses the running ones. Parameters γ (ones), β (zeros); checkpoints keep the running statistics. Example: nn.sequential{nn.linear(784, 256), nn.batchnorm(256), nn.linear(256, 10)}",
    nn.batchnorm)

  -- sequence layers (sequence.lua)
  doc("nn.layernorm", "nn.layernorm(dim [, {eps = 1e-5, device =}])",
    "Layer norm of each token (column; docs/sequence.md): y = γ ∘ (x − μ)/√(σ² + ε) + β with μ, σ² the column's mean and biased variance over its dim rows. Parameters γ (ones), β (zeros); the same in training and evaluation. Example: nn.sequential{nn.embedding(65, 32), nn.layernorm(32), nn.linear(32, 65)}",
    nn.layernorm)
  doc("nn.embedding", "nn.embedding(vocab, dim [, {seed =, device =}])",
    "Token embedding: the input is 1×n token numbers (1..vocab, checked), the output dim×n, column j the column idx(j) of E (dim×vocab, N(0, 1) at first); backward sums dy into dE per token in a fixed order (the same bits every run). Example: nn.embedding(65, 32):forward(from{{1, 5, 5}})",
    nn.embedding)
  doc("nn.posembed", "nn.posembed(context, dim [, {seed =, device =}])",
    "Learned positional embedding (docs/sequence.md): y(:, j) = x(:, j) + P(:, 1 + (j − 1) mod T), T = context, so each of the n/T sequences of a dim×n input gets the same dim×T table P (N(0, 0.01) at first); backward sums dy over the sequences into dP and passes dy on. Example: nn.sequential{nn.embedding(65, 32), nn.posembed(8, 32)}:forward(from{{1, 2, 3, 4, 5, 6, 7, 8}})",
    nn.posembed)
  doc("nn.block", "nn.block(dim, heads [, {causal = true, context =, mlp = 4·dim, eps = 1e-5, seed =, device =}])",
    "A pre-norm transformer block (docs/sequence.md): h = x + attn(ln1(x)), y = h + fc2(gelu(fc1(ln2(h)))), made of nn.layernorm, nn.attention (causal, context = T cuts n tokens into n/T sequences) and nn.linear (dim → mlp with gelu, mlp → dim); backward passes each residual's gradient both ways. Parameters ln1_gamma, ln1_beta, attn_Wqkv, attn_Wo, ln2_gamma, ln2_beta, fc1_w, fc1_b, fc2_w, fc2_b. Example: nn.block(8, 2, {context = 4, mlp = 16}):forward(randn(8, 12))",
    nn.block)
end
