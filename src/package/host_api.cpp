#include "host_api.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory_resource>

#include "opgraph/core/error.h"

struct og_outputs {
  std::vector<opgraph::TensorMeta>* metas;
};

struct og_context {
  const opgraph::KernelContext* context;
  // Scratch memory the kernel asked for, released when the call returns.
  std::vector<opgraph::Tensor> scratch;
  // Why a request the kernel made of the host failed; the call's error.
  std::string failure;
};

namespace opgraph::package {
namespace {

thread_local std::pair<uint32_t, uint32_t> rejected_version{0, 0};

og_tensor to_og(const Tensor& t) {
  if (!t.defined()) return {nullptr, nullptr, nullptr, OG_NDIM_NONE, 0, 0, 0};
  return {t.data(),
          t.shape().data(),
          t.strides().data(),
          static_cast<int32_t>(t.dim()),
          static_cast<int32_t>(t.dtype()),
          static_cast<int32_t>(t.device().type),
          t.device().index};
}

og_tensor to_og(const TensorMeta* meta) {
  if (!meta) return {nullptr, nullptr, nullptr, OG_NDIM_NONE, 0, 0, 0};
  return {nullptr,
          meta->shape.data(),
          nullptr,
          static_cast<int32_t>(meta->dim()),
          static_cast<int32_t>(meta->dtype),
          OG_CPU,
          0};
}

// Per-call scratch for the C views of a call's arguments: one stack buffer,
// so that crossing the ABI allocates nothing for ordinary ops.
class CallScratch {
 public:
  template <typename T>
  std::pmr::vector<T> array(size_t n) {
    return std::pmr::vector<T>(n, T{}, &arena_);
  }

 private:
  std::array<std::byte, 2048> buffer_;
  std::pmr::monotonic_buffer_resource arena_{buffer_.data(), buffer_.size()};
};

// For each tensor argument of an op, whether it is a Tensor[].
using ListArguments = std::vector<bool>;

ListArguments list_arguments(const Schema& schema) {
  ListArguments lists;
  for (const Argument& arg : schema.arguments) {
    if (arg.type.is_tensor()) lists.push_back(arg.type.is_list);
  }
  return lists;
}

// The C view of a call's flat inputs: one og_tensor per tensor argument, a
// Tensor[] being an OG_NDIM_LIST entry whose og_tensor_list points into
// `elements`.
struct OgInputs {
  std::pmr::vector<og_tensor> elements;  // one per flat input
  std::pmr::vector<og_tensor_list> lists;
  std::pmr::vector<og_tensor> arguments;
};

template <typename Input>  // Tensor in kernels, const TensorMeta* in shape functions
OgInputs to_og(std::span<const Input> inputs, const ListArguments& is_list, const Attrs& attrs, CallScratch& scratch) {
  OgInputs og{scratch.array<og_tensor>(inputs.size()), scratch.array<og_tensor_list>(attrs.list_sizes().size()),
              scratch.array<og_tensor>(is_list.size())};
  for (size_t i = 0; i < inputs.size(); ++i) og.elements[i] = to_og(inputs[i]);
  size_t next = 0, list = 0;
  for (size_t a = 0; a < is_list.size(); ++a) {
    if (!is_list[a]) {
      og.arguments[a] = og.elements[next++];
      continue;
    }
    const size_t length = attrs.list_sizes()[list];
    og_tensor_list& items = og.lists[list++];
    items = {og.elements.data() + next, static_cast<int64_t>(length)};
    og.arguments[a] = {&items, nullptr, nullptr, OG_NDIM_LIST, 0, 0, 0};
    next += length;
  }
  return og;
}

std::pmr::vector<og_attr> to_og(const Attrs& attrs, CallScratch& scratch) {
  auto out = scratch.array<og_attr>(attrs.size());
  for (size_t i = 0; i < attrs.size(); ++i) {
    og_attr& a = out[i];
    a.name = attrs.name(i).c_str();
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::monostate>) {
            a.kind = OG_ATTR_NONE;
          } else if constexpr (std::is_same_v<T, bool>) {
            a.kind = OG_ATTR_BOOL, a.i = v;
          } else if constexpr (std::is_same_v<T, int64_t>) {
            a.kind = OG_ATTR_INT, a.i = v;
          } else if constexpr (std::is_same_v<T, double>) {
            a.kind = OG_ATTR_FLOAT, a.f = v;
          } else if constexpr (std::is_same_v<T, std::string>) {
            a.kind = OG_ATTR_STRING, a.s = v.c_str(), a.length = static_cast<int64_t>(v.size());
          } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            a.kind = OG_ATTR_INTS, a.ints = v.data(), a.length = static_cast<int64_t>(v.size());
          } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            a.kind = OG_ATTR_FLOATS, a.floats = v.data(), a.length = static_cast<int64_t>(v.size());
          } else {
            a.kind = OG_ATTR_DTYPE, a.i = static_cast<int64_t>(v);
          }
        },
        attrs[i]);
  }
  return out;
}

