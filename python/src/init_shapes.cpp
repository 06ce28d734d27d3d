// Shape inference without data: the C++ shape functions seen from Python,
// for tracers such as PyTorch's fake tensors (opgraph.torch's fake kernels).
#include <nanobind/stl/string.h>

#include "convert.h"

namespace opgraph::python {
namespace {

// (dtype name, shape) -> TensorMeta; `label` names the input in messages.
TensorMeta meta_from_python(const OpDef& op, const std::string& label, nb::handle value) {
  OPGRAPH_CHECK(PyTuple_Check(value.ptr()) && nb::len(value) == 2, op.name(), ": input '", label,
                "' must be a (dtype name, shape) pair or None, got ", nb::type_name(value.type()).c_str());
  const std::string name = nb::cast<std::string>(nb::str(value[0]));
  const std::optional<DType> dtype = dtype_from_name(name);
  OPGRAPH_CHECK(dtype.has_value(), op.name(), ": input '", label, "': unknown dtype '", name, "'");
  TensorMeta meta{*dtype, {}};
  for (nb::handle extent : nb::borrow<nb::sequence>(value[1])) meta.shape.push_back(nb::cast<int64_t>(extent));
  return meta;
}

nb::list infer_output_metas(const char* name, const nb::sequence& input_metas, const nb::kwargs& kwargs) {
  const OpDef& op = Registry::global().get(name);
  const size_t num_arguments = op.tensor_arguments().size();
  OPGRAPH_CHECK(nb::len(input_metas) == num_arguments, op.name(), ": expected a meta for each of its ", num_arguments,
                " tensor arguments, got ", nb::len(input_metas));
  // Flat, as the registry takes them; a Tensor[] argument adds its elements.
  std::vector<std::optional<TensorMeta>> metas;
  std::vector<size_t> list_sizes;
  for (size_t i = 0; i < num_arguments; ++i) {
    const Argument& arg = op.schema.arguments[op.tensor_arguments()[i]];
    nb::handle value = input_metas[i];
    if (arg.type.is_list) {
      OPGRAPH_CHECK(PyList_Check(value.ptr()) || PyTuple_Check(value.ptr()), op.name(), ": input '", arg.name,
                    "' (Tensor[]) must be a list of metas, got ", nb::type_name(value.type()).c_str());
      size_t length = 0;
      for (nb::handle item : nb::borrow<nb::sequence>(value)) {
        const std::string label = detail::concat(arg.name, "[", length++, "]");
        if (item.is_none() && arg.type.optional_elements) {
          metas.emplace_back();
        } else {
          metas.emplace_back(meta_from_python(op, label, item));
        }
      }
      list_sizes.push_back(length);
    } else if (value.is_none()) {
      metas.emplace_back();
    } else {
      metas.emplace_back(meta_from_python(op, arg.name, value));
    }
  }
  const Attrs attrs = Attrs::bind(op.schema, attrs_from_kwargs(op, kwargs), list_sizes);
  std::vector<const TensorMeta*> pointers;
  for (const auto& meta : metas) pointers.push_back(meta ? &*meta : nullptr);
  nb::list outputs;
  for (const TensorMeta& meta : infer_outputs(op, pointers, attrs)) {
    nb::list shape;
    for (int64_t extent : meta.shape) shape.append(extent);
    outputs.append(nb::make_tuple(nb::str(std::string(dtype_name(meta.dtype)).c_str()), nb::tuple(shape)));
  }
  return outputs;
}

}  // namespace

void init_shapes(nb::module_& m) {
  m.def("infer_output_metas", &infer_output_metas,
        nb::sig("def infer_output_metas(name: str, input_metas: list, /, **attrs: object) -> list[tuple[str, "
                "tuple[int, ...]]]"),
        "Runs an op's shape function on metas alone. `input_metas` has one entry per tensor argument: a "
        "(dtype name, shape) pair, None for an omitted `Tensor?`, or a list of pairs for a `Tensor[]`. Returns a "
        "(dtype name, shape) pair per output; raises opgraph.Error naming the op for inputs it rejects.");
}

}  // namespace opgraph::python
