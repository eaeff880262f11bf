// The checked kernel API, part 3: the fused optimizer updates, one pass over a
// parameter, its gradient and its state instead of the three to seven level-1
// and elementwise passes of the unfused update (lua/vela/optim.lua uses them).
// Per element, in float, with PyTorch's definitions (torch.optim):
//
//   sgd_step      g' = g + λ·w;  v ← μ·v + g';  w ← w − lr·(nesterov ? g' + μ·v : v)
//   adam_step     g' = g + λ·w;  m ← m + (1 − β₁)·(g' − m);  v ← β₂·v + (1 − β₂)·g'²
//                 w ← w − lr·m / (√v + ε)
//   adamw_step    as adam_step with λ = 0, on w ← (1 − decay)·w first
//   rmsprop_step  g' = g + λ·w;  v ← α·v + (1 − α)·g'²
//                 centered: a ← a + (1 − α)·(g' − a),  d = √(v − a²) + ε;  else d = √v + ε
//                 momentum μ ≠ 0: b ← μ·b + g'/d,  w ← w − lr·b;  else w ← w − lr·g'/d
//   adagrad_step  g' = g + λ·w;  s ← s + g'²;  w ← w − lr·g'/(√s + ε)
//
// Adam's bias correction and Adagrad's lr decay are the caller's: lr and ε
// come corrected, as the Adam paper's efficient form does (adamw's decay is
// lr·λ with the uncorrected lr). The scalars the kernels need (1 − β, 1 − α,
// 1 − decay) are computed here in double and rounded once: in float, 1 − β₂
// from float(0.999) is 1.3e-5 off. g is only read. The rules and message
// forms are those of ops.cpp; the shared checks are in ops_check.hpp.
#include <cmath>
#include <utility>
#include <vector>

#include "core/ops.hpp"
#include "core/ops_check.hpp"