void set_error(og_error* error, const char* message) {
  if (error) error->message = message ? message : "(no message)";
}

int32_t fail(og_error* error, const std::string& message) {
  set_error(error, message.c_str());
  return OG_ERROR;
}

std::string where(const char* file, int32_t line) { return detail::concat(file ? file : "?", ":", line); }

std::string qualify(const og_registrar* registrar, std::string name) {
  if (name.find("::") != std::string::npos || !registrar->ns || !*registrar->ns) return name;
  return std::string(*registrar->ns) + "::" + name;
}

size_t count_attrs(const Schema& schema) {
  size_t n = 0;
  for (const Argument& arg : schema.arguments) n += arg.type.is_tensor() ? 0 : 1;
  return n;
}

// The typed functions' parameter counts must match the schema; a mismatch is
// a bug in the package, reported at load rather than at the first call.
std::string check_arity(const OpDef& op, const char* what, int32_t inputs, int32_t outputs, int32_t attrs) {
  const size_t want_inputs = op.tensor_arguments().size();
  const size_t want_attrs = count_attrs(op.schema);
  if (static_cast<size_t>(inputs) != want_inputs) {
    return detail::concat(op.name(), ": the ", what, " takes ", inputs, " input tensors, the schema declares ",
                          want_inputs);
  }
  if (outputs >= 0 && static_cast<size_t>(outputs) != op.num_outputs()) {
    return detail::concat(op.name(), ": the ", what, " takes ", outputs, " output tensors, the schema declares ",
                          op.num_outputs());
  }
  if (static_cast<size_t>(attrs) != want_attrs) {
    return detail::concat(op.name(), ": the ", what, " takes ", attrs, " attributes, the schema declares ", want_attrs);
  }
  return {};
}

ShapeFn wrap_shape(og_shape_fn fn, void* user, ListArguments is_list) {
  return [fn, user, is_list = std::move(is_list)](std::span<const TensorMeta* const> inputs, const Attrs& attrs) {
    CallScratch scratch;
    OgInputs og_inputs = to_og(inputs, is_list, attrs, scratch);
    auto og_attrs = to_og(attrs, scratch);
    std::vector<TensorMeta> metas;
    og_outputs outputs{&metas};
    og_error error;
    if (fn(user, og_inputs.arguments.data(), static_cast<int32_t>(og_inputs.arguments.size()), og_attrs.data(),
           static_cast<int32_t>(og_attrs.size()), &outputs, &error) != OG_OK) {
      throw Error(error.message);
    }
    return metas;
  };
}

KernelFn wrap_kernel(og_kernel_fn fn, void* user, ListArguments is_list) {
  return [fn, user, is_list = std::move(is_list)](const KernelContext& context, std::span<const Tensor> inputs,
                                                  std::span<const Tensor> outputs, const Attrs& attrs) {
    CallScratch scratch;
    OgInputs og_inputs = to_og(inputs, is_list, attrs, scratch);
    auto og_results = scratch.array<og_tensor>(outputs.size());
    for (size_t i = 0; i < outputs.size(); ++i) og_results[i] = to_og(outputs[i]);
    auto og_attrs = to_og(attrs, scratch);
    og_context og_ctx{&context, {}, {}};
    og_error error;
    const int32_t status = fn(
        user, &og_ctx, og_inputs.arguments.data(), static_cast<int32_t>(og_inputs.arguments.size()), og_results.data(),
        static_cast<int32_t>(og_results.size()), og_attrs.data(), static_cast<int32_t>(og_attrs.size()), &error);
    if (!og_ctx.failure.empty()) throw Error(og_ctx.failure);
    if (status != OG_OK) throw Error(error.message);
  };
}

// The op of that qualified name this package has declared so far, or null.
OpDef* declared_op(og_registrar* registrar, const std::string& name) {
  for (OpDef& op : registrar->ops) {
    if (op.name() == name) return &op;
  }
  return nullptr;
}

