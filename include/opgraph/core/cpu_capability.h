// The vector instruction set the built-in kernels run their loops with.
#pragma once

#include <string>

namespace opgraph {

// Ordered: each level includes the ones before it.
enum class CpuCapability {
  Default,  // baseline x86-64 (SSE2), which every x86-64 CPU has
  Avx2,     // AVX2 and FMA
  Avx512,   // AVX-512 F, BW, VL and DQ
};

// The widest this CPU supports, lowered to the level the environment variable
// OPGRAPH_CPU_CAPABILITY names ("default", "avx2" or "avx512") when it is set:
// a newer machine then runs, and tests, the loops an older CPU would. It never
// raises the level above what the CPU has. Decided once per process.
CpuCapability cpu_capability();

// "default", "avx2" or "avx512".
const char* cpu_capability_name(CpuCapability capability);

// Whether this CPU multiplies bfloat16 in hardware (AVX-512 BF16 or AMX
// BF16), which a Session with Precision::BFloat16 needs. False below
// CpuCapability::Avx512, OPGRAPH_CPU_CAPABILITY's level included.
bool cpu_has_bf16();

// Whether this CPU sums products of bytes into 32-bit lanes in one
// instruction (AVX512-VNNI), which a Session's int8 activations multiply on
// where a product has few rows (AVX2 takes two). False below
// CpuCapability::Avx512, as cpu_has_bf16.
bool cpu_has_vnni();

// The CPU's brand string with its family and model numbers, as
// "AMD EPYC (family 25, model 1)": what tells CPUs of one brand apart where
// a virtual machine shortens the brand string.
std::string cpu_model_name();

}  // namespace opgraph
