/* A package built for op package ABI 1.0, before Tensor[] arguments: its
 * plain op keeps working, and with OPGRAPH_TEST_LIST_OP its Tensor[] op is
 * refused at load, since a 1.0 package cannot read the lists 1.1 passes. */
#include <opgraph/package/abi.h>
#include <string.h>

static const og_host_api* api;

static int32_t same_shape(void* user, const og_tensor* inputs, int32_t num_inputs, const og_attr* attrs,
                          int32_t num_attrs, og_outputs* outputs, og_error* error) {
  (void)user, (void)num_inputs, (void)attrs, (void)num_attrs;
  if (inputs[0].dtype != OG_FLOAT32) {
    api->set_error(error, "x: expected float32");
    return OG_ERROR;
  }
  return api->set_output(outputs, 0, inputs[0].dtype, inputs[0].ndim, inputs[0].shape, error);
}

static int32_t copy_cpu(void* user, og_context* context, const og_tensor* inputs, int32_t num_inputs,
                        const og_tensor* outputs, int32_t num_outputs, const og_attr* attrs, int32_t num_attrs,
                        og_error* error) {
  (void)user, (void)context, (void)num_inputs, (void)num_outputs, (void)attrs, (void)num_attrs, (void)error;
  int64_t numel = 1;
  for (int32_t d = 0; d < inputs[0].ndim; ++d) numel *= inputs[0].shape[d];
  memcpy(outputs[0].data, inputs[0].data, (size_t)numel * sizeof(float));
  return OG_OK;
}

__attribute__((visibility("default"))) int32_t opgraph_package_init(const og_api_base* base,
                                                                    og_registrar* registrar, og_error* error,
                                                                    const char** ns) {
  api = base->get_api(1, 0);
  if (!api) return OG_ABI_MISMATCH;
  *ns = "test_abi_1_0";
#ifdef OPGRAPH_TEST_LIST_OP
  const char* schema = "first(Tensor[] xs) -> Tensor";
#else
  const char* schema = "copy(Tensor x) -> Tensor";
#endif
  const og_op_def op = {schema, NULL, __FILE__, __LINE__, same_shape, NULL, 1, 0};
  const og_kernel_def kernel = {"copy", OG_CPU, copy_cpu, NULL, 1, 1, 0, __FILE__, __LINE__};
  if (api->def_op(registrar, &op, error) != OG_OK) return OG_ERROR;
  return api->def_kernel(registrar, &kernel, error);
}
