/* Check macros for the CUDA runtime and cuBLAS, built like those of
 * base/check.h (NCCL's, the same shape, is in mpi/comm_nccl.c, its one
 * user): the failing call, file:line, rank, host and device, then MPI_Abort
 * of the whole job. */
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "check.h"

#define CUDA_CHECK(call)                                                       \
	do {                                                                   \
		cudaError_t cuda_check_rc_ = (call);                           \
		if (cuda_check_rc_ != cudaSuccess)                             \
			check_fail("CUDA", #call,                              \
				   cudaGetErrorString(cuda_check_rc_),         \
				   __FILE__, __LINE__);                        \
	} while (0)

#define CUBLAS_CHECK(call)                                                     \
	do {                                                                   \
		cublasStatus_t cublas_check_rc_ = (call);                      \
		if (cublas_check_rc_ != CUBLAS_STATUS_SUCCESS)                 \
			check_fail("cuBLAS", #call,                            \
				   cublasGetStatusString(cublas_check_rc_),    \
				   __FILE__, __LINE__);                        \
	} while (0)

/* Kernel launches report configuration errors through cudaGetLastError. */
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
