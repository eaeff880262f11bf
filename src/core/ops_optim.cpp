// The checked kernel API, part 3: the fused optimizer updates, one pass over a
// parameter, its gradient and its state instead of the three to seven level-1
// and elementwise passes of the unfused update (lua/vela/optim.lua uses them).
// Per element, in float:
//
//   sgd_step (p = lr, μ, λ, nesterov):   g' = g + λ·w
//                                        v ← μ·v + g'
//                                        w ← w − lr·(nesterov ? g' + μ·v : v)
//   adam_step (p = lr, β₁, β₂, ε):       m ← β₁·m + (1 − β₁)·g
//                                        v ← β₂·v + (1 − β₂)·g²
//                                        w ← w − lr·m / (√v + ε)
//
// (Adam's bias correction is the caller's: lr and ε come corrected, as the
// Adam paper's efficient form does.) g is only read. The rules and message
// forms are those of ops.cpp; the shared checks are in ops_check.hpp.
#include "core/ops.hpp"
#include "core/ops_check.hpp"

namespace vela {

using namespace opcheck;

namespace {

// The checks shared by both: live float32 operands of w's shape on w's device,
// none overlapping another (each is read and written in one pass).
void check_operands(const char* fn, std::initializer_list<std::pair<const char*, const Matrix*>> ops) {
    const auto& [wn, w] = *ops.begin();
    for (const auto& [n, m] : ops) check_live(fn, n, *m);
    for (const auto& [n, m] : ops) {
        if (m == w) continue;
        same_device(fn, wn, *w, n, *m);
    }
    for (const auto& [n, m] : ops) need_f32(fn, n, *m);
    for (const auto& [n, m] : ops)
        if (m->rows != w->rows || m->cols != w->cols)
            fail("%s: %s is %s but %s is %s (every operand has the parameter's shape)", fn, wn,
                 describe(*w).c_str(), n, describe(*m).c_str());
    for (auto i = ops.begin(); i != ops.end(); ++i)
        for (auto j = i + 1; j != ops.end(); ++j)
            if (i->second->overlaps(*j->second))
                fail("%s: %s overlaps %s (the parameter, its gradient and its state must be separate matrices)", fn,
                     j->first, i->first);
}

}  // namespace

void sgd_step(const Matrix& w, const Matrix& g, const Matrix& v, float lr, float momentum, float weight_decay,
              bool nesterov) {
    const char* fn = "sgd_step";
    check_operands(fn, {{"w", &w}, {"g", &g}, {"v", &v}});
    if (nesterov && momentum == 0.0f) fail("sgd_step: nesterov needs a momentum (momentum is 0)");
    if (w.empty()) return;
    const float p[4] = {lr, momentum, weight_decay, nesterov ? 1.0f : 0.0f};
    w.device().optim_step(Optim::sgd, w, g, v, v, p);
}

void adam_step(const Matrix& w, const Matrix& g, const Matrix& m, const Matrix& v, float lr, float beta1, float beta2,
               float eps) {
    const char* fn = "adam_step";
    check_operands(fn, {{"w", &w}, {"g", &g}, {"m", &m}, {"v", &v}});
    if (w.empty()) return;
    const float p[4] = {lr, beta1, beta2, eps};
    w.device().optim_step(Optim::adam, w, g, m, v, p);
}

}  // namespace vela
