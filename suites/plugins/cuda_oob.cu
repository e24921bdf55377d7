// The out-of-bounds kernel of the GPU crash-isolation test (suites/plugins/cuda_oob.py).
#include <cuda_runtime.h>
__global__ void oob_write(float* p, long long offset) { p[offset + threadIdx.x] = 1.0f; }
extern "C" int wkvbench_oob_launch(float* p, long long offset) {
    oob_write<<<1, 32>>>(p, offset);
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    return (int)e;
}
extern "C" const char* wkvbench_oob_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }
