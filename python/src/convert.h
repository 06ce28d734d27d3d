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

// A NumPy array sharing the tensor's storage; the array keeps it alive.
nb::object to_numpy(const Tensor& tensor);
// A nanobind ndarray sharing the tensor's storage, for its __dlpack__.
nb::object to_dlpack_producer(const Tensor& tensor);

// Python value -> attribute value: None, bool, int, float, str, lists of
// ints or floats, and dtypes (NumPy or PyTorch) by name.
AttrValue attr_from_python(nb::handle value, const char* name);
nb::object attr_to_python(const AttrValue& value);

// A call's keyword arguments as attributes; errors name the op. The names
// view the keys of `kwargs`, so they live as long as it does. With `out`
// given, the keyword `out` goes there instead of becoming an attribute.
NamedAttrs attrs_from_kwargs(const OpDef& op, const nb::kwargs& kwargs, nb::object* out = nullptr);

}  // namespace opgraph::python
