"""opassess.source.native: __global__ kernels sized by brace matching, bindings, GPU library calls."""
from __future__ import annotations

from opassess.source.native import blank_comments_and_strings, library_of, scan_native

SOURCE = """\
#include <cublas_v2.h>
/* __global__ void in_a_comment() { } */
const char* s = "__global__ void in_a_string() {";
template <typename T>
__global__ void add_kernel(T* x, const T* y, int n) {
  int i = threadIdx.x;
  if (i < n) { x[i] += y[i]; }
}
__global__ void declared_only(float* x);
void host(cublasHandle_t h, float* x) {
  cublasSgemm(h, 0, 0, 1, 1, 1, nullptr, x, 1, x, 1, nullptr, x, 1);
  cudaMalloc((void**)&x, 4);
  cudaMalloc((void**)&x, 8);
  ncclAllReduce(x, x, 1, 0, 0, 0, 0);
  add_kernel<<<1, 32>>>(x, x, 1);
}
TORCH_LIBRARY(myops, m) { m.def("add", &host); }
"""


def test_blanking_keeps_line_numbers():
    clean = blank_comments_and_strings(SOURCE)
    assert clean.count("\n") == SOURCE.count("\n")
    assert "in_a_comment" not in clean and "in_a_string" not in clean


def test_kernels_bindings_and_library_calls():
    sites = scan_native(SOURCE, "k.cu")
    assert [(s.line, s.kind, s.subject) for s in sites] == [
        (5, "cuda-kernel", "add_kernel"), (17, "native-binding", "TORCH_LIBRARY"),
        (11, "native-runtime", "CUDA runtime, NCCL, cuBLAS")]
    kernel, binding, runtime = sites
    assert kernel.size.lines == 4 and kernel.code.startswith("__global__ void add_kernel")
    assert binding.get("module") == "myops"
    assert runtime.all("call") == ("cublasSgemm x1", "cudaMalloc x2", "ncclAllReduce x1")
    assert runtime.all("launch") == ("add_kernel",)


def test_launch_bounds_are_skipped_when_naming_a_kernel():
    (site,) = scan_native("__global__ void __launch_bounds__(128, 2) k2(int* p) {\n p[0] = 1;\n}\n", "a.cu")
    assert (site.subject, site.size.lines) == ("k2", 3)


def test_library_of_call_prefix():
    assert library_of("cublasLtMatmul") == "cuBLAS" and library_of("cudnnConvolutionForward") == "cuDNN"
    assert library_of("cudaMemcpyAsync") == "CUDA runtime"
