/*
 * exec_kernels: the OpenCL C source of the executor's kernels, embedded as one string and built once per device
 * by exec_opencl.c. Included only by exec_opencl.c.
 *
 * The memory-bound kernels move float4 per work-item with a scalar tail; dot reduces in local memory and leaves one
 * partial sum per work-group for the host to add in double. sgemm is register-blocked: each work-item computes
 * SGEMM_TM rows x 32 columns of C in two float16 accumulators per row (16 in all: enough independent FMAs to keep
 * two FMA pipes busy; one broadcast of A feeds two FMAs, two 16-wide loads of B feed 16), in work-groups of 4 x 8
 * items, i.e. 64 x 128 tiles of C; the host pads m to a multiple of 64 and n to one of 128, and k is not padded.
 * The loops over a work-item's rows carry opencl_unroll_hint: unrolled, the accumulator arrays live in registers
 * (PoCL's compiler otherwise kept them on the stack, a load and a store around every FMA, at a third of the speed).
 * A and B have their own row pitches (lda, ldb), which the host pads by one cache line so that rows a power of two
 * apart do not all fall into the same cache sets. softmax gives each row one work-group and reduces its maximum and
 * sum in local memory. exec_generate makes a generated input on the device (the kernel table's generator) and
 * exec_gather takes the sample of an output there, so that neither the inputs nor the whole output cross the link.
 */
#ifndef ACCELD_EXEC_KERNELS_H
#define ACCELD_EXEC_KERNELS_H

#define EXEC_SGEMM_TM 8  /* rows per work-item */
#define EXEC_SGEMM_TN 32 /* columns per work-item */
#define EXEC_SGEMM_LX 4  /* work-group: items along n */
#define EXEC_SGEMM_LY 8  /* work-group: items along m */
#define EXEC_REDUCE_WG 64 /* work-group size of dot and softmax */

static const char exec_kernels_cl[] =
	"#define TM 8\n"
	"#define UNROLL __attribute__((opencl_unroll_hint))\n"
	"#ifndef WG\n"
	"#define WG 64\n"
	"#endif\n"
	"__kernel void exec_saxpy(const ulong n, const float alpha, __global const float *x, __global const float *y,\n"
	"                    __global float *out)\n"
	"{\n"
	"    const size_t i = get_global_id(0) * 4;\n"
	"    if (i + 4 <= n) {\n"
	"        vstore4(alpha * vload4(0, x + i) + vload4(0, y + i), 0, out + i);\n"
	"    } else {\n"
	"        for (size_t j = i; j < n; j++)\n"
	"            out[j] = alpha * x[j] + y[j];\n"
	"    }\n"
	"}\n"
	"__kernel void exec_triad(const ulong n, const float scale, __global const float *b, __global const float *c,\n"
	"                    __global float *out)\n"
	"{\n"
	"    const size_t i = get_global_id(0) * 4;\n"
	"    if (i + 4 <= n) {\n"
	"        vstore4(vload4(0, b + i) + scale * vload4(0, c + i), 0, out + i);\n"
	"    } else {\n"
	"        for (size_t j = i; j < n; j++)\n"
	"            out[j] = b[j] + scale * c[j];\n"
	"    }\n"
	"}\n"
	"__kernel void exec_dot(const ulong n, __global const float *x, __global const float *y, __global float *partial)\n"
	"{\n"
	"    __local float sums[WG];\n"
	"    const size_t lid = get_local_id(0);\n"
	"    const size_t stride = get_global_size(0) * 4;\n"
	"    float4 acc = (float4)(0.0f);\n"
	"    float tail = 0.0f;\n"
	"    size_t i = get_global_id(0) * 4;\n"
	"    for (; i + 4 <= n; i += stride)\n"
	"        acc = fma(vload4(0, x + i), vload4(0, y + i), acc);\n"
	"    for (size_t j = i; j < n && j < i + 4; j++)\n"
	"        tail = fma(x[j], y[j], tail);\n"
	"    sums[lid] = acc.s0 + acc.s1 + acc.s2 + acc.s3 + tail;\n"
	"    barrier(CLK_LOCAL_MEM_FENCE);\n"
	"    for (size_t s = WG / 2; s > 0; s >>= 1) {\n"
	"        if (lid < s)\n"
	"            sums[lid] += sums[lid + s];\n"
	"        barrier(CLK_LOCAL_MEM_FENCE);\n"
	"    }\n"
	"    if (lid == 0)\n"
	"        partial[get_group_id(0)] = sums[0];\n"
	"}\n"
	"__kernel void exec_sgemm(const int M, const int N, const int K, const float alpha, __global const float *A,\n"
	"                    const int lda, __global const float *B, const int ldb, const float beta,\n"
	"                    __global const float *C, __global float *out)\n"
	"{\n"
	"    const int col = get_global_id(0) * 32;\n"
	"    const int row = get_global_id(1) * TM;\n"
	"    float16 acc[TM], acd[TM];\n"
	"    UNROLL\n"
	"    for (int r = 0; r < TM; r++) {\n"
	"        acc[r] = (float16)(0.0f);\n"
	"        acd[r] = (float16)(0.0f);\n"
	"    }\n"
	"    for (int kk = 0; kk < K; kk++) {\n"
	"        const float16 b = vload16(0, B + (size_t)kk * ldb + col);\n"
	"        const float16 d = vload16(0, B + (size_t)kk * ldb + col + 16);\n"
	"        UNROLL\n"
	"        for (int r = 0; r < TM; r++) {\n"
	"            const float16 a = (float16)(A[(size_t)(row + r) * lda + kk]);\n"
	"            acc[r] = fma(a, b, acc[r]);\n"
	"            acd[r] = fma(a, d, acd[r]);\n"
	"        }\n"
	"    }\n"
	"    UNROLL\n"
	"    for (int r = 0; r < TM; r++) {\n"
	"        const size_t at = (size_t)(row + r) * N + col;\n"
	"        float16 o = alpha * acc[r];\n"
	"        float16 p = alpha * acd[r];\n"
	"        if (beta != 0.0f) {\n"
	"            o += beta * vload16(0, C + at);\n"
	"            p += beta * vload16(0, C + at + 16);\n"
	"        }\n"
	"        vstore16(o, 0, out + at);\n"
	"        vstore16(p, 0, out + at + 16);\n"
	"    }\n"
	"}\n"
	"__kernel void exec_softmax(const ulong cols, __global const float *x, __global float *out)\n"
	"{\n"
	"    __local float red[WG];\n"
	"    const size_t lid = get_local_id(0);\n"
	"    __global const float *in = x + get_group_id(0) * cols;\n"
	"    __global float *o = out + get_group_id(0) * cols;\n"
	"    float m = -INFINITY;\n"
	"    for (size_t j = lid; j < cols; j += WG)\n"
	"        m = fmax(m, in[j]);\n"
	"    red[lid] = m;\n"
	"    barrier(CLK_LOCAL_MEM_FENCE);\n"
	"    for (size_t s = WG / 2; s > 0; s >>= 1) {\n"
	"        if (lid < s)\n"
	"            red[lid] = fmax(red[lid], red[lid + s]);\n"
	"        barrier(CLK_LOCAL_MEM_FENCE);\n"
	"    }\n"
	"    m = red[0];\n"
	"    barrier(CLK_LOCAL_MEM_FENCE);\n"
	"    float sum = 0.0f;\n"
	"    for (size_t j = lid; j < cols; j += WG) {\n"
	"        const float e = exp(in[j] - m);\n"
	"        o[j] = e;\n"
	"        sum += e;\n"
	"    }\n"
	"    red[lid] = sum;\n"
	"    barrier(CLK_LOCAL_MEM_FENCE);\n"
	"    for (size_t s = WG / 2; s > 0; s >>= 1) {\n"
	"        if (lid < s)\n"
	"            red[lid] += red[lid + s];\n"
	"        barrier(CLK_LOCAL_MEM_FENCE);\n"
	"    }\n"
	"    const float inv = 1.0f / red[0];\n"
	"    for (size_t j = lid; j < cols; j += WG)\n"
	"        o[j] *= inv;\n"
	"}\n";

