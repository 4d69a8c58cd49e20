/*
 * clcopy: the measured device-to-device copy bandwidth of the first OpenCL GPU, the peer for /run saxpy on a GPU
 * (tests/gpu/bench_nvidia.sh). Copies a 256 MiB buffer with clEnqueueCopyBuffer, best of 20, and prints GB/s
 * counting the bytes read and written (2 x 256 MiB per copy), the way saxpy's figure counts its traffic.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	cl_platform_id plats[8];
	cl_uint nplat = 0;
	cl_device_id dev = NULL;
	size_t bytes = 256u << 20;
	double best = 0;
	cl_int err;

	if (clGetPlatformIDs(8, plats, &nplat) != CL_SUCCESS)
		return 2;
	for (cl_uint i = 0; i < nplat && dev == NULL; i++)
		if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS)
			dev = NULL;
	if (dev == NULL) {
		fprintf(stderr, "clcopy: no OpenCL GPU\n");
		return 2;
	}
	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
	cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
	cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
	cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
	float zero = 0;

	if (err != CL_SUCCESS)
		return 2;
	clEnqueueFillBuffer(q, a, &zero, sizeof(zero), 0, bytes, 0, NULL, NULL);
	clFinish(q);
	for (int i = 0; i < 21; i++) {
		double t0 = now();
		double gbps;

		clEnqueueCopyBuffer(q, a, b, 0, 0, bytes, 0, NULL, NULL);
		clFinish(q);
		gbps = 2.0 * (double)bytes / (now() - t0) / 1e9;
		if (i > 0 && gbps > best) /* the first copy warms up */
			best = gbps;
	}
	printf("%.2f\n", best);
	clReleaseMemObject(a);
	clReleaseMemObject(b);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	return 0;
}
