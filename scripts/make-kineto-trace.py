#!/usr/bin/env python3
"""Writes synthetic PyTorch profiler (Kineto) Chrome traces of a data-parallel training job, one
file per rank, for benchmarking and testing `prismsim calibrate`.

usage:
  make-kineto-trace.py OUTDIR --ranks R --events N [--seed S] [--gpus-per-node G]
                       [--cpu-events full|none] [--outliers P]

Writes OUTDIR/rank{r}.pt.trace.json for r in 0..R-1 with about N GPU kernel events in all (N / R
per rank), laid out as PyTorch's profiler writes them (libkineto's JSON layout: one member line
per field group, ts and dur in microseconds with 3 decimals): a header with deviceProperties and
distributedInfo, then traceEvents in time order and the trailing traceName, displayTimeUnit and
baseTimeNanoseconds. Each kernel comes with the CPU operator that launched it (cat "cpu_op", with
"Input Dims" and "Input type"), its cudaLaunchKernel (cat "cuda_runtime") and the "ac2g" flow
pair linking the two (--cpu-events none leaves these out: kernels and NCCL kernels only). Every
rank runs the same program: training steps of transformer layers (forward, backward, fused Adam),
716 kernel events a step of which 9 NCCL kernels (about one every 80 kernels): FSDP
all-gathers and reduce-scatters over all ranks, tensor-parallel all-reduces within the node, a
pipeline send and recv with the neighbouring rank and a gradient-norm all-reduce.

Durations: every kernel name has a nominal duration (5 us to 2 ms); each rank a persistent speed
factor (lognormal, sigma 0.02); each kernel instance a lognormal noise (sigma 0.03 to 0.08 by
kernel) and a 0.1% chance (--outliers) of a 3x outlier. With R >= 2 G the second node (ranks
G..2G-1) is 1.2x slower. An NCCL kernel lasts the collective's transfer time (shared by all
members of the call, the same call index on every rank) plus the rank's wait for the last member
to arrive, so the shortest member of each call measures the transfer itself.

Standard library only; deterministic for a given seed; files are written streaming. About 1.5 kB
of JSON per kernel with CPU events (1.5 GB for 10^6 kernels), 0.6 kB with --cpu-events none.
"""

import argparse
import heapq
import math
import os
import random
import sys

