// opgraph.ops.call: the generic, any-op entry point from Python.
#include <nanobind/stl/string.h>

#include "convert.h"

namespace opgraph::python {
namespace {

// Inputs stay referenced by `arrays` for the duration of the call, which is
// what makes borrowing their memory safe. label() names the input in messages.
template <typename Label>
Tensor input_tensor(const OpDef& op, Label&& label, nb::handle value, bool may_be_none,
                    std::vector<InputArray>& arrays) {
  if (value.is_none() && may_be_none) return Tensor();
  std::optional<Tensor> tensor;
  try {
    tensor = borrow_input(value, arrays);
  } catch (const Error& e) {
    throw Error(detail::concat(op.name(), ": ", label(), ": ", e.what()));
  }
  if (!tensor) {
    throw Error(detail::concat(op.name(), ": ", label(),
                               " must be an array (NumPy, PyTorch or any DLPack or "
                               "buffer producer)",
                               may_be_none ? " or None" : "", ", got ", nb::type_name(value.type()).c_str()));
  }
  return *tensor;
}

// A Tensor[] argument arrives as a list or tuple; its elements join the flat
// inputs. Returns the list's length.
size_t append_list(const OpDef& op, const Argument& arg, nb::handle value, std::vector<Tensor>& inputs,
                   ResultPlace& place, std::vector<InputArray>& arrays) {
  OPGRAPH_CHECK(PyList_Check(value.ptr()) || PyTuple_Check(value.ptr()), op.name(), ": input '", arg.name,
                "' must be a list or tuple of arrays (Tensor[]), got ", nb::type_name(value.type()).c_str());
  size_t length = 0;
  for (nb::handle item : nb::borrow<nb::sequence>(value)) {
    auto label = [&] { return detail::concat("input '", arg.name, "[", length, "]'"); };
    inputs.push_back(input_tensor(op, label, item, arg.type.optional_elements, arrays));
    place.note(item, inputs.back());
    ++length;
  }
  return length;
}

Tensor output_tensor(const OpDef& op, size_t i, nb::handle value, std::vector<OutputArray>& arrays) {
  if (nb::isinstance<Tensor>(value)) return nb::cast<Tensor>(value);
  if (auto tensor = borrow_numpy(value, /*writable=*/true)) return *tensor;
  OutputArray array;
  if (!nb::try_cast(value, array, /*convert=*/false)) {
    throw Error(detail::concat(op.name(), ": out[", i, "] must be a writable array, got ",
                               nb::type_name(value.type()).c_str()));
  }
  arrays.push_back(array);
  return borrow(array);
}

nb::object call_op(const char* name, nb::args args, nb::kwargs kwargs, CallOptions options) {
  const OpDef& op = Registry::global().get(name);
  // Positional arguments are the tensor arguments in schema order; extra ones
  // become inputs for the registry's count check to report.
  auto tensor_argument = [&op](size_t i) -> const Argument* {
    return i < op.tensor_arguments().size() ? &op.schema.arguments[op.tensor_arguments()[i]] : nullptr;
  };
  std::vector<InputArray> keep_inputs;
  std::vector<Tensor> inputs;
  ResultPlace place;
  std::vector<size_t> list_sizes;
  inputs.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const Argument* arg = tensor_argument(i);
    if (arg && arg->type.is_list) {
      list_sizes.push_back(append_list(op, *arg, args[i], inputs, place, keep_inputs));
    } else {
      auto label = [&] { return arg ? "input '" + arg->name + "'" : "input " + std::to_string(i); };
      inputs.push_back(input_tensor(op, label, args[i], /*may_be_none=*/true, keep_inputs));
      place.note(args[i], inputs.back());
    }
  }
  for (size_t i = args.size(); const Argument* arg = tensor_argument(i); ++i) {
    OPGRAPH_CHECK(!arg->type.is_list, op.name(), ": input '", arg->name, "' (Tensor[]) was not given");
  }
  // Trailing `Tensor?` inputs may be left out, as in PyTorch.
  for (size_t i = args.size(); tensor_argument(i) && tensor_argument(i)->type.optional; ++i) inputs.emplace_back();

  nb::object out;
  NamedAttrs given = attrs_from_kwargs(op, kwargs, &out);
  Attrs attrs = Attrs::bind(op.schema, given, list_sizes);

  if (!out.is_valid() || out.is_none()) {
    std::vector<Tensor> results;
    {
      nb::gil_scoped_release release;
      results = opgraph::call(op, inputs, attrs, options);
    }
    if (results.size() == 1 && !op.returns_list()) return place(results[0]);
    nb::list list;
    for (const Tensor& t : results) list.append(place(t));
    return nb::tuple(list);
  }

  const bool single = !PyTuple_Check(out.ptr()) && !PyList_Check(out.ptr());
  std::vector<OutputArray> keep_outputs;
  std::vector<Tensor> outputs;
  if (single) {
    outputs.push_back(output_tensor(op, 0, out, keep_outputs));
  } else {
    size_t i = 0;
    for (nb::handle value : nb::borrow<nb::sequence>(out))
      outputs.push_back(output_tensor(op, i++, value, keep_outputs));
  }
  {
    nb::gil_scoped_release release;
    call_out(op, inputs, outputs, attrs, options);
  }
  return out;
}

}  // namespace

void init_call(nb::module_& m) {
  m.def(
      "call", [](const char* name, nb::args args, nb::kwargs kwargs) { return call_op(name, args, kwargs, {}); },
      nb::sig("def call(name: str, /, *inputs: object, out: object = None, **attrs: object) -> object"),
      "Runs a registered op. Tensor inputs are positional (any DLPack or buffer producer, zero-copy; None for an "
      "omitted `Tensor?`; a list or tuple of them for a `Tensor[]`), attributes are keywords. Returns new arrays "
      "(one, or a tuple): NumPy arrays on the CPU; on a GPU, arrays of the inputs' framework (torch, CuPy). Or "
      "fills `out` (an array or a sequence of arrays) and returns it. Device kernels run on opgraph.cuda's "
      "current stream, the legacy default stream unless set.");
  m.def(
      "call_reference",
      [](const char* name, nb::args args, nb::kwargs kwargs) {
        return call_op(name, args, kwargs, {.reference = true});
      },
      nb::sig("def call_reference(name: str, /, *inputs: object, out: object = None, **attrs: object) -> object"),
      "Like call(), but runs the op's plain reference implementation: the oracle its fast kernels are tested "
      "against.");
  // The floor a Python-to-C++ call costs: bench/conv1d.py compares call() with it.
  m.def("_noop", [](nb::args, nb::kwargs) {}, nb::sig("def _noop(*args: object, **kwargs: object) -> None"));
}

}  // namespace opgraph::python
