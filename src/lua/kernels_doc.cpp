// The ?name help of every kernel of the kernel table (kernels.cpp), one doc()
// per Lua function; the elementwise rows come from the op table (core/ops.def).
#include <string>

#include "core/ops.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

void document_kernels() {
    doc({
        {"mm", "mm(alpha, a, b, beta, c) -> c  |  mm(a, b, c)",
         "c ← α·a·b + β·c (GEMM); a m×k, b k×n, c m×n; a and b may be :t() views. The 3-argument form is "
         "α = 1, β = 0. c must not overlap a or b. Torch7/PyTorch: addmm (c:addmm(β, c, α, a, b)); Neanderthal mm!."},
        {"mv", "mv(alpha, a, x, beta, y) -> y  |  mv(a, x, y)",
         "y ← α·a·x + β·y (GEMV); a m×n (or a :t() view), x an n-vector, y an m-vector; y must not overlap a or x. "
         "Torch7/PyTorch: addmv."},
        {"rk", "rk(alpha, x, y, a) -> a  |  rk(x, y, a)",
         "a ← α·x·yᵀ + a (rank-1 update, GER); x an m-vector, y an n-vector, a m×n, not overlapping x or y. "
         "Torch7/PyTorch: addr. With y a ones vector it broadcasts a bias over a batch."},
        {"axpy", "axpy(alpha, x, y) -> y",
         "y ← α·x + y; x and y vectors or whole matrices of one shape. "
         "Torch7/PyTorch: y:add(α, x) / y.add_(x, alpha=α)."},
        {"axpby", "axpby(alpha, x, beta, y) -> y",
         "y ← α·x + β·y; vectors or matrices of one shape. "
         "PyTorch: y.mul_(β).add_(x, alpha=α)."},
        {"scal", "scal(alpha, x) -> x",
         "x ← α·x, on a vector or a whole matrix. Torch7/PyTorch: x:mul(α) / mul_."},
        {"copy", "copy(x, y) -> y",
         "y ← x, same shape (uint8 → float32 converts). Torch7/PyTorch: y:copy(x)."},
        {"swap", "swap(x, y) -> y",
         "Exchanges the contents of x and y (same shape)."},
        {"fill", "fill(x, v) -> x",
         "Sets every element of x to v. Torch7/PyTorch: x:fill(v) / fill_."},
        {"dot", "dot(x, y) -> number",
         "Σ xᵢ·yᵢ over two vectors (or matrices) of the same size; the host waits. "
         "torch.dot."},
        {"nrm2", "nrm2(x) -> number",
         "The Euclidean norm ‖x‖₂ of a vector or matrix (Frobenius); the host waits. "
         "torch.norm."},
        {"asum", "asum(x) -> number",
         "Σ |xᵢ|; the host waits. PyTorch x.abs().sum()."},
        {"sum", "sum(x) -> number",
         "Σ xᵢ over every element; the host waits. torch.sum."},
        {"imax", "imax(x) -> index",
         "The 1-based (column-major) index of the element of largest |x|, the first on "
         "ties; the host waits. BLAS i?amax."},
    });
    // The op table's rows (core/ops.def): the function, its derivative and its fused backward step.
    for (uint8_t i = 0; i < uint8_t(Unary::count_); i++) {
        const Unary op = Unary(i);
        const std::string name = unary_name(op);
        const int np = unary_params(op);
        if (np > 0) {
            static const char* const pn[] = {"a", "b", "c", "d"};
            std::string ps;
            for (int k = 0; k < np; k++) ps += std::string(", ") + pn[k];
            doc(name.c_str(), (name + "(x, [y" + ps + "]) -> y").c_str(),
                ("y ← " + std::string(unary_formula(op)) +
                 " elementwise; into x when y is absent. With c = 0, d = 1 it is an affine map a·x + b. "
                 "Neanderthal linear-frac!.")
                    .c_str());
        } else if (name.size() < 6 || name.compare(name.size() - 6, 6, "_prime") != 0) {
            Act act;
            bool is_act = parse_act(name, act);
            doc(name.c_str(), (name + "(x [, y]) -> y").c_str(),
                ("y ← " + std::string(unary_formula(op)) + " elementwise; into x when y is absent: " + name +
                 "(x) REWRITES x (clone(x) first, or " + name + "(x, y), keeps it). Same shape." +
                 (is_act ? " An activation: nn.linear(m, n, \"" + name + "\") and dense(w, x, b, y, \"" + name +
                               "\"); derivative " + name + "_prime, fused backward step " + name + "_backward."
                         : std::string()))
                    .c_str());
        }
    }
    for (uint8_t i = 1; i < uint8_t(Act::count_); i++) {
        const Act act = Act(i);
        const std::string name = act_name(act);
        const bool z = act_prime_from_z(act);
        const std::string from = z ? "z" : "a";
        doc((name + "_prime").c_str(), (name + "_prime(" + from + " [, y]) -> y").c_str(),
            ("y ← " + name + "′, the derivative of " + name + " taken from " +
             (z ? "the pre-activation z (not from a = " + name + "(z))"
                : "the ACTIVATION a = " + name + "(z) (not from z)") +
             "; into " + from + " when y is absent. The backward step in one kernel: " + name + "_backward.")
                .c_str());
        doc(act_backward_name(act), (name + "_backward(da, " + from + " [, delta]) -> delta").c_str(),
            ("delta ← da ∘ " + name + "′(" + from + "), the backward step of the activation in one pass (what " +
             name + "_prime then mul compute in two); " + from + " is " +
             (z ? "the pre-activation z" : "the activation a = " + name + "(z)") +
             "; into da when delta is absent. nn.linear's backward uses it.")
                .c_str());
    }
    doc({
        {"mul", "mul(a, b [, c]) -> c",
         "c ← a ∘ b (elementwise product, Hadamard); into b when c is absent. Same shapes, or a broadcast: a "
         "row (1×n) or column (m×1) vector or a 1×1 against m×n, either operand, read in place by the kernel (no "
         "copy), c of the broadcast shape (NumPy's rule in 2-D). PyTorch torch.mul / cmul. Example: "
         "mul(ones(2, 3), from{{1, 2, 3}}, zeros(2, 3))  -- scales the columns by 1, 2, 3"},
        {"div", "div(a, b [, c]) -> c",
         "c ← a / b elementwise; into b when c is absent. Broadcasts a row or column vector or a 1×1 as "
         "mul does. PyTorch cdiv. Example: div(ones(2, 2), from{{2, 4}}, zeros(2, 2))"},
        {"add", "add(a, b [, c]) -> c",
         "c ← a + b elementwise; into b when c is absent. Broadcasts a row or column vector or a 1×1 as "
         "mul does (so does the operator: x + b with b m×1 adds b to every column). Example: "
         "add(ones(2, 3), from{1, 2}, zeros(2, 3))  -- adds 1, 2 down every column"},
        {"sub", "sub(a, b [, c]) -> c",
         "c ← a − b elementwise; into b when c is absent. Broadcasts a row or column vector or a 1×1 as "
         "mul does (x - mean(x, 2) centres each row). Example: sub(eye(2), from{1, 1}, zeros(2, 2))"},
        {"softmax", "softmax(x [, y]) -> y",
         "Per column, numerically stable (subtracts each column's maximum): "
         "y(:, j) ← e^x(:, j) / Σ e^x(:, j); into x when y is absent. k×n, one sample per column."},
        {"softmax_xent", "softmax_xent(z, labels, dz [, loss [, scale]]) -> dz",
         "Fused softmax + cross-entropy for logits z (k×n): dz ← (softmax(z) − onehot(labels))·scale, scale "
         "defaulting to 1/n; loss (an optional n-vector) ← −log softmax(z)[label]. labels: an n-vector of 1-based "
         "class indices (float32 or uint8), each an integer in 1..k: any other value is an error naming the first bad "
         "position (on a Vulkan device raised by the next read or sync, the bad columns NaN). PyTorch cross_entropy."},
        {"argmax", "argmax(x, idx) -> idx",
         "idx(j) ← the 1-based row of the largest element of column j (the first on ties; NaN loses to any number, a "
         "column of NaN gives 1); x k×n (any view: argmax(x:t(), idx) along rows), idx an n-vector. max(x, 1) is x "
         "at these rows. torch.argmax(x, 0)."},
        {"argmin", "argmin(x, idx) -> idx",
         "idx(j) ← the 1-based row of the smallest element of column j (the first on ties; NaN loses to any number, a "
         "column of NaN gives 1); x k×n, idx an n-vector. min(x, 1) is x at these rows. torch.argmin(x, 0)."},
        {"gather_cols", "gather_cols(src, idx, dst [, scale]) -> dst",
         "dst(:, j) ← scale·src(:, idx[j]): takes the columns listed in idx (an n-vector of 1-based indices) into "
         "dst (rows×n); src float32 or uint8 (converted, e.g. scale = 1/255 for images). A mini-batch from a data "
         "set already on the device. Each index an integer in 1..cols(src): any other value is an error naming the "
         "first bad position (on a Vulkan device raised by the next read or sync, the bad columns NaN). "
         "torch.index_select(src, 2, idx)."},
        {"add_bias", "add_bias(b, y) -> y",
         "y(:, j) ← y(:, j) + b for every column: b an m-vector, y m×n. "
         "Same as rk(b, ones(n, 1), y)."},
    });
    // dense's activations, listed from the table.
    std::string acts;
    for (uint8_t i = 0; i < uint8_t(Act::count_); i++)
        acts += std::string(i ? ", " : "") + "\"" + act_name(Act(i)) + "\"" + (i ? "" : " (default)");
    doc("dense", "dense(w, x, b, y [, act]) -> y",
        ("y ← act(w·x + b·1ᵀ), the forward step of a fully connected layer in one call: w m×k, x k×n, b an m-vector, "
         "y m×n; act one of vela.activations (" + acts + "), computed with the same functions as the elementwise "
         "kernels. PyTorch F.linear + activation.")
            .c_str());
}

}  // namespace vela::lua