namespace vela {

using namespace opcheck;

namespace {

using Operands = std::vector<std::pair<const char*, const Matrix*>>;

// The checks shared by all: live float32 operands of w's shape on w's device,
// none overlapping another (each is read and written in one pass).
void check_operands(const char* fn, const Operands& ops) {
    const auto& [wn, w] = ops.front();
    for (const auto& [n, m] : ops) check_live(fn, n, *m);
    for (const auto& [n, m] : ops) {
        if (m == w) continue;
        same_device(fn, wn, *w, n, *m);
    }
    for (const auto& [n, m] : ops) need_f32(fn, n, *m);
    for (const auto& [n, m] : ops)
        if (m->rows != w->rows || m->cols != w->cols)
            fail("%s: %s is %s but %s is %s (every operand has the parameter's shape)", fn, wn, describe(*w).c_str(), n,
                 describe(*m).c_str());
    for (auto i = ops.begin(); i != ops.end(); ++i)
        for (auto j = i + 1; j != ops.end(); ++j)
            if (i->second->overlaps(*j->second))
                fail("%s: %s overlaps %s (the parameter, its gradient and its state must be separate matrices)", fn,
                     j->first, i->first);
}

// A hyperparameter in [lo, hi) (hi_open) or [lo, hi], finite, as a float too.
void need_range(const char* fn, const char* name, double x, double lo, double hi, bool hi_open = false) {
    bool ok = std::isfinite(x) && x >= lo && (hi_open ? x < hi : x <= hi) && std::isfinite(float(x));
    if (!ok) fail("%s: %s is %.17g but must be a number in [%g, %g%s", fn, name, x, lo, hi, hi_open ? ")" : "]");
}
constexpr double kBig = 3.0e38;  // the float range: a larger scalar would round to Inf

void dispatch(Optim kind, const Matrix& w, const Matrix& g, const Matrix& s1, const Matrix& s2, const Matrix& s3,
              std::initializer_list<double> q) {
    if (w.empty()) return;
    float p[6] = {};
    size_t k = 0;
    for (double x : q) p[k++] = float(x);
    w.device().optim_step(kind, w, g, s1, s2, s3, p);
}

// sgd_step's checks (fn names the caller), then its four scalars.
void sgd_checks(const char* fn, const Matrix& w, const Matrix& g, const Matrix& v, double lr, double momentum,
                double weight_decay, bool nesterov, float p[6]) {
    check_operands(fn, {{"w", &w}, {"g", &g}, {"v", &v}});
    need_range(fn, "lr", lr, 0, kBig);
    need_range(fn, "momentum", momentum, 0, 1);
    need_range(fn, "weight_decay", weight_decay, 0, kBig);
    if (nesterov && momentum == 0.0) fail("%s: nesterov needs a momentum (momentum is 0)", fn);
    const double q[6] = {lr, momentum, weight_decay, nesterov ? 1.0 : 0.0, 0, 0};
    for (int k = 0; k < 6; k++) p[k] = float(q[k]);
}

}  // namespace

void sgd_step(const Matrix& w, const Matrix& g, const Matrix& v, double lr, double momentum, double weight_decay,
              bool nesterov) {
    float p[6];
    sgd_checks("sgd_step", w, g, v, lr, momentum, weight_decay, nesterov, p);
    if (!w.empty()) w.device().optim_step(Optim::sgd, w, g, v, v, v, p);
}

void mm_sgd_step(const Matrix& a, const Matrix& b, const Matrix& g, const Matrix& w, const Matrix& v, double lr,
                 double momentum, double weight_decay, bool nesterov) {
    const char* fn = "mm_sgd_step";
    check_mm(fn, a, b, "g", g);
    float p[6];
    sgd_checks(fn, w, g, v, lr, momentum, weight_decay, nesterov, p);
    // The update writes w and v while other pieces of the product still read a and b.
    no_overlap(fn, "w", w, "a", a), no_overlap(fn, "w", w, "b", b);
    no_overlap(fn, "v", v, "a", a), no_overlap(fn, "v", v, "b", b);
    if (!g.empty()) g.device().mm_optim(1.0f, a, b, g, Optim::sgd, w, v, v, v, p);
}

// adam and adamw: the same checks, the kernel's six scalars.
static void adam_like(Optim kind, const char* fn, const Matrix& w, const Matrix& g, const Matrix& m, const Matrix& v,
                      double lr, double beta1, double beta2, double eps, double last, const char* last_name) {
    check_operands(fn, {{"w", &w}, {"g", &g}, {"m", &m}, {"v", &v}});
    need_range(fn, "lr", lr, 0, kBig);
    need_range(fn, "beta1", beta1, 0, 1, true);
    need_range(fn, "beta2", beta2, 0, 1, true);
    need_range(fn, "eps", eps, 0, kBig);
    need_range(fn, last_name, last, 0, kind == Optim::adamw ? 1 : kBig);
    dispatch(kind, w, g, m, v, v, {lr, 1.0 - beta1, beta2, 1.0 - beta2, eps, kind == Optim::adamw ? 1.0 - last : last});
}

void adam_step(const Matrix& w, const Matrix& g, const Matrix& m, const Matrix& v, double lr, double beta1,
               double beta2, double eps, double weight_decay) {
    adam_like(Optim::adam, "adam_step", w, g, m, v, lr, beta1, beta2, eps, weight_decay, "weight_decay");
}

void adamw_step(const Matrix& w, const Matrix& g, const Matrix& m, const Matrix& v, double lr, double beta1,
                double beta2, double eps, double decay) {
    adam_like(Optim::adamw, "adamw_step", w, g, m, v, lr, beta1, beta2, eps, decay, "decay (lr·weight_decay)");
}

void rmsprop_step(const Matrix& w, const Matrix& g, const Matrix& v, const Matrix* buf, const Matrix* gavg, double lr,
                  double alpha, double eps, double weight_decay, double momentum) {
    const char* fn = "rmsprop_step";
    Operands ops{{"w", &w}, {"g", &g}, {"v", &v}};
    if (buf) ops.push_back({"buf", buf});
    if (gavg) ops.push_back({"gavg", gavg});
    check_operands(fn, ops);
    need_range(fn, "lr", lr, 0, kBig);
    need_range(fn, "alpha", alpha, 0, 1);
    need_range(fn, "eps", eps, 0, kBig);
    need_range(fn, "weight_decay", weight_decay, 0, kBig);
    need_range(fn, "momentum", momentum, 0, 1);
    if (momentum != 0.0 && !buf) fail("%s: momentum is %g but no momentum buffer (buf) was given", fn, momentum);
    dispatch(gavg ? Optim::rmsprop_centered : Optim::rmsprop, w, g, v, buf ? *buf : v, gavg ? *gavg : v,
             {lr, alpha, 1.0 - alpha, eps, weight_decay, momentum});
}

void adagrad_step(const Matrix& w, const Matrix& g, const Matrix& sum, double lr, double eps, double weight_decay) {
    const char* fn = "adagrad_step";
    check_operands(fn, {{"w", &w}, {"g", &g}, {"sum", &sum}});
    need_range(fn, "lr", lr, 0, kBig);
    need_range(fn, "eps", eps, 0, kBig);
    need_range(fn, "weight_decay", weight_decay, 0, kBig);
    dispatch(Optim::adagrad, w, g, sum, sum, sum, {lr, weight_decay, eps});
}

}  // namespace vela
