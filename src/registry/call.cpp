// Calling an op: check the inputs against the schema, infer and check the
// outputs with the shape function, then run the device's kernel.
#include <algorithm>
#include <string>

#include "opgraph/core/device_backend.h"
#include "opgraph/core/error.h"
#include "opgraph/registry/registry.h"

namespace opgraph {
namespace {

// Re-throws the current opgraph::Error with the op's name in front, so that
// messages from shape functions and kernels say which op they come from.
[[noreturn]] void rethrow_for(const OpDef& op) {
  try {
    throw;
  } catch (const Error& e) {
    std::string_view message = e.what();
    if (message.starts_with(op.name() + ":")) throw;
    throw Error(detail::concat(op.name(), ": ", message));
  } catch (const std::exception& e) {
    throw Error(detail::concat(op.name(), ": ", e.what()));
  }
}

std::string output_name(const OpDef& op, size_t i) {
  const std::string& name = op.schema.returns[op.returns_list() ? 0 : i].name;
  return name.empty() ? "output " + std::to_string(i) : "output " + std::to_string(i) + " ('" + name + "')";
}

// Checks the number of inputs and that every required one is given;
// `given(i)` says whether flat input i is present (not None).
template <typename Given>
void check_arity(const OpDef& op, size_t count, const Attrs& attrs, Given given) {
  OPGRAPH_CHECK(attrs.list_sizes().size() == op.num_tensor_lists(), op.name(),
                ": the attributes give the lengths "
                "of ",
                attrs.list_sizes().size(), " Tensor[] arguments, the op has ", op.num_tensor_lists(),
                "; bind them with Attrs::bind(op.schema, ...)");
  const size_t expected = op.num_inputs(attrs);
  if (count != expected) {
    std::string names;  // "x, bias" or "x, others (3 tensors)"
    op.for_each_tensor_argument(attrs, [&names](const Argument& arg, size_t, size_t n) {
      names += (names.empty() ? "" : ", ") + arg.name;
      if (arg.type.is_list) names += detail::concat(" (", n, n == 1 ? " tensor)" : " tensors)");
    });
    throw Error(detail::concat(op.name(), ": expected ", expected, " tensor inputs (", names, "), got ", count));
  }
  op.for_each_tensor_argument(attrs, [&](const Argument& arg, size_t first, size_t n) {
    for (size_t i = first; i < first + n; ++i) {
      OPGRAPH_CHECK(given(i) || arg.type.may_be_none(), op.name(), ": input '", op.input_name(i, attrs),
                    "' is required but was not given");
    }
  });
}

// Checks count, presence and device of the inputs; returns their device.
Device check_inputs(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs) {
  check_arity(op, inputs.size(), attrs, [&](size_t i) { return inputs[i].defined(); });
  std::optional<Device> device;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) continue;
    if (!device) device = inputs[i].device();
    OPGRAPH_CHECK(inputs[i].device() == *device, op.name(), ": input '", op.input_name(i, attrs), "' is on ",
                  device_str(inputs[i].device()), " but earlier inputs are on ", device_str(*device));
  }
  return device.value_or(Device::cpu());
}

const KernelFn& kernel_for(const OpDef& op, Device device, CallOptions options) {
  if (options.reference) {
    OPGRAPH_CHECK(static_cast<bool>(op.reference), op.name(), ": has no reference implementation");
    OPGRAPH_CHECK(device.type == DeviceType::CPU, op.name(),
                  ": the reference implementation runs on cpu, the "
                  "inputs are on ",
                  device_str(device));
    return op.reference;
  }
  const KernelFn& kernel = op.kernels[static_cast<size_t>(device.type)];
  if (kernel) return kernel;
  // The built-in kernels of a device arrive with its backend, opened here on
  // the first call that needs one.
  std::string why_unavailable;
  if (device.type != DeviceType::CPU && device_available(device.type, &why_unavailable) && kernel) return kernel;
  std::string available;
  for (int d = 0; d < kNumDeviceTypes; ++d) {
    if (op.kernels[d]) available += (available.empty() ? "" : ", ") + std::string(device_type_name(DeviceType(d)));
  }
  throw Error(detail::concat(
      op.name(), ": no kernel for device ", device_str(device),
      "; it has kernels for: ", available.empty() ? "(none)" : available,
      why_unavailable.empty() ? "" : " (" + device_str(device) + " is not available: " + why_unavailable + ")"));
}

// Kernels that index densely get contiguous copies of strided inputs.
void run_kernel(const OpDef& op, const KernelFn& kernel, std::span<const Tensor> inputs,
                std::span<const Tensor> outputs, const Attrs& attrs, Device device,
                std::span<Shape> output_shapes = {}) {
  std::vector<Tensor> dense;
  if (!op.accepts_strided_inputs) {
    for (const Tensor& input : inputs) {
      if (input.defined() && !input.is_contiguous()) {
        dense.assign(inputs.begin(), inputs.end());
        for (Tensor& t : dense) t = t.defined() ? t.contiguous() : t;
        inputs = dense;
        break;
      }
    }
  }
  KernelContext context{&global_thread_pool()};
  context.device = device;
  context.output_shapes = output_shapes;
  try {
    kernel(context, inputs, outputs, attrs);
    // Launches are asynchronous: an error shows at the next check, made here
    // so that it names the op that caused it.
    if (device.type != DeviceType::CPU && device_available(device.type)) {
      device_backend(device.type).check_kernel(op.name());
    }
  } catch (...) {
    rethrow_for(op);
  }
}

