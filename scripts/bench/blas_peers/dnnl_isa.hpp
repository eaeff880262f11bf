// The ISA oneDNN dispatches to on this CPU (its own cpuid check), and its version.
#pragma once
#include <oneapi/dnnl/dnnl.h>

#include <string>

inline std::string dnnl_isa_line() {
    const char* isa = "?";
    switch (dnnl_get_effective_cpu_isa()) {
        case dnnl_cpu_isa_sse41: isa = "sse41"; break;
        case dnnl_cpu_isa_avx: isa = "avx"; break;
        case dnnl_cpu_isa_avx2: isa = "avx2"; break;
        case dnnl_cpu_isa_avx2_vnni: isa = "avx2_vnni"; break;
        case dnnl_cpu_isa_avx512_core: isa = "avx512_core"; break;
        case dnnl_cpu_isa_avx512_core_vnni: isa = "avx512_core_vnni"; break;
        case dnnl_cpu_isa_avx512_core_bf16: isa = "avx512_core_bf16"; break;
        case dnnl_cpu_isa_avx512_core_amx: isa = "avx512_core_amx"; break;
        default: break;
    }
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           " isa " + isa;
}
