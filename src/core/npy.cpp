// The .npy format: a magic string, a version, a header that is a Python dict
// literal ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }) padded
// to 64 bytes, then the raw data.
#include "opgraph/core/npy.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>

#include "opgraph/core/error.h"

namespace opgraph {
namespace {

// The data is copied byte for byte into and out of tensors.
static_assert(std::endian::native == std::endian::little, ".npy files are read and written little-endian");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlignment = 64;  // NumPy pads the header so the data starts aligned

// The descr NumPy writes for each dtype: '<' (little-endian) for multi-byte
// types, '|' (no byte order) for single bytes. bfloat16 has none.
std::optional<std::string_view> npy_descr(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "<f4";
    case DType::Float64: return "<f8";
    case DType::Float16: return "<f2";
    case DType::Int8: return "|i1";
    case DType::UInt8: return "|u1";
    case DType::Int32: return "<i4";
    case DType::Int64: return "<i8";
    case DType::Bool: return "|b1";
    case DType::Complex64: return "<c8";
    case DType::Complex128: return "<c16";
    case DType::BFloat16: return std::nullopt;
  }
  return std::nullopt;
}

std::string system_error() { return std::strerror(errno); }

// The header dict, parsed strictly: exactly the three keys NumPy writes.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  void parse(std::string& descr, bool& fortran_order, Shape& shape) {
    bool seen[3] = {false, false, false};
    expect('{');
    while (!peek('}')) {
      const std::string key = string();
      expect(':');
      if (key == "descr" && !seen[0]) {
        descr = string();
        seen[0] = true;
      } else if (key == "fortran_order" && !seen[1]) {
        fortran_order = boolean();
        seen[1] = true;
      } else if (key == "shape" && !seen[2]) {
        shape = tuple();
        seen[2] = true;
      } else {
        fail("unexpected key '" + key + "'");
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (at_ < text_.size()) fail("text after the closing brace");
    if (!(seen[0] && seen[1] && seen[2])) fail("expected the keys 'descr', 'fortran_order' and 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    std::string header(text_.substr(0, 120));
    for (char& c : header) c = (c == '\n' || c == '\r') ? ' ' : c;
    header.erase(header.find_last_not_of(' ') + 1);  // the padding
    throw Error(detail::concat(path_, ": malformed .npy header (", what, " at byte ", at_, "): ", header));
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t')) ++at_;
  }
  bool peek(char c) {
    skip_space();
    return at_ < text_.size() && text_[at_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  std::string string() {
    skip_space();
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) fail("expected a quoted string");
    const char quote = text_[at_++];
    const size_t end = text_.find(quote, at_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(at_, end - at_));
    at_ = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    for (const bool value : {true, false}) {
      const std::string_view word = value ? "True" : "False";
      if (text_.substr(at_).starts_with(word)) {
        at_ += word.size();
        return value;
      }
    }
    fail("expected True or False");
  }
  int64_t integer() {
    skip_space();
    int64_t value = 0;
    const size_t start = at_;
    while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
      if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, text_[at_] - '0', &value)) {
        fail("dimension too large");
      }
      ++at_;
    }
    if (at_ == start) fail("expected a non-negative integer");
    return value;
  }
  // (), (5,) or (2, 3)
  Shape tuple() {
    Shape shape;
    expect('(');
    while (!peek(')')) {
      shape.push_back(integer());
      if (peek(')')) {
        if (shape.size() == 1) fail("a 1-tuple needs a trailing comma");
        break;
      }
      expect(',');
    }
    expect(')');
    return shape;
  }

  std::string_view text_;
  const std::string& path_;
  size_t at_ = 0;
};

DType dtype_of_descr(const std::string& descr, const std::string& path) {
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType dtype = static_cast<DType>(i);
    if (npy_descr(dtype) == descr) return dtype;
  }
  OPGRAPH_CHECK(descr.empty() || descr[0] != '>', path, ": the array is big-endian ('", descr,
                "'); save it little-endian, e.g. with a.astype(a.dtype.newbyteorder('<'))");
  throw Error(detail::concat(path, ": dtype '", descr,
                             "' is not one opgraph holds (float16, float32, float64, int8, uint8, int32, int64, "
                             "bool, complex64, complex128)"));
}

