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
void init_llm(nb::module_& m);
}  // namespace opgraph::python

NB_MODULE(_C, m) {
  using namespace opgraph::python;
  m.doc() = "opgraph's C++ core: tensors, the op registry, op packages, op calls, graphs, sessions and the tokenizer.";
  nb::exception<opgraph::Error>(m, "Error", PyExc_RuntimeError);
  // A script that registers a torch.library kernel hands its functions, and
  // through them its module's globals (an IR's ValueInfos, say), to
  // PyTorch's dispatcher, which keeps them past this module's teardown: what
  // nanobind would report at exit as leaks is freed by nothing but the exit.
  nb::set_leak_warnings(false);
  init_numpy();
  init_tensor(m);
  init_registry(m);
  init_call(m);
  init_graph(m);
  init_session(m);
  init_shapes(m);
  init_cuda(m);
  init_llm(m);
}