/* The second part of the source (a string literal has a length limit): the generator and the gather. */
static const char exec_kernels_cl_data[] =
	/* the kernel table's generator (kernel_gen_value in exec/kernel.h): element e of an input of count elements,
	 * stored as rows of cols at a pitch */
	"uint acc_mix(uint x)\n"
	"{\n"
	"    x ^= x >> 16;\n"
	"    x *= 0x7feb352du;\n"
	"    x ^= x >> 15;\n"
	"    x *= 0x846ca68bu;\n"
	"    x ^= x >> 16;\n"
	"    return x;\n"
	"}\n"
	"float acc_gen(const uint key, const ulong e)\n"
	"{\n"
	"    const uint h = acc_mix((uint)e * 0x9e3779b9u + (key ^ (uint)(e >> 32) * 0x85ebca6bu));\n"
	"    return (float)(h >> 8) * (1.0f / 8388608.0f) - 1.0f;\n"
	"}\n"
	/* a vector of count elements, one per work-item */
	"__kernel void exec_generate(const ulong count, const uint key, __global float *dst)\n"
	"{\n"
	"    const ulong e = get_global_id(0);\n"
	"    if (e < count)\n"
	"        dst[e] = acc_gen(key, e);\n"
	"}\n"
	/* a matrix of rows of cols at a row pitch: work-item (column, row) */
	"__kernel void exec_generate_rows(const ulong rows, const ulong cols, const ulong pitch, const uint key,\n"
	"                    __global float *dst)\n"
	"{\n"
	"    const ulong c = get_global_id(0);\n"
	"    const ulong r = get_global_id(1);\n"
	"    if (c < cols && r < rows)\n"
	"        dst[r * pitch + c] = acc_gen(key, r * cols + c);\n"
	"}\n"
	/* the sample of an output of rows of cols at a pitch (struct kernel_sample): element j at row
	 * (r0 + (j / ncols) * rs) mod rows, column (c0 + (j % ncols) * cs) mod cols */
	"__kernel void exec_gather(const ulong r0, const ulong rs, const ulong rows, const ulong c0, const ulong cs,\n"
	"                    const ulong cols, const ulong ncols, const ulong pitch, __global const float *src,\n"
	"                    __global float *dst)\n"
	"{\n"
	"    const ulong j = get_global_id(0);\n"
	"    const ulong r = (r0 + (j / ncols) * rs) % rows;\n"
	"    const ulong c = (c0 + (j % ncols) * cs) % cols;\n"
	"    dst[j] = src[r * pitch + c];\n"
	"}\n";

#endif
