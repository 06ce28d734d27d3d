// Conversions between Python objects and opgraph values, shared by the
// init_*.cpp files.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "opgraph/opgraph.h"

namespace opgraph::python {

namespace nb = nanobind;

// Any object NumPy, PyTorch or a DLPack/buffer producer hands over.
using InputArray = nb::ndarray<nb::ro>;
using OutputArray = nb::ndarray<>;

DType dtype_from_dlpack(nb::dlpack::dtype dtype);
nb::dlpack::dtype dtype_to_dlpack(DType dtype);

// Loads NumPy's C API; called once when the module is imported.
void init_numpy();

// A Tensor viewing the memory of a NumPy array, or nullopt when `object` is
// not one (or is one opgraph cannot view: byte-swapped, misaligned, or
// read-only when `writable` is asked for).
std::optional<Tensor> borrow_numpy(nb::handle object, bool writable);

// A Tensor viewing the array's memory. It does not keep the array alive: use
// it only while the array is referenced (as for the duration of a call).
Tensor borrow(const nb::ndarray<nb::ro>& array);
Tensor borrow(const nb::ndarray<>& array);

// A Tensor viewing an input: an opgraph.Tensor, a NumPy array, or any DLPack
// or buffer producer; nullopt for any other object. Arrays that need it are
// added to `keep`: the tensor is valid while `keep` and `value` are alive.
std::optional<Tensor> borrow_input(nb::handle value, std::vector<InputArray>& keep);

// A NumPy array sharing the tensor's storage; the array keeps it alive.
nb::object to_numpy(const Tensor& tensor);
// A nanobind ndarray sharing the tensor's storage, for its __dlpack__.
nb::object to_dlpack_producer(const Tensor& tensor);
// "cpu", "cuda" or "cuda:N".
Device device_from_string(const std::string& text);
// None, "int8", "int4", "int8_asym" or "int4_asym" (with zero points), and
// the group size that goes with it (None: a scale per output channel for
// int8, groups of 32 for int4); `argument`
// names the keyword the caller took `name` as. `activations`: None or
// "int8" (WeightQuantization's int8_activations).
WeightQuantization weight_quantization_from_string(const char* argument, const std::optional<std::string>& name,
                                                   std::optional<int64_t> group_size,
                                                   const std::optional<std::string>& activations = std::nullopt);
// Where results go back to, decided by where the inputs came from: NumPy
// arrays when every input was on the host (a device result is copied back);
// else arrays of the first device input's framework (torch, CuPy) through
// DLPack, or opgraph.Tensors for another producer.
class ResultPlace {
 public:
  // Called for each input, with the Python object it came from.
  void note(nb::handle source, const Tensor& input);
  nb::object operator()(const Tensor& result) const;

 private:
  nb::handle device_input_;
  // The first input that is neither a NumPy array nor an opgraph.Tensor (a
  // torch tensor, say): a host result NumPy cannot hold (bfloat16) is
  // returned as that input's kind.
  nb::handle framework_input_;
};

// A dtype given as its name, a NumPy dtype (or scalar type) or a torch.dtype;
// errors start with `what`.
DType dtype_from_python(nb::handle value, const char* what);
// Python value -> attribute value: None, bool, int, float, str, lists of
// ints or floats, and dtypes (NumPy or PyTorch) by name.
AttrValue attr_from_python(nb::handle value, const char* name);
nb::object attr_to_python(const AttrValue& value);

// A shape as a tuple of ints, with symbolic dimensions as their names.
nb::tuple shape_to_python(const SymbolicShape& shape);
// os.fspath(path): str and os.PathLike objects.
std::string path_string(nb::handle path);
// A dict of name -> array (or None: no weights) as tensors viewing the arrays
// (see borrow_input), or owning copies of them when `copy` is set.
Weights weights_from_python(nb::handle weights, bool copy, std::vector<InputArray>& keep);
// A call's keyword arguments as attributes; errors name the op. The names
// view the keys of `kwargs`, so they live as long as it does. With `out`
// given, the keyword `out` goes there instead of becoming an attribute.
NamedAttrs attrs_from_kwargs(const OpDef& op, const nb::kwargs& kwargs, nb::object* out = nullptr);

}  // namespace opgraph::python