# key: (raw name, nominal us, noise sigma, grid, block, registers, shared memory, class tag)
KERNELS = {
    "ln_fwd": (
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
        "(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, "
        "float*, c10::BFloat16*)", 24.0, 0.05, (8192, 1, 1), (256, 1, 1), 40, 0),
    "gemm_qkv": (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas", 610.0, 0.03, (132, 1, 1), (384, 1, 1), 168, 213248),
    "flash_fwd": (
        "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
        "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, "
        "true, false, false, false>(Flash_fwd_params)", 420.0, 0.04, (32, 16, 4), (128, 1, 1),
        255, 49152),
    "gemm_proj": (
        "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>"
        "(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)", 205.0,
        0.03, (256, 4, 1), (128, 1, 1), 110, 24576),
    "add": (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
        "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
        "at::detail::Array<char*, 3>)", 42.0, 0.06, (32768, 1, 1), (128, 1, 1), 26, 0),
    "gemm_up": (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
        "segment_k_off_kernel__5x_cublas", 1650.0, 0.03, (132, 1, 1), (384, 1, 1), 168, 221184),
    "silu": (
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
        "silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::"
        "operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, "
        "at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::"
        "operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
        "at::detail::Array<char*, 2>)", 58.0, 0.05, (65536, 1, 1), (128, 1, 1), 28, 0),
    "mul": (
        "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<c10::BFloat16, "
        "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
        "at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<c10::BFloat16, c10::BFloat16, "
        "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, at::detail::Array<char*, 3>)",
        61.0, 0.06, (65536, 1, 1), (128, 1, 1), 26, 0),
    "gemm_down": (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
        "segment_k_off_kernel__5x_cublas", 1580.0, 0.03, (132, 1, 1), (384, 1, 1), 168, 221184),
    "softmax": (
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
        "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
        96.0, 0.05, (8192, 1, 1), (512, 1, 1), 38, 0),
    "reduce": (
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
        "at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()"
        "(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >"
        "(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<"
        "float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
        "unsigned int, float, 4>)", 6.0, 0.08, (1, 1, 1), (512, 1, 1), 32, 16),
    "gemm_dgrad": (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas", 1200.0, 0.03, (132, 1, 1), (384, 1, 1), 168, 213248),
    "gemm_wgrad": (
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_warpgroupsize2x1x1_execute_"
        "segment_k_off_kernel__5x_cublas", 1950.0, 0.04, (132, 1, 1), (384, 1, 1), 168, 221184),
    "silu_bwd": (
        "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
        "silu_backward_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::"
        "{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, "
        "at::detail::Array<char*, 3> >(int, at::native::(anonymous namespace)::silu_backward_kernel"
        "(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() "
        "const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)", 88.0,
        0.05, (65536, 1, 1), (128, 1, 1), 30, 0),
    "flash_bwd": (
        "void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, "
        "2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, "
        "cutlass::bfloat16_t> >, true, false, false, false, false, false, false>(Flash_bwd_params)",
        1080.0, 0.04, (32, 16, 4), (256, 1, 1), 255, 98304),
    "ln_bwd": (
        "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<"
        "c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, "
        "float const*, c10::BFloat16 const*, c10::BFloat16*, int)", 39.0, 0.05, (8192, 1, 1),
        (256, 1, 1), 48, 0),
    "ln_gamma": (
        "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, "
        "float>(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, "
        "c10::BFloat16*, c10::BFloat16*)", 33.0, 0.05, (256, 1, 1), (32, 32, 1), 64, 8448),
    "adam": (
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
        "(anonymous namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous "
        "namespace)::FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, "
        "double, double, double, double, double, bool, float*, float*>(at::native::(anonymous "
        "namespace)::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::"
        "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, float*, double, double, "
        "double, double, double, bool, float*, float*)", 720.0, 0.04, (320, 1, 1), (512, 1, 1), 72,
        0),
    "copy": (
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
        "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
        "const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, "
        "at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() "
        "const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, "
        "at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda("
        "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
        "const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda("
        "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
        "const::{lambda(float)#1} const&)::{lambda(int)#1})", 14.0, 0.08, (1024, 1, 1),
        (128, 1, 1), 24, 0),
}

BF16 = '"c10::BFloat16"'
FLOAT = '"float"'
# key: (operator, Input Dims, Input type) of the CPU operator that launches the kernel
OPERATORS = {
    "ln_fwd": ("aten::native_layer_norm", "[[8, 4096, 8192], [8192], [8192], [8192], []]",
               "[%s, \"\", %s, %s, \"Scalar\"]" % (BF16, BF16, BF16)),
    "gemm_qkv": ("aten::mm", "[[32768, 8192], [8192, 10240]]", "[%s, %s]" % (BF16, BF16)),
    "flash_fwd": ("aten::_flash_attention_forward",
                  "[[8, 4096, 64, 128], [8, 4096, 8, 128], [8, 4096, 8, 128], [], [], [], [], []]",
                  "[%s, %s, %s, \"\", \"\", \"Scalar\", \"Scalar\", \"Scalar\"]" % (BF16, BF16, BF16)),
    "gemm_proj": ("aten::mm", "[[32768, 8192], [8192, 8192]]", "[%s, %s]" % (BF16, BF16)),
    "add": ("aten::add", "[[8, 4096, 8192], [8, 4096, 8192], []]", "[%s, %s, \"Scalar\"]" % (BF16, BF16)),
    "gemm_up": ("aten::mm", "[[32768, 8192], [8192, 28672]]", "[%s, %s]" % (BF16, BF16)),
    "silu": ("aten::silu", "[[8, 4096, 14336]]", "[%s]" % BF16),
    "mul": ("aten::mul", "[[8, 4096, 14336], [8, 4096, 14336]]", "[%s, %s]" % (BF16, BF16)),
    "gemm_down": ("aten::mm", "[[32768, 14336], [14336, 8192]]", "[%s, %s]" % (BF16, BF16)),
    "softmax": ("aten::_softmax", "[[32768, 32000], [], []]", "[%s, \"Scalar\", \"Scalar\"]" % FLOAT),
    "reduce": ("aten::sum", "[[32768], []]", "[%s, \"\"]" % FLOAT),
    "gemm_dgrad": ("aten::mm", "[[32768, 10240], [10240, 8192]]", "[%s, %s]" % (BF16, BF16)),
    "gemm_wgrad": ("aten::mm", "[[28672, 32768], [32768, 8192]]", "[%s, %s]" % (BF16, BF16)),
    "silu_bwd": ("aten::silu_backward", "[[8, 4096, 14336], [8, 4096, 14336]]",
                 "[%s, %s]" % (BF16, BF16)),
    "flash_bwd": ("aten::_flash_attention_backward",
                  "[[8, 4096, 64, 128], [8, 4096, 64, 128], [8, 4096, 8, 128], [8, 4096, 8, 128]]",
                  "[%s, %s, %s, %s]" % (BF16, BF16, BF16, BF16)),
    "ln_bwd": ("aten::native_layer_norm_backward", "[[8, 4096, 8192], [8, 4096, 8192], [], [8, 4096, 1]]",
               "[%s, %s, \"\", %s]" % (BF16, BF16, FLOAT)),
    "ln_gamma": ("aten::native_layer_norm_backward", "[[8, 4096, 8192], [8, 4096, 8192], [], [8, 4096, 1]]",
                 "[%s, %s, \"\", %s]" % (BF16, BF16, FLOAT)),
    "adam": ("aten::_fused_adam_", "[[], [], [], [], [], [], [], [], [], [], [], [], []]",
             "[\"TensorList\", \"TensorList\", \"TensorList\", \"TensorList\", \"TensorList\", "
             "\"TensorList\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", \"Scalar\", "
             "\"Scalar\", \"Scalar\"]"),
    "copy": ("aten::copy_", "[[8192, 8192], [8192, 8192], []]", "[%s, %s, \"Scalar\"]" % (BF16, FLOAT)),
}

# op: (kernel name, "Collective name", NCCL stream)
COLLECTIVES = {
    "all_gather": ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                   "_allgather_base"),
    "reduce_scatter": ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, "
                       "ncclWork*)", "_reduce_scatter_base"),
    "all_reduce": ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                   "allreduce"),
    "send": ("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", "send"),
    "recv": ("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", "recv"),
}

