/*
 * Peer for bench/exec.sh: CLBlast's sgemm (C API) on the first OpenCL device (PoCL's CPU device here), n x n
 * row-major, buffers already on the device. Prints the best GFLOP/s of several runs after a warm-up.
 * Usage: exec_peer_clblast N [RUNS]
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <clblast_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 2048;
	int runs = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 3;
	cl_platform_id p;
	cl_device_id d;
	cl_int e;
	cl_context ctx;
	cl_command_queue q;
	cl_mem a, b, c;
	float *h = malloc(n * n * sizeof(float));
	double best = 0.0;

	for (size_t i = 0; i < n * n; i++)
		h[i] = (float)(i % 11) / 11.0f - 0.5f;
	clGetPlatformIDs(1, &p, NULL);
	clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL);
	ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
	q = clCreateCommandQueueWithProperties(ctx, d, NULL, &e);
	a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * n * 4, h, &e);
	b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * n * 4, h, &e);
	c = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * n * 4, h, &e);
	for (int r = -1; r < runs; r++) {
		double t0 = now();
		CLBlastStatusCode st = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeNo, n, n, n,
						    1.0f, a, 0, n, b, 0, n, 0.0f, c, 0, n, &q, NULL);

		clFinish(q);
		if (st != CLBlastSuccess) {
			fprintf(stderr, "CLBlastSgemm failed: %d\n", (int)st);
			return 1;
		}
		if (r >= 0 && 2.0 * (double)n * n * n / (now() - t0) / 1e9 > best)
			best = 2.0 * (double)n * n * n / (now() - t0) / 1e9;
	}
	printf("%.2f\n", best);
	return 0;
}
