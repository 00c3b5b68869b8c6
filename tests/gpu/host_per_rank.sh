#!/bin/sh
# Runs a command (under mpirun) so that NCCL takes each rank for a host of
# its own: NCCL_HOSTID differs per rank, traffic goes over sockets on
# loopback. Two ranks can then share one GPU and still exchange data for
# real, where NCCL would otherwise refuse a duplicate GPU.
#   mpirun -np 2 sh tests/gpu/host_per_rank.sh PROGRAM ARGS...
export NCCL_HOSTID="mtrain-$OMPI_COMM_WORLD_RANK" NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo
exec "$@"
