#include "opgraph/core/cpu_capability.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "opgraph/core/error.h"

namespace opgraph {
namespace {

constexpr CpuCapability kCapabilities[] = {CpuCapability::Default, CpuCapability::Avx2, CpuCapability::Avx512};

// __builtin_cpu_supports also checks that the OS saves the wider registers.
CpuCapability detected_capability() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    return CpuCapability::Avx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return CpuCapability::Avx2;
#endif
  return CpuCapability::Default;
}

CpuCapability capped_by_environment(CpuCapability detected) {
  const char* requested = std::getenv("OPGRAPH_CPU_CAPABILITY");
  if (requested == nullptr || *requested == '\0') return detected;
  for (CpuCapability capability : kCapabilities) {
    if (std::string_view(cpu_capability_name(capability)) == requested) return std::min(capability, detected);
  }
  throw Error(detail::concat("OPGRAPH_CPU_CAPABILITY: expected default, avx2 or avx512, got \"", requested, "\""));
}

}  // namespace

CpuCapability cpu_capability() {
  static const CpuCapability capability = capped_by_environment(detected_capability());
  return capability;
}

bool cpu_has_bf16() {
#if defined(__x86_64__)
  static const bool has = cpu_capability() == CpuCapability::Avx512 &&
                          (__builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16"));
  return has;
#else
  return false;
#endif
}

bool cpu_has_vnni() {
#if defined(__x86_64__)
  static const bool has = cpu_capability() == CpuCapability::Avx512 && __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

const char* cpu_capability_name(CpuCapability capability) {
  switch (capability) {
    case CpuCapability::Avx2: return "avx2";
    case CpuCapability::Avx512: return "avx512";
    case CpuCapability::Default: break;
  }
  return "default";
}

std::string cpu_model_name() {
#if defined(__x86_64__)
  unsigned regs[12] = {};
  for (unsigned leaf = 0; leaf < 3; ++leaf) {
    if (!__get_cpuid(0x80000002 + leaf, &regs[4 * leaf], &regs[4 * leaf + 1], &regs[4 * leaf + 2],
                     &regs[4 * leaf + 3])) {
      break;
    }
  }
  char brand[sizeof regs + 1] = {};
  std::memcpy(brand, regs, sizeof regs);
  std::string name(brand);
  name.erase(0, name.find_first_not_of(' '));
  name.erase(name.find_last_not_of(' ') + 1);
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    // The extended family and model count where the base family is 15 (and 6 for the model).
    const unsigned base_family = (eax >> 8) & 0xf, base_model = (eax >> 4) & 0xf;
    const unsigned family = base_family == 15 ? base_family + ((eax >> 20) & 0xff) : base_family;
    const unsigned model = base_family == 15 || base_family == 6 ? base_model | (((eax >> 16) & 0xf) << 4) : base_model;
    name += detail::concat(" (family ", family, ", model ", model, ")");
  }
  return name;
#else
  return "unknown";
#endif
}

}  // namespace opgraph
