// .opg files: writing, loading, and one test per way a file can be corrupt,
// each crafted byte by byte.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "graphs.h"
#include "opgraph/graph/opg.h"
#include "testing.h"

namespace opgraph {
namespace {

using nlohmann::json;
using testing::error_of;
using testing::temp_path;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string length_prefix(uint64_t length) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(length >> (8 * i));
  return bytes;
}

uint64_t length_of(const std::string& bytes) {
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i])) << (8 * i);
  return length;
}

json header_of(const std::string& bytes) { return json::parse(bytes.substr(8, length_of(bytes))); }

// A safetensors file: the length, the header text, the data.
std::string safetensors(const std::string& header, const std::string& data) {
  return length_prefix(header.size()) + header + data;
}

// A graph with two float32[2] constants, "a" and "b", and its header.
const char* kGraph = R"({"name": "g", "inputs": [{"name": "x", "dtype": "float32", "shape": [2]}],
  "outputs": [{"name": "y"}],
  "constants": [{"name": "a", "dtype": "float32", "shape": [2]}, {"name": "b", "dtype": "float32", "shape": [2]}],
  "nodes": [{"name": "relu", "op_type": "aten::relu", "inputs": ["x"], "outputs": ["y"]}]})";

json valid_header() {
  return {{"__metadata__", {{"opgraph.version", "1"}, {"opgraph.graph", kGraph}, {"opgraph.packages", "[]"}}},
          {"a", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {0, 8}}}},
          {"b", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {8, 16}}}}};
}

const std::string kData(16, '\0');

class OpgFormat : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove(path_); }

  // The message load_opg gives for a file with these bytes, after its
  // "load_opg '<path>': " prefix.
  std::string load_error(const std::string& bytes) {
    write_bytes(path_, bytes);
    const std::string message = error_of([&] { load_opg(path_); });
    const std::string prefix = "load_opg '" + path_ + "': ";
    EXPECT_TRUE(message.starts_with(prefix)) << message;
    return message.substr(std::min(prefix.size(), message.size()));
  }
  std::string load_error(const json& header, const std::string& data = kData) {
    return load_error(safetensors(header.dump(), data));
  }

  std::string path_ = temp_path("format.opg");
};

TEST_F(OpgFormat, RoundTripsGraphAndWeights) {
  const Graph graph = testing::small_cnn();
  const Weights weights = testing::small_cnn_weights();
  save_opg(path_, graph, weights);
  const OpgFile loaded = load_opg(path_);
  EXPECT_EQ(loaded.graph, graph);
  ASSERT_EQ(loaded.weights.size(), weights.size());
  for (const auto& [name, weight] : weights) {
    const Tensor& got = loaded.weights.at(name);
    EXPECT_EQ(got.meta(), weight.meta()) << name;
    EXPECT_EQ(std::memcmp(got.data(), weight.data(), weight.nbytes()), 0) << name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(got.data()) % itemsize(got.dtype()), 0u) << name;
  }
}

TEST_F(OpgFormat, WeightsAreViewsIntoOneMappingThatOutlivesTheFile) {
  save_opg(path_, testing::small_cnn(), testing::small_cnn_weights());
  const json header = header_of(read_bytes(path_));
  Tensor conv_weight, fc_bias;
  {
    const OpgFile loaded = load_opg(path_);
    conv_weight = loaded.weights.at("conv.weight");
    fc_bias = loaded.weights.at("fc.bias");
  }
  // Not copies: their addresses are as far apart as their bytes in the file.
  const int64_t apart =
      header["fc.bias"]["data_offsets"][0].get<int64_t>() - header["conv.weight"]["data_offsets"][0].get<int64_t>();
  EXPECT_EQ(static_cast<char*>(fc_bias.data()) - static_cast<char*>(conv_weight.data()), apart);
  std::filesystem::remove(path_);  // the mapping stays
  const Weights expected = testing::small_cnn_weights();
  EXPECT_EQ(std::memcmp(conv_weight.data(), expected.at("conv.weight").data(), conv_weight.nbytes()), 0);
  EXPECT_EQ(std::memcmp(fc_bias.data(), expected.at("fc.bias").data(), fc_bias.nbytes()), 0);
}

TEST_F(OpgFormat, IsSafetensorsWithTheGraphInTheMetadata) {
  save_opg(path_, testing::small_cnn(), testing::small_cnn_weights());
  const std::string bytes = read_bytes(path_);
  const uint64_t length = length_of(bytes);
  EXPECT_EQ((8 + length) % 64, 0u);  // the data starts aligned
  const json header = header_of(bytes);
  EXPECT_EQ(header["__metadata__"]["opgraph.version"], "1");
  EXPECT_EQ(Graph::from_json(header["__metadata__"]["opgraph.graph"].get<std::string>()), testing::small_cnn());
  EXPECT_EQ(header["__metadata__"]["opgraph.packages"], "[]");
  EXPECT_EQ(header["conv.weight"]["dtype"], "F32");
  EXPECT_EQ(header["conv.weight"]["shape"], json({4, 3, 3, 3}));
  // Back to back, covering the data exactly.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name != "__metadata__") ranges.emplace_back(entry["data_offsets"][0], entry["data_offsets"][1]);
  }
  std::sort(ranges.begin(), ranges.end());
  EXPECT_EQ(ranges.front().first, 0u);
  for (size_t i = 1; i < ranges.size(); ++i) EXPECT_EQ(ranges[i].first, ranges[i - 1].second);
  EXPECT_EQ(ranges.back().second, bytes.size() - 8 - length);
}