// Packages built for ABI 1.0 read every og_tensor as a tensor, so they may
// not declare Tensor[] arguments, which cross the ABI as lists since 1.1.
template <uint32_t kPackageMinor>
int32_t def_op(og_registrar* registrar, const og_op_def* def, og_error* error) {
  try {
    OPGRAPH_CHECK(def && def->schema && def->shape, "def_op: missing schema or shape function");
    OpDef op;
    op.source = detail::concat(where(def->file, def->line), " in ", registrar->package);
    op.schema = Schema::parse(def->schema);
    if (op.schema.ns.empty() && registrar->ns && *registrar->ns) op.schema.ns = *registrar->ns;
    OPGRAPH_CHECK(!registrar->ns || !*registrar->ns || op.schema.ns == *registrar->ns, where(def->file, def->line),
                  ": op '", op.schema.qualified_name(), "' is outside the package namespace '", *registrar->ns, "'");
    op.shape_fn = wrap_shape(def->shape, def->shape_user, list_arguments(op.schema));
    if (def->backward) op.backward = qualify(registrar, def->backward);
    op.finalize();
    if constexpr (kPackageMinor == 0) {
      for (const Argument& arg : op.schema.arguments) {
        OPGRAPH_CHECK(!arg.type.is_tensor_list(), where(def->file, def->line), ": op '", op.name(), "': argument '",
                      arg.name,
                      "' is a Tensor[], which a package built for op package ABI 1.0 cannot take; "
                      "rebuild the package against this opgraph");
      }
    }
    std::string arity = check_arity(op, "shape function", def->shape_num_inputs, -1, def->shape_num_attrs);
    OPGRAPH_CHECK(arity.empty(), where(def->file, def->line), ": ", arity);
    const OpDef* other = declared_op(registrar, op.name());
    OPGRAPH_CHECK(other == nullptr, where(def->file, def->line), ": op '", op.name(), "' is already declared at ",
                  other->source);
    registrar->ops.push_back(std::move(op));
    return OG_OK;
  } catch (const std::exception& e) {
    return fail(error, e.what());
  }
}

AttrValue from_og(const og_attr& a) {
  switch (a.kind) {
    case OG_ATTR_NONE: return std::monostate{};
    case OG_ATTR_BOOL: return a.i != 0;
    case OG_ATTR_INT: return a.i;
    case OG_ATTR_FLOAT: return a.f;
    case OG_ATTR_STRING: return std::string(a.s, static_cast<size_t>(a.length));
    case OG_ATTR_INTS: return std::vector<int64_t>(a.ints, a.ints + a.length);
    case OG_ATTR_FLOATS: return std::vector<double>(a.floats, a.floats + a.length);
    case OG_ATTR_DTYPE:
      OPGRAPH_CHECK(a.i >= 0 && a.i < kNumDTypes, "attribute '", a.name, "': dtype code ", a.i);
      return static_cast<DType>(a.i);
  }
  throw Error(detail::concat("attribute '", a.name, "': unknown kind ", a.kind));
}

SampleTensor from_og(const og_sample_tensor& t) {
  OPGRAPH_CHECK(t.dtype >= 0 && t.dtype < kNumDTypes, "dtype code ", t.dtype);
  OPGRAPH_CHECK(t.ndim >= 0 && (t.ndim == 0 || t.shape), "rank ", t.ndim);
  OPGRAPH_CHECK(t.layout >= OG_LAYOUT_CONTIGUOUS && t.layout <= OG_LAYOUT_STRIDED, "layout code ", t.layout);
  SampleTensor sample{static_cast<DType>(t.dtype),
                      Shape(t.shape, t.shape + t.ndim),
                      static_cast<SampleTensor::Layout>(t.layout),
                      t.none != 0,
                      t.low,
                      t.high};
  return sample;
}

int32_t def_sample(og_registrar* registrar, const og_sample_def* def, og_error* error) {
  try {
    OPGRAPH_CHECK(def && def->op, "def_sample: missing op name");
    const std::string name = qualify(registrar, def->op);
    OpDef* op = declared_op(registrar, name);
    OPGRAPH_CHECK(op != nullptr, "a sample for op '", name,
                  "', which this package does not declare; declare it with def() first");
    Sample sample;
    for (int32_t i = 0; i < def->num_inputs; ++i) sample.inputs.push_back(from_og(def->inputs[i]));
    sample.list_sizes.assign(def->list_sizes, def->list_sizes + std::max(def->num_list_sizes, 0));
    for (int32_t i = 0; i < def->num_attrs; ++i) sample.attrs.emplace_back(def->attrs[i].name, from_og(def->attrs[i]));
    sample.tolerance = def->tolerance;
    if (def->error) sample.error = def->error;
    op->samples.push_back(std::move(sample));
    return OG_OK;
  } catch (const std::exception& e) {
    return fail(error, detail::concat("def_sample: ", e.what()));
  }
}

