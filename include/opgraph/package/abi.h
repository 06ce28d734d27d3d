/* The op package C ABI.
 *
 * An op package is a shared library that exports one C function,
 * OPGRAPH_PACKAGE_INIT_SYMBOL, of type og_package_init_fn. opgraph calls it
 * with an og_api_base; the package asks that base for the host API of the ABI
 * version it was compiled against (ONNX Runtime's GetApi pattern) and
 * registers its ops through it. Only og_api_base and the init signature are
 * frozen forever; everything else may change with the major version. Minor
 * versions only append fields and functions, so a package built against
 * x.m loads in every host x.n with n >= m.
 *
 * Nothing here throws: errors travel as status codes plus a message given to
 * og_host_api.set_error. Package authors use the C++ SDK (opgraph/sdk.h)
 * rather than this header.
 */
#ifndef OPGRAPH_PACKAGE_ABI_H_
#define OPGRAPH_PACKAGE_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1.1: Tensor[] arguments (og_tensor_list).
 * 1.2: device kernels (the call's stream, device index and scratch memory),
 *      and sample inputs declared with an op (def_sample). */
#define OPGRAPH_ABI_VERSION_MAJOR 1
#define OPGRAPH_ABI_VERSION_MINOR 2
#define OPGRAPH_PACKAGE_INIT_SYMBOL "opgraph_package_init"

/* Every dtype, once: X(number, ABI name, C++ enumerator, name as NumPy and
 * PyTorch spell it, PyTorch's ScalarType name, bytes per element, floating
 * point). The C enum below, opgraph::DType, the SDK's DType, the names and
 * the Python dtype table are all made from this list; the numbers never
 * change. complex64 holds interleaved (real, imaginary) float32 pairs. */
#define OG_DTYPES(X)                                            \
  X(0, FLOAT32, Float32, "float32", "Float", 4, 1)              \
  X(1, FLOAT64, Float64, "float64", "Double", 8, 1)             \
  X(2, FLOAT16, Float16, "float16", "Half", 2, 1)               \
  X(3, BFLOAT16, BFloat16, "bfloat16", "BFloat16", 2, 1)        \
  X(4, INT8, Int8, "int8", "Char", 1, 0)                        \
  X(5, UINT8, UInt8, "uint8", "Byte", 1, 0)                     \
  X(6, INT32, Int32, "int32", "Int", 4, 0)                      \
  X(7, INT64, Int64, "int64", "Long", 8, 0)                     \
  X(8, BOOL, Bool, "bool", "Bool", 1, 0)                        \
  X(9, COMPLEX64, Complex64, "complex64", "ComplexFloat", 8, 0) \
  X(10, COMPLEX128, Complex128, "complex128", "ComplexDouble", 16, 0)

#define OG_DTYPE_ENUMERATOR(number, abi, cpp, name, scalar_type, bytes, floating) OG_##abi = number,
enum { OG_DTYPES(OG_DTYPE_ENUMERATOR) };
#undef OG_DTYPE_ENUMERATOR

enum { OG_CPU = 0, OG_CUDA = 1 };

/* Status codes returned by every callback. */
enum {
  OG_OK = 0,
  OG_ERROR = 1,        /* message given to set_error */
  OG_ABI_MISMATCH = 2, /* get_api returned NULL; the host knows why */
};

/* A borrowed tensor. strides count elements. Shape functions get data and
 * strides NULL. Shape functions and kernels get one og_tensor per tensor
 * argument: a `Tensor?` given as None arrives with ndim OG_NDIM_NONE, and
 * (since ABI 1.1) a `Tensor[]` with ndim OG_NDIM_LIST and data pointing to an
 * og_tensor_list of its elements. A package built for 1.0 cannot declare a
 * Tensor[] argument, so it never meets a list. */
typedef struct og_tensor {
  void* data;
  const int64_t* shape;
  const int64_t* strides;
  int32_t ndim;
  int32_t dtype;
  int32_t device_type;
  int32_t device_index;
} og_tensor;

enum { OG_NDIM_NONE = -1, OG_NDIM_LIST = -2 };

/* The elements of a Tensor[] argument (ABI 1.1). */
typedef struct og_tensor_list {
  const og_tensor* items;
  int64_t length;
} og_tensor_list;

/* Attribute kinds: the alternatives of opgraph::AttrValue, in order. */
enum {
  OG_ATTR_NONE = 0,
  OG_ATTR_BOOL = 1,
  OG_ATTR_INT = 2,
  OG_ATTR_FLOAT = 3,
  OG_ATTR_STRING = 4,
  OG_ATTR_INTS = 5,
  OG_ATTR_FLOATS = 6,
  OG_ATTR_DTYPE = 7,
};

/* One non-tensor argument, bound (defaults filled in) in schema order. */
typedef struct og_attr {
  const char* name;
  int32_t kind;
  int64_t i;            /* BOOL, INT, DTYPE */
  double f;             /* FLOAT */
  const char* s;        /* STRING (NUL-terminated) */
  const int64_t* ints;  /* INTS */
  const double* floats; /* FLOATS */
  int64_t length;       /* STRING, INTS, FLOATS */
} og_attr;

typedef struct og_error og_error;     /* where a callback leaves its message */
typedef struct og_outputs og_outputs; /* where a shape function writes metas */
typedef struct og_context og_context; /* per-call execution context */
typedef struct og_registrar og_registrar;

/* num_inputs counts tensor arguments: a Tensor[] is one input. */
typedef int32_t (*og_shape_fn)(void* user, const og_tensor* inputs, int32_t num_inputs, const og_attr* attrs,
                               int32_t num_attrs, og_outputs* outputs, og_error* error);
typedef int32_t (*og_kernel_fn)(void* user, og_context* context, const og_tensor* inputs, int32_t num_inputs,
                                const og_tensor* outputs, int32_t num_outputs, const og_attr* attrs, int32_t num_attrs,
                                og_error* error);
/* A chunk [begin, end) of a parallel loop. Must not fail: the SDK catches. */
typedef void (*og_task_fn)(void* user, int64_t begin, int64_t end);

/* What the package declares for one op. Strings are copied by the host. */
typedef struct og_op_def {
  const char* schema;   /* "name(Tensor x, *, int k) -> Tensor"; namespace optional */
  const char* backward; /* name of the op computing the gradients, or NULL */
  const char* file;     /* where the registration was written, for messages */
  int32_t line;
  og_shape_fn shape;
  void* shape_user;
  /* Arity of the typed functions, checked against the schema at load. */
  int32_t shape_num_inputs;
  int32_t shape_num_attrs;
} og_op_def;

typedef struct og_kernel_def {
  const char* op; /* op name as in its schema; namespace optional */
  int32_t device_type;
  og_kernel_fn kernel;
  void* kernel_user;
  int32_t num_inputs; /* arity of the typed function */
  int32_t num_outputs;
  int32_t num_attrs;
  const char* file;
  int32_t line;
} og_kernel_def;

/* A sample input of an op (1.2), for the conformance suites: see
 * opgraph/registry/sample.h, which these fields mirror. */
enum { OG_LAYOUT_CONTIGUOUS = 0, OG_LAYOUT_TRANSPOSED = 1, OG_LAYOUT_STRIDED = 2 };

typedef struct og_sample_tensor {
  int32_t dtype;
  int32_t ndim;
  const int64_t* shape;
  int32_t layout;
  int32_t none;     /* a `Tensor?` given as None */
  double low, high; /* the values' range */
} og_sample_tensor;

typedef struct og_sample_def {
  const char* op; /* op name as in its schema; namespace optional */
  const og_sample_tensor* inputs;
  int32_t num_inputs;
  const int64_t* list_sizes; /* for ops with more than one Tensor[] */
  int32_t num_list_sizes;
  const og_attr* attrs; /* by name, any order; defaults fill the rest */
  int32_t num_attrs;
  double tolerance;  /* 0: the dtype's default */
  const char* error; /* NULL for a good sample, else the text its error must contain */
} og_sample_def;

typedef struct og_host_api {
  uint32_t abi_major;
  uint32_t abi_minor;
  void (*set_error)(og_error* error, const char* message);
  int32_t (*def_op)(og_registrar* registrar, const og_op_def* def, og_error* error);
  int32_t (*def_kernel)(og_registrar* registrar, const og_kernel_def* def, og_error* error);
  int32_t (*set_output)(og_outputs* outputs, int32_t index, int32_t dtype, int32_t ndim, const int64_t* shape,
                        og_error* error);
  int32_t (*num_threads)(og_context* context);
  void (*parallel_for)(og_context* context, int64_t begin, int64_t end, int64_t grain, og_task_fn task, void* user);
  /* 1.2. The stream a kernel for a device launches its work on (for CUDA a
   * cudaStream_t; NULL is the legacy default stream, and what the CPU gets). */
  void* (*stream)(og_context* context);
  int32_t (*device_index)(og_context* context);
  /* `bytes` of memory on the call's device, valid until the kernel returns
   * (for a device, until the work it launched on the stream is done). NULL
   * when it cannot be had, or stream() when the device cannot be reached: the
   * call then fails with the host's reason whatever the kernel returns. */
  void* (*scratch)(og_context* context, uint64_t bytes);
  int32_t (*def_sample)(og_registrar* registrar, const og_sample_def* def, og_error* error);
} og_host_api;

/* Frozen. */
typedef struct og_api_base {
  uint32_t abi_major;
  uint32_t abi_minor;
  /* NULL when this host cannot serve that version. */
  const og_host_api* (*get_api)(uint32_t abi_major, uint32_t abi_minor);
} og_api_base;

/* Frozen. `ns` receives the package's namespace (static storage). */
typedef int32_t (*og_package_init_fn)(const og_api_base* base, og_registrar* registrar, og_error* error,
                                      const char** ns);

#ifdef __cplusplus
}

/* The C++ element type of each dtype that has one: X(type, C++ enumerator),
 * for the DTypeOf traits of opgraph::DType and of the SDK's. */
#define OG_DTYPE_CXX_TYPES(X)       \
  X(float, Float32)                 \
  X(double, Float64)                \
  X(int8_t, Int8)                   \
  X(uint8_t, UInt8)                 \
  X(int32_t, Int32)                 \
  X(int64_t, Int64)                 \
  X(bool, Bool)                     \
  X(std::complex<float>, Complex64) \
  X(std::complex<double>, Complex128)

/* Declares DTypeOf<T> for every type above, over an enum named DType. */
#define OG_DTYPE_OF(type, cpp)                 \
  template <>                                  \
  struct DTypeOf<type> {                       \
    static constexpr DType value = DType::cpp; \
  };
#endif

#endif /* OPGRAPH_PACKAGE_ABI_H_ */