// Each dtype is written under its safetensors name and read back as it was.
TEST_F(OpgFormat, EveryDtypeRoundTrips) {
  Graph graph;
  Weights weights;
  for (int i = 0; i < kNumDTypes; ++i) {
    const auto dtype = static_cast<DType>(i);
    const std::string name(dtype_name(dtype));
    graph.constants.push_back({name, dtype, {3}});
    Tensor weight = Tensor::empty({3}, dtype);
    auto* bytes = static_cast<uint8_t*>(weight.data());
    for (size_t b = 0; b < weight.nbytes(); ++b) bytes[b] = static_cast<uint8_t>((b + i) % 2);
    weights.emplace(name, weight);
  }
  graph.outputs = {graph.constants[0].name};
  save_opg(path_, graph, weights);
  const json header = header_of(read_bytes(path_));
  EXPECT_EQ(header["bfloat16"]["dtype"], "BF16");
  EXPECT_EQ(header["complex64"]["dtype"], "C64");
  EXPECT_EQ(header["complex128"]["dtype"], "C128");
  const OpgFile loaded = load_opg(path_);
  for (const auto& [name, weight] : weights) {
    const Tensor& got = loaded.weights.at(name);
    EXPECT_EQ(got.meta(), weight.meta()) << name;
    EXPECT_EQ(std::memcmp(got.data(), weight.data(), weight.nbytes()), 0) << name;
  }
}

TEST_F(OpgFormat, LoadsACraftedFile) {
  std::string data(16, '\0');
  const float values[4] = {1, 2, 3, 4};
  std::memcpy(data.data(), values, sizeof values);
  write_bytes(path_, safetensors(valid_header().dump(), data));
  const OpgFile loaded = load_opg(path_);
  EXPECT_EQ(loaded.weights.at("b").data_ptr<float>()[1], 4.0f);
}

