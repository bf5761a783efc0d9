#include "kernels/blas.h"

#include <clblast_c.h>

#include <c10/util/Exception.h>

#include "runtime/commands.h"

namespace drawbridge::kernels {

bool blas_supports(c10::ScalarType type) { return type == c10::kFloat || type == c10::kDouble; }

void gemm(cl_command_queue q, c10::ScalarType type, size_t m, size_t n, size_t k, double alpha, const BlasMatrix& a,
          const BlasMatrix& b, double beta, const BlasMatrix& c, size_t batch) {
  runtime::OpScope scope("gemm (CLBlast)");
  auto ta = a.transposed ? CLBlastTransposeYes : CLBlastTransposeNo;
  auto tb = b.transposed ? CLBlastTransposeYes : CLBlastTransposeNo;
  CLBlastStatusCode status;
  if (type == c10::kFloat) {
    status = CLBlastSgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, static_cast<float>(alpha), a.buffer,
                                        a.offset, a.ld, a.batch_stride, b.buffer, b.offset, b.ld, b.batch_stride,
                                        static_cast<float>(beta), c.buffer, c.offset, c.ld, c.batch_stride, batch, &q,
                                        nullptr);
  } else {
    TORCH_INTERNAL_ASSERT(type == c10::kDouble, "gemm: unsupported dtype ", type);
    status = CLBlastDgemmStridedBatched(CLBlastLayoutRowMajor, ta, tb, m, n, k, alpha, a.buffer, a.offset, a.ld,
                                        a.batch_stride, b.buffer, b.offset, b.ld, b.batch_stride, beta, c.buffer,
                                        c.offset, c.ld, c.batch_stride, batch, &q, nullptr);
  }
  if (status == CLBlastOpenCLOutOfResources || status == CLBlastOpenCLOutOfHostMemory ||
      status == CLBlastTempBufferAllocFailure)
    TORCH_CHECK_WITH(OutOfMemoryError, false, "ocl out of memory in CLBlast GEMM (status ", status, ")");
  TORCH_CHECK(status == CLBlastSuccess, "CLBlast GEMM failed with status ", static_cast<int>(status),
              " (m=", m, " n=", n, " k=", k, " batch=", batch, ")");
  runtime::maybe_sync(q);
}

}  // namespace drawbridge::kernels
