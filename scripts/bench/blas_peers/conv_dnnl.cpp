// oneDNN's convolution primitives at the two conv layers of examples/cnn.lua
// (batch 128): forward (bias + relu post-op, as vela.conv with "relu"),
// backward data (dx) and backward weights (dW and db, as vela.conv_wgrad).
// Built and run by run.sh.
//
//   conv_dnnl THREADS [ms_per_rep] [reps]
//
// Two layouts each: "plain" has vela's images (NCHW: one sample per column),
// a drop-in for vela's kernels; "any" lets oneDNN pick its blocked layouts
// (nChw8c ...), as a framework that keeps them between layers would, with no
// reorders counted. The weights' layout is oneDNN's choice in both.
// One line per primitive: "conv dnnl THREADS LAYOUT LAYER PRIM gflops_wall gflops_cpu impl",
// each figure the median of `reps` timings of back-to-back calls lasting >= ms_per_rep.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "dnnl_isa.hpp"
#include "timing.hpp"

using namespace dnnl;

namespace {

struct Layer {
    const char* name;
    memory::dim n, c, h, o, k;
};

// examples/cnn.lua: conv 1→32 5×5 on 28×28, conv 32→64 5×5 on 12×12 (stride 1, no padding)
const Layer kLayers[] = {{"conv1", 128, 1, 28, 32, 5}, {"conv2", 128, 32, 12, 64, 5}};

void fill(memory& m) {
    auto* p = static_cast<float*>(m.get_data_handle());
    const size_t n = m.get_desc().get_size() / sizeof(float);
    for (size_t i = 0; i < n; ++i) p[i] = float((i * 7919) % 1000) / 1000.f - 0.5f;
}

void run(const Layer& L, bool plain, int threads, double ms, int reps, engine& eng, stream& s) {
    const memory::dim oh = L.h - L.k + 1;
    const memory::dims src_d = {L.n, L.c, L.h, L.h}, wei_d = {L.o, L.c, L.k, L.k}, bia_d = {L.o},
                       dst_d = {L.n, L.o, oh, oh}, strides = {1, 1}, pad = {0, 0};
    using dt = memory::data_type;
    using tag = memory::format_tag;
    auto md = [&](const memory::dims& d, tag t) { return memory::desc(d, dt::f32, plain ? t : tag::any); };
    // The weights' layout is oneDNN's choice in both: vela's own (o + out·((c·kh + ky)·kw + kx),
    // stated by strides) gets only the reference kernels ("ref:any", under 0.3 GFLOP/s), and a
    // reorder of W (51,200 floats) once per step costs next to nothing beside the convolution.
    const memory::desc wei_md = memory::desc(wei_d, dt::f32, tag::any);
    const memory::desc src_md = md(src_d, tag::nchw), dst_md = md(dst_d, tag::nchw),
                       bia_md = memory::desc(bia_d, dt::f32, tag::x);
    post_ops po;
    po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
    primitive_attr attr;
    attr.set_post_ops(po);
    convolution_forward::primitive_desc fpd(
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, src_md, wei_md,
                                  bia_md, dst_md, strides, pad, pad),
        attr, eng);
    convolution_backward_data::primitive_desc bpd(
        convolution_backward_data::desc(algorithm::convolution_direct, src_md, wei_md, dst_md, strides, pad, pad),
        eng, fpd);
    convolution_backward_weights::primitive_desc wpd(
        convolution_backward_weights::desc(algorithm::convolution_direct, src_md, wei_md, bia_md, dst_md, strides,
                                           pad, pad),
        eng, fpd);
    memory src(fpd.src_desc(), eng), wei(fpd.weights_desc(), eng), bia(fpd.bias_desc(), eng),
        dst(fpd.dst_desc(), eng);
    memory dsrc(bpd.diff_src_desc(), eng), ddst_b(bpd.diff_dst_desc(), eng), wei_b(bpd.weights_desc(), eng);
    memory src_w(wpd.src_desc(), eng), ddst_w(wpd.diff_dst_desc(), eng), dwei(wpd.diff_weights_desc(), eng),
        dbia(wpd.diff_bias_desc(), eng);
    for (memory* m : {&src, &wei, &bia, &ddst_b, &wei_b, &src_w, &ddst_w}) fill(*m);
    convolution_forward fwd(fpd);
    convolution_backward_data bwd(bpd);
    convolution_backward_weights bww(wpd);
    const double flops = 2.0 * L.n * L.o * oh * oh * L.c * L.k * L.k;
    const char* layout = plain ? "plain" : "any";
    struct Prim {
        const char* name;
        std::string impl;
        std::function<void()> f;
    } prims[] = {
        {"fwd_relu", fpd.impl_info_str(),
         [&] {
             fwd.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bia}, {DNNL_ARG_DST, dst}});
             s.wait();
         }},
        {"bwd_data", bpd.impl_info_str(),
         [&] {
             bwd.execute(s, {{DNNL_ARG_DIFF_DST, ddst_b}, {DNNL_ARG_WEIGHTS, wei_b}, {DNNL_ARG_DIFF_SRC, dsrc}});
             s.wait();
         }},
        {"bwd_weights", wpd.impl_info_str(),
         [&] {
             bww.execute(s, {{DNNL_ARG_SRC, src_w},
                             {DNNL_ARG_DIFF_DST, ddst_w},
                             {DNNL_ARG_DIFF_WEIGHTS, dwei},
                             {DNNL_ARG_DIFF_BIAS, dbia}});
             s.wait();
         }},
    };
    for (auto& p : prims) {
        if (p.impl.rfind("ref", 0) == 0) {  // the reference loops: minutes per call, not a contender
            std::printf("conv dnnl %d %s %s %s - - %s\n", threads, layout, L.name, p.name, p.impl.c_str());
            continue;
        }
        auto [w, c] = time_it(p.f, flops, ms, reps);
        std::printf("conv dnnl %d %s %s %s %.1f %.1f %s\n", threads, layout, L.name, p.name, w, c, p.impl.c_str());
        std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s THREADS [ms_per_rep=60] [reps=5]\n", argv[0]);
        return 2;
    }
    const int threads = std::atoi(argv[1]);
    const double ms = argc > 2 ? std::atof(argv[2]) : 60;
    const int reps = argc > 3 ? std::atoi(argv[3]) : 5;
    omp_set_num_threads(threads);
    std::printf("kernels dnnl %s\n", dnnl_isa_line().c_str());
    engine eng(engine::kind::cpu, 0);
    stream s(eng);
    try {
        for (const Layer& L : kLayers)
            for (bool plain : {true, false}) run(L, plain, threads, ms, reps, eng, s);
    } catch (const dnnl::error& e) {
        std::fprintf(stderr, "conv_dnnl: oneDNN error: %s (status %d)\n", e.what(), int(e.status));
        return 1;
    }
    return 0;
}