TEST_F(OpgFormat, SaveChecksTheWeights) {
  const Graph graph = testing::small_cnn();
  Weights weights = testing::small_cnn_weights();
  weights.erase("fc.bias");
  EXPECT_EQ(error_of([&] { save_opg(path_, graph, weights); }),
            "save_opg '" + path_ + "': no weight given for constant 'fc.bias' (float32[10])");
  weights["fc.bias"] = testing::random_tensor({9}, 0);
  EXPECT_EQ(error_of([&] { save_opg(path_, graph, weights); }),
            "save_opg '" + path_ + "': weight 'fc.bias' is float32[9]; the graph declares float32[10]");
  weights = testing::small_cnn_weights();
  weights["fc.scale"] = testing::random_tensor({10}, 0);
  EXPECT_EQ(error_of([&] { save_opg(path_, graph, weights); }),
            "save_opg '" + path_ + "': weight 'fc.scale' is not a constant of the graph");
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(OpgFormat, MissingFile) {
  EXPECT_EQ(error_of([] { load_opg("/nonexistent/model.opg"); }),
            "load_opg '/nonexistent/model.opg': cannot open '/nonexistent/model.opg': No such file or directory");
}

TEST_F(OpgFormat, Truncated) {
  EXPECT_EQ(load_error(std::string("\x10\0\0\0\0", 5)),
            "the file is 5 bytes; a safetensors file starts with an 8-byte header length");
  EXPECT_EQ(load_error(std::string()), "the file is 0 bytes; a safetensors file starts with an 8-byte header length");
  // Cut inside the data: the last tensor runs past the end.
  const std::string whole = safetensors(valid_header().dump(), kData);
  EXPECT_EQ(load_error(whole.substr(0, whole.size() - 3)),
            "tensor 'b': data_offsets [8, 16] run past the end of the data (13 bytes)");
}

TEST_F(OpgFormat, HeaderLengthLargerThanTheFile) {
  const std::string header = valid_header().dump();
  EXPECT_EQ(load_error(length_prefix(header.size() + 100) + header + kData),
            "header length " + std::to_string(header.size() + 100) + " runs past the end of the file (" +
                std::to_string(8 + header.size() + 16) + " bytes, so at most " + std::to_string(header.size() + 16) +
                ")");
  EXPECT_NE(load_error(length_prefix(~uint64_t{0}) + header).find("header length 18446744073709551615 runs past"),
            std::string::npos);
}

TEST_F(OpgFormat, HeaderIsNotJson) {
  const std::string message = load_error(safetensors("{\"__metadata__\": {", kData));
  EXPECT_TRUE(message.starts_with("header (bytes 8 to 26) is not valid JSON: ")) << message;
  EXPECT_EQ(load_error(safetensors("[1, 2]", kData)), "header must be a JSON object, got array");
}

TEST_F(OpgFormat, OffsetsOverlap) {
  json header = valid_header();
  header["b"]["data_offsets"] = {4, 12};
  EXPECT_EQ(load_error(header), "tensors 'a' (data_offsets [0, 8]) and 'b' (data_offsets [4, 12]) overlap");
}

TEST_F(OpgFormat, OffsetsPastTheEnd) {
  json header = valid_header();
  header["b"]["data_offsets"] = {16, 24};
  EXPECT_EQ(load_error(header), "tensor 'b': data_offsets [16, 24] run past the end of the data (16 bytes)");
}

TEST_F(OpgFormat, OffsetsReversedOrMalformed) {
  json header = valid_header();
  header["b"]["data_offsets"] = {16, 8};
  EXPECT_EQ(load_error(header), "tensor 'b': data_offsets [16, 8] end before they begin");
  header["b"]["data_offsets"] = {-8, 8};
  EXPECT_EQ(load_error(header), "tensor 'b': data_offsets[0] must be a non-negative integer, got -8");
  header["b"]["data_offsets"] = {8};
  EXPECT_EQ(load_error(header), "tensor 'b': data_offsets must be [begin, end], got [8]");
}

TEST_F(OpgFormat, OffsetsDisagreeWithDtypeAndShape) {
  json header = valid_header();
  header["b"]["shape"] = {3};
  EXPECT_EQ(load_error(header), "tensor 'b': data_offsets [8, 16] hold 8 bytes; float32[3] needs 12");
}

TEST_F(OpgFormat, ShapeProductOverflows) {
  json header = valid_header();
  header["b"]["shape"] = {uint64_t{1} << 32, uint64_t{1} << 32};
  EXPECT_EQ(load_error(header),
            "tensor 'b': shape [4294967296,4294967296] of F32 overflows: its byte size does not fit in 64 bits");
  header["b"]["shape"] = {uint64_t{1} << 63};
  EXPECT_EQ(load_error(header),
            "tensor 'b': shape [9223372036854775808] of F32 overflows: its byte size does not fit in 64 bits");
  header["b"]["shape"] = {2, -1};
  EXPECT_EQ(load_error(header), "tensor 'b': shape extent must be a non-negative integer, got -1");
}

TEST_F(OpgFormat, UnknownDtype) {
  json header = valid_header();
  header["b"]["dtype"] = "I16";
  EXPECT_EQ(load_error(header),
            "tensor 'b': dtype 'I16' is not supported (opgraph reads F32, F64, F16, BF16, I8, U8, I32, I64, BOOL, C64 "
            "and C128)");
  header["b"] = {{"dtype", "F32"}, {"shape", {2}}};
  EXPECT_EQ(load_error(header), "tensor 'b': missing 'data_offsets'");
}

TEST_F(OpgFormat, MetadataMissingOrWrongVersion) {
  json header = valid_header();
  header.erase("__metadata__");
  EXPECT_EQ(load_error(header), "header has no __metadata__ object: not an .opg file");
  header = valid_header();
  header["__metadata__"]["opgraph.version"] = "2";
  EXPECT_EQ(load_error(header), "unsupported .opg version '2'; this opgraph reads version 1");
  header = valid_header();
  header["__metadata__"].erase("opgraph.graph");
  EXPECT_EQ(load_error(header), "__metadata__ has no 'opgraph.graph': not an .opg file");
  header = valid_header();
  header["__metadata__"]["opgraph.version"] = 1;
  EXPECT_EQ(load_error(header), "__metadata__['opgraph.version'] must be a string, got 1");
}

TEST_F(OpgFormat, GraphJsonIsChecked) {
  json header = valid_header();
  header["__metadata__"]["opgraph.graph"] = "{\"inputs\": []";
  EXPECT_TRUE(load_error(header).starts_with("graph JSON: not valid JSON")) << load_error(header);
  header["__metadata__"]["opgraph.packages"] = "[\"mylib\"]";
  header["__metadata__"]["opgraph.graph"] = kGraph;
  EXPECT_EQ(load_error(header), "__metadata__['opgraph.packages'] lists [\"mylib\"] but the graph lists []");
}

TEST_F(OpgFormat, NodeReferencesAreChecked) {
  json header = valid_header();
  std::string graph = kGraph;
  graph.replace(graph.find("\"inputs\": [\"x\"]"), 15, "\"inputs\": [\"q\"]");
  header["__metadata__"]["opgraph.graph"] = graph;
  EXPECT_EQ(load_error(header),
            "node 'relu' (aten::relu): input 0 uses value 'q', which no graph input, constant or node defines");
}

TEST_F(OpgFormat, MissingOrMismatchedConstant) {
  json header = valid_header();
  header.erase("b");
  EXPECT_EQ(load_error(header), "constant 'b' (float32[2]) has no tensor in the file");
  header = valid_header();
  header["b"]["dtype"] = "I32";
  EXPECT_EQ(load_error(header), "tensor 'b' is int32[2]; the graph declares constant 'b' as float32[2]");
}

}  // namespace
}  // namespace opgraph
