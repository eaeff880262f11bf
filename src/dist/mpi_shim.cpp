// libvela_mpi.so: the only code in vela that calls MPI. A thin layer over
// MPI_COMM_WORLD (see mpi_api.h), loaded by src/dist/binding.cpp on first use.
//
// Why each choice:
// - allreduce is MPI_Reduce to rank 0 then MPI_Bcast: the standard only
//   advises that MPI_Allreduce give every rank the same bits, and
//   recursive-doubling algorithms add in a different order on each rank.
//   Training needs bit-identical weights on every rank, so one rank adds and
//   every rank receives its sum.
// - Errors return (MPI_ERRORS_RETURN) and become Lua errors on the calling rank.
// - The process's exit is watched (on_exit): a clean exit (status 0) finalizes;
//   any other status calls MPI_Abort, so every other rank is stopped at once
//   instead of waiting forever in its next collective, and mpirun names the rank.
// The C interface only: mpi.h would otherwise pull in the C++ bindings, which libmpi.so lacks.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dist/mpi_api.h"

namespace {

int g_rank = 0, g_size = 1;

int fail(int rc, const char* what, char* err, size_t errlen) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) std::snprintf(text, sizeof text, "MPI error %d", rc);
    std::snprintf(err, errlen, "%s failed on rank %d: %s", what, g_rank, text);
    return rc;
}

void at_exit(int status, void*) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (status == 0) {
        MPI_Finalize();
        return;
    }
    std::fprintf(stderr, "vela.dist: rank %d of %d failed (exit status %d); stopping every rank\n", g_rank, g_size,
                 status);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
}

int init(int* rank, int* size, char* err, size_t errlen) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        // As many ranks on this machine as cores (or more): a rank waiting in a collective yields
        // its core instead of spinning on it, which the rank it waits for needs. Measured with 2
        // ranks on 2 loaded cores: an MNIST epoch 5.3 s spinning, 1.9-2.1 s yielding. Open MPI
        // reads the variable in MPI_Init; one set by the user wins.
        const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        if (local && cores > 0 && std::strtol(local, nullptr, 10) >= cores)
            setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
        int provided = 0;
        int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
        if (rc != MPI_SUCCESS) {
            std::snprintf(err, errlen, "MPI_Init_thread failed (code %d)", rc);
            return rc;
        }
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &g_size);
        on_exit(at_exit, nullptr);
    }
    *rank = g_rank;
    *size = g_size;
    return 0;
}

// MPI counts are int: long buffers go in pieces of at most 2^30 elements.
constexpr size_t kPiece = size_t(1) << 30;
// Allreduce goes in pieces of 256 KiB (VELA_MPI_PIECE_KIB overrides): measured on 2 ranks of a
// loaded 2-core machine, Open MPI's reduce of 1 MiB took 50-225 ms where four 256 KiB pieces
// took about 2.5 ms (its large-message protocol waits on the other process many times).
size_t allreduce_piece() {
    static size_t piece = [] {
        const char* env = std::getenv("VELA_MPI_PIECE_KIB");
        long kib = env ? std::strtol(env, nullptr, 10) : 256;
        if (kib < 1) kib = 256;
        size_t n = size_t(kib) * 1024 / sizeof(float);
        return n < kPiece ? n : kPiece;
    }();
    return piece;
}

int allreduce(float* data, size_t n, int op, char* err, size_t errlen) {
    MPI_Op mop = op == VELA_MPI_MAX ? MPI_MAX : MPI_SUM;
    const size_t piece = allreduce_piece();
    for (size_t at = 0; at < n; at += piece) {
        int count = int(n - at < piece ? n - at : piece);
        float* p = data + at;
        int rc = g_rank == 0 ? MPI_Reduce(MPI_IN_PLACE, p, count, MPI_FLOAT, mop, 0, MPI_COMM_WORLD)
                             : MPI_Reduce(p, nullptr, count, MPI_FLOAT, mop, 0, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return fail(rc, "MPI_Reduce", err, errlen);
        rc = MPI_Bcast(p, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return fail(rc, "MPI_Bcast", err, errlen);
    }
    return 0;
}

int broadcast(void* data, size_t bytes, int root, char* err, size_t errlen) {
    for (size_t at = 0; at < bytes; at += kPiece) {
        int count = int(bytes - at < kPiece ? bytes - at : kPiece);
        int rc = MPI_Bcast(static_cast<char*>(data) + at, count, MPI_BYTE, root, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return fail(rc, "MPI_Bcast", err, errlen);
    }
    return 0;
}

int allgather(const void* in, void* out, size_t bytes, char* err, size_t errlen) {
    if (bytes > size_t(INT_MAX)) {
        std::snprintf(err, errlen, "allgather of %zu bytes per rank: at most %d", bytes, INT_MAX);
        return -1;
    }
    int rc = MPI_Allgather(in, int(bytes), MPI_BYTE, out, int(bytes), MPI_BYTE, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Allgather", err, errlen);
}

int barrier(char* err, size_t errlen) {
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : fail(rc, "MPI_Barrier", err, errlen);
}

double wtime() {
    return MPI_Wtime();
}

const vela_mpi_api kApi = {VELA_MPI_API_VERSION, init, allreduce, broadcast, allgather, barrier, wtime};

}  // namespace

extern "C" __attribute__((visibility("default"))) const vela_mpi_api* vela_mpi_api_get() {
    return &kApi;
}
