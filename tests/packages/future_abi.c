/* A package built for an ABI major version this opgraph does not serve. */
#include <opgraph/package/abi.h>

__attribute__((visibility("default"))) int32_t opgraph_package_init(const og_api_base* base,
                                                                    og_registrar* registrar,
                                                                    og_error* error, const char** ns) {
  (void)registrar;
  (void)error;
  (void)ns;
  return base->get_api(OPGRAPH_ABI_VERSION_MAJOR + 1, 0) ? OG_OK : OG_ABI_MISMATCH;
}
