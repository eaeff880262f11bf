-- net:backward against the layer-by-layer backward, bit for bit (used by
-- tests/lua/test_pool_act.lua and test_conv.lua): where a max pool applies the
-- relu′ of the conv before it (Pool:takes_act) the gradients must not move.
local host = dofile("tests/lua/t.lua").host

local function same(a, b, what)
  local A, B = host(a), host(b)
  for i = 1, #B do
    for j = 1, #B[i] do
      -- the same float32 bits, the sign of a zero included
      assert(string.pack("<f", A[i][j]) == string.pack("<f", B[i][j]),
        ("%s: (%d, %d) is %.9g, want %.9g"):format(what, i, j, A[i][j], B[i][j]))
    end
  end
end

-- The gradients of the layer-by-layer backward (each layer's act′ its own),
-- then net:backward's, compared.
return function(net, x, dout, what)
  net:forward(x)
  local d = dout
  for i = #net.layers, 1, -1 do d = net.layers[i]:backward(d, true) end
  local want = {}
  for i, p in ipairs(net:params()) do want[i] = p[2]:clone() end
  net:forward(x)
  net:backward(dout)
  for i, p in ipairs(net:params()) do same(p[2], want[i], what .. ": " .. p.name) end
end