// The shape function's answer for input metas check_arity() has accepted.
std::vector<TensorMeta> infer_checked(const OpDef& op, std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
  std::vector<TensorMeta> outputs;
  try {
    outputs = op.shape_fn(inputs, attrs);
  } catch (...) {
    rethrow_for(op);
  }
  OPGRAPH_CHECK(op.returns_list() || outputs.size() == op.num_outputs(), op.name(), ": the shape function returned ",
                outputs.size(), " outputs, the schema declares ", op.num_outputs());
  return outputs;
}

std::vector<TensorMeta> infer_checked(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs) {
  std::vector<const TensorMeta*> metas(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) metas[i] = inputs[i].defined() ? &inputs[i].meta() : nullptr;
  return infer_checked(op, std::span<const TensorMeta* const>(metas), attrs);
}

}  // namespace

void* KernelContext::stream() const {
  return device.type == DeviceType::CPU ? nullptr : device_backend(device.type).current_stream(device.index);
}

void KernelContext::set_output_shape(size_t k, Shape shape) const {
  OPGRAPH_CHECK(k < output_shapes.size(), "the kernel reports the shape of output ", k, ", but the caller takes ",
                output_shapes.size(), " data-dependent output shapes (is the op defined with data-dependent shapes?)");
  output_shapes[k] = std::move(shape);
}

Tensor data_dependent_output(const Tensor& buffer, const Shape& shape) {
  OPGRAPH_CHECK(shape != unreported_shape(), "the kernel did not report the shape of its ", buffer.str(), " output");
  OPGRAPH_CHECK(shape.size() == buffer.shape().size() && std::ranges::all_of(shape, [](int64_t d) { return d >= 0; }) &&
                    shape_nbytes(shape, buffer.dtype()) <= buffer.nbytes(),
                "the kernel reports a shape ", shape_str(shape), " its output ", buffer.str(), " cannot hold");
  if (shape == buffer.shape()) return buffer;
  return Tensor::from_blob(buffer.data(), shape, {}, buffer.dtype(), [keep = buffer] {}, buffer.device());
}

std::vector<TensorMeta> infer_outputs(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs) {
  check_inputs(op, inputs, attrs);
  return infer_checked(op, inputs, attrs);
}

std::vector<TensorMeta> infer_outputs(const OpDef& op, std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
  check_arity(op, inputs.size(), attrs, [&](size_t i) { return inputs[i] != nullptr; });
  return infer_checked(op, inputs, attrs);
}

void call_out(const OpDef& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs, const Attrs& attrs,
              CallOptions options) {
  OPGRAPH_CHECK(!op.data_dependent_shapes, op.name(),
                ": its output shapes depend on the inputs' values, which only "
                "call() gives back; call_out() cannot run it");
  const Device device = check_inputs(op, inputs, attrs);
  const KernelFn& kernel = kernel_for(op, device, options);
  std::vector<TensorMeta> expected = infer_checked(op, inputs, attrs);
  OPGRAPH_CHECK(outputs.size() == expected.size(), op.name(), ": expected ", expected.size(), " output tensors, got ",
                outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    OPGRAPH_CHECK(out.defined(), op.name(), ": ", output_name(op, i), " is not allocated");
    OPGRAPH_CHECK(out.meta() == expected[i], op.name(), ": ", output_name(op, i), " must be ", expected[i].str(),
                  ", got ", out.str());
    OPGRAPH_CHECK(out.device() == device, op.name(), ": ", output_name(op, i), " is on ", device_str(out.device()),
                  ", the inputs on ", device_str(device));
    OPGRAPH_CHECK(out.is_contiguous(), op.name(), ": ", output_name(op, i), " must be contiguous; got strides ",
                  shape_str(out.strides()));
  }
  run_kernel(op, kernel, inputs, outputs, attrs, device);
}

std::vector<Tensor> call(const OpDef& op, std::span<const Tensor> inputs, const Attrs& attrs, CallOptions options) {
  const Device device = check_inputs(op, inputs, attrs);
  const KernelFn& kernel = kernel_for(op, device, options);
  std::vector<Tensor> outputs;
  for (TensorMeta& meta : infer_checked(op, inputs, attrs)) {
    outputs.push_back(Tensor::empty(std::move(meta.shape), meta.dtype, device));
  }
  if (!op.data_dependent_shapes) {
    run_kernel(op, kernel, inputs, outputs, attrs, device);
    return outputs;
  }
  std::vector<Shape> shapes(outputs.size(), unreported_shape());
  run_kernel(op, kernel, inputs, outputs, attrs, device, shapes);
  try {
    for (size_t k = 0; k < outputs.size(); ++k) outputs[k] = data_dependent_output(outputs[k], shapes[k]);
  } catch (...) {
    rethrow_for(op);
  }
  return outputs;
}

std::vector<Tensor> call(std::string_view name, std::span<const Tensor> inputs, const NamedAttrs& attrs) {
  const OpDef& op = Registry::global().get(name);
  OPGRAPH_CHECK(op.num_tensor_lists() <= 1, op.name(), ": it has ", op.num_tensor_lists(),
                " Tensor[] arguments; "
                "give their lengths to Attrs::bind() and call the op with the bound attributes");
  std::vector<size_t> list_sizes;
  if (op.num_tensor_lists() == 1) {
    const size_t others = op.tensor_arguments().size() - 1;
    list_sizes.push_back(inputs.size() > others ? inputs.size() - others : 0);
  }
  return call(op, inputs, Attrs::bind(op.schema, attrs, list_sizes));
}

}  // namespace opgraph