LAYERS = 24           # transformer layers a step
LAYERS_PER_SHARD = 12  # FSDP unit: one all-gather (forward) and reduce-scatter (backward) each
COMPUTE_STREAM = 7
NCCL_STREAM = 20
P2P_STREAM = 24


def step_program():
    """One training step: ("k", key) compute kernels and ("c", op, group, nelems) collectives,
    group "world", "node" (tensor parallel, within the node) or "pair" (pipeline neighbour)."""
    program = []
    shard = 1 << 22  # bf16 elements of a rank's shard of an FSDP unit
    for layer in range(LAYERS):
        if layer % LAYERS_PER_SHARD == 0:
            program.append(("c", "all_gather", "world", shard))
        program += [("k", k) for k in ("ln_fwd", "gemm_qkv", "flash_fwd", "gemm_proj", "add")]
        if layer % 12 == 11:
            program.append(("c", "all_reduce", "node", 4096 * 8192))
        program += [("k", k) for k in ("ln_fwd", "gemm_up", "silu", "mul", "gemm_down", "add")]
    program += [("k", "softmax"), ("k", "reduce"), ("c", "send", "pair", 4096 * 8192)]
    for layer in reversed(range(LAYERS)):
        program += [("k", k) for k in ("gemm_dgrad", "gemm_wgrad", "mul", "silu_bwd", "mul",
                                       "gemm_dgrad", "gemm_wgrad", "ln_bwd", "ln_gamma", "add",
                                       "gemm_dgrad", "gemm_wgrad", "flash_bwd", "gemm_dgrad",
                                       "gemm_wgrad", "ln_bwd", "ln_gamma", "add")]
        if layer % LAYERS_PER_SHARD == 0:
            program.append(("c", "reduce_scatter", "world", shard))
    program += [("c", "recv", "pair", 4096 * 8192), ("k", "reduce"),
                ("c", "all_reduce", "world", 1)]
    program += [("k", "adam")] * 4 + [("k", "copy")] * 4
    return program


def transfer_us(op, nbytes, members, inter_node):
    """Nominal time of a collective (ring algorithm): latency plus bus traffic over bandwidth."""
    bandwidth = (45.0 if inter_node else 360.0) * 1e3  # bytes per microsecond
    if op in ("send", "recv"):
        traffic = nbytes
    elif op == "all_reduce":
        traffic = 2.0 * nbytes * (members - 1) / members
    else:  # all_gather: nbytes is the output; reduce_scatter: the input
        traffic = nbytes * (members - 1) / members
    return (12.0 if inter_node else 6.0) + traffic / bandwidth