int32_t def_kernel(og_registrar* registrar, const og_kernel_def* def, og_error* error) {
  try {
    OPGRAPH_CHECK(def && def->op && def->kernel, "def_kernel: missing op name or kernel");
    OPGRAPH_CHECK(def->device_type >= 0 && def->device_type < kNumDeviceTypes, where(def->file, def->line),
                  ": unknown device type ", def->device_type);
    const std::string name = qualify(registrar, def->op);
    OpDef* op = declared_op(registrar, name);
    const char* device = device_type_name(static_cast<DeviceType>(def->device_type)).data();
    OPGRAPH_CHECK(op != nullptr, where(def->file, def->line), ": a ", device, " kernel for op '", name,
                  "', which this package does not declare; declare it with def() first");
    KernelFn& slot = op->kernels[def->device_type];
    OPGRAPH_CHECK(!slot, where(def->file, def->line), ": op '", name, "' already has a ", device, " kernel");
    std::string arity = check_arity(*op, "kernel", def->num_inputs, def->num_outputs, def->num_attrs);
    OPGRAPH_CHECK(arity.empty(), where(def->file, def->line), ": ", arity);
    slot = wrap_kernel(def->kernel, def->kernel_user, list_arguments(op->schema));
    return OG_OK;
  } catch (const std::exception& e) {
    return fail(error, e.what());
  }
}

int32_t set_output(og_outputs* outputs, int32_t index, int32_t dtype, int32_t ndim, const int64_t* shape,
                   og_error* error) {
  if (index < 0 || static_cast<size_t>(index) != outputs->metas->size()) {
    return fail(error, detail::concat("shape function set output ", index, " out of order; expected output ",
                                      outputs->metas->size()));
  }
  if (dtype < 0 || dtype >= kNumDTypes) return fail(error, detail::concat("shape function gave dtype code ", dtype));
  if (ndim < 0 || (ndim > 0 && !shape)) return fail(error, detail::concat("shape function gave rank ", ndim));
  TensorMeta meta{static_cast<DType>(dtype), Shape(shape, shape + ndim)};
  for (int64_t extent : meta.shape) {
    if (extent < 0) return fail(error, "shape function gave a negative extent: " + meta.str());
  }
  outputs->metas->push_back(std::move(meta));
  return OG_OK;
}

int32_t num_threads(og_context* context) { return context->context->pool->num_threads(); }

void parallel_for(og_context* context, int64_t begin, int64_t end, int64_t grain, og_task_fn task, void* user) {
  context->context->pool->parallel_for(begin, end, grain, [task, user](int64_t b, int64_t e) { task(user, b, e); });
}

void* stream(og_context* context) {
  try {
    return context->context->stream();
  } catch (const std::exception& e) {
    context->failure = e.what();
    return nullptr;
  }
}

int32_t device_index(og_context* context) { return context->context->device.index; }

// The memory is a tensor the call holds; a device frees it in stream order,
// after the work the kernel launched.
void* scratch(og_context* context, uint64_t bytes) {
  try {
    OPGRAPH_CHECK(bytes <= kMaxAllocationBytes, "scratch: ", bytes, " bytes is more than one allocation can hold");
    const Tensor& memory = context->scratch.emplace_back(
        Tensor::empty({static_cast<int64_t>(bytes)}, DType::UInt8, context->context->device));
    return memory.data();
  } catch (const std::exception& e) {
    context->failure = e.what();
    return nullptr;
  }
}

// The API a package built for ABI 1.`kPackageMinor` gets.
template <uint32_t kPackageMinor>
constexpr og_host_api kHostApi = {
    OPGRAPH_ABI_VERSION_MAJOR,
    OPGRAPH_ABI_VERSION_MINOR,
    set_error,
    def_op<kPackageMinor>,
    def_kernel,
    set_output,
    num_threads,
    parallel_for,
    stream,
    device_index,
    scratch,
    def_sample,
};

const og_host_api* get_api(uint32_t major, uint32_t minor) {
  if (major != OPGRAPH_ABI_VERSION_MAJOR || minor > OPGRAPH_ABI_VERSION_MINOR) {
    rejected_version = {major, minor};
    return nullptr;
  }
  return minor == 0 ? &kHostApi<0> : &kHostApi<OPGRAPH_ABI_VERSION_MINOR>;
}

constexpr og_api_base kApiBase = {OPGRAPH_ABI_VERSION_MAJOR, OPGRAPH_ABI_VERSION_MINOR, get_api};

}  // namespace

const og_api_base* api_base() { return &kApiBase; }
std::pair<uint32_t, uint32_t> last_rejected_version() { return rejected_version; }

}  // namespace opgraph::package
