// Everything a C++ program embedding opgraph needs.
#pragma once

#include "opgraph/core/cpu_capability.h"
#include "opgraph/core/dtype.h"
#include "opgraph/core/error.h"
#include "opgraph/core/npy.h"
#include "opgraph/core/random.h"
#include "opgraph/core/tensor.h"
#include "opgraph/core/thread_pool.h"
#include "opgraph/graph/graph.h"
#include "opgraph/graph/opg.h"
#include "opgraph/package/loader.h"
#include "opgraph/registry/attrs.h"
#include "opgraph/registry/conformance.h"
#include "opgraph/registry/registry.h"
#include "opgraph/registry/schema.h"
#include "opgraph/runtime/memory_plan.h"
#include "opgraph/runtime/session.h"
