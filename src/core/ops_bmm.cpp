// The checked strided batched product (docs/sequence.md, "Batched products"):
// bmm splits a, b and c into `count` equal column blocks and hands the device
// the first block of each, transposed as asked, with the element step from one
// block to the next. The cpu spreads the blocks over its threads, Vulkan runs
// them in one dispatch.
#include "core/ops.hpp"
#include "core/ops_check.hpp"

namespace vela {

using namespace opcheck;

namespace {

// Column block 0 of x (x.cols / count columns), transposed when t, and the
// element step from one block to the next.
Matrix first_block(const Matrix& x, int64_t count, bool t, int64_t& step) {
    const int64_t w = x.cols / count;
    step = w * x.col_step();
    Matrix m = x.view(0, 0, x.rows, w);
    if (w == 0 || x.rows == 0) m.offset = x.offset;
    return t ? m.t() : m;
}

}  // namespace

void bmm(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c, int64_t count, bool ta,
         bool tb) {
    const char* fn = "bmm";
    f32_operands(fn, {{"a", a}, {"b", b}, {"c", c}});
    if (count < 1) fail("%s: count is %lld but must be a positive integer (the number of blocks)", fn, (long long)count);
    const Matrix* ops[] = {&a, &b, &c};
    const char* names[] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++)
        if (ops[i]->cols % count != 0)
            fail("%s: %s is %s but count is %lld (count must divide %s's %lld columns into equal blocks)", fn,
                 names[i], describe(*ops[i]).c_str(), (long long)count, names[i], (long long)ops[i]->cols);
    int64_t sa, sb, sc;
    const Matrix A = first_block(a, count, ta, sa), B = first_block(b, count, tb, sb), C = first_block(c, count, false, sc);
    const char* opa = ta ? "aᵢᵀ" : "aᵢ";
    const char* opb = tb ? "bᵢᵀ" : "bᵢ";
    if (A.cols != B.rows)
        fail("%s: the blocks %s are %s and %s are %s (%s's columns must equal %s's rows; count = %lld)", fn, opa,
             describe(A).c_str(), opb, describe(B).c_str(), opa, opb, (long long)count);
    if (C.rows != A.rows || C.cols != B.cols)
        fail("%s: the blocks cᵢ are %s but %s·%s is %lld×%lld (c must be %lld×%lld; count = %lld)", fn,
             describe(C).c_str(), opa, opb, (long long)A.rows, (long long)B.cols, (long long)A.rows,
             (long long)(B.cols * count), (long long)count);
    no_overlap(fn, "c", c, "a", a), no_overlap(fn, "c", c, "b", b);
    if (c.empty()) return;
    c.device().bmm(alpha, A, sa, B, sb, beta, C, sc, count);
}

}  // namespace vela
