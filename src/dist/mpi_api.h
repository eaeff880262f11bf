/* The C interface between vela and its MPI shim (libvela_mpi.so, mpi_shim.cpp).
 * vela itself never links MPI: src/dist/binding.cpp dlopens the shim only when
 * a script asks for vela.dist inside a process that mpirun started, so a plain
 * `vela` neither loads Open MPI's libraries nor pays for MPI_Init.
 * Every function returns 0 on success, or an MPI error code with its text in
 * err (errlen bytes). Data are float32 (collectives) or bytes (gather). */
#pragma once
#include <stddef.h>

#define VELA_MPI_API_VERSION 1

enum { VELA_MPI_SUM = 0, VELA_MPI_MAX = 1 };

struct vela_mpi_api {
    int version;
    int (*init)(int* rank, int* size, char* err, size_t errlen);
    /* In place on every rank; the result is bit-identical on every rank. */
    int (*allreduce)(float* data, size_t n, int op, char* err, size_t errlen);
    int (*broadcast)(void* data, size_t bytes, int root, char* err, size_t errlen);
    /* out holds size × bytes: rank r's block at r × bytes, on every rank. */
    int (*allgather)(const void* in, void* out, size_t bytes, char* err, size_t errlen);
    int (*barrier)(char* err, size_t errlen);
    double (*wtime)(void);
};

typedef const struct vela_mpi_api* (*vela_mpi_api_fn)(void);
