// .npy files: round trips of every dtype, the header NumPy expects, and an
// error naming the file for everything the reader does not accept.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "opgraph/core/npy.h"
#include "testing.h"

namespace opgraph {
namespace {

using testing::arange;
using testing::error_of;
using testing::temp_path;

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// A file holding `header` (the dict, padded by this function) and `data`,
// in format version 1.0.
std::string npy_file(const std::string& name, std::string header, const std::string& data) {
  header += std::string(63 - (10 + header.size()) % 64, ' ') + "\n";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xFF);
  bytes += static_cast<char>(header.size() >> 8);
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes << header << data;
  return path;
}

TEST(Npy, RoundTripsEveryDtypeAndRank) {
  const std::string path = temp_path("round_trip.npy");
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16, DType::Int8, DType::UInt8, DType::Int32,
                      DType::Int64, DType::Bool, DType::Complex64, DType::Complex128}) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{1, 7, 1, 3}, Shape{0, 4}}) {
      Tensor t = Tensor::empty(shape, dtype);
      auto* bytes = static_cast<uint8_t*>(t.data());
      // Byte patterns valid for every dtype: 0 and 1 for bool.
      for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = dtype == DType::Bool ? i % 2 : static_cast<uint8_t>(i * 37);
      write_npy(path, t);
      const Tensor back = read_npy(path);
      EXPECT_EQ(back.meta(), t.meta()) << t.str();
      EXPECT_EQ(std::memcmp(back.data(), t.data(), t.nbytes()), 0) << t.str();
    }
  }
  std::filesystem::remove(path);
}

TEST(Npy, WritesAnAlignedVersion1Header) {
  const std::string path = temp_path("header.npy");
  write_npy(path, arange({2, 3}));
  const std::string bytes = file_bytes(path);
  std::filesystem::remove(path);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(bytes.size(), 128u + 24u);  // the data starts 64-byte aligned
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(bytes.substr(8, 2), std::string("\x76\x00", 2));  // header length 118, little-endian
  EXPECT_EQ(bytes.substr(10, 118), dict + std::string(118 - dict.size() - 1, ' ') + "\n");
}

TEST(Npy, WritesStridedTensorsInCOrder) {
  const std::string path = temp_path("strided.npy");
  const Tensor t = arange({3, 4}).transpose(0, 1);
  write_npy(path, t);
  const Tensor back = read_npy(path);
  std::filesystem::remove(path);
  ASSERT_EQ(back.shape(), (Shape{4, 3}));
  EXPECT_EQ(back.data_ptr<float>()[1], 4.0f);  // back[0][1] == t[0][1] == original[1][0]
}

TEST(Npy, ReadsFormatVersions2And3) {
  for (char version : {'\x02', '\x03'}) {
    std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }";
    header += std::string(63 - (12 + header.size()) % 64, ' ') + "\n";
    const std::string path = temp_path("v2.npy");
    const int64_t data[2] = {-5, 7};
    std::ofstream(path, std::ios::binary)
        << std::string("\x93NUMPY", 6) << version << '\0' << static_cast<char>(header.size()) << std::string(3, '\0')
        << header << std::string(reinterpret_cast<const char*>(data), sizeof(data));
    const Tensor t = read_npy(path);
    std::filesystem::remove(path);
    ASSERT_EQ(t.str(), "int64[2]");
    EXPECT_EQ(t.data_ptr<int64_t>()[0], -5);
    EXPECT_EQ(t.data_ptr<int64_t>()[1], 7);
  }
}

TEST(Npy, ErrorsNameTheFileAndTheProblem) {
  const std::string four_floats(16, '\0');
  auto read_error = [](const std::string& path) {
    const std::string message = error_of([&] { read_npy(path); });
    std::filesystem::remove(path);
    EXPECT_TRUE(message.find(path) != std::string::npos) << message;
    return message.substr(message.find(path) + path.size());
  };
  EXPECT_EQ(read_error(temp_path("missing.npy")), "': No such file or directory");
  const std::string not_npy = temp_path("not.npy");
  std::ofstream(not_npy) << "hello, world";
  EXPECT_EQ(read_error(not_npy), ": not a .npy file (it does not start with \\x93NUMPY)");
  const std::string truncated = temp_path("truncated.npy");
  std::ofstream(truncated, std::ios::binary) << std::string("\x93NUMPY\x01\x00\x40\x00{'descr'", 18);
  EXPECT_EQ(read_error(truncated),
            ": truncated .npy file (the header of 64 bytes ends past the end of the file, 18 bytes)");
  auto header = [](const std::string& descr, const char* fortran, const std::string& shape) {
    return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  };
  EXPECT_EQ(read_error(npy_file("big.npy", header(">f4", "False", "(4,)"), four_floats)),
            ": the array is big-endian ('>f4'); save it little-endian, e.g. with a.astype(a.dtype.newbyteorder('<'))");
  EXPECT_EQ(read_error(npy_file("uint16.npy", header("<u2", "False", "(8,)"), four_floats)),
            ": dtype '<u2' is not one opgraph holds (float16, float32, float64, int8, uint8, int32, int64, bool, "
            "complex64, complex128)");
  EXPECT_EQ(read_error(npy_file("fortran.npy", header("<f4", "True", "(2, 2)"), four_floats)),
            ": the array is in Fortran order; save a C-order array, e.g. np.save(path, np.ascontiguousarray(a))");
  EXPECT_EQ(read_error(npy_file("short.npy", header("<f4", "False", "(5,)"), four_floats)),
            ": the header says float32[5] (20 bytes of data), the file holds 16 bytes of data");
  EXPECT_EQ(read_error(npy_file("long.npy", header("<f4", "False", "(3,)"), four_floats)),
            ": the header says float32[3] (12 bytes of data), the file holds 16 bytes of data");
  EXPECT_EQ(read_error(npy_file("huge.npy", header("<f8", "False", "(4294967296, 4294967296)"), "")),
            ": shape [4294967296, 4294967296] has more elements than fit in int64");
  EXPECT_EQ(read_error(npy_file("bool.npy", header("|b1", "False", "(2,)"), std::string("\x01\x02", 2))),
            ": element 1 of a bool array is 2, not 0 or 1");
  EXPECT_EQ(read_error(npy_file("tuple.npy", header("<f4", "False", "(4)"), four_floats)),
            ": malformed .npy header (a 1-tuple needs a trailing comma at byte 52): {'descr': '<f4', "
            "'fortran_order': False, 'shape': (4), }");
  const std::string extra_key = read_error(npy_file("key.npy", "{'descr': '<f4', 'order': 'C', }", four_floats));
  EXPECT_TRUE(extra_key.starts_with(": malformed .npy header (unexpected key 'order' at byte ")) << extra_key;
  const std::string no_shape = read_error(npy_file("keys.npy", "{'descr': '<f4', 'fortran_order': False}", ""));
  EXPECT_TRUE(
      no_shape.starts_with(": malformed .npy header (expected the keys 'descr', 'fortran_order' and "
                           "'shape' at byte "))
      << no_shape;
}

TEST(Npy, RefusesToWriteWhatNpyCannotHold) {
  EXPECT_EQ(error_of([] { write_npy(temp_path("b.npy"), Tensor::empty({2}, DType::BFloat16)); }),
            "cannot write '" + temp_path("b.npy") + "': bfloat16 has no .npy dtype");
  EXPECT_EQ(error_of([] { write_npy("/nonexistent/folder/y.npy", arange({2})); }),
            "cannot write '/nonexistent/folder/y.npy': No such file or directory");
}

}  // namespace
}  // namespace opgraph
