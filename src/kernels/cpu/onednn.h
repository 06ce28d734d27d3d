// What the oneDNN-backed kernels share: one CPU engine, and a stream that
// runs on as many threads as opgraph was given.
#pragma once

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "opgraph/registry/registry.h"

namespace opgraph::kernels {

inline dnnl::engine& onednn_engine() {
  static dnnl::engine cpu(dnnl::engine::kind::cpu, 0);
  return cpu;
}

// oneDNN runs on OpenMP threads: match opgraph's count before each call.
inline dnnl::stream onednn_stream(const KernelContext& context) {
  omp_set_num_threads(context.pool->num_threads());
  return dnnl::stream(onednn_engine());
}

}  // namespace opgraph::kernels
