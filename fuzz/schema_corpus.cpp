// Writes the schema parser's fuzzing corpus: the schema of every built-in op
// as the registry prints it, and the hand-made schemas below.
//
//   schema_corpus FOLDER
//
// The built-in schemas are ATen's, so the fuzzer starts from the language as
// it is used; the hand-made ones add what they lack (aliases on lists, every
// kind of default, kwarg-only markers in odd places) and inputs the parser
// must refuse. Inputs that once made it fail are kept in
// fuzz/regressions/schema_parser, which the replay runs too.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "opgraph/registry/registry.h"

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kHandMade[] = {
    "ns::every_default.overload(Tensor(a!) self, Tensor?[] indices, *, int[2] stride=1, float eps=1e-05, "
    "Scalar alpha=1, Scalar beta=0.5, ScalarType? dtype=None, ScalarType kind=float, ScalarType code=6, "
    "Device? device=None, Layout layout=strided, MemoryFormat memory_format=contiguous_format, "
    "str mode=\"same\", str quote='it\\'s', bool[3] mask=[True, False, True], SymInt[] size=[0, -1], "
    "SymInt[2] pad=[0, 0], float[] scale=[inf, -inf, nan, 1e+300], int x=-9223372036854775808, "
    "Generator? generator=None, SymBool? flag=None) -> (Tensor(a!) out, Tensor indices)",
    "f() -> ()",
    "f(Tensor(a -> *) x) -> Tensor(a)",
    "f(Tensor(a! -> a|b)[] x, Tensor(b)?[]? y) -> Tensor[]",
    "f(int[0] empty=[], int[1] one=[7], float[2] two=1) -> Tensor",
    "f(*, Tensor x) -> (Tensor a, Tensor b)",
    "f(Tensor x) -> Tensor named",
    "f(Device d=\"cuda:0\", Layout l='it\\'s', MemoryFormat? m=\"None\", Device e=\"\") -> Tensor",
    "  ns :: f . o ( Tensor x , int y = 3 ) -> ( Tensor , Tensor )  ",
    // Refused: each breaks one rule.
    "",
    "f(",
    "f(Tensor x, Tensor x) -> Tensor",
    "f(*, *, Tensor x) -> Tensor",
    "f(int x=) -> Tensor",
    "f(int[2] x=[1, 2, 3]) -> Tensor",
    "f(Tensor x=1) -> Tensor",
    "f(float x=1e999) -> Tensor",
    "f(ScalarType x=quaternion) -> Tensor",
    "f(Complex x) -> Tensor",
    "f(Tensor x) -> Tensor trailing",
};

void write(const fs::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

// "aten::add.Tensor" -> "aten_add.Tensor": a file name on any file system.
std::string file_name(std::string name) {
  if (const size_t colons = name.find("::"); colons != std::string::npos) name.replace(colons, 2, "_");
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
    return 2;
  }
  const fs::path folder = argv[1];
  fs::create_directories(folder);
  const opgraph::Registry& registry = opgraph::Registry::global();
  for (const std::string& name : registry.list()) write(folder / file_name(name), registry.get(name).schema.str());
  for (size_t i = 0; i < std::size(kHandMade); ++i) write(folder / ("hand_made_" + std::to_string(i)), kHandMade[i]);
  return 0;
}