def fmt_us(us):
    return "%.3f" % us


class Writer:
    """Buffers text and writes it in large blocks."""

    def __init__(self, path):
        self.out = open(path, "w", encoding="ascii", newline="\n")
        self.parts = []
        self.size = 0

    def add(self, text):
        self.parts.append(text)
        self.size += len(text)
        if self.size >= 1 << 20:
            self.flush()

    def flush(self):
        self.out.write("".join(self.parts))
        self.parts = []
        self.size = 0

    def close(self):
        self.flush()
        self.out.close()


KERNEL_EVENT = """
  {
    "ph": "X", "cat": "kernel", "name": "%s", "pid": %d, "tid": %d,
    "ts": %.3f, "dur": %.3f,
    "args": {
      "External id": %d,
      "queued": 0, "device": %d, "context": 1,
      "stream": %d, "correlation": %d,
      "registers per thread": %d,
      "shared memory": %d,
      "blocks per SM": %s,
      "warps per SM": %s,
      "grid": [%d, %d, %d],
      "block": [%d, %d, %d],
      "est. achieved occupancy %%": %d%s
    }
  },"""

NCCL_ARGS = """,
      "Collective name": "%s",
      "In msg nelems": %d, "Out msg nelems": %d, "Group size": %d,
      "dtype": "BFloat16",
      "In split size": "[]", "Out split size": "[]",
      "Process Group Name": "%s", "Process Group Description": "%s",
      "Process Group Ranks": "%s\""""

CPU_OP_EVENT = """
  {
    "ph": "X", "cat": "cpu_op", "name": "%s", "pid": %d, "tid": %d,
    "ts": %.3f, "dur": %.3f,
    "args": {
      "External id": %d,"Record function id": 0, "Input Dims": %s, "Input type": %s, "Ev Idx": %d%s
    }
  },"""

LAUNCH_EVENT = """
  {
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": %d, "tid": %d,
    "ts": %.3f, "dur": %.3f,
    "args": {
      "External id": %d,
      "cbid": 211, "correlation": %d
    }
  },"""

FLOW_START = """
  {
    "ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %.3f,
    "cat": "ac2g", "name": "ac2g"
  },"""

FLOW_END = """
  {
    "ph": "f", "id": %d, "pid": %d, "tid": %d, "ts": %.3f,
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  },"""


def header(rank, world, device):
    return """{
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": %d, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 84942979072,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472}
  ],
  "distributedInfo": {"backend": "nccl", "rank": %d, "world_size": %d, "pg_count": 1, "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": %d, "ranks": "all"}], "nccl_version": "2.21.5"},
  "record_shapes": 1,
  "with_stack": 0,
  "cupti_version": 24,
  "cuda_runtime_version": 12040,
  "cuda_driver_version": 12040,
  "trace_id": "%016X",
  "traceEvents": [""" % (device, rank, world, world, 0x5EED0000 + rank)


def footer(pid, device, end_us, base_ns, rank):
    return """
  {
    "name": "process_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": 0,
    "args": {
      "name": "python3"
    }
  },
  {
    "name": "process_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": 0,
    "args": {
      "name": "python3"
    }
  },
  {
    "name": "thread_name", "ph": "M", "ts": 0.000, "pid": %d, "tid": %d,
    "args": {
      "name": "stream %d"
    }
  },
  {
    "name": "Record Window End", "ph": "i", "s": "g",
    "pid": "", "tid": "", "ts": %.3f
  }
  ],
  "traceName": "rank%d.pt.trace.json",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": %d
}
""" % (pid, device, device, COMPUTE_STREAM, COMPUTE_STREAM, end_us, rank, base_ns)


def occupancy_fields(grid, block, regs):
    threads = block[0] * block[1] * block[2]
    blocks = grid[0] * grid[1] * grid[2]
    blocks_per_sm = min(blocks / 132.0, max(1.0, 65536.0 / max(1, regs * threads)))
    warps = blocks_per_sm * threads / 32.0
    occupancy = int(0.5 + 100.0 * min(1.0, warps / 64.0))
    return ("%g" % round(blocks_per_sm, 6), "%g" % round(warps, 6) if warps % 1 else "%.1f" % warps,
            occupancy)