uint32_t little_endian(const unsigned char* bytes, size_t count) {
  uint32_t value = 0;
  for (size_t i = count; i-- > 0;) value = value << 8 | bytes[i];
  return value;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  OPGRAPH_CHECK(in.is_open(), "cannot open '", path, "': ", system_error());
  std::error_code error;
  const uintmax_t file_size = std::filesystem::file_size(path, error);
  OPGRAPH_CHECK(!error, "cannot read '", path, "': ", error.message());

  // Magic, version (major, minor) and the header length: 2 bytes in version
  // 1, 4 in versions 2 and 3.
  unsigned char prefix[12] = {};
  in.read(reinterpret_cast<char*>(prefix), 10);
  OPGRAPH_CHECK(in.gcount() == 10 && std::string_view(reinterpret_cast<char*>(prefix), kMagic.size()) == kMagic, path,
                ": not a .npy file (it does not start with \\x93NUMPY)");
  const int major = prefix[6], minor = prefix[7];
  OPGRAPH_CHECK(major >= 1 && major <= 3 && minor == 0, path, ": unsupported .npy format version ", major, ".", minor,
                " (1.0, 2.0 and 3.0 are read)");
  size_t prefix_bytes = 10;
  if (major > 1) {
    in.read(reinterpret_cast<char*>(prefix) + 10, 2);
    prefix_bytes = 12;
  }
  const size_t header_bytes = little_endian(prefix + 8, prefix_bytes - 8);
  OPGRAPH_CHECK(in.good() && prefix_bytes + header_bytes <= file_size, path, ": truncated .npy file (the header of ",
                header_bytes, " bytes ends past the end of the file, ", file_size, " bytes)");
  std::string header(header_bytes, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_bytes));
  OPGRAPH_CHECK(in.good(), "cannot read '", path, "': ", system_error());

  std::string descr;
  bool fortran_order = false;
  Shape shape;
  HeaderParser(header, path).parse(descr, fortran_order, shape);
  const DType dtype = dtype_of_descr(descr, path);
  OPGRAPH_CHECK(!fortran_order, path,
                ": the array is in Fortran order; save a C-order array, e.g. "
                "np.save(path, np.ascontiguousarray(a))");
  size_t data_bytes = 0;
  try {
    OPGRAPH_CHECK(!__builtin_mul_overflow(static_cast<size_t>(shape_numel(shape)), itemsize(dtype), &data_bytes),
                  dtype_name(dtype), shape_str(shape), " has more bytes than fit in size_t");
  } catch (const Error& e) {
    throw Error(detail::concat(path, ": ", e.what()));
  }
  const uintmax_t data_in_file = file_size - prefix_bytes - header_bytes;
  OPGRAPH_CHECK(data_in_file == data_bytes, path, ": the header says ", dtype_name(dtype), shape_str(shape), " (",
                data_bytes, " bytes of data), the file holds ", data_in_file, " bytes of data");

  Tensor tensor = Tensor::empty(shape, dtype);
  in.read(static_cast<char*>(tensor.data()), static_cast<std::streamsize>(data_bytes));
  OPGRAPH_CHECK(in.good() || data_bytes == 0, "cannot read '", path, "': ", system_error());
  if (dtype == DType::Bool) {
    const auto* bytes = static_cast<const uint8_t*>(tensor.data());
    for (size_t i = 0; i < data_bytes; ++i) {
      OPGRAPH_CHECK(bytes[i] <= 1, path, ": element ", i, " of a bool array is ", int(bytes[i]), ", not 0 or 1");
    }
  }
  return tensor;
}

void write_npy(const std::string& path, const Tensor& tensor) {
  const std::optional<std::string_view> descr = npy_descr(tensor.dtype());
  OPGRAPH_CHECK(descr.has_value(), "cannot write '", path, "': ", dtype_name(tensor.dtype()), " has no .npy dtype");
  std::string sizes;
  for (int64_t d = 0; d < tensor.dim(); ++d) sizes += (d ? ", " : "") + std::to_string(tensor.shape()[d]);
  const std::string shape = "(" + sizes + (tensor.dim() == 1 ? ",)" : ")");  // a Python tuple: (), (5,), (2, 3)
  std::string header = "{'descr': '" + std::string(*descr) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Padded with spaces and a newline so that the data starts aligned.
  auto padded = [&](size_t prefix_bytes) {
    return (prefix_bytes + header.size() + kAlignment) / kAlignment * kAlignment - prefix_bytes;
  };
  // Version 1.0 stores the header length in 2 bytes, 2.0 in 4.
  const bool long_header = padded(10) > 0xFFFF;
  const size_t prefix_bytes = long_header ? 12 : 10;
  header.append(padded(prefix_bytes) - header.size() - 1, ' ');
  header += '\n';
  unsigned char prefix[12];
  std::memcpy(prefix, kMagic.data(), kMagic.size());
  prefix[6] = long_header ? 2 : 1;
  prefix[7] = 0;
  for (size_t i = 8; i < prefix_bytes; ++i) prefix[i] = static_cast<unsigned char>(header.size() >> (8 * (i - 8)));

  const Tensor data = tensor.contiguous();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  OPGRAPH_CHECK(out.is_open(), "cannot write '", path, "': ", system_error());
  out.write(reinterpret_cast<const char*>(prefix), static_cast<std::streamsize>(prefix_bytes));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(data.data()), static_cast<std::streamsize>(data.nbytes()));
  out.close();
  OPGRAPH_CHECK(out.good(), "cannot write '", path, "': ", system_error());
}

}  // namespace opgraph
