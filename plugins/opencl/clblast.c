/* wafer — SPDX-License-Identifier: MIT
 *
 * clblast.c: CLBlast's GEMM (https://github.com/CNugteren/CLBlast) as the
 * "clblast" variant of matmul, beside the plugin's own tiled kernels, so
 * autotune can pick the vendor-tuned one where it wins. Built when
 * configure finds CLBlast (--without-clblast turns it off); [opencl]
 * clblast = off hides the variant at run time.
 *
 * CLBlast takes buffers with element offsets, which is how wafer passes
 * slices anyway, and runs on the queue it is given, so the GEMM keeps its
 * place among our own commands. Row-major C = op(A) op(B) maps to
 * CLBlast's row-major layout directly, with leading dimensions k or m for
 * A and n or k for B, and batches through the strided-batched entry.
 *
 * CLBlast compiles its kernels at the first call per device and
 * precision (seconds on PoCL) and keeps them for the process;
 * ocl_clblast_shutdown drops them with the plugin. */
#include "build-config.h"

#include <stdio.h>

#include "plugins/opencl/ocl_plugin.h"

#ifdef WAFER_HAVE_CLBLAST

#include <clblast_c.h>

int ocl_clblast_available(const struct ocl_device *dev, wafer_dtype dtype)
{
	if (!dev->state->clblast_enabled)
		return 0;
	if (dtype == WAFER_DTYPE_F32)
		return 1;
	return dtype == WAFER_DTYPE_F16 && dev->has_fp16;
}

/* CLBlast's own codes below the OpenCL range, for the error text. */
static const char *status_name(CLBlastStatusCode code)
{
	switch (code) {
	case CLBlastNotImplemented: return "CLBlastNotImplemented";
	case CLBlastInvalidDimension: return "CLBlastInvalidDimension";
	case CLBlastInvalidLeadDimA: return "CLBlastInvalidLeadDimA";
	case CLBlastInvalidLeadDimB: return "CLBlastInvalidLeadDimB";
	case CLBlastInvalidLeadDimC: return "CLBlastInvalidLeadDimC";
	case CLBlastInsufficientMemoryA: return "CLBlastInsufficientMemoryA";
	case CLBlastInsufficientMemoryB: return "CLBlastInsufficientMemoryB";
	case CLBlastInsufficientMemoryC: return "CLBlastInsufficientMemoryC";
	case CLBlastInvalidBatchCount: return "CLBlastInvalidBatchCount";
	case CLBlastInvalidLocalMemUsage: return "CLBlastInvalidLocalMemUsage";
	case CLBlastNoHalfPrecision: return "CLBlastNoHalfPrecision";
	case CLBlastDatabaseError: return "CLBlastDatabaseError";
	case CLBlastUnknownError: return "CLBlastUnknownError";
	case CLBlastUnexpectedError: return "CLBlastUnexpectedError";
	default: return ocl_error_name((cl_int)code);
	}
}

wafer_status ocl_clblast_gemm(struct ocl_queue *q, const struct ocl_bound *bind,
			      const struct wafer_matmul_params *p,
			      wafer_dtype dtype, cl_event *event)
{
	CLBlastTranspose ta = p->transpose_a ? CLBlastTransposeYes
					     : CLBlastTransposeNo;
	CLBlastTranspose tb = p->transpose_b ? CLBlastTransposeYes
					     : CLBlastTransposeNo;
	size_t es = dtype == WAFER_DTYPE_F16 ? 2 : 4;
	size_t lda = p->transpose_a ? p->m : p->k;
	size_t ldb = p->transpose_b ? p->k : p->n;
	CLBlastStatusCode code;

	if (dtype == WAFER_DTYPE_F16)
		code = CLBlastHgemmStridedBatched(
			CLBlastLayoutRowMajor, ta, tb, p->m, p->n, p->k,
			0x3c00 /* 1.0 */, bind[1].mem, bind[1].offset / es,
			lda, p->batch_stride_a, bind[2].mem,
			bind[2].offset / es, ldb, p->batch_stride_b, 0,
			bind[0].mem, bind[0].offset / es, p->n,
			p->batch_stride_c, p->batch, &q->queue, event);
	else
		code = CLBlastSgemmStridedBatched(
			CLBlastLayoutRowMajor, ta, tb, p->m, p->n, p->k, 1.0f,
			bind[1].mem, bind[1].offset / es, lda,
			p->batch_stride_a, bind[2].mem, bind[2].offset / es,
			ldb, p->batch_stride_b, 0.0f, bind[0].mem,
			bind[0].offset / es, p->n, p->batch_stride_c, p->batch,
			&q->queue, event);
	if (code == CLBlastSuccess)
		return WAFER_OK;
	if (event)
		*event = NULL;
	ocl_host(q->device)->set_error(OCL_NAME ": CLBlast%cgemmStridedBatched"
				       "(%zu x %zu x %zu, batch %zu): %s (%d)",
				       dtype == WAFER_DTYPE_F16 ? 'H' : 'S',
				       (size_t)p->m, (size_t)p->n, (size_t)p->k,
				       (size_t)p->batch, status_name(code),
				       (int)code);
	return code > -1000 ? ocl_status_of((cl_int)code) : WAFER_ERROR_DEVICE;
}

void ocl_clblast_shutdown(void)
{
	CLBlastClearCache();
}

#else /* !WAFER_HAVE_CLBLAST */

int ocl_clblast_available(const struct ocl_device *dev, wafer_dtype dtype)
{
	return 0;
}

wafer_status ocl_clblast_gemm(struct ocl_queue *q, const struct ocl_bound *bind,
			      const struct wafer_matmul_params *p,
			      wafer_dtype dtype, cl_event *event)
{
	ocl_host(q->device)->set_error(OCL_NAME ": built without CLBlast");
	return WAFER_ERROR_NOT_SUPPORTED;
}

void ocl_clblast_shutdown(void)
{
}

#endif
