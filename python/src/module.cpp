// opgraph._C: assembled from the init_*.cpp files.
#include "convert.h"

namespace opgraph::python {
void init_tensor(nb::module_& m);
void init_registry(nb::module_& m);
void init_call(nb::module_& m);
void init_graph(nb::module_& m);
void init_session(nb::module_& m);
void init_shapes(nb::module_& m);
void init_cuda(nb::module_& m);
}  // namespace opgraph::python

NB_MODULE(_C, m) {
  using namespace opgraph::python;
  m.doc() = "opgraph's C++ core: tensors, the op registry, op packages, op calls, graphs and sessions.";
  nb::exception<opgraph::Error>(m, "Error", PyExc_RuntimeError);
  init_numpy();
  init_tensor(m);
  init_registry(m);
  init_call(m);
  init_graph(m);
  init_session(m);
  init_shapes(m);
  init_cuda(m);
}