def write_rank(path, rank, args, program, factors):
    world = args.ranks
    gpn = args.gpus_per_node
    node = rank // gpn
    device = rank % gpn
    pid = 2000 + 37 * rank
    tid = pid
    rng = random.Random(args.seed * 1000003 + 7919 * rank + 1)
    shared = random.Random(args.seed * 1000003 + 999331)  # the same draws on every rank
    cpu_events = args.cpu_events == "full"
    outlier_rate = args.outliers
    base_ns = 1733000000000000000 + args.seed * 1000000000
    count = args.events // world + (1 if rank < args.events % world else 0)
    # The node's ranks for tensor-parallel collectives; pipeline partner by rank parity.
    node_ranks = list(range(node * gpn, min(world, node * gpn + gpn)))
    partner = rank ^ 1 if (rank ^ 1) < world else rank
    groups = {
        "world": ("0", "default_pg", list(range(world))),
        "node": (str(1 + node), "tp_node%d" % node, node_ranks),
        "pair": (str(1 + (world + gpn - 1) // gpn + rank // 2), "pp_pair%d" % (rank // 2),
                 sorted({rank, partner})),
    }
    group_text = {g: "[" + ", ".join(str(r) for r in ranks) + "]" for g, (_, _, ranks) in groups.items()}
    precomputed = {}
    for key, (name, nominal, sigma, grid, block, regs, smem) in KERNELS.items():
        bps, wps, occ = occupancy_fields(grid, block, regs)
        precomputed[key] = (name, nominal, sigma, grid, block, regs, smem, bps, wps, occ)
    nccl_fields = occupancy_fields((24, 1, 1), (640, 1, 1), 94)
    # Nominal compute time between collectives, for the slow members' late arrival.
    segment_us = []
    since = 0.0
    for item in program:
        if item[0] == "k":
            since += KERNELS[item[1]][1]
        else:
            segment_us.append(since)
            since = 0.0

    out = Writer(path)
    out.add(header(rank, world, device))
    pending = []  # GPU events not yet written: (ts, sequence, text)
    seq = 0
    cpu_t = 1500.0 + 3.0 * rank
    gpu_t = {COMPUTE_STREAM: cpu_t, NCCL_STREAM: cpu_t, P2P_STREAM: cpu_t}
    external = 1
    correlation = 100 + rank
    ev_idx = 0
    written = 0
    step = 0
    my_factor = factors[rank]
    gauss = rng.gauss
    rand = rng.random
    first = True
    while written < count:
        call = 0
        for item in program:
            if written >= count:
                break
            is_kernel = item[0] == "k"
            if is_kernel:
                key = item[1]
                name, nominal, sigma, grid, block, regs, smem, bps, wps, occ = precomputed[key]
                dur = nominal * my_factor * math.exp(gauss(0.0, sigma))
                if rand() < outlier_rate:
                    dur *= 3.0
                op_name, dims, types = OPERATORS[key]
                stream = COMPUTE_STREAM
                extra_args = ""
                cpu_extra = ""
            else:
                _, op, group, nelems = item
                kname, coll_name = COLLECTIVES[op]
                pg_name, pg_desc, members = groups[group]
                inter = len({m // gpn for m in members}) > 1
                size = len(members)
                if op == "all_gather":
                    in_n, out_n = nelems, nelems * size
                elif op == "reduce_scatter":
                    in_n, out_n = nelems * size, nelems
                else:
                    in_n = out_n = nelems
                # Shared draws: transfer noise and every rank's arrival (all ranks, every call).
                t = transfer_us(op, 2.0 * max(in_n, out_n), size, inter)
                t *= math.exp(shared.gauss(0.0, 0.05))
                if shared.random() < outlier_rate:
                    t *= 3.0
                arrival = [(factors[r] - 1.0) * segment_us[call] + shared.expovariate(1 / 15.0)
                           for r in range(world)]
                call += 1
                if op in ("send", "recv"):
                    wait = max(0.0, arrival[partner] - arrival[rank])
                else:
                    wait = max(arrival[m] for m in members) - arrival[rank]
                dur = t + wait
                name, grid, block, regs, smem = kname, (24, 1, 1), (640, 1, 1), 94, 0
                bps, wps, occ = nccl_fields
                op_name = "record_param_comms"
                dims = "[[%d]]" % in_n
                types = "[%s]" % BF16
                stream = P2P_STREAM if op in ("send", "recv") else NCCL_STREAM
                extra_args = NCCL_ARGS % (coll_name, in_n, out_n, size, pg_name, pg_desc,
                                          group_text[group])
                cpu_extra = extra_args.replace("\n      ", " ")
            # CPU side: the operator and the launch inside it.
            op_dur = 9.0 + 6.0 * rand()
            launch_ts = cpu_t + 2.5 + rand()
            launch_dur = 3.5 + 1.5 * rand()
            start = max(gpu_t[stream], launch_ts + launch_dur + 1.5)
            if not is_kernel and stream == NCCL_STREAM:
                start = max(start, gpu_t[COMPUTE_STREAM])  # waits on the compute stream's event
            gpu_t[stream] = start + dur + 0.8 + 0.7 * rand()
            corr = correlation
            correlation += 1
            ext = external
            external += 1
            ev_idx += 2
            # Write pending GPU events that started before this operator.
            while pending and pending[0][0] <= cpu_t:
                out.add(heapq.heappop(pending)[2])
            if cpu_events:
                out.add(CPU_OP_EVENT % (op_name, pid, tid, cpu_t, op_dur, ext, dims, types,
                                        ev_idx, cpu_extra))
                out.add(LAUNCH_EVENT % (pid, tid, launch_ts, launch_dur, ext, corr))
                out.add(FLOW_START % (corr, pid, tid, launch_ts))
            text = KERNEL_EVENT % (name, device, stream, start, dur, ext, device, stream, corr, regs,
                                   smem, bps, wps, grid[0], grid[1], grid[2], block[0], block[1],
                                   block[2], occ, extra_args)
            if cpu_events:
                text += FLOW_END % (corr, device, stream, start)
            seq += 1
            heapq.heappush(pending, (start, seq, text))
            written += 1
            cpu_t += op_dur + 1.0 + 2.0 * rand()
        # End of step: the CPU waits for the GPU (loss.item()), then starts the next step.
        step += 1
        cpu_t = max(cpu_t, max(gpu_t.values())) + 40.0 + 20.0 * rand()
    while pending:
        out.add(heapq.heappop(pending)[2])
    out.add(footer(pid, device, cpu_t, base_ns, rank))
    out.close()
    return written, step


def main(argv):
    parser = argparse.ArgumentParser(
        description="Writes synthetic PyTorch profiler (Kineto) traces, one per rank.")
    parser.add_argument("outdir")
    parser.add_argument("--ranks", type=int, required=True, help="ranks (files)")
    parser.add_argument("--events", type=int, required=True, help="GPU kernel events in all")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--cpu-events", choices=("full", "none"), default="full",
                        help="full: each kernel's CPU operator, launch and flow events (default); "
                             "none: GPU kernels only")
    parser.add_argument("--outliers", type=float, default=0.001,
                        help="probability of a 3x slow kernel or collective (default 0.001)")
    args = parser.parse_args(argv)
    if args.ranks < 1:
        parser.error("--ranks must be at least 1")
    if args.events < args.ranks:
        parser.error("--events must be at least --ranks")
    if args.gpus_per_node < 1:
        parser.error("--gpus-per-node must be at least 1")
    if not 0 <= args.outliers <= 1:
        parser.error("--outliers must be between 0 and 1")
    if args.seed < 0:
        parser.error("--seed must be non-negative")
    os.makedirs(args.outdir, exist_ok=True)
    world = random.Random(args.seed * 1000003 + 17)
    factors = [math.exp(world.gauss(0.0, 0.02)) for _ in range(args.ranks)]
    if args.ranks >= 2 * args.gpus_per_node:  # the second node is slow
        for r in range(args.gpus_per_node, 2 * args.gpus_per_node):
            factors[r] *= 1.2
    program = step_program()
    total = 0
    size = 0
    for rank in range(args.ranks):
        path = os.path.join(args.outdir, "rank%d.pt.trace.json" % rank)
        written, _ = write_rank(path, rank, args, program, factors)
        total += written
        size += os.path.getsize(path)
    sys.stderr.write("wrote %d kernel events (%d a step) in %d files, %d bytes, to %s\n"
                     % (total, len(program), args.ranks, size, args.outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
